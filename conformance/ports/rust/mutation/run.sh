#!/usr/bin/env bash
# Mutation testing of the kvspec Rust port against the vectors.
#
# Runs cargo-mutants (installed beforehand: `cargo install cargo-mutants
# --locked`; this script installs nothing) over conformance/ports/rust with
# tests/vectors.rs as the only kill test, so survivors measure the vectors,
# not the port's unit tests. Configuration and exclusions, with reasons:
# .cargo/mutants.toml. Then prints one line:
#
#   rust-mutation: generated N, killed K, killed by search only G, equivalent E, untestable U, survived S, timeout T
#
# where killed by search only counts the survivors of the vectors that the
# search's vectors kill (--search below; 0 without it), equivalent counts the survivors listed in mutants-equivalent.md (a
# line starting "- `<mutant name>`", the name exactly as cargo-mutants
# prints it), untestable those listed under its heading about 2^32
# positions (no vector of a feasible size tells them apart), and survived
# the others; a second line gives the unviable
# mutants (those that do not build), which are in N but in no other count.
#
# Usage: mutation/run.sh [cargo-mutants options...]
#   e.g. mutation/run.sh --shard 0/8 --sharding round-robin
#     a reproducible eighth for CI: mutants 0, 8, 16, ... of the list
#     (`cargo mutants --list`), the same every run of the same tree, spread
#     over every file (the default slice sharding takes a consecutive run).
#   mutation/run.sh --search DIR [cargo-mutants options...]
#     a second kill corpus, DIR a vectors directory in the format of vectors/
#     (the search's scenarios with the reference's logs). Pass 1 runs the
#     selected mutants against the vectors; pass 2 reruns only pass 1's
#     missed mutants (every one, before mutants-equivalent.md is applied),
#     named exactly by one anchored --re each, with KVSPEC_VECTORS=DIR
#     (output in $MUTANTS_OUT/search/mutants.out; its baseline checks that
#     the unmutated port passes DIR). A mutant pass 2 catches (or that hangs
#     there) is "killed by search only": a gap in the vectors. Each is printed
#     on stderr as "search-only: NAME" and listed in $MUTANTS_OUT/search-only.txt.
#     (cargo-mutants' --iterate is no use here: it skips mutants caught in
#     the previous run but reruns every other one of the whole tree,
#     whatever --shard chose, and its timeouts.)
#
# Environment:
#   KVSPEC_VECTORS   vectors directory (default: the repository's vectors/)
#   KVSPEC_ROOT      directory holding spec/*.proto for build.rs (default: the
#                    repository root). Both must be absolute or are made so:
#                    cargo-mutants builds a copy of the crate elsewhere.
#   MUTANTS_OUT      where mutants.out/ goes (default: target/mutation)
#   MUTANTS_JOBS     parallel cargo-mutants jobs (default: 1)
#   KVSPEC_SEARCH_VECTORS  as --search DIR
#   MUTANTS_REPORT_ONLY=1  run nothing; recount an existing mutants.out (and
#                    the search pass's, with --search)
#
# A mutant the search kills is not equivalent, whatever mutants-equivalent.md
# says: such an entry is reported as "rust-mutation: error: ..." and the
# mutant counts as killed by search only.
#
# Exit status: 0 when no mutant survives outside the equivalents file and the
# search kills none of them, 1 when some do (listed on stderr) or an error
# line was printed, 2 when cargo-mutants itself failed (for
# example the unmutated baseline fails the vector test).
set -euo pipefail

search=${KVSPEC_SEARCH_VECTORS:-}
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --search) search=$2; shift 2 ;;
    --search=*) search=${1#--search=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
set -- "${args[@]+"${args[@]}"}"

here=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
repo=$(CDPATH= cd -- "$here/../../.." && pwd)
cd "$here"

abs() { (CDPATH= cd -- "$1" && pwd); }
export KVSPEC_VECTORS=$(abs "${KVSPEC_VECTORS:-$repo/vectors}")
export KVSPEC_ROOT=$(abs "${KVSPEC_ROOT:-$repo}")
[[ -z "$search" ]] || search=$(abs "$search")
out=${MUTANTS_OUT:-$here/target/mutation}
mkdir -p "$out"
out=$(abs "$out")
jobs=${MUTANTS_JOBS:-1}
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-$jobs}

if [[ "${MUTANTS_REPORT_ONLY:-0}" != 1 ]] && ! cargo mutants --version >/dev/null 2>&1; then
  echo "run.sh: cargo-mutants is not installed (cargo install cargo-mutants --locked)" >&2
  exit 2
fi

rc=0
if [[ "${MUTANTS_REPORT_ONLY:-0}" != 1 ]]; then
  rm -rf "$out/mutants.out"
  set +e
  cargo mutants --jobs "$jobs" --output "$out" --colors never "$@"
  rc=$?
  set -e
