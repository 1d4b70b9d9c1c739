"""Multi-head scenarios (spec/heads.md), worked by hand from the spec.

Steps are (admit, attention-or-None, heads): `heads` is the list of rows of
spec/heads.md#rows-per-head (empty when absent).
"""

import math

import pytest

from kvspec_port.errors import Refusal
from kvspec_port.harness import configure, run_scenario
from kvspec_port.heads import KV_HEAD, LAYER, MAX, MEAN, QUERY_HEAD, SUM, combine, sets_of
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request

import numpy as np


def run(name, params, steps, query_heads=None, kv_heads=None, trace=None, seed=0):
    return run_scenario(name, list(params), seed, list(steps), trace, query_heads, kv_heads)


def category(log):
    return log.rejection[:2] if log.rejection else None


def empty(h):
    """A first step's present rows: one empty row per head."""
    return [[] for _ in range(h)]


def set_victims(log, step):
    return [s.victims for s in log.steps[step].sets]


# -- Head counts (spec/heads.md#head-counts) -----------------------------------

@pytest.mark.parametrize(
    "hq, hkv, expected",
    [
        (0, None, ("INVALID_HEADS", -1)),      # 1. query_heads in [1, 1024]
        (1025, None, ("INVALID_HEADS", -1)),
        (None, 0, ("INVALID_HEADS", -1)),      # 2. kv_heads in [1, 1024]
        (1024, 1025, ("INVALID_HEADS", -1)),
        (4, 3, ("INVALID_HEADS", -1)),         # 3. kv_heads divides query_heads
        (None, 2, ("INVALID_HEADS", -1)),      # absent query_heads is 1: 2 does not divide 1
        (2, 4, ("INVALID_HEADS", -1)),         # so kv_heads <= query_heads
        (1, 1, None),                          # declared one: as before
        (1024, 1024, None),
        (1024, 1, None),
        (6, 3, None),
    ],
)
def test_head_counts(hq, hkv, expected):
    log = run("window", [("budget", 2)], [(3, None, [])], hq, hkv)
    assert category(log) == expected
    if expected:
        assert log.steps == []
    else:
        assert [s.victims for s in log.steps] == [[0]] and log.steps[0].sets == []


def test_head_count_checks_in_order():
    # Every check is INVALID_HEADS; the message shows which one came first.
    log = run("window", [("budget", 2)], [], 0, 0)
    assert category(log) == ("INVALID_HEADS", -1) and "query_heads must be" in log.rejection[2]
    log = run("window", [("budget", 2)], [], 3, 0)
    assert "kv_heads must be in" in log.rejection[2]


def test_configuration_before_heads():
    log = run("window", [("budget", 0)], [(1, None, [])], 0)
    assert category(log) == ("INVALID_PARAMETER", -1)


def test_trace_and_steps_before_heads():
    log = run("window", [("budget", 2)], [(1, None, [])], 0, trace=kpb.TraceConfig(steps=3))
    assert category(log) == ("INVALID_TRACE", -1)


def test_heads_before_trace_parameters():
    # An empty TraceConfig is INVALID_TRACE (no steps), but the heads come first.
    log = run("window", [("budget", 2)], [], 0, trace=kpb.TraceConfig())
    assert category(log) == ("INVALID_HEADS", -1)
    log = run("window", [("budget", 2)], [], 3, 2, trace=kpb.TraceConfig())
    assert category(log) == ("INVALID_HEADS", -1)
    # Valid head counts, several heads included: the trace's parameters next.
    log = run("window", [("budget", 2)], [], 1, 1, trace=kpb.TraceConfig())
    assert category(log) == ("INVALID_TRACE", -1)
    log = run("window", [("budget", 2)], [], 2, trace=kpb.TraceConfig())
    assert category(log) == ("INVALID_TRACE", -1)


@pytest.mark.parametrize("hq, hkv", [(2, None), (2, 2), (2, 1), (1, 1), (4, 2)])
def test_trace_may_have_several_heads(hq, hkv):
    # Spec 0.5.0 (spec/trace.md#several-heads): no longer INVALID_HEADS.
    log = run("h2o", [("budget", 4), ("recent_window", 1)], [], hq, hkv, trace=kpb.TraceConfig(steps=6))
    assert log.rejection is None and len(log.steps) == 6


