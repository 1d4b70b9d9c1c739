"""PyramidKV, per-layer budgets at a prefill step, a mode of snapkv
(spec/policies/pyramidkv.md, spec 0.19.0, the feature `pyramid`).

Every expected number below is worked by hand from the card's text (its
formulas and its worked examples), not read from the port's output.
"""

import random

import pytest

from kvspec_port import FEATURES
from kvspec_port.errors import INVALID_PARAMETER, Refusal, Subject
from kvspec_port.harness import configure, run_scenario
from kvspec_port.policies import REGISTRY
from kvspec_port.prefill import ratio_budget
from kvspec_port.pyramid import factory_budget, kvpress_budget, round_half_even


def run(params, steps, query_heads=None, kv_heads=None):
    return run_scenario("snapkv", list(params), 0, list(steps), None, query_heads, kv_heads)


def victims(log):
    assert log.rejection is None, log.rejection
    return [s.victims for s in log.steps]


def subject(name, params):
    with pytest.raises(Refusal) as e:
        configure(name, params)
    assert e.value.category == INVALID_PARAMETER
    return " ".join((e.value.subject.check,) + e.value.subject.names)


def prompt(n, m):
    """A prefill step admitting positions 0 .. n-1 with the rows of its last
    m queries (spec/prefill.md#query-rows: query q's row has q + 1
    weights). Position p gets (p + 1) / 1024 from every query (exact in
    binary32, and the sums of at most 64 of them exact in binary64), so a
    prefix slot's score rises with its position: the victims are the
    lowest candidates."""
    rows = [[(p + 1) / 1024 for p in range(q + 1)] for q in range(n - m, n)]
    return (n, None, [], rows)


# Pooling off, nothing protected by position: the step's victims are then
# the lowest positions, as many as the budget says.
PLAIN = [("recent_window", 0), ("pool_kernel", 1)]


# -- The feature and the parameters (spec/policies/pyramidkv.md#parameters) ---

def test_feature_announced_after_values():
    # spec/features.md (0.19.0): `pyramid` after `values`.
    assert FEATURES[-2:] == ("values", "pyramid")


def test_parameters_defaults_and_ranges():
    cls, values = configure("snapkv", [])
    names = [p[0] for p in cls.PARAMS]
    # spec/policies/snapkv.md#parameters: after window_budget, before slack.
    i = names.index("window_budget")
    assert names[i:i + 6] == ["window_budget", "pyramid", "pyramid_beta", "layer", "layers", "slack"]
    assert [values[k] for k in ("pyramid", "pyramid_beta", "layer", "layers")] == [0, 20, 0, 1]
    ranges = {p[0]: (p[2], p[3]) for p in cls.PARAMS}
    assert ranges["pyramid"] == (0, 2)
    assert ranges["pyramid_beta"] == (1, 2 ** 20)
    assert ranges["layer"] == (0, 65535)
    assert ranges["layers"] == (1, 65536)


@pytest.mark.parametrize("params, name", [
    ([("pyramid", 3)], "pyramid"),
    ([("pyramid", -1)], "pyramid"),
    ([("pyramid_beta", 0)], "pyramid_beta"),
    ([("pyramid_beta", 2 ** 20 + 1)], "pyramid_beta"),
    ([("layer", 65536), ("layers", 65536)], "layer"),
    ([("layers", 0)], "layers"),
    ([("layers", 65537)], "layers"),
])
def test_range_refusals(params, name):
    assert subject("snapkv", params) == f"range {name}"


def test_edges_accepted():
    configure("snapkv", [("pyramid_beta", 1)])
    configure("snapkv", [("pyramid_beta", 2 ** 20)])
    configure("snapkv", [("layer", 65535), ("layers", 65536)])


@pytest.mark.parametrize("name", [n for n in REGISTRY if n != "snapkv"])
def test_only_snapkv_takes_them(name):
    for pname in ("pyramid", "pyramid_beta", "layer", "layers"):
        assert subject(name, [(pname, 0 if pname in ("pyramid", "layer") else 1)]) == f"unknown {pname}"


