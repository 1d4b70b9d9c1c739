"""Blocks (spec/blocks.md, the feature `blocks`, spec 0.13.0): evicting
whole closed blocks of `block` positions, worked by hand from the spec.

The spec's examples (#how-many-blocks-go: `window` pairs and a chunk of
61; #ranking-blocks: `h2o` sum and max, `streamingllm` sinks-block;
#triggers: `window` slack), then cases worked out here: the parameters,
their ranges and the rules of #rules with their subjects, `interval`,
`random`'s draws over blocks, `mean`'s one division (two sums one quotient),
`tova` at a prefill step (its newest left out), `snapkv`'s pooled scores,
several kept sets each with its own blocks, a trace, and the helpers.
"""

import pytest

from helpers import run, victims
from kvspec_port import blocks
from kvspec_port.harness import configure, run_scenario
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.rng import Rng


def kept(log):
    return [s.kept_count for s in log.steps]


def cuts(log):
    return [s.cut for s in log.steps]


def subject(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None and not log.steps
    category, step, _message, s = log.rejection
    return category, step, " ".join((s.check,) + s.names)


def nulls(n):
    """n decode steps admitting one position each, null attention."""
    return [(1, None)] * n


# -- #how-many-blocks-go --------------------------------------------------------

def test_window_pairs_example():
    # Vector blocks/window/pairs: window, budget 4, block 2, one position a
    # step from 0. Steps 0 to 4 evict nothing (after step 4 five are kept,
    # the open block holding 4); step 5 closes the block of 4 and 5: three
    # closed blocks, k = 3 - 2 = 1, positions 0 and 1 go. Steps 7, 9, ...
    # evict 2 and 3, then 4 and 5; a step between keeps 5 (4 + 5 mod 2).
    log = run("window", [("budget", 4), ("block", 2)], nulls(10))
    assert log.rejection is None
    assert victims(log) == [[], [], [], [], [], [0, 1], [], [2, 3], [], [4, 5]]
    assert kept(log) == [1, 2, 3, 4, 5, 4, 5, 4, 5, 4]
    assert [s.cut for s in log.steps] == [[]] * 10  # positional: no cut


def test_window_chunk_61_example():
    # Vector blocks/window/chunk-61: budget 32, block 4, one chunk of 61:
    # floor(61 / 4) - 8 = 7 blocks go, positions 0 to 27, and 33 are kept.
    log = run("window", [("budget", 32), ("block", 4)], [(61, None)])
    assert victims(log) == [list(range(28))]
    assert kept(log) == [33]


def test_the_open_block_is_not_counted():
    # window, budget 4, block 4: a chunk of 7 keeps 7 (one closed block, 1 -
    # 1 = 0 go: the open block holding 4 .. 6 comes on top of the budget);
    # one more closes it, k = 2 - 1 = 1: 0 .. 3 go.
    log = run("window", [("budget", 4), ("block", 4)], [(7, None), (1, None)])
    assert victims(log) == [[], [0, 1, 2, 3]]
    assert kept(log) == [7, 4]


def test_block_one_is_every_position():
    # With block 1 every block is one position: the log is what it was
    # before 0.13.0 (budget 3: one position a step goes from step 3).
    plain = run("window", [("budget", 3)], nulls(6))
    one = run("window", [("budget", 3), ("block", 1)], nulls(6))
    assert victims(one) == victims(plain) == [[], [], [], [0], [1], [2]]


# -- #ranking-blocks ------------------------------------------------------------

H2O_STEPS = [(4, None), (1, [0.5, 0.0, 0.25, 0.25]), (1, [0.25, 0.0, 0.25, 0.25, 0.25])]
H2O_PARAMS = [("budget", 4), ("recent_window", 2), ("block", 2)]


def test_h2o_sum_example():
    # Vector blocks/h2o/sum: after step 2 six are kept, three blocks closed,
    # k = 3 - 2 = 1. The sums of 0 .. 5 are 0.75, 0, 0.5, 0.5, 0.25, 0; 4
    # and 5 are the recent window, so the candidates are the blocks of 0
    # and 2, scoring 0.75 and 1.0: 0 and 1 go. The cut: the victim block,
    # then the other candidate block, each by its first position.
    log = run("h2o", H2O_PARAMS + [("block_score", 0)], H2O_STEPS)
    assert victims(log) == [[], [], [0, 1]]
    assert kept(log) == [4, 5, 4]
    assert cuts(log) == [[], [], [(0, 0.75), (2, 1.0)]]


def test_h2o_max_example():
    # Vector blocks/h2o/max: with block_score 2 the blocks score 0.75 and
    # 0.5: 2 and 3 go.
    log = run("h2o", H2O_PARAMS + [("block_score", 2)], H2O_STEPS)
    assert victims(log) == [[], [], [2, 3]]
    assert cuts(log)[2] == [(2, 0.5), (0, 0.75)]


def test_h2o_mean():
    # block_score 1: the sums divided by 2 (exact here), 0.375 and 0.5.
    log = run("h2o", H2O_PARAMS + [("block_score", 1)], H2O_STEPS)
    assert victims(log) == [[], [], [0, 1]]
    assert cuts(log)[2] == [(0, 0.375), (2, 0.5)]


def test_h2o_without_blocks_evicts_at_step_1():
    # "Without blocks step 1 would already have evicted position 1": five
    # kept, 3 and 4 protected, candidates 0, 1, 2 scoring 0.5, 0, 0.25.
    log = run("h2o", [("budget", 4), ("recent_window", 2)], H2O_STEPS)
    assert victims(log)[1] == [1]


def test_streamingllm_sinks_block_example():
    # Vector blocks/streamingllm/sinks-block: budget 8, sinks 2, block 2,
    # one position a step from 0. Step 9 closes a fifth block, one goes:
    # the block of 0 and 1 holds the sinks, so 2 and 3 go. Step 11 closes
    # the next: 4 and 5.
    log = run("streamingllm", [("budget", 8), ("sinks", 2), ("block", 2)], nulls(12))
    assert victims(log) == [[]] * 9 + [[2, 3], [], [4, 5]]
    assert kept(log) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 8, 9, 8]


