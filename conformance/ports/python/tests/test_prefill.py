"""Prefill (spec/prefill.md) and each card's "At prefill", worked by hand.

Steps are (admit, attention-or-None, heads, queries): `queries` is the list
of query rows of spec/prefill.md#query-rows, head 0's m rows first, each
head's in ascending query position; the row of query q has q + 1 weights.
"""

import math

import pytest

from kvspec_port.errors import Refusal
from kvspec_port.harness import configure, run_scenario
from kvspec_port.heads import QUERY_HEAD
from kvspec_port.policies.snapkv import SnapKvPolicy, avg_pool, max_pool
from kvspec_port.prefill import ratio_budget
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request, to_proto_log

import numpy as np


def run(name, params, steps, query_heads=None, kv_heads=None):
    return run_scenario(name, list(params), 0, list(steps), None, query_heads, kv_heads)


def prefill(admit, queries):
    """A prefill step: admits `admit`, carries `queries`, no other row."""
    return (admit, None, [], queries)


def category(log):
    return log.rejection[:2] if log.rejection else None


def victims(log):
    return [s.victims for s in log.steps]


def refused(name, params):
    with pytest.raises(Refusal) as e:
        configure(name, params)
    return e.value.category


# -- Budgets from a ratio (spec/prefill.md#budgets-from-a-ratio) --------------

def test_ratio_binary64_rounding():
    # n = 20, ratio_ppm = 900000: 1 - 0.9 is 0.09999999999999998, u is
    # 1.9999999999999996, B is 1 where the exact value would give 2.
    assert 1.0 - 900000 / 1000000.0 == 0.09999999999999998
    assert ratio_budget(20, 900000) == 1
    assert 20 * (10**6 - 900000) // 10**6 == 2  # the exact floor differs


def test_ratio_budget_clamps_to_one_and_plain_cases():
    assert ratio_budget(1, 999999) == 1
    assert ratio_budget(3, 999999) == 1
    assert ratio_budget(8, 500000) == 4
    assert ratio_budget(16, 250000) == 12
    assert ratio_budget(6, 800000) == 1  # 6 * 0.19999999999999996 = 1.1999999999999997


def test_ratio_budget_scenario_keeps_one():
    # A 20-position prompt, whole causal matrix, compressed by ratio 0.9.
    rows = [[0.5] * (q + 1) for q in range(20)]
    log = run("h2o", [("recent_window", 0), ("ratio_ppm", 900000)], [prefill(20, rows)])
    assert log.rejection is None
    assert log.steps[0].kept_count == 1
    assert len(log.steps[0].victims) == 19


# -- Parameters and rules (spec/prefill.md#when-a-policy-evicts) -------------

def test_parameter_order():
    names = {name: [p[0] for p in configure(name, [])[0].PARAMS] for name in ("h2o", "tova", "snapkv", "streamingllm")}
    tail = ["granularity", "aggregation", "adaptive", "safeguard_permille", "prefill_only", "ratio_ppm"]
    # spec/triggers.md#parameters (0.12.0): `slack`, `interval`, then
    # spec/blocks.md#parameters (0.13.0): `block` (and `block_score` in the
    # score-based cards), last.
    triggers = ["slack", "interval"]
    scored = triggers + ["block", "block_score"]
    assert names["h2o"] == ["budget", "recent_window"] + tail + ["normalize"] + scored
    assert names["tova"] == ["budget", "recent_window"] + tail + ["protect_newest"] + scored
    # spec/policies/pyramidkv.md (0.19.0): snapkv's pyramid parameters
    # after `window_budget`, before the triggers'.
    assert names["snapkv"] == ["budget", "recent_window", "obs_window", "pool_kernel"] + tail + [
        "window_reduce", "pooling", "window_budget", "pyramid", "pyramid_beta", "layer", "layers"] + scored
    # spec/spans.md#parameters (0.8.0, and the context shift's of 0.9.0)
    # follow the prefill parameters.
    assert names["streamingllm"] == ["budget", "sinks", "prefill_only", "ratio_ppm", "spans",
                                     "span_window", "span_chunk", "evict_at", "position_ids",
                                     "context_shift", "discard"] + triggers + ["block"]


