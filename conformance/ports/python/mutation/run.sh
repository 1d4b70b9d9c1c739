#!/bin/sh
# Mutation testing of the Python port with mutmut 3 (requirements-mutation.txt).
# Installs nothing: run it with the port's venv holding mutmut.
#
#   mutation/run.sh                        # every mutant
#   mutation/run.sh --sample N --seed S    # a reproducible sample of N (CI)
#   mutation/run.sh NAME ...               # the given mutant names
#
# The killing test is tests/test_vectors.py alone: every vector, long ones
# included (KVSPEC_LONG=1), in-process, stopping at the first failure (mutmut
# runs pytest -x). Vectors come from $KVSPEC_VECTORS (default: the repo's
# vectors/). mutmut works in a copy of the port ($KVSPEC_MUTATION_WORK,
# default /tmp/kvspec-py-mutation), because it writes a folder named
# mutants/, which here holds the hand-written mutants.
# Mutated: kvspec_port/ except _gen/ (generated protobuf code), proto.py and
# __main__.py (imports only) and the testee's framing (see prepare.py).
# Last line: python-mutation: generated N, killed K, equivalent E, survived S, timeout T
set -eu
port=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$port/.venv/bin/python}
work=${KVSPEC_MUTATION_WORK:-/tmp/kvspec-py-mutation}
vectors=$(cd "${KVSPEC_VECTORS:-$port/../../../vectors}" && pwd)
sample=0
seed=1
names=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sample) sample=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) names="$names $1"; shift ;;
  esac
done

rm -rf "$work"
mkdir -p "$work/tests"
cp -r "$port/kvspec_port" "$work/"
find "$work" -name __pycache__ -prune -exec rm -rf {} +
cp "$port/tests/conftest.py" "$port/tests/test_vectors.py" "$work/tests/"
cat > "$work/setup.cfg" <<'CFG'
[mutmut]
paths_to_mutate = kvspec_port/
do_not_mutate =
    kvspec_port/_gen/*
    kvspec_port/proto.py
    kvspec_port/__main__.py
CFG
cat > "$work/pyproject.toml" <<'CFG'
[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-p no:cacheprovider"
CFG
"$python" "$port/mutation/prepare.py" "$work"

cd "$work"
export KVSPEC_LONG=1 KVSPEC_VECTORS="$vectors"
if [ -n "$names" ]; then
  printf '%s\n' $names > selection.txt
else
  "$python" "$port/mutation/list_mutants.py" --sample "$sample" --seed "$seed" > selection.txt
fi
start=$(date +%s)
# shellcheck disable=SC2046
"$python" -m mutmut run --max-children 1 $(cat selection.txt) > run.log 2>&1 || true
end=$(date +%s)
"$python" -m mutmut results --all true > results.txt
echo "python-mutation: wall time $((end - start)) s, work dir $work (run.log, results.txt)" >&2
SURVIVORS_FILE="$work/survivors.txt" "$python" "$port/mutation/totals.py" selection.txt < results.txt