def test_streamingllm_chunk_evicts_several_blocks_after_the_sinks():
    # budget 4, sinks 2, block 2, a chunk of 9 (0 .. 8): k = 4 - 2 = 2
    # blocks, the first two candidate blocks after the sink block: 2 .. 5;
    # kept 0, 1, 6, 7, 8 (4 + the open block's 8).
    log = run("streamingllm", [("budget", 4), ("sinks", 2), ("block", 2)], [(9, None)])
    assert victims(log) == [[2, 3, 4, 5]]
    assert kept(log) == [5]


def test_mean_ranks_as_the_sum_except_one_quotient():
    # tova, budget 3, recent_window 0, block 3. Step 0 admits 0 .. 4 (one
    # closed block: 1 - 1 = 0 go); step 1's row gives 0 .. 4 the weights
    # 1.5, 0.0625, 2^-52, 1.5, 0.0625 and admits 5 (+0.0): six kept, two
    # closed blocks, one goes. The sums (slot order, from +0.0): block 0
    # 1.5625 + 2^-52, block 3 1.5625, one ulp apart; 1.5625 / 3 and
    # (1.5625 + 2^-52) / 3 round to the same binary64 (the quotient's ulp is
    # 2^-53 in [0.5, 1), the exact quotients differ by 2^-52 / 3, two
    # thirds of it, and neither crosses a rounding boundary between them),
    # so with `mean` the blocks tie and the lower first position (0) goes,
    # while `sum` evicts the lower sum (3) and `max` ties at 1.5 (0 goes).
    tiny = 2.0 ** -52
    steps = [(5, None), (1, [1.5, 0.0625, tiny, 1.5, 0.0625])]
    params = [("budget", 3), ("recent_window", 0), ("block", 3)]
    assert (1.5625 + tiny) / 3 == 1.5625 / 3  # binary64, as the spec divides
    by_sum = run("tova", params + [("block_score", 0)], steps)
    assert victims(by_sum) == [[], [3, 4, 5]]
    assert cuts(by_sum)[1] == [(3, 1.5625), (0, 1.5625 + tiny)]
    by_mean = run("tova", params + [("block_score", 1)], steps)
    assert victims(by_mean) == [[], [0, 1, 2]]
    assert cuts(by_mean)[1] == [(0, 1.5625 / 3), (3, 1.5625 / 3)]
    by_max = run("tova", params + [("block_score", 2)], steps)
    assert victims(by_max) == [[], [0, 1, 2]]
    assert cuts(by_max)[1] == [(0, 1.5), (3, 1.5)]


