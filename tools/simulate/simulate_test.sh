#!/bin/bash
# End-to-end checks of tools/simulate, as a user runs it.
set -u
SIMULATE="$TEST_SRCDIR/kvspec/tools/simulate/simulate"
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
for flag in policy params seed scenario write_sample trace_steps write_trace list quiet json json_kept; do
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

# ---------------------------------------------------------------------------
# --json (tools/simulate/simulate-json.md). Checked with Debian's python3 (the json
# module only); a missing python3 fails the test, never skips it.
PY=/usr/bin/python3
[[ -x "$PY" ]] || PY="$(command -v python3 || true)"
if [[ -z "$PY" ]]; then
  fail "no python3 to check the JSON with"
  echo "$failures check(s) failed"
  exit 1
fi
# Runs a Python check; its first argument is the check's name.
check() {
  local name="$1"
  shift
  "$PY" - "$@" >"$TMP/check.out" 2>&1 || fail "$name: $(tail -5 "$TMP/check.out")"
}
# The Python every check starts with: a strict JSON load (NaN, Infinity and
# -Infinity are not JSON, so they are refused) and a scenario writer that
# encodes kvspec.v1.Scenario by hand (spec/kvspec.proto field numbers), so
# tests need neither protoc nor the protobuf module.
cat >"$TMP/common.py" <<'PY'
import json, struct, sys

def load(path):
    def refuse(name):
        raise ValueError(f"{path}: {name} is not JSON")
    with open(path) as f:
        return json.load(f, parse_constant=refuse)

def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def ld(field, payload):  # a length-delimited field
    return varint(field << 3 | 2) + varint(len(payload)) + payload

def row(weights):  # kvspec.v1.AttentionRow, packed float32
    return ld(1, struct.pack(f"<{len(weights)}f", *weights))

def step(admit, attention=None, heads=(), queries=()):
    out = varint(1 << 3) + varint(admit)
    if attention is not None:
        out += ld(2, row(attention))
    out += b"".join(ld(3, row(h)) for h in heads)
    out += b"".join(ld(4, row(q)) for q in queries)
    return out

def scenario(path, id, steps, query_heads=None, kv_heads=None):
    out = ld(1, id.encode()) + b"".join(ld(2, s) for s in steps)
    if query_heads is not None:
        out += varint(4 << 3) + varint(query_heads)
    if kv_heads is not None:
        out += varint(5 << 3) + varint(kv_heads)
    with open(path, "wb") as f:
        f.write(out)
PY
export PYTHONPATH="$TMP"

# streamingllm budget 8, sinks 2 on the sample, as derived above: the JSON
# holds the same final kept set and the chunk step's victims.
"$SIMULATE" --policy=streamingllm --params=budget=8,sinks=2 \
  --json="$TMP/streaming.json" >"$TMP/streaming.txt" || fail "--json exited $?"
check "streamingllm JSON" "$TMP/streaming.json" "$TMP/streaming.txt" <<'PY'
import re, sys
from common import load
d = load(sys.argv[1])
assert d["format"] == "kvspec-simulate" and d["format_version"] == 1, d["format"]
version = re.match(r"kvspec reference, spec (\S+);", open(sys.argv[2]).readline())
assert d["spec_version"] == version.group(1), d["spec_version"]
assert d["policy"] == "streamingllm" and d["preset"] is None
assert d["parameters"] == [{"name": "budget", "value": 8},
                           {"name": "sinks", "value": 2}], d["parameters"]
assert d["effective_parameters"]["budget"] == 8
assert d["effective_parameters"]["prefill_only"] == 0
assert d["parameter_names"] == {}, d["parameter_names"]  # streamingllm has no head parameter
assert d["seed"] == 0 and d["score_based"] is False
assert d["scenario"] == {"source": "sample", "path": None, "id": "sample"}
assert (d["query_heads"], d["kv_heads"], d["step_count"]) == (1, 1, 12)
assert d["prefill_steps"] == 0 and d["warnings"] == []
assert d["kept_sets"] == [{"set": 0, "query_heads": [0], "kv_heads": [0]}]
assert d["json_kept"] == "final" and d["refusal"] is None
steps = d["steps"]
assert [s["index"] for s in steps] == list(range(12))
# Step 0 admits the chunk 0..9; step 7 the chunk 16..18.
assert steps[0]["admitted"] == {"first": 0, "count": 10}
assert steps[7]["admitted"] == {"first": 16, "count": 3}
assert steps[8]["attention"] == "null" and steps[7]["attention"] == "rows"
assert all(s["prefill"] is False for s in steps)
assert steps[7]["sets"][0]["victims"] == [10, 11, 12], steps[7]
assert "cut" not in steps[7]["sets"][0]  # positional: no cut
# The default json_kept=final: no kept set per step, one at the end.
assert all("kept" not in s["sets"][0] for s in steps)
assert d["kept_at_end"] == [{"set": 0, "kept": [0, 1, 17, 18, 19, 20, 21, 22]}]
PY
grep -q "^step   7 " "$TMP/streaming.txt" || fail "--json=PATH still prints the text log"

