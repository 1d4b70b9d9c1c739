#!/bin/bash
# Usage: check_adapter.sh NAME PORT EXPECTATIONS
# The shared tail of every conformance/engines/<engine>/check.sh (which does
# its own precondition checks first, then execs this): builds the
# conformance runner, runs every vector against the adapter's launcher PORT
# with its expectation file EXPECTATIONS (both absolute paths), from the
# repository root, prints the runner's tail and, last, "NAME: P passed,
# F failed": P the cases the runner passed, F its unexpected outcomes (new
# failures, changed failures, unexpected passes, stale entries: its "FAIL:"
# lines; at least 1 when the runner exits non-zero). The mismatches and
# skips the expectation file lists are in neither count (the runner's tail
# shows them), nor are the cases "not run" (policies and features the
# adapter does not declare). Exit status: the runner's 0, else 1.
set -uo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 NAME PORT EXPECTATIONS" >&2; exit 2
fi
name=$1 port=$2 expectations=$3
cd "$(dirname "$0")/../../.." || exit 1
build_log="$(mktemp)"
if ! bazel build //conformance:runner 2>"$build_log"; then
  tail -20 "$build_log"; rm -f "$build_log"
  echo "$name: 0 passed, 1 failed (bazel build //conformance:runner failed)"; exit 1
fi
rm -f "$build_log"
runner="$(bazel info bazel-bin 2>/dev/null)/conformance/runner"
out="$("$runner" --vectors=vectors --port="$port" --expectations="$expectations" 2>&1)"
code=$?
echo "$out" | tail -25
# "N cases, N excluded; E failures expected ..., U unexpected outcomes; ..."
# then "P passed, F failed, S skipped, N not run".
summary="$(echo "$out" | grep -E '^[0-9]+ cases, ' | tail -1)"
closing="$(echo "$out" | tail -1 | grep -E '^[0-9]+ passed, [0-9]+ failed')"
if [[ -z "$summary" || -z "$closing" ]]; then
  echo "$name: 0 passed, 1 failed (no closing line; runner exit $code)"; exit 1
fi
unexpected=$(echo "$summary" | grep -oE '[0-9]+ unexpected outcomes' | grep -oE '^[0-9]+')
passed=$(echo "$closing" | grep -oE '^[0-9]+')
if [[ $code -ne 0 && $unexpected -eq 0 ]]; then unexpected=1; fi
echo "$name: $passed passed, $unexpected failed"
[[ $code -eq 0 ]]
