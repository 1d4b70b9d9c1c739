"""The policy `keydiff` (spec/policies/keydiff.md, spec 0.17.0), worked by
hand from the spec: the card's worked example, its recent-window, "scores
move", several-KV-heads, tie and prefill examples, a zero key, and its
parameters and checks (knorm's, spec/policies/knorm.md#parameters).

Steps are (admit, attention-or-None, heads, queries, totals, total_rows,
keys): `keys` holds one list of admit x head_dim values per KV head, KV
head 0 first, each position's key in channel order. The card quotes its
scores truncated to three decimals ("-0.794.." for -0.79465..): `card`
checks a score against such a figure.
"""

import math

import pytest

from kvspec_port.harness import configure, run_scenario
from kvspec_port.policies import REGISTRY
from kvspec_port.policies.keydiff import KeyDiffPolicy, anchor, head_scores, unit
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request


def run(name, params, steps=(), trace=None, query_heads=None, kv_heads=None, head_dim=None):
    return run_scenario(name, list(params), 0, list(steps), trace, query_heads, kv_heads, head_dim)


def step(admit, *keys, row=None, heads=(), queries=(), totals=(), total_rows=0):
    """A step admitting `admit` positions with `keys` (one list per KV head)."""
    return (admit, row, list(heads), list(queries), list(totals), total_rows, [list(k) for k in keys])


def singles(*keys):
    """One position a step, one KV head: a step per key."""
    return [step(1, list(k)) for k in keys]


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


def card(score, figure):
    """`score` is the card's `figure` (three decimals, truncated: -0.894..
    is in (-0.895, -0.894])."""
    return math.trunc(score * 1000) == round(figure * 1000)


def cards(scores, figures):
    return len(scores) == len(figures) and all(card(s, f) for s, f in zip(scores, figures))


# -- The registry, the parameters and their rules (knorm's) ---------------------

def test_registered_right_after_knorm():
    # spec/README.md#policies: keydiff (0.17.0), then lagkv (0.18.0), then
    # simlayerkv (0.20.0).
    assert list(REGISTRY)[-5:] == ["openvino", "knorm", "keydiff", "lagkv", "simlayerkv"]
    assert REGISTRY["keydiff"] is KeyDiffPolicy
    # Reads keys, no attention (spec/tensors.md#policies-that-read-keys).
    assert KeyDiffPolicy.READS_KEYS and not KeyDiffPolicy.READS_ATTENTION


def test_parameters_and_defaults():
    cls, values = configure("keydiff", [])
    assert cls is KeyDiffPolicy
    # spec/policies/keydiff.md#parameters, in the card's order.
    assert list(values) == ["budget", "recent_window", "granularity", "aggregation", "prefill_only", "ratio_ppm"]
    assert values == {"budget": 512, "recent_window": 0, "granularity": 1, "aggregation": 0,
                      "prefill_only": 0, "ratio_ppm": 0}