def test_neither_steps_nor_trace_still_checks_heads():
    assert category(run("window", [("budget", 2)], [], 3, 2)) == ("INVALID_HEADS", -1)
    log = run("window", [("budget", 2)], [], 4, 2)
    assert log.steps == [] and log.rejection is None


# -- Rows per head (spec/heads.md#rows-per-head) -------------------------------

@pytest.mark.parametrize(
    "step1, expected",
    [
        ((1, None, []), None),                                   # null for every head
        ((1, [0.5, 0.5], []), ("ATTENTION_LENGTH", 1)),          # attention with two heads
        ((1, [0.5, 0.5], [[0.5, 0.5], [0.5, 0.5]]), ("ATTENTION_LENGTH", 1)),  # both fields
        ((1, None, [[0.5, 0.5]]), ("ATTENTION_LENGTH", 1)),      # one row short
        ((1, None, [[0.5, 0.5]] * 3), ("ATTENTION_LENGTH", 1)),  # one row too many
        ((1, None, [[0.5, 0.5], [0.5]]), ("ATTENTION_LENGTH", 1)),  # head 1 short
        ((1, None, [[0.5, 0.5], [0.5, 0.5, 0.5]]), ("ATTENTION_LENGTH", 1)),
        ((1, None, [[0.5, 0.5], [0.5, -0.0]]), ("ATTENTION_VALUE", 1)),
        ((1, None, [[math.inf, 0.5], [0.5, 0.5]]), ("ATTENTION_VALUE", 1)),
        ((1, None, [[0.5, 0.5], [5e-45, 0.0]]), None),           # subnormal and +0.0 accepted
        # Every row's length before any weight: head 0's NaN, head 1 short.
        ((1, None, [[math.nan, 0.5], [0.5]]), ("ATTENTION_LENGTH", 1)),
        # A step that admits nothing before its rows.
        ((0, None, [[0.5]]), ("POSITION", 1)),
    ],
)
@pytest.mark.parametrize("policy", [("window", [("budget", 4)]), ("h2o", [("budget", 4), ("recent_window", 1)])])
def test_two_head_rows(policy, step1, expected):
    log = run(*policy, [(2, None, empty(2)), step1], 2)
    assert category(log) == expected
    assert len(log.steps) == (expected[1] if expected else 2)


def test_value_message_names_head_and_index():
    log = run("window", [("budget", 4)], [(2, None, empty(3)), (1, None, [[0.5, 0.5], [0.5, 0.5], [0.5, -1.0]])], 3)
    assert category(log) == ("ATTENTION_VALUE", 1)
    assert "head 2" in log.rejection[2] and "weight 1" in log.rejection[2]


@pytest.mark.parametrize(
    "step1, expected",
    [
        ((1, None, [[0.5, 0.5]]), ("ATTENTION_LENGTH", 1)),  # heads field with one head
        ((1, [0.5, 0.5], [[0.5, 0.5]]), ("ATTENTION_LENGTH", 1)),
        ((1, [0.5, 0.5], []), None),
    ],
)
def test_one_head_rows(step1, expected):
    log = run("tova", [("budget", 4), ("recent_window", 1)], [(2, [], []), step1], 1, 1)
    assert category(log) == expected


def test_steps_checked_in_sequence():
    # Step 1 is whole; step 2's fault is reported, with the steps before it logged.
    steps = [(2, None, empty(2)), (1, None, [[0.5, 0.25], [0.125, 0.75]]),
             (1, None, [[0.5, 0.25, 0.5], [0.5, math.nan, 0.5]]), (0, None, [])]
    log = run("h2o", [("budget", 2), ("recent_window", 1)], steps, 2, 2)
    assert category(log) == ("ATTENTION_VALUE", 2)
    assert len(log.steps) == 2 and set_victims(log, 1) == [[1], [0]]


def test_value_checked_at_positions_no_set_keeps():
    # Both sets evict 1 at step 1; its weight at step 2 is still checked.
    steps = [(2, None, empty(2)), (1, None, [[0.5, 0.25], [0.5, 0.25]]),
             (1, None, [[0.5, 0.25, 0.5], [0.5, -0.5, 0.5]])]
    log = run("h2o", [("budget", 2), ("recent_window", 1), ("granularity", QUERY_HEAD)], steps, 2)
    assert set_victims(log, 1) == [[1], [1]]
    assert category(log) == ("ATTENTION_VALUE", 2)


