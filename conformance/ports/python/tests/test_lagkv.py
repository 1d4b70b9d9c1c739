"""Values in a scenario (spec/tensors.md, the feature `values` of spec 0.18.0)
and the policy `lagkv` (spec/policies/lagkv.md), worked by hand from the
spec: the card's six worked examples, its several-KV-heads, tie, decode and
prefill behaviour, its parameters, and every check of spec/tensors.md#checks
that values add, in its order.

Steps are (admit, attention-or-None, heads, queries, totals, total_rows,
keys, values): `keys` and `values` hold one list of admit x head_dim (admit
x value_dim) values per KV head, KV head 0 first, each position's vector in
channel order. The card quotes its figures truncated ("0.5848.."): `card`
checks a number against such a figure.
"""

import math

import pytest

from kvspec_port import FEATURES
from kvspec_port.elementary import exp
from kvspec_port.harness import configure, run_scenario
from kvspec_port.policies import REGISTRY
from kvspec_port.policies.lagkv import LagKvPolicy, head_scores, judge, ranks, softmax, spreads
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request


def run(name, params, steps=(), trace=None, query_heads=None, kv_heads=None, head_dim=None, value_dim=None):
    return run_scenario(name, list(params), 0, list(steps), trace, query_heads, kv_heads, head_dim, value_dim)


def step(admit, keys=(), values=(), row=None, heads=(), queries=(), totals=(), total_rows=0):
    """A step admitting `admit` positions with `keys` and `values` (each a
    list of per-KV-head lists)."""
    return (admit, row, list(heads), list(queries), list(totals), total_rows, [list(k) for k in keys],
            [list(v) for v in values])


def flat(*vectors):
    """One KV head's entries, position-major: flat((9, 9), (0, 1)) is [9, 9, 0, 1]."""
    return [float(x) for v in vectors for x in v]


def lag(params, keys, values, **kw):
    """lagkv over one step admitting every position, one KV head, d = e = 2."""
    return run("lagkv", params, [step(len(keys), [flat(*keys)], [flat(*values)])], head_dim=2, value_dim=2, **kw)


