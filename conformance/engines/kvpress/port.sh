#!/bin/sh
# Launcher for the conformance runner: the kvpress engine adapter in the torch
# venv (tools/.venv-torch: kvpress 0.5.5, torch CPU), in the dtype given:
#   port.sh float32|bfloat16|float16
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
exec "$root/tools/.venv-torch/bin/python" "$here/adapter.py" "$@"