@pytest.mark.parametrize("params, subject", [
    ([("budget", 0)], "range budget"),
    ([("budget", 2**32)], "range budget"),
    ([("recent_window", 2**32 - 1)], "range recent_window"),
    ([("granularity", 3)], "range granularity"),
    ([("aggregation", 3)], "range aggregation"),
    ([("prefill_only", 2)], "range prefill_only"),
    ([("ratio_ppm", 1000000)], "range ratio_ppm"),
    # Not taken (spec/policies/keydiff.md#parameters): each unknown.
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
    assert refused(run("keydiff", params)) == ("INVALID_PARAMETER", -1, subject)


def test_range_edges_accepted():
    params = [("budget", 2**32 - 1), ("recent_window", 2**32 - 2), ("granularity", 0), ("aggregation", 2),
              ("prefill_only", 1), ("ratio_ppm", 0)]
    log = run("keydiff", params, [step(1, [1.0])], head_dim=1)
    assert log.rejection is None and victims(log) == [[]]


def test_without_head_dim():
    # spec/policies/keydiff.md#parameters, spec/tensors.md#checks 1.3: refused
    # before the first step, with steps, a trace or neither.
    assert refused(run("keydiff", [], [(1, None)])) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("keydiff", [], [])) == ("INVALID_HEADS", -1, "range head_dim")
    assert refused(run("keydiff", [], trace=kpb.TraceConfig(steps=3))) == ("INVALID_HEADS", -1, "range head_dim")
    # A trace beside head_dim: the trace's rule (check 2) first.
    assert refused(run("keydiff", [], trace=kpb.TraceConfig(steps=3), head_dim=2)) == (
        "INVALID_TRACE", -1, "rule head_dim trace")


def test_keys_checked():
    # spec/tensors.md#checks 2 and 3, whatever the policy.
    assert refused(run("keydiff", [], [step(1, [1.0])], head_dim=2)) == ("ATTENTION_LENGTH", 0, "length keys")
    assert refused(run("keydiff", [], [step(1, [1.0, 2.0]), step(1, [math.nan, 0.0])], head_dim=2)) == (
        "ATTENTION_VALUE", 1, "value keys")


# -- The unit key and the anchor (spec/policies/keydiff.md#how-it-works) ---------

def test_unit_key():
    # Each entry divided by the norm, once: (0, 2) is (0, 1), (3, 4) (0.6, 0.8).
    assert unit([0.0, 2.0]) == [0.0, 1.0]
    assert unit([3.0, 4.0]) == [3.0 / 5.0, 4.0 / 5.0]
    assert unit([-3.0, 4.0]) == [-3.0 / 5.0, 4.0 / 5.0]
    # A zero key (-0.0 entries too): d zeros, +0.0 each.
    for key in ([0.0, 0.0], [-0.0, -0.0], [-0.0, 0.0, 0.0]):
        out = unit(key)
        assert len(out) == len(key) and all(positive_zero(x) for x in out), key


def test_anchor_is_the_unit_of_the_mean():
    # Unit keys (1, 0), (0, 1), (1, 0): the mean (2/3, 1/3), made unit.
    m0, m1 = 2.0 / 3.0, 1.0 / 3.0
    n = math.sqrt(m0 * m0 + m1 * m1)
    assert anchor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]) == [m0 / n, m1 / n]
    # A mean of zeros (opposite unit keys) is an anchor of zeros.
    out = anchor([[1.0, 0.0], [-1.0, 0.0]])
    assert all(positive_zero(x) for x in out)


# -- Worked examples (spec/policies/keydiff.md#how-it-works) ----------------------

# The worked example's exact scores: the anchor (2/3, 1/3) / n.
M0, M1 = 2.0 / 3.0, 1.0 / 3.0
N = math.sqrt(M0 * M0 + M1 * M1)
NEAR, FAR = 0.0 - M0 / N, 0.0 - M1 / N  # -0.894.., -0.447..


def test_nearest_the_anchor_goes():
    # One head, d = 2, budget 2, recent_window 0: keys (1, 0), (0, 2), (3, 0).
    # Positions 0 and 2 score -0.894.., 1 -0.447..; of the two equal lowest,
    # the lower position, 0, goes (spec/policies/keydiff.md#tie-breaking).
    log = run("keydiff", [("budget", 2)], singles([1, 0], [0, 2], [3, 0]), head_dim=2)
    assert log.rejection is None
    assert victims(log) == [[], [], [0]]
    assert [s.kept_count for s in log.steps] == [1, 2, 2]
    assert [s.query_cache_position for s in log.steps] == [0, 1, 2]
    assert cut(log.steps[2]) == [(0, NEAR), (2, NEAR), (1, FAR)]
    assert cards([NEAR, FAR], [-0.894, -0.447])


def test_no_recent_window():
    # Keys (1, 0), (0, 1), (1, 0.125) score -0.870.., -0.491.., -0.925..
    # (the anchor (0.870.., 0.491..)): with recent_window 0, position 2 goes.
    log = run("keydiff", [("budget", 2)], singles([1, 0], [0, 1], [1, 0.125]), head_dim=2)
    assert victims(log) == [[], [], [2]]
    c = cut(log.steps[2])
    assert [p for p, _ in c] == [2, 0, 1]
    assert cards([s for _, s in c], [-0.925, -0.870, -0.491])


def test_recent_window_protects():
    # recent_window 1: position 2 is protected, its key still counting in the
    # anchor, and 0 goes; the candidates' scores are those without the window.
    keys = singles([1, 0], [0, 1], [1, 0.125])
    log = run("keydiff", [("budget", 2), ("recent_window", 1)], keys, head_dim=2)
    assert victims(log) == [[], [], [0]]
    c = cut(log.steps[2])
    assert [p for p, _ in c] == [0, 1]  # the candidates only
    without = dict(cut(run("keydiff", [("budget", 2)], keys, head_dim=2).steps[2]))
    assert c == [(0, without[0]), (1, without[1])]
    # Had the protected key not counted, the anchor of (1, 0) and (0, 1)
    # would be (sqrt(1/2), sqrt(1/2)) and both would score alike.
    assert c[0][1] != c[1][1]


