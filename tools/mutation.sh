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
#                                Rust --shard 0/8 (round-robin), Python
#                                --sample 150 --seed 1
#
# Prints each port's totals ("rust-mutation: generated N, killed K,
# equivalent E, untestable U, survived S, timeout T"), then one line per
# port for tools/test_summary.py, "rust-mutation: P passed, S failed", where
# failed counts survivors (a timeout is a mutant the runner catches as a
# hang). Exit status 1 if any mutant survived. Needs tools/setup.sh first.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
rust_args=()
python_args=()
if [[ "${1:-}" == "--sample" ]]; then
  rust_args=(--shard 0/8 --sharding round-robin)
  python_args=(--sample 150 --seed 1)
fi
status=0

field() { grep -oE "$1 [0-9]+" <<<"$2" | grep -oE '[0-9]+' || echo 0; }

summarize() {  # name, output of the port's run.sh
  local line passed survived
  line="$(grep -E "^$1: generated " <<<"$2" | tail -1)"
  echo "$line"
  if [[ -z "$line" ]]; then
    echo "$1: 0 passed, 1 failed (no totals line)"; status=1; return
  fi
  # Passed: killed, timed out (the runner catches a hang), or argued in
  # mutants-equivalent.md. Mutants that do not build or that the vector test
  # never reaches count neither way.
  passed=$(( $(field killed "$line") + $(field timeout "$line") +
             $(field equivalent "$line") + $(field untestable "$line") ))
  survived=$(field survived "$line")
  [[ $survived -eq 0 ]] || status=1
  echo "$1: $passed passed, $survived failed"
}

out="$(conformance/ports/rust/mutation/run.sh "${rust_args[@]}" 2>&1)"
echo "$out" | grep -E '^(survived|timeout): ' | head -20
summarize rust-mutation "$out"

out="$(conformance/ports/python/mutation/run.sh "${python_args[@]}" 2>&1)"
echo "$out" | grep -E '^python-mutation: (other|wall)' | head -5
summarize python-mutation "$out"
exit $status
