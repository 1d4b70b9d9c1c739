"""Keys in a scenario (spec/tensors.md, the feature `tensors` of spec 0.16.0)
and the policy `knorm` (spec/policies/knorm.md), worked by hand from the
spec: the card's worked examples, its several-KV-heads, tie and prefill
examples, and every check of spec/tensors.md#checks in its order.

Steps are (admit, attention-or-None, heads, queries, totals, total_rows,
keys): `keys` holds one list of admit x head_dim values per KV head, KV
head 0 first, each position's key in channel order.
"""

import math

import pytest

from kvspec_port import FEATURES
from kvspec_port.harness import configure, run_scenario
from kvspec_port.policies import REGISTRY
from kvspec_port.policies.knorm import KnormPolicy, key_scores
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.tensors import kv_range
from kvspec_port.testee import handle_request


def run(name, params, steps=(), trace=None, query_heads=None, kv_heads=None, head_dim=None):
    return run_scenario(name, list(params), 0, list(steps), trace, query_heads, kv_heads, head_dim)


def step(admit, *keys, row=None, heads=(), queries=(), totals=(), total_rows=0):
    """A step admitting `admit` positions with `keys` (one list per KV head)."""
    return (admit, row, list(heads), list(queries), list(totals), total_rows, [list(k) for k in keys])


