"""Worked examples of spec/harness.md, spec/policies/{full,window,streamingllm}.md."""

import pytest

from helpers import run, singles, victims


def test_full_never_evicts():
    log = run("full", [], [(3, None), (1, [0.1, 0.2, 0.3]), (2, None)])
    assert victims(log) == [[], [], []]
    assert [s.kept_count for s in log.steps] == [3, 4, 6]
    assert log.rejection is None


def test_window_single_steps():
    # window.md: budget 3, single steps 0..5 evict -, -, -, 0, 1, 2.
    log = run("window", [("budget", 3)], singles([None] * 6))
    assert victims(log) == [[], [], [], [0], [1], [2]]


def test_window_chunks():
    # harness.md#chunked-admission: chunk of 5 evicts 0, 1; chunk of 2 evicts 2, 3.
    log = run("window", [("budget", 3)], [(5, None), (2, None)])
    assert victims(log) == [[0, 1], [2, 3]]


def test_window_chunk_evicts_its_own():
    # window.md: budget 2, step (0) then chunk (1..4): 3 and 4 remain.
    log = run("window", [("budget", 2)], [(1, None), (4, None)])
    assert victims(log) == [[], [0, 1, 2]]
    assert log.steps[-1].kept_count == 2


def test_streamingllm_cache_relative_positions():
    # streamingllm.md#cache-relative-positions: budget 5, sinks 2, seven steps.
    log = run("streamingllm", [("budget", 5), ("sinks", 2)], singles([None] * 7))
    assert victims(log) == [[], [], [], [], [], [2], [3]]
    assert log.steps[3].query_cache_position == 3
    assert log.steps[6].query_cache_position == 5


@pytest.mark.parametrize(
    "budget, sinks, chunks, expected",
    [
        (5, 2, [10], [list(range(2, 7))]),
        (5, 2, [4, 2], [[], [2]]),
        (5, 2, [5, 4], [[], [2, 3, 4, 5]]),
        (6, 4, [2, 5], [[], [4]]),
    ],
)
def test_streamingllm_chunk_table(budget, sinks, chunks, expected):
    # streamingllm.md#chunked-admission, the table.
    log = run("streamingllm", [("budget", budget), ("sinks", sinks)], [(c, None) for c in chunks])
    assert victims(log) == expected


def test_streamingllm_zero_sinks_is_window():
    steps = [(3, None), (1, None), (4, None), (1, None), (2, None)]
    a = run("streamingllm", [("budget", 4), ("sinks", 0)], steps)
    b = run("window", [("budget", 4)], steps)
    assert victims(a) == victims(b)
