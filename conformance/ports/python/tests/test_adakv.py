"""Head-adaptive budgets (AdaKV), worked by hand from
spec/heads.md#head-adaptive-budgets and spec/policies/adakv.md.

With `adaptive` 1 and S >= 2 kept sets, every set records and admits and
evicts nothing itself; if the sets keep T > L = budget * S positions, T - L
(set, position) pairs go, walking the ranking of every set's candidates by
(score, position, set) ascending and skipping a pair whose set would keep
fewer than `floor`. Steps are (admit, attention-or-None, heads).
"""

import numpy as np
import pytest

from kvspec_port.errors import Refusal
from kvspec_port.harness import configure, run_scenario
from kvspec_port.heads import KV_HEAD, LAYER, MAX, MEAN, QUERY_HEAD, SUM, floor_of
from kvspec_port.proto import kvspec_pb2 as kpb

B2R1 = [("budget", 2), ("recent_window", 1)]
ADAPTIVE = [("adaptive", 1)]


def run(name, params, steps, query_heads=None, kv_heads=None, trace=None):
    return run_scenario(name, list(params), 0, list(steps), trace, query_heads, kv_heads)


def records(log, step):
    """Each set's (victims, kept_count, query_cache_position, cut) at a step."""
    return [(s.victims, s.kept_count, s.query_cache_position, s.cut) for s in log.steps[step].sets]


def flat(log):
    """The whole log, comparable across runs."""
    def rec(s):
        return (s.victims, s.kept_count, s.query_cache_position, s.cut, [rec(x) for x in s.sets])
    return [rec(s) for s in log.steps], log.rejection


# -- Parameters (spec/heads.md#parameters) -------------------------------------

def test_floor():
    # budget * safeguard_permille / 1000 in integers; raised to 1 if it is 0
    # and safeguard_permille > 0; 0 when safeguard_permille is 0.
    assert floor_of(2, 200) == 1      # 2 * 200 / 1000 = 0, raised to 1 (the card's example)
    assert floor_of(10, 200) == 2
    assert floor_of(10, 300) == 3     # the card's note: kvpress's int(10 * 0.3) would be 2
    assert floor_of(4, 750) == 3
    assert floor_of(4, 1000) == 4     # the floor is the budget
    assert floor_of(1, 1) == 1        # 1 * 1 / 1000 = 0, raised to 1
    assert floor_of(2, 0) == 0
    assert floor_of((1 << 32) - 1, 1000) == (1 << 32) - 1  # no overflow


@pytest.mark.parametrize(
    "name, params, named",
    [
        ("h2o", [("adaptive", 2)], "adaptive"),
        ("tova", [("adaptive", -1)], "adaptive"),
        ("snapkv", [("safeguard_permille", 1001)], "safeguard_permille"),
        ("h2o", [("safeguard_permille", -1)], "safeguard_permille"),
        # In the table's order, whatever the order given: adaptive first.
        ("h2o", [("safeguard_permille", 1001), ("adaptive", 2)], "adaptive"),
        # After the policy's own parameters and granularity, aggregation.
        ("tova", [("adaptive", 2), ("budget", 0)], "budget"),
        ("snapkv", [("safeguard_permille", 2000), ("aggregation", 3)], "aggregation"),
        # Ranges before relations.
        ("snapkv", [("safeguard_permille", -1), ("pool_kernel", 4)], "safeguard_permille"),
        ("h2o", [("adaptive", 5), ("budget", 2), ("recent_window", 2)], "adaptive"),
    ],
)
def test_parameter_ranges_and_order(name, params, named):
    with pytest.raises(Refusal) as e:
        configure(name, params)
    assert e.value.category == "INVALID_PARAMETER"
    assert f"{named} must be in" in e.value.message


@pytest.mark.parametrize("name", ["h2o", "tova", "snapkv"])
@pytest.mark.parametrize("params", [[("adaptive", 0)], [("adaptive", 1)],
                                    [("safeguard_permille", 0)], [("safeguard_permille", 1000)]])
def test_bounds_accepted(name, params):
    _, values = configure(name, params)
    assert values[params[0][0]] == params[0][1]


# -- The card's worked example (spec/policies/adakv.md#how-it-works) ------------

