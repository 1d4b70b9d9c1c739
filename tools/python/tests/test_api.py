"""The package's API on cases worked by hand from the spec (not from the
reference's output), and its refusals.

    tools/.venv-torch/bin/python tools/python/tests/test_api.py

Last line: "python-api: P passed, F failed"; exit 1 on any failure.
"""
import math
import sys
import traceback

import numpy as np

import kvspec
from kvspec import pb

CHECKS = []


def check(function):
    CHECKS.append(function)
    return function


def decode(admits, heads=1):
    """A scenario of steps admitting `admits` positions each, null
    attention (window and streamingllm read none)."""
    scenario = pb.Scenario(id="hand")
    for n in admits:
        scenario.steps.add(admit=n)
    if heads > 1:
        scenario.query_heads = scenario.kv_heads = heads
    return scenario


@check
def window_worked_example():
    # spec/policies/window.md, "Worked example", budget 3: single steps
    # admitting 0..5 evict nothing, nothing, nothing, 0, 1, 2.
    run = kvspec.run("window", decode([1] * 6), params={"budget": 3})
    assert run.refusal is None, run.refusal
    assert [s.sets[0].victims for s in run.steps] == [[], [], [], [0], [1], [2]]
    assert run.kept == [[3, 4, 5]] and run.evicted == [[0, 1, 2]]
    # A chunk of 5 (0..4) evicts 0 and 1 at once; a chunk of 2 (5, 6) then 2 and 3.
    run = kvspec.run("window", decode([5, 2]), params={"budget": 3})
    assert [s.sets[0].victims for s in run.steps] == [[0, 1], [2, 3]]
    # query positions: the number kept before each step (spec/harness.md).
    assert [s.query_position for s in run.steps] == [0, 3]


# TOVA with kvpress's preset at compression_ratio 0.5 on a 16-position
# prompt: it keeps max(1, int(16 x 0.5)) = 8 positions
# (spec/prefill.md#budgets-from-a-ratio), those with the largest mean over
# heads of the last query's weights (spec/policies/tova.md); both heads
# give the last query the same row, so the 8 largest of W are kept:
# 13 (15), 12 (13), 11 (11), 10 (10), 9 (2), 8 (4), 7 (6), 6 (8).
W = [5, 1, 9, 2, 8, 3, 7, 4, 6, 0.5, 10, 11, 0.1, 12, 0.2, 13]
TOVA_KEPT = [2, 4, 6, 8, 10, 11, 13, 15]


def last_row_prompt(heads=2):
    rows = np.zeros((heads, 1, 16), dtype=np.float32)
    rows[:, 0, :] = np.array(W) / sum(W)
    return rows


@check
def tova_from_rows_with_kvpress_ratio():
    run = kvspec.run("tova", rows=last_row_prompt(), preset="kvpress-0.5.5",
                     compression_ratio=0.5)
    assert run.refusal is None, run.refusal
    assert run.config["ratio_ppm"] == 500000
    assert run.kept == [TOVA_KEPT], run.kept
    assert len(run.steps) == 1 and run.steps[0].sets[0].kept_count == 8
    # The cut: the 8 victims in rank order, lowest score first (0.1 at 12).
    cut = run.steps[0].sets[0].cut
    assert cut[0][0] == 12 and math.isclose(cut[0][1], 0.1 / sum(W), rel_tol=1e-6), cut
    # The budget the ratio gave, 16 x 0.5 = 8; the cut is not a tie (the
    # last victim scores 5, the first survivor 6, over sum(W)).
    assert run.steps[0].sets[0].ratio_budget == 8, run.steps[0].sets[0]
    assert run.steps[0].sets[0].tie == [], cut


@check
def tie_at_the_cut():
    # TOVA, kvpress's preset, ratio 0.5, one head, the last query's row
    # over 6 positions: the budget is max(1, floor(6 x 0.5)) = 3; the
    # newest, 5, is protected (protect_newest 1); 3 of the candidates 0..4
    # go, by score ascending then position ascending
    # (spec/harness.md#victims): 1 (0.1), 3 (0.1), then of 2 and 4 (0.2
    # each) the lower position, 2. The cut's boundary is a tie: 2 went, 4
    # stayed, at the same score.
    rows = np.array([[[0.3, 0.1, 0.2, 0.1, 0.2, 0.1]]], dtype=np.float32)
    run = kvspec.run("tova", rows=rows, preset="kvpress-0.5.5", compression_ratio=0.5)
    assert run.refusal is None, run.refusal
    record = run.steps[0].sets[0]
    assert record.ratio_budget == 3 and record.victims == [1, 2, 3], record
    assert [p for p, _ in record.cut[:3]] == [1, 3, 2], record.cut
    assert record.tie == [2, 4], record.tie
    # No ratio: no ratio budget.
    run = kvspec.run("tova", rows=rows, params={"budget": 3, "recent_window": 0})
    assert run.steps[0].sets[0].ratio_budget is None, run.steps[0].sets[0]


