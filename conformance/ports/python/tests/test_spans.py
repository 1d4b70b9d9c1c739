"""spec/spans.md (the feature `spans`, spec 0.8.0, and `contextshift`,
spec 0.9.0): held sets, spans, position ids, eviction before admission,
the context shift, the parameters and their refusals.

Hand-worked from spans.md's worked examples: the span-rules example
(#span-rules), the `evict_at` table for streamingllm budget 6, sinks 2,
chunks 4, 3, 1 (#when-room-is-made), the position-ids paragraph
(#position-ids) and the context shift's decode table and chunk example
(#context-shift).
"""

import pytest

from helpers import run, victims
from kvspec_port import FEATURES, SPEC_VERSION
from kvspec_port.harness import configure, run_scenario
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.spans import held_runs
from kvspec_port.testee import hello_reply, to_proto_log


def chunks(*sizes):
    return [(c, None) for c in sizes]


def spans_of(log, step):
    """The spans of a step as sets of positions, one per query."""
    out = []
    for ranges in log.steps[step].spans:
        assert len(ranges) % 2 == 0
        s = set()
        for a, b in zip(ranges[::2], ranges[1::2]):
            assert a <= b
            s.update(range(a, b + 1))
        out.append(s)
    return out


def held_of(log, step):
    """The held set of a step, from its runs."""
    return [p for first, last, _ in log.steps[step].held for p in range(first, last + 1)]


def ids_of(log, step):
    """{position: id} of a step's held set (spec/spans.md#the-log: a run's
    other positions count up from its first's id)."""
    return {first + i: pid + i for first, last, pid in log.steps[step].held for i in range(last - first + 1)}


def span(*parts):
    s = set()
    for p in parts:
        s.update(p if isinstance(p, range) else [p])
    return s


# -- #span-rules --------------------------------------------------------------

def test_span_rules_worked_example():
    # window budget 3, span_window 4, steps admitting 2, then 5, then 1.
    log = run("window", [("budget", 3), ("spans", 1), ("span_window", 4)], chunks(2, 5, 1))
    assert log.rejection is None
    assert held_of(log, 0) == [0, 1]
    assert spans_of(log, 0) == [{0}, {0, 1}]
    # Step 1 holds 0..6 (evicting after admission), then evicts 0..3.
    assert held_of(log, 1) == list(range(7))
    assert spans_of(log, 1) == [span(range(0, 3)), span(range(0, 4)), span(range(1, 5)),
                                span(range(2, 6)), span(range(3, 7))]
    assert log.steps[1].victims == [0, 1, 2, 3]
    assert log.steps[1].kept_count == 3
    # Step 2 holds 4..7.
    assert held_of(log, 2) == [4, 5, 6, 7]
    assert spans_of(log, 2) == [span(range(4, 8))]
    # The wire form: maximal runs, first, last inclusive.
    assert log.steps[1].spans == [[0, 2], [0, 3], [1, 4], [2, 5], [3, 6]]
    assert log.steps[1].held == [(0, 6, 0)]


def test_full_causal_and_chunked_rules():
    log = run("full", [("spans", 1)], chunks(3, 2))
    assert log.steps[1].spans == [[0, 3], [0, 4]]
    # span_chunk 4: a query sees its own chunk of 4 positions only.
    log = run("full", [("spans", 1), ("span_chunk", 4)], chunks(10))
    assert log.steps[0].spans == [
        [0, 0], [0, 1], [0, 2], [0, 3], [4, 4], [4, 5], [4, 6], [4, 7], [8, 8], [8, 9]]


def test_sinks_are_in_every_span():
    # streamingllm sinks 2, budget 2 + 3, span_window 3: the sinks and the
    # latest 3 positions up to the query, in a chunk and in a decode step.
    params = [("budget", 5), ("sinks", 2), ("spans", 1), ("span_window", 3)]
    log = run("streamingllm", params, chunks(8, 1))
    assert spans_of(log, 0) == [{0}, {0, 1}, span(range(0, 3)), span(range(0, 4)), span(range(0, 5)),
                                span(0, 1, range(3, 6)), span(0, 1, range(4, 7)), span(0, 1, range(5, 8))]
    assert log.steps[0].spans[5] == [0, 1, 3, 5]
    assert log.steps[0].victims == [2, 3, 4]
    # Step 1 holds 0, 1, 5..8.
    assert log.steps[1].held == [(0, 1, 0), (5, 8, 5)]
    assert log.steps[1].spans == [[0, 1, 6, 8]]