def test_scores_move():
    # Keys (1, 0), (0, 1), (0, 1), budget 2: the anchor (1/3, 2/3) made unit,
    # scores -0.447.., -0.894.., -0.894..: position 1 goes. A fourth key
    # (1, 0) makes the kept keys (1, 0), (0, 1), (1, 0): the anchor
    # (0.894.., 0.447..), and position 0 (-0.894.., the lower of two equal)
    # goes, where a score fixed at admission (-0.447..) would have kept it.
    log = run("keydiff", [("budget", 2)], singles([1, 0], [0, 1], [0, 1], [1, 0]), head_dim=2)
    assert victims(log) == [[], [], [1], [0]]
    assert cut(log.steps[2]) == [(1, NEAR), (2, NEAR), (0, FAR)]
    # Position 1's unit key was forgotten with it: the anchor is over 0, 2, 3.
    assert cut(log.steps[3]) == [(0, NEAR), (3, NEAR), (2, FAR)]


def test_evicted_slot_drops_its_unit_keys():
    p = KeyDiffPolicy({"budget": 2}, None, head_dim=2)
    for i, key in enumerate(([1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0])):
        p.step(i, 1, None, keys=[key])
    assert p.kept == [2, 3]
    assert p.kv_units == [[[0.0, 1.0], [1.0, 0.0]]]


def test_chunk_unit_keys_each_position():
    # One step admitting three: keys position-major, admit x d.
    log = run("keydiff", [("budget", 2)], [step(3, [1, 0, 0, 2, 3, 0])], head_dim=2)
    assert victims(log) == [[0]]
    assert cut(log.steps[0]) == [(0, NEAR), (2, NEAR), (1, FAR)]


def test_attention_ignored():
    # Rows are checked and not read: a huge weight on position 0 changes nothing.
    log = run("keydiff", [("budget", 2)],
              [step(1, [1, 0]), step(1, [0, 2], row=[1.0]), step(1, [3, 0], row=[1000.0, 0.0])], head_dim=2)
    assert victims(log) == [[], [], [0]]


def test_zero_key():
    # Keys (0, 0), (1, 0), (1, 0), budget 2: the unit keys (0, 0), (1, 0),
    # (1, 0); the mean (2/3, 0) made unit is (1, 0); positions 1 and 2 score
    # -1, the zero key +0.0 (sign bit clear): position 1 goes.
    log = run("keydiff", [("budget", 2)], singles([0, 0], [1, 0], [1, 0]), head_dim=2)
    assert victims(log) == [[], [], [1]]
    (p1, s1), (p2, s2), (p0, s0) = cut(log.steps[2])
    assert (p1, s1, p2, s2, p0) == (1, -1.0, 2, -1.0, 0)
    assert positive_zero(s0)


def test_all_zero_keys():
    # Every unit key zeros, the anchor zeros: every score +0.0, a tie the
    # lowest position breaks.
    log = run("keydiff", [("budget", 2)], singles([0, -0.0], [-0.0, 0], [0, 0]), head_dim=2)
    assert victims(log) == [[], [], [0]]
    c = cut(log.steps[2])
    assert [p for p, _ in c] == [0, 1, 2] and all(positive_zero(s) for _, s in c)


# -- Several KV heads (spec/policies/keydiff.md#several-kv-heads) ----------------

# Hq = Hkv = 2, one step admitting 0, 1 and 2: KV head 0's keys (1, 0),
# (0, 1), (2, 1); KV head 1's (2, 1), (1, 2), (-1, 1).
LAYER_STEP = step(3, [1, 0, 0, 1, 2, 1], [2, 1, 1, 2, -1, 1])


def kv_head_scores():
    """Each KV head's scores by position, from the kv_head sets' cuts."""
    log = run("keydiff", [("budget", 2)], [LAYER_STEP], query_heads=2, kv_heads=2, head_dim=2)
    return [dict(cut(s)) for s in log.steps[0].sets]


def test_kv_head_scores():
    h0, h1 = kv_head_scores()
    assert cards([h0[p] for p in range(3)], [-0.794, -0.607, -0.982])
    assert cards([h1[p] for p in range(3)], [-0.691, -0.986, -0.466])