# --json_kept=every: after step 7 (kept 0, 1, 10..15 before it; admits
# 16..18; evicts 10..12) streamingllm keeps 0, 1, 13..18; each step's kept
# set has its kept_count positions; the last one is kept_at_end.
"$SIMULATE" --policy=streamingllm --params=budget=8,sinks=2 --json_kept=every \
  --json="$TMP/every.json" >/dev/null || fail "--json_kept=every exited $?"
check "--json_kept=every" "$TMP/every.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
steps = d["steps"]
assert steps[6]["sets"][0]["kept"] == [0, 1, 10, 11, 12, 13, 14, 15]
assert steps[7]["sets"][0]["kept"] == [0, 1, 13, 14, 15, 16, 17, 18]
for s in steps:
    assert len(s["sets"][0]["kept"]) == s["sets"][0]["kept_count"], s
assert steps[-1]["sets"][0]["kept"] == d["kept_at_end"][0]["kept"]
PY
"$SIMULATE" --policy=streamingllm --params=budget=8,sinks=2 \
  --json_kept=evicting --json="$TMP/evicting.json" >/dev/null \
  || fail "--json_kept=evicting exited $?"
"$SIMULATE" --policy=full --json_kept=evicting --json="$TMP/full.json" \
  >/dev/null || fail "--json_kept=evicting (full) exited $?"
check "--json_kept=evicting" "$TMP/evicting.json" "$TMP/full.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
assert all("kept" in s["sets"][0] for s in d["steps"])  # every step evicts
full = load(sys.argv[2])
assert all("kept" not in s["sets"][0] for s in full["steps"])  # none does
assert full["kept_at_end"] == [{"set": 0, "kept": list(range(23))}]
PY
"$SIMULATE" --policy=window --params=budget=8 --json_kept=none \
  --json="$TMP/none.json" >/dev/null || fail "--json_kept=none exited $?"
check "--json_kept=none" "$TMP/none.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
assert "kept_at_end" not in d and all("kept" not in s["sets"][0] for s in d["steps"])
PY

# --json=-: stdout is the JSON alone.
"$SIMULATE" --policy=window --params=budget=8 --json=- >"$TMP/stdout.json" \
  2>"$TMP/stdout.err" || fail "--json=- exited $?"
check "--json=- is JSON alone" "$TMP/stdout.json" <<'PY'
import sys
from common import load
assert load(sys.argv[1])["kept_at_end"][0]["kept"] == list(range(15, 23))
PY
[[ ! -s "$TMP/stdout.err" ]] || fail "--json=- wrote to stderr: $(cat "$TMP/stdout.err")"

# A score-based policy: the cut, by the spec and against the text log. At
# step 0 the sample's chunk of 10 overflows budget 8 before any attention is
# recorded: every candidate (0..7; 8 and 9 are the recent window) scores
# +0.0, so the two lowest positions go and the cut is 0, 1 | 2, 3, 4, 5, all
# 0.0 (spec/harness.md#unobserved-positions). Every step's cut in the JSON
# is the text log's, position for position and score for score.
"$SIMULATE" --policy=snapkv --params=budget=8,recent_window=2,obs_window=4,pool_kernel=3 \
  --json="$TMP/snapkv.json" >"$TMP/snapkv.txt" || fail "snapkv --json exited $?"
