"""Column totals (spec/prefill.md#column-totals, the feature `totals` of spec
0.10.0) and h2o's rule with them (spec/policies/h2o.md#at-prefill, "With
column totals"), worked by hand from the spec.

Steps are (admit, attention-or-None, heads, queries, totals, total_rows):
`totals` holds one list of a + c binary64 values per query head (positions
0 .. a+c-1), head 0 first; `total_rows` is R.
"""

import math

import numpy as np
import pytest

from kvspec_port import FEATURES, SPEC_VERSION
from kvspec_port.errors import Refusal
from kvspec_port.harness import run_scenario
from kvspec_port.heads import LAYER, QUERY_HEAD
from kvspec_port.policies.h2o import H2oPolicy
from kvspec_port.policies.tova import TovaPolicy
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request, hello_reply


def run(name, params, steps, query_heads=None, kv_heads=None):
    return run_scenario(name, list(params), 0, list(steps), None, query_heads, kv_heads)


def prefill(admit, queries, totals=(), total_rows=0):
    """A prefill step: admits `admit`, carries `queries` and column totals."""
    return (admit, None, [], queries, [list(t) for t in totals], total_rows)


def category(log):
    return log.rejection[:2] if log.rejection else None


def victims(log):
    return [s.victims for s in log.steps]


def totals_of(rows, a, c, r):
    """spec/prefill.md#column-totals, the pseudocode: one head's totals over
    the last `r` queries of a step admitting a .. a+c-1, from their rows
    (rows[q] is query q's row, q + 1 weights), binary64 from +0.0 in
    ascending query order."""
    out = []
    for p in range(a + c):
        t = 0.0
        for q in range(a + c - r, a + c):
            if p <= q:
                t += float(rows[q][p])
        out.append(t)
    return out


H2O = [("budget", 2), ("recent_window", 0)]
# The card's example rows (spec/policies/h2o.md#at-prefill): raw sums 1.25,
# 1.0, 0.25; with the other last row (0.125, 0.25, 0.625): 0.875, 1.0, 0.625.
CHUNK3 = [[0.5], [0.25, 0.75], [0.5, 0.25, 0.25]]
CHUNK3B = CHUNK3[:2] + [[0.125, 0.25, 0.625]]
# One query row that h2o must ignore beside totals: read alone it would make
# position 0 go (0 and 1 tie at 0.0, raw or normalized).
DECOY = [[0.0, 0.0, 1.0]]


# -- The version and the hello (spec/features.md#the-list) --------------------

def test_version_and_feature():
    assert SPEC_VERSION == "0.20.0"
    # triggers: spec 0.12.0; blocks: spec 0.13.0; tensors: spec 0.16.0;
    # values: spec 0.18.0; pyramid: spec 0.19.0; 0.20.0 (simlayerkv) adds
    # none.
    assert FEATURES[-6:] == ("totals", "triggers", "blocks", "tensors", "values", "pyramid")
    assert list(hello_reply().hello.features)[-7:] == ["contextshift", "totals", "triggers", "blocks", "tensors",
                                                       "values", "pyramid"]


# -- h2o reads the totals instead of the rows (h2o.md#at-prefill) -------------

def test_decoy_row_alone_evicts_position_0():
    # What the rows would give: sums 0.0, 0.0, 1.0, the lower of 0 and 1 goes.
    assert victims(run("h2o", H2O, [prefill(3, DECOY)])) == [[0]]


def test_totals_replace_the_rows_raw():
    log = run("h2o", H2O, [prefill(3, DECOY, [[1.25, 1.0, 0.25]], 3)])
    assert victims(log) == [[2]]
    assert log.steps[0].cut == [(2, 0.25), (1, 1.0), (0, 1.25)]


def test_totals_replace_the_rows_normalized():
    # Divisors min(R, a + c - p) = min(3, 3 - p): 3, 2, 1.
    log = run("h2o", H2O + [("normalize", 1)], [prefill(3, DECOY, [[1.25, 1.0, 0.25]], 3)])
    assert victims(log) == [[2]]
    assert log.steps[0].cut == [(2, 0.25), (0, 1.25 / 3), (1, 0.5)]