def test_the_cut_stops_four_blocks_after_the_victims():
    # window-like scores: h2o budget 2, recent_window 0, block 2, a chunk of
    # 14 with null attention: every block scores +0.0, k = 7 - 1 = 6; the
    # cut is the 6 victim blocks then the one candidate block left (the
    # seventh), by first position. With budget 12 (k = 1) it is 1 + 4.
    log = run("h2o", [("budget", 2), ("recent_window", 0), ("block", 2)], [(14, None)])
    assert victims(log) == [list(range(12))]
    assert cuts(log) == [[(p, 0.0) for p in range(0, 14, 2)]]
    log = run("h2o", [("budget", 12), ("recent_window", 0), ("block", 2)], [(14, None)])
    assert victims(log) == [[0, 1]]
    assert cuts(log) == [[(0, 0.0), (2, 0.0), (4, 0.0), (6, 0.0), (8, 0.0)]]


def test_recent_window_protects_the_last_closed_blocks():
    # h2o, budget 6, recent_window 4, block 2, a chunk of 11 (0 .. 10), null
    # attention: five closed blocks, k = 5 - 3 = 2; the recent window (the
    # last 4 slots, 7 .. 10) covers the open block (10) and the last 4 / 2
    # = 2 closed blocks (6 .. 9): candidates 0, 2, 4, all +0.0, 0 .. 3 go.
    log = run("h2o", [("budget", 6), ("recent_window", 4), ("block", 2)], [(11, None)])
    assert victims(log) == [[0, 1, 2, 3]]
    assert cuts(log) == [[(0, 0.0), (2, 0.0), (4, 0.0)]]
    assert kept(log) == [7]


def test_blocks_are_slots_not_position_numbers():
    # tova, budget 2, recent_window 0, block 2. Step 0 admits 0 .. 2;
    # step 1's row (1, 0.25, 0.5) admits 3: blocks (0, 1) and (2, 3) score
    # 1.25 and 0.5: 2 and 3 go, leaving 0, 1. Steps 2 and 3 admit 4 and 5
    # (rows of 4 and 5 weights; tova reads only the latest): the kept
    # slots 0, 1, 4, 5 make the blocks (0, 1) and (4, 5); the row of step
    # 3 gives 0 and 1 weights 0 and 0.25 and 4 the weight 0.5, 5 is new
    # (+0.0): 0.25 against 0.5, 0 and 1 go.
    steps = [(3, None), (1, [1.0, 0.25, 0.5]), (1, [0.5, 0.5, 0.5, 0.5]),
             (1, [0.0, 0.25, 1.0, 1.0, 0.5])]
    log = run("tova", [("budget", 2), ("recent_window", 0), ("block", 2)], steps)
    assert victims(log) == [[], [2, 3], [], [0, 1]]
    assert cuts(log)[3] == [(0, 0.25), (4, 0.5)]
    assert kept(log) == [3, 2, 3, 2]


# -- random ---------------------------------------------------------------------

