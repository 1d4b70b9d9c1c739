#!/bin/bash
# The README's test command (after tools/setup.sh): runs every Bazel test,
# then tools/determinism.sh (the vectors built by g++ and clang++ at several
# optimisation levels are byte-identical), then tools/test_ports.sh (each
# bundled port's unit tests and its conformance run), and ends with one line,
# "tests: N passed, N failed", counting test cases (GoogleTest cases, one per
# shell test target, one per determinism configuration, unit tests and
# conformance cases of each port).
#
#   tools/test.sh [extra bazel test flags]
set -uo pipefail
cd "$(dirname "$0")/.."

log="$(mktemp)"
determinism="$(mktemp)"
ports="$(mktemp)"
trap 'rm -f "$log" "$determinism" "$ports"' EXIT
bazel test //... --test_summary=short "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo
tools/determinism.sh 2>&1 | tee "$determinism"
determinism_status=${PIPESTATUS[0]}
echo
tools/test_ports.sh 2>&1 | tee "$ports"
ports_status=${PIPESTATUS[0]}
echo
extra=("$(grep '^determinism:' "$determinism" || echo 'determinism: 0 passed, 1 failed')")
while IFS= read -r line; do extra+=("$line"); done < <(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$ports")
python3 tools/test_summary.py "$log" "$(bazel info bazel-testlogs 2>/dev/null)" "${extra[@]}"
[[ $status -eq 0 && $determinism_status -eq 0 && $ports_status -eq 0 ]]