# -- Parameters (spec/heads.md#parameters) -------------------------------------

@pytest.mark.parametrize("name", ["h2o", "tova", "snapkv"])
def test_defaults_and_order(name):
    cls, values = configure(name, [])
    assert values["granularity"] == KV_HEAD and values["aggregation"] == MEAN
    assert values["adaptive"] == 0 and values["safeguard_permille"] == 200
    names = [p[0] for p in cls.PARAMS]
    # spec/heads.md#parameters: after the policy's own parameters; since spec
    # 0.6.0 the prefill parameters follow them (spec/prefill.md#when-a-policy-evicts).
    i = names.index("granularity")
    assert names[i:i + 6] == ["granularity", "aggregation", "adaptive", "safeguard_permille",
                              "prefill_only", "ratio_ppm"]


@pytest.mark.parametrize(
    "name, params, names_in_message",
    [
        ("h2o", [("granularity", 3)], "granularity"),
        ("h2o", [("aggregation", -1)], "aggregation"),
        ("tova", [("aggregation", 3)], "aggregation"),
        ("snapkv", [("granularity", -1)], "granularity"),
        # Range-checked after the policy's own parameters, before relations.
        ("h2o", [("granularity", 3), ("budget", 0)], "budget"),
        ("snapkv", [("aggregation", 9), ("pool_kernel", 65536)], "pool_kernel"),
        ("snapkv", [("aggregation", 9), ("pool_kernel", 4)], "aggregation"),
        ("tova", [("granularity", 7), ("budget", 2), ("recent_window", 2)], "granularity"),
    ],
)
def test_parameter_ranges(name, params, names_in_message):
    with pytest.raises(Refusal) as e:
        configure(name, params)
    assert e.value.category == "INVALID_PARAMETER"
    assert names_in_message in e.value.message


@pytest.mark.parametrize("name", ["full", "window", "streamingllm", "random"])
@pytest.mark.parametrize("param", ["granularity", "aggregation", "adaptive", "safeguard_permille"])
def test_policies_without_attention_refuse_them(name, param):
    log = run(name, [(param, 0)], [(1, None, empty(2))], 2)
    assert category(log) == ("INVALID_PARAMETER", -1)
    log = run(name, [(param, 1)], [(1, [], [])])
    assert category(log) == ("INVALID_PARAMETER", -1)


@pytest.mark.parametrize("value", [0, 1, 2])
def test_bounds_accepted(value):
    for param in ("granularity", "aggregation"):
        log = run("snapkv", [("budget", 2), ("recent_window", 1), (param, value)], [(3, None, empty(4))], 4)
        assert log.rejection is None


# -- Kept sets (spec/heads.md#kept-sets) ---------------------------------------

def test_sets_of():
    assert sets_of(LAYER, 4, 2) == [(0, 4)]
    assert sets_of(KV_HEAD, 6, 2) == [(0, 3), (3, 6)]  # consecutive heads, not h % kv_heads
    assert sets_of(KV_HEAD, 4, 4) == sets_of(QUERY_HEAD, 4, 4)
    assert sets_of(QUERY_HEAD, 3, 1) == [(0, 1), (1, 2), (2, 3)]
    for g in (LAYER, KV_HEAD, QUERY_HEAD):
        assert sets_of(g, 1, 1) == [(0, 1)]


# Four query heads, two KV heads (G = 2); budget 2, recent window 1. At step
# 1 positions 0, 1 are the candidates and each head's h2o sum is its row:
# heads 0 and 1 rank 1 lowest, heads 2 and 3 rank 0 lowest.
GQA_ROWS = [[0.5, 0.25], [0.5, 0.25], [0.25, 0.5], [0.25, 0.5]]
B2R1 = [("budget", 2), ("recent_window", 1)]


def gqa_log(granularity=None, aggregation=None, name="h2o"):
    params = list(B2R1) + ([("pool_kernel", 1)] if name == "snapkv" else [])
    if granularity is not None:
        params.append(("granularity", granularity))
    if aggregation is not None:
        params.append(("aggregation", aggregation))
    return run(name, params, [(2, None, empty(4)), (1, None, GQA_ROWS)], 4, 2)


