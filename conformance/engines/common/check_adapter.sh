#!/bin/bash
# Usage: check_adapter.sh NAME PORT EXPECTATIONS [RUNNER_FLAG ...]
# The shared tail of every conformance/engines/<engine>/check.sh (which does
# its own precondition checks first, then execs this): builds the
# conformance runner, runs every vector against the adapter's launcher PORT
# with its expectation file EXPECTATIONS (both absolute paths), from the
# repository root, and ends (deviations.py) with:
# - each deviation the expectation file lists: the case, its class (the
#   outcome), the entry's reason and, for a mismatch, what the vector
#   expected against what the engine did; skips grouped by reason;
# - the runner's unexpected outcomes (new failures, changed failures,
#   unexpected passes, stale entries: its "FAIL:" lines);
# - the counts line, checked against the one conformance/engines/README.md
#   holds for NAME (stale: a failure; KVSPEC_UPDATE_ENGINE_README=1
#   rewrites it);
# - last, "NAME: P passed, F failed": P the cases the runner passed, F its
#   unexpected outcomes (at least 1 when the runner exits non-zero), plus
#   one for a stale README line. The listed deviations are in neither
#   count, nor are the cases "not run" (policies and features the adapter
#   does not declare).
# Exit status: 0 when F is 0, else 1.
set -uo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 NAME PORT EXPECTATIONS [RUNNER_FLAG ...]" >&2; exit 2
fi
name=$1 port=$2 expectations=$3
# Further arguments go to the runner as they are (openvino-genai: --nocut).
shift 3
runner_flags=("$@")
cd "$(dirname "$0")/../../.." || exit 1
build_log="$(mktemp)"
# The runner, which tools/test.sh's `bazel test //...` has just built in
# .bazelrc's one configuration (-c opt).
if ! bazel build //conformance:runner 2>"$build_log"; then
  tail -20 "$build_log"; rm -f "$build_log"
  echo "$name: 0 passed, 1 failed (bazel build //conformance:runner failed)"; exit 1
fi
rm -f "$build_log"
runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
out="$("$runner" --vectors=vectors --port="$port" --expectations="$expectations" \
  --json="$json" "${runner_flags[@]}" 2>&1)"
code=$?
# "N cases, N excluded; E failures expected ..., U unexpected outcomes; ..."
summary="$(echo "$out" | grep -E '^[0-9]+ cases, ' | tail -1)"
if [[ -z "$summary" || ! -s "$json" ]]; then
  echo "$out" | tail -25
  echo "$name: 0 passed, 1 failed (no report; runner exit $code)"; exit 1
fi
echo "$out" | grep -E '^(FAIL: |suite: |port: )'
unexpected=$(echo "$summary" | grep -oE '[0-9]+ unexpected outcomes' | grep -oE '^[0-9]+')
if [[ $code -ne 0 && $unexpected -eq 0 ]]; then unexpected=1; fi
update=()
[[ "${KVSPEC_UPDATE_ENGINE_README:-}" == 1 ]] && update=(--update)
python3 conformance/engines/common/deviations.py "$name" "$json" "$expectations" \
  "$unexpected" --readme conformance/engines/README.md "${update[@]}"
