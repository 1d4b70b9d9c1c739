#!/bin/bash
# Mutation testing of the bundled ports against the vectors: cargo-mutants
# over the Rust port, mutmut over the Python port, each port's vector test
# (every vector, in-process, through the port's own harness) as the only
# test that may kill a mutant. A mutant that survives is a rule without a
# vector, unless the port's mutants-equivalent.md argues it equivalent (no
# input tells it apart) or untestable (only a scenario of about 2^32
# positions would).
#
#   tools/mutation.sh            every mutant (about 45 minutes here)
#   tools/mutation.sh --sample   the fixed, reproducible sample CI runs:
#                                Rust --shard 0/25 (round-robin), Python
#                                --sample 60 --seed 1; each tool two
#                                mutants at a time (MUTANTS_JOBS,
#                                MUTMUT_CHILDREN), the two ports' runs
#                                side by side
#   tools/mutation.sh [--sample] --search DIR
#                                and a second kill corpus: DIR is a vectors
#                                directory (MANIFEST.json and *.pb, the
#                                format of vectors/) written by the search;
#                                each port reruns its survivors against it
#                                (default: $KVSPEC_SEARCH_VECTORS); DIR
#                                `auto` writes the corpus CI uses: search
#                                --seed=1 --cases=3000 (tools/search)
#
# Prints each port's totals ("rust-mutation: generated N, killed K, killed
# by search only G, equivalent E, untestable U, survived S, timeout T"), then
# one line per port for tools/test_summary.py, "rust-mutation: P passed, F
# failed", where failed counts survivors, mutants killed by the search only
# (a gap in the vectors: a scenario tells the mutant apart, but no vector
# has one) and the port's error lines (for example an entry of
# mutants-equivalent.md that the search kills); a timeout is a mutant the
# runner catches as a hang. Exit status 1 if any failed. Needs
# tools/setup.sh --tests first.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
rust_args=()
python_args=()
auto_dir="" rust_out=""
trap 'rm -rf "$auto_dir" "$rust_out"' EXIT
search=${KVSPEC_SEARCH_VECTORS:-}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sample)
      # Sized to keep tools/test.sh within CI's 90 minutes on 2 cores: both
      # tools run two mutants at a time.
      rust_args+=(--shard 0/25 --sharding round-robin)
      python_args+=(--sample 60 --seed 1)
      export MUTANTS_JOBS=${MUTANTS_JOBS:-2} MUTMUT_CHILDREN=${MUTMUT_CHILDREN:-2}
      shift ;;
    --search) search=$2; shift 2 ;;
    *) echo "usage: tools/mutation.sh [--sample] [--search DIR]" >&2; exit 2 ;;
  esac
done
if [[ "$search" == auto ]]; then
  # The search's corpus as CI uses it: seed 1, 3,000 cases (tools/search).
  search="$(mktemp -d)"
  auto_dir="$search"
  if ! bazel build //tools/search:search_opt >/dev/null 2>&1 ||
     ! "$(bazel info bazel-bin 2>/dev/null)/tools/search/search_opt" \
         --write_corpus="$search" --seed=1 --cases=3000; then
    echo "mutation: cannot write the search corpus (bazel build //tools/search:search_opt)" >&2
    exit 2
  fi
fi
if [[ -n "$search" ]]; then
  search=$(cd "$search" && pwd) || exit 2
  rust_args=(--search "$search" "${rust_args[@]}")
  python_args=(--search "$search" "${python_args[@]}")
fi
status=0

field() { grep -oE "$1 [0-9]+" <<<"$2" | grep -oE '[0-9]+' || echo 0; }

summarize() {  # name, output of the port's run.sh
  local line passed survived searched errors
  line="$(grep -E "^$1: generated " <<<"$2" | tail -1)"
  grep -E "^$1: error: " <<<"$2"
  echo "$line"
  if [[ -z "$line" ]]; then
    echo "$1: 0 passed, 1 failed (no totals line)"; status=1; return
  fi
  # Passed: killed, timed out (the runner catches a hang), or argued in
  # mutants-equivalent.md. Mutants that do not build or that the vector test
  # never reaches count neither way.
  passed=$(( $(field killed "$line") + $(field timeout "$line") +
             $(field equivalent "$line") + $(field untestable "$line") ))
  # Failed: survivors, mutants only the search kills (gaps in the vectors),
  # and error lines (an equivalents entry the search kills, a search pass
  # that could not run).
  survived=$(field survived "$line")
  searched=$(field "search only" "$line")
  errors=$(grep -cE "^$1: error: " <<<"$2")
  failed=$((survived + searched + errors))
  [[ $failed -eq 0 ]] || status=1
  echo "$1: $passed passed, $failed failed"
}

# The two ports' runs side by side: mutmut spends about 100 s of one core
# generating its mutants, tracing which tests reach which function and
# running the clean tests (measured 2026-12-07), while cargo-mutants' builds
# use the other. Neither tool's timeouts come near a survivor's time under
# this load: cargo-mutants' is at least 20 s for a vector test of 2.7 s, and
# mutmut's 4 times the clean time measured under the same load.
rust_out="$(mktemp)"
conformance/ports/rust/mutation/run.sh "${rust_args[@]}" >"$rust_out" 2>&1 &
rust_pid=$!
python_out="$(conformance/ports/python/mutation/run.sh "${python_args[@]}" 2>&1)"
wait "$rust_pid"

out="$(cat "$rust_out")"
echo "$out" | grep -E '^(survived|timeout|search-only): ' | head -20
summarize rust-mutation "$out"

out="$python_out"
echo "$out" | grep -E '^(python-mutation: (other|wall|search pass)|search-only: )' | head -20
summarize python-mutation "$out"
exit $status