def test_totals_raw_and_normalized_differ():
    raw = run("h2o", H2O, [prefill(3, DECOY, [[0.875, 1.0, 0.625]], 3)])
    assert victims(raw) == [[2]]
    assert raw.steps[0].cut == [(2, 0.625), (0, 0.875), (1, 1.0)]
    # 0.2916..., 0.5, 0.625: 0 goes.
    norm = run("h2o", H2O + [("normalize", 1)], [prefill(3, DECOY, [[0.875, 1.0, 0.625]], 3)])
    assert victims(norm) == [[0]]
    assert norm.steps[0].cut == [(0, 0.875 / 3), (1, 0.5), (2, 0.625)]


def test_totals_from_the_rows_give_the_rows_log():
    # prefill.md#column-totals: totals computed as it says from rows give,
    # bit for bit, the log those rows give (the card's two examples).
    for rows in (CHUNK3, CHUNK3B):
        totals = totals_of(rows, 0, 3, 3)
        for normalize in (0, 1):
            params = H2O + [("normalize", normalize)]
            a = run("h2o", params, [prefill(3, rows)])
            b = run("h2o", params, [prefill(3, DECOY, [totals], 3)])
            assert a.steps == b.steps


def test_totals_normalize_by_their_own_rows():
    # A prefill of 4 with R = 2: totals 0.5, 0.4, 0.75, 0.3; divisors
    # min(2, 4 - p) = 2, 2, 2, 1 give 0.25, 0.2, 0.375, 0.3 and 1 goes
    # (divisors from c, 4, 3, 2, 1, would give 0.125, 0.1333..., 0.375, 0.3
    # and 0 would go).
    log = run("h2o", [("budget", 3), ("recent_window", 0), ("normalize", 1)],
              [prefill(4, [[0.25] * 4], [[0.5, 0.4, 0.75, 0.3]], 2)])
    assert victims(log) == [[1]]
    assert log.steps[0].cut == [(1, 0.2), (0, 0.25), (3, 0.3), (2, 0.375)]


@pytest.mark.parametrize("normalize, expected, cut", [
    # Kept 1..4 after admission: raw sums 0.3, 0.25, 0.75, 0.2: 4 and 2 go.
    (0, [[0], [2, 4]], [(4, 0.2), (2, 0.25), (1, 0.3), (3, 0.75)]),
    # Divisors min(2, 5 - p) = 2, 2, 2, 1: 0.15, 0.125, 0.375, 0.2: 2 and 1 go.
    (1, [[0], [1, 2]], [(2, 0.125), (1, 0.15), (4, 0.2), (3, 0.375)]),
])
def test_totals_are_gathered_at_the_kept_positions(normalize, expected, cut):
    # budget 2, recent_window 0: step 0 admits 0..2 with null attention and
    # evicts 0 (all +0.0, the lowest position). Step 1 admits 3 and 4 with
    # totals over R = 2 queries: 9.0 (position 0, no longer kept), 0.3,
    # 0.25, 0.75, 0.2.
    steps = [(3, None), prefill(2, [[0.25] * 5], [[9.0, 0.3, 0.25, 0.75, 0.2]], 2)]
    log = run("h2o", H2O + [("normalize", normalize)], steps)
    assert victims(log) == expected
    assert log.steps[1].cut == cut


@pytest.mark.parametrize("normalize", [0, 1])
def test_totals_after_evictions_give_the_rows_log(normalize):
    # A second prefill step after an eviction (budget 3, recent_window 0):
    # step 1's rows (queries 4 and 5, m = R = c = 2) and their totals,
    # gathered at kept 0, 1, 3 and the chunk, give the same log.
    rows0 = [[0.5, 0.25, 0.125, 0.125]]
    rows1 = [[0.0, 0.0, 9.0, 0.5, 0.0], [0.0, 0.25, 9.0, 0.0, 0.0, 0.0]]
    full = {4: rows1[0], 5: rows1[1]}
    totals = totals_of(full, 4, 2, 2)
    assert totals == [0.0, 0.25, 18.0, 0.5, 0.0, 0.0]
    params = [("budget", 3), ("recent_window", 0), ("normalize", normalize)]
    a = run("h2o", params, [prefill(4, rows0), prefill(2, rows1)])
    b = run("h2o", params, [prefill(4, rows0), prefill(2, rows1[1:], [totals], 2)])
    assert victims(a)[1] == [4, 5]
    assert a.steps == b.steps