def refused(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None, log.steps
    category, index, _message, subject = log.rejection
    return category, index, " ".join((subject.check,) + subject.names)


def victims(log):
    return [s.victims for s in log.steps]


def cut(record):
    return [(p, s) for p, s in record.cut]


def positive_zero(x):
    return x == 0.0 and math.copysign(1.0, x) == 1.0


# -- The registry, the parameters and their rules -----------------------------

def test_registered_after_openvino_with_the_feature():
    # keydiff (spec 0.17.0), lagkv (0.18.0) and simlayerkv (0.20.0) after it
    # (spec/README.md#policies); `values` (0.18.0) after `tensors`, then
    # `pyramid` (0.19.0).
    assert list(REGISTRY)[-5:] == ["openvino", "knorm", "keydiff", "lagkv", "simlayerkv"]
    assert FEATURES[-3:] == ("tensors", "values", "pyramid")


def test_parameters_and_defaults():
    cls, values = configure("knorm", [])
    assert cls is KnormPolicy
    # spec/policies/knorm.md#parameters, in the card's order.
    assert list(values) == ["budget", "recent_window", "granularity", "aggregation", "prefill_only", "ratio_ppm"]
    assert values == {"budget": 512, "recent_window": 0, "granularity": 1, "aggregation": 0,
                      "prefill_only": 0, "ratio_ppm": 0}


@pytest.mark.parametrize("params, subject", [
    ([("budget", 0)], "range budget"),
    ([("recent_window", 2**32 - 1)], "range recent_window"),
    ([("granularity", 3)], "range granularity"),
    ([("aggregation", 3)], "range aggregation"),
    ([("prefill_only", 2)], "range prefill_only"),
    ([("ratio_ppm", 1000000)], "range ratio_ppm"),
    # Not taken (spec/policies/knorm.md#parameters): each unknown.
    ([("adaptive", 0)], "unknown adaptive"),
    ([("safeguard_permille", 200)], "unknown safeguard_permille"),
    ([("slack", 0)], "unknown slack"),
    ([("interval", 0)], "unknown interval"),
    ([("block", 1)], "unknown block"),
    ([("block_score", 0)], "unknown block_score"),
    ([("budget", 4), ("budget", 4)], "repeated budget"),
    # The two rules, in order: recent_window < budget first.
    ([("budget", 2), ("recent_window", 2)], "rule recent_window budget"),
    ([("budget", 2), ("recent_window", 2), ("ratio_ppm", 500000)], "rule recent_window budget"),
    ([("budget", 4), ("recent_window", 1), ("ratio_ppm", 500000)], "rule ratio_ppm recent_window"),
])
def test_parameter_refusals(params, subject):
    # The configuration comes first: before the scenario's missing head_dim.
    assert refused(run("knorm", params)) == ("INVALID_PARAMETER", -1, subject)


def test_range_edges_accepted():
    params = [("budget", 2**32 - 1), ("recent_window", 2**32 - 2), ("granularity", 0), ("aggregation", 2),
              ("prefill_only", 1), ("ratio_ppm", 0)]
    log = run("knorm", params, [step(1, [1.0])], head_dim=1)
    assert log.rejection is None and victims(log) == [[]]


# -- The score of a position ---------------------------------------------------

def test_score_is_minus_the_norm():
    # +0.0 - sqrt(sum of squares from channel 0): (3, 4) is -5; (1, 0) -1;
    # (0, 2) -2; a negative entry squares the same: (-3, -4) is -5.
    assert key_scores([[3.0, 4.0], [1.0, 0.0], [0.0, 2.0], [-3.0, -4.0]]) == [-5.0, -1.0, -2.0, -5.0]
    # sqrt(1 + 1) rounded once: -sqrt(2).
    assert key_scores([[1.0, 1.0]]) == [-math.sqrt(2.0)]


def test_zero_key_scores_positive_zero():
    # +0.0 - norm: a zero key, and one of -0.0 entries (squares +0.0), score
    # +0.0, never -0.0.
    for key in ([0.0, 0.0], [-0.0, -0.0], [-0.0, 0.0]):
        (score,) = key_scores([key])
        assert positive_zero(score), (key, score)


# -- Worked examples (spec/policies/knorm.md#how-it-works) -----------------------

def test_largest_norm_goes():
    # One head, d = 2, budget 2, recent_window 0, one position a step: keys
    # (3, 4), (1, 0), (0, 2) score -5, -1, -2; admitting position 2 keeps 3,
    # and position 0 (-5) goes. Cut: the victim, then the other candidates
    # in rank order (-2 before -1).
    log = run("knorm", [("budget", 2)], [step(1, [3, 4]), step(1, [1, 0]), step(1, [0, 2])], head_dim=2)
    assert log.rejection is None
    assert victims(log) == [[], [], [0]]
    assert [s.kept_count for s in log.steps] == [1, 2, 2]
    assert [s.query_cache_position for s in log.steps] == [0, 1, 2]
    assert cut(log.steps[2]) == [(0, -5.0), (2, -2.0), (1, -1.0)]
    # Later steps: (5, 12) scores -13, the lowest, and goes at once.
    log = run("knorm", [("budget", 2)], [step(1, [3, 4]), step(1, [1, 0]), step(1, [0, 2]), step(1, [5, 12])],
              head_dim=2)
    assert victims(log) == [[], [], [0], [3]]
    assert cut(log.steps[3]) == [(3, -13.0), (2, -2.0), (1, -1.0)]


def test_recent_window_protects():
    # recent_window 1 and a third key (6, 8) (-10): position 2 is protected,
    # 0 (-5) goes; the cut holds the candidates 0 and 1 only.
    log = run("knorm", [("budget", 2), ("recent_window", 1)],
              [step(1, [3, 4]), step(1, [1, 0]), step(1, [6, 8])], head_dim=2)
    assert victims(log) == [[], [], [0]]
    assert cut(log.steps[2]) == [(0, -5.0), (1, -1.0)]
    # Without the window 2 (-10) would go.
    log = run("knorm", [("budget", 2)], [step(1, [3, 4]), step(1, [1, 0]), step(1, [6, 8])], head_dim=2)
    assert victims(log) == [[], [], [2]]


def test_chunk_scores_each_position():
    # One step admitting three: the keys are position-major, admit x d.
    log = run("knorm", [("budget", 2)], [step(3, [3, 4, 1, 0, 0, 2])], head_dim=2)
    assert victims(log) == [[0]]
    assert cut(log.steps[0]) == [(0, -5.0), (2, -2.0), (1, -1.0)]


def test_score_fixed_at_admission():
    # Attention rows are checked and ignored: a huge weight on position 0
    # changes nothing, and position 0 (-5) still goes.
    log = run("knorm", [("budget", 2)],
              [step(1, [3, 4]), step(1, [1, 0], row=[1.0]), step(1, [0, 2], row=[1000.0, 0.0])], head_dim=2)
    assert victims(log) == [[], [], [0]]
    assert cut(log.steps[2]) == [(0, -5.0), (2, -2.0), (1, -1.0)]


def test_ties_evict_the_lower_position():
    # spec/policies/knorm.md#tie-breaking: (0, 1) and (1, 0) both score -1;
    # with (0, 0.5) (-0.5) after them and budget 2, position 0 goes.
    log = run("knorm", [("budget", 2)], [step(1, [0, 1]), step(1, [1, 0]), step(1, [0, 0.5])], head_dim=2)
    assert victims(log) == [[], [], [0]]
    assert cut(log.steps[2]) == [(0, -1.0), (1, -1.0), (2, -0.5)]


def test_zero_key_in_the_cut_is_positive_zero():
    # (0, 0) scores +0.0, above every other score: (1, 0) (-1) goes.
    log = run("knorm", [("budget", 1)], [step(1, [0, 0]), step(1, [1, 0])], head_dim=2)
    assert victims(log) == [[], [1]]
    (p1, s1), (p0, s0) = cut(log.steps[1])
    assert (p1, s1, p0) == (1, -1.0, 0) and positive_zero(s0)


# -- Several KV heads (spec/policies/knorm.md#several-kv-heads) ------------------

# Hq = Hkv = 2, one step admitting 0 and 1: KV head 0's keys (3, 4), (0, 1),
# KV head 1's (0, 1), (6, 8). Position 0 scores -5 and -1, position 1 -1 and -10.
LAYER_STEP = step(2, [3, 4, 0, 1], [0, 1, 6, 8])


def test_layer_mean():
    # mean: 0 is (-5 + -1) / 2 = -3, 1 is (-1 + -10) / 2 = -5.5: 1 goes.
    log = run("knorm", [("budget", 1), ("granularity", 0), ("aggregation", 0)], [LAYER_STEP],
              query_heads=2, kv_heads=2, head_dim=2)
    assert victims(log) == [[1]]
    assert log.steps[0].sets == [] and log.steps[0].kept_count == 1  # one set: its record is the step's
    assert cut(log.steps[0]) == [(1, -5.5), (0, -3.0)]


def test_layer_max_tie():
    # max: both combine to -1, a tie, and position 0 goes.
    log = run("knorm", [("budget", 1), ("granularity", 0), ("aggregation", 1)], [LAYER_STEP],
              query_heads=2, kv_heads=2, head_dim=2)
    assert victims(log) == [[0]]
    assert cut(log.steps[0]) == [(0, -1.0), (1, -1.0)]


def test_layer_sum():
    # sum: 0 is -6, 1 is -11: 1 goes.
    log = run("knorm", [("budget", 1), ("granularity", 0), ("aggregation", 2)], [LAYER_STEP],
              query_heads=2, kv_heads=2, head_dim=2)
    assert cut(log.steps[0]) == [(1, -11.0), (0, -6.0)]


def test_kv_head_sets_rank_their_own_kv_head():
    # The default kv_head: set 0 ranks KV head 0 (0 at -5 goes), set 1 KV
    # head 1 (1 at -10 goes); one record per set, in set order.
    log = run("knorm", [("budget", 1)], [LAYER_STEP], query_heads=2, kv_heads=2, head_dim=2)
    (record,) = log.steps
    assert record.victims == [] and len(record.sets) == 2
    assert [s.victims for s in record.sets] == [[0], [1]]
    assert [s.kept_count for s in record.sets] == [1, 1]
    assert cut(record.sets[0]) == [(0, -5.0), (1, -1.0)]
    assert cut(record.sets[1]) == [(1, -10.0), (0, -1.0)]


def test_query_head_sets_read_their_kv_head():
    # Hq = 4, Hkv = 2 (G = 2): query heads 0 and 1 read KV head 0, 2 and 3
    # KV head 1; four sets, each ranking its query head's KV head's score.
    log = run("knorm", [("budget", 1), ("granularity", 2)], [LAYER_STEP], query_heads=4, kv_heads=2, head_dim=2)
    assert [s.victims for s in log.steps[0].sets] == [[0], [0], [1], [1]]
    # A layer set over the same heads combines its two KV heads, not its
    # four query heads: the mean is still (-5 + -1) / 2 and (-1 + -10) / 2.
    log = run("knorm", [("budget", 1), ("granularity", 0)], [LAYER_STEP], query_heads=4, kv_heads=2, head_dim=2)
    assert cut(log.steps[0]) == [(1, -5.5), (0, -3.0)]


def test_one_kv_head_is_its_score_exactly():
    # Hq = 3, Hkv = 1, layer: the set covers one KV head and ranks by its
    # score exactly, -sqrt(3) for (1, 1, 1) (a mean of three query heads'
    # copies, ((x + x) + x) / 3, is not x here).
    x = 0.0 - math.sqrt(3.0)
    for granularity in (0, 1, 2):
        log = run("knorm", [("budget", 1), ("granularity", granularity)], [step(2, [1, 1, 1, 2, 2, 2])],
                  query_heads=3, kv_heads=1, head_dim=3)
        records = log.steps[0].sets or [log.steps[0]]
        assert len(records) == (3 if granularity == 2 else 1)
        for record in records:
            assert cut(record) == [(1, 0.0 - math.sqrt(12.0)), (0, x)]


def test_kv_range():
    # spec/tensors.md#what-a-policy-sees: query head h belongs to KV head h / G.
    assert kv_range(0, 8, 8, 2) == (0, 2)  # layer
    assert kv_range(4, 8, 8, 2) == (1, 2)  # kv_head set 1
    assert kv_range(5, 6, 8, 2) == (1, 2)  # query_head set 5
    assert kv_range(3, 4, 4, 4) == (3, 4)


# -- At prefill (spec/policies/knorm.md#at-prefill) ----------------------------

def test_prefill_ratio():
    # ratio_ppm 500000, prefill_only 1, a prefill of 4 positions with keys
    # (1, 0), (0, 3), (2, 0), (0, 0): the ratio budget is max(1, floor(4 x
    # 0.5)) = 2, and positions 1 (-3) and 2 (-2) go; one query row (the last
    # query's, 4 weights) makes the step a prefill step. A decode step after
    # it evicts nothing, though 3 are kept and budget is 1.
    params = [("budget", 1), ("prefill_only", 1), ("ratio_ppm", 500000)]
    log = run("knorm", params,
              [step(4, [1, 0, 0, 3, 2, 0, 0, 0], queries=[[0.25] * 4]), step(1, [9, 9], row=[0.25] * 4)],
              head_dim=2)
    assert log.rejection is None
    assert victims(log) == [[1, 2], []]
    assert [s.kept_count for s in log.steps] == [2, 3]
    c = cut(log.steps[0])
    assert c[:3] == [(1, -3.0), (2, -2.0), (0, -1.0)]
    assert c[3][0] == 3 and positive_zero(c[3][1])


def test_prefill_ratio_without_query_rows_is_a_decode_step():
    # The same step without its query row is a decode step: with
    # prefill_only 1 it evicts nothing.
    params = [("budget", 1), ("prefill_only", 1), ("ratio_ppm", 500000)]
    log = run("knorm", params, [step(4, [1, 0, 0, 3, 2, 0, 0, 0])], head_dim=2)
    assert victims(log) == [[]]


def test_prefill_step_uses_budget_without_ratio():
    # prefill_only 1, ratio_ppm 0: the prefill step evicts down to budget 3.
    log = run("knorm", [("budget", 3), ("prefill_only", 1)],
              [step(4, [1, 0, 0, 3, 2, 0, 0, 0], queries=[[0.25] * 4])], head_dim=2)
    assert victims(log) == [[1]]


def test_prefill_with_several_heads_and_totals():
    # Hq = 2, Hkv = 1: one query row per head and their column totals are
    # checked and ignored; the ratio budget of each set's kept count.
    log = run("knorm", [("ratio_ppm", 500000)],
              [step(2, [3, 4, 0, 1], queries=[[0.5, 0.5], [0.5, 0.5]], totals=[[1.0, 1.0], [1.0, 1.0]],
                    total_rows=1)],
              query_heads=2, kv_heads=1, head_dim=2)
    assert victims(log) == [[0]]
    assert cut(log.steps[0]) == [(0, -5.0), (1, -1.0)]


# -- The scenario's checks (spec/tensors.md#checks, 1) ----------------------------

@pytest.mark.parametrize("head_dim", [0, 1025, 2**32 - 1])
def test_head_dim_out_of_range(head_dim):
    assert refused(run("window", [("budget", 2)], [], head_dim=head_dim)) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("knorm", [], [], head_dim=head_dim)) == ("INVALID_HEADS", -1, "range head_dim")