# h2o, two heads with one set each, budget 2, recent window 1, the default
# floor max(1, 2 * 200 / 1000) = 1. A null chunk admits 0, 1; step 1 gives
# head 0 [0.5, 0.25] and head 1 [0.0625, 0.125] and admits 2. Step 2
# (worked here, not in the card) gives head 0 [0.5, 0.25, 0.25] and head 1
# [0, 0, 0.5] and admits 3.
EXAMPLE = [(2, None, []), (1, None, [[0.5, 0.25], [0.0625, 0.125]]),
           (1, None, [[0.5, 0.25, 0.25], [0.0, 0.0, 0.5]])]


@pytest.mark.parametrize("granularity", [KV_HEAD, QUERY_HEAD])
def test_worked_example(granularity):
    log = run("h2o", B2R1 + [("granularity", granularity)] + ADAPTIVE, EXAMPLE, 2, 2)
    # Step 0: 4 kept in all, L = 4: nothing goes; every set logs the step.
    assert records(log, 0) == [([], 2, 0, []), ([], 2, 0, [])]
    # Step 1: 6 kept of L = 4, two pairs go. Ranked: (0.0625, 0, set 1),
    # (0.125, 1, set 1), (0.25, 1, set 0), (0.5, 0, set 0); set 1 keeps 1,
    # not below the floor. Set 0 evicts nothing and so records no cut; set
    # 1's cut is its two victims (its only candidates: 2 is protected).
    assert records(log, 1) == [
        ([], 3, 2, []),
        ([0, 1], 1, 2, [(0, 0.0625), (1, 0.125)]),
    ]
    # The record's own fields are empty (spec/heads.md#the-eviction-log).
    rec = log.steps[1]
    assert (rec.victims, rec.kept_count, rec.query_cache_position, rec.cut) == ([], 0, 0, [])
    # Step 2: set 0 keeps 0, 1, 2 (+3) with sums 1.0, 0.5, 0.25, 0; set 1
    # keeps 2 (+3) with sums 0.5, 0. 6 kept of 4: ranked (0.25, 2, set 0),
    # (0.5, 1, set 0), (0.5, 2, set 1), (1.0, 0, set 0): the equal scores go
    # by position first. Set 0's cut: its victims in the joint order, then
    # its next candidate (0); its query position is its own kept count, 3.
    assert records(log, 2) == [
        ([1, 2], 2, 3, [(2, 0.25), (1, 0.5), (0, 1.0)]),
        ([], 2, 1, []),
    ]


def test_worked_example_without_the_mode():
    # "Without the mode each set would evict its own lowest: head 0
    # position 1, head 1 position 0."
    for params in (B2R1, B2R1 + [("adaptive", 0)]):
        log = run("h2o", params, EXAMPLE, 2, 2)
        assert records(log, 1) == [
            ([1], 2, 2, [(1, 0.25), (0, 0.5)]),
            ([0], 2, 2, [(0, 0.0625), (1, 0.125)]),
        ]


# -- Ties across sets (spec/policies/adakv.md#tie-breaking) ----------------------

def tie_log(rows):
    return run("h2o", B2R1 + [("granularity", QUERY_HEAD)] + ADAPTIVE, [(2, None, []), (1, None, rows)], 2)


def test_tie_position_before_set():
    # Set 0 sums (0.75, 0.5), set 1 (0.5, 0.25) at positions 0, 1; two go.
    # Ranked (0.25, 1, set 1), then the tie at 0.5: (0.5, 0, set 1) before
    # (0.5, 1, set 0), the lower position first although its set is higher.
    log = tie_log([[0.75, 0.5], [0.5, 0.25]])
    assert records(log, 1) == [([], 3, 2, []), ([0, 1], 1, 2, [(1, 0.25), (0, 0.5)])]