def test_totals_match_rows_on_random_prompts():
    # The same claim on random prompts: binary32 weights, chunks after a
    # first step, R = m = the chunk, a few budgets.
    rng = np.random.default_rng(7)
    for trial in range(40):
        first = int(rng.integers(0, 4))
        c = int(rng.integers(1, 7))
        n = first + c
        rows = {q: [float(np.float32(x)) for x in rng.random(q + 1)] for q in range(first, n)}
        totals = totals_of(rows, first, c, c)
        for normalize in (0, 1):
            params = [("budget", int(rng.integers(1, 4))), ("recent_window", 0), ("normalize", normalize)]
            head = [(first, None)] if first else []
            a = run("h2o", params, head + [prefill(c, [rows[q] for q in range(first, n)])])
            b = run("h2o", params, head + [prefill(c, [rows[n - 1]], [totals], c)])
            assert a.rejection is None and a.steps == b.steps, (trial, normalize)


def test_decoding_continues_from_the_totals_sums():
    # After the prefill keeps 0 and 1 (sums 1.25 and 1.0), a decode row
    # (0.0, 0.5) makes them 1.25 and 1.5; position 3 scores 0 and goes.
    steps = [prefill(3, DECOY, [[1.25, 1.0, 0.25]], 3), (1, [0.0, 0.5, 0.0])]
    log = run("h2o", H2O, steps)
    assert victims(log) == [[2], [3]]
    assert log.steps[1].cut[:3] == [(3, 0.0), (0, 1.25), (1, 1.5)]


def test_totals_add_once_onto_earlier_sums():
    # A decode row before the prefill: sums 0.5, 0.25 for 0, 1 (budget 3,
    # no eviction yet); the prefill admits 2, 3 with R = 1 totals 0.25,
    # 0.5, 0.125, 1.0: sums 0.75, 0.75, 0.125, 1.0; normalized by
    # min(1, 4 - p) = 1 the same. One goes: 2.
    steps = [(2, None), (1, [0.5, 0.25]), prefill(1, [[0.0] * 4], [[0.25, 0.5, 0.125, 1.0]], 1)]
    for normalize in (0, 1):
        log = run("h2o", [("budget", 3), ("recent_window", 0), ("normalize", normalize)], steps)
        assert victims(log) == [[], [], [2]]
        assert log.steps[2].cut == [(2, 0.125), (0, 0.75), (1, 0.75), (3, 1.0)]


# -- Several heads and shared budgets ------------------------------------------

H0 = [1.25, 1.0, 0.25]  # totals of CHUNK3
H1 = [0.5, 1.25, 0.5]  # totals of (0.125), (0.25, 0.75), (0.125, 0.5, 0.5)


def test_each_set_reads_its_heads_totals():
    # One set per query head: head 0's totals evict 2, head 1's 0 (0 and 2
    # tie at 0.5, the lower goes).
    steps = [prefill(3, DECOY * 2, [H0, H1], 3)]
    log = run("h2o", H2O + [("granularity", QUERY_HEAD)], steps, 2)
    assert [s.victims for s in log.steps[0].sets] == [[2], [0]]
    # One set (layer): the mean of the heads' sums, 0.875, 1.125, 0.375.
    log = run("h2o", H2O + [("granularity", LAYER)], steps, 2)
    assert log.steps[0].victims == [2]
    assert log.steps[0].cut == [(2, 0.375), (0, 0.875), (1, 1.125)]


def test_shared_budget_ranks_the_totals_sums():
    # adaptive 1, one set per query head, L = 4, six kept: two pairs go,
    # (2, 0.25, s0) and (0, 0.5, s1) (before (2, 0.5, s1): position).
    params = H2O + [("granularity", QUERY_HEAD), ("adaptive", 1), ("safeguard_permille", 0)]
    log = run("h2o", params, [prefill(3, DECOY * 2, [H0, H1], 3)], 2)
    assert [s.victims for s in log.steps[0].sets] == [[2], [0]]


# -- Every other policy ignores them (prefill.md#column-totals) ----------------

@pytest.mark.parametrize("name, params", [
    ("tova", [("budget", 2), ("recent_window", 0)]),
    ("snapkv", [("budget", 2), ("recent_window", 0)]),
    ("streamingllm", [("budget", 2), ("sinks", 1)]),
    ("window", [("budget", 2)]),
    ("full", []),
    ("random", [("budget", 2), ("recent_window", 0)]),
])
def test_other_policies_ignore_them(name, params):
    last = [[0.25, 0.5, 0.125]]
    plain = run(name, params, [prefill(3, last)])
    with_totals = run(name, params, [prefill(3, last, [[0.0, 9.0, 9.0]], 1)])
    assert plain.rejection is None and with_totals.rejection is None
    assert plain.steps == with_totals.steps


