#!/bin/sh
# Launcher for the conformance runner: starts the Python testee.
here=$(cd "$(dirname "$0")" && pwd)
PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m kvspec_port "$@"