@pytest.mark.parametrize("name, params", [
    ("h2o", [("prefill_only", 2)]),
    ("tova", [("ratio_ppm", 1000000)]),
    ("snapkv", [("ratio_ppm", -1)]),
    ("streamingllm", [("prefill_only", -1)]),
    ("h2o", [("normalize", 2)]),
    ("tova", [("protect_newest", 2)]),
    ("snapkv", [("window_reduce", 2)]),
    ("snapkv", [("pooling", 2)]),
    ("snapkv", [("window_budget", 2)]),
    ("window", [("prefill_only", 0)]),  # a policy without it: unknown
    ("random", [("ratio_ppm", 0)]),
])
def test_ranges(name, params):
    assert refused(name, params) == "INVALID_PARAMETER"


def test_defaults():
    for name in ("h2o", "tova", "snapkv", "streamingllm"):
        _, values = configure(name, [])
        assert values["prefill_only"] == 0 and values["ratio_ppm"] == 0
    assert configure("snapkv", [])[1]["pooling"] == 0


@pytest.mark.parametrize("name", ["h2o", "tova", "snapkv"])
def test_ratio_requires_no_recent_window(name):
    assert refused(name, [("ratio_ppm", 500000)]) == "INVALID_PARAMETER"  # default recent_window 16
    configure(name, [("ratio_ppm", 500000), ("recent_window", 0)])
    configure(name, [("ratio_ppm", 0), ("recent_window", 4)])


@pytest.mark.parametrize("name, extra", [
    ("h2o", [("prefill_only", 1)]),
    ("tova", [("ratio_ppm", 1), ("recent_window", 0)]),
    ("snapkv", [("window_budget", 1)]),
])
def test_adaptive_rules(name, extra):
    assert refused(name, [("adaptive", 1)] + extra) == "INVALID_PARAMETER"
    configure(name, extra)  # without adaptive: accepted


def test_streamingllm_takes_a_ratio_with_its_sinks():
    configure("streamingllm", [("ratio_ppm", 999999), ("sinks", 4)])


# -- Query rows' checks (spec/prefill.md#checks) -------------------------------

CHUNK3 = [[0.5], [0.25, 0.75], [0.5, 0.25, 0.25]]


@pytest.mark.parametrize("steps, expected", [
    # A non-causal row: q + 2 weights.
    ([prefill(3, [[0.5], [0.25, 0.75], [0.5, 0.25, 0.25, 0.0]])], ("ATTENTION_LENGTH", 0)),
    # A short row.
    ([prefill(3, [[0.5], [0.25], [0.5, 0.25, 0.25]])], ("ATTENTION_LENGTH", 0)),
    # More rows than admitted: m = 4 > 3 (rows for queries -1 .. 2 cannot exist).
    ([prefill(3, [[0.5]] + CHUNK3)], ("ATTENTION_LENGTH", 0)),
    # -0.0, NaN, infinity, negative.
    ([prefill(3, [[0.5], [0.25, -0.0], [0.5, 0.25, 0.25]])], ("ATTENTION_VALUE", 0)),
    ([prefill(3, [[0.5], [0.25, 0.75], [math.nan, 0.25, 0.25]])], ("ATTENTION_VALUE", 0)),
    ([prefill(1, [[math.inf]])], ("ATTENTION_VALUE", 0)),
    ([prefill(1, [[-0.5]])], ("ATTENTION_VALUE", 0)),
    # A step with query rows carries no attention (even a valid one).
    ([(1, None), (1, [0.5], [], [[0.5, 0.5]])], ("ATTENTION_LENGTH", 1)),
    # Length before weights: a NaN in the first row, the last row too long.
    ([prefill(2, [[math.nan], [0.5, 0.5, 0.5]])], ("ATTENTION_LENGTH", 0)),
    # Both rows: the attention's bad weight is not reached, the query rows'
    # shape refuses first (check 3 before check 4).
    ([(1, None), (1, [-1.0], [], [[0.5, 0.5]])], ("ATTENTION_LENGTH", 1)),
    # The step's other checks first: admit 0.
    ([prefill(0, [[math.nan]])], ("POSITION", 0)),
    # Well-formed rows, then a later fault.
    ([prefill(3, CHUNK3), (0, None)], ("POSITION", 1)),
])
@pytest.mark.parametrize("name", ["h2o", "tova", "snapkv", "window", "streamingllm", "full", "random",
                                  "openvino"])