check "snapkv cut" "$TMP/snapkv.json" "$TMP/snapkv.txt" <<'PY'
import re, sys
from common import load
d = load(sys.argv[1])
assert d["score_based"] is True
steps = d["steps"]
cut0 = steps[0]["sets"][0]["cut"]
assert [c["position"] for c in cut0] == [0, 1, 2, 3, 4, 5], cut0
assert all(c["score"] == 0.0 and isinstance(c["score"], float) for c in cut0)
assert [c["evicted"] for c in cut0] == [True, True, False, False, False, False]
assert steps[0]["sets"][0]["victims"] == [0, 1]
# The text log: "          cut 16=0.0333 15=0.069 6=0.149 | 7=0.149 ..."
text_cuts = {}
current = None
for line in open(sys.argv[2]):
    m = re.match(r"step +(\d+) ", line)
    if m:
        current = int(m.group(1))
    m = re.match(r" +cut (.*)", line)
    if m:
        victims, _, rest = m.group(1).partition(" | ")
        entries = [e.split("=") for e in (victims + " " + rest).split()]
        text_cuts[current] = ([int(p) for p, _ in entries],
                              [float(s) for _, s in entries],
                              len(victims.split()))
json_cuts = {s["index"]: s["sets"][0]["cut"] for s in steps
             if "cut" in s["sets"][0]}
assert sorted(text_cuts) == sorted(json_cuts) and len(json_cuts) == 12, \
    (sorted(text_cuts), sorted(json_cuts))
for index, cut in json_cuts.items():
    positions, scores, victims = text_cuts[index]
    assert positions == [c["position"] for c in cut], index
    assert scores == [c["score"] for c in cut], index  # exact: round trip
    assert victims == sum(c["evicted"] for c in cut), index
    victims_json = steps[index]["sets"][0]["victims"]
    assert sorted(positions[:victims]) == victims_json, index
    # Rank order: score ascending, then position ascending.
    assert cut == sorted(cut, key=lambda c: (c["score"], c["position"])), index
PY

# A scenario with several kept sets (4 query heads, 2 KV heads, h2o at
# kv_head granularity: sets {0,1} and {2,3}): per-set victims, cuts and kept
# sets; the text log's per-set cut lines match the JSON's.
check "write gqa.pb" "$TMP/gqa.pb" <<'PY'
import sys
from common import scenario, step
steps = [step(1, heads=[[(1 + (i * 7 + h * 3 + t) % 5) / 10 for i in range(t)]
                        for h in range(4)]) for t in range(8)]
scenario(sys.argv[1], "gqa", steps, query_heads=4, kv_heads=2)
PY
"$SIMULATE" --scenario="$TMP/gqa.pb" --policy=h2o --params=budget=3,recent_window=1 \
  --json="$TMP/gqa.json" --json_kept=every >"$TMP/gqa.txt" || fail "gqa --json exited $?"
check "several kept sets" "$TMP/gqa.json" "$TMP/gqa.txt" <<'PY'
import re, sys
from common import load
d = load(sys.argv[1])
assert (d["query_heads"], d["kv_heads"]) == (4, 2)
assert d["kept_sets"] == [{"set": 0, "query_heads": [0, 1], "kv_heads": [0]},
                          {"set": 1, "query_heads": [2, 3], "kv_heads": [1]}]
assert d["shared_budget"] is None
for s in d["steps"]:
    assert [x["set"] for x in s["sets"]] == [0, 1]
    for x in s["sets"]:
        assert len(x["kept"]) == x["kept_count"] <= 3
        assert x["victims"] == sorted(x["victims"])
# 8 steps of one position each, budget 3: each set evicts one a step from
# step 3 on, and keeps its recent window (the newest position, 7).
for x in d["kept_at_end"]:
    assert len(x["kept"]) == 3 and 7 in x["kept"], x
text = {}
step = None
for line in open(sys.argv[2]):
    m = re.match(r"step +(\d+) ", line)
    if m:
        step = int(m.group(1))
    m = re.match(r" +cut set (\d+): (.*)", line)
    if m:
        text[(step, int(m.group(1)))] = [
            (int(p), float(v)) for p, v in
            (e.split("=") for e in m.group(2).replace("|", " ").split())]
got = {(s["index"], x["set"]): [(c["position"], c["score"]) for c in x["cut"]]
       for s in d["steps"] for x in s["sets"] if "cut" in x}
assert got == text and len(got) == 10, (sorted(got), sorted(text))
PY
# The summary gives each set's kept count and victims in all, --quiet too:
# 8 positions, budget 3, so each set keeps 3 and evicted 5 (derived above).
"$SIMULATE" --scenario="$TMP/gqa.pb" --policy=h2o --params=budget=3,recent_window=1 \
  --quiet >"$TMP/gqa-quiet.txt" || fail "gqa --quiet exited $?"