def test_layer_mean():
    # mean: -0.743.., -0.796.., -0.724..: position 1 goes. The mean is one
    # division of the KV head order sum.
    log = run("keydiff", [("budget", 2), ("granularity", 0), ("aggregation", 0)], [LAYER_STEP],
              query_heads=2, kv_heads=2, head_dim=2)
    assert victims(log) == [[1]]
    assert log.steps[0].sets == [] and log.steps[0].kept_count == 2
    h0, h1 = kv_head_scores()
    combined = {p: (0.0 + h0[p] + h1[p]) / 2.0 for p in range(3)}
    assert cut(log.steps[0]) == [(1, combined[1]), (0, combined[0]), (2, combined[2])]
    assert cards([combined[p] for p in range(3)], [-0.743, -0.796, -0.724])


def test_layer_max():
    # max: -0.691.., -0.607.., -0.466..: position 0 goes.
    log = run("keydiff", [("budget", 2), ("granularity", 0), ("aggregation", 1)], [LAYER_STEP],
              query_heads=2, kv_heads=2, head_dim=2)
    assert victims(log) == [[0]]
    h0, h1 = kv_head_scores()
    combined = {p: max(h0[p], h1[p]) for p in range(3)}
    assert cut(log.steps[0]) == [(0, combined[0]), (1, combined[1]), (2, combined[2])]
    assert cards([combined[p] for p in range(3)], [-0.691, -0.607, -0.466])


def test_layer_sum():
    # sum: as with mean, position 1 goes.
    log = run("keydiff", [("budget", 2), ("granularity", 0), ("aggregation", 2)], [LAYER_STEP],
              query_heads=2, kv_heads=2, head_dim=2)
    assert victims(log) == [[1]]
    h0, h1 = kv_head_scores()
    assert cut(log.steps[0]) == [(p, 0.0 + h0[p] + h1[p]) for p in (1, 0, 2)]


def test_kv_head_sets():
    # The default kv_head: set 0 ranks KV head 0 (2 goes), set 1 KV head 1
    # (1 goes); one record per set, in set order.
    log = run("keydiff", [("budget", 2)], [LAYER_STEP], query_heads=2, kv_heads=2, head_dim=2)
    (record,) = log.steps
    assert record.victims == [] and len(record.sets) == 2
    assert [s.victims for s in record.sets] == [[2], [1]]
    assert [s.kept_count for s in record.sets] == [2, 2]


def test_query_head_sets_read_their_kv_head():
    # Hq = 4, Hkv = 2: query heads 0 and 1 read KV head 0, 2 and 3 KV head 1.
    log = run("keydiff", [("budget", 2), ("granularity", 2)], [LAYER_STEP], query_heads=4, kv_heads=2,
              head_dim=2)
    assert [s.victims for s in log.steps[0].sets] == [[2], [2], [1], [1]]
    # A layer set combines its two KV heads, not its four query heads.
    log = run("keydiff", [("budget", 2), ("granularity", 0)], [LAYER_STEP], query_heads=4, kv_heads=2,
              head_dim=2)
    assert victims(log) == [[1]]


def test_anchor_per_set_over_its_kept_positions():
    # kv_head sets keep different positions: each KV head's anchor is over
    # its own set's kept positions. A second step admitting (1, 0) under
    # both KV heads: set 0 keeps 0, 1, 3 (unit keys (1, 0), (0, 1), (1, 0)),
    # the worked example's anchor: 0 goes. Set 1 keeps 0, 2, 3.
    log = run("keydiff", [("budget", 2)], [LAYER_STEP, step(1, [1, 0], [1, 0])], query_heads=2, kv_heads=2,
              head_dim=2)
    s0, s1 = log.steps[1].sets
    assert s0.victims == [0]
    assert cut(s0) == [(0, NEAR), (3, NEAR), (1, FAR)]
    us = [unit([2.0, 1.0]), unit([-1.0, 1.0]), [1.0, 0.0]]
    expect = dict(zip((0, 2, 3), head_scores(us)))
    assert dict(cut(s1)) == expect


# -- At prefill (spec/policies/keydiff.md#at-prefill) -----------------------------

