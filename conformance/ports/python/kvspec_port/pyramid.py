"""PyramidKV: per-layer budgets at a prefill step, a mode of `snapkv`
(spec/policies/pyramidkv.md, spec 0.19.0, the feature `pyramid`).

`pyramid` 1 or 2 replaces the step budget of a prefill step
(spec/prefill.md#when-a-policy-evicts) by the layer's budget `B`, computed
from the set's kept count `n` after admission, the layer's index `layer`,
the layer count `layers`, the steepness `pyramid_beta` and `w`, the
parameter `obs_window` (not the window of the step's query rows);
everything else is snapkv's "At prefill" (spec/policies/snapkv.md#at-prefill).
A decode step's budget is unchanged.

- `pyramid` 1, kvpress's `PyramidKVPress.get_layer_budget`: from
  `ratio_ppm`, every operation in binary64 (Python floats, each correctly
  rounded) in the card's order, rounded half to even (`round_half_even`).
- `pyramid` 2, KVCache-Factory's `PyramidKVCluster`: from `budget`, in
  integers, `//` floor division.
"""

from __future__ import annotations

import math

from .errors import INVALID_PARAMETER, Refusal, Subject

# spec/policies/pyramidkv.md#parameters: in snapkv's table after
# `window_budget`, before `slack` and `interval` (spec/policies/snapkv.md).
PYRAMID = ("pyramid", 0, 0, 2)  # 0 off, 1 kvpress, 2 KVCache-Factory
PYRAMID_BETA = ("pyramid_beta", 20, 1, 1 << 20)
LAYER = ("layer", 0, 0, 65535)
LAYERS = ("layers", 1, 1, 65536)
PYRAMID_PARAMS = (PYRAMID, PYRAMID_BETA, LAYER, LAYERS)

KVPRESS = 1
FACTORY = 2


def check_pyramid_relations(name: str, values: dict) -> None:
    """spec/policies/pyramidkv.md#parameters, the four rules, in this
    order, after snapkv's others (its card's and spec/prefill.md's) and
    before the triggers' and blocks' (INVALID_PARAMETER)."""
    pyramid = values["pyramid"]
    # 1. layer < layers, whatever `pyramid` is.
    if not values["layer"] < values["layers"]:
        raise Refusal(
            INVALID_PARAMETER, Subject("rule", ("layer", "layers")),
            f"{name}: layer must be below layers, got layer {values['layer']}, layers {values['layers']}",
        )
    # 2. pyramid 1 needs ratio_ppm above 0; pyramid 2 needs ratio_ppm 0.
    ratio_ppm = values["ratio_ppm"]
    if (pyramid == KVPRESS and ratio_ppm == 0) or (pyramid == FACTORY and ratio_ppm != 0):
        raise Refusal(
            INVALID_PARAMETER, Subject("rule", ("pyramid", "ratio_ppm")),
            f"{name}: pyramid 1 needs ratio_ppm above 0 and pyramid 2 needs ratio_ppm 0, got pyramid "
            f"{pyramid}, ratio_ppm {ratio_ppm}",
        )
    # 3. pyramid 1 needs window_budget 0 (`inside`), pyramid 2 needs 1 (`outside`).
    window_budget = values["window_budget"]
    if (pyramid == KVPRESS and window_budget != 0) or (pyramid == FACTORY and window_budget != 1):
        raise Refusal(
            INVALID_PARAMETER, Subject("rule", ("pyramid", "window_budget")),
            f"{name}: pyramid 1 needs window_budget 0 and pyramid 2 window_budget 1, got pyramid "
            f"{pyramid}, window_budget {window_budget}",
        )
    # 4. pyramid above 0 needs recent_window 0.
    if pyramid != 0 and values["recent_window"] != 0:
        raise Refusal(
            INVALID_PARAMETER, Subject("rule", ("pyramid", "recent_window")),
            f"{name}: pyramid {pyramid} needs recent_window 0, got recent_window {values['recent_window']}",
        )


def round_half_even(x: float) -> int:
    """The integer nearest the binary64 `x`, and of two equally near the
    even one (spec/policies/pyramidkv.md#pyramid-1-kvpress): what Python's
    `round(x)` gives a float, written out. round_half_even(2.5) = 2,
    round_half_even(7.5) = 8.

    `x - floor(x)` is exact: for x >= 1 floor(x) lies in [x / 2, x]
    (Sterbenz); for 0 <= x < 1 floor(x) is 0. The callers' `x` is never
    negative (a budget, or `hi - layer * steps` with hi >= lo >= w >= 1).
    """
    f = math.floor(x)
    d = x - f  # the fraction, in [0, 1)
    if d > 0.5:
        return f + 1
    if d < 0.5:
        return f
    return f if f % 2 == 0 else f + 1  # a tie: the even one


def kvpress_budget(n: int, ratio_ppm: int, w: int, beta: int, layer: int, layers: int) -> int:
    """`pyramid` 1 (spec/policies/pyramidkv.md#pyramid-1-kvpress): kvpress
    0.5.5 `PyramidKVPress.get_layer_budget`, every operation in binary64,
    correctly rounded, in the card's order. Python floats are binary64 and
    every integer here is below 2^53, so each `float(...)` is exact."""
    r = float(ratio_ppm) / 1000000.0  # as spec/prefill.md#budgets-from-a-ratio
    t = 1.0 - r
    u = float(n) * t
    c = float(w) + u  # kvpress's max_capacity_prompt
    a = c - float(w)  # not always u
    lo = a / float(beta)
    hi = a * 2.0 - lo
    if hi >= float(n) - float(w):  # n - w may be negative: compared signed
        hi = float(n) - float(w)
        lo = a * 2.0 - hi
    if not (float(n) >= hi and hi >= lo and lo >= float(w)):
        return max(1, round_half_even(u))  # the fallback: the ratio's budget, rounded
    steps = (hi - lo) / float(layers - 1) if layers > 1 else 0.0
    return round_half_even(hi - float(layer) * steps)


def factory_budget(n: int, budget: int, w: int, beta: int, layer: int, layers: int) -> int:
    """`pyramid` 2 (spec/policies/pyramidkv.md#pyramid-2-kvcache-factory):
    KVCache-Factory `PyramidKVCluster`, in integers with floor division;
    `budget` counts the prefix positions kept besides the window. May be 0
    (the layer keeps the window alone)."""
    if n < budget + w or n < 2 * budget:
        return budget  # compress as SnapKV does, or not at all
    lo = budget // beta
    hi = 2 * budget - lo
    if hi >= n - w:
        hi = n - w
        lo = 2 * budget - hi
    steps = (hi - lo) // (layers - 1) if layers > 1 else 0
    return hi - layer * steps


def layer_budget(params: dict, n: int) -> int:
    """The layer's budget `B` at a prefill step of a kept set keeping `n`
    positions after admission, with `pyramid` 1 or 2
    (spec/policies/pyramidkv.md#how-it-works)."""
    w = params["obs_window"]
    beta, layer, layers = params["pyramid_beta"], params["layer"], params["layers"]
    if params["pyramid"] == KVPRESS:
        return kvpress_budget(n, params["ratio_ppm"], w, beta, layer, layers)
    return factory_budget(n, params["budget"], w, beta, layer, layers)