grep -q "^  set 0: kept 3, evicted 5$" "$TMP/gqa-quiet.txt" \
  && grep -q "^  set 1: kept 3, evicted 5$" "$TMP/gqa-quiet.txt" \
  && ! grep -q "^step" "$TMP/gqa-quiet.txt" \
  || fail "the per-set summary under --quiet: $(cat "$TMP/gqa-quiet.txt")"
# A budget that holds every admitted position evicts nothing, and says why;
# one that does not says nothing of the kind. Head parameters by name.
"$SIMULATE" --scenario="$TMP/gqa.pb" --policy=h2o --params=budget=8,recent_window=1 \
  --quiet >"$TMP/gqa-8.txt" || fail "gqa budget=8 exited $?"
grep -q "^note: budget 8 holds all 8 positions admitted, so nothing was evicted$" "$TMP/gqa-8.txt" \
  && ! grep -q "^note:" "$TMP/gqa-quiet.txt" \
  && grep -q "granularity=kv_head" <("$SIMULATE" --scenario="$TMP/gqa.pb" --policy=h2o \
       --params=budget=3,recent_window=1,granularity=1 --quiet) \
  || fail "the budget note or the head parameter's name: $(cat "$TMP/gqa-8.txt")"
# An unknown policy is said before an unknown preset of it.
"$SIMULATE" --policy=foo --params=preset=bar >"$TMP/foo.out" 2>&1
grep -q "unknown policy 'foo'; the registry has" "$TMP/foo.out" \
  && ! grep -q "unknown preset" "$TMP/foo.out" \
  || fail "unknown policy with a preset: $(cat "$TMP/foo.out")"

# The warning (spec/prefill.md#when-a-policy-evicts): the sample has no
# prefill step, so the kvpress preset's prefill_only=1 and a ratio never
# evict. Exit 0, the warning on stderr and in the JSON.
"$SIMULATE" --policy=snapkv --params=preset=kvpress-0.5.5,ratio_ppm=500000 \
  --json="$TMP/warn.json" >"$TMP/warn.out" 2>"$TMP/warn.err"
[[ $? -eq 0 ]] || fail "a run with the warning must exit 0"
grep -q "warning: prefill_only=1 and ratio_ppm=500000: .*only at prefill steps.*spec/prefill.md#when-a-policy-evicts.*scenario 'sample' has no prefill step, so this run never evicts.*import_attention --input=<window capture>" \
  "$TMP/warn.err" || fail "the prefill warning: $(cat "$TMP/warn.err")"
! grep -q warning "$TMP/warn.out" || fail "the warning belongs on stderr"
check "warning in the JSON" "$TMP/warn.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
assert d["preset"] == "kvpress-0.5.5"
assert d["effective_parameters"]["prefill_only"] == 1
assert d["effective_parameters"]["ratio_ppm"] == 500000
# kvpress's SnapKV: one set per KV head, heads averaged (spec/heads.md#parameters).
assert d["parameter_names"] == {"granularity": "kv_head", "aggregation": "mean"}, d["parameter_names"]
[w] = d["warnings"]
assert w["code"] == "no_prefill_step" and w["parameters"] == ["prefill_only", "ratio_ppm"]
assert "never evicts" in w["message"]
assert all(x["victims"] == [] for s in d["steps"] for x in s["sets"])
PY
# A ratio alone: decode steps still evict by budget.
"$SIMULATE" --policy=snapkv --params=budget=8,recent_window=0,ratio_ppm=500000 \
  --quiet >/dev/null 2>"$TMP/ratio.err" || fail "ratio run exited $?"
grep -q "warning: ratio_ppm=500000: a ratio acts only at prefill steps.*evicts nothing by the ratio: every step evicts by budget=8" \
  "$TMP/ratio.err" || fail "the ratio warning: $(cat "$TMP/ratio.err")"
"$SIMULATE" --trace_steps=20 --policy=h2o --params=preset=kvpress-0.5.5,budget=8 \
  >/dev/null 2>"$TMP/trace.err" || fail "trace run with the warning exited $?"
