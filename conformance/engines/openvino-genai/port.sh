#!/bin/sh
# Launcher for the conformance runner: the openvino-genai adapter in its own
# virtual environment (.venv, made by setup.sh).
here=$(cd "$(dirname "$0")" && pwd)
python="$here/.venv/bin/python"
if [ ! -x "$python" ] || [ ! -x "$here/build/ov_evict" ]; then
  echo "openvino-genai-adapter: not built: run $here/setup.sh" >&2
  exit 1
fi
exec "$python" "$here/adapter.py" "$@"