def test_prefill_ratio():
    # ratio_ppm 500000, prefill_only 1, a prefill of 4 positions with keys
    # (1, 0), (2, 0), (0, 1), (1, 1): the ratio budget is 2; the scores are
    # -0.845.., -0.845.., -0.533.., -0.975..: positions 3 and 0 go. A decode
    # step after it evicts nothing, though 3 are kept and budget is 1.
    params = [("budget", 1), ("prefill_only", 1), ("ratio_ppm", 500000)]
    log = run("keydiff", params,
              [step(4, [1, 0, 2, 0, 0, 1, 1, 1], queries=[[0.25] * 4]), step(1, [9, 9], row=[0.25] * 4)],
              head_dim=2)
    assert log.rejection is None
    assert victims(log) == [[0, 3], []]
    assert [s.kept_count for s in log.steps] == [2, 3]
    c = cut(log.steps[0])
    assert [p for p, _ in c] == [3, 0, 1, 2]
    assert cards([s for _, s in c], [-0.975, -0.845, -0.845, -0.533])
    assert c[1][1] == c[2][1]


def test_prefill_without_query_rows_is_a_decode_step():
    params = [("budget", 1), ("prefill_only", 1), ("ratio_ppm", 500000)]
    log = run("keydiff", params, [step(4, [1, 0, 2, 0, 0, 1, 1, 1])], head_dim=2)
    assert victims(log) == [[]]


# -- The wire, a direct call and builds of lower precision ------------------------

def test_through_the_testee():
    sc = kpb.Scenario(head_dim=2)
    for key in ([1.0, 0.0], [0.0, 2.0], [3.0, 0.0]):
        sc.steps.add(admit=1).keys.add().values.extend(key)
    req = cpb.Request(seq=1, case_id="keydiff/basic", scenario=sc, want_cut=True,
                      policy=kpb.PolicyConfig(name="keydiff", parameters=[kpb.Parameter(name="budget", value=2)]))
    log = handle_request(req).response.log
    assert [list(s.victims) for s in log.steps] == [[], [], [0]]
    assert [(c.position, c.score) for c in log.steps[2].cut] == [(0, NEAR), (2, NEAR), (1, FAR)]
    sc.ClearField("head_dim")
    req.scenario.CopyFrom(sc)
    rej = handle_request(req).response.log.rejection
    assert (rej.category, rej.step, rej.subject.check) == (kpb.INVALID_HEADS, -1, "range")


def test_direct_call():
    from kvspec_port.errors import Refusal
    p = KeyDiffPolicy({"budget": 2}, None, head_dim=2)
    assert p.step(0, 1, None, keys=[[1.0, 0.0]]).victims == []
    assert p.step(1, 2, [0.5], keys=[[0.0, 2.0, 3.0, 0.0]]).victims == [0]
    assert p.kept == [1, 2]
    with pytest.raises(Refusal) as e:
        p.step(3, 1, [0.5, 0.5], keys=[[1.0]])
    assert (e.value.category, e.value.subject.names) == ("ATTENTION_LENGTH", ("keys",))
    with pytest.raises(Refusal) as e:
        KeyDiffPolicy({"budget": 2}, None).step(0, 1, None, keys=[[1.0]])
    assert (e.value.category, e.value.subject.names) == ("INVALID_HEADS", ("head_dim",))
    with pytest.raises(Refusal) as e:
        p.step(2, 1, [0.5, 0.5], keys=[[1.0, 1.0]])  # not above position 2
    assert (e.value.category, e.value.subject) == ("POSITION", ("rule", ("admit",)))
    with pytest.raises(TypeError):
        p.step_unchecked(3, 1, [0.5, 0.5])
    assert p.kept == [1, 2]  # a refused step changes nothing
    # Gaps allowed: (0, 1) at 5 joins unit keys (0, 1) at 1 and (1, 0) at 2:
    # the "scores move" example's first step, 1 and 5 tie lowest, 1 goes.
    assert p.step(5, 1, [0.5, 0.5], keys=[[0.0, 1.0]]).victims == [1]


def test_lower_precision_build_leaves_keydiff_in_binary64(monkeypatch):
    # Scores from keys: no build wraps keydiff, and a build of lower precision
    # does not list it (spec/arithmetic.md#range).
    import importlib

    import kvspec_port.policies as policies
    import kvspec_port.testee as testee
    from kvspec_port import precision
    try:
        monkeypatch.setenv("KVSPEC_PORT_PRECISION", "binary32")
        importlib.reload(precision)
        importlib.reload(policies)
        assert policies.REGISTRY["keydiff"].__name__ == "KeyDiffPolicy"
        assert "keydiff" not in testee.hello_reply().hello.policies
    finally:
        monkeypatch.delenv("KVSPEC_PORT_PRECISION")
        importlib.reload(precision)
        importlib.reload(policies)
    assert "keydiff" in testee.hello_reply().hello.policies
