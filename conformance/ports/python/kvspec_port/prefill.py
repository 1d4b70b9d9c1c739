"""Prefill: step budgets, budgets from a ratio, the rules relating the
prefill parameters (spec/prefill.md).

A step that carries query rows is a *prefill step*
(spec/prefill.md#query-rows); every other step is a decode step. The
harness checks the query rows and hands each kept set its heads' rows
gathered at its kept positions (spec/prefill.md#what-a-policy-sees); each
policy records them by its card's "At prefill" rule, then evicts by the
*step budget* computed here (spec/prefill.md#when-a-policy-evicts).
"""

from __future__ import annotations

import math
from typing import Optional

from .errors import INVALID_PARAMETER, Refusal, Subject

# spec/prefill.md#when-a-policy-evicts: listed in the cards of h2o, tova,
# snapkv and streamingllm after their other parameters, in this order.
PREFILL_ONLY = ("prefill_only", 0, 0, 1)
RATIO_PPM = ("ratio_ppm", 0, 0, 999999)


def ratio_budget(n: int, ratio_ppm: int) -> int:
    """spec/prefill.md#budgets-from-a-ratio: kvpress's
    `max(1, int(n * (1 - r)))`, in binary64, each operation rounded once.

    Python floats are binary64 and `int / float` converts the integer
    exactly (ratio_ppm < 2^53) then divides, correctly rounded. `n` is
    below 2^53, so `float(n)` is exact. Never decimal, never rationals.
    """
    r = float(ratio_ppm) / 1000000.0
    t = 1.0 - r
    u = float(n) * t
    return max(1, math.floor(u))


def step_budget(params: dict, n: int, prefill: bool) -> Optional[int]:
    """The step budget of a kept set keeping `n` positions after the
    step's admissions (spec/prefill.md#when-a-policy-evicts), or None when
    the step evicts nothing whatever it keeps (a decode step with
    `prefill_only` 1)."""
    if prefill and params.get("ratio_ppm", 0) > 0:
        return ratio_budget(n, params["ratio_ppm"])
    if not prefill and params.get("prefill_only", 0) == 1:
        return None
    return params["budget"]


def check_prefill_relations(name: str, values: dict) -> None:
    """spec/prefill.md#when-a-policy-evicts, the rules relating the prefill
    parameters to the others, after each card's own rules, in this order
    (INVALID_PARAMETER)."""
    # 1. ratio_ppm above 0 requires recent_window 0 (h2o, tova, snapkv).
    if "recent_window" in values and values["ratio_ppm"] > 0 and values["recent_window"] != 0:
        raise Refusal(
            INVALID_PARAMETER,
            Subject("rule", ("ratio_ppm", "recent_window")),
            f"{name}: ratio_ppm above 0 requires recent_window 0, got ratio_ppm "
            f"{values['ratio_ppm']}, recent_window {values['recent_window']}",
        )
    # 2. adaptive 1 requires prefill_only 0 and ratio_ppm 0 (and, for
    # snapkv, window_budget 0).
    if values.get("adaptive", 0) == 1:
        for pname in ("prefill_only", "ratio_ppm", "window_budget"):
            if values.get(pname, 0) != 0:
                raise Refusal(
                    INVALID_PARAMETER,
                    Subject("rule", ("adaptive", pname)),  # the first not 0
                    f"{name}: adaptive 1 requires {pname} 0, got {pname} {values[pname]}",
                )