def test_head_dim_edges_accepted():
    for d in (1, 1024):
        log = run("knorm", [("budget", 1)], [step(1, [0.0] * d), step(1, [1.0] + [0.0] * (d - 1))], head_dim=d)
        assert log.rejection is None and victims(log) == [[], [1]]


def test_head_dim_beside_a_trace():
    trace = kpb.TraceConfig(steps=3)
    assert refused(run("h2o", [], trace=trace, head_dim=4)) == ("INVALID_TRACE", -1, "rule head_dim trace")
    # Before a trace's parameters (a missing steps is range trace.steps).
    assert refused(run("h2o", [], trace=kpb.TraceConfig(), head_dim=4)) == ("INVALID_TRACE", -1,
                                                                            "rule head_dim trace")
    # After head_dim's range.
    assert refused(run("h2o", [], trace=trace, head_dim=0)) == ("INVALID_HEADS", -1, "range head_dim")
    # knorm beside a trace, with a head_dim: the trace's rule (check 2) first.
    assert refused(run("knorm", [], trace=trace, head_dim=4)) == ("INVALID_TRACE", -1, "rule head_dim trace")


def test_knorm_without_head_dim():
    # spec/tensors.md#checks 1.3: refused before its first step, with steps,
    # a trace or neither.
    assert refused(run("knorm", [], [(1, None)])) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("knorm", [], [])) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("knorm", [], trace=kpb.TraceConfig(steps=3))) == ("INVALID_HEADS", -1, "range head_dim")
    # After the head counts, and after both steps and a trace.
    assert refused(run("knorm", [], [], query_heads=0)) == ("INVALID_HEADS", -1, "range query_heads")
    assert refused(run("knorm", [], [(1, None)], trace=kpb.TraceConfig(steps=3))) == ("INVALID_TRACE", -1,
                                                                                      "rule steps trace")