def test_tova_reads_its_last_row_beside_totals():
    # tova's latest weights are the last row (0.25, 0.5, 0.125): 2 goes,
    # whatever the totals say (they would make 0 go).
    log = run("tova", [("budget", 2), ("recent_window", 0)], [prefill(3, [[0.25, 0.5, 0.125]], [[0.0, 9.0, 9.0]], 1)])
    assert victims(log) == [[2]]


# -- Their checks (prefill.md#their-checks, harness.md#refusals) ---------------

ROWS2 = [[0.5, 0.5]]  # a prefill of 2, the last query's row


@pytest.mark.parametrize("steps, expected", [
    # Well formed: R 1 or 2 (= admit), two values.
    ([prefill(2, ROWS2, [[0.5, 0.5]], 2)], None),
    ([prefill(2, ROWS2, [[0.5, 0.5]], 1)], None),
    ([prefill(2, ROWS2, [[0.0, 1e300]], 1)], None),  # +0.0 and any finite value
    # Totals without query rows.
    ([(2, None, [], [], [[0.5, 0.5]], 2)], ("ATTENTION_LENGTH", 0)),
    # ... even beside an attention row (a decode step).
    ([(1, None), (1, [0.5], [], [], [[0.5, 0.5]], 1)], ("ATTENTION_LENGTH", 1)),
    # total_rows 0 with totals, above admit, or above 0 without totals.
    ([prefill(2, ROWS2, [[0.5, 0.5]], 0)], ("ATTENTION_LENGTH", 0)),
    ([prefill(2, ROWS2, [[0.5, 0.5]], 3)], ("ATTENTION_LENGTH", 0)),
    ([prefill(2, ROWS2, [], 1)], ("ATTENTION_LENGTH", 0)),
    # R at most c, not a + c: a chunk of 1 after 2 positions, R = 2.
    ([(2, None), prefill(1, [[0.5] * 3], [[0.5] * 3], 2)], ("ATTENTION_LENGTH", 1)),
    ([(2, None), prefill(1, [[0.5] * 3], [[0.5] * 3], 1)], None),
    # a + c values: one short (only the chunk's), one too many.
    ([prefill(2, ROWS2, [[0.5]], 2)], ("ATTENTION_LENGTH", 0)),
    ([prefill(2, ROWS2, [[0.5, 0.5, 0.5]], 2)], ("ATTENTION_LENGTH", 0)),
    ([(2, None), prefill(1, [[0.5] * 3], [[0.5]], 1)], ("ATTENTION_LENGTH", 1)),
    # Two lists for one query head.
    ([prefill(2, ROWS2, [[0.5, 0.5], [0.5, 0.5]], 2)], ("ATTENTION_LENGTH", 0)),
    # Values: NaN, +infinity, -infinity, -0.0, a negative, a negative
    # subnormal; at a position no longer kept too.
    ([prefill(2, ROWS2, [[0.5, math.nan]], 2)], ("ATTENTION_VALUE", 0)),
    ([prefill(2, ROWS2, [[math.inf, 0.5]], 2)], ("ATTENTION_VALUE", 0)),
    ([prefill(2, ROWS2, [[0.5, -math.inf]], 2)], ("ATTENTION_VALUE", 0)),
    ([prefill(2, ROWS2, [[0.5, -0.0]], 2)], ("ATTENTION_VALUE", 0)),
    ([prefill(2, ROWS2, [[-0.5, 0.5]], 2)], ("ATTENTION_VALUE", 0)),
    ([prefill(2, ROWS2, [[0.5, -5e-324]], 2)], ("ATTENTION_VALUE", 0)),
    ([(3, None), prefill(2, [[0.25] * 5], [[math.nan, 0.3, 0.25, 0.75, 0.2]], 2)], ("ATTENTION_VALUE", 1)),
    # The step's other checks first: admit 0.
    ([(0, None, [], [[math.nan]], [[math.nan]], 5)], ("POSITION", 0)),
    # An earlier step's fault first.
    ([(0, None), prefill(2, ROWS2, [[0.5]], 2)], ("POSITION", 0)),
    # A well-formed step, then a later fault.
    ([prefill(2, ROWS2, [[0.5, 0.5]], 2), (0, None)], ("POSITION", 1)),
])
@pytest.mark.parametrize("name", ["h2o", "tova", "snapkv", "window", "streamingllm", "full", "random",
                                  "openvino", "simlayerkv"])
