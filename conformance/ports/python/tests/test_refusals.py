"""Refusal categories: spec/harness.md#configuration, #refusals, spec/trace.md#parameters."""

import math

import pytest

from helpers import run
from kvspec_port.errors import Refusal
from kvspec_port.harness import run_scenario
from kvspec_port.policies.window import WindowPolicy
from kvspec_port.proto import kvspec_pb2 as kpb


def category(log):
    return log.rejection[:2] if log.rejection else None


@pytest.mark.parametrize(
    "name, params, expected",
    [
        ("nope", [], "UNKNOWN_POLICY"),
        ("Window", [], "UNKNOWN_POLICY"),
        ("full", [("budget", 4)], "INVALID_PARAMETER"),
        ("window", [("budget", 0)], "INVALID_PARAMETER"),
        ("window", [("budget", 2 ** 32)], "INVALID_PARAMETER"),
        ("window", [("budget", 3), ("budget", 3)], "INVALID_PARAMETER"),
        ("window", [("sinks", 3)], "INVALID_PARAMETER"),
        ("streamingllm", [("budget", 4), ("sinks", 4)], "INVALID_PARAMETER"),
        ("streamingllm", [("sinks", -1)], "INVALID_PARAMETER"),
        ("h2o", [("budget", 8)], "INVALID_PARAMETER"),  # default recent_window 16
        ("tova", [("budget", 2), ("recent_window", 2)], "INVALID_PARAMETER"),
        ("snapkv", [("pool_kernel", 4)], "INVALID_PARAMETER"),
        ("snapkv", [("obs_window", 0)], "INVALID_PARAMETER"),
        ("random", [("budget", 4), ("recent_window", 4)], "INVALID_PARAMETER"),
    ],
)
def test_configuration(name, params, expected):
    assert category(run(name, params, [(1, [])])) == (expected, -1)


@pytest.mark.parametrize(
    "steps, expected",
    [
        ([(1, []), (0, None)], ("POSITION", 1)),
        ([(2, []), (1, [0.5])], ("ATTENTION_LENGTH", 1)),
        ([(2, []), (1, [0.5, 0.5, 0.5])], ("ATTENTION_LENGTH", 1)),
        ([(2, []), (1, [0.5, math.nan])], ("ATTENTION_VALUE", 1)),
        ([(2, []), (1, [math.inf, 0.5])], ("ATTENTION_VALUE", 1)),
        ([(2, []), (1, [-math.inf, 0.5])], ("ATTENTION_VALUE", 1)),
        ([(2, []), (1, [-0.25, 0.5])], ("ATTENTION_VALUE", 1)),
        ([(2, []), (1, [-0.0, 0.5])], ("ATTENTION_VALUE", 1)),
        ([(2, []), (1, [5e-45, 0.0])], None),  # subnormal and +0.0 are accepted
    ],
)
def test_step_refusals(steps, expected):
    log = run("window", [("budget", 4)], steps)
    assert category(log) == expected
    if expected:
        assert len(log.steps) == expected[1]


def test_value_checked_at_evicted_position():
    log = run("window", [("budget", 1)], [(3, []), (1, [math.nan, 0.0, 0.0])])
    assert category(log) == ("ATTENTION_VALUE", 1)


def test_positions_up_to_2_32_minus_1():
    p = WindowPolicy({"budget": 2}, None)
    assert p.step(2 ** 32 - 2, 2, None).kept_count == 2  # the last position is 2^32 - 1
    with pytest.raises(Refusal) as e:
        p.step(2 ** 32, 1, None)
    assert e.value.category == "POSITION"


def test_direct_step_refusals_leave_policy_unchanged():
    p = WindowPolicy({"budget": 2}, None)
    p.step(5, 1, None)
    for args, cat in [((6, 0, None), "POSITION"), ((5, 1, None), "POSITION"),
                      ((2 ** 32 - 1, 2, None), "POSITION"), ((6, 1, []), "ATTENTION_LENGTH"),
                      ((6, 1, [-1.0]), "ATTENTION_VALUE")]:
        with pytest.raises(Refusal) as e:
            p.step(*args)
        assert e.value.category == cat
        assert p.kept == [5]
    assert p.step(9, 1, [0.5]).victims == []  # gaps are allowed


def trace(**fields):
    return kpb.TraceConfig(**fields)


@pytest.mark.parametrize(
    "fields",
    [
        {},  # steps is required
        {"steps": 0},
        {"steps": 4, "background_mass": 0.0},
        {"steps": 4, "sink_mass": -0.0},
        {"steps": 4, "noise": -0.0},
        {"steps": 4, "noise": 1.5},
        {"steps": 4, "recent_decay": 0.0},
        {"steps": 4, "heavy_mass": math.inf},
        {"steps": 4, "recent_length": 65537},
        {"steps": 4, "epoch_length": 0},
    ],
)
def test_invalid_trace(fields):
    log = run_scenario("window", [("budget", 4)], 0, [], trace(**fields))
    assert category(log) == ("INVALID_TRACE", -1)


def test_trace_and_steps():
    log = run_scenario("window", [("budget", 4)], 0, [(1, [])], trace(steps=3))
    assert category(log) == ("INVALID_TRACE", -1)


def test_configuration_before_trace():
    log = run_scenario("window", [("budget", 0)], 0, [], trace(steps=3, background_mass=0.0))
    assert category(log) == ("INVALID_PARAMETER", -1)


def test_neither_steps_nor_trace_is_empty():
    log = run_scenario("window", [("budget", 4)], 0, [], None)
    assert log.steps == [] and log.rejection is None