grep -q "warning: prefill_only=1: .*the canonical trace has no prefill step" \
  "$TMP/trace.err" || fail "the warning with --trace_steps: $(cat "$TMP/trace.err")"
"$SIMULATE" --policy=snapkv --params=budget=8,recent_window=2 --quiet \
  >/dev/null 2>"$TMP/nowarn.err" || fail "plain snapkv exited $?"
[[ ! -s "$TMP/nowarn.err" ]] || fail "a warning without ratio or prefill_only: $(cat "$TMP/nowarn.err")"

# No warning with a prefill step. A prompt of 4 positions whose step carries
# the query rows of positions 2 and 3, then one decode step. kvpress's
# SnapKV at ratio 0.5 keeps max(1, floor(4 x 0.5)) = 2; its window (the 2
# query rows) scores +infinity (window_budget 0), so 0 and 1 go. Their score
# is the window's mean, 0.45 and 0.275, average-pooled with kernel 5 and
# zero padding over the two of them: (0.45 + 0.275) / 5 = 0.145 for both,
# so the tie evicts 0 first. The decode step evicts nothing (prefill_only).
check "write prefill.pb" "$TMP/prefill.pb" <<'PY'
import sys
from common import scenario, step
scenario(sys.argv[1], "prefill-tiny",
         [step(4, queries=[[0.5, 0.25, 0.25], [0.4, 0.3, 0.2, 0.1]]),
          step(1, attention=[0.4, 0.3, 0.2, 0.1])])
PY
"$SIMULATE" --scenario="$TMP/prefill.pb" --policy=snapkv \
  --params=preset=kvpress-0.5.5,ratio_ppm=500000 --json_kept=every \
  --json="$TMP/prefill.json" >"$TMP/prefill.txt" 2>"$TMP/prefill.err" \
  || fail "the prefill scenario exited $?"
! grep -q warning "$TMP/prefill.err" || fail "a warning with a prefill step: $(cat "$TMP/prefill.err")"
grep -q "step   0  admit 0..3 .*query_rows .*evict \[0 1\]" "$TMP/prefill.txt" \
  || fail "prefill text log: $(cat "$TMP/prefill.txt")"
grep -q "^budget at step 0 (prefill, from ratio_ppm=500000: max(1, floor(n x (1 - ratio)))): 2 of 4 positions$" \
  "$TMP/prefill.txt" || fail "the ratio's budget in the text log: $(cat "$TMP/prefill.txt")"
[[ $(grep -c "^budget at step" "$TMP/prefill.txt") -eq 1 ]] \
  || fail "a ratio budget line for a decode step: $(cat "$TMP/prefill.txt")"
check "prefill JSON" "$TMP/prefill.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
assert d["warnings"] == [] and d["prefill_steps"] == 1, d["warnings"]
s0, s1 = d["steps"]
assert s0["prefill"] is True and s0["attention"] == "query_rows"
assert s1["prefill"] is False and s1["attention"] == "rows"
x = s0["sets"][0]
assert x["victims"] == [0, 1] and x["kept"] == [2, 3]
# The budget the ratio gave, max(1, floor(4 x 0.5)) = 2, at the prefill
# step only; the decode step's budget is not a ratio's.
assert x["ratio_budget"] == 2, x
assert "ratio_budget" not in s1["sets"][0], s1
cut = x["cut"]
assert [c["position"] for c in cut] == [0, 1, 2, 3]
assert cut[0]["score"] == cut[1]["score"] and abs(cut[0]["score"] - 0.145) < 1e-7
assert cut[2]["score"] == "inf" and cut[3]["score"] == "inf", cut  # +infinity
assert s1["sets"][0]["victims"] == [] and s1["sets"][0]["kept"] == [2, 3, 4]
assert d["kept_at_end"] == [{"set": 0, "kept": [2, 3, 4]}]
PY

# Refusals in the JSON, with the exit status of the text run: a refused
# configuration (step -1), and a step with a NaN weight (ATTENTION_VALUE at
# step 1: the log holds step 0 only).
"$SIMULATE" --policy=window --params=budget=0 --json="$TMP/refused.json" >/dev/null 2>&1
[[ $? -eq 1 ]] || fail "a refused configuration with --json must exit 1"
check "write nan.pb" "$TMP/nan.pb" <<'PY'
import sys
from common import scenario, step
scenario(sys.argv[1], "nan", [step(2), step(1, attention=[0.5, float("nan")])])
PY
"$SIMULATE" --scenario="$TMP/nan.pb" --policy=h2o --params=budget=1,recent_window=0 \
  --json="$TMP/nan.json" >"$TMP/nan.txt" 2>&1