@pytest.mark.parametrize("name", ["h2o", "tova", "snapkv"])
def test_granularity_decides(name):
    # kv_head (the default): set 0 covers heads 0, 1 and evicts 1; set 1
    # covers heads 2, 3 and evicts 0. Grouping h % kv_heads instead would
    # give means 0.375, 0.375 in both sets, and both would evict 0.
    for log in (gqa_log(name=name), gqa_log(KV_HEAD, name=name)):
        assert set_victims(log, 1) == [[1], [0]]
    # layer: one set, mean 0.375 for both candidates; the tie evicts 0. One
    # set: the step's own fields, no `sets`.
    log = gqa_log(LAYER, name=name)
    assert [s.victims for s in log.steps] == [[], [0]]
    assert all(s.sets == [] for s in log.steps)
    assert log.steps[1].cut == [(0, 0.375), (1, 0.375)]
    # query_head: four sets, numbered by head.
    log = gqa_log(QUERY_HEAD, name=name)
    assert set_victims(log, 1) == [[1], [1], [0], [0]]


def test_set_records_and_numbering():
    log = gqa_log()
    for step, query, kept in ((0, 0, 2), (1, 2, 2)):
        rec = log.steps[step]
        # Several sets: the step's own fields are empty.
        assert (rec.victims, rec.kept_count, rec.query_cache_position, rec.cut) == ([], 0, 0, [])
        assert len(rec.sets) == 2
        for s in rec.sets:
            assert (s.kept_count, s.query_cache_position, s.sets) == (kept, query, [])
    # Every set logs every step, with empty victims when it evicts nothing.
    assert set_victims(log, 0) == [[], []]
    assert [s.cut for s in log.steps[1].sets] == [[(1, 0.25), (0, 0.5)], [(0, 0.25), (1, 0.5)]]


def test_each_head_records_its_row_at_its_sets_positions():
    # Two heads, query_head sets. Step 1: set 0 (head 0) evicts 1, set 1
    # (head 1) evicts 0; set 0 keeps 0, 2 with sums 0.5, 0; set 1 keeps 1, 2
    # with sums 0.75, 0.
    steps = [(2, None, empty(2)), (1, None, [[0.5, 0.25], [0.125, 0.75]]),
             (1, None, [[0.0625, 1.0, 0.25], [1.0, 0.03125, 0.5]])]
    log = run("h2o", B2R1 + [("granularity", QUERY_HEAD)], steps, 2)
    assert set_victims(log, 1) == [[1], [0]]
    # Step 2: head 0 records (0.0625, 0.25) at 0, 2 -> sums 0.5625, 0.25;
    # head 1 records (0.03125, 0.5) at 1, 2 -> sums 0.78125, 0.5.
    assert set_victims(log, 2) == [[2], [2]]
    assert [s.cut for s in log.steps[2].sets] == [[(2, 0.25), (0, 0.5625)], [(2, 0.5), (1, 0.78125)]]
    assert [s.query_cache_position for s in log.steps[2].sets] == [2, 2]


@pytest.mark.parametrize("name, params", [
    ("full", []), ("window", [("budget", 2)]), ("streamingllm", [("budget", 2), ("sinks", 1)]),
    ("random", [("budget", 2), ("recent_window", 0)]),
])
def test_policies_without_attention_keep_one_set(name, params):
    steps = [(2, None, empty(4)), (1, None, GQA_ROWS), (1, None, []), (2, None, [])]
    multi = run(name, params, steps, 4, 2, seed=42)
    single = run(name, params, [(2, [], []), (1, [0.5, 0.25], []), (1, None, []), (2, None, [])], seed=42)
    assert multi.rejection is None
    assert multi.steps == single.steps  # same victims, counts, no cut, no sets


def test_null_attention_for_every_head():
    # A null step records nothing for any head: tova keeps the latest
    # weights 0.5, 0.25 of positions 0, 1, and the unobserved 2 (+0.0) goes.
    # (A row of zeros would leave every candidate at 0 and evict 0.)
    steps = [(2, None, empty(2)), (1, None, [[0.5, 0.25], [0.5, 0.25]]), (1, None, [])]
    log = run("tova", [("budget", 3), ("recent_window", 1)], steps, 2, 2)
    assert set_victims(log, 2) == [[2], [2]]
    assert log.steps[2].sets[0].cut == [(2, 0.0), (1, 0.25), (0, 0.5)]


# -- Combining heads (spec/heads.md#combining-heads-at-ranking-time) -----------