@check
def torch_tensors_as_numpy():
    try:
        import torch
    except ImportError:
        return "skipped: no torch"
    run = kvspec.run("tova", rows=torch.tensor(last_row_prompt()), preset="kvpress-0.5.5",
                     compression_ratio=0.5)
    assert run.kept == [TOVA_KEPT], run.kept


@check
def knorm_from_keys():
    # knorm (spec/policies/knorm.md) at kvpress's preset, ratio 0.5, one KV
    # head of 16 positions: budget max(1, floor(16 x 0.5)) = 8, recent_window
    # 0; score +0.0 - norm(key). Position p's key is (7p mod 16, 0), so its
    # norm is 7p mod 16: 0 7 14 5 12 3 10 1 8 15 6 13 4 11 2 9 for p = 0..15.
    # The 8 lowest scores (the largest norms, 8..15) go: kept are the
    # positions of norms 0..7, p = 0 1 3 5 7 10 12 14; the first victim in
    # the cut is p = 9 (norm 15, score -15).
    keys = np.zeros((1, 16, 2), dtype=np.float32)
    keys[0, :, 0] = [(7 * p) % 16 for p in range(16)]
    run = kvspec.run("knorm", rows=last_row_prompt(), keys=keys, kv_heads=1,
                     preset="kvpress-0.5.5", compression_ratio=0.5)
    assert run.refusal is None, run.refusal
    assert run.kept == [[0, 1, 3, 5, 7, 10, 12, 14]], run.kept
    assert run.steps[0].sets[0].cut[0] == (9, -15.0), run.steps[0].sets[0].cut
    # Without keys knorm refuses the scenario (spec/tensors.md#checks:
    # head_dim missing for a policy that reads keys); a NaN key is refused.
    run = kvspec.run("knorm", rows=last_row_prompt(), kv_heads=1,
                     preset="kvpress-0.5.5", compression_ratio=0.5)
    assert run.refusal is not None and run.refusal.category == "INVALID_HEADS", run.refusal
    assert "head_dim" in run.refusal.message, run.refusal
    keys[0, 3, 1] = float("nan")
    run = kvspec.run("knorm", rows=last_row_prompt(), keys=keys, kv_heads=1,
                     preset="kvpress-0.5.5", compression_ratio=0.5)
    assert run.refusal is not None, run.kept


@check
def lagkv_from_keys_and_values():
    # lagkv (spec/policies/lagkv.md), "Worked example": one KV head, d = e =
    # 2, sinks 1, lag 2, budget 4, one step admitting positions 0 to 4 (here
    # a prefill step of 5 positions with one query row, not read). Over the
    # card's keys, its first values judge position 2 flatter (a = 0.4151..
    # against 0.5848..): position 2 ranks 0 in partition 0 (score 0) and
    # goes, position 1 ranks 1 (score 1/2); the sink and partition 1
    # (positions 3, 4) score 1. Its "Equal judgements" values make a equal
    # (0.5 each): the older, position 1, ranks 0 and goes.
    rows = np.full((1, 1, 5), 0.2, dtype=np.float32)
    keys = np.array([[[9, 9], [0, 1], [0.5, 0.5], [0, 0], [1, 1]]], dtype=np.float32)
    values = np.array([[[9, 9], [0.5, 0.5], [0.5, 0.5], [0, 0], [1, 1]]], dtype=np.float32)
    params = {"budget": 4, "sinks": 1, "lag": 2}
    run = kvspec.run("lagkv", rows=rows, keys=keys, values=values, kv_heads=1,
                     params=params)
    assert run.refusal is None, run.refusal
    assert run.kept == [[0, 1, 3, 4]], run.kept
    assert run.steps[0].sets[0].cut == [(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)], \
        run.steps[0].sets[0].cut
    equal = np.array([[[9, 9], [1, 1], [0, 2], [0, 0], [2, 2]]], dtype=np.float32)
    run = kvspec.run("lagkv", rows=rows, keys=keys, values=equal, kv_heads=1,
                     params=params)
    assert run.kept == [[0, 2, 3, 4]], run.kept
    # kvpress's preset at ratio 0.5 over 16 positions (sinks 4, lag 128):
    # a short cache (16 < 4 + 2 x 128) scores the non-sinks (i - 4) / 12
    # whatever the tensors, so the budget of 8 keeps the sinks and the 4
    # newest.
    run = kvspec.run("lagkv", rows=last_row_prompt(), kv_heads=1,
                     keys=np.ones((1, 16, 2)), values=np.ones((1, 16, 3)),
                     preset="kvpress-0.5.5", compression_ratio=0.5)
    assert run.refusal is None, run.refusal
    assert run.kept == [[0, 1, 2, 3, 12, 13, 14, 15]], run.kept
    # Without values lagkv refuses the scenario (spec/tensors.md#checks:
    # value_dim missing for a policy that reads values), and with values
    # one wide (value_dim below lagkv's 2); a NaN value is refused.
    run = kvspec.run("lagkv", rows=rows, keys=keys, kv_heads=1, params=params)
    assert run.refusal is not None and run.refusal.category == "INVALID_HEADS", run.refusal
    assert "value_dim" in run.refusal.message, run.refusal
    run = kvspec.run("lagkv", rows=rows, keys=keys, values=values[:, :, :1], kv_heads=1,
                     params=params)
    assert run.refusal is not None and "value_dim" in run.refusal.message, run.refusal
    values[0, 3, 1] = float("nan")
    run = kvspec.run("lagkv", rows=rows, keys=keys, values=values, kv_heads=1,
                     params=params)
    assert run.refusal is not None and run.refusal.category == "ATTENTION_VALUE", run.refusal