def test_head_counts_before_head_dim():
    assert refused(run("window", [("budget", 2)], [], query_heads=3, kv_heads=2, head_dim=0)) == (
        "INVALID_HEADS", -1, "rule kv_heads query_heads")


# -- Each step's keys (spec/tensors.md#checks, 2 and 3) ----------------------------

def test_keys_without_head_dim():
    # A scenario without keys carries none, whatever the policy.
    log = run("window", [("budget", 2)], [step(1), step(1, [1.0])])
    assert victims(log) == [[]] and refused(log) == ("ATTENTION_LENGTH", 1, "length keys")
    # An empty entry is an entry.
    assert refused(run("h2o", [], [step(1, [])])) == ("ATTENTION_LENGTH", 0, "length keys")


def test_wrong_number_of_entries():
    # Hkv = 2: one entry, or three, is the wrong number.
    assert refused(run("knorm", [], [step(1, [1, 2])], query_heads=2, kv_heads=2, head_dim=2)) == (
        "ATTENTION_LENGTH", 0, "length keys")
    assert refused(run("knorm", [], [step(1, [1, 2], [1, 2], [1, 2])], query_heads=2, kv_heads=2,
                       head_dim=2)) == ("ATTENTION_LENGTH", 0, "length keys")
    # No entry in a scenario with keys.
    assert refused(run("window", [("budget", 2)], [step(1)], head_dim=2)) == ("ATTENTION_LENGTH", 0, "length keys")