def test_refusals(name, steps, expected):
    assert category(run(name, [], steps)) == expected


def test_refusals_several_heads():
    two = [[0.5], [0.5]]
    # Not a multiple of Hq = 2.
    assert category(run("h2o", [], [prefill(1, [[0.5]])], 2)) == ("ATTENTION_LENGTH", 0)
    assert category(run("h2o", [], [prefill(1, [[0.5]] * 3)], 2)) == ("ATTENTION_LENGTH", 0)
    # heads present with query rows.
    steps = [(1, None), (1, None, two, [[0.5, 0.5], [0.5, 0.5]])]
    assert category(run("h2o", [], steps, 2)) == ("ATTENTION_LENGTH", 1)
    # Head 1's row is checked after head 0's: length before any weight.
    steps = [prefill(2, [[0.5], [math.nan, 0.5], [0.5], [0.5, 0.5, 0.5]])]
    assert category(run("tova", [], steps, 2)) == ("ATTENTION_LENGTH", 0)
    steps = [prefill(2, [[0.5], [0.5, 0.5], [0.5], [0.5, -0.0]])]
    assert category(run("window", [], steps, 2)) == ("ATTENTION_VALUE", 0)
    assert run("h2o", [], [prefill(2, [[0.5], [0.5, 0.5], [0.5], [0.5, 0.5]])], 2).rejection is None


def test_query_rows_of_the_last_m_positions():
    # A first step of 2, then a chunk of 3 (positions 2..4) with the rows of
    # its last 2 queries: 3 and 4 (4 and 5 weights).
    steps = [(2, None), prefill(3, [[0.5] * 4, [0.5] * 5])]
    assert run("h2o", [], steps).rejection is None
    steps = [(2, None), prefill(3, [[0.5] * 3, [0.5] * 4])]
    assert category(run("h2o", [], steps)) == ("ATTENTION_LENGTH", 1)


# -- H2O at prefill (spec/policies/h2o.md#at-prefill) -------------------------

H2O = [("budget", 2), ("recent_window", 0)]


def test_h2o_raw():
    log = run("h2o", H2O, [prefill(3, CHUNK3)])
    assert victims(log) == [[2]]
    assert log.steps[0].cut[:3] == [(2, 0.25), (1, 1.0), (0, 1.25)]


def test_h2o_normalized():
    log = run("h2o", H2O + [("normalize", 1)], [prefill(3, CHUNK3)])
    assert victims(log) == [[2]]
    assert log.steps[0].cut == [(2, 0.25), (0, 1.25 / 3), (1, 0.5)]


def test_h2o_raw_and_normalized_differ():
    rows = CHUNK3[:2] + [[0.125, 0.25, 0.625]]
    raw = run("h2o", H2O, [prefill(3, rows)])
    assert victims(raw) == [[2]]
    assert raw.steps[0].cut == [(2, 0.625), (0, 0.875), (1, 1.0)]
    norm = run("h2o", H2O + [("normalize", 1)], [prefill(3, rows)])
    assert victims(norm) == [[0]]
    assert norm.steps[0].cut == [(0, 0.875 / 3), (1, 0.5), (2, 0.625)]


def test_h2o_decode_continues_from_prefill_sums():
    # After the prefill keeps 0 and 1 (sums 1.25 and 1.0), a decode row
    # (0.0, 0.5) makes them 1.25 and 1.5; admitting 3 with budget 2, the
    # new position scores 0 and goes (recent_window 0): H2O keeps adding
    # onto its prefill sums.
    steps = [prefill(3, CHUNK3), (1, [0.0, 0.5, 0.0])]
    log = run("h2o", H2O, steps)
    assert victims(log) == [[2], [3]]
    assert log.steps[1].cut[:3] == [(3, 0.0), (0, 1.25), (1, 1.5)]


