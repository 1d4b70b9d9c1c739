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
[[ $? -eq 1 ]] && grep -qE "no hello reply|closed stdin before taking the hello" "$TMP/false" \
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

# Paths that are not files: refused at once, never read or replaced.
mkfifo "$TMP/fifo"
timeout 20 $RUNNER --decode="$TMP/fifo" >"$TMP/fifo.txt" 2>&1
[[ $? -eq 2 ]] && grep -q "is a FIFO, not a regular file" "$TMP/fifo.txt" \
  || fail "--decode of a FIFO: $(cat "$TMP/fifo.txt")"
timeout 20 $RUNNER --decode=/dev/zero >"$TMP/zero.txt" 2>&1
[[ $? -eq 2 ]] && grep -q "is a character device" "$TMP/zero.txt" \
  || fail "--decode=/dev/zero: $(cat "$TMP/zero.txt")"
$RUNNER --vectors=vectors --port="$TESTEE" --case=window/basic/single-steps \
  --json="$TMP/fifo" >"$TMP/jfifo.txt" 2>&1
[[ $? -eq 2 ]] && grep -q -- "--json=$TMP/fifo exists and is a FIFO" "$TMP/jfifo.txt" \
  && [[ -p "$TMP/fifo" ]] || fail "--json into a FIFO: $(tail -2 "$TMP/jfifo.txt")"

# A report that cannot be written fails the run, naming it; the other
# reports are still written.
$RUNNER --vectors=vectors --port="$TESTEE" --case=window/basic/single-steps \
  --json="$TMP/no/such/dir/s.json" --junit="$TMP/j2.xml" >"$TMP/nodir.txt" 2>&1
[[ $? -eq 2 ]] && grep -q -- "--json=$TMP/no/such/dir/s.json: cannot create" "$TMP/nodir.txt" \
  && [[ -s "$TMP/j2.xml" ]] || fail "--json into a missing folder: $(tail -2 "$TMP/nodir.txt")"
if [[ -w /dev/full ]]; then
  $RUNNER --vectors=vectors --port="$TESTEE" --case=window/basic/single-steps \
    >/dev/full 2>"$TMP/full.txt"
  [[ $? -eq 2 ]] && grep -q "cannot write the report to stdout" "$TMP/full.txt" \
    || fail "stdout on a full disk: $(cat "$TMP/full.txt")"
fi

# Flags that cannot be right, and runs that would judge nothing.
for bad in nan inf -1 0; do
  $RUNNER --vectors=vectors --port="$TESTEE" --timeout_seconds=$bad >"$TMP/t.txt" 2>&1
  [[ $? -eq 2 ]] && grep -q -- "--timeout_seconds must be a number in (0, 86400]" "$TMP/t.txt" \
    || fail "--timeout_seconds=$bad: $(cat "$TMP/t.txt")"
done
$RUNNER --vectors=vectors --port="$TESTEE" --case='no/such/*' >"$TMP/none.txt" 2>&1
[[ $? -eq 1 ]] && grep -q "selects none of the" "$TMP/none.txt" \
  && tail -1 "$TMP/none.txt" | grep -q "^0 passed, 1 failed$" \
  || fail "--case matching nothing: $(cat "$TMP/none.txt")"
TEST_TOTAL_SHARDS=2 TEST_SHARD_INDEX=5 $RUNNER --vectors=vectors --port="$TESTEE" \
  >"$TMP/shard.txt" 2>&1
[[ $? -eq 1 ]] && grep -q "shard 5 of 2" "$TMP/shard.txt" || fail "a shard out of range"

if [[ $failures -ne 0 ]]; then echo "$failures check(s) failed"; exit 1; fi
echo "all runner CLI checks passed"
