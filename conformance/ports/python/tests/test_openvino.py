"""openvino (spec/policies/openvino.md, spec 0.14.0): OpenVINO GenAI's block
eviction, worked by hand from the card.

The card's worked examples (norm_sum against SUM, the forward pool, the
SnapKV window's counts, the deferred prompt, GenAI's four zeroed blocks
with two to evict), then its parameters and rules with their subjects,
the registration rules one by one (the state after each step), the heads
summed, column totals in place of rows, null attention, blocks, and the
forward pool against its definition.

Every worked example has `sinks` 1, `recent_window` 1, `budget` 3, `block`
1, `obs_window` 0 unless it says otherwise; the card does not list
`max_pool`, and its numbers are those of `max_pool` 1 (no pool: "The
forward pool ... the same rows with `max_pool` 2"), so `max_pool` 1 is
given here (README, Readings).
"""

import random

import numpy as np
import pytest

from helpers import run, victims
from kvspec_port import trace as trace_mod
from kvspec_port.harness import configure, make_policy, run_scenario
from kvspec_port.policies import REGISTRY
from kvspec_port.policies.openvino import OpenVinoPolicy, forward_max_pool
from kvspec_port.proto import kvspec_pb2 as kpb


def kept(log):
    return [s.kept_count for s in log.steps]


def cuts(log):
    return [s.cut for s in log.steps]