def test_random_draws_over_candidate_blocks():
    # seed 42 (spec/rng.md#golden-outputs: the first outputs' top bits are
    # 0, 0, 1, 1, 1), budget 4, recent_window 2, block 2, one position a
    # step. Each eviction has two candidate blocks (Uniform(2), the top
    # bit): step 5, blocks (0, 1), (2, 3): index 0, 0 and 1 go; step 7,
    # (2, 3), (4, 5): 0, 2 and 3 go; step 9, (4, 5), (6, 7): 1, 6 and 7 go;
    # step 11, (4, 5), (8, 9) (kept 4, 5, 8 .. 11): 1, 8 and 9 go.
    log = run("random", [("budget", 4), ("recent_window", 2), ("block", 2)], nulls(12), seed=42)
    assert victims(log) == [[]] * 5 + [[0, 1], [], [2, 3], [], [6, 7], [], [8, 9]]
    assert kept(log) == [1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 4]


def test_random_several_blocks_without_replacement():
    # seed 42, budget 2, recent_window 0, block 2, a chunk of 7: three
    # closed blocks, k = 3 - 1 = 2. Uniform(3) (top two bits 00) takes
    # block index 0 (0, 1); Uniform(2) over (2, 3), (4, 5) (top bit 0)
    # takes (2, 3). Kept 4, 5, 6.
    log = run("random", [("budget", 2), ("recent_window", 0), ("block", 2)], [(7, None)], seed=42)
    assert victims(log) == [[0, 1, 2, 3]]
    assert kept(log) == [3]


def test_random_draws_nothing_when_no_block_goes():
    # The step that keeps 5 (budget 4, block 2) evicts nothing and draws
    # nothing: the next eviction's draw is the Rng's first output.
    a = run("random", [("budget", 4), ("recent_window", 0), ("block", 2)], [(5, None), (1, None)], seed=42)
    b = run("random", [("budget", 4), ("recent_window", 0), ("block", 2)], [(6, None)], seed=42)
    assert victims(a)[1] == victims(b)[0]
    # Uniform(3), top two bits 00: the block of 0 and 1.
    assert victims(b) == [[0, 1]]


# -- #triggers ------------------------------------------------------------------

def test_slack_window_example():
    # Vector blocks/slack/window: budget 4, block 2, slack 2. Step 6 keeps
    # seven, fires and evicts one block (0, 1), leaving five; step 7 keeps
    # six and does not fire; step 8 keeps seven and evicts 2 and 3.
    log = run("window", [("budget", 4), ("slack", 2), ("block", 2)], nulls(11))
    assert victims(log) == [[]] * 6 + [[0, 1], [], [2, 3], [], [4, 5]]
    assert kept(log) == [1, 2, 3, 4, 5, 6, 5, 6, 5, 6, 5]


def test_interval_fires_and_evicts_whole_blocks():
    # window, budget 4, block 2, interval 3. Step 2 fires with three kept:
    # one closed block, nothing goes. Step 5 fires with six: k = 3 - 2 = 1
    # (0, 1). Step 8 fires with seven (2 .. 8): k = 3 - 2 = 1 (2, 3).
    # Step 11 fires with eight (4 .. 11): k = 4 - 2 = 2 (4 .. 7).
    log = run("window", [("budget", 4), ("interval", 3), ("block", 2)], nulls(12))
    assert victims(log) == [[]] * 5 + [[0, 1], [], [], [2, 3], [], [], [4, 5, 6, 7]]
    assert kept(log) == [1, 2, 3, 4, 5, 4, 5, 6, 5, 6, 7, 4]


def test_trace_runs_in_blocks():
    # A generated trace is decode steps (step t admits t); window reads no
    # weight: the pairs example again.
    log = run_scenario("window", [("budget", 4), ("block", 2)], 0, None, kpb.TraceConfig(steps=10))
    assert victims(log) == [[], [], [], [], [], [0, 1], [], [2, 3], [], [4, 5]]


# -- a prefill step -------------------------------------------------------------