# -- The four rules, their subjects and order ----------------------------------

@pytest.mark.parametrize("params, expected", [
    # 1. layer < layers, whatever pyramid is.
    ([("layer", 1)], "rule layer layers"),
    ([("layer", 3), ("layers", 3)], "rule layer layers"),
    ([("layer", 5), ("layers", 2), ("pyramid", 2), ("window_budget", 1)], "rule layer layers"),
    # 2. pyramid 1 needs ratio_ppm above 0, pyramid 2 needs it 0.
    ([("pyramid", 1)], "rule pyramid ratio_ppm"),
    ([("pyramid", 2), ("recent_window", 0), ("ratio_ppm", 500000), ("window_budget", 1)],
     "rule pyramid ratio_ppm"),
    # 3. pyramid 2 needs window_budget 1.
    ([("pyramid", 2)], "rule pyramid window_budget"),
    # In order: rule 1 before rule 2, rule 2 before rule 3.
    ([("pyramid", 1), ("layer", 1)], "rule layer layers"),
    ([("pyramid", 2), ("recent_window", 0), ("ratio_ppm", 1)], "rule pyramid ratio_ppm"),
])
def test_rules(params, expected):
    assert subject("snapkv", params) == expected


def test_rules_accepted():
    configure("snapkv", [("layer", 2), ("layers", 3)])  # pyramid 0: only rule 1
    configure("snapkv", [("pyramid", 1), ("recent_window", 0), ("ratio_ppm", 1)])
    configure("snapkv", [("pyramid", 2), ("window_budget", 1), ("recent_window", 0)])
    # pyramid 0 with ratio_ppm 0 or above, and window_budget 0 or 1.
    configure("snapkv", [("recent_window", 0), ("ratio_ppm", 500000), ("pyramid_beta", 7)])


@pytest.mark.parametrize("params, expected", [
    # After snapkv's own rules (recent_window < budget, pool_kernel odd) ...
    ([("budget", 4), ("recent_window", 4), ("layer", 1)], "rule recent_window budget"),
    ([("pool_kernel", 4), ("pyramid", 1)], "rule pool_kernel"),
    # ... and spec/prefill.md's (ratio_ppm needs recent_window 0; adaptive):
    ([("ratio_ppm", 500000), ("pyramid", 1)], "rule ratio_ppm recent_window"),
    # pyramid 1 with adaptive 1 is refused by the adaptive rule (ratio_ppm
    # above 0), pyramid 2 too (window_budget 1) (the card's own words).
    ([("adaptive", 1), ("recent_window", 0), ("ratio_ppm", 500000), ("pyramid", 1)], "rule adaptive ratio_ppm"),
    ([("adaptive", 1), ("window_budget", 1), ("pyramid", 2)], "rule adaptive window_budget"),
    ([("adaptive", 1), ("layer", 1)], "rule layer layers"),  # adaptive's rule passes: rule 1 next
    # ... and before the triggers' and the blocks'.
    ([("slack", 1), ("interval", 1), ("layer", 1)], "rule layer layers"),
    ([("slack", 1), ("interval", 1), ("pyramid", 2)], "rule pyramid window_budget"),
    ([("block", 2), ("budget", 4), ("recent_window", 0), ("ratio_ppm", 1), ("pyramid", 2),
      ("window_budget", 1)], "rule pyramid ratio_ppm"),
    ([("block", 2), ("budget", 5), ("recent_window", 0), ("pyramid", 2)], "rule pyramid window_budget"),
    # pyramid 2 with block above 1 is refused by the blocks' rule.
    ([("block", 2), ("budget", 4), ("recent_window", 0), ("pyramid", 2), ("window_budget", 1)],
     "rule block window_budget"),
    ([("slack", 1), ("interval", 1), ("pyramid", 2), ("window_budget", 1), ("recent_window", 0)],
     "rule slack interval"),
    # 3. pyramid 1 needs window_budget 0; 4. pyramid 2 needs recent_window 0.
    ([("pyramid", 1), ("recent_window", 0), ("ratio_ppm", 1), ("window_budget", 1)],
     "rule pyramid window_budget"),
    ([("pyramid", 2), ("window_budget", 1)], "rule pyramid recent_window"),
])
def test_rule_order(params, expected):
    assert subject("snapkv", params) == expected


