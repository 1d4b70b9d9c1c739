"""knorm: evicts the largest key norm (spec/policies/knorm.md, spec 0.16.0).

kvpress's KnormPress, the first policy scored from a scenario's keys
(spec/tensors.md). It reads no attention: a step's rows, query rows and
column totals are checked by the harness and ignored, except that query
rows make a step a prefill step, whose step budget `ratio_ppm` decides
(spec/policies/knorm.md#at-prefill, spec/tensors.md#policies-that-read-keys).

spec/policies/knorm.md#how-it-works: when a position is admitted, each KV
head the kept set covers scores it `+0.0 - norm(key)`, with `norm` of
spec/elementary.md#reductions-over-vectors (`elementary.norm`: the squares
of the key's binary64 entries, exact for binary32 entries, summed from
channel 0 up into +0.0, one sqrt). The score is fixed at admission, so a
set keeps, per KV head it covers, one binary64 score per kept slot, and no
key. A zero key scores +0.0 (`0.0 - 0.0`), never -0.0; every score is
finite and at most +0.0.

spec/policies/knorm.md#several-kv-heads: a kept set (`granularity`,
spec/heads.md#kept-sets) covers the KV heads of its query heads
(`tensors.kv_range`); it ranks by the combined score of those KV heads'
scores, by `aggregation` (`base.combine`, KV head order), and a set of one
KV head by that head's score exactly. The ranking, ties, candidates (kept
slots before the recent window), the step budget (`budget`, or a prefill
step's ratio budget, or none at a decode step with `prefill_only` 1) and
the cut are those of every score policy (`ScorePolicy.evict`,
spec/harness.md#victims, spec/prefill.md#when-a-policy-evicts); the cut
reports combined scores, negative ones included.

knorm takes no trigger (`slack`, `interval`), no `block`, `block_score`,
`adaptive` or `safeguard_permille` (spec/policies/knorm.md#parameters):
each is unknown, so a step after admission always evicts by its step
budget.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..elementary import norm
from ..tensors import check_scenario_tensors, check_vector_values, check_vectors
from .base import (AGGREGATION, BUDGET, GRANULARITY, PREFILL_ONLY, RATIO_PPM, U32_MAX, Policy,
                   ScorePolicy, StepOutcome, combine)


def key_scores(keys) -> List[float]:
    """One KV head's scores of a step's admitted positions
    (spec/policies/knorm.md#how-it-works): `+0.0 - norm(key)` per key,
    `keys` holding one key (d binary32 entries, exact as Python floats) per
    admitted position, position ascending."""
    return [0.0 - norm(key) for key in keys]


class KnormPolicy(ScorePolicy):
    NAME = "knorm"
    # spec/policies/knorm.md#parameters, checked in this order (its
    # `recent_window` defaults to 0).
    PARAMS = (BUDGET, ("recent_window", 0, 0, U32_MAX - 1), GRANULARITY, AGGREGATION,
              PREFILL_ONLY, RATIO_PPM)
    # Not READS_ATTENTION: its kept sets are built from the keys' KV heads
    # (`tensors.key_sets`), not heads.KeptSet's per-query-head states.
    READS_ATTENTION = False
    READS_KEYS = True

    # The rules (spec/policies/knorm.md#parameters), in order, are
    # ScorePolicy.check_relations': `recent_window < budget` (`rule
    # recent_window budget`), then `ratio_ppm` above 0 needs `recent_window`
    # 0 (`rule ratio_ppm recent_window`).

    def __init__(self, params: dict, rng, kv_first: int = 0, kv_end: int = 1,
                 head_dim: Optional[int] = None) -> None:
        # Policy's, not BudgetPolicy's: knorm takes no trigger.
        Policy.__init__(self, params, rng)
        # The KV heads this set covers, [kv_first, kv_end) ascending
        # (spec/tensors.md#what-a-policy-sees), and d (None: a policy built
        # without a scenario's head_dim, which a direct call refuses).
        self.kv_first = kv_first
        self.kv_end = kv_end
        self.head_dim = head_dim
        # Per covered KV head, ascending: one binary64 score per kept slot.
        self.kv_scores = [np.zeros(0) for _ in range(kv_first, kv_end)]  # binary64

    def step_keys(self, first: int, count: int, keys: Sequence, m: Optional[int] = None) -> StepOutcome:
        """One step of this kept set (spec/policies/knorm.md#how-it-works):
        admit `count` positions from `first`, each scored from its keys, then
        evict by the step budget. `keys`: per KV head the set covers,
        ascending, the step's keys (`count` rows of d entries,
        spec/tensors.md#what-a-policy-sees). `m`: None at a decode step,
        else the prefill step's query rows per head."""
        query = len(self.kept)
        self.kept.extend(range(first, first + count))
        self.next_min = first + count
        for g, head_keys in enumerate(keys):
            # head_keys: a binary64 (count, d) array (tensors.check_vectors);
            # the scores, Python floats, become a binary64 array.
            self.kv_scores[g] = np.concatenate((self.kv_scores[g], np.asarray(key_scores(head_keys.tolist()))))
        victims, cut = self.evict(m)
        return StepOutcome(victims, len(self.kept), query, cut)

    def step(self, first, count, attention, queries=None, totals=None, total_rows=0, keys=None):
        """A direct call (spec/harness.md#refusals, "Called directly", checks
        1 to 7), then its keys (check 8, named since spec 0.18.0; the port
        checks them as a scenario's step, spec/tensors.md#checks, 2 and 3):
        with no `head_dim` (a policy not built for a scenario's keys)
        INVALID_HEADS `range head_dim`; then one entry per KV head the set
        covers, each of `count x d` values, `length keys`; then every entry
        finite, `value keys` (knorm's least `head_dim` is 1, which the
        scenario's range already gives). The attention and query rows,
        checked, are otherwise ignored."""
        prefill = self.check_direct(first, count, attention, queries, totals, total_rows)
        check_scenario_tensors(self.head_dim, None, False, True, False, 1, 1)
        gathered = check_vectors(0, count, keys or [], self.head_dim, self.kv_end - self.kv_first, "keys")
        check_vector_values(0, gathered, "keys")
        return self.step_keys(first, count, gathered, None if prefill is None else prefill[0])

    def step_unchecked(self, first, count, attention, prefill=None):
        raise TypeError("knorm reads keys: step it with step_keys (a scenario) or step(..., keys=...)")

    def scores(self) -> np.ndarray:
        """The set's combined score per kept slot
        (spec/policies/knorm.md#several-kv-heads): one KV head's scores as
        they are; several combined by `aggregation` in ascending KV head
        order (spec/heads.md#combining-heads-at-ranking-time)."""
        if len(self.kv_scores) == 1:
            return self.kv_scores[0]
        return combine(self.kv_scores, self.params["aggregation"])

    def remove_slots(self, keep) -> None:
        # keep: one bool per kept slot before the eviction (ScorePolicy.evict).
        self.kv_scores = [s[keep] for s in self.kv_scores]
