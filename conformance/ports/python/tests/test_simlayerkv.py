"""The policy `simlayerkv`, kvpress's SimLayerKVPress
(spec/policies/simlayerkv.md, spec 0.20.0): one layer's lazy-or-not
decision at each prefill step.

Every expected number below is worked by hand from the card's text (its
pseudocode, rules and worked examples), not read from the port's output.
Steps are (admit, attention-or-None, heads, queries): `queries` holds the
query rows, head 0's m rows first, each head's in ascending query
position; query q's row has q + 1 weights (spec/prefill.md#query-rows).
"""

import pytest

from kvspec_port import FEATURES
from kvspec_port.errors import INVALID_PARAMETER, Refusal
from kvspec_port.harness import configure, make_policy, run_scenario
from kvspec_port.policies import REGISTRY
from kvspec_port.policies.simlayerkv import SimLayerKvPolicy, lazy_score
from kvspec_port.proto import kvspec_pb2 as kpb


def run(params, steps, query_heads=None, kv_heads=None, trace=None):
    return run_scenario("simlayerkv", list(params), 0, list(steps), trace, query_heads, kv_heads)


def victims(log):
    assert log.rejection is None, log.rejection
    return [s.victims for s in log.steps]


def subject(params):
    with pytest.raises(Refusal) as e:
        configure("simlayerkv", list(params))
    assert e.value.category == INVALID_PARAMETER
    return " ".join((e.value.subject.check,) + e.value.subject.names)