def test_wrong_entry_length():
    # admit 2 x d 2 = 4 values per entry; KV head 1's 3 is refused, as is
    # KV head 0's 5, after a step that was right.
    ok = step(1, [1, 2], [3, 4])
    assert refused(run("knorm", [], [ok, step(2, [1, 2, 3, 4], [1, 2, 3])], query_heads=2, kv_heads=2,
                       head_dim=2)) == ("ATTENTION_LENGTH", 1, "length keys")
    assert refused(run("knorm", [], [step(2, [1, 2, 3, 4, 5], [1, 2, 3, 4])], query_heads=2, kv_heads=2,
                       head_dim=2)) == ("ATTENTION_LENGTH", 0, "length keys")
    # The length before any entry's value: KV head 0's NaN, KV head 1 short.
    assert refused(run("knorm", [], [step(1, [math.nan, 0.0], [1.0])], query_heads=2, kv_heads=2,
                       head_dim=2)) == ("ATTENTION_LENGTH", 0, "length keys")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_entry_not_finite(bad):
    for name, params in (("knorm", []), ("h2o", []), ("window", [("budget", 2)])):
        log = run(name, params, [step(1, [1.0, 2.0]), step(1, [0.0, bad])], head_dim=2)
        assert refused(log) == ("ATTENTION_VALUE", 1, "value keys"), name
        assert len(log.steps) == 1
    # KV head 1's entries too.
    assert refused(run("knorm", [], [step(1, [1.0, 2.0], [bad, 2.0])], query_heads=2, kv_heads=2,
                       head_dim=2)) == ("ATTENTION_VALUE", 0, "value keys")