[[ $? -eq 1 ]] || fail "a refused step with --json must exit 1"
grep -q "refused at step 1 (ATTENTION_VALUE, value attention)" "$TMP/nan.txt" || fail "NaN text: $(cat "$TMP/nan.txt")"
check "refusals in the JSON" "$TMP/refused.json" "$TMP/nan.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
r = d["refusal"]
assert (r["step"], r["category"], r["subject"]) == (-1, "INVALID_PARAMETER", "range budget"), r
assert "budget must be in [1, 4294967295], got 0" in r["message"]
assert d["steps"] == [] and d["kept_sets"] == [] and d["effective_parameters"] is None
d = load(sys.argv[2])
r = d["refusal"]
assert (r["step"], r["category"], r["subject"]) == (1, "ATTENTION_VALUE", "value attention"), r
assert [s["index"] for s in d["steps"]] == [0]
assert d["kept_at_end"] == [{"set": 0, "kept": [1]}]  # budget 1, chunk 0..1
PY

# The streamed trace's JSON is the JSON of the same trace expanded into a
# file (the steps, and the kept sets).
"$SIMULATE" --trace_steps=60 --policy=h2o --params=budget=8,recent_window=2 \
  --json_kept=evicting --json="$TMP/streamed.json" >/dev/null \
  || fail "--trace_steps --json exited $?"
"$SIMULATE" --scenario="$TMP/trace.pb" --policy=h2o \
  --params=budget=8,recent_window=2 --json_kept=evicting --quiet \
  --json="$TMP/expanded.json" >/dev/null || fail "expanded --json exited $?"
check "streamed and expanded trace JSON" "$TMP/streamed.json" "$TMP/expanded.json" <<'PY'
import sys
from common import load
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a["scenario"]["source"] == "canonical_trace" and a["step_count"] == 60
assert a["steps"] == b["steps"] and a["kept_at_end"] == b["kept_at_end"]
assert sum(len(s["sets"][0]["victims"]) for s in a["steps"]) == 52
PY

# --json needs one run.
"$SIMULATE" --json="$TMP/all.json" >/dev/null 2>"$TMP/all.err"
[[ $? -eq 2 ]] && grep -q "needs --policy" "$TMP/all.err" \
  || fail "--json without --policy: $(cat "$TMP/all.err")"
"$SIMULATE" --policy=window --json_kept=sometimes >/dev/null 2>"$TMP/kept.err"
[[ $? -eq 2 ]] || fail "a bad --json_kept must exit 2"

# ---------------------------------------------------------------------------
# Scenario files that are not scenarios: a clear message naming the file,
# exit 2, never a crash. 7 bytes that open a length-delimited field of 127
# bytes (a truncated message); the written sample without its last 5 bytes
# (cut inside the last row); a directory; a file past protobuf's 2^31 - 1
# bytes (sparse: no disk used).
printf '\x12\x7f\x08\x01\x12\x00\x1a' >"$TMP/seven.pb"
head -c -5 "$TMP/sample.pb" >"$TMP/truncated.pb"
mkdir -p "$TMP/dir.pb"
"$PY" -c 'import sys; f = open(sys.argv[1], "wb"); f.truncate(2**31); f.close()' \
  "$TMP/huge.pb"
for bad in seven truncated dir huge; do
  "$SIMULATE" --scenario="$TMP/$bad.pb" --policy=window >"$TMP/$bad.out" 2>&1
  status=$?
  [[ $status -eq 2 ]] || fail "--scenario=$bad.pb exited $status: $(cat "$TMP/$bad.out")"
  grep -q -- "--scenario: '$TMP/$bad.pb'" "$TMP/$bad.out" \
    || fail "--scenario=$bad.pb message: $(cat "$TMP/$bad.out")"
done
grep -q "malformed or truncated" "$TMP/truncated.out" || fail "truncated message"
grep -q "is a directory" "$TMP/dir.out" || fail "directory message"
grep -q "is 2147483648 bytes; protobuf parses at most 2147483647" "$TMP/huge.out" \
  || fail "too-large message: $(cat "$TMP/huge.out")"
rm -f "$TMP/huge.pb"

