#!/bin/bash
# The README's test command (after tools/setup.sh): runs every Bazel test
# and ends with one line, "tests: N passed, N failed", counting test cases
# (GoogleTest cases, and one per shell or Python test target).
#
#   tools/test.sh [extra bazel test flags]
set -uo pipefail
cd "$(dirname "$0")/.."

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
bazel test //... --test_summary=short "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
python3 tools/test_summary.py "$log" "$(bazel info bazel-testlogs 2>/dev/null)"
exit "$status"