def refused(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None, log.steps
    category, index, _message, subject = log.rejection
    return category, index, " ".join((subject.check,) + subject.names)


def victims(log):
    return [s.victims for s in log.steps]


def cut(record):
    return [(p, s) for p, s in record.cut]


def card(x, figure):
    """`x` is the card's `figure`, truncated to its decimals (0.5848.. is in
    [0.5848, 0.5849))."""
    digits = len(repr(figure).split(".")[1])
    return math.trunc(x * 10**digits) == round(figure * 10**digits)


def cards(xs, figures):
    return len(xs) == len(figures) and all(card(x, f) for x, f in zip(xs, figures))


CARD = [("sinks", 1), ("lag", 2), ("budget", 4)]
# The worked example's tensors (spec/policies/lagkv.md#how-it-works).
KEYS = [(9, 9), (0, 1), (0.5, 0.5), (0, 0), (1, 1)]
VALUES = [(9, 9), (0.5, 0.5), (0.5, 0.5), (0, 0), (1, 1)]


# -- The registry, the parameters and their rules -----------------------------------

def test_registered_after_keydiff_with_the_feature():
    # spec/README.md#policies: lagkv (0.18.0) after keydiff, simlayerkv
    # (0.20.0) after it; the feature `values` (0.18.0) in
    # spec/features.md#the-list, before `pyramid` (0.19.0).
    assert list(REGISTRY)[-4:] == ["knorm", "keydiff", "lagkv", "simlayerkv"]
    assert REGISTRY["lagkv"] is LagKvPolicy
    assert FEATURES[-2:] == ("values", "pyramid")
    # Reads keys and values, no attention; d and e at least 2.
    assert LagKvPolicy.READS_KEYS and LagKvPolicy.READS_VALUES and not LagKvPolicy.READS_ATTENTION
    assert (LagKvPolicy.MIN_HEAD_DIM, LagKvPolicy.MIN_VALUE_DIM) == (2, 2)
    # knorm and keydiff ignore values (spec/tensors.md#policies-that-read-keys).
    assert not REGISTRY["knorm"].READS_VALUES and not REGISTRY["keydiff"].READS_VALUES


def test_parameters_and_defaults():
    cls, values = configure("lagkv", [])
    assert cls is LagKvPolicy
    # spec/policies/lagkv.md#parameters, in the card's order.
    assert list(values) == ["budget", "sinks", "lag", "cross_scoring", "granularity", "aggregation",
                            "prefill_only", "ratio_ppm"]
    assert values == {"budget": 512, "sinks": 4, "lag": 128, "cross_scoring": 0, "granularity": 1,
                      "aggregation": 0, "prefill_only": 0, "ratio_ppm": 0}


@pytest.mark.parametrize("params, subject", [
    ([("budget", 0)], "range budget"),
    ([("budget", 2**32)], "range budget"),
    ([("sinks", 2**32 - 1)], "range sinks"),
    ([("sinks", -1)], "range sinks"),
    ([("lag", 0)], "range lag"),
    ([("lag", 2**20 + 1)], "range lag"),
    ([("cross_scoring", 2)], "range cross_scoring"),
    ([("granularity", 3)], "range granularity"),
    ([("aggregation", 3)], "range aggregation"),
    ([("prefill_only", 2)], "range prefill_only"),
    ([("ratio_ppm", 1000000)], "range ratio_ppm"),
    # Not taken (spec/policies/lagkv.md#parameters): each unknown.
    ([("recent_window", 0)], "unknown recent_window"),
    ([("adaptive", 0)], "unknown adaptive"),
    ([("safeguard_permille", 200)], "unknown safeguard_permille"),
    ([("slack", 0)], "unknown slack"),
    ([("interval", 0)], "unknown interval"),
    ([("block", 1)], "unknown block"),
    ([("block_score", 0)], "unknown block_score"),
    ([("lag", 4), ("lag", 4)], "repeated lag"),
    # In the table's order: budget's range before lag's.
    ([("lag", 0), ("budget", 0)], "range budget"),
])
def test_parameter_refusals(params, subject):
    # The configuration comes first: before the scenario's missing head_dim.
    assert refused(run("lagkv", params)) == ("INVALID_PARAMETER", -1, subject)


def test_lag_and_cross_scoring_are_foreign_elsewhere():
    # Parameters of lagkv only: knorm and keydiff refuse them as unknown.
    for name in ("knorm", "keydiff", "h2o", "window"):
        assert refused(run(name, [("lag", 2)])) == ("INVALID_PARAMETER", -1, "unknown lag"), name
        assert refused(run(name, [("cross_scoring", 0)])) == ("INVALID_PARAMETER", -1,
                                                              "unknown cross_scoring"), name


def test_range_edges_accepted_and_no_rule():
    # sinks may exceed budget ("No rule relates them"), ratio_ppm with any
    # sinks: lagkv has no recent_window for prefill.md's rule.
    params = [("budget", 2**32 - 1), ("sinks", 2**32 - 2), ("lag", 2**20), ("cross_scoring", 1),
              ("granularity", 0), ("aggregation", 2), ("prefill_only", 1), ("ratio_ppm", 999999)]
    log = run("lagkv", params, [step(1, [[1.0, 2.0]], [[3.0, 4.0]])], head_dim=2, value_dim=2)
    assert log.rejection is None and victims(log) == [[]]


# -- The card's worked examples (spec/policies/lagkv.md#how-it-works) --------------

def test_flat_key_goes():
    # lagkv/basic/flat-key-goes: m = 5 = sinks + 2 lag, P = 2. The scaled
    # keys (0, 1) and (0.5, 0.5) spread sqrt(1/2) and 0, softmax 0.6697..
    # and 0.3302..; the values spread 0 and 0, softmax 0.5 each.
    ref_keys = [[0.0, 0.0], [1.0, 1.0]]
    ks = spreads([[0.0, 1.0], [0.5, 0.5]], ref_keys)
    assert ks == [math.sqrt(0.5), 0.0] and card(ks[0], 0.7071)
    wk = softmax(ks)
    assert cards(wk, [0.6697, 0.3302])
    assert softmax(spreads([[0.5, 0.5], [0.5, 0.5]], ref_keys)) == [0.5, 0.5]
    # a: 0.5848.. for position 1, 0.4151.. for position 2.
    a = judge([[0.0, 1.0], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]], ref_keys, ref_keys)
    assert a == [(wk[0] + 0.5) / 2.0, (wk[1] + 0.5) / 2.0] and cards(a, [0.5848, 0.4151])
    # Position 2 ranks 0 (score 0), position 1 ranks 1 (0.5); the sink and
    # partition 1 score 1.0. Position 2 goes.
    log = lag(CARD, KEYS, VALUES)
    assert log.rejection is None and victims(log) == [[2]]
    assert log.steps[0].kept_count == 4 and log.steps[0].query_cache_position == 0
    assert cut(log.steps[0]) == [(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]


def test_equal_judgement_older_ranks_lower():
    # lagkv/basic/equal-judgement-older-ranks-lower: the values scale to
    # (0.5, 0.5) and (0, 1), softmax 0.3302.. and 0.6697.., the keys' the
    # other way round: a is 0.5 for both, and position 1, the older, ranks 0.
    values = [(9, 9), (1, 1), (0, 2), (0, 0), (2, 2)]
    wv = softmax(spreads([[1.0, 1.0], [0.0, 2.0]], [[0.0, 0.0], [2.0, 2.0]]))
    assert cards(wv, [0.3302, 0.6697])
    a = judge([[0.0, 1.0], [0.5, 0.5]], [[1.0, 1.0], [0.0, 2.0]], [[0.0, 0.0], [1.0, 1.0]],
              [[0.0, 0.0], [2.0, 2.0]])
    assert a[0] == a[1] and card(a[0], 0.5)
    assert ranks(a) == [0, 1]
    log = lag(CARD, KEYS, values)
    assert victims(log) == [[1]]
    assert cut(log.steps[0]) == [(1, 0.0), (2, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]


def test_constant_channel():
    # lagkv/basic/constant-channel: channel 0 is 1 in both reference values,
    # so it scales to +0.0; channel 1 scales to 1 and 0; spreads 0.7071..
    # and 0, the values' softmax as the keys', and position 2 goes.
    values = [(9, 9), (7, 2), (-3, 0), (1, 0), (1, 2)]
    vs = spreads([[7.0, 2.0], [-3.0, 0.0]], [[1.0, 0.0], [1.0, 2.0]])
    assert vs == [math.sqrt(0.5), 0.0]
    log = lag(CARD, KEYS, values)
    assert victims(log) == [[2]]
    assert cut(log.steps[0]) == [(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]
    # With cross_scoring 1 the judgements are the keys' softmax exactly:
    # (w + w) / 2 is w.
    log = lag(CARD + [("cross_scoring", 1)], KEYS, values)
    wk = softmax([math.sqrt(0.5), 0.0])
    assert cut(log.steps[0])[:2] == [(2, wk[1]), (1, wk[0])]


def test_short_cache():
    # lagkv/basic/short-cache: sinks 1, lag 2, budget 3, four positions:
    # m = 4 < 5: scores 1, 0, 1/3 and 2/3, and position 1 goes whatever
    # the tensors.
    params = [("sinks", 1), ("lag", 2), ("budget", 3)]
    for keys, values in ((KEYS[:4], VALUES[:4]), ([(1, 2), (3, -4), (5, 6), (7, 8)], [(0, 0)] * 4)):
        log = lag(params, keys, values)
        assert victims(log) == [[1]]
        assert cut(log.steps[0]) == [(1, 0.0), (2, 1 / 3), (3, 2 / 3), (0, 1.0)]
    assert head_scores([[0.0, 0.0]] * 4, [[0.0, 0.0]] * 4, 1, 2, 0) == [1.0, 0.0, 1.0 / 3.0, 2.0 / 3.0]


# The ranks example: sinks 0, lag 3, budget 7, nine positions, every value (0, 0).
RANK_KEYS = [(0, 0), (0, 0), (0, 4), (0, 0), (1, 1), (0.5, 0.5), (0, 0), (1, 1), (0, 0)]
RANK_VALUES = [(0, 0)] * 9


def test_ranks_per_partition():
    # lagkv/basic/ranks-per-partition: partition 0's scaled keys spread 0, 0
    # and 2.8284.. (softmax 0.0528.., 0.0528.., 0.8942..; a 0.1930..,
    # 0.1930.., 0.6138..), partition 1's all 0 (a 1/3 each). The ranks make
    # scores 0, 1/3, 2/3 in each partition; positions 0 and 3 go.
    s = spreads([[0.0, 0.0], [0.0, 0.0], [0.0, 4.0]], [[0.0, 0.0], [1.0, 1.0], [0.5, 0.5]])
    assert s[:2] == [0.0, 0.0] and s[2] == math.sqrt(8.0) and cards(s, [0.0, 0.0, 2.8284])
    w = softmax(s)
    assert cards(w, [0.0528, 0.0528, 0.8942])
    # Every value channel is constant: the values' softmax is 1/3 throughout.
    third = softmax([0.0, 0.0, 0.0])
    assert third == [1.0 / 3.0] * 3
    a0 = judge([[0.0, 0.0], [0.0, 0.0], [0.0, 4.0]], [[0.0, 0.0]] * 3, [[0.0, 0.0], [1.0, 1.0], [0.5, 0.5]],
               [[0.0, 0.0]] * 3)
    assert cards(a0, [0.1930, 0.1930, 0.6138])
    assert ranks(a0) == [0, 1, 2]
    a1 = judge([[0.0, 0.0], [1.0, 1.0], [0.5, 0.5]], [[0.0, 0.0]] * 3, [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]],
               [[0.0, 0.0]] * 3)
    assert a1 == [1.0 / 3.0] * 3 and ranks(a1) == [0, 1, 2]
    log = lag([("sinks", 0), ("lag", 3), ("budget", 7)], RANK_KEYS, RANK_VALUES)
    assert victims(log) == [[0, 3]]
    assert cut(log.steps[0]) == [(0, 0.0), (3, 0.0), (1, 1 / 3), (4, 1 / 3), (2, 2 / 3), (5, 2 / 3)]


def test_cross_scoring():
    # lagkv/basic/cross-scoring: the scores are the a's; positions 0 and 1
    # (0.1930.. each, the lower positions of the tie) go.
    log = lag([("sinks", 0), ("lag", 3), ("budget", 7), ("cross_scoring", 1)], RANK_KEYS, RANK_VALUES)
    assert victims(log) == [[0, 1]]
    c = cut(log.steps[0])
    assert [p for p, _ in c] == [0, 1, 3, 4, 5, 2]
    assert c[0][1] == c[1][1] and card(c[0][1], 0.1930)
    assert [s for _, s in c[2:5]] == [1.0 / 3.0] * 3 and card(c[5][1], 0.6138)
    # The last partition scores 1.0, above every judgement.
    scores = head_scores([list(map(float, k)) for k in RANK_KEYS], [[0.0, 0.0]] * 9, 0, 3, 1)
    assert scores[6:] == [1.0, 1.0, 1.0]


# -- The rest of the card --------------------------------------------------------

def test_softmax_uses_the_spec_exp_and_sums_in_order():
    s = [0.25, 1.5, 0.75]
    t = [exp(x - 1.5) for x in s]
    z = (0.0 + t[0] + t[1]) + t[2]
    assert softmax(s) == [x / z for x in t]


def test_tail_after_the_last_partition_scores_one():
    # m = 8, sinks 1, lag 3: P = 2 (slots 1-3 and 4-6), slot 7 after the
    # last partition scores 1.0 with it and the sink.
    keys = [[float(i), float(i * i % 5)] for i in range(8)]
    scores = head_scores(keys, keys, 1, 3, 0)
    assert scores[0] == 1.0 and scores[4:] == [1.0] * 4
    assert sorted(scores[1:4]) == [0.0, 1 / 3, 2 / 3]


def test_sinks_beyond_the_budget_go_oldest_first():
    # sinks 4 > budget 2, four positions (a short cache, every slot a
    # sink): every score 1.0, and the tie rule takes 0 and 1.
    log = lag([("sinks", 4), ("lag", 1), ("budget", 2)], KEYS[:4], VALUES[:4])
    assert victims(log) == [[0, 1]]
    assert cut(log.steps[0]) == [(0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0)]


def test_ranks_tie_across_partitions_oldest_partition_first():
    # spec/policies/lagkv.md#tie-breaking: the rank-0 slots of every judged
    # partition score 0 alike; budget 8 evicts one, from partition 0.
    log = lag([("sinks", 0), ("lag", 3), ("budget", 8)], RANK_KEYS, RANK_VALUES)
    assert victims(log) == [[0]]
    assert cut(log.steps[0])[:2] == [(0, 0.0), (3, 0.0)]


def test_partitions_move_with_the_cache():
    # Decode steps of one position each: at step 4 the worked example evicts
    # position 2. Step 5 admits (0.5, 0.5) with value (0.5, 0.5): the kept
    # slots 0, 1, 3, 4, 5 are the cache, partition 0 positions 1 and 3,
    # judged against 4 and 5 (lo 0.5, hi 1 in both channels): position 1's
    # key scales to (-1, 1), spread sqrt(2), position 3's to (-1, -1), 0;
    # both values scale to constant vectors. Position 3 ranks 0 and goes.
    steps = [step(1, [list(map(float, k))], [list(map(float, v))]) for k, v in zip(KEYS, VALUES)]
    steps.append(step(1, [[0.5, 0.5]], [[0.5, 0.5]]))
    log = run("lagkv", CARD, steps, head_dim=2, value_dim=2)
    assert victims(log) == [[], [], [], [], [2], [3]]
    assert [s.kept_count for s in log.steps] == [1, 2, 3, 4, 4, 4]
    assert cut(log.steps[5]) == [(3, 0.0), (1, 0.5), (0, 1.0), (4, 1.0), (5, 1.0)]
    # Evicted slots' tensors are forgotten with them.
    p = LagKvPolicy(dict(CARD), None, head_dim=2, value_dim=2)
    for i, (k, v) in enumerate(zip(KEYS + [(0.5, 0.5)], VALUES + [(0.5, 0.5)])):
        p.step(i, 1, None, keys=[list(map(float, k))], values=[list(map(float, v))])
    assert p.kept == [0, 1, 4, 5]
    assert p.kv_keys == [[[9.0, 9.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]]]
    assert p.kv_values == [[[9.0, 9.0], [0.5, 0.5], [1.0, 1.0], [0.5, 0.5]]]


def test_a_step_that_evicts_nothing_computes_nothing():
    log = lag([("sinks", 1), ("lag", 2), ("budget", 5)], KEYS, VALUES)
    assert victims(log) == [[]] and log.steps[0].cut == []


def test_attention_ignored():
    # Rows are checked and not read.
    steps = [step(1, [list(map(float, k))], [list(map(float, v))],
                  row=None if i == 0 else [1000.0] + [0.0] * (i - 1))
             for i, (k, v) in enumerate(zip(KEYS, VALUES))]
    log = run("lagkv", CARD, steps, head_dim=2, value_dim=2)
    assert victims(log) == [[], [], [], [], [2]]


# -- Several KV heads (spec/policies/lagkv.md#several-kv-heads) --------------------

# Hq = Hkv = 2, one step admitting 0 to 4: KV head 0 the worked example
# (position 2 scores 0, 1 scores 0.5); KV head 1 its keys with position 1's
# and 2's swapped (1 scores 0, 2 scores 0.5).
SWAPPED = [KEYS[0], KEYS[2], KEYS[1], KEYS[3], KEYS[4]]
LAYER_STEP = step(5, [flat(*KEYS), flat(*SWAPPED)], [flat(*VALUES), flat(*VALUES)])


def layer(params, query_heads=2):
    return run("lagkv", CARD + params, [LAYER_STEP], query_heads=query_heads, kv_heads=2, head_dim=2,
               value_dim=2)


def test_kv_head_sets():
    log = layer([])
    (record,) = log.steps
    assert record.victims == [] and [s.victims for s in record.sets] == [[2], [1]]
    assert cut(record.sets[1]) == [(1, 0.0), (2, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]


def test_layer_aggregations():
    # mean 0.25 at 1 and 2, max 0.5, sum 0.5: a tie each, position 1 goes;
    # the sink and partition 1 combine 1.0 and 1.0 (sum: 2.0).
    for aggregation, tied, one in ((0, 0.25, 1.0), (1, 0.5, 1.0), (2, 0.5, 2.0)):
        log = layer([("granularity", 0), ("aggregation", aggregation)])
        assert victims(log) == [[1]] and log.steps[0].sets == []
        assert cut(log.steps[0]) == [(1, tied), (2, tied), (0, one), (3, one), (4, one)]
    # With cross_scoring 1 the a's combine: mean and sum of 0.5848.. and
    # 0.4151.. at 1 and 2 alike (the same two summands, either order).
    a = judge([[0.0, 1.0], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]], [[0.0, 0.0], [1.0, 1.0]],
              [[0.0, 0.0], [1.0, 1.0]])
    log = layer([("granularity", 0), ("aggregation", 2), ("cross_scoring", 1)])
    assert cut(log.steps[0])[:2] == [(1, (0.0 + a[0]) + a[1]), (2, (0.0 + a[1]) + a[0])]
    log = layer([("granularity", 0), ("aggregation", 1), ("cross_scoring", 1)])
    assert cut(log.steps[0])[:2] == [(1, a[0]), (2, a[0])]


def test_query_head_sets_read_their_kv_head():
    # Hq = 4, Hkv = 2: query heads 0 and 1 read KV head 0, 2 and 3 KV head 1.
    log = layer([("granularity", 2)], query_heads=4)
    assert [s.victims for s in log.steps[0].sets] == [[2], [2], [1], [1]]


# -- At prefill (spec/policies/lagkv.md#at-prefill) ---------------------------------

def test_prefill_ratio():
    # prefill_only 1, ratio_ppm 500000: a prefill of the worked example's five
    # positions keeps floor(5 x 0.5) = 2: positions 2, 1 and then 0 (the
    # lowest of the 1.0s) go. A decode step after it evicts nothing.
    params = [("sinks", 1), ("lag", 2), ("budget", 1), ("prefill_only", 1), ("ratio_ppm", 500000)]
    log = run("lagkv", params,
              [step(5, [flat(*KEYS)], [flat(*VALUES)], queries=[[0.2] * 5]),
               step(1, [[1.0, 2.0]], [[3.0, 4.0]], row=[0.2] * 5)], head_dim=2, value_dim=2)
    assert log.rejection is None
    assert victims(log) == [[0, 1, 2], []]
    assert [s.kept_count for s in log.steps] == [2, 3]
    assert cut(log.steps[0]) == [(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]


def test_prefill_only_without_query_rows_evicts_nothing():
    log = lag([("sinks", 1), ("lag", 2), ("budget", 1), ("prefill_only", 1)], KEYS, VALUES)
    assert victims(log) == [[]]


# -- The scenario's checks (spec/tensors.md#checks, 1) -------------------------------

@pytest.mark.parametrize("value_dim", [0, 1025, 2**32 - 1])
def test_value_dim_out_of_range(value_dim):
    # 1.2, whatever the policy.
    for name, params in (("window", [("budget", 2)]), ("knorm", []), ("lagkv", [])):
        assert refused(run(name, params, [], head_dim=2, value_dim=value_dim)) == (
            "INVALID_HEADS", -1, "range value_dim"), name


def test_value_dim_edges_accepted():
    for e in (1, 1024):
        log = run("window", [("budget", 1)], [step(1, values=[[0.5] * e]), step(1, values=[[-1.0] * e])],
                  value_dim=e)
        assert log.rejection is None and victims(log) == [[], [0]]
    # knorm ignores values: value_dim 1 runs (tensors/bounds/value-dim-1-for-knorm).
    log = run("knorm", [("budget", 1)], [step(1, [[1.0, 0.0]], [[5.0]]), step(1, [[0.0, 2.0]], [[6.0]])],
              head_dim=2, value_dim=1)
    assert log.rejection is None and victims(log) == [[], [1]]


def test_value_dim_beside_a_trace():
    trace = kpb.TraceConfig(steps=3)
    assert refused(run("h2o", [], trace=trace, value_dim=2)) == ("INVALID_TRACE", -1, "rule value_dim trace")
    # Before a trace's parameters.
    assert refused(run("h2o", [], trace=kpb.TraceConfig(), value_dim=2)) == ("INVALID_TRACE", -1,
                                                                             "rule value_dim trace")


def test_scenario_checks_in_order():
    trace = kpb.TraceConfig(steps=3)
    # 1.1 head_dim's range before 1.2 value_dim's.
    assert refused(run("h2o", [], [], head_dim=0, value_dim=0)) == ("INVALID_HEADS", -1, "range head_dim")
    # 1.2 value_dim's range before 1.3 head_dim beside a trace.
    assert refused(run("h2o", [], trace=trace, head_dim=2, value_dim=0)) == ("INVALID_HEADS", -1,
                                                                             "range value_dim")
    # 1.3 before 1.4.
    assert refused(run("h2o", [], trace=trace, head_dim=2, value_dim=2)) == ("INVALID_TRACE", -1,
                                                                             "rule head_dim trace")
    # 1.4 before 1.5 (lagkv beside a trace, without head_dim).
    assert refused(run("lagkv", [], trace=trace, value_dim=2)) == ("INVALID_TRACE", -1, "rule value_dim trace")
    # 1.5 before 1.6: lagkv with neither, or head_dim 1 and no values.
    assert refused(run("lagkv", [], [])) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("lagkv", [], [], head_dim=1)) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("lagkv", [], [], head_dim=1, value_dim=1)) == ("INVALID_HEADS", -1, "range head_dim")
    # 1.6: no values, or value_dim 1.
    assert refused(run("lagkv", [], [], head_dim=2)) == ("INVALID_HEADS", -1, "range value_dim")
    assert refused(run("lagkv", [], [], head_dim=2, value_dim=1)) == ("INVALID_HEADS", -1, "range value_dim")
    # After the head counts.
    assert refused(run("lagkv", [], [], query_heads=3, kv_heads=2)) == ("INVALID_HEADS", -1,
                                                                        "rule kv_heads query_heads")
    # After the configuration.
    assert refused(run("lagkv", [("lag", 0)], [])) == ("INVALID_PARAMETER", -1, "range lag")


def test_lagkv_at_the_least_dims():
    # d = e = 2 is enough; and e need not equal d.
    log = lag(CARD, KEYS, VALUES)
    assert log.rejection is None
    log = run("lagkv", CARD, [step(5, [flat(*KEYS)], [[9, 9, 9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0, 0, 0, 1, 1, 1]])],
              head_dim=2, value_dim=3)
    assert log.rejection is None and victims(log) == [[2]]


# -- Each step's values (spec/tensors.md#checks, 2 and 3) -----------------------------

def test_values_without_value_dim():
    # A scenario without values carries none, whatever the policy; an empty
    # entry is an entry.
    log = run("window", [("budget", 2)], [step(1), step(1, values=[[1.0]])])
    assert victims(log) == [[]] and refused(log) == ("ATTENTION_LENGTH", 1, "length values")
    assert refused(run("h2o", [], [step(1, values=[[]])])) == ("ATTENTION_LENGTH", 0, "length values")
    assert refused(run("knorm", [], [step(1, [[1.0]], [[]])], head_dim=1)) == ("ATTENTION_LENGTH", 0,
                                                                               "length values")


def test_wrong_number_of_value_entries():
    k2 = [[1.0, 2.0], [3.0, 4.0]]
    for vals in ([[1.0, 2.0]], [[1.0, 2.0]] * 3, []):
        assert refused(run("lagkv", [], [step(1, k2, vals)], query_heads=2, kv_heads=2, head_dim=2,
                           value_dim=2)) == ("ATTENTION_LENGTH", 0, "length values"), vals
    assert refused(run("window", [("budget", 2)], [step(1)], value_dim=2)) == ("ATTENTION_LENGTH", 0,
                                                                               "length values")


def test_wrong_value_entry_length():
    # admit 2 x e 3 = 6 values per entry.
    ok = step(1, [[1.0, 2.0], [1.0, 2.0]], [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    bad = step(2, [[1.0] * 4, [1.0] * 4], [[1.0] * 6, [1.0] * 5])
    assert refused(run("lagkv", [], [ok, bad], query_heads=2, kv_heads=2, head_dim=2, value_dim=3)) == (
        "ATTENTION_LENGTH", 1, "length values")
    # The length before any entry's value: KV head 0's NaN, KV head 1 short.
    bad = step(1, [[1.0, 2.0], [1.0, 2.0]], [[math.nan, 0.0, 0.0], [1.0]])
    assert refused(run("lagkv", [], [bad], query_heads=2, kv_heads=2, head_dim=2, value_dim=3)) == (
        "ATTENTION_LENGTH", 0, "length values")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_value_entry_not_finite(bad):
    for name, params in (("lagkv", []), ("knorm", []), ("h2o", []), ("window", [("budget", 2)])):
        log = run(name, params, [step(1, [[1.0, 2.0]], [[3.0, 4.0]]), step(1, [[1.0, 2.0]], [[0.0, bad]])],
                  head_dim=2, value_dim=2)
        assert refused(log) == ("ATTENTION_VALUE", 1, "value values"), name
        assert len(log.steps) == 1
    # KV head 1's entries too.
    log = run("lagkv", [], [step(1, [[1.0, 2.0], [1.0, 2.0]], [[1.0, 2.0], [bad, 2.0]])], query_heads=2,
              kv_heads=2, head_dim=2, value_dim=2)
    assert refused(log) == ("ATTENTION_VALUE", 0, "value values")


def test_negative_and_negative_zero_values_accepted():
    log = run("lagkv", [("budget", 1)], [step(1, [[1.0, 2.0]], [[-0.0, -3.0]]), step(1, [[1.0, 2.0]], [[-1.0, -0.0]])],
              head_dim=2, value_dim=2)
    assert log.rejection is None and victims(log) == [[], [0]]


def test_step_checks_in_order():
    nan2 = [[math.nan, 0.0]]
    # Check 3: the keys' shape before the values' shape.
    assert refused(run("lagkv", [], [step(1, [[1.0]], [[1.0]])], head_dim=2, value_dim=2)) == (
        "ATTENTION_LENGTH", 0, "length keys")
    # The values' shape before every entry (check 4): a NaN key, a NaN weight.
    assert refused(run("lagkv", [], [step(1, nan2, [[1.0]])], head_dim=2, value_dim=2)) == (
        "ATTENTION_LENGTH", 0, "length values")
    assert refused(run("h2o", [], [step(1, values=[[1.0, 2.0]]), step(1, values=[[1.0]], row=[math.nan])],
                       value_dim=2)) == (
        "ATTENTION_LENGTH", 1, "length values")
    # After the column totals' shape.
    bad_totals = step(1, values=[[1.0]], queries=[[0.5]], totals=[[1.0, 1.0]], total_rows=1)
    assert refused(run("h2o", [], [bad_totals], value_dim=2)) == ("ATTENTION_LENGTH", 0, "length totals")
    # Check 4: the key entries before the value entries, and the weights
    # before both.
    assert refused(run("lagkv", [], [step(1, nan2, nan2)], head_dim=2, value_dim=2)) == (
        "ATTENTION_VALUE", 0, "value keys")
    assert refused(run("lagkv", [], [step(1, [[1.0, 2.0]], nan2, queries=[[-1.0]])], head_dim=2, value_dim=2)) == (
        "ATTENTION_VALUE", 0, "value queries")
    assert refused(run("lagkv", [], [step(1, [[1.0, 2.0]], nan2, queries=[[1.0]], totals=[[math.inf]],
                                          total_rows=1)], head_dim=2, value_dim=2)) == (
        "ATTENTION_VALUE", 0, "value totals")


def test_other_policies_run_as_without_values():
    # spec/tensors.md#policies-that-read-keys: after the checks, every policy
    # but lagkv ignores values (knorm and keydiff included).
    rows = [None, [1.0], [0.25, 0.75], [0.5, 0.25, 0.25]]
    plain = [(1, r) for r in rows]
    valued = [step(1, values=[[float(i), -1.0, 2.0]], row=r) for i, r in enumerate(rows)]
    for name, params in (("h2o", [("budget", 2), ("recent_window", 0)]), ("tova", [("budget", 2)]),
                         ("window", [("budget", 2)]), ("streamingllm", [("budget", 2), ("sinks", 1)]),
                         ("random", [("budget", 2), ("recent_window", 0)]), ("full", [])):
        assert run(name, params, plain) == run(name, params, valued, value_dim=3), name
    keyed = [step(1, [[float(i), 1.0]]) for i in range(4)]
    both = [step(1, [[float(i), 1.0]], [[7.0 * i, -2.0, 0.5]]) for i in range(4)]
    for name in ("knorm", "keydiff"):
        without = run(name, [("budget", 2)], keyed, head_dim=2)
        assert without.rejection is None
        assert without == run(name, [("budget", 2)], both, head_dim=2, value_dim=3), name


def test_other_policies_with_several_kv_heads_and_values():
    # Hq = 4, Hkv = 2: two value entries a step, checked against Hkv whatever
    # the kept sets (one for window and openvino, one per KV head for h2o),
    # then ignored; with keys beside them too.
    rows = [None, [[1.0]] * 4, [[0.25, 0.75]] * 4, [[0.5, 0.25, 0.25]] * 4]
    plain = [(1, None, r or []) for r in rows]
    valued = [step(1, values=[[float(i), 1.0, 0.0], [1.0, -float(i), 2.0]], heads=r or [])
              for i, r in enumerate(rows)]
    both = [step(1, [[1.0, float(i)], [0.5, 0.5]], [[float(i), 1.0, 0.0], [1.0, -float(i), 2.0]], heads=r or [])
            for i, r in enumerate(rows)]
    for name, params in (("window", [("budget", 2)]), ("h2o", [("budget", 2), ("recent_window", 0)]),
                         ("h2o", [("budget", 2), ("recent_window", 0), ("granularity", 0)]),
                         ("openvino", [("budget", 2), ("sinks", 0), ("recent_window", 0), ("block", 1)])):
        without = run(name, params, plain, query_heads=4, kv_heads=2)
        assert without.rejection is None, name
        assert without == run(name, params, valued, query_heads=4, kv_heads=2, value_dim=3), name
        assert without == run(name, params, both, query_heads=4, kv_heads=2, head_dim=2, value_dim=3), name
        one = [step(1, values=[[float(i), 1.0, 0.0]], heads=r or []) for i, r in enumerate(rows)]
        assert refused(run(name, params, one, query_heads=4, kv_heads=2, value_dim=3)) == (
            "ATTENTION_LENGTH", 0, "length values"), name


# -- The wire, a direct call and builds of lower precision --------------------------

def test_through_the_testee():
    # value_dim and values (binary32 on the wire) reach the harness.
    sc = kpb.Scenario(head_dim=2, value_dim=2)
    st = sc.steps.add(admit=5)
    st.keys.add().values.extend(flat(*KEYS))
    st.values.add().values.extend(flat(*VALUES))
    params = [kpb.Parameter(name=n, value=v) for n, v in CARD]
    req = cpb.Request(seq=1, case_id="lagkv/basic/flat-key-goes", scenario=sc, want_cut=True,
                      policy=kpb.PolicyConfig(name="lagkv", parameters=params))
    log = handle_request(req).response.log
    assert [list(s.victims) for s in log.steps] == [[2]]
    assert [(c.position, c.score) for c in log.steps[0].cut][:2] == [(2, 0.0), (1, 0.5)]
    # Without value_dim: refused before the first step.
    sc.ClearField("value_dim")
    req.scenario.CopyFrom(sc)
    rej = handle_request(req).response.log.rejection
    assert (rej.category, rej.step, rej.subject.check, list(rej.subject.names)) == (
        kpb.INVALID_HEADS, -1, "range", ["value_dim"])
    # A step with values and no keys, over a policy that ignores both.
    sc = kpb.Scenario(value_dim=1)
    sc.steps.add(admit=1).values.add().values.append(math.inf)
    req = cpb.Request(seq=2, case_id="tensors/values", scenario=sc,
                      policy=kpb.PolicyConfig(name="window", parameters=[kpb.Parameter(name="budget", value=1)]))
    rej = handle_request(req).response.log.rejection
    assert (rej.category, rej.step, rej.subject.check, list(rej.subject.names)) == (
        kpb.ATTENTION_VALUE, 0, "value", ["values"])


def test_direct_call():
    from kvspec_port.errors import Refusal
    p = LagKvPolicy(dict(CARD), None, head_dim=2, value_dim=2)
    for i in range(4):
        assert p.step(i, 1, None, keys=[list(map(float, KEYS[i]))], values=[list(map(float, VALUES[i]))]).victims == []
    out = p.step(4, 1, [0.25] * 4, keys=[[1.0, 1.0]], values=[[1.0, 1.0]])
    assert out.victims == [2] and out.cut[:2] == [(2, 0.0), (1, 0.5)]

    def refusal(policy, **kw):
        with pytest.raises(Refusal) as e:
            policy.step(5, 1, None, **kw)
        return e.value.category, e.value.subject.check, e.value.subject.names

    ok = dict(keys=[[1.0, 1.0]], values=[[1.0, 1.0]])
    assert refusal(p, keys=[[1.0]], values=ok["values"]) == ("ATTENTION_LENGTH", "length", ("keys",))
    assert refusal(p, keys=[[math.nan, 1.0]], values=[[1.0]]) == ("ATTENTION_VALUE", "value", ("keys",))
    assert refusal(p, keys=ok["keys"], values=[[1.0]]) == ("ATTENTION_LENGTH", "length", ("values",))
    assert refusal(p, keys=ok["keys"], values=[[math.inf, 1.0]]) == ("ATTENTION_VALUE", "value", ("values",))
    assert refusal(LagKvPolicy(dict(CARD), None, value_dim=2), **ok) == ("INVALID_HEADS", "range", ("head_dim",))
    assert refusal(LagKvPolicy(dict(CARD), None, head_dim=2), **ok) == ("INVALID_HEADS", "range", ("value_dim",))
    # Check 8: the length, then the least d, then the entries.
    short = LagKvPolicy(dict(CARD), None, head_dim=1, value_dim=2)
    assert refusal(short, keys=[[1.0, 1.0]], values=ok["values"]) == ("ATTENTION_LENGTH", "length", ("keys",))
    assert refusal(short, keys=[[math.nan]], values=ok["values"]) == ("INVALID_HEADS", "range", ("head_dim",))
    with pytest.raises(Refusal) as e:
        p.step(4, 1, None, **ok)  # not above position 4
    assert (e.value.category, e.value.subject) == ("POSITION", ("rule", ("admit",)))
    with pytest.raises(TypeError):
        p.step_unchecked(5, 1, None)
    with pytest.raises(TypeError):
        p.step_keys(5, 1, [])
    assert p.kept == [0, 1, 3, 4]  # a refused step changes nothing


def test_lower_precision_build_leaves_lagkv_in_binary64(monkeypatch):
    # Scores from keys and values: no build wraps lagkv, and a build of lower
    # precision does not list it (spec/arithmetic.md#range).
    import importlib

    import kvspec_port.policies as policies
    import kvspec_port.testee as testee
    from kvspec_port import precision
    try:
        monkeypatch.setenv("KVSPEC_PORT_PRECISION", "binary32")
        importlib.reload(precision)
        importlib.reload(policies)
        assert policies.REGISTRY["lagkv"].__name__ == "LagKvPolicy"
        assert "lagkv" not in testee.hello_reply().hello.policies
    finally:
        monkeypatch.delenv("KVSPEC_PORT_PRECISION")
        importlib.reload(precision)
        importlib.reload(policies)
    assert "lagkv" in testee.hello_reply().hello.policies