def tova_prefill(protect_newest):
    # tova, budget 4, recent_window 0, block 2, prefill_only 1: a prefill
    # chunk of 8 (0 .. 7) with the query row of 7 (8 weights), then a
    # decode step (null) that evicts nothing (prefill_only 1).
    row = [0.5, 0.5, 0.25, 0.25, 0.5, 0.25, 0.0, 0.0]
    params = [("budget", 4), ("recent_window", 0), ("prefill_only", 1), ("protect_newest", protect_newest),
              ("block", 2)]
    return run("tova", params, [(8, None, [], [row]), (1, None), (1, None)])


def test_tova_prefill_newest_block_is_no_candidate():
    # Eight kept, four closed blocks, k = 4 - 2 = 2. With protect_newest 1
    # the newest (7) is no candidate, so neither is its block (6, 7), which
    # scores 0: the candidates are (0, 1) 1.0, (2, 3) 0.5, (4, 5) 0.75, and
    # 2 .. 5 go. The decode steps after keep 5, 6 (prefill_only 1).
    log = tova_prefill(1)
    assert victims(log) == [[2, 3, 4, 5], [], []]
    assert cuts(log)[0] == [(2, 0.5), (4, 0.75), (0, 1.0)]
    assert kept(log) == [4, 5, 6]


def test_tova_prefill_without_protect_newest():
    # protect_newest 0: (6, 7) at 0.0 is a candidate and goes first.
    log = tova_prefill(0)
    assert victims(log) == [[2, 3, 6, 7], [], []]
    assert cuts(log)[0] == [(6, 0.0), (2, 0.5), (4, 0.75), (0, 1.0)]


def test_snapkv_blocks_rank_pooled_scores():
    # snapkv, budget 2, recent_window 0, obs_window 1, block 2. Step 0
    # admits 0 .. 2; step 1's row (0, 0, 0.5) admits 3: window sums 0, 0,
    # 0.5, 0. With pool_kernel 3 (max over slots i - 1 .. i + 1) the
    # pooled scores are 0, 0.5, 0.5, 0.5: blocks (0, 1) 0.5 and (2, 3) 1.0.
    # With pool_kernel 1: 0 and 0.5. Either way 0 and 1 go.
    steps = [(3, None), (1, [0.0, 0.0, 0.5])]
    params = [("budget", 2), ("recent_window", 0), ("obs_window", 1), ("block", 2)]
    log = run("snapkv", params + [("pool_kernel", 3)], steps)
    assert victims(log) == [[], [0, 1]]
    assert cuts(log)[1] == [(0, 0.5), (2, 1.0)]
    log = run("snapkv", params + [("pool_kernel", 1)], steps)
    assert cuts(log)[1] == [(0, 0.0), (2, 0.5)]


def test_streamingllm_prefill_only_evicts_blocks_at_prefill_steps():
    # streamingllm, budget 4, sinks 2, prefill_only 1, block 2. Step 0, a
    # prefill chunk of 9 (the query row of 8): its step budget is `budget`
    # (spec/prefill.md#when-a-policy-evicts), k = 4 - 2 = 2 blocks after
    # the sink block: 2 .. 5 go, 0, 1, 6, 7, 8 kept. Steps 1, 2 (decode)
    # evict nothing. Step 3, a prefill step admitting 11 (the query row of
    # 11): kept 0, 1, 6 .. 11, k = 4 - 2 = 2: the blocks (6, 7), (8, 9) go.
    params = [("budget", 4), ("sinks", 2), ("prefill_only", 1), ("block", 2)]
    steps = [(9, None, [], [[0.125] * 9]), (1, None), (1, None), (1, None, [], [[0.125] * 12])]
    log = run("streamingllm", params, steps)
    assert victims(log) == [[2, 3, 4, 5], [], [], [6, 7, 8, 9]]
    assert kept(log) == [5, 6, 7, 4]


