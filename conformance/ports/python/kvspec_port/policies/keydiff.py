"""keydiff: evicts the keys nearest the cache's mean key direction
(spec/policies/keydiff.md, spec 0.17.0).

kvpress's KeyDiffPress, the second policy scored from a scenario's keys
(spec/tensors.md). Like knorm it reads no attention: a step's rows, query
rows and column totals are checked by the harness and ignored, except that
query rows make a step a prefill step, whose step budget `ratio_ppm`
decides (spec/policies/keydiff.md#at-prefill). Its parameters, their
checks, its kept sets and the combination of a set's KV heads are knorm's
(spec/policies/keydiff.md#parameters, #several-kv-heads): the class is
knorm's with another score.

spec/policies/keydiff.md#how-it-works, in binary64 with the reductions of
spec/elementary.md#reductions-over-vectors (`elementary.dot`, `norm`,
`mean`: every sum in index order from +0.0, no fused operation):

- the unit key, once at admission, per KV head the set covers: `n =
  norm(key)`; `d` zeros (+0.0) when `n` is +0.0, else each entry divided by
  `n` (`unit`). The set keeps, per covered KV head, one unit key per kept
  slot, and forgets it with the slot.
- the anchor, per KV head, whenever the set ranks (at a step that evicts,
  after the step's admissions): per channel the `mean` of the unit keys'
  entries over every kept slot (the recent window's included), in
  ascending position order (the kept order), then made unit.
- the score of a kept slot under that KV head: `+0.0 - dot(unit key,
  anchor)`, never -0.0.

The ranking, ties, candidates (kept slots before the recent window), the
step budget and the cut are those of every score policy
(`ScorePolicy.evict`); the cut reports combined scores, of either sign.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..elementary import dot, mean, norm
from .base import StepOutcome, combine
from .knorm import KnormPolicy


def unit(vector: Sequence[float]) -> List[float]:
    """The unit vector of a binary64 vector (spec/policies/keydiff.md#how-it-works):
    each entry divided by `norm(vector)`, one division each; `d` zeros (+0.0)
    when the norm is +0.0 (every entry zero, -0.0 included)."""
    n = norm(vector)
    if n == 0.0:
        return [0.0] * len(vector)
    return [x / n for x in vector]


def anchor(units: Sequence[Sequence[float]]) -> List[float]:
    """One KV head's anchor (spec/policies/keydiff.md#how-it-works): the unit
    of the per-channel mean of `units` (one unit key per kept slot, kept
    order: position ascending), each channel's mean `mean` of
    spec/elementary.md (the sum from +0.0 in that order, then one division
    by the number of kept slots)."""
    d = len(units[0])
    return unit([mean([u[c] for u in units]) for c in range(d)])


def head_scores(units: Sequence[Sequence[float]]) -> List[float]:
    """One KV head's score per kept slot: `+0.0 - dot(unit key, anchor)`,
    the dot product over channels 0 .. d-1 from +0.0."""
    a = anchor(units)
    return [0.0 - dot(u, a) for u in units]


class KeyDiffPolicy(KnormPolicy):
    NAME = "keydiff"
    # PARAMS, READS_ATTENTION (False), READS_KEYS (True), the rules, the
    # direct call (`step`) and the kept sets are knorm's
    # (spec/policies/keydiff.md#parameters: "Checked in this order", the
    # same table, `recent_window` defaulting to 0).

    def __init__(self, *args, **kwargs) -> None:
        # KnormPolicy's arguments: params, rng, kv_first, kv_end, head_dim.
        super().__init__(*args, **kwargs)
        # Per covered KV head, ascending: one unit key (d binary64 entries)
        # per kept slot, kept order. No score is kept: scores move with the
        # cache (spec/policies/keydiff.md, "computed anew each time the set
        # ranks").
        self.kv_units: List[List[List[float]]] = [[] for _ in range(self.kv_first, self.kv_end)]

    def step_keys(self, first: int, count: int, keys: Sequence, m: Optional[int] = None) -> StepOutcome:
        """One step of this kept set (spec/policies/keydiff.md#how-it-works):
        admit `count` positions from `first`, each with its unit key per KV
        head the set covers, then evict by the step budget. `keys`, `m`: as
        `KnormPolicy.step_keys`."""
        query = len(self.kept)
        self.kept.extend(range(first, first + count))
        self.next_min = first + count
        for g, head_keys in enumerate(keys):
            # head_keys: a binary64 (count, d) array, exact binary32 values.
            self.kv_units[g].extend(unit(key) for key in head_keys.tolist())
        victims, cut = self.evict(m)
        return StepOutcome(victims, len(self.kept), query, cut)

    def step_unchecked(self, first, count, attention, prefill=None):
        raise TypeError("keydiff reads keys: step it with step_keys (a scenario) or step(..., keys=...)")

    def scores(self) -> np.ndarray:
        """The set's combined score per kept slot, computed now from every
        kept slot's unit key (spec/policies/keydiff.md#how-it-works): one KV
        head's scores as they are; several combined by `aggregation` in
        ascending KV head order (spec/policies/keydiff.md#several-kv-heads,
        spec/heads.md#combining-heads-at-ranking-time)."""
        # Python floats: a binary64 array.
        per_head = [np.asarray(head_scores(units)) for units in self.kv_units]
        if len(per_head) == 1:
            return per_head[0]
        return combine(per_head, self.params["aggregation"])

    def remove_slots(self, keep) -> None:
        # keep: one bool per kept slot before the eviction (ScorePolicy.evict);
        # an evicted slot's unit keys go with it.
        self.kv_units = [[u for u, k in zip(units, keep) if k] for units in self.kv_units]