# A scenario file holding a trace (spec/harness.md#scenarios), not steps:
# steps admit one position each (spec/trace.md). Scenario{id "t", trace
# {steps 5}}, window budget 2 keeps 3 and 4.
printf '\x0a\x01t\x1a\x02\x10\x05' >"$TMP/trace-file.pb"
"$SIMULATE" --scenario="$TMP/trace-file.pb" --policy=window --params=budget=2 \
  --json="$TMP/trace-file.json" >"$TMP/trace-file.out" 2>&1 \
  || fail "a scenario file with a trace exited $?: $(tail -3 "$TMP/trace-file.out")"
grep -q "kept at the end: \[3 4\]" "$TMP/trace-file.out" \
  || fail "trace file: $(cat "$TMP/trace-file.out")"
check "trace file JSON" "$TMP/trace-file.json" <<'PY'
import sys
from common import load
d = load(sys.argv[1])
assert d["step_count"] == 5
assert [s["admitted"] for s in d["steps"]] == [{"first": t, "count": 1} for t in range(5)]
assert d["kept_at_end"][0]["kept"] == [3, 4]
PY

# A scenario file's trace streams (spec/harness.md#resources): a million
# steps at budget 4 run in 128 MiB of address space (kept whole, the run's
# records took 164 MB of resident memory, 2026-12-04).
printf '\x0a\x01t\x1a\x04\x10\xc0\x84\x3d' >"$TMP/trace-1m.pb"
(ulimit -v 131072; "$SIMULATE" --scenario="$TMP/trace-1m.pb" --policy=window \
  --params=budget=4 --quiet >"$TMP/trace-1m.out" 2>&1)
status=$?
[[ $status -eq 0 ]] && grep -q "^1000000 steps, 1000000 positions admitted, 999996 evicted" "$TMP/trace-1m.out" \
  || fail "a trace of 1,000,000 steps in 128 MiB: exit $status: $(tail -3 "$TMP/trace-1m.out")"

# ---------------------------------------------------------------------------
# Files that are not what the flag needs (issue 33). A 0-byte scenario file
# is refused (it parsed as a scenario with nothing in it); a FIFO as
# --scenario is refused at once (it used to block simulate forever), as is
# any file that is not a regular one.
: >"$TMP/empty.pb"
"$SIMULATE" --scenario="$TMP/empty.pb" --policy=window >"$TMP/empty.out" 2>&1
status=$?
[[ $status -eq 2 ]] && grep -qF -- "--scenario: '$TMP/empty.pb' is empty (0 bytes)" "$TMP/empty.out" \
  || fail "a 0-byte --scenario: exit $status: $(cat "$TMP/empty.out")"
# A step admitting 2^32 - 1 positions (steps { admit: 4294967295 }, bytes
# written by hand: field 2, length 6, field 1 varint) is refused before
# anything is allocated, naming the step and its admit
# (spec/harness.md#resources), under a 2 GiB address-space limit so that
# an allocation would fail rather than take the machine's memory.
printf '\x12\x06\x08\xff\xff\xff\xff\x0f' >"$TMP/huge.pb"
(ulimit -v 2097152; "$SIMULATE" --scenario="$TMP/huge.pb" --policy=window >"$TMP/huge.out" 2>&1)
status=$?
[[ $status -eq 2 ]] && grep -qF -- "--scenario: step 0 admits 4294967295 positions: holding them needs about" "$TMP/huge.out" \
  || fail "admit 4294967295: exit $status: $(cat "$TMP/huge.out")"
mkfifo "$TMP/fifo.pb"
timeout 10 "$SIMULATE" --scenario="$TMP/fifo.pb" --policy=window >"$TMP/fifo.out" 2>&1
status=$?
[[ $status -eq 2 ]] && grep -qF -- "--scenario: '$TMP/fifo.pb' is a FIFO, not a regular file" "$TMP/fifo.out" \
  || fail "a FIFO as --scenario: exit $status (124: it hung): $(cat "$TMP/fifo.out")"
timeout 10 "$SIMULATE" --scenario=/dev/zero --policy=window >"$TMP/zero.out" 2>&1
status=$?
[[ $status -eq 2 ]] && grep -qF -- "--scenario: '/dev/zero' is a character device, not a regular file" "$TMP/zero.out" \
  || fail "/dev/zero as --scenario: exit $status: $(cat "$TMP/zero.out")"