def test_sinks_without_window_rule_and_zero_sinks():
    # No span rule: every held position up to the query; `window` and sinks
    # 0 have no sinks to add.
    log = run("streamingllm", [("budget", 4), ("sinks", 2), ("spans", 1)], chunks(5, 1))
    assert log.steps[1].held == [(0, 1, 0), (3, 5, 3)]
    assert log.steps[1].spans == [[0, 1, 3, 5]]
    log = run("streamingllm", [("budget", 4), ("sinks", 0), ("spans", 1), ("span_window", 2)], chunks(5))
    assert log.steps[0].spans[4] == [3, 4]


def test_window_larger_than_the_query():
    # p >= q - W + 1 over the integers: for q < W - 1 every visible position.
    log = run("full", [("spans", 1), ("span_window", 2 ** 32 - 1)], chunks(3))
    assert log.steps[0].spans == [[0, 0], [0, 1], [0, 2]]


def test_spans_zero_leaves_the_log_unchanged():
    for name, params in [("full", []), ("window", [("budget", 3)]), ("streamingllm", [("budget", 5), ("sinks", 2)])]:
        steps = chunks(4, 1, 3, 1)
        plain = to_proto_log(run(name, params, steps), True).SerializeToString()
        for extra in ([("spans", 0)], [("span_window", 3), ("position_ids", 1)], [("span_chunk", 2)]):
            if name == "full":  # full takes no position_ids (spec/spans.md#parameters)
                extra = [p for p in extra if p[0] != "position_ids"]
            log = run(name, params + extra, steps)
            assert all(s.spans is None and s.held is None for s in log.steps)
            assert to_proto_log(log, True).SerializeToString() == plain


# -- #when-room-is-made ---------------------------------------------------------

@pytest.mark.parametrize("evict_at, want_victims, want_held", [
    (0, [[], [2], [3]], [[0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6], [0, 1, 3, 4, 5, 6, 7]]),
    (1, [[], [2], [3]], [[0, 1, 2, 3], [0, 1, 3, 4, 5, 6], [0, 1, 4, 5, 6, 7]]),
    (2, [[], [], [2, 3]], [[0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6], [0, 1, 4, 5, 6, 7]]),
])
def test_evict_at_table(evict_at, want_victims, want_held):
    # streamingllm budget 6, sinks 2, chunks of 4, 3, 1.
    log = run("streamingllm", [("budget", 6), ("sinks", 2), ("spans", 1), ("evict_at", evict_at)],
              chunks(4, 3, 1))
    assert log.rejection is None
    assert victims(log) == want_victims
    assert [held_of(log, i) for i in range(3)] == want_held
    # kept after the step; the query's cache position is the count kept when
    # the step started, before any eviction.
    assert [s.kept_count for s in log.steps] == [4, {0: 6, 1: 6, 2: 7}[evict_at], 6]
    assert [s.query_cache_position for s in log.steps] == [0, 4, log.steps[1].kept_count]


def test_evict_at_victims_without_spans():
    # Only evict_at changes what is kept; with spans 0 the log shows it all.
    log = run("streamingllm", [("budget", 6), ("sinks", 2), ("evict_at", 2)], chunks(4, 3, 1))
    assert victims(log) == [[], [], [2, 3]]
    assert log.steps[2].spans is None


def test_evict_at_one_long_chunk_stays_whole():
    # A chunk longer than budget - sinks takes every non-sink and stays
    # whole (kept sinks + c, above the budget) until a later step makes room.
    log = run("streamingllm", [("budget", 4), ("sinks", 2), ("spans", 1), ("evict_at", 1)], chunks(3, 5, 1))
    assert victims(log) == [[], [2], [3, 4, 5, 6]]
    assert [s.kept_count for s in log.steps] == [3, 7, 4]
    assert log.steps[1].held == [(0, 1, 0), (3, 7, 3)]
    assert log.steps[2].held == [(0, 1, 0), (7, 8, 7)]