# Two heads, one set (kv_heads 1); budget 3, recent window 1. Candidates
# 0, 1, 2 with h2o sums (0.5, 0, 0.25) for head 0 and (0, 0.375, 0.25) for head 1.
COMBINE_STEPS = [(3, None, empty(2)), (1, None, [[0.5, 0.0, 0.25], [0.0, 0.375, 0.25]])]
B3R1 = [("budget", 3), ("recent_window", 1)]


@pytest.mark.parametrize(
    "aggregation, victim, cut",
    [
        (MEAN, [1], [(1, 0.1875), (0, 0.25), (2, 0.25)]),
        (MAX, [2], [(2, 0.25), (1, 0.375), (0, 0.5)]),
        (SUM, [1], [(1, 0.375), (0, 0.5), (2, 0.5)]),
    ],
)
@pytest.mark.parametrize("granularity", [LAYER, KV_HEAD])
def test_aggregation_decides(aggregation, victim, cut, granularity):
    params = B3R1 + [("aggregation", aggregation), ("granularity", granularity)]
    log = run("h2o", params, COMBINE_STEPS, 2, 1)
    assert log.steps[1].victims == victim
    assert log.steps[1].cut == cut
    assert log.steps[1].sets == []


def test_tova_aggregation():
    params = B3R1 + [("aggregation", MAX)]
    log = run("tova", params, COMBINE_STEPS, 2)
    assert log.steps[1].victims == [2]


# Three heads, one set; budget 2, recent window 1. Sums 3 + 2^-50 (position
# 0) and 3 + 2^-51 (position 1): different sums, but both divide by 3 to
# 1 + 2^-52 ((3 + 2^-51) / 3 = 1 + (2/3) 2^-52 and (3 + 2^-50) / 3 =
# 1 + (4/3) 2^-52 both round there). The mean ties and evicts the lower
# position, 0; the sum evicts the smaller, 1; max (3 for both) ties.
T50, T51 = 2.0 ** -50, 2.0 ** -51
TIE_STEPS = [(2, None, empty(3)), (1, None, [[3.0, 3.0], [T50, T51], [0.0, 0.0]])]


@pytest.mark.parametrize(
    "aggregation, victim, cut",
    [
        (MEAN, [0], [(0, 1.0 + 2.0 ** -52), (1, 1.0 + 2.0 ** -52)]),
        (SUM, [1], [(1, 3.0 + T51), (0, 3.0 + T50)]),
        (MAX, [0], [(0, 3.0), (1, 3.0)]),
    ],
)
def test_mean_rounding_ties(aggregation, victim, cut):
    log = run("h2o", [("budget", 2), ("recent_window", 1), ("aggregation", aggregation)], TIE_STEPS, 3)
    assert log.steps[1].victims == victim
    assert log.steps[1].cut == cut


def test_mean_is_one_division_of_the_sum():
    # ((0.1 + 0.2) + 0.3) / 3 = 0.20000000000000004 in binary64; the sum of
    # the x / 3 would be 0.2.
    xs = [np.array([0.1]), np.array([0.2]), np.array([0.3])]
    assert combine(xs, MEAN)[0] == ((0.0 + 0.1 + 0.2) + 0.3) / 3
    assert combine(xs, MEAN)[0] != 0.1 / 3 + 0.2 / 3 + 0.3 / 3
    assert combine(xs, SUM)[0] == (0.1 + 0.2) + 0.3
    assert combine(xs, MAX)[0] == 0.3


def test_ascending_head_order():
    # Binary64 addition is not associative: 2^53 + 1 + 1 from head 0 up
    # rounds each +1 away; 1 + 1 + 2^53 keeps them.
    big = 2.0 ** 53
    assert combine([np.array([big]), np.array([1.0]), np.array([1.0])], SUM)[0] == big
    assert combine([np.array([1.0]), np.array([1.0]), np.array([big])], SUM)[0] == big + 2


def test_one_head_combines_to_itself():
    x = np.array([0.1, 0.0, 5e-324])
    for agg in (MEAN, MAX, SUM):
        assert combine([x], agg).tolist() == x.tolist()