def test_refusal_through_a_scenario():
    log = run([("layer", 4), ("layers", 4)], [prompt(4, 1)])
    assert log.rejection[0] == INVALID_PARAMETER and log.rejection[1] == -1
    assert (log.rejection[3].check, log.rejection[3].names) == ("rule", ("layer", "layers"))
    assert log.steps == []


# -- round_half_even (spec/policies/pyramidkv.md#pyramid-1-kvpress) -----------

def test_round_half_even_card_values():
    assert round_half_even(2.5) == 2
    assert round_half_even(7.5) == 8


@pytest.mark.parametrize("x, expected", [
    (0.0, 0), (0.25, 0), (0.5, 0), (0.75, 1), (1.5, 2), (3.5, 4), (4.5, 4), (12.5, 12), (13.5, 14),
    (29.25, 29), (6.825, 7), (2.4999999999999996, 2), (2.5000000000000004, 3),
    (0.49999999999999994, 0), (1e15 + 0.5, 10 ** 15), (2.0 ** 52 + 1, 2 ** 52 + 1), (17.0, 17),
])
def test_round_half_even(x, expected):
    result = round_half_even(x)
    assert result == expected and type(result) is int


def test_round_half_even_is_pythons_round():
    rng = random.Random(19)
    xs = [rng.uniform(0, 1000) for _ in range(2000)] + [k / 2 for k in range(0, 400)] + \
         [k / 4 for k in range(0, 400)]
    for x in xs:
        assert round_half_even(x) == round(x), x


# -- The six worked examples (spec/policies/pyramidkv.md#worked-examples) ----

def test_example_1_kvpress():
    # n 40, ratio 0.5, w 4, beta 2, layers 3: u = 20, c = 24, a = 20,
    # lo = 10, hi = 30 < 36; 40 >= 30 >= 10 >= 4; steps = 10: 30, 20, 10.
    assert [kvpress_budget(40, 500000, 4, 2, layer, 3) for layer in range(3)] == [30, 20, 10]
    # 60 in all, what three budgets of 20 keep.
    assert sum(kvpress_budget(40, 500000, 4, 2, layer, 3) for layer in range(3)) == 3 * ratio_budget(40, 500000)


def test_example_2_kvpress_halves():
    # n 10, ratio 0.5, w 1, beta 2, layers 2: u = 5, a = 5, lo = 2.5,
    # hi = 7.5, steps = 5: round_half_even(7.5) = 8, round_half_even(2.5) = 2.
    assert [kvpress_budget(10, 500000, 1, 2, layer, 2) for layer in range(2)] == [8, 2]


def test_example_3_kvpress_clip():
    # n 20, ratio 0.25, w 2, beta 20, layers 4: u = 15, a = 15, lo = 0.75,
    # hi = 29.25 >= 18, so hi = 18, lo = 12; steps = 2: 18, 16, 14, 12.
    assert [kvpress_budget(20, 250000, 2, 20, layer, 4) for layer in range(4)] == [18, 16, 14, 12]


def test_example_4_kvpress_fallback():
    # n 7, ratio 0.5, w 4, beta 20: u = 3.5, a = 3.5, hi = 6.825 >= 3, so
    # hi = 3, lo = 4; 3 >= 4 fails: B = round_half_even(3.5) = 4 at every layer.
    for layers in (1, 2, 5):
        assert [kvpress_budget(7, 500000, 4, 20, layer, layers) for layer in range(layers)] == [4] * layers
    # The fallback rounds where a plain ratio floors: 4 against 3.
    assert ratio_budget(7, 500000) == 3