def refused(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None and not log.steps
    category, step, _message, s = log.rejection
    return category, step, " ".join((s.check,) + s.names)


EXAMPLE = [("sinks", 1), ("recent_window", 1), ("budget", 3), ("block", 1), ("obs_window", 0), ("max_pool", 1)]


def example(**over):
    """The examples' parameters, with `over` replacing or adding some."""
    params = dict(EXAMPLE)
    params.update(over)
    return list(params.items())


def prefill(admit, rows, totals=None, total_rows=0):
    """A prefill step with one head's query rows (and column totals)."""
    if totals is None:
        return (admit, None, [], rows)
    return (admit, None, [], rows, totals, total_rows)


# -- Worked examples ------------------------------------------------------------

# "norm_sum against SUM": rows of steps 0 to 3, one position a step from 0.
ROWS = [(1, []), (1, [1.0]), (1, [0.5, 0.5]), (1, [0.25, 0.125, 0.5])]


def states(params, steps):
    """The policy's (kept, acc, count) after each step, by direct calls
    (the same rows, gathered: nothing is evicted before the last step)."""
    policy = make_policy("openvino", params)
    out = []
    first = 0
    for admit, row in steps:
        policy.step(first, admit, None if row is None else [row[p] for p in policy.kept])
        first += admit
        out.append((list(policy.kept), policy.acc.tolist(), policy.count.tolist()))
    return out


def test_norm_sum_example_state():
    # Step 0: n 1 is not above S 1, nothing tracked. Step 1: x = (1.0, 0);
    # position 1 tracked with acc 0 (position 0's 1.0 is in the start
    # area), count 1. Step 2: acc 0.5, 0; counts 2, 1. Step 3: acc 0.625,
    # 0.5, 0 and counts 3, 2, 1 before the eviction.
    st = states(example(norm_sum=0), ROWS[:3])
    assert st == [([0], [], []), ([0, 1], [0.0], [1]), ([0, 1, 2], [0.5, 0.0], [2, 1])]
    # Step 3 (with n 4 reaching budget + B = 4) evicts right after
    # registering; the registration alone:
    probe = make_policy("openvino", example(norm_sum=0))
    for first, (admit, row) in enumerate(ROWS[:3]):
        probe.step(first, admit, row)
    probe.kept.append(3)
    probe.register(np.array([0.25, 0.125, 0.5, 0.0]), 1)
    assert probe.acc.tolist() == [0.625, 0.5, 0.0]
    assert probe.count.tolist() == [3, 2, 1]


def test_norm_sum_example():
    # Vector openvino/decode/norm-sum: NORM_SUM, 0.625 / 3 = 0.2083...
    # against 0.5 / 2 = 0.25 (candidates 1 and 2; 0 is the start area, 3
    # the recent window): position 1 goes.
    log = run("openvino", example(norm_sum=1), ROWS)
    assert log.rejection is None
    assert victims(log) == [[], [], [], [1]]
    assert kept(log) == [1, 2, 3, 3]
    assert cuts(log)[3] == [(1, 0.625 / 3), (2, 0.25)]


def test_sum_example():
    # Vector openvino/decode/sum: SUM, 0.625 against 0.5: position 2 goes.
    log = run("openvino", example(norm_sum=0), ROWS)
    assert victims(log) == [[], [], [], [2]]
    assert cuts(log)[3] == [(2, 0.5), (1, 0.625)]


def test_max_pool_example():
    # Vector openvino/decode/max-pool: max_pool 2. Step 1: u for position 1
    # is max(x[1]) = 0. Step 2: u = (0.5, 0). Step 3: u = (max(0.125, 0.5),
    # max(0.5, 0), 0) = (0.5, 0.5, 0): acc 1.0, 0.5, 0. NORM_SUM: 1.0 / 3
    # against 0.5 / 2, position 2 goes, where without the pool position 1 went.
    log = run("openvino", example(norm_sum=1, max_pool=2), ROWS)
    assert victims(log) == [[], [], [], [2]]
    assert cuts(log)[3] == [(2, 0.25), (1, 1.0 / 3)]
    st = states(example(norm_sum=1, max_pool=2), ROWS[:3])
    assert [s[1] for s in st] == [[], [0.0], [0.5, 0.0]]
    # "With SUM position 2 goes either way": 1.0 against 0.5.
    log = run("openvino", example(norm_sum=0, max_pool=2), ROWS)
    assert victims(log) == [[], [], [], [2]]
    assert cuts(log)[3] == [(2, 0.5), (1, 1.0)]


# "The SnapKV window's counts": budget 4, obs_window 2. Step 0 admits 0 to 3
# with the rows of queries 2 and 3; step 1 admits 4 with a row.
WINDOW_ROWS = [[0.25, 0.5, 0.25], [0.25, 0.125, 0.125, 0.5]]
WINDOW_STEPS = [prefill(4, WINDOW_ROWS), (1, [0.125, 0.25, 0.375, 0.25])]


def test_window_counts_example():
    # Vector openvino/prefill/window-counts. Step 0 registers x = (0.5,
    # 0.625, 0.375, 0.5) with k 2 and evicts nothing: seen 2; positions 1, 2,
    # 3 get acc 0.625, 0.375, 0.5 and counts min(2, 3), min(2, 2), min(2, 1)
    # = 2, 2, 1. Step 1: acc 0.875, 0.75, 0.75, 0, the window complete:
    # counts 3, 3, 2, 1. n 5 reaches budget + B = 5: one of 1, 2, 3 goes:
    # 0.875 / 3, 0.75 / 3 = 0.25, 0.75 / 2 = 0.375: position 2.
    params = example(budget=4, obs_window=2, norm_sum=1)
    log = run("openvino", params, WINDOW_STEPS)
    assert log.rejection is None
    assert victims(log) == [[], [2]]
    assert kept(log) == [4, 4]
    assert cuts(log)[1] == [(2, 0.25), (1, 0.875 / 3), (3, 0.375)]
    policy = make_policy("openvino", params)
    # Gathered rows: every position is kept, so as given.
    policy.step(0, 4, None, queries=WINDOW_ROWS)
    assert policy.seen == 2
    assert policy.acc.tolist() == [0.625, 0.375, 0.5]
    assert policy.count.tolist() == [2, 2, 1]
    out = policy.step(4, 1, [0.125, 0.25, 0.375, 0.25])
    assert out.victims == [2]
    assert policy.acc.tolist() == [0.875, 0.75, 0.0]  # positions 1, 3, 4: 2's are gone
    assert policy.count.tolist() == [3, 2, 1]


def test_every_query_counts_example():
    # Vector openvino/prefill/every-query-counts: with obs_window 0 the
    # counts are 3, 2, 1 after step 0 and 4, 3, 2, 1 after step 1, and
    # position 1 (0.875 / 4 = 0.21875) goes.
    params = example(budget=4, obs_window=0, norm_sum=1)
    log = run("openvino", params, WINDOW_STEPS)
    assert victims(log) == [[], [1]]
    assert cuts(log)[1] == [(1, 0.21875), (2, 0.25), (3, 0.375)]
    policy = make_policy("openvino", params)
    policy.step(0, 4, None, queries=WINDOW_ROWS)
    assert policy.count.tolist() == [3, 2, 1]


def test_deferred_example():
    # Vector openvino/prefill/deferred: budget 4. Step 0 is a prefill step
    # admitting 0 to 5; 6 kept, nothing goes. Step 1 admits 6 with a row: 7
    # kept, floor(7 / 1) - 4 = 3 blocks go at once. (The card gives no rows;
    # with query 5's row (0.5, 0.125, 0.25, 0.0625, 0.5, 0.25), acc for 1 ..
    # 5 is 0.125, 0.25, 0.0625, 0.5, 0.25, counts 5 .. 1; the decode row of
    # 0.25 each adds 0.25: 0.375 / 6, 0.5 / 5, 0.3125 / 4, 0.75 / 3, 0.5 / 2,
    # 6 the recent window: 1, 3, 2 go.)
    steps = [prefill(6, [[0.5, 0.125, 0.25, 0.0625, 0.5, 0.25]]), (1, [0.25] * 6)]
    log = run("openvino", example(budget=4, norm_sum=1), steps)
    assert victims(log) == [[], [1, 2, 3]]
    assert kept(log) == [6, 4]
    assert cuts(log)[1] == [(1, 0.0625), (3, 0.078125), (2, 0.1), (4, 0.25), (5, 0.25)]


def test_four_zeroed_two_to_evict_example():
    # #tie-breaking (Vector openvino/upstream/four-zeroed-two-to-evict-0):
    # sinks 32, recent_window 32, budget 192, block 4, NORM_SUM, obs_window
    # 0, max_pool 1; blocks 10, 13, 15 and 36 zeroed, every other score 1.0;
    # a step admitting all but one position with null attention, then a
    # decode step admitting the last with the scores as its row. Two blocks
    # go (here 200 positions: floor(200 / 4) - 48 = 2): the zero blocks tie
    # at 0, and 10 and 13 go, positions 40 to 43 and 52 to 55.
    n = 200
    row = [1.0] * (n - 1)
    for b in (10, 13, 15, 36):
        row[4 * b:4 * b + 4] = [0.0] * 4
    params = [("sinks", 32), ("recent_window", 32), ("budget", 192), ("block", 4), ("norm_sum", 1),
              ("obs_window", 0), ("max_pool", 1)]
    log = run("openvino", params, [(n - 1, None), (1, row)])
    assert victims(log) == [[], list(range(40, 44)) + list(range(52, 56))]
    assert kept(log) == [199, 192]
    # The cut: the 2 victim blocks, then 4 more: the other zero blocks (15,
    # 36), then the lowest of the others, the oldest candidate blocks 8 and
    # 9, whose counts are the largest (168 - j for slot 32 + j; acc 1.0).
    cut = cuts(log)[1]
    assert [p for p, _ in cut] == [40, 52, 60, 144, 32, 36]
    assert [s for _, s in cut[:4]] == [0.0] * 4
    assert cut[4][1] == 1.0 / 168 + 1.0 / 167 + 1.0 / 166 + 1.0 / 165
    assert cut[5][1] == 1.0 / 164 + 1.0 / 163 + 1.0 / 162 + 1.0 / 161
    # Null attention registered nothing and evicted nothing at step 0,
    # although 199 >= budget + block.


# -- Parameters and rules -------------------------------------------------------

def test_registered_after_random():
    # knorm (spec 0.16.0), keydiff (0.17.0), lagkv (0.18.0) and simlayerkv
    # (0.20.0) after it (spec/README.md#policies).
    assert list(REGISTRY) == ["full", "window", "streamingllm", "h2o", "tova", "snapkv", "random", "openvino",
                              "knorm", "keydiff", "lagkv", "simlayerkv"]


def test_parameters_and_defaults():
    cls, values = configure("openvino", [])
    assert cls is OpenVinoPolicy
    assert [p[0] for p in cls.PARAMS] == ["budget", "sinks", "recent_window", "block", "norm_sum", "max_pool",
                                          "obs_window"]
    assert values == {"budget": 672, "sinks": 32, "recent_window": 128, "block": 32, "norm_sum": 1,
                      "max_pool": 7, "obs_window": 8}
    # The extremes of every range are accepted (with the rules met).
    configure("openvino", [("budget", 2**32 - 1), ("sinks", 0), ("recent_window", 0), ("block", 1),
                           ("norm_sum", 0), ("max_pool", 1), ("obs_window", 0)])
    configure("openvino", [("budget", 65536 * 4), ("sinks", 65536), ("recent_window", 65536),
                           ("block", 65536), ("norm_sum", 1), ("max_pool", 65536), ("obs_window", 2**32 - 1)])


@pytest.mark.parametrize("name, value", [
    ("budget", 0), ("budget", 2**32),
    ("sinks", 2**32 - 1), ("recent_window", 2**32 - 1),
    ("block", 0), ("block", 65537),
    ("norm_sum", 2), ("max_pool", 0), ("max_pool", 65537),
    ("obs_window", 2**32),
])
def test_range(name, value):
    assert refused(run("openvino", [(name, value)])) == ("INVALID_PARAMETER", -1, f"range {name}")


def test_ranges_in_table_order():
    # Check 3 walks the table in its order: budget's range before sinks'.
    assert refused(run("openvino", [("sinks", 2**32 - 1), ("budget", 0)])) == (
        "INVALID_PARAMETER", -1, "range budget")


@pytest.mark.parametrize("name", ["granularity", "aggregation", "adaptive", "safeguard_permille", "slack",
                                  "interval", "block_score", "prefill_only", "ratio_ppm", "pool_kernel",
                                  "spans", "evict_at", "normalize"])
def test_other_parameters_unknown(name):
    # The card takes no `granularity` (one set whatever the heads), no trigger,
    # no `block_score` (its block score is the sum).
    assert refused(run("openvino", [(name, 0)])) == ("INVALID_PARAMETER", -1, f"unknown {name}")


def test_rule_areas():
    # Rule 1: "openvino: sinks + recent_window must be below budget, got
    # sinks 32, recent_window 128, budget 160" (subject rule sinks
    # recent_window budget), strictly.
    log = run("openvino", [("budget", 160)])
    assert refused(log) == ("INVALID_PARAMETER", -1, "rule sinks recent_window budget")
    assert log.rejection[2] == ("openvino: sinks + recent_window must be below budget, got sinks 32, "
                                "recent_window 128, budget 160")
    assert run("openvino", [("budget", 192)]).rejection is None
    assert refused(run("openvino", example(sinks=2, recent_window=1))) == (
        "INVALID_PARAMETER", -1, "rule sinks recent_window budget")
    assert refused(run("openvino", example(sinks=0, recent_window=3))) == (
        "INVALID_PARAMETER", -1, "rule sinks recent_window budget")
    # kvspec accepts 0 for both (GenAI asserts them above 0).
    assert run("openvino", example(sinks=0, recent_window=0), ROWS).rejection is None


def test_rule_areas_before_multiples():
    # Rule 1 before rule 2: budget 10 is not a multiple of 4 either.
    assert refused(run("openvino", [("budget", 10), ("sinks", 5), ("recent_window", 5), ("block", 4)])) == (
        "INVALID_PARAMETER", -1, "rule sinks recent_window budget")


@pytest.mark.parametrize("params, subject", [
    ([("budget", 100), ("sinks", 32), ("recent_window", 32), ("block", 32)], "rule block budget"),
    ([("budget", 128), ("sinks", 16), ("recent_window", 32), ("block", 32)], "rule block sinks"),
    ([("budget", 128), ("sinks", 32), ("recent_window", 48), ("block", 32)], "rule block recent_window"),
    # Budget first, whatever else is off.
    ([("budget", 130), ("sinks", 1), ("recent_window", 1), ("block", 32)], "rule block budget"),
    # recent_window before sinks, blocks.md#rules' order (README, Readings).
    ([("budget", 128), ("sinks", 1), ("recent_window", 1), ("block", 32)], "rule block recent_window"),
])
def test_rule_multiples(params, subject):
    assert refused(run("openvino", params)) == ("INVALID_PARAMETER", -1, subject)


def test_rule_multiples_default_block():
    # The defaults' block is 32: budget 1000 is refused with nothing else given.
    assert refused(run("openvino", [("budget", 1000)])) == ("INVALID_PARAMETER", -1, "rule block budget")


# -- Registering ------------------------------------------------------------------

def test_seen_counts_before_anything_is_tracked():
    # Step 1 of a registration runs even when n <= sinks (step 2 stops).
    policy = make_policy("openvino", example(sinks=4, recent_window=0, budget=8, obs_window=3))
    policy.step(0, 2, None, queries=[[0.5, 0.5]])
    assert policy.seen == 1 and len(policy.acc) == 0
    policy.step(2, 1, [0.25, 0.25])
    assert policy.seen == 2 and len(policy.acc) == 0
    policy.step(3, 1, [0.25, 0.25, 0.25])
    assert policy.seen == 3 and len(policy.acc) == 0
    policy.step(4, 1, [0.25] * 4)
    assert policy.seen == 3  # saturates at obs_window
    # The first registration (n 5 > 4): k 1 (a decode step), count min(1, 1).
    assert policy.acc.tolist() == [0.0] and policy.count.tolist() == [1]


def test_incomplete_window_counts():
    # obs_window 3, a prompt of 4 with one query row: seen 1, counts
    # min(k 1, m - j) = 1, 1, 1. Step 1 (seen 2 < 3): every count is
    # min(2, m - j), m 4: 2, 2, 2, 1. Step 2 (seen 3, complete): count + d
    # (d 1), the new slot 1.
    policy = make_policy("openvino", example(budget=8, obs_window=3))
    policy.step(0, 4, None, queries=[[0.25, 0.25, 0.25, 0.25]])
    assert policy.seen == 1 and policy.count.tolist() == [1, 1, 1]
    policy.step(4, 1, [0.0] * 4)
    assert policy.seen == 2 and policy.count.tolist() == [2, 2, 2, 1]
    policy.step(5, 1, [0.0] * 5)
    assert policy.seen == 3 and policy.count.tolist() == [3, 3, 3, 2, 1]
    policy.step(6, 1, [0.0] * 6)
    assert policy.count.tolist() == [4, 4, 4, 3, 2, 1]


def test_prompt_counts():
    # "After a prompt of P positions registered with its last W queries'
    # rows (P >= W), the token at position p >= S has count = min(W, P - p)";
    # with W 0 and every query's row, P - p. Each decode step adds 1, and the
    # step's own token starts at 1.
    p_len, w = 10, 4
    rows = [[0.0625] * (q + 1) for q in range(p_len - w, p_len)]
    policy = make_policy("openvino", example(budget=16, obs_window=w))
    policy.step(0, p_len, None, queries=rows)
    assert policy.count.tolist() == [min(w, p_len - p) for p in range(1, p_len)]
    policy.step(p_len, 1, [0.0] * p_len)
    assert policy.count.tolist() == [min(w, p_len - p) + 1 for p in range(1, p_len)] + [1]
    every = [[0.0625] * (q + 1) for q in range(p_len)]
    policy = make_policy("openvino", example(budget=16, obs_window=0))
    policy.step(0, p_len, None, queries=every)
    assert policy.count.tolist() == [p_len - p for p in range(1, p_len)]


def test_later_chunk_joins_at_zero():
    # A later registration: the newest d slots (a null-attention step's and
    # this step's) join at +0.0 and get d, d - 1, ..., 1; the others + d.
    policy = make_policy("openvino", example(budget=16, max_pool=1))
    policy.step(0, 3, [])                          # first registration: x all +0.0
    assert policy.acc.tolist() == [0.0, 0.0] and policy.count.tolist() == [2, 1]
    policy.step(3, 2, None)                        # null: nothing registered
    assert policy.count.tolist() == [2, 1]
    policy.step(5, 1, [0.5, 0.25, 0.125, 0.0625, 0.03125])
    assert policy.acc.tolist() == [0.25, 0.125, 0.0625, 0.03125, 0.0]
    assert policy.count.tolist() == [5, 4, 3, 2, 1]


HEAD_ROWS = [[[0.5, 0.25], [0.125, 0.125, 0.75]], [[0.25, 0.75], [0.25, 0.5, 0.25]]]


def test_prefill_sums_rows_in_query_order_then_heads():
    # Two heads: t_h[i] over each head's covering rows, then x the heads'.
    # Head 0 rows (queries 1, 2): (0.5, 0.25), (0.125, 0.125, 0.75); head 1:
    # (0.25, 0.75), (0.25, 0.5, 0.25). Slot 1: (0.25 + 0.125) + (0.75 + 0.5)
    # = 1.625; slot 2: 0.75 + 0.25 = 1.0 (sinks 1, max_pool 1); k 2.
    policy = make_policy("openvino", example(norm_sum=0, obs_window=3))
    policy.step_heads(0, 3, None, (2, [[np.array(r) for r in rows] for rows in HEAD_ROWS]))
    assert policy.acc.tolist() == [1.625, 1.0]
    assert policy.count.tolist() == [2, 1] and policy.seen == 2
    # Through a scenario (the harness gathers every head's rows): a decode
    # step then evicts slot 2 (1.0 against 1.625; 3 the recent window).
    steps = [(3, None, [], [r for rows in HEAD_ROWS for r in rows]), (1, None, [[0.0] * 3] * 2)]
    log = run_scenario("openvino", example(norm_sum=0), 0, steps, None, 2, None)
    assert log.rejection is None
    assert victims(log) == [[], [2]]
    assert cuts(log)[1] == [(2, 1.0), (1, 1.625)]


def test_heads_summed_decide_as_one_row():
    # One set whatever the heads: two heads whose rows sum to the example's
    # rows give the example's log (the sums are exact here), one record a step.
    split = [(1, None, [[], []]), (1, None, [[0.5], [0.5]]), (1, None, [[0.25, 0.25], [0.25, 0.25]]),
             (1, None, [[0.125, 0.0625, 0.25], [0.125, 0.0625, 0.25]])]
    for norm_sum, gone in ((1, [1]), (0, [2])):
        log = run_scenario("openvino", example(norm_sum=norm_sum), 0, split, None, 2, 2)
        assert log.rejection is None
        assert victims(log) == [[], [], [], gone]
        assert all(not s.sets for s in log.steps)
        assert cuts(log) == cuts(run("openvino", example(norm_sum=norm_sum), ROWS))


def test_heads_order_of_the_sum():
    # x[i] = ((+0.0 + row_0[i]) + row_1[i]) + row_2[i], head 0 first: 1.0,
    # then 2^-53 twice, each lost (ties to even); the other way round the
    # two 2^-53 make 2^-52 and 1 + 2^-52. The cut shows the sum.
    tiny = 2.0 ** -53
    steps = [(2, None, [[], [], []]), (1, None, [[0.0, 1.0], [0.0, tiny], [0.0, tiny]]),
             (1, None, [[0.0] * 3] * 3)]
    log = run_scenario("openvino", example(norm_sum=0), 0, steps, None, 3, 1)
    assert victims(log) == [[], [], [2]]
    assert cuts(log)[2] == [(2, 0.0), (1, 1.0)]


def test_totals_in_place_of_rows():
    # Column totals over the window's two queries: T = (0.5, 0.625, 0.375,
    # 0.5), the window-counts example's x, k = total_rows 2; the query rows
    # beside them (one decoy row, m 1) are not read: the example's log.
    totals = [[0.5, 0.625, 0.375, 0.5]]
    decoy = [[1.0, 0.0, 0.0, 0.0]]
    steps = [prefill(4, decoy, totals, 2), WINDOW_STEPS[1]]
    params = example(budget=4, obs_window=2, norm_sum=1)
    log = run("openvino", params, steps)
    assert log.rejection is None
    assert victims(log) == [[], [2]]
    assert cuts(log) == cuts(run("openvino", params, WINDOW_STEPS))
    # The decoy alone (k 1: counts 1, 1, 1, then 2, 2, 2, 1; acc 0.25,
    # 0.375, 0.25) decides otherwise: 1 and 3 tie at 0.125, 1 goes.
    assert victims(run("openvino", params, [prefill(4, decoy), WINDOW_STEPS[1]])) != [[], [2]]


def test_prefill_never_evicts():
    # A prompt far past budget + block keeps every position; a later prefill
    # step too; the first decode step cuts it down at once.
    params = example(budget=4, norm_sum=1)
    steps = [prefill(8, [[0.125] * 8]), prefill(3, [[0.0625] * 11]), (1, [0.0] * 11)]
    log = run("openvino", params, steps)
    assert kept(log) == [8, 11, 4]
    assert victims(log)[:2] == [[], []]
    assert len(victims(log)[2]) == 8


def test_null_attention_never_evicts():
    log = run("openvino", example(), [(1, [])] + [(1, None)] * 5 + [(1, [0.0] * 6)])
    assert kept(log) == [1, 2, 3, 4, 5, 6, 3]
    assert victims(log)[-1] == [1, 2, 3, 4]


# -- Evicting blocks --------------------------------------------------------------

def test_blocks_and_areas():
    # sinks 2, recent_window 2, budget 8, block 2: evicts once n >= 10, then
    # floor(n / 2) - 4 blocks among blocks 1 .. floor(n / 2) - 2; the kept
    # count after is 8 + n mod 2. Rows zero except one heavy slot.
    params = [("sinks", 2), ("recent_window", 2), ("budget", 8), ("block", 2), ("norm_sum", 0),
              ("max_pool", 1), ("obs_window", 0)]
    steps = [(9, None), (1, [0.0, 0.0, 1.0] + [0.0] * 6)]
    log = run("openvino", params, steps)
    # Candidates: the blocks of 2, 4, 6 (0 the start area, 8 the recent
    # window). The block of 2 scores 1.0; 4 and 6 tie at 0: 4 goes.
    assert victims(log) == [[], [4, 5]]
    assert kept(log) == [9, 8]
    assert cuts(log)[1] == [(4, 0.0), (6, 0.0), (2, 1.0)]
    # Another position: the open block holds 10, and n 9 is below 10. (A
    # scenario's row is the full-cache row: one weight per position before.)
    log = run("openvino", params, steps + [(1, [0.0] * 10)])
    assert victims(log)[2] == [] and kept(log)[2] == 9


def test_chunk_past_budget_at_a_decode_step():
    # A decode chunk of 7 on 3 kept: n 10, block 2, budget 4, sinks 0,
    # recent_window 2: k = 5 - 2 = 3 blocks among blocks 0 .. 3 (4 the recent
    # window): the chunk's own slots score +0.0, the kept ones 0.5, 0.25, 0.75
    # (slot 0 .. 2, pooled over nothing).
    params = [("sinks", 0), ("recent_window", 2), ("budget", 4), ("block", 2), ("norm_sum", 0),
              ("max_pool", 1), ("obs_window", 0)]
    log = run("openvino", params, [(3, None), (7, [0.5, 0.25, 0.75])])
    assert kept(log) == [3, 4]
    # Blocks: (0, 1) 0.75, (2, 3) 0.75, (4, 5) 0, (6, 7) 0: 4, 6, then 0 by position.
    assert victims(log)[1] == [0, 1, 4, 5, 6, 7]
    assert cuts(log)[1] == [(4, 0.0), (6, 0.0), (0, 0.75), (2, 0.75)]


def test_block_names_after_eviction():
    # After a block leaves, blocks are kept slots, named by first position.
    params = [("sinks", 2), ("recent_window", 2), ("budget", 6), ("block", 2), ("norm_sum", 0),
              ("max_pool", 1), ("obs_window", 0)]
    steps = [(7, None), (1, [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0])]
    log = run("openvino", params, steps)
    assert victims(log)[1] == [2, 3]  # blocks of 2 (0.0) and 4 (2.0)
    log = run("openvino", params, steps + [(1, [0.0] * 8), (1, [0.0] * 9)])
    # Kept 0, 1, 4, 5, 6, 7, 8, 9: blocks of 4 (2.0) and 6 (0.0) are candidates.
    assert victims(log)[3] == [6, 7]
    assert cuts(log)[3] == [(6, 0.0), (4, 2.0)]


# -- The forward pool --------------------------------------------------------------

def test_forward_max_pool_against_definition():
    rnd = random.Random(7)
    for size in range(0, 40):
        xs = np.array([rnd.choice([0.0, 0.25, 0.5, 1.0, rnd.random()]) for _ in range(size)])
        for w in (1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 65536):
            want = [max(xs[i:min(i + w, size)]) for i in range(size)]
            assert forward_max_pool(xs, w).tolist() == want


def test_pool_stays_out_of_the_start_area_and_cut_at_the_last_slot():
    # sinks 2, max_pool 3: slot 2's u reaches slots 3 and 4, never 0 or 1.
    policy = make_policy("openvino", example(sinks=2, recent_window=0, budget=8, max_pool=3, norm_sum=0))
    policy.step(0, 4, [])
    policy.step(4, 1, [1.0, 1.0, 0.25, 0.5])
    assert policy.acc.tolist() == [0.5, 0.5, 0.0]


# -- Direct calls, traces ---------------------------------------------------------

def test_direct_call_with_totals():
    # Policy.step with column totals (gathered): read in place of the rows,
    # k = total_rows; the window-counts example's state.
    policy = make_policy("openvino", example(budget=4, obs_window=2, norm_sum=1))
    policy.step(0, 4, None, queries=[[1.0, 0.0, 0.0, 0.0]], totals=[0.5, 0.625, 0.375, 0.5], total_rows=2)
    assert policy.seen == 2
    assert policy.acc.tolist() == [0.625, 0.375, 0.5]
    assert policy.count.tolist() == [2, 2, 1]


TRACE_PARAMS = [("sinks", 4), ("recent_window", 4), ("budget", 16), ("block", 4), ("norm_sum", 1),
                ("max_pool", 3), ("obs_window", 0)]


def test_trace_is_its_full_cache_rows():
    # A generated trace of one head runs as the explicit steps of its rows.
    tc = kpb.TraceConfig(steps=60)
    gen = trace_mod.TraceGenerator(trace_mod.params_from_proto(tc))
    steps = []
    for t in range(60):
        gen.begin_step(t)
        steps.append((1, gen.weights_array(list(range(t))).tolist()))
    traced = run_scenario("openvino", TRACE_PARAMS, 0, None, tc)
    explicit = run("openvino", TRACE_PARAMS, steps)
    assert traced.rejection is None and any(s.victims for s in traced.steps)
    assert [(s.victims, s.kept_count, s.cut) for s in traced.steps] == [
        (s.victims, s.kept_count, s.cut) for s in explicit.steps]


def test_trace_of_several_heads_is_one_set():
    # A trace of 4 query heads (2 KV heads): one kept set reading every
    # head, as the explicit steps of every head's full-cache rows.
    tc = kpb.TraceConfig(steps=60)
    heads = trace_mod.HeadsTrace(trace_mod.params_from_proto(tc), 4)
    steps = []
    for t in range(60):
        heads.begin_step(t)
        rows = heads.weights_matrix(np.tile(np.arange(t, dtype=np.int64), (4, 1)))
        steps.append((1, None, rows.tolist()))
    traced = run_scenario("openvino", TRACE_PARAMS, 0, None, tc, 4, 2)
    explicit = run_scenario("openvino", TRACE_PARAMS, 0, steps, None, 4, 2)
    assert traced.rejection is None and any(s.victims for s in traced.steps)
    assert all(not s.sets for s in traced.steps)
    assert [(s.victims, s.kept_count, s.cut) for s in traced.steps] == [
        (s.victims, s.kept_count, s.cut) for s in explicit.steps]
