#!/bin/bash
# The search sends a port only the cases its hello covers
# (tools/README.md#search): against a port of spec 0.10.0 that declares
# decode, trace and spans only, every case sent is run (none is `not run`),
# and the cases it left out are counted by what they need. Against the
# reference testee, which declares everything, nothing is left out.
set -u
cd "$TEST_SRCDIR/kvspec" || exit 1
search=tools/search/search
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

out="$("$search" --port="conformance/testee/partial_port --spec_version=0.10.0 --declare=decode,trace,spans" \
         --seed=1 --cases=300 --batch=100 --out="$work/a" --work="$work/w1" 2>&1)"
echo "$out" | grep -E '^search|agreed'
if ! grep -qx '300 agreed, 0 disagreed, 0 skipped, 0 not run' <<<"$out"; then
  echo "FAIL: against a decode+trace+spans port, 300 cases should all be run and agree"
  status=1
fi
if ! grep -qE '^search: [0-9]+ generated cases left out, never sent' <<<"$out" ||
   ! grep -qE '^search:   [0-9]+ need feature prefill$' <<<"$out" ||
   grep -qE '^search:   [0-9]+ need feature (decode|trace|spans)$' <<<"$out"; then
  echo "FAIL: the cases left out should be counted by the features the port lacks, and only those"
  status=1
fi

out="$("$search" --port=conformance/testee/reference_testee --seed=1 --cases=300 \
         --batch=100 --out="$work/b" --work="$work/w2" 2>&1)"
if ! grep -qx '300 agreed, 0 disagreed, 0 skipped, 0 not run' <<<"$out" ||
   grep -q 'left out' <<<"$out"; then
  echo "FAIL: against the reference testee nothing should be left out"
  echo "$out" | tail -5
  status=1
fi
[[ $status -eq 0 ]] && echo "ok"
exit $status