def test_evict_at_two_window():
    # Nothing is evicted at the first step (a first chunk longer than the
    # budget is kept whole); a chunk of c > 1 leaves budget - 1 + c kept.
    log = run("window", [("budget", 3), ("spans", 1), ("evict_at", 2)], chunks(5, 2, 1, 1))
    assert victims(log) == [[], [0, 1, 2], [3, 4], [5]]
    assert [s.kept_count for s in log.steps] == [5, 4, 3, 3]
    assert log.steps[1].held == [(3, 6, 3)]
    # evict_at 1 on the same steps: room for the step, every kept one for a
    # chunk longer than the budget.
    log = run("window", [("budget", 3), ("evict_at", 1)], chunks(5, 2, 4, 1))
    assert victims(log) == [[], [0, 1, 2, 3], [4, 5, 6], [7, 8]]
    assert [s.kept_count for s in log.steps] == [5, 3, 4, 3]


def test_rules_agree_on_decode_steps():
    # c = 1: room for one is budget - 1, so evict_at 1 and 2 agree.
    logs = [run("window", [("budget", 3), ("spans", 1), ("evict_at", e)], chunks(*[1] * 7)) for e in (1, 2)]
    assert victims(logs[0]) == victims(logs[1]) == [[], [], [], [0], [1], [2], [3]]
    assert [s.held for s in logs[0].steps] == [s.held for s in logs[1].steps]


# -- #context-shift ----------------------------------------------------------------

SHIFT = [("budget", 7), ("sinks", 2), ("spans", 1), ("context_shift", 1), ("position_ids", 1)]


