#!/bin/bash
# The Python port as this project shipped it at each earlier spec version,
# taken unchanged from git history, run by today's runner against today's
# vectors (spec/features.md). Each declares its own spec version (and,
# from 0.7.0 on, its features; before, none), ignores the wire fields it
# does not know, and must get no failure: every case it cannot run is
# reported `not run`, not failed.
#
#   tools/old_ports.sh [runner]     (default: bazel's runner, built)
#
# Prints one line per version, then "old-ports: N passed, M failed" (one
# per version) for tools/test_summary.py. Needs the repository's history
# and conformance/ports/python/.venv (tools/setup.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
# The last commit at each spec version (spec/README.md#changes).
VERSIONS=(
  "0.3.0 5810472"
  "0.4.0 54e80fb"
  "0.5.0 eeccc4f"
  "0.6.0 f49c309"
  "0.7.0 5abcd81"
  "0.8.0 55323d7"
  "0.9.0 b12fd29"
  "0.10.0 af4a845"
)
runner="${1:-}"
if [[ -z "$runner" ]]; then
  # Built already by tools/test.sh's `bazel test //...` (.bazelrc's one
  # configuration, -c opt).
  bazel build //conformance:runner >/dev/null 2>&1 \
    || { echo "old-ports: 0 passed, 1 failed (the runner did not build)"; exit 1; }
  runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
fi
venv="$repo/conformance/ports/python/.venv"
[[ -x "$venv/bin/python" ]] \
  || { echo "old-ports: 0 passed, 1 failed (no $venv: run tools/setup.sh)"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# One version: its report line(s) into $work/$version.out, and "pass" or
# "fail" into $work/$version.verdict. Two versions run at a time (each run
# is the runner and one Python process taking turns: about one core).
run_version() {  # version commit
  local version="$1" commit="$2" dir="$work/$1" out code line declared
  exec >"$work/$version.out" 2>&1
  mkdir -p "$dir"
  if ! git archive "$commit" conformance/ports/python 2>/dev/null | tar -x -C "$dir"; then
    echo "old-port-$version: commit $commit is not in this clone's history"
    echo fail >"$work/$version.verdict"; return
  fi
  ln -s "$venv" "$dir/conformance/ports/python/.venv"
  out="$("$runner" --vectors=vectors --port="$dir/conformance/ports/python/port.sh" 2>&1)"
  code=$?
  line="$(tail -1 <<<"$out")"
  declared="$(grep -m1 '^port:' <<<"$out")"
  if [[ $code -eq 0 ]] && grep -qE '^[0-9]+ passed, 0 failed, 0 skipped, [0-9]+ not run$' <<<"$line"; then
    echo "old-port-$version: $line ($declared)"
    echo pass >"$work/$version.verdict"
  else
    echo "old-port-$version: FAILED, runner exit $code: $line ($declared)"
    grep -E '^FAIL' <<<"$out" | head -10
    echo fail >"$work/$version.verdict"
  fi
  grep -E '^not run:' <<<"$out" | sed 's/^/  /'
}
jobs_at_once=$(nproc)
for entry in "${VERSIONS[@]}"; do
  read -r version commit <<<"$entry"
  while [[ $(jobs -rp | wc -l) -ge $jobs_at_once ]]; do wait -n; done
  run_version "$version" "$commit" &
done
wait
passed=0; failed=0
for entry in "${VERSIONS[@]}"; do
  read -r version _ <<<"$entry"
  cat "$work/$version.out" 2>/dev/null
  if [[ "$(cat "$work/$version.verdict" 2>/dev/null)" == pass ]]; then
    passed=$((passed + 1))
  else
    [[ -f "$work/$version.verdict" ]] || echo "old-port-$version: FAILED, no verdict (the run died)"
    failed=$((failed + 1))
  fi
done
echo "old-ports: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
