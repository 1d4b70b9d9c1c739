#!/bin/bash
# Runs the conformance runner against the transformers engine adapter with its
# expectations; last line: "transformers-adapter: P passed, F failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root" || exit 2
bazel build //conformance:runner >/dev/null 2>&1 || { echo "transformers-adapter: 0 passed, 1 failed (bazel build //conformance:runner failed)"; exit 2; }
runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
out=$(mktemp)
"$runner" --vectors=vectors --port="$here/port.sh" \
  --expectations="$here/transformers.expectations" >"$out" 2>&1
rc=$?
tail -n 25 "$out"
# P: the cases that passed. F: the runner's failures, i.e. its "unexpected
# outcomes" (new failures, unexpected passes, stale entries); the outcomes the
# expectations list (skips, the static preset's mismatches) are neither.
passed=$(grep -Eo '^[0-9]+ passed, ' "$out" | tail -1 | grep -Eo '[0-9]+')
failed=$(grep -Eo '[0-9]+ unexpected outcomes' "$out" | tail -1 | grep -Eo '[0-9]+')
passed=${passed:-0}; failed=${failed:-0}
# The runner exits non-zero on any outcome its expectations do not list.
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
rm -f "$out"
echo "transformers-adapter: $passed passed, $failed failed"
[ "$rc" -eq 0 ]
