"""Spans and position ids (spec/spans.md, the feature `spans`, spec 0.8.0),
and the context shift (spec/spans.md#context-shift, the feature
`contextshift`, spec 0.9.0).

The positional policies (`full`, `window`, `streamingllm`) take this file's
parameters after their own (spec/spans.md#parameters). A step's *held set*
H is what the cache holds while the step's queries attend: the positions
kept when the step starts, minus those evicted before admission
(`evict_at` 1 or 2, spec/spans.md#when-room-is-made), plus the step's own
positions (spec/spans.md#terms). The policy step (policies/base.py) hands
H, in kept order, to `step_record` right after admission, before any
eviction after admission.

H is held as a sorted list; its maximal runs of consecutive positions are
found by bisection (`held_runs`), so a step costs O(runs * log |H|) plus
O(runs) per query, whatever the cache holds: a positional policy's H has
at most two runs in a scenario (the kept sinks, then the latest positions).

With `context_shift` 1 (spec/spans.md#context-shift) room is made before
admission as with `evict_at` 1 or 2 (the policy's `evict_before`), but only
when the step does not fit, and in one block of `context_shift_discard`
positions; H, the spans and the ids are then read exactly as for
`evict_at` 1 or 2.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import List, Sequence, Tuple

from .errors import INVALID_PARAMETER, Refusal, Subject

U32_MAX = (1 << 32) - 1

# spec/spans.md#parameters, in the order each card lists them, after the
# card's own parameters. `full` takes all but EVICT_AT and POSITION_IDS.
SPANS = ("spans", 0, 0, 1)
SPAN_WINDOW = ("span_window", 0, 0, U32_MAX)
SPAN_CHUNK = ("span_chunk", 0, 0, U32_MAX)
EVICT_AT = ("evict_at", 0, 0, 2)
POSITION_IDS = ("position_ids", 0, 0, 1)
# spec/spans.md#parameters (0.9.0): after POSITION_IDS, not taken by `full`.
CONTEXT_SHIFT = ("context_shift", 0, 0, 1)
DISCARD = ("discard", 0, 0, U32_MAX)


def check_span_relations(name: str, values: dict) -> None:
    """spec/spans.md#parameters: the rules between parameters, checked after
    the card's own (and after spec/prefill.md's), in this order;
    INVALID_PARAMETER naming both parameters."""
    if values.get("span_window", 0) > 0 and values.get("span_chunk", 0) > 0:
        raise Refusal(
            INVALID_PARAMETER,
            Subject("rule", ("span_window", "span_chunk")),
            f"{name}: span_window and span_chunk are not both above 0, got span_window "
            f"{values['span_window']}, span_chunk {values['span_chunk']}",
        )
    if values.get("evict_at", 0) > 0:
        # streamingllm's prefill parameters evict after admission by definition.
        for pname in ("prefill_only", "ratio_ppm"):
            if values.get(pname, 0) != 0:
                raise Refusal(
                    INVALID_PARAMETER,
                    Subject("rule", ("evict_at", pname)),
                    f"{name}: evict_at above 0 requires {pname} 0, got evict_at "
                    f"{values['evict_at']}, {pname} {values[pname]}",
                )


def check_context_shift_relations(name: str, values: dict, sinks: int = 0) -> None:
    """spec/spans.md#parameters, "Rules of the context shift", checked after
    check_span_relations; INVALID_PARAMETER naming the parameters.

    `sinks`: streamingllm's; 0 for `window`, whose rule `budget >= 2` is
    `budget - sinks >= 2` with no sinks. `window` takes no `prefill_only` or
    `ratio_ppm` (absent reads 0)."""
    shift = values.get("context_shift", 0)
    discard = values.get("discard", 0)
    if shift == 1:
        # The shift is its own moment to make room (it takes evict_at 0), and
        # streamingllm's prefill parameters evict after admission.
        for pname in ("evict_at", "prefill_only", "ratio_ppm"):
            if values.get(pname, 0) != 0:
                raise Refusal(
                    INVALID_PARAMETER,
                    Subject("rule", ("context_shift", pname)),  # the first not 0
                    f"{name}: context_shift 1 needs {pname} 0, got context_shift 1, "
                    f"{pname} {values[pname]}",
                )
        # A full cache must have a position to discard and one to keep
        # (n_left >= 2, so d >= 1: spec/spans.md#context-shift).
        budget = values["budget"]
        if budget - sinks < 2:
            if name == "streamingllm":
                detail = f"budget - sinks >= 2, got budget {budget}, sinks {sinks}"
                names = ("context_shift", "budget", "sinks")
            else:
                detail = f"budget >= 2, got budget {budget}"
                names = ("context_shift", "budget")
            raise Refusal(INVALID_PARAMETER, Subject("rule", names), f"{name}: context_shift 1 needs {detail}")
    elif discard > 0:
        raise Refusal(
            INVALID_PARAMETER,
            Subject("rule", ("discard", "context_shift")),
            f"{name}: discard above 0 needs context_shift 1, got discard {discard}, "
            f"context_shift {shift}",
        )


def context_shift_discard(n_left: int, discard: int) -> int:
    """spec/spans.md#context-shift, step 2: how many of the `n_left` kept
    positions that may go a shift discards: `discard` when above 0, else
    floor(n_left / 2); then d = min(d, max(0, n_left - 1)), so at least one
    position that may go is always kept."""
    d = discard if discard > 0 else n_left // 2
    return min(d, max(0, n_left - 1))


def shift_needed(kept: int, count: int, budget: int) -> bool:
    """spec/spans.md#context-shift: a shift happens before a step admitting
    `count` only when kept + count > budget (a step that fits evicts
    nothing)."""
    return kept + count > budget


def held_runs(held: Sequence[int]) -> List[Tuple[int, int, int]]:
    """The maximal runs of consecutive positions of `held` (ascending,
    distinct): (first, last, slot of first). A run from slot i reaches slot
    j exactly when held[j] - held[i] == j - i (positions are distinct and
    ascending), a property that holds up to the run's end and fails after
    it, so each run's end is found by bisection."""
    out = []
    n = len(held)
    i = 0
    while i < n:
        base = held[i] - i
        lo, hi = i, n - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if held[mid] - mid == base:
                lo = mid
            else:
                hi = mid - 1
        out.append((held[i], held[lo], i))
        i = lo + 1
    return out


