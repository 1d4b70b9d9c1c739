"""Triggers (spec/triggers.md, the feature `triggers`, spec 0.12.0): when a
decode step evicts, `slack` and `interval`, worked by hand from the spec.

The spec's two examples (#slack: `window` budget 3, slack 2; #interval:
`window` budget 4, interval 3, restart-empty), then cases worked out here:
the parameters, their ranges and the rules of #combinations with their
subjects, a chunk firing out of turn, a prefill step resetting the count,
scores accumulating between firings (h2o, tova ranking by the firing
step's row, random drawing only when it evicts), several kept sets, a
trace, and spans over a kept set above the budget.
"""

import pytest

from helpers import run, singles, victims
from kvspec_port.harness import configure, make_policy, run_scenario
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.rng import Rng
from kvspec_port.triggers import Trigger


def kept(log):
    return [s.kept_count for s in log.steps]


def subject(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None and not log.steps
    category, step, _message, s = log.rejection
    return category, step, " ".join((s.check,) + s.names)


def nulls(n):
    """n decode steps admitting one position each, null attention."""
    return [(1, None)] * n


# -- #slack ---------------------------------------------------------------------

def test_slack_example_window_bulk():
    # spec/triggers.md#slack: window, budget 3, slack 2, one position per
    # step from 0. Step 5 keeps six (6 > 5) and evicts 0, 1, 2; steps 6, 7
    # keep four and five; step 8 keeps six and evicts 3, 4, 5; every S + 1
    # = 3 steps after, 3 more.
    log = run("window", [("budget", 3), ("slack", 2)], nulls(12))
    assert log.rejection is None
    assert victims(log) == [[], [], [], [], [], [0, 1, 2], [], [], [3, 4, 5], [], [], [6, 7, 8]]
    assert kept(log) == [1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3]
    # query_cache_position: the number kept before each step.
    assert [s.query_cache_position for s in log.steps] == [0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5]


def test_slack_zero_is_the_harness():
    # "Without slack step 3 would evict 0, step 4 position 1, and so on";
    # slack 0 and interval 0 given explicitly change nothing.
    plain = run("window", [("budget", 3)], nulls(8))
    zero = run("window", [("budget", 3), ("slack", 0), ("interval", 0)], nulls(8))
    assert victims(plain) == [[], [], [], [0], [1], [2], [3], [4]]
    assert victims(zero) == victims(plain) and kept(zero) == kept(plain)


def test_slack_streamingllm_keeps_its_sinks():
    # streamingllm budget 4, sinks 1, slack 2: step 6 keeps 7 > 6 and evicts
    # the three oldest non-sinks 1, 2, 3, leaving 0, 4, 5, 6; step 9 keeps
    # 0, 4 .. 9 (7) and evicts 4, 5, 6.
    log = run("streamingllm", [("budget", 4), ("sinks", 1), ("slack", 2)], nulls(10))
    assert victims(log) == [[]] * 6 + [[1, 2, 3], [], [], [4, 5, 6]]
    assert kept(log) == [1, 2, 3, 4, 5, 6, 4, 5, 6, 4]


def test_slack_chunk_fires_only_above_budget_plus_slack():
    # The port's reading (see its README): under `slack` a decode chunk
    # fires only when more than budget + slack are kept after it, even when
    # it admits at least `budget` (#combinations' "fires at once" is read
    # as interval's rule, #parameters: "evicts only when more than budget +
    # slack positions are kept"). window budget 3, slack 2: chunks of 2
    # and 3 keep 5 (not > 5): nothing; then one more keeps 6: 0, 1, 2 go.
    log = run("window", [("budget", 3), ("slack", 2)], [(2, None), (3, None), (1, None)])
    assert victims(log) == [[], [], [0, 1, 2]]
    assert kept(log) == [2, 5, 3]
    # A chunk that passes budget + slack at once evicts down to budget.
    log = run("window", [("budget", 3), ("slack", 2)], [(1, None), (6, None)])
    assert victims(log) == [[], [0, 1, 2, 3]]
    assert kept(log) == [1, 3]


# -- #interval ------------------------------------------------------------------

def test_interval_example_restart_empty():
    # spec/triggers.md#interval, vector triggers/interval/restart-empty:
    # window, budget 4, interval 3, one position a step from 0. Step 2
    # fires with three kept (count 3) and evicts nothing; steps 3 and 4
    # count 1 and 2; step 5 fires with six kept and evicts 0 and 1. Then
    # step 8 fires with seven kept (2 .. 8) and evicts 2, 3, 4.
    log = run("window", [("budget", 4), ("interval", 3)], nulls(9))
    assert victims(log) == [[], [], [], [], [], [0, 1], [], [], [2, 3, 4]]
    assert kept(log) == [1, 2, 3, 4, 5, 4, 5, 6, 4]


def test_interval_one_is_every_step():
    # interval 1: every decode step's count reaches 1, so every step fires.
    assert victims(run("window", [("budget", 3), ("interval", 1)], nulls(6))) == \
        victims(run("window", [("budget", 3)], nulls(6)))


def test_interval_chunk_fires_out_of_turn_and_resets_the_count():
    # window budget 3, interval 4. Steps 0, 1 count 1, 2. Step 2, a chunk of
    # 4 (>= budget), fires out of turn: 2 .. 5 join 0, 1; six kept, 0, 1, 2
    # go. The count is back to 0, so steps 3, 4, 5 count 1, 2, 3 (kept 4, 5,
    # 6) and step 6 fires with 3 .. 9 kept: 3, 4, 5, 6 go. (Had the chunk not
    # reset the count, step 3 would count 4 and evict 3.)
    log = run("window", [("budget", 3), ("interval", 4)], [(1, None), (1, None), (4, None)] + nulls(4))
    assert victims(log) == [[], [], [0, 1, 2], [], [], [], [3, 4, 5, 6]]
    assert kept(log) == [1, 2, 3, 4, 5, 6, 3]


def test_interval_chunk_of_exactly_budget_fires():
    # "when the step admits at least budget positions": a chunk of exactly
    # budget 3 fires at its count 2 of interval 5, keeping 4: 0 goes.
    log = run("window", [("budget", 3), ("interval", 5)], [(1, None), (3, None), (1, None)])
    assert victims(log) == [[], [0], []]
    assert kept(log) == [1, 3, 4]


def test_interval_small_chunks_count_one_each():
    # "a decode chunk is one decode step (it counts 1 towards interval)":
    # window budget 4, interval 2, chunks of 2, 2, 2, 1. Step 1 fires with 4
    # kept (nothing goes); step 2 counts 1 and keeps 6; step 3 fires with 7
    # kept: 0, 1, 2 go.
    log = run("window", [("budget", 4), ("interval", 2)], [(2, None), (2, None), (2, None), (1, None)])
    assert victims(log) == [[], [], [], [0, 1, 2]]
    assert kept(log) == [2, 4, 6, 4]


def test_prefill_step_resets_the_count_and_evicts_by_prefill():
    # window budget 4, interval 3. Steps 0, 1 (decode) count 1, 2. Step 2 is
    # a prefill step (a query row for position 4, five weights): it evicts
    # as prefill.md says (window: as any step; five kept, 0 goes) and sets
    # the count to 0. Steps 3, 4 count 1, 2 (kept 5, 6); step 5 fires with
    # 1 .. 7 kept: 1, 2, 3 go. (Without the reset step 3 would count 3 and
    # evict 1.)
    prefill = (3, None, [], [[0.25] * 5])
    log = run("window", [("budget", 4), ("interval", 3)], nulls(2) + [prefill] + nulls(3))
    assert victims(log) == [[], [], [0], [], [], [1, 2, 3]]
    assert kept(log) == [1, 2, 4, 5, 6, 4]


def test_prefill_step_evicts_under_slack_too():
    # "a prefill step evicts as prefill.md says, whatever slack and
    # interval are": window budget 2, slack 5, a prefill chunk of 4 keeps 4
    # (not above 2 + 5) and still evicts 0, 1.
    prefill = (4, None, [], [[0.25] * 4])
    log = run("window", [("budget", 2), ("slack", 5)], [prefill])
    assert victims(log) == [[0, 1]]


# -- #firing: what a step records between firings ---------------------------------

def test_h2o_sums_accumulate_between_firings():
    # h2o budget 2, recent_window 0, interval 2.
    # step 0: admits 0 (empty row), count 1.
    # step 1: row (0.5): sum 0 = 0.5; admits 1; count 2 fires with 2 kept:
    #         nothing goes, the count restarts.
    # step 2: row (0.0, 0.5): sums 0.5, 0.5; admits 2 (+0.0); count 1: no
    #         firing, 3 kept (without the trigger 2 would go here).
    # step 3: row (0.0, 0.25, 1.0): sums 0.5, 0.75, 1.0; admits 3 (+0.0);
    #         count 2 fires with 4 kept: 3 (0.0) and 0 (0.5) go. Position
    #         1's 0.75 holds step 2's row: recorded at a step that did not fire.
    steps = [(1, []), (1, [0.5]), (1, [0.0, 0.5]), (1, [0.0, 0.25, 1.0])]
    log = run("h2o", [("budget", 2), ("recent_window", 0), ("interval", 2)], steps)
    assert victims(log) == [[], [], [], [0, 3]]
    assert kept(log) == [1, 2, 3, 2]
    assert log.steps[3].cut == [(3, 0.0), (0, 0.5), (1, 0.75), (2, 1.0)]
    assert log.steps[2].cut == []


def test_h2o_null_attention_counts():
    # "a step with null attention counts as any other": h2o budget 2,
    # recent_window 0, interval 3; steps 0, 1 null, step 2 row (0.5, 0.25):
    # its count reaches 3 and it fires with 3 kept, scoring 0.5, 0.25, +0.0:
    # 2 goes. (Had the null steps not counted, step 2 would count 1.)
    steps = [(1, None), (1, None), (1, [0.5, 0.25])]
    log = run("h2o", [("budget", 2), ("recent_window", 0), ("interval", 3)], steps)
    assert victims(log) == [[], [], [2]]


def test_interval_with_budget_1_fires_every_step():
    # With budget 1 every step admits at least `budget` positions, so every
    # decode step fires, whatever the interval: step 1 keeps 0, 1 (both
    # +0.0) and 0 goes; step 2 records 0.25 for 1, and 2 (+0.0) goes.
    steps = [(1, None), (1, None), (1, [0.5, 0.25])]
    log = run("h2o", [("budget", 1), ("recent_window", 0), ("interval", 3)], steps)
    assert victims(log) == [[], [0], [2]]
    assert kept(log) == [1, 1, 1]


def test_tova_ranks_by_the_firing_steps_row():
    # tova budget 2, recent_window 0, interval 2. Step 1 fires with 2 kept
    # (nothing goes). Step 2's row (0.0, 1.0) is recorded, no firing. Step 3
    # fires with row (1.0, 0.5, 0.25): latest weights 1.0, 0.5, 0.25, +0.0:
    # 3 and 2 go (by step 2's row, 0 would have gone).
    steps = [(1, []), (1, [1.0]), (1, [0.0, 1.0]), (1, [1.0, 0.5, 0.25])]
    log = run("tova", [("budget", 2), ("recent_window", 0), ("interval", 2)], steps)
    assert victims(log) == [[], [], [], [2, 3]]


def test_random_draws_only_when_it_evicts():
    # random budget 2, recent_window 0, slack 1, seed 7: steps 0 .. 2 keep
    # 1, 2, 3 (not above 3) and draw nothing; step 3 keeps 4 and evicts 2:
    # Uniform(4), then Uniform(3) over the rest, from a fresh Rng. Step 4
    # keeps 3 and draws nothing; step 5 (4 kept again) draws the next two.
    rng = Rng(7)

    def draw(kept):  # spec/policies/random.md#draws, k = 2 of 4 candidates
        slots = list(range(4))
        drawn = [slots.pop(rng.uniform(4)), slots.pop(rng.uniform(3))]
        return sorted(kept[i] for i in drawn)
    first = draw([0, 1, 2, 3])
    second = draw([p for p in range(4) if p not in first] + [4, 5])
    log = run_scenario("random", [("budget", 2), ("recent_window", 0), ("slack", 1)], 7, nulls(7), None)
    assert victims(log) == [[], [], [], first, [], second, []]
    assert kept(log) == [1, 2, 3, 2, 3, 2, 3]


def test_several_kept_sets_each_count():
    # h2o budget 2, recent_window 0, interval 3, two query heads and two KV
    # heads (granularity kv_head: a set per head). Each set fires at steps
    # 2 and 5, evicting by its own head's sums.
    # step 1: sums set 0: 0.5, +0.0; set 1: +0.0, +0.0.
    # step 2: set 0: 0.75, 0.25, +0.0: 2 goes; set 1: +0.0, 0.5, +0.0: a tie
    #         at +0.0, the lower 0 goes.
    # step 3: each set records at its kept positions (0, 1; 1, 2), count 1:
    #         set 0: 1.75, 0.25, +0.0; set 1: 0.5, 0.25, +0.0; 3 kept each.
    # step 4: count 2; set 0 records 0.5 at 3; 4 kept each.
    # step 5: count 3 fires; set 0 keeps 0, 1, 3, 4, 5 scoring 1.75, 0.25,
    #         0.5, +0.0, +0.0: 1, 4, 5 go; set 1 keeps 1, 2, 3, 4, 5 scoring
    #         0.5, 1.25, +0.0, +0.0, +0.0: 3, 4, 5 go.
    steps = [
        (1, None, [[], []], []),
        (1, None, [[0.5], [0.0]], []),
        (1, None, [[0.25, 0.25], [0.0, 0.5]], []),
        (1, None, [[1.0, 0.0, 0.0], [0.0, 0.0, 0.25]], []),
        (1, None, [[0.0, 0.0, 0.0, 0.5], [0.0] * 4], []),
        (1, None, [[0.0] * 5, [0.0, 0.0, 1.0, 0.0, 0.0]], []),
    ]
    log = run_scenario("h2o", [("budget", 2), ("recent_window", 0), ("interval", 3)], 0, steps, None, 2, 2)
    assert log.rejection is None
    per_set = [[(r.victims, r.kept_count) for r in s.sets] for s in log.steps]
    assert per_set == [
        [([], 1), ([], 1)],
        [([], 2), ([], 2)],
        [([2], 2), ([0], 2)],
        [([], 3), ([], 3)],
        [([], 4), ([], 4)],
        [([1, 4, 5], 2), ([3, 4, 5], 2)],
    ]


def test_several_kept_sets_prefill_resets_each_count():
    # h2o budget 3, recent_window 0, interval 4, two sets (two query heads,
    # two KV heads). Steps 0, 1 count 1, 2 (rows 0.5 at position 0 for both
    # heads). Step 2, a prefill chunk of 2 (below budget: it would not fire
    # out of turn) with one query row per head (for position 3), evicts by
    # prefill.md in each set although the count is only at 2, and sets both
    # counts to 0:
    #   set 0: row (0.5, 0.0, 0.25, 0.25): sums 1.0, +0.0, 0.25, 0.25: 1 goes;
    #   set 1: row (0.0, 0.5, 0.25, 0.125): sums 0.5, 0.5, 0.25, 0.125: 3 goes.
    # Steps 3 and 4 count 1 and 2: no firing, each set keeps 4, then 5 (had
    # the prefill step counted instead, step 3 would fire; had it left the
    # count at 2, step 4 would).
    steps = [
        (1, None, [[], []], []),
        (1, None, [[0.5], [0.5]], []),
        (2, None, [], [[0.5, 0.0, 0.25, 0.25], [0.0, 0.5, 0.25, 0.125]]),
        (1, None, [[0.25, 0.0, 0.0, 0.5], [0.0, 0.25, 0.0, 0.0]], []),
        (1, None, [[0.0] * 5, [0.0] * 5], []),
    ]
    log = run_scenario("h2o", [("budget", 3), ("recent_window", 0), ("interval", 4)], 0, steps, None, 2, 2)
    assert log.rejection is None
    per_set = [[(r.victims, r.kept_count) for r in s.sets] for s in log.steps]
    assert per_set == [
        [([], 1), ([], 1)],
        [([], 2), ([], 2)],
        [([1], 3), ([3], 3)],
        [([], 4), ([], 4)],
        [([], 5), ([], 5)],
    ]


def test_trace_window_slack():
    # A generated trace is decode steps (step t admits t): window budget 4,
    # slack 2 fires at 7 kept, at steps 6, 9, 12, ...
    log = run_scenario("window", [("budget", 4), ("slack", 2)], 0, None, kpb.TraceConfig(steps=13))
    assert kept(log) == [1, 2, 3, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4]
    assert [v for v in victims(log) if v] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


def test_spans_over_a_set_above_budget():
    # "a kept set larger than budget gives cache-relative ids up to its
    # size": window budget 2, slack 1, spans 1, position_ids 1. Step 3
    # holds 0 .. 3 (ids 0 .. 3) before it fires and evicts 0, 1; step 4
    # holds 2, 3, 4 (ids 0 .. 2).
    log = run("window", [("budget", 2), ("slack", 1), ("spans", 1), ("position_ids", 1)], nulls(5))
    assert victims(log) == [[], [], [], [0, 1], []]
    assert log.steps[2].held == [(0, 2, 0)]
    assert log.steps[3].held == [(0, 3, 0)]
    assert log.steps[4].held == [(2, 4, 0)]
    assert log.steps[4].query_cache_position == 2


def test_direct_step():
    # Policy.step (a direct call) runs the trigger too: the #slack example.
    policy = make_policy("window", [("budget", 3), ("slack", 2)])
    out = [policy.step(p, 1, None).victims for p in range(9)]
    assert out == [[], [], [], [], [], [0, 1, 2], [], [], [3, 4, 5]]


def test_trigger_count():
    # Trigger by itself: interval 3, budget 4; the count is 0 after a
    # firing, an out-of-turn firing or a prefill step.
    t = Trigger({"budget": 4, "slack": 0, "interval": 3})
    assert [t.fires(n, 1, False) for n in (1, 2, 3)] == [False, False, True]
    assert t.count == 0
    assert t.fires(4, 1, False) is False and t.count == 1
    assert t.fires(9, 5, False) is True and t.count == 0  # admits >= budget
    assert t.fires(10, 1, False) is False and t.count == 1
    assert t.fires(11, 1, True) is True and t.count == 0  # a prefill step
    # Neither trigger, or interval 1: every decode step fires.
    assert Trigger({"budget": 4, "slack": 0, "interval": 0}).fires(1, 1, False) is True
    assert [Trigger({"budget": 4, "slack": 0, "interval": 1}).fires(1, 1, False) for _ in range(3)] == [True] * 3


# -- #parameters and #combinations ----------------------------------------------

def test_parameters_last_in_every_card_but_full():
    for name in ("window", "streamingllm", "h2o", "tova", "snapkv", "random"):
        cls, values = configure(name, [])
        # spec/triggers.md#parameters; spec/blocks.md#parameters (0.13.0)
        # lists `block` (and `block_score`) after them.
        names = [p[0] for p in cls.PARAMS]
        assert names[names.index("slack"):][:3] == ["slack", "interval", "block"]
        assert values["slack"] == 0 and values["interval"] == 0
    cls, _ = configure("full", [])
    assert "slack" not in [p[0] for p in cls.PARAMS]
    _, values = configure("h2o", [("slack", 2 ** 32 - 1)])
    assert values["slack"] == 2 ** 32 - 1
    _, values = configure("random", [("interval", 2 ** 32 - 1)])
    assert values["interval"] == 2 ** 32 - 1


@pytest.mark.parametrize(
    "name, params, want",
    [
        # Ranges, in card order: budget before slack before interval.
        ("window", [("slack", 2 ** 32)], "range slack"),
        ("tova", [("interval", -1)], "range interval"),
        ("snapkv", [("interval", 2 ** 32), ("slack", -1)], "range slack"),
        ("h2o", [("slack", -1), ("normalize", 2)], "range normalize"),
        ("streamingllm", [("interval", -1), ("discard", -1)], "range discard"),
        ("full", [("slack", 1)], "unknown slack"),
        ("full", [("interval", 0)], "unknown interval"),
        ("random", [("slack", 1), ("slack", 1)], "repeated slack"),
        # Rule 1.
        ("window", [("slack", 1), ("interval", 1)], "rule slack interval"),
        ("random", [("interval", 3), ("slack", 2)], "rule slack interval"),
        # Rule 1 before rule 2.
        ("streamingllm", [("slack", 1), ("interval", 1), ("prefill_only", 1)], "rule slack interval"),
        # Rule 2: the trigger given, then the first of prefill_only,
        # adaptive, evict_at, context_shift not 0.
        ("streamingllm", [("slack", 1), ("prefill_only", 1)], "rule slack prefill_only"),
        ("h2o", [("interval", 4), ("prefill_only", 1)], "rule interval prefill_only"),
        ("h2o", [("slack", 1), ("adaptive", 1)], "rule slack adaptive"),
        ("snapkv", [("interval", 2), ("adaptive", 1)], "rule interval adaptive"),
        ("window", [("interval", 2), ("evict_at", 1)], "rule interval evict_at"),
        ("streamingllm", [("slack", 3), ("evict_at", 2)], "rule slack evict_at"),
        ("window", [("slack", 3), ("context_shift", 1)], "rule slack context_shift"),
        ("streamingllm", [("budget", 8), ("interval", 1), ("context_shift", 1)], "rule interval context_shift"),
        # After every other rule of the card, spec/prefill.md's and spec/spans.md's.
        ("h2o", [("budget", 8), ("slack", 1), ("interval", 1)], "rule recent_window budget"),
        ("streamingllm", [("budget", 4), ("sinks", 4), ("slack", 1), ("interval", 1)], "rule sinks budget"),
        ("snapkv", [("pool_kernel", 2), ("slack", 1), ("adaptive", 1)], "rule pool_kernel"),
        ("window", [("span_window", 1), ("span_chunk", 1), ("slack", 1), ("interval", 1)],
         "rule span_window span_chunk"),
        ("streamingllm", [("evict_at", 1), ("prefill_only", 1), ("slack", 1)], "rule evict_at prefill_only"),
        ("window", [("context_shift", 1), ("evict_at", 1), ("slack", 1)], "rule context_shift evict_at"),
        ("window", [("discard", 1), ("interval", 1), ("slack", 1)], "rule discard context_shift"),
        ("tova", [("ratio_ppm", 5), ("slack", 1), ("interval", 1)], "rule ratio_ppm recent_window"),
        ("h2o", [("recent_window", 0), ("adaptive", 1), ("prefill_only", 1), ("slack", 1)],
         "rule adaptive prefill_only"),
    ],
)
def test_refusals(name, params, want):
    assert subject(run(name, params, nulls(1))) == ("INVALID_PARAMETER", -1, want)


@pytest.mark.parametrize(
    "name, params",
    [
        # #combinations: the rest combine as they are.
        ("h2o", [("recent_window", 0), ("ratio_ppm", 500000), ("slack", 2)]),
        ("snapkv", [("window_budget", 1), ("interval", 2)]),
        ("streamingllm", [("ratio_ppm", 500000), ("interval", 3)]),
        ("window", [("spans", 1), ("span_window", 2), ("position_ids", 1), ("slack", 1)]),
        ("streamingllm", [("spans", 1), ("span_chunk", 4), ("interval", 1)]),
        ("h2o", [("granularity", 2), ("aggregation", 1), ("safeguard_permille", 0), ("interval", 5)]),
        # Either trigger with the other rules at 0 given explicitly.
        ("streamingllm", [("slack", 1), ("prefill_only", 0), ("evict_at", 0), ("context_shift", 0)]),
        ("tova", [("interval", 1), ("adaptive", 0), ("prefill_only", 0)]),
    ],
)
def test_accepted(name, params):
    log = run(name, params, nulls(2))
    assert log.rejection is None and len(log.steps) == 2
