#!/bin/sh
# Launcher for the conformance runner: starts the Python testee, with the
# virtual environment tools/setup.sh makes (.venv) when it exists.
here=$(cd "$(dirname "$0")" && pwd)
python="$here/.venv/bin/python"
[ -x "$python" ] || python=python3
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec "$python" -m kvspec_port "$@"
