#!/bin/bash
# The runner as a user runs it: --help, --dump and a replay without the
# runner, JUnit and JSON reports, refusals of bad input.
set -u
cd "$TEST_SRCDIR/kvspec" || exit 1
RUNNER=conformance/runner
TESTEE="$PWD/conformance/testee/reference_testee"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

$RUNNER --help >"$TMP/help" 2>&1
for flag in port vectors case policy expectations timeout_seconds max_restarts \
            max_frame_bytes junit json dump; do
  grep -q -- "--$flag" "$TMP/help" || fail "--help does not explain --$flag"
done

# A case's frames, replayed with no runner: the testee answers both.
$RUNNER --vectors=vectors --case=h2o/ties/equal-sums-evict-lower \
  --dump="$TMP/frames" >/dev/null || fail "--dump"
"$TESTEE" <"$TMP/frames" >"$TMP/answers" 2>/dev/null || fail "replaying the dump"
[[ $(stat -c %s "$TMP/answers") -gt 8 ]] || fail "the testee answered nothing"

# A run with reports.
$RUNNER --vectors=vectors --port="$TESTEE" --policy=window \
  --junit="$TMP/junit.xml" --json="$TMP/summary.json" >"$TMP/out" 2>&1 \
  || fail "a clean run exited non-zero: $(tail -3 "$TMP/out")"
tail -1 "$TMP/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 skipped, 0 not run$' \
  || fail "closing line: $(tail -1 "$TMP/out")"
grep -q "excluded: .* not selected by --policy=window" "$TMP/out" \
  || fail "exclusions are not reported"
grep -q '<testcase name="window/basic/single-steps" classname="window"' \
  "$TMP/junit.xml" || fail "JUnit XML"
grep -q '"failed": 0' "$TMP/summary.json" || fail "JSON summary"

# An expectation that no longer holds fails the run.
echo "window/basic/single-steps mismatch was broken once" >"$TMP/stale.exp"
$RUNNER --vectors=vectors --port="$TESTEE" --case=window/basic/single-steps \
  --expectations="$TMP/stale.exp" >"$TMP/stale.out" 2>&1
[[ $? -eq 1 ]] || fail "an unexpected pass must fail the run"
grep -q "unexpected pass: window/basic/single-steps" "$TMP/stale.out" \
  || fail "unexpected pass message"

# Bad input.
$RUNNER --vectors=vectors >"$TMP/noport" 2>&1
[[ $? -eq 2 ]] && grep -q -- "--port is required" "$TMP/noport" || fail "missing --port"
$RUNNER --vectors="$TMP/nowhere" --port="$TESTEE" >"$TMP/novec" 2>&1
[[ $? -eq 2 ]] && grep -q "MANIFEST.json" "$TMP/novec" || fail "missing vectors"
# /bin/false may exit before the hello is written (the runner then cannot
# send it) or after (no reply comes): a race, both a failed handshake.
$RUNNER --vectors=vectors --port=/bin/false >"$TMP/false" 2>&1
[[ $? -eq 1 ]] && grep -qE "no hello reply|could not send the hello" "$TMP/false" \
  || fail "a port that exits at once"

# --dump, then --decode: the frames as text, both sides; the wrong side and a
# truncated file are refused with a reason.
$RUNNER --vectors=vectors --case=window/basic/single-steps --dump="$TMP/dump.bin" \
  >/dev/null 2>&1 || fail "--dump"
$RUNNER --decode="$TMP/dump.bin" >"$TMP/dump.txt" 2>&1 || fail "--decode of a dump"
grep -q 'case_id: "window/basic/single-steps"' "$TMP/dump.txt" \
  && grep -q '# frame 2: ' "$TMP/dump.txt" || fail "--decode prints the request"
"$TESTEE" <"$TMP/dump.bin" >"$TMP/reply.bin" 2>/dev/null
$RUNNER --decode="$TMP/reply.bin" --decode_as=port >"$TMP/reply.txt" 2>&1 \
  || fail "--decode of a reply"
grep -q 'features: "prefill"' "$TMP/reply.txt" && grep -q 'kept_count: 3' "$TMP/reply.txt" \
  || fail "--decode_as=port prints the hello and the log"
$RUNNER --decode="$TMP/reply.bin" >"$TMP/wrong.txt" 2>&1
[[ $? -eq 2 ]] && grep -q "try --decode_as=port" "$TMP/wrong.txt" || fail "wrong side"
head -c 9 "$TMP/dump.bin" >"$TMP/cut.bin"
$RUNNER --decode="$TMP/cut.bin" >"$TMP/cut.txt" 2>&1
[[ $? -eq 2 ]] && grep -q "is truncated" "$TMP/cut.txt" || fail "a truncated frame"

if [[ $failures -ne 0 ]]; then echo "$failures check(s) failed"; exit 1; fi
echo "all runner CLI checks passed"
