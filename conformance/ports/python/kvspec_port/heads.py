"""Multi-head scenarios: head counts, kept sets, combining heads (spec/heads.md).

A scenario with one query head never comes here: the harness runs the
single-head policy of the card directly (spec/heads.md: "a single-head
scenario ... means exactly what it meant before heads existed"). With
several heads, a policy that reads attention keeps one `KeptSet` per
granularity unit; each set holds one single-head policy object per head it
covers (that head's own state under the card's rule), all sharing the set's
kept positions, and ranks by the heads' scores combined per slot.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import INVALID_HEADS, Refusal
from .policies.base import StepOutcome, rank

MAX_HEADS = 1024

# spec/heads.md#kept-sets, `granularity`.
LAYER, KV_HEAD, QUERY_HEAD = 0, 1, 2
# spec/heads.md#combining-heads-at-ranking-time, `aggregation`.
MEAN, MAX, SUM = 0, 1, 2


def check_head_counts(query_heads: int, kv_heads: int) -> None:
    """spec/heads.md#head-counts, in order; each refusal is INVALID_HEADS (step -1).

    Since spec 0.5.0's several-head traces (spec/trace.md#several-heads) a
    trace scenario may have any valid head counts."""
    if not 1 <= query_heads <= MAX_HEADS:
        raise Refusal(INVALID_HEADS, f"query_heads must be in [1, {MAX_HEADS}], got {query_heads}")
    if not 1 <= kv_heads <= MAX_HEADS:
        raise Refusal(INVALID_HEADS, f"kv_heads must be in [1, {MAX_HEADS}], got {kv_heads}")
    if query_heads % kv_heads != 0:
        raise Refusal(
            INVALID_HEADS, f"kv_heads must divide query_heads, got query_heads {query_heads}, kv_heads {kv_heads}"
        )


def sets_of(granularity: int, query_heads: int, kv_heads: int) -> List[Tuple[int, int]]:
    """The kept sets, in set order, each as the half-open range of query
    heads it covers (spec/heads.md#kept-sets: a set's heads are consecutive)."""
    if granularity == LAYER:
        return [(0, query_heads)]
    if granularity == KV_HEAD:
        g = query_heads // kv_heads
        return [(s * g, s * g + g) for s in range(kv_heads)]
    if granularity == QUERY_HEAD:
        return [(s, s + 1) for s in range(query_heads)]
    raise ValueError(f"granularity {granularity}")  # refused by its range before


def combine(scores: Sequence[np.ndarray], aggregation: int) -> np.ndarray:
    """The combined score per slot (spec/heads.md#combining-heads-at-ranking-time).

    `scores[h]`: head h's binary64 score per kept slot, heads in ascending
    order. Elementwise over slots; across heads an explicit loop in head order.
    """
    m = len(scores)
    if aggregation == MAX:
        # A maximum selects one operand exactly; scores are never NaN.
        out = scores[0]
        for x in scores[1:]:
            out = np.maximum(out, x)
        return out
    s = np.zeros(len(scores[0]), dtype=np.float64)  # starting from +0.0
    for x in scores:  # ((0.0 + x_0) + x_1) + ... + x_{m-1}
        s = s + x
    if aggregation == SUM:
        return s
    if aggregation == MEAN:
        # One correctly rounded binary64 division by m (exact as a binary64).
        return s / np.float64(m)
    raise ValueError(f"aggregation {aggregation}")


class KeptSet:
    """One kept set of a policy that reads attention (spec/heads.md#kept-sets).

    `heads[i]` is the single-head policy state of the set's i-th head
    (query head `first_head + i`); every one of them holds the set's kept
    list itself (one shared list), so its per-slot state stays parallel to it.
    """

    def __init__(self, cls, values: dict, first_head: int, end_head: int) -> None:
        self.first_head = first_head
        self.end_head = end_head
        self.budget = values["budget"]
        self.recent_window = values["recent_window"]
        self.aggregation = values["aggregation"]
        self.kept: List[int] = []
        # Score policies never use their Rng (spec/policies/*.md#notes).
        self.heads = [cls(values, None) for _ in range(first_head, end_head)]
        for head in self.heads:
            head.kept = self.kept

    def step(self, first: int, count: int, rows: Optional[np.ndarray]) -> StepOutcome:
        """One step of spec/harness.md#the-decode-step for every head of the set.

        `rows`: None (null attention) or, per head of the set, its row
        gathered at the set's kept positions (spec/heads.md#what-each-head-records).
        """
        query = len(self.kept)
        if rows is not None:
            for head, row in zip(self.heads, rows):
                head.record(row)
        self.kept.extend(range(first, first + count))
        for head in self.heads:
            head.admitted(count)
            head.next_min = first + count
        victims, cut = self.evict()
        return StepOutcome(victims, len(self.kept), query, cut)

    def evict(self):
        kept = self.kept
        n = len(kept)
        k = n - self.budget
        if k <= 0:
            return [], []
        scores = [np.asarray(head.scores(), dtype=np.float64) for head in self.heads]
        combined = scores[0] if len(scores) == 1 else combine(scores, self.aggregation)
        victim_slots, victims, cut = rank(combined, kept, k, n - self.recent_window)
        keep = np.ones(n, dtype=bool)
        keep[victim_slots] = False
        for i in sorted(victim_slots, reverse=True):
            del kept[i]
        # Every head of the set forgets the victims.
        for head in self.heads:
            head.remove_slots(keep)
        return victims, cut