def test_example_5_kvcache_factory():
    # budget 10, w 2, beta 4, layers 4. At n 30: lo = 10 // 4 = 2,
    # hi = 20 - 2 = 18 < 28, steps = 16 // 3 = 5: 18, 13, 8, 3 (42, not 40).
    b = [factory_budget(30, 10, 2, 4, layer, 4) for layer in range(4)]
    assert b == [18, 13, 8, 3] and sum(b) == 42
    # At n 15 (below 2 * budget) every layer keeps 10; at n 11 (below
    # budget + w) too, and (11 - 2) - 10 < 0: nothing goes.
    assert [factory_budget(15, 10, 2, 4, layer, 4) for layer in range(4)] == [10] * 4
    assert [factory_budget(11, 10, 2, 4, layer, 4) for layer in range(4)] == [10] * 4


def test_example_6_kvcache_factory_clip():
    # budget 10, w 6, beta 4, layers 3, n 22: lo = 2, hi = 18 >= 16, so
    # hi = 16, lo = 20 - 16 = 4; steps = 12 // 2 = 6: 16, 10, 4.
    assert [factory_budget(22, 10, 6, 4, layer, 3) for layer in range(3)] == [16, 10, 4]


def test_factory_two_layers():
    # budget 10, w 2, beta 4, layers 2, n 30: lo 2, hi 18 < 28,
    # steps = 16 // 1 = 16: 18 and 2.
    assert [factory_budget(30, 10, 2, 4, layer, 2) for layer in range(2)] == [18, 2]


def test_factory_at_twice_budget():
    # n 20 = 2 * budget is not below 2 * budget (nor below budget + w = 12):
    # the pyramid. budget 10, w 2, beta 4, layers 4: lo 2, hi 18 >= 18, so
    # hi = 18, lo = 20 - 18 = 2; steps 16 // 3 = 5: 18, 13, 8, 3.
    assert [factory_budget(20, 10, 2, 4, layer, 4) for layer in range(4)] == [18, 13, 8, 3]


def test_one_layer_takes_the_largest_budget():
    # "With one layer (layers 1): every formula gives the layer the largest
    # budget"; steps is 0 (KVCache-Factory would divide by zero).
    assert kvpress_budget(40, 500000, 4, 2, 0, 1) == 30  # hi of example 1
    assert factory_budget(30, 10, 2, 4, 0, 1) == 18  # hi of example 5


def test_factory_budget_may_be_zero():
    # budget 10, w 2, beta 1, layers 2, n 30: lo = 10, hi = 20 - 10 = 10 < 28,
    # steps = 0 // 1 = 0: both 10. beta 20: lo = 0, hi = 20, steps = 20: 20, 0.
    assert [factory_budget(30, 10, 2, 1, layer, 2) for layer in range(2)] == [10, 10]
    assert [factory_budget(30, 10, 2, 20, layer, 2) for layer in range(2)] == [20, 0]


def test_kvpress_fallback_clamps_to_one():
    # n 1, ratio 0.9, w 1, beta 20: u = 0.09999999999999998 (prefill.md's
    # 1 - 0.9), a = (1 + u) - 1, lo = a / 20, hi = 2a - lo >= 1 - 1 = 0, so
    # hi = 0, lo = 2a > 0: hi >= lo fails; round_half_even(u) = 0, B = max(1, 0) = 1.
    assert kvpress_budget(1, 900000, 1, 20, 0, 1) == 1


def test_kvpress_a_is_not_always_u():
    # "a = c - double(w)  # not always u". n 25, ratio 0.42, w 3, beta 1:
    # t = 1 - 0.42 = 0.5800000000000001, u = 25 t = 14.500000000000002
    # (14.5 + 2^-49, one ulp above 14.5); c = 3 + u = 17.5 + 2^-49, half an
    # ulp of [16, 32) (2^-48) above 17.5: a tie, to even, c = 17.5; a = 14.5.
    # lo = a / 1 = 14.5, hi = 2a - lo = 14.5 < 22; 25 >= 14.5 >= 14.5 >= 3;
    # steps = 0 at every layer: B = round_half_even(14.5) = 14. From u
    # itself it would be round_half_even(14.500000000000002) = 15.
    assert 1.0 - 420000 / 1000000.0 == 0.5800000000000001
    assert 25.0 * 0.5800000000000001 == 14.5 + 2.0 ** -49
    assert 3.0 + (14.5 + 2.0 ** -49) == 17.5
    assert [kvpress_budget(25, 420000, 3, 1, layer, 14) for layer in (0, 11, 13)] == [14, 14, 14]