def test_refusals(name, steps, expected):
    assert category(run(name, [], steps)) == expected


@pytest.mark.parametrize("steps, expected", [
    # Check 3 before check 4: a short totals list beside a NaN query weight
    # is a length fault, and a short query row beside a NaN total too.
    ([prefill(2, [[0.5, math.nan]], [[0.5]], 2)], ("ATTENTION_LENGTH", 0)),
    ([prefill(2, [[0.5]], [[0.5, math.nan]], 2)], ("ATTENTION_LENGTH", 0)),
    # The totals' shape after the rows' lengths and before the rows'
    # weights: a NaN attention weight beside totals without query rows.
    ([(1, None), (1, [math.nan], [], [], [[0.5, 0.5]], 1)], ("ATTENTION_LENGTH", 1)),
    # A row of the wrong length beside a NaN total: the row's length first.
    ([(1, None), (1, [0.5, 0.5], [], [], [[0.5, math.nan]], 1)], ("ATTENTION_LENGTH", 1)),
    # A valid attention row beside totals without query rows, every value bad.
    ([(1, None), (1, [0.5], [], [], [[math.nan, math.nan]], 1)], ("ATTENTION_LENGTH", 1)),
])
def test_check_order(steps, expected):
    assert category(run("h2o", [], steps)) == expected


def test_values_after_query_weights():
    # Check 4: the query rows' weights before the totals: both bad, the
    # query weight is reported.
    log = run("h2o", [], [prefill(2, [[math.nan, 0.5]], [[0.5, -1.0]], 2)])
    assert category(log) == ("ATTENTION_VALUE", 0)
    assert "query row" in log.rejection[2]
    log = run("h2o", [], [prefill(2, [[0.5, 0.5]], [[0.5, -1.0]], 2)])
    assert "column total" in log.rejection[2] and "position 1" in log.rejection[2]


def test_several_heads_checks():
    rows = [[0.5, 0.5], [0.5, 0.5]]  # Hq = 2, m = 1
    ok = [[0.5, 0.5], [0.5, 0.5]]
    assert run("h2o", [], [prefill(2, rows, ok, 2)], 2).rejection is None
    # Hq lists: one for two heads.
    assert category(run("h2o", [], [prefill(2, rows, ok[:1], 2)], 2)) == ("ATTENTION_LENGTH", 0)
    # Every list's length before any value: head 0 has a NaN, head 1 is short.
    log = run("tova", [], [prefill(2, rows, [[math.nan, 0.5], [0.5]], 2)], 2)
    assert category(log) == ("ATTENTION_LENGTH", 0)
    # Head 0's values first.
    log = run("h2o", [], [prefill(2, rows, [[0.5, -0.0], [math.nan, 0.5]], 2)], 2)
    assert category(log) == ("ATTENTION_VALUE", 0)
    assert "head 0" in log.rejection[2]
    log = run("window", [], [prefill(2, rows, [[0.5, 0.5], [0.5, math.inf]], 2)], 2)
    assert category(log) == ("ATTENTION_VALUE", 0)
    assert "head 1" in log.rejection[2]


def test_a_refused_step_keeps_the_earlier_log():
    steps = [prefill(3, DECOY, [H0], 3), prefill(1, [[0.5] * 4], [[0.5] * 4], 2)]
    log = run("h2o", H2O, steps)
    assert victims(log) == [[2]]
    assert category(log) == ("ATTENTION_LENGTH", 1)


# -- Called directly (harness.md#refusals, check 7) ----------------------------

def h2o_policy(**params):
    return H2oPolicy({"budget": 2, "recent_window": 0, **params}, None)


def test_direct_call_reads_totals():
    p = h2o_policy()
    assert p.step(0, 3, None, DECOY, [1.25, 1.0, 0.25], 3).victims == [2]
    # Gathered after an eviction: kept 1, 2, then the chunk 3, 4: the
    # gathered totals 0.3, 0.25, 0.75, 0.2 (n = 4), R = 2, normalized.
    p = h2o_policy(normalize=1)
    assert p.step(0, 3, None).victims == [0]
    out = p.step(3, 2, None, [[0.25] * 4], [0.3, 0.25, 0.75, 0.2], 2)
    assert out.victims == [1, 2]
    assert out.cut == [(2, 0.125), (1, 0.15), (4, 0.2), (3, 0.375)]


