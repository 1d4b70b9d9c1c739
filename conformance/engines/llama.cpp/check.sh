#!/bin/bash
# Runs the llama.cpp adapter through the conformance runner against every
# vector, with llama.cpp.expectations, from the repository root. Prints the
# runner's tail and, last, "llama.cpp-adapter: P passed, F failed": P the
# cases the runner passed, F its unexpected outcomes (new failures, changed
# failures, unexpected passes, stale entries: its "FAIL:" lines; at least 1
# when the runner exits non-zero). The skips llama.cpp.expectations lists are
# in neither count (the runner's tail shows them), nor are the cases "not
# run" (policies and features the adapter does not declare).
#
# llama-cpp-python is built from source (setup.sh, about 21 minutes on 2
# cores), so a machine without it is not a failure: one line, exit 0.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
name=llama.cpp-adapter
if [[ ! -x "$here/.venv/bin/python" ]] \
    || ! "$here/.venv/bin/python" -c "import llama_cpp" >/dev/null 2>&1 \
    || [[ ! -f "$here/.venv/kvspec-models/tiny-llama-v4096.gguf" ]]; then
  echo "$name: not run (llama-cpp-python 0.3.36 is not installed: conformance/engines/llama.cpp/setup.sh builds it from source, about 21 minutes on 2 cores)"
  exit 0
fi
if ! bazel build //conformance:runner 2>/tmp/llama.cpp-check-build.$$; then
  tail -20 /tmp/llama.cpp-check-build.$$; rm -f /tmp/llama.cpp-check-build.$$
  echo "$name: 0 passed, 1 failed (bazel build //conformance:runner failed)"; exit 1
fi
rm -f /tmp/llama.cpp-check-build.$$
runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
out="$("$runner" --vectors=vectors --port="$here/port.sh" \
  --expectations="$here/llama.cpp.expectations" 2>&1)"
code=$?
echo "$out" | tail -25
# "N cases, N excluded; E failures expected ..., U unexpected outcomes; ..."
# then "P passed, F failed, S skipped, N not run".
summary="$(echo "$out" | grep -E '^[0-9]+ cases, ' | tail -1)"
closing="$(echo "$out" | tail -1 | grep -E '^[0-9]+ passed, [0-9]+ failed')"
if [[ -z "$summary" || -z "$closing" ]]; then
  echo "$name: 0 passed, 1 failed (no closing line; runner exit $code)"; exit 1
fi
unexpected=$(echo "$summary" | grep -oE '[0-9]+ unexpected outcomes' | grep -oE '^[0-9]+')
passed=$(echo "$closing" | grep -oE '^[0-9]+')
if [[ $code -ne 0 && $unexpected -eq 0 ]]; then unexpected=1; fi
echo "$name: $passed passed, $unexpected failed"
[[ $code -eq 0 ]]