def test_h2o_gathers_at_kept_positions():
    # budget 2, recent_window 1: a chunk 0..2 evicts 0 (all +0.0, lowest
    # position); the set keeps 1, 2. A prefill chunk 3..4 with the rows of
    # queries 3 and 4: gathered at kept positions 1, 2, 3 and 1, 2, 3, 4.
    rows = [[9.0, 0.25, 0.5, 0.125], [9.0, 0.5, 0.125, 0.25, 0.0625]]
    log = run("h2o", [("budget", 2), ("recent_window", 1)], [(3, None), prefill(2, rows)])
    # Sums after the prefill: 1 -> 0.75, 2 -> 0.625, 3 -> 0.375, 4 -> 0.0625
    # (protected); position 0's weights (9.0) are never read.
    assert victims(log) == [[0], [2, 3]]
    assert log.steps[1].cut == [(3, 0.375), (2, 0.625), (1, 0.75)]
    assert log.steps[1].kept_count == 2


def test_h2o_prefill_only_never_evicts_at_decode():
    params = H2O + [("prefill_only", 1)]
    steps = [prefill(3, CHUNK3), (1, [0.5] * 3), (1, [0.5] * 4)]
    log = run("h2o", params, steps)
    assert victims(log) == [[2], [], []]
    assert [s.kept_count for s in log.steps] == [2, 3, 4]


def test_h2o_prefill_only_with_budget_at_prefill():
    # With prefill_only 1 and ratio_ppm 0, prefill steps use `budget`.
    log = run("h2o", H2O + [("prefill_only", 1)], [(1, None), prefill(2, [[0.5, 0.5], [0.5, 0.25, 0.25]])])
    assert [s.kept_count for s in log.steps] == [1, 2]


def test_h2o_several_heads_each_head_its_rows():
    # Two query heads, one set per head; head 1's rows reverse head 0's choice.
    h0 = CHUNK3
    h1 = [[0.125], [0.25, 0.75], [0.125, 0.5, 0.5]]  # sums 0.5, 1.25, 0.5
    log = run("h2o", H2O + [("granularity", QUERY_HEAD)], [prefill(3, h0 + h1)], 2)
    assert [s.victims for s in log.steps[0].sets] == [[2], [0]]
    # One set (layer): mean of the heads' sums: 0.875, 1.125, 0.375.
    log = run("h2o", H2O + [("granularity", 0)], [prefill(3, h0 + h1)], 2)
    assert log.steps[0].victims == [2]
    assert log.steps[0].cut == [(2, 0.375), (0, 0.875), (1, 1.125)]


# -- TOVA at prefill (spec/policies/tova.md#at-prefill) -----------------------

TOVA = [("budget", 2), ("recent_window", 0)]


def test_tova_newest_is_a_candidate():
    log = run("tova", TOVA, [prefill(3, [[0.25, 0.5, 0.125]])])
    assert victims(log) == [[2]]


def test_tova_protect_newest():
    log = run("tova", TOVA + [("protect_newest", 1)], [prefill(3, [[0.25, 0.5, 0.125]])])
    assert victims(log) == [[0]]
    assert log.steps[0].cut == [(0, 0.25), (1, 0.5)]  # 2 is not a candidate


def test_tova_protect_newest_changes_nothing_at_decode():
    steps = [(3, None), (1, [0.25, 0.5, 0.125])]
    a = run("tova", [("budget", 3), ("recent_window", 0)], steps)
    b = run("tova", [("budget", 3), ("recent_window", 0), ("protect_newest", 1)], steps)
    assert victims(a) == victims(b) == [[], [3]]


def test_tova_latest_from_the_last_row_then_replaced():
    # Only the last row matters: an earlier row with other weights is ignored.
    rows = [[0.5, 0.5], [0.25, 0.5, 0.125]]
    # The decode row (0.75, 0.0, 0.3) gathered at 0, 1: 1 ties the new 3 at
    # 0.0 and, lower, goes.
    log = run("tova", TOVA, [prefill(3, rows), (1, [0.75, 0.0, 0.3])])
    assert victims(log) == [[2], [1]]


# -- SnapKV at prefill (spec/policies/snapkv.md#at-prefill) -------------------

SNAP = [("recent_window", 0), ("obs_window", 2), ("pool_kernel", 1)]
SNAP_ROWS = [[0.25, 0.125, 0.5, 0.125], [0.5, 0.125, 0.25, 0.0625, 0.0625]]  # queries 3, 4


def test_snapkv_window_inside():
    log = run("snapkv", SNAP + [("budget", 3)], [prefill(5, SNAP_ROWS)])
    assert victims(log) == [[0, 1]]
    assert log.steps[0].cut == [(1, 0.25), (0, 0.75), (2, 0.75), (3, math.inf), (4, math.inf)]


