"""Subjects of refusals (spec/harness.md#subjects, spec 0.11.0), worked by
hand from the spec's two tables and its paragraph on length refusals: the
check and the names each refusal must carry."""

import math

import pytest

from kvspec_port import SPEC_VERSION
from kvspec_port.errors import Refusal, Subject
from kvspec_port.harness import run_scenario
from kvspec_port.policies.window import WindowPolicy
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request, hello_reply


def run(name, params, steps=(), trace=None, query_heads=None, kv_heads=None):
    return run_scenario(name, list(params), 0, list(steps), trace, query_heads, kv_heads)


def refused(log):
    """(category, step, "check name ...") of a refused run."""
    assert log.rejection is not None
    category, step, _message, subject = log.rejection
    return category, step, " ".join((subject.check,) + subject.names)


def test_version():
    assert SPEC_VERSION == "0.20.0"
    assert hello_reply().hello.spec_version == "0.20.0"


# -- Configuration: one parameter, budget, refused four ways ------------------

@pytest.mark.parametrize(
    "name, params, subject",
    [
        ("nope", [], "unknown name"),  # UNKNOWN_POLICY
        ("full", [("budget", 4)], "unknown budget"),  # full takes no budget
        ("window", [("budget", 4), ("budget", 4)], "repeated budget"),
        ("window", [("budget", 0)], "range budget"),
        ("window", [("budget", 2 ** 32)], "range budget"),
        ("streamingllm", [("budget", 4), ("sinks", 4)], "rule sinks budget"),
        # The checks in order: check 2 (unknown) before check 3 (range).
        ("window", [("budget", 0), ("foo", 1)], "unknown foo"),
    ],
)
def test_unknown_repeated_range_rule(name, params, subject):
    category = "UNKNOWN_POLICY" if name == "nope" else "INVALID_PARAMETER"
    assert refused(run(name, params, [(1, [])])) == (category, -1, subject)


# -- The rules between parameters, in the order of the second table -----------

@pytest.mark.parametrize(
    "name, params, subject",
    [
        ("h2o", [("budget", 8)], "rule recent_window budget"),  # default recent_window 16
        ("random", [("budget", 4), ("recent_window", 4)], "rule recent_window budget"),
        ("snapkv", [("pool_kernel", 4)], "rule pool_kernel"),
        ("window", [("span_window", 2), ("span_chunk", 2)], "rule span_window span_chunk"),
        ("streamingllm", [("evict_at", 1), ("prefill_only", 1)], "rule evict_at prefill_only"),
        ("streamingllm", [("evict_at", 2), ("ratio_ppm", 5)], "rule evict_at ratio_ppm"),
        ("window", [("discard", 3)], "rule discard context_shift"),
        ("window", [("context_shift", 1), ("evict_at", 1)], "rule context_shift evict_at"),
        # The first of evict_at, prefill_only, ratio_ppm not 0 is named.
        ("streamingllm", [("context_shift", 1), ("ratio_ppm", 5)], "rule context_shift ratio_ppm"),
        ("streamingllm", [("context_shift", 1), ("ratio_ppm", 5), ("prefill_only", 1)],
         "rule context_shift prefill_only"),
        ("streamingllm", [("budget", 4), ("sinks", 3), ("context_shift", 1)],
         "rule context_shift budget sinks"),
        ("window", [("budget", 1), ("context_shift", 1)], "rule context_shift budget"),
        ("tova", [("ratio_ppm", 5)], "rule ratio_ppm recent_window"),  # default recent_window 16
        ("h2o", [("recent_window", 0), ("adaptive", 1), ("ratio_ppm", 5)], "rule adaptive ratio_ppm"),
        ("h2o", [("recent_window", 0), ("adaptive", 1), ("ratio_ppm", 5), ("prefill_only", 1)],
         "rule adaptive prefill_only"),
        ("snapkv", [("adaptive", 1), ("window_budget", 1)], "rule adaptive window_budget"),
    ],
)
def test_rules(name, params, subject):
    assert refused(run(name, params, [(1, [])])) == ("INVALID_PARAMETER", -1, subject)


# -- The scenario's shape and a trace's parameters ----------------------------

def test_steps_and_trace():
    log = run("window", [("budget", 4)], [(1, [])], kpb.TraceConfig(steps=3))
    assert refused(log) == ("INVALID_TRACE", -1, "rule steps trace")


@pytest.mark.parametrize(
    "fields, subject",
    [
        ({}, "range trace.steps"),  # a missing steps
        ({"steps": 0}, "range trace.steps"),
        ({"steps": 4, "noise": -0.0}, "range trace.noise"),
        ({"steps": 4, "sink_mass": 1.5}, "range trace.sink_mass"),
        ({"steps": 4, "background_mass": 0.0}, "range trace.background_mass"),
        ({"steps": 4, "epoch_length": 0}, "range trace.epoch_length"),
    ],
)
def test_trace_parameters(fields, subject):
    log = run("window", [("budget", 4)], [], kpb.TraceConfig(**fields))
    assert refused(log) == ("INVALID_TRACE", -1, subject)