def test_snapkv_scores_then_combine():
    # Two heads, one set; obs_window 1, pool_kernel 3, budget 3, recent
    # window 1. Head 0's sums (1, 0, 0.5, new 0) pool to (1, 1, 0.5, 0.5);
    # head 1's (0, 0.5, 0.5, 0) to (0.5, 0.5, 0.5, 0.5). Mean: 0.75, 0.75,
    # 0.5 for candidates 0, 1, 2, and 2 goes. Pooling the mean row
    # (0.5, 0.25, 0.5, 0) instead would give 0.5 everywhere and evict 0.
    params = [("budget", 3), ("recent_window", 1), ("obs_window", 1), ("pool_kernel", 3)]
    steps = [(3, None, empty(2)), (1, None, [[1.0, 0.0, 0.5], [0.0, 0.5, 0.5]])]
    log = run("snapkv", params, steps, 2)
    assert log.steps[1].victims == [2]
    assert log.steps[1].cut == [(2, 0.5), (0, 0.75), (1, 0.75)]


def test_snapkv_rings_per_head_and_null_attention():
    # query_head sets: each head's ring (obs_window 2) holds its own rows; a
    # null step moves no ring. Pool 1, budget 3, recent window 1.
    params = [("budget", 3), ("recent_window", 1), ("obs_window", 2), ("pool_kernel", 1),
              ("granularity", QUERY_HEAD)]
    steps = [(1, None, empty(2)),
             (1, None, [[0.5], [0.125]]),
             (1, None, []),
             (1, None, [[0.25, 0.5, 0.75], [0.5, 0.25, 0.125]]),
             (1, None, [[0.25, 9.0, 0.25, 0.25], [0.25, 0.25, 9.0, 0.25]])]
    log = run("snapkv", params, steps, 2)
    # Step 3: head 0 ring sums 0.5+0.25, 0.5, 0.75, new 0 -> evicts 1;
    # head 1: 0.125+0.5, 0.25, 0.125 -> evicts 2.
    assert set_victims(log, 3) == [[1], [2]]
    # Step 4 writes ring index 1 (overwriting step 1's weights), each head
    # at its own set's kept positions (the 9.0s are at positions the set no
    # longer keeps). Head 0 keeps 0, 2, 3: rings (0.25, 0.25), (0.75, 0.25),
    # (0, 0.25) sum to 0.5, 1.0, 0.25, and 3 goes.
    assert log.steps[4].sets[0].cut == [(3, 0.25), (0, 0.5), (2, 1.0)]
    # Head 1 keeps 0, 1, 3: rings (0.5, 0.25), (0.25, 0.25), (0, 0.25).
    assert log.steps[4].sets[1].cut == [(3, 0.25), (1, 0.5), (0, 0.75)]
    assert set_victims(log, 4) == [[3], [3]]


# -- The eviction log on the wire (spec/heads.md#the-eviction-log) -------------

def test_wire_sets():
    scenario = kpb.Scenario(
        steps=[kpb.Step(admit=2, heads=[kpb.AttentionRow()] * 4),
               kpb.Step(admit=1, heads=[kpb.AttentionRow(weights=r) for r in GQA_ROWS])],
        query_heads=4, kv_heads=2)
    policy = kpb.PolicyConfig(name="h2o", parameters=[kpb.Parameter(name=n, value=v) for n, v in B2R1])
    reply = handle_request(cpb.Request(seq=1, scenario=scenario, policy=policy, want_cut=True)).response
    log = reply.log
    assert not log.HasField("rejection")
    step = log.steps[1]
    assert list(step.victims) == [] and step.kept_count == 0 and len(step.cut) == 0
    assert [list(s.victims) for s in step.sets] == [[1], [0]]
    assert [(s.kept_count, s.query_cache_position) for s in step.sets] == [(2, 2), (2, 2)]
    assert [[c.position for c in s.cut] for s in step.sets] == [[1, 0], [0, 1]]
    assert all(len(s.sets) == 0 for s in step.sets)


def test_wire_absent_and_declared_counts():
    for fields in ({}, {"query_heads": 1, "kv_heads": 1}, {"query_heads": 0}):
        scenario = kpb.Scenario(steps=[kpb.Step(admit=3)], **fields)
        policy = kpb.PolicyConfig(name="window", parameters=[kpb.Parameter(name="budget", value=2)])
        log = handle_request(cpb.Request(seq=1, scenario=scenario, policy=policy)).response.log
        if fields.get("query_heads") == 0:
            assert (log.rejection.category, log.rejection.step) == (kpb.INVALID_HEADS, -1)
        else:
            assert [list(s.victims) for s in log.steps] == [[0]]