def test_tie_same_position_lower_set_first():
    # Set 0 sums (0.5, 0.25), set 1 (0.5, 0.75). Ranked (0.25, 1, set 0),
    # then (0.5, 0, set 0) before (0.5, 0, set 1): equal score and position,
    # the lower-numbered set goes.
    log = tie_log([[0.5, 0.25], [0.5, 0.75]])
    assert records(log, 1) == [([0, 1], 1, 2, [(1, 0.25), (0, 0.5)]), ([], 3, 2, [])]
    # The heads swapped: (0.25, 1, set 1), then (0.5, 0, set 0) again before
    # (0.5, 0, set 1): set 0 loses 0, set 1 loses 1. Each set's cut: its
    # victim, then its next candidate.
    log = tie_log([[0.5, 0.75], [0.5, 0.25]])
    assert records(log, 1) == [([0], 2, 2, [(0, 0.5), (1, 0.75)]), ([1], 2, 2, [(1, 0.25), (0, 0.5)])]


# -- The floor (spec/heads.md#head-adaptive-budgets, step 4) ---------------------

# Budget 4, recent window 1, two sets. A null chunk admits 0..3 (8 kept of
# L = 8); step 1 gives head 0 ones and head 1 zeros and admits 4, 5. Set 0
# sums (1, 1, 1, 1, 0, 0), set 1 all 0; candidates 0..4 of each; 12 kept,
# 4 pairs go. Ranked: (0, 0, s1), (0, 1, s1), (0, 2, s1), (0, 3, s1),
# (0, 4, s0), (0, 4, s1), then set 0's (1, 0..3, s0).
FLOOR_STEPS = [(4, None, []), (2, None, [[1.0] * 4, [0.0] * 4])]


def test_floor_binds():
    # safeguard 750: floor 4 * 750 / 1000 = 3. Set 1 loses 0, 1, 2 (6 -> 3);
    # losing 3 would leave 2 < 3, so (0, 3, s1) is skipped and (0, 4, s0)
    # goes; 4 pairs: the walk stops.
    log = run("h2o", [("budget", 4), ("recent_window", 1), ("safeguard_permille", 750)] + ADAPTIVE,
              FLOOR_STEPS, 2, 2)
    assert records(log, 1) == [
        ([4], 5, 4, [(4, 0.0), (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0)]),
        ([0, 1, 2], 3, 4, [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.0), (4, 0.0)]),
    ]
    assert sum(r[1] for r in records(log, 1)) == 8


def test_floor_at_default_does_not_bind_here():
    # The default 200: floor 4 * 200 / 1000 = 0, raised to 1. Set 1 loses 0..3
    # and keeps 4, 5; set 0 loses nothing (6 kept, above its own budget).
    log = run("h2o", [("budget", 4), ("recent_window", 1)] + ADAPTIVE, FLOOR_STEPS, 2, 2)
    assert records(log, 1) == [
        ([], 6, 4, []),
        ([0, 1, 2, 3], 2, 4, [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.0), (4, 0.0)]),
    ]


def test_safeguard_1000_on_the_floor_example():
    # Floor 4: each set must keep 4. Set 1 loses 0, 1 (6 -> 4); then every
    # further set-1 pair is skipped, and set 0 loses its lowest two, 4 and 0
    # (the first of the 1.0 ties by position): exactly the fixed budget.
    params = [("budget", 4), ("recent_window", 1)]
    log = run("h2o", params + [("safeguard_permille", 1000)] + ADAPTIVE, FLOOR_STEPS, 2, 2)
    assert records(log, 1) == [
        ([0, 4], 4, 4, [(4, 0.0), (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0)]),
        ([0, 1], 4, 4, [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.0), (4, 0.0)]),
    ]
    assert flat(log) == flat(run("h2o", params, FLOOR_STEPS, 2, 2))


# Three sets (query_head), budget 2, recent window 0 (L = 6). Step 1: heads
# 0 and 2 give [1, 1], head 1 [0, 0], admit 2; three pairs go: (0, 0, s1),
# (0, 1, s1), (0, 2, s0). Step 2: heads 0 and 2 give [1, 1, 1], head 1
# [0, 0, 0] (set 1 keeps 2 alone), admit 3. Set 0 keeps 0, 1, 3 with sums
# 2, 2, 0; set 1 keeps 2, 3 with 0, 0; set 2 keeps 0..3 with 2, 2, 1, 0:
# 9 kept, three pairs go. Ranked (0, 2, s1), (0, 3, s0), (0, 3, s1),
# (0, 3, s2), (1, 2, s2), ...
EMPTYING = [(2, None, []), (1, None, [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]),
            (1, None, [[1.0] * 3, [0.0] * 3, [1.0] * 3])]