def test_several_sets_prefill_only_evict_blocks_at_prefill_steps_only():
    # h2o, 2 query heads, 2 KV heads, granularity 1, budget 2, recent_window
    # 0, prefill_only 1, block 2. Step 0, a prefill chunk of 5 with one
    # query row per head (query 4): each set keeps five, k = 2 - 1 = 1.
    # Head 0's row sums the blocks (0, 1) to 1.0 and (2, 3) to 0.25: 2, 3
    # go; head 1's to 0.25 and 1.0: 0, 1 go. The decode steps after evict
    # nothing (prefill_only 1), whatever the sets keep.
    params = [("budget", 2), ("recent_window", 0), ("granularity", 1), ("prefill_only", 1), ("block", 2)]
    rows = [[0.5, 0.5, 0.25, 0.0, 0.25], [0.0, 0.25, 0.5, 0.5, 0.0]]
    steps = [(5, None, [], rows)] + [(1, None, [], [])] * 3
    log = run_scenario("h2o", params, 0, steps, None, 2, 2)
    assert log.rejection is None
    assert [s.victims for s in log.steps[0].sets] == [[2, 3], [0, 1]]
    assert [s.cut for s in log.steps[0].sets] == [[(2, 0.25), (0, 1.0)], [(0, 0.25), (2, 1.0)]]
    assert [[s.victims for s in st.sets] for st in log.steps[1:]] == [[[], []]] * 3
    assert [[s.kept_count for s in st.sets] for st in log.steps] == [[3, 3], [4, 4], [5, 5], [6, 6]]


def test_snapkv_prefill_window_blocks_score_infinity():
    # The port's reading (README): snapkv, budget 2, recent_window 0,
    # obs_window 2, pool_kernel 1, block 2, window_budget 0; a prefill chunk
    # of 6 with the query rows of 4 and 5. n = 6, k = 3 - 1 = 2. The window
    # (the last 2 slots, 4 and 5) scores +infinity; the prefix sums are 0.5,
    # 0.25, 0.5, 0.5: blocks (0, 1) 0.75, (2, 3) 1.0, (4, 5) +infinity,
    # which ranks last: 0 .. 3 go, and the cut shows the window's block.
    inf = float("inf")
    rows = [[0.25, 0.0, 0.5, 0.5, 0.25], [0.25, 0.25, 0.0, 0.0, 0.5, 0.5]]
    params = [("budget", 2), ("recent_window", 0), ("obs_window", 2), ("pool_kernel", 1), ("block", 2)]
    for mode, cut in ((0, [(0, 0.75), (2, 1.0), (4, inf)]), (1, [(0, 0.375), (2, 0.5), (4, inf)]),
                      (2, [(0, 0.5), (2, 0.5), (4, inf)])):
        log = run("snapkv", params + [("block_score", mode)], [(6, None, [], rows)])
        assert victims(log) == [[0, 1, 2, 3]]
        assert cuts(log) == [cut]
        assert kept(log) == [2]


# -- #several-heads -------------------------------------------------------------

HEAD_STEPS = [(3, None, [], []), (1, None, [[0.5, 0.5, 0.25], [0.0, 0.25, 0.5]], [])]


