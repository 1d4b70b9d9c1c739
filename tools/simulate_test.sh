#!/bin/bash
# End-to-end checks of tools/simulate, as a user runs it.
set -u
SIMULATE="$TEST_SRCDIR/kvspec/tools/simulate"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$SIMULATE" >"$TMP/default" || fail "default run exited $?"
out="$(cat "$TMP/default")"
# streamingllm budget 8, sinks 2 over 23 positions: sinks 0, 1 and the
# latest six, 17..22 (spec/policies/streamingllm.md).
grep -q "kept at the end: \[0 1 17 18 19 20 21 22\]" <<<"$out" \
  || fail "streamingllm's final kept set"
# window budget 8: the latest eight.
grep -q "kept at the end: \[15 16 17 18 19 20 21 22\]" <<<"$out" \
  || fail "window's final kept set"
# The chunk of 3 at step 7 pushes out three positions at once.
grep -q "step   7  admit 16..18 .*evict \[10 11 12\]" <<<"$out" \
  || fail "streamingllm's chunk step"

"$SIMULATE" --help >"$TMP/help" 2>&1
for flag in policy params seed scenario write_sample trace_steps write_trace list quiet; do
  grep -q -- "--$flag" "$TMP/help" || fail "--help does not explain --$flag"
done

"$SIMULATE" --list | grep -q "sinks: .*default 4" || fail "--list"

"$SIMULATE" --policy=window --params=budget=0 >"$TMP/refused" 2>&1
[[ $? -eq 1 ]] || fail "a refused configuration must exit 1"
grep -q "refused (INVALID_PARAMETER): window: budget must be in \[1, 4294967295\], got 0" \
  "$TMP/refused" || fail "refusal message: $(cat "$TMP/refused")"

"$SIMULATE" --policy=window --params=budget >"$TMP/bad" 2>&1
[[ $? -eq 2 ]] || fail "a malformed --params must exit 2"
grep -q "is not name=integer" "$TMP/bad" || fail "malformed --params message"

"$SIMULATE" --write_sample="$TMP/sample.pb" || fail "--write_sample"
"$SIMULATE" --scenario="$TMP/sample.pb" >"$TMP/from_file" \
  || fail "--scenario on the written sample"
cmp -s "$TMP/default" "$TMP/from_file" \
  || fail "the sample read back from a file gives different output"

printf 'not a protobuf \xff\xff\xff' >"$TMP/garbage.pb"
"$SIMULATE" --scenario="$TMP/garbage.pb" >"$TMP/garbage" 2>&1
[[ $? -eq 2 ]] || fail "a malformed scenario file must exit 2"
grep -q "is not a binary kvspec.v1.Scenario" "$TMP/garbage" \
  || fail "malformed scenario message"

"$SIMULATE" --scenario="$TMP/missing.pb" >"$TMP/missing" 2>&1
[[ $? -eq 2 ]] || fail "a missing scenario file must exit 2"

# The canonical trace, streamed, and the same trace expanded into a file.
"$SIMULATE" --trace_steps=60 --policy=h2o --params=budget=8,recent_window=2 \
  >"$TMP/streamed" || fail "--trace_steps"
grep -q "60 steps, 52 evicted, 8 kept" "$TMP/streamed" \
  || fail "streamed trace summary: $(cat "$TMP/streamed")"
"$SIMULATE" --trace_steps=60 --write_trace="$TMP/trace.pb" || fail "--write_trace"
"$SIMULATE" --scenario="$TMP/trace.pb" --policy=h2o \
  --params=budget=8,recent_window=2 --quiet >"$TMP/expanded" \
  || fail "--scenario on the expanded trace"
grep -q "60 steps, 60 positions admitted, 52 evicted" "$TMP/expanded" \
  || fail "expanded trace summary: $(cat "$TMP/expanded")"
"$SIMULATE" --write_trace="$TMP/none.pb" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "--write_trace without --trace_steps must exit 2"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all simulate checks passed"