R0 = [("budget", 2), ("recent_window", 0), ("granularity", QUERY_HEAD)] + ADAPTIVE


def test_floor_raised_to_one():
    # The default 200: 2 * 200 / 1000 = 0, raised to 1. Step 2: set 1 loses
    # 2 (keeps 1), (0, 3, s0) goes, (0, 3, s1) would leave set 1 empty, so
    # (0, 3, s2) goes.
    log = run("h2o", R0, EMPTYING, 3)
    assert records(log, 1) == [
        ([2], 2, 2, [(2, 0.0), (0, 1.0), (1, 1.0)]),
        ([0, 1], 1, 2, [(0, 0.0), (1, 0.0), (2, 0.0)]),
        ([], 3, 2, []),
    ]
    assert records(log, 2) == [
        ([3], 2, 2, [(3, 0.0), (0, 2.0), (1, 2.0)]),
        ([2], 1, 1, [(2, 0.0), (3, 0.0)]),
        ([3], 3, 3, [(3, 0.0), (2, 1.0), (0, 2.0), (1, 2.0)]),
    ]


def test_safeguard_0_may_empty_a_set():
    # Floor 0: the first three pairs go, and set 1 keeps nothing (with
    # recent window 0 nothing of it is protected). Step 1 as with floor 1.
    log = run("h2o", R0 + [("safeguard_permille", 0)], EMPTYING, 3)
    assert records(log, 1) == records(run("h2o", R0, EMPTYING, 3), 1)
    assert records(log, 2) == [
        ([3], 2, 2, [(3, 0.0), (0, 2.0), (1, 2.0)]),
        ([2, 3], 0, 1, [(2, 0.0), (3, 0.0)]),
        ([], 4, 3, []),
    ]
    # An empty set goes on: it records nothing and admits the next position.
    log = run("h2o", R0 + [("safeguard_permille", 0)], EMPTYING + [(1, None, [[0.5] * 4] * 3)], 3)
    assert log.rejection is None and [s.query_cache_position for s in log.steps[3].sets] == [2, 0, 4]


# -- Neighbours (spec/policies/adakv.md#neighbours) -----------------------------

def test_safeguard_1000_on_the_worked_example():
    # Floor 2 = budget. Step 1: (0.0625, 0, s1) goes (s1 keeps 2), (0.125,
    # 1, s1) would leave 1 < 2, (0.25, 1, s0) goes. Step 2: set 0 keeps 0, 2
    # (+3) with sums 1.0, 0.25; set 1 keeps 1, 2 (+3) with sums 0.125, 0.5.
    # Ranked (0.125, 1, s1), (0.25, 2, s0), ...: each set its own lowest.
    params = B2R1 + [("granularity", QUERY_HEAD)]
    log = run("h2o", params + ADAPTIVE + [("safeguard_permille", 1000)], EXAMPLE, 2)
    assert records(log, 1) == [([1], 2, 2, [(1, 0.25), (0, 0.5)]), ([0], 2, 2, [(0, 0.0625), (1, 0.125)])]
    assert records(log, 2) == [([2], 2, 2, [(2, 0.25), (0, 1.0)]), ([1], 2, 2, [(1, 0.125), (2, 0.5)])]
    assert flat(log) == flat(run("h2o", params, EXAMPLE, 2))


def random_steps(rng, heads, steps, admit_max=3):
    """Explicit steps with one full-cache row per head (weights k/64)."""
    out, admitted = [], 0
    for i in range(steps):
        admit = int(rng.integers(1, admit_max + 1))
        if i > 0 and rng.random() < 0.15:
            rows = []  # null attention
        else:
            rows = (rng.integers(0, 65, size=(heads, admitted)) / 64.0).tolist()
        out.append((admit, None, rows))
        admitted += admit
    return out


POLICIES = [("h2o", []), ("tova", []), ("snapkv", [("obs_window", 3), ("pool_kernel", 3)])]


