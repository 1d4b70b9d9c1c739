#!/bin/bash
# The README's test command (after tools/setup.sh): runs every Bazel test,
# then tools/determinism.sh (the vectors built by g++ and clang++ at several
# optimisation levels are byte-identical), and ends with one line,
# "tests: N passed, N failed", counting test cases (GoogleTest cases, one per
# shell test target, one per determinism configuration).
#
#   tools/test.sh [extra bazel test flags]
set -uo pipefail
cd "$(dirname "$0")/.."

log="$(mktemp)"
determinism="$(mktemp)"
trap 'rm -f "$log" "$determinism"' EXIT
bazel test //... --test_summary=short "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo
tools/determinism.sh 2>&1 | tee "$determinism"
determinism_status=${PIPESTATUS[0]}
echo
python3 tools/test_summary.py "$log" "$(bazel info bazel-testlogs 2>/dev/null)" \
  "$(grep '^determinism:' "$determinism" || echo 'determinism: 0 passed, 1 failed')"
[[ $status -eq 0 && $determinism_status -eq 0 ]]