def _slot_ranges(runs, a: int, b: int, out: List[int]) -> None:
    """Appends, as flattened first, last pairs, the positions of slots
    a .. b (inclusive) of H, split at H's runs (each piece a maximal run:
    the slots a .. b are consecutive in H)."""
    for first, last, slot in runs:
        end = slot + (last - first)  # the run's last slot
        if end < a:
            continue
        if slot > b:
            break
        lo = max(a, slot)
        hi = min(b, end)
        out.append(first + (lo - slot))
        out.append(first + (hi - slot))


def step_record(held: List[int], first: int, count: int, sinks_held: int, params: dict):
    """spec/spans.md#the-log: (spans, held) of one step.

    `held`: H in ascending (kept) order, the step's `count` positions
    `first .. first + count - 1` its last slots. `sinks_held`: the held
    sinks (streamingllm, spec/spans.md#span-rules: "Sinks are in every
    span"), H's first `sinks_held` slots. Returns one flattened range list
    per query, ascending, and H's runs as (first, last, id).
    """
    runs = held_runs(held)
    w = params.get("span_window", 0)
    c = params.get("span_chunk", 0)
    n = len(held)
    spans = []
    for j in range(count):
        q = first + j
        slot_q = n - count + j  # the query is held; nothing after it is visible
        # spec/spans.md#span-rules: the lowest position the rule allows.
        if w > 0:
            low = q - w + 1  # over the integers: below 0 allows every visible position
        elif c > 0:
            low = (q // c) * c
        else:
            low = 0
        lo = bisect_left(held, low, 0, slot_q + 1)
        # The held sinks visible to q (a sink at q is q itself).
        s = min(sinks_held, slot_q + 1)
        ranges: List[int] = []
        if lo <= s:
            # The sinks and the rule's slots touch: one slot range 0 .. slot_q.
            _slot_ranges(runs, 0, slot_q, ranges)
        else:
            if s > 0:
                # Slots s .. lo - 1 lie between, so the two pieces never join.
                _slot_ranges(runs, 0, s - 1, ranges)
            _slot_ranges(runs, lo, slot_q, ranges)
        spans.append(ranges)
    # spec/spans.md#position-ids: absolute, or the index in H.
    relative = params.get("position_ids", 0) == 1
    held_out = [(f, l, slot if relative else f) for f, l, slot in runs]
    return spans, held_out
