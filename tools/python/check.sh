#!/bin/bash
# The kvspec package's tests (tools/test.sh's python-api stage): every vector
# case through the API against its expected log (tests/test_vectors.py),
# then the API on cases worked by hand from the spec and its refusals
# (tests/test_api.py). Needs the package installed in tools/.venv-torch
# (tools/setup.sh --tests or --research builds it).
# Last lines: "python-api-vectors: P passed, F failed", "python-api: ...".
cd "$(dirname "$0")/../.."
python=tools/.venv-torch/bin/python
if ! "$python" -c 'import kvspec' 2>/dev/null; then
  echo "python-api-vectors: 0 passed, 1 failed (kvspec is not installed in tools/.venv-torch: run tools/setup.sh --tests)"
  echo "python-api: 0 passed, 1 failed (kvspec is not installed in tools/.venv-torch: run tools/setup.sh --tests)"
  exit 1
fi
status=0
"$python" tools/python/tests/test_vectors.py || status=1
"$python" tools/python/tests/test_api.py || status=1
exit $status
