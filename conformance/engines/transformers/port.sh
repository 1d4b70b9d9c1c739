#!/bin/sh
# Launcher for the conformance runner: the transformers engine adapter, in
# the torch venv (tools/.venv-torch, transformers 5.2.0, torch CPU).
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
exec "$root/tools/.venv-torch/bin/python" "$here/adapter.py" "$@"
