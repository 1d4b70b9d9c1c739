"""Multi-head scenarios: head counts, kept sets, combining heads (spec/heads.md).

A scenario with one query head never comes here: the harness runs the
single-head policy of the card directly (spec/heads.md: "a single-head
scenario ... means exactly what it meant before heads existed"). With
several heads, a policy that reads attention keeps one `KeptSet` per
granularity unit; each set holds one single-head policy object per head it
covers (that head's own state under the card's rule), all sharing the set's
kept positions, and ranks by the heads' scores combined per slot. With
`adaptive` 1 the sets share one budget and evict together, by one joint
ranking of their (set, position) pairs (spec/heads.md#head-adaptive-budgets,
spec/policies/adakv.md): `evict_shared`.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import INVALID_HEADS, Refusal, Subject
from .policies.base import StepOutcome, combine, rank  # noqa: F401 (combine: heads' rule)
from .blocks import blocks_to_evict, rank_blocks
from .prefill import step_budget
from .triggers import Trigger

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
        raise Refusal(
            INVALID_HEADS, Subject("range", ("query_heads",)),
            f"query_heads must be in [1, {MAX_HEADS}], got {query_heads}",
        )
    if not 1 <= kv_heads <= MAX_HEADS:
        raise Refusal(
            INVALID_HEADS, Subject("range", ("kv_heads",)), f"kv_heads must be in [1, {MAX_HEADS}], got {kv_heads}"
        )
    if query_heads % kv_heads != 0:
        raise Refusal(
            INVALID_HEADS, Subject("rule", ("kv_heads", "query_heads")),
            f"kv_heads must divide query_heads, got query_heads {query_heads}, kv_heads {kv_heads}"
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


def floor_of(budget: int, safeguard_permille: int) -> int:
    """The floor of each set under a shared budget
    (spec/heads.md#head-adaptive-budgets, step 4): `budget *
    safeguard_permille / 1000` in integers, raised to 1 if it is 0 and
    `safeguard_permille > 0`; 0 when `safeguard_permille` is 0."""
    floor = budget * safeguard_permille // 1000
    if floor == 0 and safeguard_permille > 0:
        floor = 1
    return floor


def kept_sets(cls, values: dict, query_heads: int, kv_heads: int) -> "KeptSets":
    """The kept sets of a policy that reads attention, in set order
    (spec/heads.md#kept-sets)."""
    ranges = sets_of(values["granularity"], query_heads, kv_heads)
    shared = values["adaptive"] == 1
    return KeptSets([KeptSet(cls, values, h0, h1, shared) for h0, h1 in ranges], values, shared)


class KeptSets(list):
    """A run's kept sets, in set order, and what they share.

    `shared`: `adaptive` is 1, the sets share one budget
    (spec/heads.md#head-adaptive-budgets): each set's `step` records and
    admits only, and `evict_shared` evicts for all of them. With one set this
    evicts exactly as the set would by itself (L = budget; a set keeping at
    least `budget` is never below the floor, which is at most `budget`), as
    the spec says: with one set `adaptive` changes nothing.
    """

    def __init__(self, sets, values: dict, shared: bool) -> None:
        super().__init__(sets)
        self.shared = shared
        self.budget = values["budget"]
        self.floor = floor_of(values["budget"], values["safeguard_permille"])


class KeptSet:
    """One kept set of a policy that reads attention (spec/heads.md#kept-sets).

    `heads[i]` is the single-head policy state of the set's i-th head
    (query head `first_head + i`); every one of them holds the set's kept
    list itself (one shared list), so its per-slot state stays parallel to it.

    `shared`: the set is one of sets sharing a budget (`KeptSets`); its
    `step` then records and admits only.
    """

    def __init__(self, cls, values: dict, first_head: int, end_head: int, shared: bool) -> None:
        self.cls = cls
        self.values = values
        self.first_head = first_head
        self.end_head = end_head
        self.budget = values["budget"]
        self.recent_window = values["recent_window"]
        self.aggregation = values["aggregation"]
        self.shared = shared
        self.kept: List[int] = []
        # The current step's number of query rows (None at a decode step).
        self.prefill_m: Optional[int] = None
        # Score policies never use their Rng (spec/policies/*.md#notes).
        self.heads = [cls(values, None) for _ in range(first_head, end_head)]
        for head in self.heads:
            head.kept = self.kept
        # spec/triggers.md#interval: every kept set has its own count.
        self.trigger = Trigger(values)

    def step(self, first: int, count: int, rows: Optional[np.ndarray], queries=None,
             totals=None) -> StepOutcome:
        """One step of spec/harness.md#the-decode-step, or of
        spec/prefill.md#the-prefill-step, for every head of the set.

        `rows`: None (null attention) or, per head of the set, its row
        gathered at the set's kept positions (spec/heads.md#what-each-head-records).
        `queries`: None at a decode step; at a prefill step (m, per head of
        the set its m query rows gathered at the set's kept positions after
        admission, spec/prefill.md#what-a-policy-sees).
        `totals`: None, or at a prefill step with column totals (R, per head
        of the set its totals gathered at the set's kept positions after
        admission, spec/prefill.md#column-totals); a head whose policy reads
        totals (h2o) records them instead of its query rows.
        A set sharing a budget evicts nothing here (step 1 of
        spec/heads.md#head-adaptive-budgets): `evict_shared` completes its record.
        """
        query = len(self.kept)
        if rows is not None:
            for head, row in zip(self.heads, rows):
                head.record(row)
        self.kept.extend(range(first, first + count))
        for head in self.heads:
            head.admitted(count)
            head.next_min = first + count
        self.prefill_m = None
        if queries is not None:
            m, per_head = queries
            self.prefill_m = m
            for i, (head, head_rows) in enumerate(zip(self.heads, per_head)):
                if totals is not None and head.READS_TOTALS:
                    total_rows, per_head_totals = totals
                    head.record_totals(total_rows, per_head_totals[i])
                else:
                    head.record_queries(m, head_rows)
        victims, cut = ([], []) if self.shared else self.evict_fired(count)
        return StepOutcome(victims, len(self.kept), query, cut)

    def evict_fired(self, count: int):
        """Evict if the step fires (spec/triggers.md#firing; `adaptive` 1,
        a shared budget, takes no trigger). `count`: the positions the step
        admitted."""
        if not self.trigger.fires(len(self.kept), count, self.prefill_m is not None):
            return [], []
        # spec/blocks.md#several-heads: with `block` above 1 the set evicts
        # whole closed blocks of its own slots.
        if self.values["block"] > 1:
            return self.evict_blocks()
        return self.evict()

    def plan(self) -> Tuple[int, int]:
        """(k, c): this step evicts k positions (none if k <= 0) from the
        candidates, kept slots [0, c) (the policy's eviction_plan: the step
        budget of spec/prefill.md#when-a-policy-evicts, and the prefill
        rule's candidates at a prefill step)."""
        return self.cls.eviction_plan(self.values, len(self.kept), self.prefill_m)

    def combined(self) -> np.ndarray:
        """The set's combined score per kept slot
        (spec/heads.md#combining-heads-at-ranking-time)."""
        scores = [np.asarray(head.scores(), dtype=np.float64) for head in self.heads]
        return scores[0] if len(scores) == 1 else combine(scores, self.aggregation)

    def evict(self):
        kept = self.kept
        k, c = self.plan()
        if k <= 0:
            return [], []
        combined = self.combined()
        victim_slots, victims, cut = rank(combined, kept, k, c)
        self.remove(victim_slots)
        return victims, cut

    def evict_blocks(self):
        """spec/blocks.md#ranking-blocks over this set's own blocks
        (spec/blocks.md#several-heads), ranked by the blocks' scores from
        the set's combined scores; `adaptive` 1 is refused with `block`
        above 1 (spec/blocks.md#rules), so the set evicts by itself."""
        n = len(self.kept)
        b = step_budget(self.values, n, self.prefill_m is not None)
        if b is None:  # a decode step with `prefill_only` 1
            return [], []
        block = self.values["block"]
        k = blocks_to_evict(n, b, block)
        if k <= 0:
            return [], []
        _, c = self.plan()
        victim_slots, victims, cut = rank_blocks(self.combined(), self.kept, k, c, block,
                                                 self.values["block_score"])
        self.remove(victim_slots)
        return victims, cut

    def remove(self, victim_slots) -> None:
        """Drops the given kept slots; every head of the set forgets them."""
        kept = self.kept
        keep = np.ones(len(kept), dtype=bool)
        keep[victim_slots] = False
        for i in sorted(victim_slots, reverse=True):
            del kept[i]
        for head in self.heads:
            head.remove_slots(keep)


def evict_shared(sets: KeptSets, outcomes: Sequence[StepOutcome]) -> None:
    """The shared budget's eviction (spec/heads.md#head-adaptive-budgets,
    steps 2 to 5), after every set has recorded and admitted the step.

    `outcomes[s]`: set s's record of the step from `KeptSet.step`; its
    victims, kept count and cut are filled in here. Does nothing unless the
    sets share a budget.
    """
    if not sets.shared:
        return
    budget = sets.budget
    floor = sets.floor
    counts = [len(ks.kept) for ks in sets]
    # 2. The layer budget: L = budget * S kept positions in all; `excess`
    # pairs go (none when the sets keep at most L: the walk stops at once).
    excess = sum(counts) - budget * len(sets)
    # 3. The candidates: every set's kept slots outside its own recent
    # window (slots [0, n - recent_window), none when n <= recent_window;
    # at a prefill step, the prefill rule's candidates: tova's
    # `protect_newest` leaves out the newest slot), each with its set's
    # combined score.
    scores, positions, set_ids, slots = [], [], [], []
    for s, ks in enumerate(sets):
        slot = np.arange(counts[s])
        candidate = slot < ks.plan()[1]
        scores.append(ks.combined()[candidate])
        positions.append(np.asarray(ks.kept)[candidate])
        set_ids.append(np.full(counts[s], s)[candidate])
        slots.append(slot[candidate])
    scores = np.concatenate(scores)
    # int64 (binary64 if a set is empty, which only a floor of 0 allows:
    # positions are below 2^32, exact either way).
    positions = np.concatenate(positions)
    set_ids = np.concatenate(set_ids)
    slots = np.concatenate(slots)
    # Ranked by score ascending, then position, then set (a total order: a
    # set holds a position once). lexsort compares the binary64 scores
    # exactly; its last key is the primary one.
    order = np.lexsort((set_ids, positions, scores))
    # 4. The walk: a pair goes unless its set would keep fewer than `floor`;
    # it stops once `excess` pairs are gone.
    remaining = list(counts)
    taken = [0] * len(sets)
    evicted = 0
    for s in set_ids[order].tolist():
        if evicted >= excess:
            break
        if remaining[s] - 1 < floor:
            continue
        remaining[s] -= 1
        taken[s] += 1
        evicted += 1
    # A set's pairs come in the joint order in its own rank order, and once
    # one of them is kept at the floor every later one is too: its victims
    # are the first `taken[s]` of its pairs in the joint order.
    # 5. The report: victims ascending; the cut is the set's victims in the
    # joint order, then up to 4 of its next candidates in that order. A set
    # that evicts nothing records no cut.
    for s, ks in enumerate(sets):
        if taken[s] == 0:
            continue
        own = order[set_ids[order] == s][:taken[s] + 4]
        cut = [(int(positions[i]), float(scores[i])) for i in own]
        victim_slots = slots[own[:taken[s]]].tolist()
        victims = sorted(ks.kept[i] for i in victim_slots)
        ks.remove(victim_slots)
        out = outcomes[s]
        out.victims = victims
        out.kept_count = len(ks.kept)
        out.cut = cut