def test_negative_and_negative_zero_entries_accepted():
    # Keys are signed: (-3, -4) scores -5 and goes; (-0.0, -0.0) scores +0.0.
    log = run("knorm", [("budget", 1)], [step(1, [-0.0, -0.0]), step(1, [-3.0, -4.0])], head_dim=2)
    assert log.rejection is None and victims(log) == [[], [1]]
    (p1, s1), (p0, s0) = cut(log.steps[1])
    assert (p1, s1) == (1, -5.0) and p0 == 0 and positive_zero(s0)


def test_keys_checked_after_the_column_totals():
    # Check 3: the totals' shape before the keys' shape.
    bad_totals = step(1, [1.0], queries=[[0.5]], totals=[[1.0, 1.0]], total_rows=1)
    assert refused(run("h2o", [], [bad_totals], head_dim=2)) == ("ATTENTION_LENGTH", 0, "length totals")
    # The keys' shape before every value (check 4): a NaN weight, a bad total.
    nan_row = step(1, [1.0, 2.0, 3.0], row=[math.nan])
    assert refused(run("h2o", [], [step(1, [1.0, 2.0]), nan_row], head_dim=2)) == ("ATTENTION_LENGTH", 1,
                                                                                  "length keys")
    bad_total = step(1, [1.0, 2.0, 3.0], queries=[[0.5]], totals=[[-1.0]], total_rows=1)
    assert refused(run("h2o", [], [bad_total], head_dim=2)) == ("ATTENTION_LENGTH", 0, "length keys")
    # Check 4: a row's weight, a query row's weight, a total before a key entry.
    nan = [math.nan, 0.0]
    assert refused(run("knorm", [], [step(1, [1.0, 2.0]), step(1, nan, row=[math.nan])], head_dim=2)) == (
        "ATTENTION_VALUE", 1, "value attention")
    assert refused(run("knorm", [], [step(1, nan, queries=[[-1.0]])], head_dim=2)) == (
        "ATTENTION_VALUE", 0, "value queries")
    assert refused(run("knorm", [], [step(1, nan, queries=[[1.0]], totals=[[math.inf]], total_rows=1)],
                       head_dim=2)) == ("ATTENTION_VALUE", 0, "value totals")