def test_direct_call_other_policies_ignore_totals():
    t = TovaPolicy({"budget": 2, "recent_window": 0}, None)
    assert t.step(0, 3, None, [[0.25, 0.5, 0.125]], [0.0, 9.0, 9.0], 1).victims == [2]


ROW3 = [[0.5, 0.5, 0.5]]  # after one kept position, a step admitting 1, 2: n = 3


@pytest.mark.parametrize("queries, totals, total_rows, expected", [
    (None, [0.5, 0.5, 0.5], 2, "ATTENTION_LENGTH"),  # no query rows
    (None, None, 1, "ATTENTION_LENGTH"),  # total_rows without totals
    (ROW3, None, 1, "ATTENTION_LENGTH"),
    (ROW3, [0.5, 0.5, 0.5], 0, "ATTENTION_LENGTH"),  # total_rows 0
    (ROW3, [0.5, 0.5, 0.5], 3, "ATTENTION_LENGTH"),  # above count (2), not above n
    (ROW3, [0.5, 0.5], 2, "ATTENTION_LENGTH"),  # one per kept position after admission
    (ROW3, [0.5, 0.5, 0.5, 0.5], 2, "ATTENTION_LENGTH"),
    (ROW3, [0.5, 0.5, math.nan], 2, "ATTENTION_VALUE"),
    (ROW3, [-0.0, 0.5, 0.5], 2, "ATTENTION_VALUE"),
    (ROW3, [0.5, -math.inf, 0.5], 2, "ATTENTION_VALUE"),
    # The query rows' checks (check 6) come first, their weights included:
    # a NaN query weight beside a short totals list is a value fault here
    # (through a scenario it would be a length fault).
    ([[0.5, 0.5, math.nan]], [0.5], 2, "ATTENTION_VALUE"),
    ([[0.5, 0.5]], [0.5, 0.5, math.nan], 2, "ATTENTION_LENGTH"),
])
def test_direct_call_refusals(queries, totals, total_rows, expected):
    p = h2o_policy()
    p.step(0, 1, None)  # kept 0 (sum +0.0); the step under test admits 1, 2
    with pytest.raises(Refusal) as e:
        p.step(1, 2, None, queries, totals, total_rows)
    assert e.value.category == expected
    # A refused step leaves the policy as it was.
    assert p.kept == [0] and list(p.cumulative) == [0.0]
    # And the same step, well formed, is accepted.
    assert p.step(1, 2, None, ROW3, [0.5, 0.25, 0.125], 2).victims == [2]


# -- The wire (kvspec.proto, Step fields 5 and 6) ------------------------------

def request(steps, params=H2O, query_heads=None):
    sc = kpb.Scenario()
    if query_heads is not None:
        sc.query_heads = query_heads
    for admit, queries, totals, total_rows in steps:
        st = sc.steps.add()
        st.admit = admit
        for row in queries:
            st.queries.add().weights.extend(row)
        for t in totals:
            st.totals.add().sums.extend(t)
        st.total_rows = total_rows
    req = cpb.Request(seq=1, case_id="t", scenario=sc, want_cut=True)
    req.policy.name = "h2o"
    for name, value in params:
        p = req.policy.parameters.add()
        p.name, p.value = name, value
    return handle_request(req).response


def test_testee_reads_totals():
    reply = request([(3, DECOY, [[0.875, 1.0, 0.625]], 3)], H2O + [("normalize", 1)])
    assert reply.WhichOneof("result") == "log"
    assert list(reply.log.steps[0].victims) == [0]
    assert [c.score for c in reply.log.steps[0].cut] == [0.875 / 3, 0.5, 0.625]


def test_testee_refuses_total_rows_without_totals():
    reply = request([(3, DECOY, [], 2)])
    assert (reply.log.rejection.category, reply.log.rejection.step) == (kpb.ATTENTION_LENGTH, 0)
    reply = request([(3, DECOY, [[1.25, 1.0, -0.0]], 3)])
    assert (reply.log.rejection.category, reply.log.rejection.step) == (kpb.ATTENTION_VALUE, 0)
