#!/bin/bash
# Runs the mlx-lm adapter through the conformance runner against every
# vector, with mlx-lm.expectations, from the repository root
# (../common/check_adapter.sh). Lists each expected deviation, then, last,
# "mlx-lm-adapter: P passed, F failed": P the cases the runner passed, F its
# unexpected outcomes (new failures, changed failures, unexpected passes,
# stale entries: its "FAIL:" lines; at least 1 when the runner exits
# non-zero). The mismatches and skips that mlx-lm.expectations lists are in
# neither count (the list above shows them), nor are the cases "not run"
# (policies and features the adapter does not declare).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=mlx-lm-adapter
if [[ ! -x "$here/.venv/bin/python" ]]; then
  echo "$name: 0 passed, 1 failed (no $here/.venv: run $here/setup.sh)"; exit 1
fi
exec bash "$here/../common/check_adapter.sh" "$name" "$here/port.sh" "$here/mlx-lm.expectations"