def test_each_kept_set_has_its_own_blocks():
    # h2o, 2 query heads, 2 KV heads, granularity 1 (one set per head),
    # budget 2, recent_window 0, block 2. Step 1 keeps four in each set, k
    # = 2 - 1 = 1. Set 0: blocks (0, 1) 1.0, (2, 3) 0.25: 2, 3 go. Set 1:
    # 0.25 and 0.5: 0, 1 go.
    params = [("budget", 2), ("recent_window", 0), ("granularity", 1), ("block", 2)]
    log = run_scenario("h2o", params, 0, HEAD_STEPS, None, 2, 2)
    assert log.rejection is None
    sets = log.steps[1].sets
    assert [s.victims for s in sets] == [[2, 3], [0, 1]]
    assert [s.cut for s in sets] == [[(2, 0.25), (0, 1.0)], [(0, 0.25), (2, 0.5)]]
    assert [s.kept_count for s in sets] == [2, 2]
    # Step 2 (position 4; rows over 0 .. 3, each set gathers its own):
    # three kept, nothing goes; step 3 (5) closes (4, 5) in both sets.
    rows = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    log = run_scenario("h2o", params, 0, HEAD_STEPS + [(1, None, rows, []), (1, None, [r + [0.0] for r in rows], [])],
                       None, 2, 2)
    assert [s.victims for s in log.steps[2].sets] == [[], []]
    # Set 0 keeps 0, 1 (sum 1.0) and 4, 5 (0): 4, 5 go; set 1 keeps 2, 3
    # (0.5 + 0: 3 was admitted at step 1) and 4, 5 (0): 4, 5 go.
    assert [s.victims for s in log.steps[3].sets] == [[4, 5], [4, 5]]
    assert [s.cut for s in log.steps[3].sets] == [[(4, 0.0), (0, 1.0)], [(4, 0.0), (2, 0.5)]]


def test_one_set_for_the_layer_ranks_combined_scores():
    # granularity 0 (one set, vLLM's page), aggregation 0 (mean): the
    # combined scores of 0 .. 3 are 0.25, 0.375, 0.375, 0: blocks 0.625 and
    # 0.375: 2 and 3 go from every head at once.
    params = [("budget", 2), ("recent_window", 0), ("granularity", 0), ("aggregation", 0), ("block", 2)]
    log = run_scenario("h2o", params, 0, HEAD_STEPS, None, 2, 2)
    assert victims(log) == [[], [2, 3]]
    assert cuts(log)[1] == [(2, 0.375), (0, 0.625)]


# -- #parameters and #rules -----------------------------------------------------

def test_parameters_after_the_triggers():
    for name in ("window", "streamingllm", "random"):
        cls, values = configure(name, [])
        assert [p[0] for p in cls.PARAMS][-3:] == ["slack", "interval", "block"]
        assert values["block"] == 1
    for name in ("h2o", "tova", "snapkv"):
        cls, values = configure(name, [])
        assert [p[0] for p in cls.PARAMS][-4:] == ["slack", "interval", "block", "block_score"]
        assert values["block"] == 1 and values["block_score"] == 0
    _, values = configure("window", [("budget", 65536), ("block", 65536)])
    assert values["block"] == 65536
    _, values = configure("h2o", [("budget", 4), ("recent_window", 0), ("block_score", 2)])
    assert values["block_score"] == 2