def test_kvpress_clip_recomputes_lo_in_binary64():
    # The clip's "lo = a * 2.0 - hi" is not lo again when hi was rounded.
    # n 10, ratio 0.46, w 1, beta 3, layers 73, layer 65: t = 0.54,
    # u = 5.4 (the binary64 nearest), c = 6.4, a = 5.4, lo = 1.8,
    # hi = 10.8 - 1.8, rounded: 9.0 = n - w, so the clip is taken (>=): hi
    # stays 9, lo = 10.8 - 9 = 1.8000000000000007 (the exact difference of
    # the binary64 10.8 and 9), not lo's 1.8. steps = (9 -
    # 1.8000000000000007) / 72 = 0.09999999999999999, and 9 - 65 * steps =
    # 2.500000000000001: B = 3. Without the clip (or with lo kept) steps is
    # 0.1, 9 - 6.5 = 2.5 exactly, and round_half_even gives 2.
    a = (1.0 + 10 * (1.0 - 460000 / 1000000.0)) - 1.0
    assert a == 5.4 and a / 3.0 == 1.8 and a * 2.0 - 1.8 == 9.0
    assert a * 2.0 - 9.0 == 1.8000000000000007
    assert (9.0 - 1.8000000000000007) / 72.0 == 0.09999999999999999
    assert 9.0 - 65.0 * 0.09999999999999999 == 2.500000000000001
    assert kvpress_budget(10, 460000, 1, 3, 65, 73) == 3


def test_kvpress_fallback_when_lo_below_w():
    # n 100, ratio 0.75, w 4, beta 20: u = 25, a = 25, lo = 1.25,
    # hi = 48.75 < 96, no clip; 100 >= 48.75 >= 1.25 holds but 1.25 >= 4
    # fails: the fallback, round_half_even(25) = 25 at every layer.
    assert [kvpress_budget(100, 750000, 4, 20, layer, 3) for layer in range(3)] == [25, 25, 25]


def test_kvpress_n_below_w_compares_signed():
    # n 3, ratio 0.5, w 4: u = 1.5, c = 5.5, a = 1.5, lo = 0.75, hi = 2.25
    # >= 3 - 4 = -1: hi = -1, lo = 3 - (-1) = 4; 3 >= -1 holds, -1 >= 4
    # fails: the fallback, round_half_even(1.5) = 2.
    assert kvpress_budget(3, 500000, 4, 2, 0, 2) == 2


# -- The worked examples run as scenarios (#how-it-works) ---------------------

def test_scenario_example_1_inside():
    # pyramid 1, window_budget 0 (inside): n - B go, the lowest prefix
    # positions (the window's 36..39 rank above every prefix slot).
    params = PLAIN + [("ratio_ppm", 500000), ("obs_window", 4), ("pyramid", 1), ("pyramid_beta", 2),
                      ("layers", 3)]
    for layer, b in enumerate([30, 20, 10]):
        log = run(params + [("layer", layer)], [prompt(40, 4)])
        assert victims(log) == [list(range(40 - b))]
        assert log.steps[0].kept_count == b


def test_scenario_example_2_halves():
    params = PLAIN + [("ratio_ppm", 500000), ("obs_window", 1), ("pyramid", 1), ("pyramid_beta", 2),
                      ("layers", 2)]
    assert victims(run(params + [("layer", 0)], [prompt(10, 1)])) == [[0, 1]]  # keeps 8
    assert victims(run(params + [("layer", 1)], [prompt(10, 1)])) == [list(range(8))]  # keeps 2


def test_scenario_example_4_fallback_keeps_four_of_seven():
    params = PLAIN + [("ratio_ppm", 500000), ("obs_window", 4), ("pyramid", 1), ("layers", 3)]
    for layer in range(3):
        assert victims(run(params + [("layer", layer)], [prompt(7, 4)])) == [[0, 1, 2]]
    # Without the pyramid, floor(3.5) = 3 are kept: 4 go.
    assert victims(run(PLAIN + [("ratio_ppm", 500000), ("obs_window", 4)], [prompt(7, 4)])) == [[0, 1, 2, 3]]


