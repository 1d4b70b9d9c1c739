#!/bin/sh
# Launcher for the conformance runner: the llama.cpp adapter in its own
# virtual environment (.venv, made by setup.sh from requirements.txt).
here=$(cd "$(dirname "$0")" && pwd)
python="$here/.venv/bin/python"
if [ ! -x "$python" ]; then
  echo "llama.cpp-adapter: no $here/.venv: run $here/setup.sh" >&2
  exit 1
fi
exec "$python" "$here/adapter.py" "$@"
