"""lagkv: evicts, partition by partition, the positions whose keys and
values spread least once scaled into the next partition's range
(spec/policies/lagkv.md, spec 0.18.0).

kvpress's LagKVPress, the first policy that reads a scenario's values as
well as its keys (spec/tensors.md). Like knorm and keydiff it reads no
attention: a step's rows, query rows and column totals are checked by the
harness and ignored, except that query rows make a step a prefill step,
whose step budget `ratio_ppm` decides (spec/policies/lagkv.md#at-prefill).
Its kept sets and the combination of a set's KV heads are knorm's
(spec/policies/lagkv.md#several-kv-heads): the class is knorm's with its
own parameters, no recent window, and another score.

spec/policies/lagkv.md#how-it-works, in binary64 with spec/elementary.md's
`exp`, `mean` and `std` (every sum in index order from +0.0):

- the set keeps, per KV head it covers, each kept slot's key (d binary64
  entries, exact binary32 values) and value (e entries), and forgets them
  with the slot: which slots a slot is compared with changes as the cache
  does (spec/tensors.md#what-a-policy-sees).
- at a step that evicts, after the step's admissions, per KV head, over
  the `m` kept slots in ascending order (`head_scores`): a short cache
  (`m < sinks + 2 lag`) scores its sinks 1.0 and slot i `(i - sinks) / (m
  - sinks)`; otherwise `P = floor((m - sinks) / lag)` partitions of `lag`
  slots follow the sinks, the sinks, the last partition and the slots
  after it score 1.0, and partition j < P - 1 is judged against partition
  j + 1 (`judge`): each tensor scaled channel by channel into the
  reference's range (a constant channel to +0.0), its `std(y, 1)`
  (`spreads`), a softmax over the partition (`softmax`), the mean of the
  key's and value's weights (`a`); a slot scores its rank in its
  partition by (a, slot) over `lag`, or with `cross_scoring` 1 `a`
  itself.

Every slot is a candidate (lagkv has no recent window); the ranking, ties,
the step budget and the cut are those of every score policy
(`ScorePolicy.evict`); the cut reports combined scores, in [0, 1].
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..elementary import exp, std
from ..prefill import step_budget
from ..tensors import check_least, check_vector_values, check_vectors
from .base import AGGREGATION, BUDGET, GRANULARITY, PREFILL_ONLY, RATIO_PPM, U32_MAX, StepOutcome, combine
from .knorm import KnormPolicy

# spec/policies/lagkv.md#parameters: `lag` in [1, 2^20].
MAX_LAG = 1 << 20


def spreads(part: Sequence[Sequence[float]], reference: Sequence[Sequence[float]]) -> List[float]:
    """One tensor's spread per vector of a judged partition
    (spec/policies/lagkv.md#how-it-works, 3): per channel c, `lo[c]` and
    `hi[c]` the least and greatest entry c of the reference's vectors; each
    vector x scaled to `y[c] = (x[c] - lo[c]) / (hi[c] - lo[c])` (one
    subtraction and one division in binary64), `+0.0` when `hi[c] =
    lo[c]`; its spread `std(y, 1)`."""
    dim = len(reference[0])
    lo = [min(r[c] for r in reference) for c in range(dim)]
    hi = [max(r[c] for r in reference) for c in range(dim)]
    out = []
    for x in part:
        y = [0.0 if hi[c] == lo[c] else (x[c] - lo[c]) / (hi[c] - lo[c]) for c in range(dim)]
        out.append(std(y, 1))
    return out


def softmax(s: Sequence[float]) -> List[float]:
    """spec/policies/lagkv.md#how-it-works, 4: `mx` the greatest of `s`,
    `t[i] = exp(s[i] - mx)` (elementary.exp), `z` the sum of `t` in order
    from +0.0, `w[i] = t[i] / z`."""
    mx = max(s)
    t = [exp(x - mx) for x in s]
    z = 0.0
    for x in t:
        z = z + x
    return [x / z for x in t]


def judge(keys: Sequence[Sequence[float]], values: Sequence[Sequence[float]],
          ref_keys: Sequence[Sequence[float]], ref_values: Sequence[Sequence[float]]) -> List[float]:
    """A judged partition's judgements `a[i] = (wk[i] + wv[i]) / 2`
    (spec/policies/lagkv.md#how-it-works, 5), `wk` the softmax of its keys'
    spreads against the reference's keys, `wv` of its values'."""
    wk = softmax(spreads(keys, ref_keys))
    wv = softmax(spreads(values, ref_values))
    return [(k + v) / 2.0 for k, v in zip(wk, wv)]


def ranks(a: Sequence[float]) -> List[int]:
    """Each slot's rank in its partition (spec/policies/lagkv.md#how-it-works,
    6): the number of slots before it when sorted by (a, slot) ascending."""
    order = sorted(range(len(a)), key=lambda i: (a[i], i))
    rank = {i: r for r, i in enumerate(order)}
    return [rank[i] for i in range(len(a))]


def head_scores(keys: Sequence[Sequence[float]], values: Sequence[Sequence[float]], sinks: int, lag: int,
                cross_scoring: int) -> List[float]:
    """One KV head's score per kept slot (spec/policies/lagkv.md#how-it-works),
    `keys` and `values` one per kept slot in ascending order (slot 0 the
    oldest)."""
    m = len(keys)
    if m < sinks + 2 * lag:
        # 1. Short cache: integers converted exactly, one division (Python's
        # int / int is the correctly rounded quotient; both below 2^53).
        return [1.0 if i < sinks else (i - sinks) / (m - sinks) for i in range(m)]
    # 2. Partitions: P >= 2 of `lag` slots after the sinks; everything but
    # partitions 0 .. P-2 scores 1.0.
    p = (m - sinks) // lag
    out = [1.0] * m
    for j in range(p - 1):
        s0 = sinks + j * lag
        r0 = s0 + lag
        a = judge(keys[s0:r0], values[s0:r0], keys[r0:r0 + lag], values[r0:r0 + lag])
        if cross_scoring == 1:
            scores = a
        else:
            scores = [r / lag for r in ranks(a)]  # one division each
        out[s0:r0] = scores
    return out


class LagKvPolicy(KnormPolicy):
    NAME = "lagkv"
    # spec/policies/lagkv.md#parameters, checked in this order.
    PARAMS = (BUDGET, ("sinks", 4, 0, U32_MAX - 1), ("lag", 128, 1, MAX_LAG), ("cross_scoring", 0, 0, 1),
              GRANULARITY, AGGREGATION, PREFILL_ONLY, RATIO_PPM)
    # READS_ATTENTION (False) and READS_KEYS (True) are knorm's; lagkv
    # reads values too, and both at least 2 entries long: `std(y, 1)`
    # divides by d - 1 (spec/tensors.md#checks, 1.5 and 1.6).
    READS_VALUES = True
    MIN_HEAD_DIM = 2
    MIN_VALUE_DIM = 2

    @classmethod
    def card_relations(cls, values: dict) -> None:
        # spec/policies/lagkv.md#parameters: "No rule relates them" (no
        # recent_window); spec/prefill.md's rules follow (ScorePolicy's
        # check_relations), none of which applies without recent_window and
        # adaptive.
        pass

    @classmethod
    def eviction_plan(cls, params: dict, n: int, m: Optional[int]):
        # Every kept slot is a candidate: no recent window; the sinks and
        # newest partition are protected by their score 1.0 alone.
        b = step_budget(params, n, m is not None)
        return (0 if b is None else n - b), n

    def __init__(self, params: dict, rng, kv_first: int = 0, kv_end: int = 1,
                 head_dim: Optional[int] = None, value_dim: Optional[int] = None) -> None:
        super().__init__(params, rng, kv_first, kv_end, head_dim)
        self.value_dim = value_dim
        # Per covered KV head, ascending: the key and the value (binary64
        # entries, exact binary32 values) of each kept slot, kept order.
        covered = range(kv_first, kv_end)
        self.kv_keys: List[List[List[float]]] = [[] for _ in covered]
        self.kv_values: List[List[List[float]]] = [[] for _ in covered]

    def step_tensors(self, first: int, count: int, keys: Sequence, values: Sequence,
                     m: Optional[int] = None) -> StepOutcome:
        """One step of this kept set (spec/policies/lagkv.md#how-it-works):
        admit `count` positions from `first`, each with its key and value
        per KV head the set covers, then evict by the step budget. `keys`,
        `values`: per KV head the set covers, ascending, a binary64 (count,
        d) and (count, e) array (spec/tensors.md#what-a-policy-sees). `m`:
        None at a decode step, else the prefill step's query rows per head."""
        query = len(self.kept)
        self.kept.extend(range(first, first + count))
        self.next_min = first + count
        for g in range(len(self.kv_keys)):
            self.kv_keys[g].extend(keys[g].tolist())
            self.kv_values[g].extend(values[g].tolist())
        victims, cut = self.evict(m)
        return StepOutcome(victims, len(self.kept), query, cut)

    def step_keys(self, first, count, keys, m=None):
        raise TypeError("lagkv reads keys and values: step it with step_tensors (a scenario) or "
                        "step(..., keys=..., values=...)")

    def step_unchecked(self, first, count, attention, prefill=None):
        raise TypeError("lagkv reads keys and values: step it with step_tensors (a scenario) or "
                        "step(..., keys=..., values=...)")

    def step(self, first, count, attention, queries=None, totals=None, total_rows=0, keys=None, values=None):
        """A direct call (spec/harness.md#refusals, "Called directly",
        checks 1 to 8): checks 1 to 7, then the keys: with no `head_dim` (a
        policy not built for a scenario's keys) INVALID_HEADS `range
        head_dim`, as knorm's direct call; one entry per KV head the set
        covers, each of `count x d` values, `length keys`; `head_dim` at
        least 2, `range head_dim`; every entry finite, `value keys`; then
        the same for values with `value_dim`."""
        prefill = self.check_direct(first, count, attention, queries, totals, total_rows)
        covered = self.kv_end - self.kv_first
        gathered = []
        for dim, given, field, name, least in ((self.head_dim, keys, "keys", "head_dim", self.MIN_HEAD_DIM),
                                               (self.value_dim, values, "values", "value_dim",
                                                self.MIN_VALUE_DIM)):
            check_least(dim, 1, name)  # present
            vectors = check_vectors(0, count, given or [], dim, covered, field)
            check_least(dim, least, name)
            check_vector_values(0, vectors, field)
            gathered.append(vectors)
        return self.step_tensors(first, count, gathered[0], gathered[1], None if prefill is None else prefill[0])

    def scores(self) -> np.ndarray:
        """The set's combined score per kept slot, computed now from every
        kept slot's key and value (spec/policies/lagkv.md#how-it-works): one
        KV head's scores as they are; several combined by `aggregation` in
        ascending KV head order (spec/policies/lagkv.md#several-kv-heads,
        spec/heads.md#combining-heads-at-ranking-time). The partitions are
        the set's kept slots, the same for every KV head."""
        p = self.params
        # Python floats: a binary64 array.
        per_head = [np.asarray(head_scores(k, v, p["sinks"], p["lag"], p["cross_scoring"]))
                    for k, v in zip(self.kv_keys, self.kv_values)]
        if len(per_head) == 1:
            return per_head[0]
        return combine(per_head, p["aggregation"])

    def remove_slots(self, keep) -> None:
        # keep: one bool per kept slot before the eviction (ScorePolicy.evict);
        # an evicted slot's key and value go with it.
        self.kv_keys = [[x for x, k in zip(xs, keep) if k] for xs in self.kv_keys]
        self.kv_values = [[x for x, k in zip(xs, keep) if k] for xs in self.kv_values]