def test_other_policies_run_as_without_keys():
    # spec/tensors.md#policies-that-read-keys: after the checks, every other
    # policy ignores keys.
    rows = [None, [1.0], [0.25, 0.75], [0.5, 0.25, 0.25]]
    plain = [(1, r) for r in rows]
    keyed = [step(1, [float(i), -1.0], row=r) for i, r in enumerate(rows)]
    for name, params in (("h2o", [("budget", 2), ("recent_window", 0)]), ("tova", [("budget", 2)]),
                         ("window", [("budget", 2)]), ("streamingllm", [("budget", 2), ("sinks", 1)]),
                         ("random", [("budget", 2), ("recent_window", 0)]), ("full", [])):
        assert run(name, params, plain) == run(name, params, keyed, head_dim=2), name


def test_other_policies_with_several_kv_heads():
    # Hq = 4, Hkv = 2: two key entries a step, checked against Hkv whatever
    # the kept sets (one for window and openvino, one per KV head for h2o),
    # then ignored.
    rows = [None, [[1.0]] * 4, [[0.25, 0.75]] * 4, [[0.5, 0.25, 0.25]] * 4]
    plain = [(1, None, r or []) for r in rows]
    keyed = [step(1, [float(i), 1.0], [1.0, -float(i)], heads=r or []) for i, r in enumerate(rows)]
    for name, params in (("window", [("budget", 2)]), ("h2o", [("budget", 2), ("recent_window", 0)]),
                         ("openvino", [("budget", 2), ("sinks", 0), ("recent_window", 0), ("block", 1)])):
        without = run(name, params, plain, query_heads=4, kv_heads=2)
        assert without.rejection is None, name
        assert without == run(name, params, keyed, query_heads=4, kv_heads=2, head_dim=2), name
        one = [step(1, [float(i), 1.0], heads=r or []) for i, r in enumerate(rows)]
        assert refused(run(name, params, one, query_heads=4, kv_heads=2, head_dim=2)) == (
            "ATTENTION_LENGTH", 0, "length keys"), name


# -- The wire and a direct call ---------------------------------------------------

def test_through_the_testee():
    # head_dim and keys (binary32 on the wire) reach the harness: the worked
    # example, and a NaN entry refused.
    sc = kpb.Scenario(head_dim=2)
    for key in ([3.0, 4.0], [1.0, 0.0], [0.0, 2.0]):
        sc.steps.add(admit=1).keys.add().values.extend(key)
    req = cpb.Request(seq=1, case_id="knorm/basic", scenario=sc, want_cut=True,
                      policy=kpb.PolicyConfig(name="knorm", parameters=[kpb.Parameter(name="budget", value=2)]))
    log = handle_request(req).response.log
    assert [list(s.victims) for s in log.steps] == [[], [], [0]]
    assert [(c.position, c.score) for c in log.steps[2].cut] == [(0, -5.0), (2, -2.0), (1, -1.0)]
    sc.steps.add(admit=1).keys.add().values.extend([float("nan"), 0.0])
    req.scenario.CopyFrom(sc)
    rej = handle_request(req).response.log.rejection
    assert (rej.category, rej.step, rej.subject.check, list(rej.subject.names)) == (
        kpb.ATTENTION_VALUE, 3, "value", ["keys"])
    # Without head_dim: refused before the first step.
    sc.ClearField("head_dim")
    req.scenario.CopyFrom(sc)
    rej = handle_request(req).response.log.rejection
    assert (rej.category, rej.step, rej.subject.check) == (kpb.INVALID_HEADS, -1, "range")