@pytest.mark.parametrize("name, extra", POLICIES)
@pytest.mark.parametrize("heads, kv, granularity, aggregation", [
    (3, 3, KV_HEAD, MEAN), (4, 2, KV_HEAD, MAX), (4, 2, QUERY_HEAD, SUM), (6, 3, KV_HEAD, MEAN),
])
def test_safeguard_1000_is_the_fixed_budget(name, extra, heads, kv, granularity, aggregation):
    rng = np.random.default_rng(7 * heads + granularity)
    steps = random_steps(rng, heads, 25)
    base = [("budget", 5), ("recent_window", 2)] + extra + [("granularity", granularity),
                                                            ("aggregation", aggregation)]
    fixed = run(name, base, steps, heads, kv)
    shared = run(name, base + ADAPTIVE + [("safeguard_permille", 1000)], steps, heads, kv)
    assert flat(shared) == flat(fixed)


@pytest.mark.parametrize("name, extra", POLICIES)
def test_one_set_changes_nothing(name, extra):
    rng = np.random.default_rng(3)
    base = [("budget", 4), ("recent_window", 1)] + extra
    # One head.
    single = [(a, r[0] if r else None, []) for a, _, r in random_steps(rng, 1, 20)]
    assert flat(run(name, base + ADAPTIVE + [("safeguard_permille", 0)], single)) == flat(run(name, base, single))
    # Several heads, one `layer` set: L = budget, the floor never binds.
    steps = random_steps(rng, 4, 20)
    layer = base + [("granularity", LAYER)]
    assert flat(run(name, layer + ADAPTIVE, steps, 4, 2)) == flat(run(name, layer, steps, 4, 2))


@pytest.mark.parametrize("name, extra", POLICIES)
@pytest.mark.parametrize("safeguard", [0, 200, 600])
def test_walk_invariants(name, extra, safeguard):
    # Every step: the layer keeps at most L; a set that evicts keeps at least
    # the floor; each set's victims are its lowest candidates (its cut starts
    # with them, in rank order); a set's query position is its kept count
    # before the step.
    rng = np.random.default_rng(safeguard + 11)
    heads, budget = 4, 6
    steps = random_steps(rng, heads, 30)
    params = [("budget", budget), ("recent_window", 2)] + extra + [("granularity", QUERY_HEAD),
                                                                   ("safeguard_permille", safeguard)]
    log = run(name, params + ADAPTIVE, steps, heads)
    floor = floor_of(budget, safeguard)
    before = [0] * heads
    differ = False
    for rec in log.steps:
        sets = rec.sets
        assert len(sets) == heads
        assert sum(s.kept_count for s in sets) <= budget * heads
        for i, s in enumerate(sets):
            assert s.query_cache_position == before[i]
            if s.victims:
                assert s.kept_count >= floor
                assert sorted(p for p, _ in s.cut[:len(s.victims)]) == s.victims
                keys = [(score, p) for p, score in s.cut]
                assert keys == sorted(keys)
            else:
                assert s.cut == []
            before[i] = s.kept_count
        differ = differ or len({s.kept_count for s in sets}) > 1
    assert log.rejection is None and differ


# -- Multi-head traces (spec/trace.md#several-heads) -----------------------------

def small_trace():
    return kpb.TraceConfig(steps=120, sinks=2, recent_length=4, heavy_count=3, epoch_length=40)


@pytest.mark.parametrize("name, extra", POLICIES)
def test_trace(name, extra):
    base = [("budget", 12), ("recent_window", 2)] + extra
    fixed = run(name, base, [], 4, 2, small_trace())
    shared = run(name, base + ADAPTIVE, [], 4, 2, small_trace())
    # The sets share L = 24: once full, the layer keeps exactly 24, split
    # unevenly at some step; every set keeps at least its floor (2).
    split = False
    for t, rec in enumerate(shared.steps):
        counts = [s.kept_count for s in rec.sets]
        assert sum(counts) == min(2 * (t + 1), 24)
        assert min(counts) >= min(t + 1, 2)
        split = split or counts[0] != counts[1]
    assert split and flat(shared) != flat(fixed)
    # Neighbours: safeguard 1000 is the fixed budget; one `layer` set is
    # the policy without the mode.
    assert flat(run(name, base + ADAPTIVE + [("safeguard_permille", 1000)], [], 4, 2, small_trace())) == flat(fixed)
    layer = base + [("granularity", LAYER)]
    assert flat(run(name, layer + ADAPTIVE, [], 4, 2, small_trace())) == flat(run(name, layer, [], 4, 2, small_trace()))
