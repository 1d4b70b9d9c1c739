#!/bin/bash
# Runs the llama.cpp adapter through the conformance runner against every
# vector, with llama.cpp.expectations, from the repository root
# (../common/check_adapter.sh). Lists each expected deviation, then, last,
# "llama.cpp-adapter: P passed, F failed": P the cases the runner passed, F
# its unexpected outcomes (new failures, changed failures, unexpected passes,
# stale entries: its "FAIL:" lines; at least 1 when the runner exits
# non-zero). The skips llama.cpp.expectations lists are in neither count (the
# list above shows them), nor are the cases "not run" (policies and
# features the adapter does not declare).
#
# llama-cpp-python is built from source (setup.sh, about 21 minutes on 2
# cores), so a machine without it is not a failure: one line, exit 0.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=llama.cpp-adapter
if [[ ! -x "$here/.venv/bin/python" ]] \
    || ! "$here/.venv/bin/python" -c "import llama_cpp" >/dev/null 2>&1 \
    || [[ ! -f "$here/.venv/kvspec-models/tiny-llama-v4096.gguf" ]]; then
  echo "$name: not run (llama-cpp-python 0.3.36 is not installed: conformance/engines/llama.cpp/setup.sh builds it from source, about 21 minutes on 2 cores)"
  exit 0
fi
exec bash "$here/../common/check_adapter.sh" "$name" "$here/port.sh" "$here/llama.cpp.expectations"