def test_binary32_keys_widened_exactly():
    # 0.1 as binary32 (13421773 / 2^27) squared exactly in binary64.
    sc = kpb.Scenario(head_dim=1)
    sc.steps.add(admit=1).keys.add().values.append(0.1)
    sc.steps.add(admit=1).keys.add().values.append(1.0)
    req = cpb.Request(seq=1, scenario=sc, want_cut=True,
                      policy=kpb.PolicyConfig(name="knorm", parameters=[kpb.Parameter(name="budget", value=1)]))
    log = handle_request(req).response.log
    (_, s1), (_, s0) = [(c.position, c.score) for c in log.steps[1].cut]
    assert s0 == 0.0 - math.sqrt((13421773 / 2**27) ** 2) == -(13421773 / 2**27)


def test_direct_call():
    p = KnormPolicy({"budget": 2}, None, head_dim=2)
    assert p.step(0, 1, None, keys=[[3.0, 4.0]]).victims == []
    assert p.step(1, 2, [0.5], keys=[[1.0, 0.0, 0.0, 2.0]]).victims == [0]
    assert p.kept == [1, 2]
    from kvspec_port.errors import Refusal
    with pytest.raises(Refusal) as e:
        p.step(3, 1, [0.5, 0.5], keys=[[1.0]])
    assert (e.value.category, e.value.subject.names) == ("ATTENTION_LENGTH", ("keys",))
    with pytest.raises(Refusal) as e:
        p.step(3, 1, [0.5, 0.5], keys=[[math.inf, 1.0]])
    assert (e.value.category, e.value.subject.names) == ("ATTENTION_VALUE", ("keys",))
    with pytest.raises(Refusal) as e:
        KnormPolicy({"budget": 2}, None).step(0, 1, None, keys=[[1.0]])
    assert (e.value.category, e.value.subject.names) == ("INVALID_HEADS", ("head_dim",))
    with pytest.raises(Refusal) as e:
        p.step(2, 1, [0.5, 0.5], keys=[[1.0, 1.0]])  # not above position 2
    assert (e.value.category, e.value.subject) == ("POSITION", ("rule", ("admit",)))
    assert p.kept == [1, 2]  # a refused step changes nothing
    assert p.step(5, 1, [0.5, 0.5], keys=[[0.0, 0.5]]).victims == [2]  # gaps allowed; (0, 2) scores -2


def test_lower_precision_build_leaves_knorm_in_binary64(monkeypatch):
    # kvspec_port/precision.py rounds h2o's and tova's weights only: knorm's
    # scores come from keys, so no build wraps it, and a build of lower
    # precision does not list it (spec/arithmetic.md#range).
    import importlib

    import kvspec_port.policies as policies
    import kvspec_port.testee as testee
    from kvspec_port import precision
    try:
        monkeypatch.setenv("KVSPEC_PORT_PRECISION", "binary32")
        importlib.reload(precision)
        importlib.reload(policies)
        assert policies.REGISTRY["knorm"] is KnormPolicy
        assert "knorm" not in testee.hello_reply().hello.policies
    finally:
        monkeypatch.delenv("KVSPEC_PORT_PRECISION")
        importlib.reload(precision)
        importlib.reload(policies)
    assert "knorm" in testee.hello_reply().hello.policies