fi
# cargo-mutants: 0 all caught, 2 some missed, 3 some timed out; others are
# failures of the run itself (1 usage, 4 baseline failed).
case $rc in
  0|2|3) ;;
  *) echo "run.sh: cargo-mutants failed (exit $rc); see $out/mutants.out" >&2; exit 2 ;;
esac

mo=$out/mutants.out
count() { if [[ -s "$mo/$1" ]]; then grep -c . "$mo/$1"; else echo 0; fi; }
caught=$(count caught.txt)
missed=$(count missed.txt)
timeout=$(count timeout.txt)
unviable=$(count unviable.txt)
generated=$((caught + missed + timeout + unviable))

errors=()
# Pass 2: pass 1's missed mutants against the search's vectors.
sout=$out/search
search_caught=""
if [[ -n "$search" ]]; then
  if [[ "${MUTANTS_REPORT_ONLY:-0}" != 1 ]]; then
    rm -rf "$sout/mutants.out" "$out/search-only.txt"
    if [[ -s "$mo/missed.txt" ]]; then
      mkdir -p "$sout"
      re_args=()
      while IFS= read -r m; do
        [[ -z "$m" ]] && continue
        # One anchored regex per name, its metacharacters escaped.
        re_args+=(--re "^$(sed 's/[][\\.+*?(){}|^$]/\\&/g' <<<"$m")\$")
      done <"$mo/missed.txt"
      # cargo-mutants 27.1.0 generates its "delete field ... from struct ...
      # expression" mutants without applying --re (src/visit.rs), so those of
      # the examined files run too: --file keeps them to the missed mutants'
      # files, and only missed names are read back from the pass's results.
      while IFS= read -r f; do re_args+=(--file "$f"); done < <(sed -n 's/^\([^:]*\):.*/\1/p' "$mo/missed.txt" | sort -u)
      set +e
      KVSPEC_VECTORS=$search cargo mutants --jobs "$jobs" --output "$sout" --colors never \
        "${re_args[@]}" >"$out/search.log" 2>&1
      src=$?
      set -e
      case $src in
        0|2|3) ;;
        4) errors+=("the unmutated port fails the search's vectors ($search); see $out/search.log") ;;
        *) errors+=("the search pass failed (cargo-mutants exit $src); see $out/search.log") ;;
      esac
      echo "rust-mutation: search pass: $(grep -c . "$mo/missed.txt") missed mutants rerun against $search" >&2
    fi
  fi
  search_caught=$(cat "$sout/mutants.out/caught.txt" "$sout/mutants.out/timeout.txt" 2>/dev/null || true)
fi

equivalents=$here/mutants-equivalent.md
# Entries under a heading that names "2^32 positions" are not equivalent:
# a vector would need about 2^32 admitted positions (16 GiB), so no vector
# of a feasible size kills them. They are counted apart, as untestable.
untestable_names=""
if [[ -f "$equivalents" ]]; then
  untestable_names=$(awk '/^## /{u = index($0, "2^32 positions") > 0}
    u && /^- `/{s = $0; sub(/^- `/, "", s); sub(/`.*/, "", s); print s}' "$equivalents")
fi
equivalent=0
untestable=0
survivors=()
search_only=()
if [[ -s "$mo/missed.txt" ]]; then
  while IFS= read -r m; do
    [[ -z "$m" ]] && continue
    listed=0
    { [[ -f "$equivalents" ]] && grep -qF -- "- \`$m\`" "$equivalents"; } && listed=1
    if [[ -n "$search_caught" ]] && grep -qxF -- "$m" <<<"$search_caught"; then
      search_only+=("$m")
      [[ $listed -eq 0 ]] || errors+=("$m is listed in mutants-equivalent.md, but the search kills it: it is not equivalent")
    elif [[ -n "$untestable_names" ]] && grep -qxF -- "$m" <<<"$untestable_names"; then
      untestable=$((untestable + 1))
    elif [[ $listed -eq 1 ]]; then
      equivalent=$((equivalent + 1))
    else
      survivors+=("$m")
    fi
  done <"$mo/missed.txt"
fi
survived=${#survivors[@]}
searched=${#search_only[@]}
if [[ -n "$search" ]]; then
  printf '%s\n' "${search_only[@]+"${search_only[@]}"}" | grep . >"$out/search-only.txt" || true
fi

for m in "${survivors[@]+"${survivors[@]}"}"; do echo "survived: $m" >&2; done
for m in "${search_only[@]+"${search_only[@]}"}"; do echo "search-only: $m" >&2; done
if [[ -s "$mo/timeout.txt" ]]; then sed 's/^/timeout: /' "$mo/timeout.txt" >&2; fi
for e in "${errors[@]+"${errors[@]}"}"; do echo "rust-mutation: error: $e"; done
echo "rust-mutation: generated $generated, killed $caught, killed by search only $searched, equivalent $equivalent, untestable $untestable, survived $survived, timeout $timeout"
echo "rust-mutation: unviable $unviable (do not build; included in generated)"
[[ $survived -eq 0 && $searched -eq 0 && ${#errors[@]} -eq 0 ]]