@check
def head_parameters_by_word():
    # h2o at query_head granularity: one kept set per query head
    # (spec/heads.md#kept-sets); the word is the value 2.
    rows = last_row_prompt()
    by_word = kvspec.run("h2o", rows=rows, params={"budget": 8, "recent_window": 0,
                                                   "granularity": "query_head"})
    by_value = kvspec.run("h2o", rows=rows, params={"budget": 8, "recent_window": 0,
                                                    "granularity": 2})
    assert len(by_word.kept) == 2 and by_word.kept == by_value.kept, by_word.kept
    assert by_word.config["granularity"] == 2


@check
def refusals_are_results():
    rows = last_row_prompt()
    rows[1, 0, 3] = float("nan")
    run = kvspec.run("tova", rows=rows, preset="kvpress-0.5.5", compression_ratio=0.5)
    assert run.refusal is not None and run.refusal.category == "ATTENTION_VALUE", run.refusal
    assert run.kept == [[]] or run.kept == [], run.kept
    run = kvspec.run("window", decode([1]), params={"budgte": 3})
    assert run.refusal.category == "INVALID_PARAMETER" and run.refusal.step == -1, run.refusal
    assert "budgte" in run.refusal.message
    run = kvspec.run("nope", decode([1]))
    assert run.refusal.category == "UNKNOWN_POLICY", run.refusal


@check
def bad_arguments_raise_naming_them():
    for call, words in (
            (lambda: kvspec.run("tova", rows=last_row_prompt(), compression_ratio=1.5),
             "compression_ratio"),
            (lambda: kvspec.run("tova", rows=last_row_prompt(), compression_ratio=0.1234567),
             "compression_ratio"),
            (lambda: kvspec.run("tova", rows=np.zeros((2, 3, 4, 5))), "rows"),
            (lambda: kvspec.run("tova", rows=np.zeros((1, 5, 4))), "rows"),
            (lambda: kvspec.run("tova", rows=last_row_prompt(), preset="nope"), "nope"),
            (lambda: kvspec.run("h2o", rows=last_row_prompt(),
                                params={"granularity": "per_head"}), "granularity"),
            (lambda: kvspec.run("h2o", rows=last_row_prompt(), params={"budget": 2.5}),
             "budget"),
            (lambda: kvspec.run("window"), "scenario or rows"),
            (lambda: kvspec.run("knorm", rows=last_row_prompt(), kv_heads=1,
                                keys=np.zeros((2, 16, 4))), "keys"),
            (lambda: kvspec.run("knorm", rows=last_row_prompt(), kv_heads=1,
                                keys=np.zeros((1, 15, 4))), "keys"),
            (lambda: kvspec.run("knorm", decode([1]), keys=np.zeros((1, 1, 4))),
             "keys"),
            (lambda: kvspec.run("lagkv", rows=last_row_prompt(), kv_heads=1,
                                values=np.zeros((2, 16, 4))), "values"),
            (lambda: kvspec.run("lagkv", rows=last_row_prompt(), kv_heads=1,
                                keys=np.zeros((1, 16, 4)),
                                values=np.zeros((1, 17, 4))), "values"),
            (lambda: kvspec.run("lagkv", rows=last_row_prompt(), kv_heads=1,
                                values=np.zeros((1, 16))), "values"),
            (lambda: kvspec.run("lagkv", decode([1]), values=np.zeros((1, 1, 4))),
             "values"),
            (lambda: kvspec.run("window", scenario=b"\xff\xff\xff"), "scenario"),
            (lambda: kvspec.run("window", scenario="/nonexistent/x.pb"), "x.pb"),
    ):
        try:
            call()
        except (ValueError, OSError) as error:
            assert words in str(error), (words, str(error))
        else:
            raise AssertionError(f"no error for {words}")


@check
def registry_and_presets():
    names = [p.name for p in kvspec.policies()]
    assert names[:6] == ["full", "window", "streamingllm", "h2o", "tova", "snapkv"], names
    window = next(p for p in kvspec.policies() if p.name == "window")
    assert window.card == "spec/policies/window.md"
    assert [p.name for p in window.parameters][0] == "budget"
    assert "kvpress-0.5.5" in kvspec.presets("snapkv")
    assert "snapkv:kvpress-0.5.5" in kvspec.presets()


def main():
    passed = failed = 0
    for function in CHECKS:
        try:
            note = function()
            passed += 1
            print(f"ok   {function.__name__}" + (f" ({note})" if note else ""))
        except Exception:  # pylint: disable=broad-except
            failed += 1
            print(f"FAIL {function.__name__}\n{traceback.format_exc()}")
    print(f"python-api: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