def test_scenario_example_5_kvcache_factory():
    # pyramid 2 (window_budget 1): (n - w) - B prefix positions go, and the
    # layer keeps B prefix positions and the window's 2.
    params = PLAIN + [("budget", 10), ("obs_window", 2), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 4), ("window_budget", 1)]
    for layer, b in enumerate([18, 13, 8, 3]):
        log = run(params + [("layer", layer)], [prompt(30, 2)])
        assert victims(log) == [list(range(28 - b))]
        assert log.steps[0].kept_count == b + 2
    for layer in range(4):
        # n 15: (15 - 2) - 10 = 3 go; n 11: nothing.
        assert victims(run(params + [("layer", layer)], [prompt(15, 2)])) == [[0, 1, 2]]
        assert victims(run(params + [("layer", layer)], [prompt(11, 2)])) == [[]]


def test_scenario_example_6_clip():
    params = PLAIN + [("budget", 10), ("obs_window", 6), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 3), ("window_budget", 1)]
    for layer, b in enumerate([16, 10, 4]):
        assert victims(run(params + [("layer", layer)], [prompt(22, 6)])) == [list(range(16 - b))]


def test_scenario_w_is_obs_window_not_the_rows():
    # "w in the formulas is the parameter obs_window ..., not the window of
    # the step's query rows". Example 6 (obs_window 6, n 22) with one query
    # row: B is 16, 10, 4 from w = 6 (with w = 1 it would be hi = 18 < 21,
    # lo = 2, steps 8: 18, 10, 2); the step's window is min(6, 1) = 1
    # (spec/policies/snapkv.md#at-prefill), so (22 - 1) - B go: 5, 11, 17.
    params = PLAIN + [("budget", 10), ("obs_window", 6), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 3), ("window_budget", 1)]
    for layer, k in enumerate([5, 11, 17]):
        assert victims(run(params + [("layer", layer)], [prompt(22, 1)])) == [list(range(k))]
    # Example 3 (kvpress, obs_window 2, n 20) with one query row: 18, 16, 14,
    # 12 from w = 2 (w = 1 would clip hi to 19 and give layer 0 19); inside,
    # n - B go: 2 at layer 0, 8 at layer 3.
    params = PLAIN + [("ratio_ppm", 250000), ("obs_window", 2), ("pyramid", 1), ("pyramid_beta", 20),
                      ("layers", 4)]
    assert victims(run(params, [prompt(20, 1)])) == [[0, 1]]
    assert victims(run(params + [("layer", 3)], [prompt(20, 1)])) == [list(range(8))]


def test_scenario_factory_fewer_rows_than_obs_window():
    # budget 2, obs_window 10, layers 2, a prompt of 6 positions with one
    # query row: 6 < budget + w = 12, so B = budget = 2 (w is obs_window);
    # the step's window is min(10, 1) = 1, so (6 - 1) - 2 = 3 prefix
    # positions go.
    params = PLAIN + [("budget", 2), ("obs_window", 10), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 2), ("window_budget", 1)]
    for layer in range(2):
        assert victims(run(params + [("layer", layer)], [prompt(6, 1)])) == [[0, 1, 2]]


def test_scenario_several_heads_each_set_its_own_n():
    # Two query heads, granularity 2 (one kept set per head): each set has
    # n 30 and keeps example 5's budget for layer 1.
    params = PLAIN + [("budget", 10), ("obs_window", 2), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 4), ("window_budget", 1), ("layer", 1), ("granularity", 2)]
    rows = prompt(30, 2)[3]
    log = run(params, [(30, None, [], rows + rows)], query_heads=2, kv_heads=2)
    assert log.rejection is None
    assert [s.victims for s in log.steps[0].sets] == [list(range(15)), list(range(15))]