def test_snapkv_window_inside_budget_below_window():
    log = run("snapkv", SNAP + [("budget", 1)], [prefill(5, SNAP_ROWS)])
    assert victims(log) == [[0, 1, 2, 3]]
    assert log.steps[0].cut[-2:] == [(3, math.inf), (4, math.inf)]


def test_snapkv_window_outside():
    log = run("snapkv", SNAP + [("budget", 2), ("window_budget", 1)], [prefill(5, SNAP_ROWS)])
    assert victims(log) == [[1]]
    assert log.steps[0].kept_count == 4
    assert log.steps[0].cut == [(1, 0.25), (0, 0.75), (2, 0.75)]  # the window is no candidate


def test_snapkv_window_outside_compresses_nothing_when_small():
    log = run("snapkv", SNAP + [("budget", 3), ("window_budget", 1)], [prefill(5, SNAP_ROWS)])
    assert victims(log) == [[]]
    assert log.steps[0].cut == []


def test_snapkv_window_mean():
    # window_reduce 1: each sum divided once by w = 2.
    log = run("snapkv", SNAP + [("budget", 3), ("window_reduce", 1)], [prefill(5, SNAP_ROWS)])
    assert victims(log) == [[0, 1]]
    assert log.steps[0].cut[:3] == [(1, 0.125), (0, 0.375), (2, 0.375)]


def test_snapkv_window_is_min_of_obs_and_rows():
    # One query row (m = 1) with obs_window 2: w = 1, the prefix is 0..3.
    log = run("snapkv", SNAP + [("budget", 3)], [prefill(5, SNAP_ROWS[1:])])
    assert victims(log) == [[1, 3]]
    assert log.steps[0].cut == [(3, 0.0625), (1, 0.125), (2, 0.25), (0, 0.5), (4, math.inf)]


def test_snapkv_pools_the_prefix_alone():
    # pool_kernel 3, max: prefix sums 0.75, 0.25, 0.75 pool to 0.75 each;
    # the window's slots are not neighbours (their +inf does not spread).
    log = run("snapkv", [("recent_window", 0), ("obs_window", 2), ("pool_kernel", 3), ("budget", 4)],
              [prefill(5, SNAP_ROWS)])
    assert log.steps[0].cut[:3] == [(0, 0.75), (1, 0.75), (2, 0.75)]
    assert victims(log) == [[0]]
    # avg: (0.75 + 0.25) / 3, (0.75 + 0.25 + 0.75) / 3, (0.25 + 0.75) / 3.
    log = run("snapkv", [("recent_window", 0), ("obs_window", 2), ("pool_kernel", 3), ("budget", 4),
                         ("pooling", 1)], [prefill(5, SNAP_ROWS)])
    assert log.steps[0].cut[:3] == [(0, 1.0 / 3), (2, 1.0 / 3), (1, 1.75 / 3)]
    assert victims(log) == [[0]]


def test_snapkv_prefill_leaves_the_ring():
    q = SnapKvPolicy({"budget": 8, "recent_window": 0, "obs_window": 2, "pool_kernel": 1}, None)
    q.step(0, 1, None)
    q.step(1, 1, [0.5])
    cursor, recorded = q.cursor, q.recorded
    q.step(2, 3, None, [[0.25, 0.5, 0.125, 0.0, 1.0]])
    assert (q.cursor, q.recorded) == (cursor, recorded)
    q.step(5, 1, None)
    # Decode ranks by the ring again: 0 has 0.5, every other slot 0.
    assert list(q.scores()) == [0.5, 0.0, 0.0, 0.0, 0.0, 0.0]


def test_avg_pool_zero_padding():
    # Divisor always pool_kernel: an end slot averages lower than a middle one.
    sums = np.array([1.0, 1.0, 1.0])
    assert list(avg_pool(sums, 1, 3)) == [2.0 / 3, 1.0, 2.0 / 3]
    assert list(avg_pool(sums, 2, 5)) == [3.0 / 5, 3.0 / 5, 3.0 / 5]
    assert list(avg_pool(sums, 0, 1)) == [1.0, 1.0, 1.0]
    assert list(avg_pool(np.array([2.0]), 32767, 65535)) == [2.0 / 65535]
    assert len(avg_pool(np.zeros(0), 2, 5)) == 0
    assert list(max_pool(np.array([1.0, 0.5, 0.25]), 1)) == [1.0, 1.0, 0.5]