def refused(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None, log.steps
    category, index, _message, subject_ = log.rejection
    return category, index, " ".join((subject_.check,) + subject_.names)


def params(n_initial, n_recent, n_last, ppm):
    return [("n_initial", n_initial), ("n_recent", n_recent), ("n_last", n_last), ("lazy_threshold_ppm", ppm)]


# -- The first worked example (one head, n_initial 1, n_recent 2, n_last 1) --

# The row of query 5 over positions 0 .. 5.
ROW5 = [0.25, 0.0625, 0.0625, 0.125, 0.25, 0.25]


def example1(ppm):
    return run(params(1, 2, 1, ppm), [(6, None, [], [ROW5])])


def test_worked_example_lazy():
    # n = 6 > 1 + 2 + 1: judged. Prefix slots 0 .. 4; a[i] the row's weight.
    # initial = 0.25, recent = slots 3, 4 = 0.125 + 0.25 = 0.375, score
    # 0.625 > 0.5: lazy; slots 1 .. 6 - (2 - 1) - 1 = 4 go, 0 and 5 stay
    # (vector simlayerkv/basic/lazy).
    log = example1(500000)
    assert victims(log) == [[1, 2, 3, 4]]
    assert log.steps[0].kept_count == 2 and log.steps[0].query_cache_position == 0
    # No position is ranked: no cut.
    assert log.steps[0].cut == []


def test_worked_example_score():
    # The score itself, 0.25 + 0.375, exact in binary64.
    assert lazy_score(6, 1, 2, 1, [[ROW5]]) == 0.625


def test_worked_example_equal_is_not_lazy():
    # Threshold 625000 / 10^6 = 0.625 = the score: not strictly above
    # (vector simlayerkv/basic/equal-is-not-lazy).
    assert victims(example1(625000)) == [[]]
    # Just below it the layer is lazy, just above it not.
    assert victims(example1(624999)) == [[1, 2, 3, 4]]
    assert victims(example1(625001)) == [[]]


def test_worked_example_threshold_one_never():
    # 1000000 (kvpress's 1.0) never compresses (vector
    # simlayerkv/basic/threshold-one-never).
    assert victims(example1(1000000)) == [[]]


def test_threshold_one_never_even_above_one():
    # Weights need not sum to 1: initial 1.0, recent 1.0 + 1.0, score 3.0 >
    # 1.0, and still nothing goes at 1000000; at 999999 the layer is lazy.
    row = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    assert victims(run(params(1, 2, 1, 1000000), [(6, None, [], [row])])) == [[]]
    assert victims(run(params(1, 2, 1, 999999), [(6, None, [], [row])])) == [[1, 2, 3, 4]]


def test_the_newest_is_not_read():
    # The last n_last slots are not in the prefix: query 5's weight on
    # itself (slot 5) does not count. Here only it is high: initial 0,
    # recent slots 3, 4 = 0, score 0, not above 0.
    row = [0.0, 0.5, 0.5, 0.0, 0.0, 1.0]
    assert victims(run(params(1, 2, 1, 0), [(6, None, [], [row])])) == [[]]


# -- The second worked example (two query heads, n_last 2) --------------------

# Queries 6 (7 weights) and 7 (8 weights); the prefix is slots 0 .. 5, the
# rest of each row (slots 6, 7) is not read: it is set high here, so that
# reading it would change the score.
HEAD0 = [[0.5, 0, 0, 0, 0, 0, 1.0], [0.25, 0, 0, 0, 0, 0.25, 1.0, 1.0]]
HEAD1 = [[0, 0.125, 0.125, 0.25, 0, 0, 1.0], [0, 0, 0.5, 0, 0, 0, 1.0, 1.0]]


def example2(ppm, query_heads=2, kv_heads=1):
    return run(params(1, 3, 2, ppm), [(8, None, [], HEAD0 + HEAD1)], query_heads, kv_heads)


def test_two_heads_score():
    # Sums over both heads' two rows: 0.75, 0.125, 0.625, 0.25, 0, 0.25;
    # divided by 4: a = (0.1875, 0.03125, 0.15625, 0.0625, 0, 0.0625);
    # initial 0.1875, recent slots 6 - 3 .. 5 = 0.0625 + 0 + 0.0625 = 0.125;
    # score 0.3125.
    assert lazy_score(8, 1, 3, 2, [HEAD0, HEAD1]) == 0.3125


def test_two_heads_not_lazy_at_half():
    # 0.3125 <= 0.5 (vector simlayerkv/heads/not-lazy).
    assert victims(example2(500000)) == [[]]


def test_two_heads_lazy():
    # 0.3125 > 0.3: slots 1 .. 8 - (3 - 2) - 1 = 6 go, 0 and 7 stay
    # (vector simlayerkv/heads/lazy), though head 1 paid slot 2 the most of
    # any slot in the middle. One kept set: the log has no sets.
    log = example2(300000)
    assert victims(log) == [[1, 2, 3, 4, 5, 6]]
    assert log.steps[0].sets == [] and log.steps[0].kept_count == 2


def test_two_heads_kv_heads_play_no_part():
    # kv_heads 2 (it only has to divide query_heads): the same decision.
    assert victims(example2(300000, kv_heads=2)) == [[1, 2, 3, 4, 5, 6]]
    assert victims(example2(500000, kv_heads=2)) == [[]]


def test_two_heads_threshold_edges():
    # 0.3125 = 312500 / 10^6: equal is not lazy; one ppm below is.
    assert victims(example2(312500)) == [[]]
    assert victims(example2(312499)) == [[1, 2, 3, 4, 5, 6]]


def test_every_head_weighted_alike():
    # Head 0 alone (one head, the same two rows): sums 0.75, 0, 0, 0, 0,
    # 0.25, over 2: initial 0.375, recent slots 3 .. 5 = 0 + 0 + 0.125,
    # score 0.5. Head 1 alone: sums 0, 0.125, 0.625, 0.25, 0, 0; initial 0,
    # recent 0.125 + 0 + 0 = 0.125. Both: the mean, 0.3125.
    assert lazy_score(8, 1, 3, 2, [HEAD0]) == 0.5
    assert lazy_score(8, 1, 3, 2, [HEAD1]) == 0.125


# -- Short caches are not judged ---------------------------------------------

def test_short_cache_not_judged():
    # n_initial 1, n_recent 2, n_last 1, threshold 0: 4 <= 1 + 2 + 1 keeps
    # everything whatever the score (vector simlayerkv/basic/short-not-judged).
    row = [0.25, 0.25, 0.25, 0.25]
    assert victims(run(params(1, 2, 1, 0), [(4, None, [], [row])])) == [[]]


def test_one_past_short_is_judged():
    # 5 > 4: judged. Prefix slots 0 .. 3; initial 0.25, recent slots 2, 3 =
    # 0.5; score 0.75 > 0: lazy, slots 1 .. 5 - 1 - 1 = 3 go, 0 and 4 stay
    # (vector simlayerkv/basic/one-past-short).
    row = [0.25, 0.25, 0.25, 0.25, 0.0]
    assert victims(run(params(1, 2, 1, 0), [(5, None, [], [row])])) == [[1, 2, 3]]


def test_zero_score_at_threshold_zero_is_not_lazy():
    # Weight only in the middle (slot 1) and on the newest: initial 0,
    # recent slots 2, 3 = 0; score 0, not above 0.
    row = [0.0, 0.5, 0.0, 0.0, 0.5]
    assert victims(run(params(1, 2, 1, 0), [(5, None, [], [row])])) == [[]]


def test_n_initial_zero():
    # n_initial 0: no initial region; n = 4 > 0 + 2 + 1. Prefix slots 0 .. 2,
    # recent slots 1, 2 = 0.25 + 0.25 = 0.5 > 0.25: lazy; slots 0 .. 4 - 1 - 1
    # = 2 go, only position 3 stays.
    row = [1.0, 0.25, 0.25, 0.0]
    assert victims(run(params(0, 2, 1, 250000), [(4, None, [], [row])])) == [[0, 1, 2]]
    # Slot 0's weight is in no region: 1.0 there alone scores 0.
    row = [1.0, 0.0, 0.0, 0.0]
    assert victims(run(params(0, 2, 1, 0), [(4, None, [], [row])])) == [[]]


# -- Fewer rows than n_last, and more -----------------------------------------

# n_initial 1, n_recent 4, n_last 3; a prefill of 10 positions with the rows
# of queries 8 and 9 only (m = 2 < 3): w = 2, the prefix is still slots
# 0 .. 10 - 3 - 1 = 6, the recent region slots 7 - 4 .. 6 = 3 .. 6.
FEW = [
    [0.5, 0, 0, 0.25, 0, 0, 0, 0, 0],
    [0.5, 0, 0, 0.25, 0, 0, 0, 0, 0, 0],
]


def test_fewer_rows_than_n_last():
    # a[0] = 1.0 / 2 = 0.5, a[3] = 0.5 / 2 = 0.25: score 0.75 > 0.6, lazy.
    # (Divided by n_last, 3: 0.5; with the prefix n - w = 8, the recent
    # region 4 .. 7: 0.5; neither lazy.) The kept region still uses n_last:
    # slots 1 .. 10 - (4 - 3) - 1 = 8 go, 0 and 9 stay.
    assert lazy_score(10, 1, 4, 3, [FEW]) == 0.75
    assert victims(run(params(1, 4, 3, 600000), [(10, None, [], FEW)])) == [[1, 2, 3, 4, 5, 6, 7, 8]]
    assert victims(run(params(1, 4, 3, 750000), [(10, None, [], FEW)])) == [[]]


def test_only_the_last_n_last_rows_are_read():
    # n_last 1, three rows (queries 3, 4, 5): only query 5's is read.
    # Its prefix: initial 0.125, recent slots 3, 4 = 0: score 0.125 <= 0.5.
    # (The mean of all three rows, (1 + 1 + 0.125) / 3, would be lazy.)
    rows = [[1.0, 0, 0, 0], [1.0, 0, 0, 0, 0], [0.125, 0, 0, 0, 0, 0]]
    assert victims(run(params(1, 2, 1, 500000), [(6, None, [], rows)])) == [[]]
    assert victims(run(params(1, 2, 1, 100000), [(6, None, [], rows)])) == [[1, 2, 3, 4]]


# -- Decode steps, several prefill steps, traces --------------------------------

def test_decode_steps_never_evict():
    # Threshold 0 and a cache far past the short rule: a decode step (no
    # query rows) admits and evicts nothing, with a row or null attention.
    steps = [(1, None)] + [(1, [1.0] * t) for t in range(1, 12)] + [(1, None), (3, None)]
    log = run(params(1, 2, 1, 0), steps)
    assert victims(log) == [[]] * len(steps)
    assert log.steps[-1].kept_count == 16


def test_decode_steps_with_heads_never_evict():
    steps = [(1, None, [])] + [(1, None, [[1.0] * t, [0.5] * t]) for t in range(1, 8)]
    assert victims(run(params(1, 2, 1, 0), steps, query_heads=2)) == [[]] * 8


def test_decode_after_a_lazy_prefill():
    # The lazy prefill keeps 0 and 5; the decode steps after it keep
    # everything they admit (a scenario's row has one weight per position
    # admitted before, evicted ones included).
    log = run(params(1, 2, 1, 500000), [(6, None, [], [ROW5]), (1, [1.0] * 6), (1, [0.5] * 7)])
    assert victims(log) == [[1, 2, 3, 4], [], []]
    assert [s.kept_count for s in log.steps] == [2, 3, 4]


def test_trace_never_evicts():
    # A generated trace has decode steps only.
    log = run(params(0, 2, 1, 0), [], trace=kpb.TraceConfig(steps=12))
    assert victims(log) == [[]] * 12
    log = run(params(0, 2, 1, 0), [], query_heads=2, trace=kpb.TraceConfig(steps=12))
    assert victims(log) == [[]] * 12


def test_each_prefill_step_judged_on_its_kept_set():
    # The first prefill step (the worked example) keeps 0 and 5. The
    # second admits 6 .. 9 with query 9's row (10 weights), gathered at the
    # kept positions 0, 5, 6, 7, 8, 9: n = 6 > 4, prefix slots 0 .. 4
    # (positions 0, 5, 6, 7, 8), recent slots 3, 4 (positions 7, 8).
    # initial 0.25, recent 0.125 + 0.125: score 0.5 > 0.4, lazy; slots
    # 1 .. 4 go: positions 5, 6, 7, 8. (The evicted positions' weights,
    # 1 .. 4, are not read.)
    row9 = [0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.125, 0.125, 0.5]
    log = run(params(1, 2, 1, 400000), [(6, None, [], [ROW5]), (4, None, [], [row9])])
    assert victims(log) == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert log.steps[1].query_cache_position == 2 and log.steps[1].kept_count == 2


def test_chunked_prompt_short_chunks_judged_on_the_whole_kept_set():
    # Two chunks of 3: the first (n = 3 <= 4) is not judged; the second
    # sees n = 6 and is the worked example's step: lazy at 0.5.
    first = [[0.5, 0.25, 0.25]]
    log = run(params(1, 2, 1, 500000), [(3, None, [], first), (3, None, [], [ROW5])])
    assert victims(log) == [[], [1, 2, 3, 4]]


def test_direct_call():
    # Policy.step with one head's query rows: the worked example.
    policy = make_policy("simlayerkv", params(1, 2, 1, 500000))
    out = policy.step(0, 6, None, queries=[ROW5])
    assert out.victims == [1, 2, 3, 4] and policy.kept == [0, 5]
    # A decode step: nothing goes.
    assert policy.step(6, 1, [1.0, 1.0]).victims == [] and policy.kept == [0, 5, 6]
    # spec/harness.md#refusals, called directly: a position not above every
    # one admitted before (6) is refused, `rule admit`.
    with pytest.raises(Refusal) as e:
        policy.step(6, 1, [1.0, 1.0, 1.0])
    assert e.value.category == "POSITION" and e.value.subject.check == "rule"
    # Fewer rows than n_last through the direct call: n_initial 1, n_recent
    # 3, n_last 2, one row (query 7's): n = 8 > 6, prefix slots 0 .. 5, w = 1;
    # initial 0.5, recent slots 3 .. 5 0.125 + 0.125 + 0.25: score 1.0 > 0.75
    # (divided by n_last, 0.5); slots 1 .. 8 - 1 - 1 = 6 go.
    policy = make_policy("simlayerkv", params(1, 3, 2, 750000))
    out = policy.step(0, 8, None, queries=[[0.5, 0, 0, 0.125, 0.125, 0.25, 1.0, 1.0]])
    assert out.victims == [1, 2, 3, 4, 5, 6] and policy.kept == [0, 7]


# -- The registry, the parameters and the rule --------------------------------

def test_registered_last_no_feature():
    # spec/README.md#policies: after lagkv; spec 0.20.0 adds no feature.
    assert list(REGISTRY)[-2:] == ["lagkv", "simlayerkv"]
    assert REGISTRY["simlayerkv"] is SimLayerKvPolicy
    assert FEATURES[-1] == "pyramid"
    # One kept set reading every query head's rows; no granularity.
    assert SimLayerKvPolicy.SUMS_HEADS and not SimLayerKvPolicy.READS_ATTENTION
    assert not SimLayerKvPolicy.READS_KEYS


def test_parameters_and_defaults():
    cls, values = configure("simlayerkv", [])
    assert cls is SimLayerKvPolicy
    assert values == {"n_initial": 4, "n_recent": 1024, "n_last": 1, "lazy_threshold_ppm": 1000000}
    assert [p[0] for p in cls.PARAMS] == ["n_initial", "n_recent", "n_last", "lazy_threshold_ppm"]


def test_defaults_never_compress():
    # lazy_threshold_ppm 1000000 by default: a long prompt with every weight
    # on the first and recent positions keeps everything.
    n = 1100
    row = [1.0] * n
    assert victims(run([], [(n, None, [], [row])])) == [[]]


def test_range_edges_accepted():
    configure("simlayerkv", [("n_initial", 0), ("lazy_threshold_ppm", 0)])
    # n_recent at least 2, n_last at most 2^32 - 2: the least and greatest
    # values the rule n_last < n_recent leaves.
    configure("simlayerkv", [("n_initial", 2**32 - 1), ("n_recent", 2**32 - 1), ("n_last", 2**32 - 2),
                             ("lazy_threshold_ppm", 1000000)])
    configure("simlayerkv", [("n_recent", 2), ("n_last", 1), ("lazy_threshold_ppm", 0)])


@pytest.mark.parametrize("given, expected", [
    ([("n_initial", -1)], "range n_initial"),
    ([("n_initial", 2**32)], "range n_initial"),
    ([("n_recent", 0)], "range n_recent"),
    ([("n_recent", 1)], "range n_recent"),
    ([("n_recent", 2**32)], "range n_recent"),
    ([("n_last", 0)], "range n_last"),
    ([("n_last", 2**32 - 1)], "range n_last"),
    ([("n_last", 2**32)], "range n_last"),
    ([("lazy_threshold_ppm", -1)], "range lazy_threshold_ppm"),
    ([("lazy_threshold_ppm", 1000001)], "range lazy_threshold_ppm"),
    # In the card's order: n_recent before n_last, ranges before the rule.
    ([("n_last", 0), ("n_recent", 0)], "range n_recent"),
    ([("lazy_threshold_ppm", 1000001), ("n_last", 5), ("n_recent", 5)], "range lazy_threshold_ppm"),
    # n_last 2^32 - 1 breaks the rule too (n_recent 2): its range first.
    ([("n_recent", 2), ("n_last", 2**32 - 1)], "range n_last"),
])
def test_range_refusals(given, expected):
    assert subject(given) == expected


@pytest.mark.parametrize("n_recent, n_last", [(2, 2), (2, 3), (1024, 1024), (1024, 5000),
                                              (2**32 - 2, 2**32 - 2)])
def test_rule_n_last_below_n_recent(n_recent, n_last):
    # n_last >= n_recent: INVALID_PARAMETER, `rule n_last n_recent` (vector
    # simlayerkv/refusal/last-not-below-recent).
    assert subject([("n_recent", n_recent), ("n_last", n_last)]) == "rule n_last n_recent"


def test_rule_with_defaults():
    # n_recent's default 1024: n_last 1024 is refused, 1023 accepted.
    assert subject([("n_last", 1024)]) == "rule n_last n_recent"
    configure("simlayerkv", [("n_last", 1023)])


def test_rule_refused_through_a_scenario():
    assert refused(run([("n_recent", 3), ("n_last", 3)], [(1, None)])) == (
        "INVALID_PARAMETER", -1, "rule n_last n_recent")


@pytest.mark.parametrize("name", ["budget", "granularity", "aggregation", "adaptive", "safeguard_permille",
                                  "prefill_only", "ratio_ppm", "spans", "span_window", "evict_at",
                                  "context_shift", "slack", "interval", "block", "sinks", "recent_window",
                                  "obs_window", "lazy_threshold", "pyramid"])
def test_unknown_parameters_refused(name):
    # No budget, no heads, prefill, span, trigger or block parameter.
    assert subject([(name, 1)]) == f"unknown {name}"


def test_unknown_before_range():
    # spec/harness.md#configuration: an unknown name before any range.
    assert subject([("n_last", 0), ("budget", 4)]) == "unknown budget"


# -- Checks still apply (spec/prefill.md#checks) -------------------------------

def test_query_rows_checked():
    # A query row of the wrong length: ATTENTION_LENGTH at step 0, whatever
    # the policy reads.
    assert refused(run(params(1, 2, 1, 0), [(6, None, [], [ROW5[:5]])]))[:2] == ("ATTENTION_LENGTH", 0)
    # A NaN in a row the policy would not read (the newest slot).
    row = ROW5[:5] + [float("nan")]
    assert refused(run(params(1, 2, 1, 0), [(6, None, [], [row])]))[:2] == ("ATTENTION_VALUE", 0)
