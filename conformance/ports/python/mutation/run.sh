#!/bin/sh
# Mutation testing of the Python port with mutmut 3.8.1 (requirements-mutation.txt).
# Installs nothing: run it with the port's venv holding mutmut.
#
#   mutation/run.sh                        # every mutant
#   mutation/run.sh --sample N --seed S    # a reproducible sample of N (CI)
#   mutation/run.sh --slice K/N            # every N-th mutant from the K-th
#   mutation/run.sh NAME ...               # the given mutant names
#   mutation/run.sh --search DIR ...       # and a second pass against DIR
#
# The killing test is tests/test_vectors.py alone: every vector, long ones
# included (KVSPEC_LONG=1), in-process, stopping at the first failure (mutmut
# runs pytest -x over the tests that reach the mutated function). Vectors come
# from $KVSPEC_VECTORS (default: the repo's vectors/). mutmut works in a copy
# of the port ($KVSPEC_MUTATION_WORK, default /tmp/kvspec-py-mutation),
# because it writes a folder named mutants/, which here holds the
# hand-written mutants.
# Mutated: kvspec_port/ except _gen/ (generated protobuf code), proto.py and
# __main__.py (imports only) and the testee's framing (see prepare.py).
#
# --search DIR (or $KVSPEC_SEARCH_VECTORS): a second kill corpus, a vectors
# directory in the format of vectors/ (the search's scenarios with the
# reference's logs). Pass 1 runs the selected mutants against the vectors;
# pass 2 reruns only what pass 1 missed (every survivor, before
# mutants-equivalent.md is applied, and every "no tests" mutant, in code the
# vectors never reach) with KVSPEC_VECTORS=DIR, in a second work copy
# ($work/search). A mutant pass 2 kills is "killed by search only": a
# gap in the vectors. Their names go to stderr as "search-only: NAME" and to
# $work/search-only.txt.
#
# Last line: python-mutation: generated N, killed K, killed by search only G,
#   equivalent E, untestable U, survived S, timeout T
set -eu
port=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$port/.venv/bin/python}
work=${KVSPEC_MUTATION_WORK:-/tmp/kvspec-py-mutation}
vectors=$(cd "${KVSPEC_VECTORS:-$port/../../../vectors}" && pwd)
search=${KVSPEC_SEARCH_VECTORS:-}
sample=0
seed=1
slice=""
names=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sample) sample=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --slice) slice=$2; shift 2 ;;
    --search) search=$2; shift 2 ;;
    *) names="$names $1"; shift ;;
  esac
done
if [ -n "$search" ]; then
  search=$(cd "$search" && pwd)
fi

# mutmut's command line, without `python -m` (which makes mutmut import its
# __main__ twice and warn).
mutmut() {
  "$python" -c 'import sys; from mutmut.__main__ import cli; sys.argv[0] = "mutmut"; cli()' "$@"
}

prepare() {  # a fresh work copy of the port in $1
  rm -rf "$1"
  mkdir -p "$1/tests"
  cp -r "$port/kvspec_port" "$1/"
  find "$1" -name __pycache__ -prune -exec rm -rf {} +
  cp "$port/tests/conftest.py" "$port/tests/test_vectors.py" "$1/tests/"
  # timeout_multiplier: a mutant is cut off (and counted a timeout, a kill)
  # after 4 times its tests' clean duration plus 1 s (mutmut's default 15:
  # a mutant reaching every vector, 31 s of tests, held a worker 8 minutes).
  # A mutant that does not fail runs every test it reaches in about the
  # clean time (the sample's two pass-1 survivors, 2026-12-07: 0.8 and 0.7
  # times their estimate, two workers on two cores), far below the limit,
  # so a survivor is not mistaken for a timeout.
  # precision.py is the build option of lower precision (spec 0.15.0): the
  # vectors run the port in binary64, where its rounding is never reached;
  # tests/test_precision.py and precision_check.sh test it instead.
  cat > "$1/setup.cfg" <<'CFG'
[mutmut]
source_paths = kvspec_port/
do_not_mutate =
    kvspec_port/_gen/*
    kvspec_port/proto.py
    kvspec_port/__main__.py
    kvspec_port/precision.py
use_git_change_detection = false
timeout_multiplier = 4
CFG
  cat > "$1/pyproject.toml" <<'CFG'
[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-p no:cacheprovider"
CFG
  "$python" "$port/mutation/prepare.py" "$1"
}

prepare "$work"
cd "$work"
export KVSPEC_LONG=1 KVSPEC_VECTORS="$vectors"
if [ -n "$names" ]; then
  printf '%s\n' $names > selection.txt
else
  "$python" "$port/mutation/list_mutants.py" --sample "$sample" --seed "$seed" ${slice:+--slice "$slice"} > selection.txt
fi
start=$(date +%s)
# shellcheck disable=SC2046
mutmut run --max-children "${MUTMUT_CHILDREN:-1}" $(cat selection.txt) > run.log 2>&1 || true
end=$(date +%s)
mutmut results --all true > results.txt
echo "python-mutation: wall time $((end - start)) s, work dir $work (run.log, results.txt)" >&2

search_args=""
rm -f search-only.txt
if [ -n "$search" ]; then
  # Pass 2: every mutant pass 1 missed (survived, or "no tests": code the
  # vectors never reach), against the search's vectors, in a fresh copy
  # (mutmut's record of which tests reach which function names the cases of
  # pass 1's vectors).
  "$python" "$port/mutation/totals.py" --survivors selection.txt results.txt > search-selection.txt
  : > search-results.txt
  if [ -s search-selection.txt ]; then
    prepare "$work/search"
    cp search-selection.txt "$work/search/selection.txt"
    start=$(date +%s)
    # shellcheck disable=SC2046
    (cd "$work/search" && KVSPEC_VECTORS="$search" mutmut run --max-children "${MUTMUT_CHILDREN:-1}" $(cat selection.txt) > run.log 2>&1) || true
    end=$(date +%s)
    (cd "$work/search" && mutmut results --all true) > search-results.txt
    echo "python-mutation: search pass: $(grep -c . search-selection.txt) missed mutants rerun against $search, wall time $((end - start)) s (search/run.log)" >&2
    if grep -q "Failed to run clean test" "$work/search/run.log"; then
      echo "python-mutation: error: the unmutated port fails the search's vectors ($search); see $work/search/run.log" >&2
    fi
  fi
  search_args="--search search-results.txt --search-only-file $work/search-only.txt"
fi
# shellcheck disable=SC2086
SURVIVORS_FILE="$work/survivors.txt" "$python" "$port/mutation/totals.py" selection.txt results.txt $search_args