def test_avg_pool_sums_in_ascending_slot_order():
    # (t + t) + 1 is 1 + 2^-52 where 1 + t + t (rounded each step) is 1.
    t = 2.0 ** -53
    assert avg_pool(np.array([t, t, 1.0]), 1, 3)[1] == ((0.0 + t + t) + 1.0) / 3.0
    assert ((0.0 + t + t) + 1.0) != ((0.0 + 1.0) + t) + t


def test_avg_pooling_at_decode():
    # budget 3, recent_window 0, pool_kernel 3, avg: sums 1.0, 0.5, 0.25 and
    # a new 0: pooled 1.5/3, 1.75/3, 0.75/3, 0.25/3: the new position goes.
    rows = [[], [1.0], [0.0, 0.5], [0.0, 0.0, 0.25]]
    params = [("budget", 3), ("recent_window", 0), ("obs_window", 16), ("pool_kernel", 3), ("pooling", 1)]
    log = run("snapkv", params, [(1, r) for r in rows])
    assert victims(log)[-1] == [3]
    assert log.steps[-1].cut == [(3, 0.25 / 3), (2, 0.75 / 3), (0, 1.5 / 3), (1, 1.75 / 3)]


# -- streamingllm at prefill (spec/policies/streamingllm.md#at-prefill) --------

def test_streamingllm_ratio_below_sinks():
    # sinks 4, a prompt of 6, ratio 0.8: B = 1; the non-sinks 4, 5 go, then
    # the lowest sinks 0, 1, 2: the highest sink, 3, stays.
    params = [("budget", 8), ("sinks", 4), ("ratio_ppm", 800000)]
    steps = [prefill(6, [[0.5] * 6])] + [(1, None)] * 8
    log = run("streamingllm", params, steps)
    assert victims(log)[0] == [0, 1, 2, 4, 5]
    # Decode: kept 3, 6 .. 13 is 9 > 8: the non-sink 6 goes, not the sink 3.
    assert victims(log)[1:] == [[]] * 7 + [[6]]


def test_streamingllm_ratio_above_sinks():
    # sinks 2, a prompt of 8, ratio 0.5: B = 4; the sinks and the latest 2.
    log = run("streamingllm", [("budget", 3), ("sinks", 2), ("ratio_ppm", 500000)], [prefill(8, [[0.5] * 8])])
    assert victims(log) == [[2, 3, 4, 5]]
    # The next decode step uses `budget` 3.
    log = run("streamingllm", [("budget", 3), ("sinks", 2), ("ratio_ppm", 500000)],
              [prefill(8, [[0.5] * 8]), (1, None)])
    assert victims(log) == [[2, 3, 4, 5], [6, 7]]


def test_streamingllm_prefill_only():
    params = [("budget", 5), ("sinks", 2), ("prefill_only", 1)]
    steps = [prefill(10, [[0.5] * 10]), (1, None), (1, None)]
    log = run("streamingllm", params, steps)
    assert victims(log) == [[2, 3, 4, 5, 6], [], []]
    assert [s.kept_count for s in log.steps] == [5, 6, 7]


def test_streamingllm_decode_without_rows_is_unchanged():
    # Chunked admission, "chunk that holds some sinks" (budget 6, sinks 4).
    log = run("streamingllm", [("budget", 6), ("sinks", 4)], [(2, None), (5, None)])
    assert victims(log) == [[], [4]]


@pytest.mark.parametrize("name", ["window", "full", "random"])
def test_positional_policies_step_as_usual(name):
    rows = [[0.5] * (q + 1) for q in range(5)]
    a = run(name, [] if name == "full" else [("budget", 3), *([("recent_window", 1)] if name == "random" else [])],
            [prefill(5, rows)])
    b = run(name, [] if name == "full" else [("budget", 3), *([("recent_window", 1)] if name == "random" else [])],
            [(5, None)])
    assert victims(a) == victims(b)


# -- Several heads and shared budgets at prefill -------------------------------

