#!/bin/bash
# Runs the openvino-genai adapter through the conformance runner against
# every vector, with openvino-genai.expectations and --nocut (GenAI returns
# victims, not the scores it ranked by), from the repository root
# (../common/check_adapter.sh), and ends with "openvino-genai-adapter: P
# passed, F failed". Where setup.sh has not built it (it needs a GenAI
# checkout, which CI does not have), prints "openvino-genai-adapter: not
# run (...)" and exits 0.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=openvino-genai-adapter
if [[ ! -x "$here/.venv/bin/python" || ! -x "$here/build/ov_evict" ]]; then
  echo "$name: not run (GenAI's cache eviction is not built here: KVSPEC_OPENVINO_GENAI_SRC=<a checkout of openvino.genai at 2026.3.0.0> $here/setup.sh)"
  exit 0
fi
exec bash "$here/../common/check_adapter.sh" "$name" "$here/port.sh" \
  "$here/openvino-genai.expectations" --nocut