# Outputs are written whole or not at all, only over regular files, never
# over an input, and a failed write exits non-zero naming the path. A write
# that fails is made with a file size limit of 0 (SIGXFSZ ignored, so the
# write returns EFBIG): it used to exit 0 for --write_sample and
# --write_trace (the stream was flushed after the check) and to leave a
# 0-byte --json file. Its messages come through a pipe (not limited).
limited() {  # command...: runs it under `ulimit -f 0`; prints its stderr
  ( trap '' XFSZ; ulimit -f 0; exec "$@" ) 2>&1 >/dev/null
}
for flag in write_sample write_trace; do
  rm -f "$TMP/limited.pb"
  message="$(limited "$SIMULATE" --trace_steps=20 --$flag="$TMP/limited.pb")"
  status=$?
  [[ $status -eq 1 ]] && grep -qF -- "--$flag=$TMP/limited.pb: cannot write: File too large" <<<"$message" \
    || fail "--$flag that cannot write: exit $status: $message"
  [[ ! -e "$TMP/limited.pb" ]] || fail "--$flag that cannot write left a file"
  "$SIMULATE" --trace_steps=20 --$flag=/dev/full >"$TMP/full.out" 2>&1
  status=$?
  [[ $status -eq 1 ]] && grep -qF -- "--$flag=/dev/full exists and is a character device" "$TMP/full.out" \
    || fail "--$flag=/dev/full: exit $status: $(cat "$TMP/full.out")"
done
[[ -c /dev/full ]] || fail "/dev/full is no longer a character device"
echo "an earlier run" >"$TMP/kept.json"
message="$(limited "$SIMULATE" --policy=window --params=budget=8 --json="$TMP/kept.json")"
status=$?
[[ $status -eq 1 ]] && grep -qF -- "--json=$TMP/kept.json: cannot write: File too large" <<<"$message" \
  || fail "--json that cannot write: exit $status: $message"
[[ "$(cat "$TMP/kept.json")" == "an earlier run" ]] \
  || fail "--json that cannot write lost the file it was to replace: $(head -c 100 "$TMP/kept.json")"
rm -f "$TMP/new.json"
message="$(limited "$SIMULATE" --policy=window --params=budget=8 --json="$TMP/new.json")"
[[ ! -e "$TMP/new.json" ]] || fail "--json that cannot write left a $(stat -c %s "$TMP/new.json")-byte file"
[[ -z "$(ls "$TMP" | grep '\.tmp-')" ]] || fail "a temporary file was left: $(ls "$TMP" | grep '\.tmp-')"
# --json over a FIFO, a symlink or the scenario it reads: refused before the
# run, and left as it was.
timeout 10 "$SIMULATE" --policy=window --json="$TMP/fifo.pb" >"$TMP/jfifo.out" 2>&1
status=$?
[[ $status -eq 2 && -p "$TMP/fifo.pb" ]] \
  && grep -qF -- "--json=$TMP/fifo.pb exists and is a FIFO: refusing to replace it" "$TMP/jfifo.out" \
  || fail "--json over a FIFO: exit $status: $(cat "$TMP/jfifo.out")"
ln -sf "$TMP/kept.json" "$TMP/link.json"
"$SIMULATE" --policy=window --json="$TMP/link.json" >"$TMP/jlink.out" 2>&1
status=$?
[[ $status -eq 2 && -L "$TMP/link.json" && "$(cat "$TMP/kept.json")" == "an earlier run" ]] \
  && grep -qF -- "--json=$TMP/link.json exists and is a symbolic link" "$TMP/jlink.out" \
  || fail "--json over a symlink: exit $status: $(cat "$TMP/jlink.out")"
cp "$TMP/sample.pb" "$TMP/input.pb"
"$SIMULATE" --scenario="$TMP/input.pb" --policy=window --json="$TMP/./input.pb" \
  >"$TMP/jinput.out" 2>&1
status=$?
[[ $status -eq 2 ]] && cmp -s "$TMP/sample.pb" "$TMP/input.pb" \
  && grep -qF -- "--json=$TMP/./input.pb is the input $TMP/input.pb: writing it would destroy the input" "$TMP/jinput.out" \
  || fail "--json over the --scenario file: exit $status: $(cat "$TMP/jinput.out")"

if [[ $failures -ne 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all simulate checks passed"