def test_decode_steps_evict_to_budget():
    # The pyramid decides a prefill step's budget only: after example 5's
    # layer 0 (20 kept), a decode step (one admitted, a row) evicts down
    # to budget 10: 11 go. (A decode row has one weight per position
    # admitted before, spec/harness.md#what-a-policy-sees; the harness
    # gathers it at the kept ones.)
    params = PLAIN + [("budget", 10), ("obs_window", 2), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 4), ("window_budget", 1)]
    row = [(i + 1) / 1024 for i in range(30)]
    log = run(params, [prompt(30, 2), (1, row)])
    assert [len(v) for v in victims(log)] == [10, 11]
    assert log.steps[1].kept_count == 10


def test_prefill_only_decode_evicts_nothing():
    params = PLAIN + [("budget", 10), ("obs_window", 2), ("pyramid", 2), ("pyramid_beta", 4),
                      ("layers", 4), ("window_budget", 1), ("prefill_only", 1)]
    log = run(params, [prompt(30, 2), (1, [0.5] * 30)])
    assert [len(v) for v in victims(log)] == [10, 0]


# -- pyramid 0 changes nothing ---------------------------------------------------

@pytest.mark.parametrize("base", [
    PLAIN + [("budget", 10), ("obs_window", 2)],
    PLAIN + [("budget", 10), ("obs_window", 2), ("window_budget", 1)],
    PLAIN + [("ratio_ppm", 500000), ("obs_window", 4)],
    [("budget", 6), ("recent_window", 2), ("obs_window", 3), ("pool_kernel", 3), ("window_reduce", 1),
     ("pooling", 1)],
])
def test_pyramid_0_changes_nothing(base):
    # A prompt, two decode steps with null attention (ties: the lower
    # positions go), a second prefill step (positions 32 .. 37, the rows of
    # queries 35 .. 37 over every position up to each), a decode step.
    later = [[((p * 5) % 11) / 16 for p in range(q + 1)] for q in range(35, 38)]
    steps = [prompt(30, 4), (2, None), (6, None, [], later), (1, None)]
    want = run(base, steps)
    assert want.rejection is None and len(want.steps) == 4
    for extra in ([("pyramid", 0)], [("pyramid_beta", 1), ("layer", 5), ("layers", 9)],
                  [("pyramid_beta", 2 ** 20), ("layer", 65535), ("layers", 65536)]):
        log = run(base + extra, steps)
        assert log.rejection == want.rejection
        assert [(s.victims, s.kept_count, s.cut) for s in log.steps] == \
               [(s.victims, s.kept_count, s.cut) for s in want.steps]


def test_pyramid_changes_nothing_at_decode_steps():
    # A run of decode steps only: pyramid 2 evicts as pyramid 0 does.
    steps = [(1, None)] + [(1, [(i * 3 % 5) / 4 for i in range(k)]) for k in range(1, 15)]
    base = [("budget", 6), ("recent_window", 1), ("obs_window", 2), ("window_budget", 1)]
    want = run(base, steps)
    assert want.rejection is None and sum(len(s.victims) for s in want.steps) == 15 - 6
    base[1] = ("recent_window", 0)
    want = run(base, steps)
    log = run(base + [("pyramid", 2), ("layers", 3), ("layer", 2)], steps)
    assert [(s.victims, s.cut) for s in log.steps] == [(s.victims, s.cut) for s in want.steps]


# -- Rule 4 (spec/policies/pyramidkv.md#parameters) ------------------------------

def test_budget_below_the_recent_window_is_refused():
    # A layer's B may fall below recent_window - w (budget 10, recent_window
    # 9, w 2, beta 4, layer 3 of 4, n 30: B = 3), so pyramid needs
    # recent_window 0.
    params = [("budget", 10), ("recent_window", 9), ("pool_kernel", 1), ("obs_window", 2), ("pyramid", 2),
              ("pyramid_beta", 4), ("layers", 4), ("layer", 3), ("window_budget", 1)]
    log = run(params, [prompt(30, 2)])
    assert log.rejection is not None and log.rejection[3] == Subject("rule", ("pyramid", "recent_window"))