def test_shared_budget_prefill_uses_prefill_scores():
    # adaptive 1 with a prefill step (prefill_only 0, ratio 0): the step
    # budget is `budget`; the joint ranking ranks the prefill rule's scores
    # (a reading: spec/prefill.md does not say more, see README).
    h0 = CHUNK3
    h1 = [[0.125], [0.25, 0.75], [0.125, 0.5, 0.5]]
    params = [("budget", 2), ("recent_window", 0), ("granularity", QUERY_HEAD), ("adaptive", 1),
              ("safeguard_permille", 0)]
    log = run("h2o", params, [prefill(3, h0 + h1)], 2)
    # Pairs by (score, position, set): (2, 0.25, s0), (0, 0.5, s1), (2, 0.5, s1), ...: two go.
    assert [s.victims for s in log.steps[0].sets] == [[2], [0]]


def test_shared_budget_prefill_protect_newest():
    params = [("budget", 2), ("recent_window", 0), ("granularity", QUERY_HEAD), ("adaptive", 1),
              ("safeguard_permille", 0), ("protect_newest", 1)]
    rows = [[0.25, 0.5, 0.125], [0.5, 0.25, 0.0625]]  # head 0, head 1: the last query's rows
    log = run("tova", params, [prefill(3, rows)], 2)
    # Candidates leave out position 2 in both sets: (1, 0.25, s1), (0, 0.25, s0) ... -> 0 of s0, 1 of s1.
    assert [s.victims for s in log.steps[0].sets] == [[0], [1]]


# -- The wire: +infinity in a cut ----------------------------------------------

def test_infinite_cut_scores_serialise():
    log = run("snapkv", SNAP + [("budget", 3)], [prefill(5, SNAP_ROWS)])
    out = kpb.EvictionLog.FromString(to_proto_log(log, True).SerializeToString())
    assert [c.score for c in out.steps[0].cut] == [0.25, 0.75, 0.75, math.inf, math.inf]


def test_testee_reads_query_rows():
    sc = kpb.Scenario()
    st = sc.steps.add()
    st.admit = 3
    for row in CHUNK3:
        st.queries.add().weights.extend(row)
    req = cpb.Request(seq=1, case_id="t", scenario=sc, want_cut=True)
    req.policy.name = "h2o"
    for name, value in H2O:
        p = req.policy.parameters.add()
        p.name, p.value = name, value
    reply = handle_request(req).response
    assert reply.WhichOneof("result") == "log"
    assert list(reply.log.steps[0].victims) == [2]


# -- Readings where the spec is silent (README, "Readings") --------------------

def test_reading_window_outside_with_a_ratio_counts_n():
    # snapkv window_budget 1 with ratio_ppm: B comes from the set's kept
    # count after admission, n = 5 (spec/prefill.md#when-a-policy-evicts),
    # not from the prefix n - w = 3: B = floor(5 * 0.5) = 2, and
    # (5 - 2) - 2 = 1 prefix position goes (B from 3 would give 1 and evict 2).
    params = SNAP + [("window_budget", 1), ("ratio_ppm", 500000)]
    log = run("snapkv", params, [prefill(5, SNAP_ROWS)])
    assert victims(log) == [[1]]


def test_reading_a_second_prefill_step_gathers_after_evictions():
    # A prefill step later in the run: h2o, budget 3, recent_window 0. Step 0
    # (prefill 0..3, last row only; sums 0.5, 0.25, 0.125, 0.125) evicts 2:
    # 2 and 3 tie and the lower goes. Step 1 (prefill 4..5, rows of queries 4
    # and 5) is gathered at the kept positions 0, 1, 3 and the chunk.
    rows0 = [[0.5, 0.25, 0.125, 0.125]]
    rows1 = [[0.0, 0.0, 9.0, 0.5, 0.0], [0.0, 0.25, 9.0, 0.0, 0.0, 0.0]]
    log = run("h2o", [("budget", 3), ("recent_window", 0)], [prefill(4, rows0), prefill(2, rows1)])
    assert victims(log)[0] == [2]
    # Sums: 0 -> 0.5, 1 -> 0.25 + 0.25, 3 -> 0.125 + 0.5, 4 -> 0.0, 5 -> 0.0;
    # position 2's 9.0 is never read. n = 5, two go: 4 and 5.
    assert victims(log)[1] == [4, 5]
    assert log.steps[1].cut == [(4, 0.0), (5, 0.0), (0, 0.5), (1, 0.5), (3, 0.625)]