@pytest.mark.parametrize("name, params, want", [
    ("full", [("block", 2)], "unknown block"),
    ("window", [("block_score", 0)], "unknown block_score"),
    ("streamingllm", [("block_score", 1)], "unknown block_score"),
    ("random", [("block_score", 1)], "unknown block_score"),
    ("window", [("block", 0)], "range block"),
    ("window", [("block", 65537)], "range block"),
    ("h2o", [("block_score", 3)], "range block_score"),
    # block before block_score (the card's order).
    ("tova", [("block_score", 3), ("block", 0)], "range block"),
    # 1. budget, then recent_window, then sinks, multiples of block.
    ("window", [("budget", 5), ("block", 2)], "rule block budget"),
    ("h2o", [("budget", 4), ("recent_window", 3), ("block", 2)], "rule block recent_window"),
    ("random", [("budget", 7), ("recent_window", 3), ("block", 3)], "rule block budget"),
    ("random", [("budget", 6), ("recent_window", 4), ("block", 3)], "rule block recent_window"),
    ("streamingllm", [("budget", 4), ("sinks", 1), ("block", 2)], "rule block sinks"),
    ("streamingllm", [("budget", 5), ("sinks", 1), ("block", 2)], "rule block budget"),
    # 2. ratio_ppm, adaptive, evict_at, context_shift, window_budget 0.
    ("h2o", [("budget", 4), ("recent_window", 0), ("ratio_ppm", 500000), ("block", 2)], "rule block ratio_ppm"),
    ("streamingllm", [("budget", 4), ("sinks", 2), ("ratio_ppm", 1), ("block", 2)], "rule block ratio_ppm"),
    ("tova", [("budget", 4), ("recent_window", 2), ("adaptive", 1), ("block", 2)], "rule block adaptive"),
    ("window", [("budget", 4), ("evict_at", 1), ("block", 2)], "rule block evict_at"),
    ("streamingllm", [("budget", 4), ("sinks", 0), ("evict_at", 2), ("block", 2)], "rule block evict_at"),
    ("window", [("budget", 4), ("context_shift", 1), ("block", 2)], "rule block context_shift"),
    ("snapkv", [("budget", 4), ("recent_window", 2), ("window_budget", 1), ("block", 2)],
     "rule block window_budget"),
    # Rule 1 before rule 2.
    ("window", [("budget", 5), ("evict_at", 1), ("block", 2)], "rule block budget"),
    ("h2o", [("budget", 4), ("recent_window", 1), ("adaptive", 1), ("block", 2)], "rule block recent_window"),
    # After every other rule: the card's, then the triggers'.
    ("h2o", [("budget", 4), ("recent_window", 4), ("block", 3)], "rule recent_window budget"),
    ("window", [("budget", 5), ("slack", 1), ("interval", 1), ("block", 2)], "rule slack interval"),
    ("window", [("budget", 5), ("evict_at", 1), ("interval", 1), ("block", 2)], "rule interval evict_at"),
])
def test_refusals(name, params, want):
    assert subject(run(name, params, nulls(1))) == ("INVALID_PARAMETER", -1, want)


@pytest.mark.parametrize("name, params", [
    # block 1: every integer is a multiple, and rule 2 does not apply.
    ("window", [("budget", 5), ("evict_at", 1), ("block", 1)]),
    ("h2o", [("budget", 5), ("recent_window", 0), ("ratio_ppm", 500000), ("block", 1), ("block_score", 2)]),
    ("snapkv", [("budget", 5), ("recent_window", 3), ("window_budget", 1), ("block", 1)]),
    ("h2o", [("budget", 5), ("recent_window", 3), ("adaptive", 1), ("block", 1)]),
    ("window", [("budget", 5), ("context_shift", 1), ("block", 1)]),
    # recent_window 0 and sinks 0 are multiples of any block; the rules of
    # #rules allow prefill_only, slack, interval, spans.
    ("h2o", [("budget", 4), ("recent_window", 0), ("prefill_only", 1), ("block", 4)]),
    ("streamingllm", [("budget", 4), ("sinks", 0), ("slack", 3), ("spans", 1), ("block", 2)]),
    ("random", [("budget", 9), ("recent_window", 6), ("interval", 2), ("block", 3)]),
])
def test_accepted(name, params):
    assert run(name, params, nulls(1)).rejection is None


# -- the helpers ----------------------------------------------------------------

def test_helpers():
    assert blocks.blocks_to_evict(7, 4, 2) == 1  # floor(7 / 2) - 2
    assert blocks.blocks_to_evict(5, 4, 2) == 0
    assert blocks.blocks_to_evict(3, 4, 2) == -1  # nothing goes
    assert list(blocks.candidate_starts(0, 9, 2)) == [0, 2, 4, 6]
    assert list(blocks.candidate_starts(2, 9, 2)) == [2, 4, 6]
    assert list(blocks.candidate_starts(1, 9, 2)) == [2, 4, 6]  # a block holding slot 0 is out
    assert list(blocks.candidate_starts(0, 1, 2)) == []
    rng = Rng(42)
    # Uniform(3) then Uniform(2) (seed 42: indices 0 and 0), blocks of 3
    # starting at slots 0, 3, 6: slots 0 .. 5.
    assert blocks.draw_blocks(rng, 2, 9, 3) == [0, 1, 2, 3, 4, 5]
