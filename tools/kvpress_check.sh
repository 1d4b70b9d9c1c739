#!/bin/bash
# Runs NVIDIA kvpress 0.5.5's own presses on every vector that uses a kvpress
# preset and checks the disagreements against tools/kvpress/disagreements.txt
# (tools/kvpress_check.py --check), after the tool's self-test. Prints
# "kvpress-selftest: N passed, M failed" and, last, "kvpress: N passed,
# M failed" for tools/test_summary.py; exits non-zero on any failure.
#
#   tools/kvpress_check.sh [--check|--write|--table]   (default --check)
set -uo pipefail
cd "$(dirname "$0")/.."
python=tools/.venv-torch/bin/python
if [[ ! -x "$python" ]]; then
  echo "kvpress_check: no tools/.venv-torch: run tools/setup.sh (it installs tools/requirements-torch.txt)" >&2
  if [[ "${1:---check}" == --check ]]; then
    echo "kvpress-selftest: 0 passed, 1 failed (no tools/.venv-torch: run tools/setup.sh)"
  fi
  echo "kvpress: 0 passed, 1 failed (no tools/.venv-torch: run tools/setup.sh)"
  exit 1
fi
status=0
mode="${1:---check}"
if [[ "$mode" == --check ]]; then
  "$python" tools/kvpress_check.py --selftest || status=1
fi
"$python" tools/kvpress_check.py "$mode" || status=1
exit $status
