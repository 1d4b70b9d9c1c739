#!/bin/bash
# Builds and tests each bundled port, then runs it through the conformance
# runner against every vector with its expectation file, then the mutation
# sample with the search as a second kill test (tools/mutation.sh --sample
# --search auto). Prints one line per
# check, "NAME: N passed, M failed", for tools/test_summary.py.
#
#   tools/test_ports.sh          (after `bazel build //conformance:runner`)
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
[[ -d "$HOME/.cargo/bin" ]] && export PATH="$HOME/.cargo/bin:$PATH"
runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
status=0

conformance() {  # name, port launcher, expectation file
  local out code line
  out="$("$runner" --vectors=vectors --port="$repo/$2" --expectations="$3" --require_all 2>&1)"
  code=$?
  echo "$out" | tail -25
  line="$(echo "$out" | tail -1 | grep -oE '^[0-9]+ passed, [0-9]+ failed')"
  if [[ -z "$line" ]]; then
    echo "$1: 0 passed, 1 failed (no closing line; runner exit $code)"; status=1; return
  fi
  echo "$1: $line"
  # The runner exits non-zero on any outcome its expectations do not list.
  if [[ $code -ne 0 ]]; then
    echo "$1-expectations: 0 passed, 1 failed (runner exit $code)"; status=1
  fi
}

# Rust: cargo test, then the conformance run.
if command -v cargo >/dev/null; then
  (cd conformance/ports/rust && cargo build --release -q 2>&1 | tail -5)
  unit="$(cd conformance/ports/rust && cargo test -q 2>&1)"
  echo "$unit" | grep -E '^test result|error' | tail -5
  passed=$(echo "$unit" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
  failed=$(echo "$unit" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
  if ! echo "$unit" | grep -q '^test result: ok'; then failed=$((failed + 1)); status=1; fi
  echo "rust-unit: $passed passed, $failed failed"
  conformance rust-conformance conformance/ports/rust/port.sh \
    conformance/ports/rust/rust.expectations
else
  echo "rust-unit: 0 passed, 1 failed (cargo not found)"; status=1
fi
# Python: pytest (long vectors included), then the conformance run.
venv=conformance/ports/python/.venv
if [[ -x "$venv/bin/python" ]]; then
  unit="$(cd conformance/ports/python && KVSPEC_LONG=1 .venv/bin/python -m pytest -q 2>&1)"
  echo "$unit" | tail -3
  passed=$(echo "$unit" | tail -1 | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+' || echo 0)
  failed=$(echo "$unit" | tail -1 | grep -oE '[0-9]+ (failed|error)' | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
  if ! echo "$unit" | tail -1 | grep -qE '^[0-9]+ passed'; then failed=$((failed + 1)); status=1; fi
  echo "python-unit: ${passed:-0} passed, $failed failed"
  conformance python-conformance conformance/ports/python/port.sh \
    conformance/ports/python/python.expectations
  # Mutants: each breaks one spec rule; the vectors must catch every one with
  # a wrong answer (mismatch, wrong accept, wrong reject), not a crash.
  # Two mutants at a time (each run is the runner and one Python process
  # taking turns: about one core); each writes its line to its own file.
  mutant_dir="$(mktemp -d)"
  run_mutant() {  # index name rule
    local out first
    out="$("$runner" --vectors=vectors --stop_after_failures=1 \
      --port="$repo/$venv/bin/python $repo/conformance/ports/python/mutants/run_mutant.py $2" 2>&1)"
    first="$(echo "$out" | grep -oE '^[a-z0-9/.-]+: (mismatch|wrong accept|wrong reject)$' | head -1)"
    if [[ -n "$first" ]]; then
      echo "mutant $2 ($3): caught by $first" >"$mutant_dir/$1.caught"
    else
      echo "mutant $2 ($3): NOT caught: $(echo "$out" | grep -E ': (error|crash|timeout|protocol error)$' | head -1)" \
        >"$mutant_dir/$1.missed"
    fi
  }
  n=0
  while IFS=$'\t' read -r name policies rule; do
    while [[ $(jobs -rp | wc -l) -ge $(nproc) ]]; do wait -n; done
    n=$((n + 1)); run_mutant "$n" "$name" "$rule" &
  done < <("$venv/bin/python" conformance/ports/python/mutants/run_mutant.py --list)
  wait
  caught=0; missed=0
  for ((i = 1; i <= n; i++)); do
    if [[ -f "$mutant_dir/$i.caught" ]]; then
      caught=$((caught + 1)); cat "$mutant_dir/$i.caught"
    else
      missed=$((missed + 1)); status=1
      cat "$mutant_dir/$i.missed" 2>/dev/null || echo "mutant $i: no result (its run died)"
    fi
  done
  rm -rf "$mutant_dir"
  echo "python-mutants: $caught passed, $missed failed"
else
  echo "python-unit: 0 passed, 1 failed (no $venv: run tools/setup.sh)"; status=1
fi
# spec/protocol.md#precision: the Python port's binary32, bfloat16-into-
# binary32 and bfloat16 builds, each with no failure, and a planted rule
# error in each caught (about 80 s).
conformance/ports/python/precision_check.sh || status=1
# Mutation testing, the fixed sample (tools/mutation.sh --sample): every
# mutant of the sample killed by a vector, or argued in the port's
# mutants-equivalent.md; the survivors are rerun against the differential
# search's corpus (seed 1, 3,000 cases), and a mutant only the search kills
# is a failure (a gap in the vectors).
tools/mutation.sh --sample --search auto || status=1
exit $status