def test_context_shift_decode_table():
    # The preset's numbers (llama.cpp n_ctx 8, n_keep 2): budget 7, sinks 2,
    # default discard, 21 decode steps (positions 0 .. 20).
    log = run("streamingllm", SHIFT, chunks(*[1] * 21))
    assert log.rejection is None
    # Steps 0 .. 6 fit; from step 7 on a shift every second step, each
    # discarding the two oldest non-sinks (n_left 5, d 2).
    want = [[] for _ in range(7)]
    for p in range(7, 21):
        want.append([p - 5, p - 4] if p % 2 == 1 else [])
    assert victims(log) == want
    assert victims(log)[7::2] == [[2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    assert [s.kept_count for s in log.steps] == [1, 2, 3, 4, 5, 6, 7] + [6, 7] * 7
    # query_cache_position: the count kept when the step started.
    assert [s.query_cache_position for s in log.steps] == [0, 1, 2, 3, 4, 5, 6] + [7, 6] * 7
    # 0@0 .. p@p while it fits.
    for p in range(7):
        assert log.steps[p].held == [(0, p, 0)]
    # 7: 0@0 1@1 4@2 5@3 6@4 7@5; 8: 0@0 1@1 4@2 .. 8@6; 9: 0@0 1@1 6@2 .. 9@5.
    assert log.steps[7].held == [(0, 1, 0), (4, 7, 2)]
    assert log.steps[8].held == [(0, 1, 0), (4, 8, 2)]
    assert log.steps[9].held == [(0, 1, 0), (6, 9, 2)]
    # After position 20: 0@0 1@1 16@2 17@3 18@4 19@5 20@6.
    assert log.steps[20].held == [(0, 1, 0), (16, 20, 2)]
    assert ids_of(log, 20) == {0: 0, 1: 1, 16: 2, 17: 3, 18: 4, 19: 5, 20: 6}
    # An id is the position minus every position discarded before it.
    assert ids_of(log, 20)[16] == 16 - len(range(2, 16))
    # No span rule: a query sees every held position up to itself.
    assert log.steps[20].spans == [[0, 1, 16, 20]]
    assert log.steps[7].spans == [[0, 1, 4, 7]]


def test_context_shift_chunks():
    # budget 7, sinks 2, steps admitting 5, 3, 1.
    log = run("streamingllm", SHIFT, chunks(5, 3, 1))
    assert log.rejection is None
    # Step 0 fits; step 1: n_left 3, d 1; step 2: n_left 5, d 2.
    assert victims(log) == [[], [2], [3, 4]]
    assert [held_of(log, i) for i in range(3)] == [[0, 1, 2, 3, 4], [0, 1, 3, 4, 5, 6, 7], [0, 1, 5, 6, 7, 8]]
    assert [s.kept_count for s in log.steps] == [5, 7, 6]
    assert [s.query_cache_position for s in log.steps] == [0, 5, 7]
    # position_ids 1: the index in H (the step's first query has the number
    # kept after the shift).
    assert log.steps[1].held == [(0, 1, 0), (3, 7, 2)]
    assert log.steps[2].held == [(0, 1, 0), (5, 8, 2)]


def test_context_shift_discard_is_clamped():
    # discard 4: step 1's d is clamped to n_left - 1 = 2; step 2 then fits.
    log = run("streamingllm", SHIFT + [("discard", 4)], chunks(5, 3, 1))
    assert log.rejection is None
    assert victims(log) == [[], [2, 3], []]
    assert [held_of(log, i) for i in range(3)] == [[0, 1, 2, 3, 4], [0, 1, 4, 5, 6, 7], [0, 1, 4, 5, 6, 7, 8]]
    assert [s.kept_count for s in log.steps] == [5, 6, 7]
    # The largest discard is clamped the same way.
    assert victims(run("streamingllm", SHIFT + [("discard", 2 ** 32 - 1)], chunks(5, 3, 1))) == [[], [2, 3], []]
    # discard 1 on the decode table: one non-sink per step once full.
    log = run("streamingllm", SHIFT + [("discard", 1)], chunks(*[1] * 10))
    assert victims(log) == [[]] * 7 + [[2], [3], [4]]
    assert [s.kept_count for s in log.steps][6:] == [7, 7, 7, 7]


def test_context_shift_window():
    # window: every kept position may go. Budget 4, 7 decode steps.
    log = run("window", [("budget", 4), ("spans", 1), ("context_shift", 1), ("position_ids", 1)],
              chunks(*[1] * 7))
    assert log.rejection is None
    # Step 4: n_left 4, d 2; step 5 fits; step 6: n_left 4, d 2.
    assert victims(log) == [[], [], [], [], [0, 1], [], [2, 3]]
    assert [s.kept_count for s in log.steps] == [1, 2, 3, 4, 3, 4, 3]
    assert log.steps[4].held == [(2, 4, 0)]
    assert log.steps[6].held == [(4, 6, 0)]
    # discard 3 (n_left 4, so not clamped) and discard 9 (clamped to 3).
    for discard in (3, 9):
        log = run("window", [("budget", 4), ("context_shift", 1), ("discard", discard)], chunks(*[1] * 6))
        assert victims(log) == [[], [], [], [], [0, 1, 2], []]


def test_context_shift_long_chunk_stays_whole():
    # budget 7, sinks 2, chunks 3, 6, 1. Step 1: 3 + 6 > 7, n_left 1, d
    # min(0, 0) = 0: nothing goes and the chunk is admitted whole (kept 9,
    # above the budget); step 2: n_left 7, d 3.
    log = run("streamingllm", SHIFT, chunks(3, 6, 1))
    assert log.rejection is None
    assert victims(log) == [[], [], [2, 3, 4]]
    assert [s.kept_count for s in log.steps] == [3, 9, 7]
    assert held_of(log, 1) == list(range(9))
    assert held_of(log, 2) == [0, 1, 5, 6, 7, 8, 9]
    # At most one shift per step: a chunk longer than the room one shift
    # makes stays whole (window budget 4: kept 4, n_left 4, d 2, chunk 5;
    # then kept 7, n_left 7, d 3).
    log = run("window", [("budget", 4), ("context_shift", 1)], chunks(4, 5, 1))
    assert victims(log) == [[], [0, 1], [2, 3, 4]]
    assert [s.kept_count for s in log.steps] == [4, 7, 5]


def test_context_shift_without_spans():
    # context_shift changes what is kept; with spans 0 the log shows victims
    # only, and the same victims.
    params = [("budget", 7), ("sinks", 2), ("context_shift", 1)]
    plain = run("streamingllm", params, chunks(5, 3, 1))
    assert victims(plain) == [[], [2], [3, 4]]
    assert all(s.spans is None and s.held is None for s in plain.steps)
    # evict_at 0 and context_shift 0 differ from it (evicting after admission).
    assert victims(run("streamingllm", params[:2], chunks(5, 3, 1))) == [[], [2], [3]]


def test_context_shift_trace():
    trace = kpb.TraceConfig(steps=7)
    log = run_scenario("window", [("budget", 4), ("context_shift", 1)], 0, [], trace)
    assert log.rejection is None
    assert victims(log) == [[], [], [], [], [0, 1], [], [2, 3]]


# -- #position-ids ----------------------------------------------------------------

@pytest.mark.parametrize("evict_at", [0, 1, 2])
def test_position_ids(evict_at):
    params = [("budget", 6), ("sinks", 2), ("spans", 1), ("evict_at", evict_at)]
    absolute = run("streamingllm", params, chunks(4, 3, 1))
    relative = run("streamingllm", params + [("position_ids", 1)], chunks(4, 3, 1))
    for i in range(3):
        held = held_of(absolute, i)
        assert ids_of(absolute, i) == {p: p for p in held}
        # cache-relative: the index in H, ascending.
        assert ids_of(relative, i) == {p: j for j, p in enumerate(held)}
        assert [s.spans for s in relative.steps] == [s.spans for s in absolute.steps]
        # The step's first query: query_cache_position with evict_at 0, else
        # the number kept after the eviction before admission.
        first_query = held[-[4, 3, 1][i]]
        kept_before = relative.steps[i].query_cache_position - len(relative.steps[i].victims)
        want = relative.steps[i].query_cache_position if evict_at == 0 else kept_before
        assert ids_of(relative, i)[first_query] == want
    # evict_at 1, step 1: H 0, 1, 3..6 as ids 0, 1, 2..5.
    if evict_at == 1:
        assert relative.steps[1].held == [(0, 1, 0), (3, 6, 2)]


def test_held_runs():
    assert held_runs([]) == []
    assert held_runs([5]) == [(5, 5, 0)]
    assert held_runs([0, 1, 4, 5, 6, 7, 9]) == [(0, 1, 0), (4, 7, 2), (9, 9, 6)]
    assert held_runs(list(range(3, 1000))) == [(3, 999, 0)]


# -- scenarios: trace, heads, query rows ------------------------------------------

def test_trace_steps_carry_spans():
    trace = kpb.TraceConfig(steps=8)
    log = run_scenario("streamingllm", [("budget", 4), ("sinks", 1), ("spans", 1), ("span_window", 2)],
                       0, [], trace)
    assert log.rejection is None
    assert log.steps[7].held == [(0, 0, 0), (4, 7, 4)]
    assert log.steps[7].spans == [[0, 0, 6, 7]]
    assert victims(log)[4:] == [[1], [2], [3], [4]]


def test_trace_of_several_heads_carries_spans():
    trace = kpb.TraceConfig(steps=6)
    log = run_scenario("window", [("budget", 3), ("spans", 1), ("evict_at", 1), ("position_ids", 1)],
                       0, [], trace, 2, 1)
    assert log.rejection is None
    assert victims(log) == [[], [], [], [0], [1], [2]]
    assert log.steps[5].held == [(3, 5, 0)]
    assert log.steps[5].spans == [[3, 5]]


def test_query_rows_are_checked_and_ignored():
    params = [("budget", 4), ("sinks", 1), ("spans", 1), ("span_window", 2), ("evict_at", 1)]
    plain = run_scenario("streamingllm", params, 0, [(3, None), (2, None)])
    # Step 1 admits 3..4 with one query row for position 4 (5 weights).
    rows = run_scenario("streamingllm", params, 0, [(3, None), (2, None, (), ([0.2] * 5,))])
    assert rows.rejection is None
    assert to_proto_log(rows, True) == to_proto_log(plain, True)
    # A query row of the wrong length is refused as always.
    bad = run_scenario("streamingllm", params, 0, [(3, None), (2, None, (), ([0.2] * 4,))])
    assert bad.rejection[:2] == ("ATTENTION_LENGTH", 1)
    assert len(bad.steps) == 1


def test_several_heads_keep_one_set():
    steps = [(2, None, ()), (1, None, ([0.5, 0.5], [0.25, 0.75]))]
    log = run_scenario("window", [("budget", 2), ("spans", 1)], 0, steps, None, 2, 2)
    assert log.rejection is None
    assert not log.steps[1].sets
    assert log.steps[1].held == [(0, 2, 0)]
    assert log.steps[1].spans == [[0, 2]]


# -- the wire ---------------------------------------------------------------------

def test_wire_fields():
    log = run("streamingllm", [("budget", 6), ("sinks", 2), ("spans", 1), ("evict_at", 1),
                               ("position_ids", 1), ("span_window", 3)], chunks(4, 3))
    out = to_proto_log(log, True)
    sr = out.steps[1]
    assert list(sr.victims) == [2]
    assert [list(q.ranges) for q in sr.spans] == [[0, 1, 3, 4], [0, 1, 3, 5], [0, 1, 4, 6]]
    assert [(r.first, r.last, r.id) for r in sr.held] == [(0, 1, 0), (3, 6, 2)]
    assert sr.query_cache_position == 4 and sr.kept_count == 6


def test_hello_declares_spans():
    assert SPEC_VERSION == "0.20.0"
    assert "spans" in FEATURES
    # contextshift (0.9.0) right after spans, then totals (0.10.0),
    # triggers (0.12.0), blocks (0.13.0), tensors (0.16.0), values
    # (0.18.0) and pyramid (0.19.0), in the order of spec/features.md#the-list.
    assert list(hello_reply().hello.features)[-8:] == ["spans", "contextshift", "totals", "triggers", "blocks",
                                                       "tensors", "values", "pyramid"]


# -- #parameters -------------------------------------------------------------------

def test_parameter_order():
    names = {name: [p[0] for p in configure(name, [])[0].PARAMS] for name in ("full", "window", "streamingllm")}
    assert names["full"] == ["spans", "span_window", "span_chunk"]
    # spec/triggers.md#parameters (0.12.0): `slack`, `interval` after them;
    # spec/blocks.md#parameters (0.13.0): `block` last (default 1).
    assert names["window"] == ["budget", "spans", "span_window", "span_chunk", "evict_at", "position_ids",
                               "context_shift", "discard", "slack", "interval", "block"]
    assert names["streamingllm"][4:] == ["spans", "span_window", "span_chunk", "evict_at", "position_ids",
                                         "context_shift", "discard", "slack", "interval", "block"]
    for name in names:
        _, values = configure(name, [])
        assert all(values[p] == 0 for p in names[name] if p not in ("budget", "sinks", "block"))
        assert values.get("block", 1) == 1


def refused(name, params):
    log = run(name, params, chunks(1))
    assert not log.steps
    return log.rejection


@pytest.mark.parametrize("name, params", [
    # ranges
    ("full", [("spans", 2)]),
    ("window", [("spans", -1)]),
    ("window", [("span_window", 2 ** 32)]),
    ("streamingllm", [("span_chunk", -1)]),
    ("window", [("evict_at", 3)]),
    ("streamingllm", [("position_ids", 2)]),
    # full has no budget and no evict_at
    ("full", [("evict_at", 0)]),
    ("full", [("budget", 4), ("spans", 1)]),
    # every other policy refuses them as unknown
    ("h2o", [("spans", 1)]),
    ("tova", [("span_window", 1)]),
    ("snapkv", [("span_chunk", 0)]),
    ("random", [("evict_at", 1)]),
    ("h2o", [("position_ids", 0)]),
    # the context shift's parameters (0.9.0): ranges, full and the others
    ("window", [("context_shift", 2)]),
    ("streamingllm", [("context_shift", -1)]),
    ("window", [("discard", 2 ** 32)]),
    ("streamingllm", [("discard", -1)]),
    ("full", [("context_shift", 0)]),
    ("full", [("discard", 1)]),
    ("h2o", [("context_shift", 1)]),
    ("tova", [("discard", 0)]),
    ("snapkv", [("context_shift", 0)]),
    ("random", [("discard", 2)]),
    # the rules between parameters
    ("full", [("span_window", 1), ("span_chunk", 1)]),
    ("window", [("span_window", 4), ("span_chunk", 8)]),
    ("streamingllm", [("evict_at", 1), ("prefill_only", 1)]),
    ("streamingllm", [("evict_at", 2), ("ratio_ppm", 500000)]),
])
def test_refusals(name, params):
    assert refused(name, params)[:2] == ("INVALID_PARAMETER", -1)


def test_rules_after_the_cards_own():
    # The card's own rule (sinks < budget) first, then span_window/span_chunk,
    # then evict_at's.
    msg = refused("streamingllm", [("budget", 2), ("sinks", 2), ("span_window", 1), ("span_chunk", 1)])[2]
    assert "sinks must be below budget" in msg
    msg = refused("streamingllm", [("span_window", 1), ("span_chunk", 1), ("evict_at", 1), ("ratio_ppm", 1)])[2]
    assert "span_window" in msg and "span_chunk" in msg
    msg = refused("streamingllm", [("evict_at", 1), ("prefill_only", 1), ("ratio_ppm", 1)])[2]
    assert "evict_at" in msg and "prefill_only" in msg


@pytest.mark.parametrize("name, params", [
    ("full", [("span_window", 5), ("span_chunk", 0), ("spans", 1)]),
    ("window", [("budget", 1), ("evict_at", 2), ("span_chunk", 2 ** 32 - 1)]),
    ("streamingllm", [("evict_at", 0), ("prefill_only", 1), ("ratio_ppm", 3)]),
    ("streamingllm", [("evict_at", 1), ("span_window", 1)]),
])
def test_accepted(name, params):
    assert run(name, params, chunks(3, 1)).rejection is None


# -- #parameters: the rules of the context shift ------------------------------------

@pytest.mark.parametrize("name, params, names", [
    # discard above 0 needs context_shift 1
    ("window", [("budget", 4), ("discard", 1)], ("discard", "context_shift")),
    ("streamingllm", [("budget", 8), ("sinks", 2), ("discard", 3), ("context_shift", 0)],
     ("discard", "context_shift")),
    # context_shift 1 needs evict_at 0, prefill_only 0, ratio_ppm 0
    ("window", [("budget", 4), ("context_shift", 1), ("evict_at", 1)], ("context_shift", "evict_at")),
    ("streamingllm", [("budget", 8), ("sinks", 2), ("context_shift", 1), ("evict_at", 2)],
     ("context_shift", "evict_at")),
    ("streamingllm", [("budget", 8), ("sinks", 2), ("context_shift", 1), ("prefill_only", 1)],
     ("context_shift", "prefill_only")),
    ("streamingllm", [("budget", 8), ("sinks", 2), ("context_shift", 1), ("ratio_ppm", 500000)],
     ("context_shift", "ratio_ppm")),
    # streamingllm: budget - sinks >= 2; window: budget >= 2
    ("streamingllm", [("budget", 3), ("sinks", 2), ("context_shift", 1)], ("context_shift", "budget", "sinks")),
    ("streamingllm", [("budget", 1), ("sinks", 0), ("context_shift", 1)], ("context_shift", "budget", "sinks")),
    ("window", [("budget", 1), ("context_shift", 1)], ("context_shift", "budget")),
    ("window", [("budget", 1), ("context_shift", 1), ("discard", 5)], ("context_shift", "budget")),
])
def test_context_shift_refusals(name, params, names):
    category, step, msg = refused(name, params)[:3]
    assert (category, step) == ("INVALID_PARAMETER", -1)
    assert all(n in msg for n in names), msg


def test_context_shift_rules_after_the_others():
    # The card's own rule first (sinks < budget), then span_window/span_chunk
    # and evict_at's rules, then the context shift's.
    msg = refused("streamingllm", [("budget", 2), ("sinks", 2), ("context_shift", 1)])[2]
    assert "sinks must be below budget" in msg
    msg = refused("window", [("budget", 1), ("span_window", 1), ("span_chunk", 1), ("context_shift", 1)])[2]
    assert "span_chunk" in msg and "context_shift" not in msg
    msg = refused("streamingllm", [("evict_at", 1), ("prefill_only", 1), ("context_shift", 1)])[2]
    assert "evict_at above 0 requires prefill_only 0" in msg and "context_shift" not in msg


@pytest.mark.parametrize("name, params", [
    ("streamingllm", [("budget", 4), ("sinks", 2), ("context_shift", 1)]),
    ("streamingllm", [("budget", 2), ("sinks", 0), ("context_shift", 1), ("discard", 2 ** 32 - 1)]),
    ("window", [("budget", 2), ("context_shift", 1), ("span_window", 3), ("position_ids", 1)]),
    ("window", [("budget", 4), ("context_shift", 0), ("discard", 0)]),
])
def test_context_shift_accepted(name, params):
    assert run(name, params, chunks(3, 1)).rejection is None