@pytest.mark.parametrize(
    "query_heads, kv_heads, subject",
    [
        (0, None, "range query_heads"),
        (1025, None, "range query_heads"),
        (4, 2000, "range kv_heads"),
        (4, 3, "rule kv_heads query_heads"),
    ],
)
def test_head_counts(query_heads, kv_heads, subject):
    log = run("h2o", [], [], None, query_heads, kv_heads)
    assert refused(log) == ("INVALID_HEADS", -1, subject)


# -- Steps --------------------------------------------------------------------

def test_admit():
    assert refused(run("window", [], [(1, []), (0, None)])) == ("POSITION", 1, "range admit")
    # Positions 0 .. 2^32 would run past 2^32 - 1 (refused before any is admitted).
    assert refused(run("window", [], [(2 ** 32 + 1, None)])) == ("POSITION", 0, "rule admit")


@pytest.mark.parametrize(
    "query_heads, step, subject",
    [
        # One query head: its row is `attention`; rows in `heads` are refused.
        (1, (1, None, [[0.5]], []), "length heads"),
        (1, (1, [0.5], [], []), "length attention"),
        (1, (1, [0.5, math.nan], [], []), "value attention"),
        # Several: rows in `heads`, one per query head, each of length a.
        (2, (1, [0.5, 0.5], [], []), "length attention"),
        (2, (1, None, [[0.5, 0.5]], []), "length heads"),
        (2, (1, None, [[0.5, 0.5], [0.5]], []), "length heads"),
        (2, (1, None, [[0.5, 0.5], [0.5, math.nan]], []), "value heads"),
        (2, (1, None, [[0.5, 0.5], [-0.0, 0.5]], []), "value heads"),
        # Query rows: beside no other row, m per head, 1 <= m <= admit.
        (1, (1, [0.5, 0.5], [], [[0.5, 0.5, 0.5]]), "length queries"),
        (1, (1, None, [], [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]), "length queries"),
        (1, (1, None, [], [[0.5, 0.5]]), "length queries"),
        (1, (1, None, [], [[0.5, math.inf, 0.5]]), "value queries"),
    ],
)
def test_rows(query_heads, step, subject):
    # Two positions admitted before the step (a = 2).
    first = (2, None, [], [])
    category = "ATTENTION_" + subject.split()[0].upper()
    log = run("h2o", [("budget", 8), ("recent_window", 0)], [first, step], None, query_heads)
    assert refused(log) == (category, 1, subject)


def totals_step(queries, totals, total_rows, admit=2):
    return (admit, None, [], queries, totals, total_rows)


Q = [[0.5], [0.5, 0.5]]  # query rows of a first step admitting 2: m = 2


@pytest.mark.parametrize(
    "step, subject",
    [
        (totals_step([], [[1.0, 1.0]], 1), "length totals"),  # no query rows beside them
        (totals_step(Q, [[1.0, 1.0], [1.0, 1.0]], 1), "length totals"),  # two lists, one head
        (totals_step(Q, [], 1), "length totals"),  # total_rows without totals
        (totals_step(Q, [[1.0, 1.0]], 0), "length total_rows"),  # R outside 1..admit
        (totals_step(Q, [[1.0, 1.0]], 3), "length total_rows"),
        (totals_step(Q, [[1.0]], 3), "length total_rows"),  # R before each list's length
        (totals_step(Q, [[1.0]], 2), "length totals"),  # a + c = 2 values
        (totals_step(Q, [[1.0, math.nan]], 2), "value totals"),
        (totals_step(Q, [[-1.0, 1.0]], 1), "value totals"),
    ],
)
def test_totals(step, subject):
    category = "ATTENTION_" + subject.split()[0].upper()
    assert refused(run("h2o", [("budget", 8), ("recent_window", 0)], [step])) == (category, 0, subject)


def test_direct_call():
    p = WindowPolicy({"budget": 2}, None)
    p.step(5, 1, None)
    for args, subject in [((6, 0, None), ("range", ("admit",))),
                          ((5, 1, None), ("rule", ("admit",))),  # not above those admitted
                          ((2 ** 32 - 1, 2, None), ("rule", ("admit",))),
                          ((6, 1, []), ("length", ("attention",))),
                          ((6, 1, [math.nan]), ("value", ("attention",)))]:
        with pytest.raises(Refusal) as e:
            p.step(*args)
        assert e.value.subject == Subject(*subject)


def test_testee_sends_the_subject():
    policy = kpb.PolicyConfig(name="h2o", parameters=[kpb.Parameter(name="recent_window", value=8),
                                                      kpb.Parameter(name="budget", value=8)])
    reply = handle_request(cpb.Request(seq=1, case_id="x", policy=policy, scenario=kpb.Scenario()))
    r = reply.response.log.rejection
    assert (r.category, r.step, r.subject.check, list(r.subject.names)) == (
        kpb.INVALID_PARAMETER, -1, "rule", ["recent_window", "budget"])
