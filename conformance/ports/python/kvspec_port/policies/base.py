"""The policy step shared by every policy (spec/harness.md, spec/prefill.md).

A decode step records (spec/harness.md#the-decode-step), admits, then evicts
`n - budget` victims from one ranking of the post-admission state
(spec/harness.md#victims). A prefill step (one that carries query rows,
spec/prefill.md#the-prefill-step) admits, records the query rows by the
policy's prefill rule, then evicts by the step budget
(spec/prefill.md#when-a-policy-evicts), with the scores and candidates of
the prefill rule. With column totals (spec/prefill.md#column-totals) a
policy that reads them (h2o) records them instead of the query rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from ..errors import ATTENTION_LENGTH, ATTENTION_VALUE, INVALID_PARAMETER, POSITION, Refusal, Subject
from ..f32 import weight_ok
from .. import spans as spans_mod
from ..prefill import PREFILL_ONLY, RATIO_PPM, check_prefill_relations, step_budget  # noqa: F401
from ..triggers import Trigger
from .. import blocks

import numpy as np

MAX_POSITION = (1 << 32) - 1
U32_MAX = (1 << 32) - 1


@dataclass
class StepOutcome:
    victims: List[int]
    kept_count: int
    query_cache_position: int
    # (position, binary64 score) in rank order (spec/vectors.md#the-cut).
    cut: List[Tuple[int, float]] = field(default_factory=list)
    # A run with more than one kept set (spec/heads.md#the-eviction-log): one
    # record per set, in set order; the fields above are then empty.
    sets: List["StepOutcome"] = field(default_factory=list)
    # With `spans` 1 (spec/spans.md#the-log): one flattened first, last
    # range list per query, ascending; the held set's runs as
    # (first, last, id). None with `spans` 0 (the record carries neither).
    spans: Optional[List[List[int]]] = None
    held: Optional[List[Tuple[int, int, int]]] = None


class Policy:
    """Base of every policy. Subclasses set NAME and PARAMS.

    PARAMS: the card's parameter table, in the card's order:
    (name, default, low, high), ranges inclusive.
    """

    NAME = ""
    PARAMS: Sequence[Tuple[str, int, int, int]] = ()
    # Whether the policy reads attention: only those take `granularity`,
    # `aggregation`, `adaptive` and `safeguard_permille` and keep one kept
    # set per granularity unit (spec/heads.md#kept-sets); the others keep
    # one set whatever the heads.
    READS_ATTENTION = False
    # spec/prefill.md#column-totals: "only `h2o` reads them"; every other
    # policy ignores a step's column totals (they are checked all the same).
    READS_TOTALS = False
    # One kept set whatever the heads, reading every query head's rows
    # (`openvino`, spec/policies/openvino.md: its heads' rows summed): the
    # harness calls its `step_heads` with every head's rows gathered at the
    # set's kept positions. Not READS_ATTENTION: no `granularity`.
    SUMS_HEADS = False
    # spec/tensors.md#policies-that-read-keys: a policy that reads a
    # scenario's keys (`knorm`, `keydiff`, `lagkv`) and no attention; the
    # harness builds its kept sets with `harness.key_sets` and hands each its
    # KV heads' keys, and, to one that reads values as well (`lagkv`, spec
    # 0.18.0), its KV heads' values.
    READS_KEYS = False
    READS_VALUES = False
    # The least `head_dim` and `value_dim` its card names
    # (spec/tensors.md#checks, 1.5 and 1.6): below it, INVALID_HEADS
    # `range head_dim` (`range value_dim`) before the first step.
    MIN_HEAD_DIM = 1
    MIN_VALUE_DIM = 1

    def __init__(self, params: dict, rng) -> None:
        # Parameters absent from `params` take their defaults (a policy built
        # directly, in tests, may name only some).
        self.params = {**{p[0]: p[1] for p in self.PARAMS}, **params}
        self.rng = rng
        self.kept: List[int] = []
        self.next_min = 0  # every admitted position is below this

    # -- configuration (spec/harness.md#configuration) ----------------------
    @classmethod
    def check_relations(cls, values: dict) -> None:
        """Rules relating parameters, in the card's order."""

    # -- one step ------------------------------------------------------------
    def step(self, first: int, count: int, attention: Optional[Sequence[float]],
             queries: Optional[Sequence[Sequence[float]]] = None,
             totals: Optional[Sequence[float]] = None, total_rows: int = 0) -> StepOutcome:
        """Policy::Step with explicit positions: validate, then run.

        `queries`: None (a decode step) or the step's query rows, already
        gathered at the kept positions after admission
        (spec/prefill.md#what-a-policy-sees): row j of m has n - m + 1 + j
        weights, n the kept count after admission.
        `totals`, `total_rows`: None and 0 (no column totals) or the step's
        column totals gathered likewise, one binary64 per kept position
        after admission, over the step's last `total_rows` queries
        (spec/prefill.md#column-totals).
        """
        return self.step_unchecked(first, count, attention,
                                   self.check_direct(first, count, attention, queries, totals, total_rows))

    def check_direct(self, first: int, count: int, attention, queries=None, totals=None,
                     total_rows: int = 0):
        """The checks of a direct call (`step`), in order; raises Refusal.
        Returns the step's prefill argument of `step_unchecked`: None (a
        decode step), (m, rows) or (m, rows, (total_rows, totals))."""
        # spec/harness.md#refusals, "Called directly".
        if count < 1:
            raise Refusal(
                POSITION, Subject("range", ("admit",)), f"a step must admit at least one position, got {count}"
            )
        if first < self.next_min:
            raise Refusal(
                POSITION, Subject("rule", ("admit",)),
                f"position {first} is not above every position admitted before",
            )
        if first + count - 1 > MAX_POSITION:
            raise Refusal(POSITION, Subject("rule", ("admit",)), "positions run past 2^32 - 1")
        if attention is not None:
            if len(attention) != len(self.kept):
                raise Refusal(
                    ATTENTION_LENGTH,
                    Subject("length", ("attention",)),
                    f"attention has {len(attention)} weights, {len(self.kept)} positions are kept",
                )
            for i, w in enumerate(attention):
                if not weight_ok(w):
                    raise Refusal(ATTENTION_VALUE, Subject("value", ("attention",)), f"weight {i} is {w!r}")
        prefill = None
        if queries is not None:
            # The gathered counterpart of spec/prefill.md#checks (an API
            # detail: through a scenario the harness checks the rows).
            m = len(queries)
            n = len(self.kept) + count
            if attention is not None or not 1 <= m <= count:
                raise Refusal(
                    ATTENTION_LENGTH, Subject("length", ("queries",)), f"{m} query rows for a step admitting {count}"
                )
            for j, q in enumerate(queries):
                if len(q) != n - m + 1 + j:
                    raise Refusal(
                        ATTENTION_LENGTH, Subject("length", ("queries",)),
                        f"query row {j} has {len(q)} weights, want {n - m + 1 + j}",
                    )
            for j, q in enumerate(queries):
                for i, w in enumerate(q):
                    if not weight_ok(w):
                        raise Refusal(
                            ATTENTION_VALUE, Subject("value", ("queries",)), f"query row {j}, weight {i} is {w!r}"
                        )
            prefill = (m, [np.asarray(q, dtype=np.float64) for q in queries])
        if totals is not None or total_rows != 0:
            # spec/harness.md#refusals, called directly, check 7 (the
            # gathered counterpart of spec/prefill.md#their-checks): beside
            # query rows, `total_rows` 1 to `count`, one total per kept
            # position after admission; then each total.
            n = len(self.kept) + count
            have = 0 if totals is None else len(totals)
            if queries is None or totals is None or not 1 <= total_rows <= count or have != n:
                raise Refusal(
                    ATTENTION_LENGTH,
                    Subject("length", ("totals",)),
                    f"column totals need query rows beside them, total_rows 1..{count} and {n} "
                    f"values; got total_rows {total_rows}, {have} values",
                )
            sums = np.asarray(totals, dtype=np.float64)
            bad = ~np.isfinite(sums) | np.signbit(sums)  # finite, sign bit clear (binary64)
            if bad.any():
                i = int(np.argmax(bad))  # from index 0 up
                raise Refusal(ATTENTION_VALUE, Subject("value", ("totals",)), f"column total {i} is {sums[i]!r}")
            prefill = prefill + ((total_rows, sums),)
        return prefill

    def step_unchecked(self, first: int, count: int, attention, prefill=None) -> StepOutcome:
        """One step. `prefill`: None for a decode step; for a prefill step
        (m, rows) or (m, rows, totals): m the number of query rows per head,
        rows this policy's gathered query rows
        (spec/prefill.md#what-a-policy-sees), or None for a policy that reads
        no attention (spec/prefill.md#the-prefill-step: positional policies
        do not read them); totals, when the step has column totals, is
        (R, sums): `total_rows` and this policy's gathered totals, one
        binary64 per kept position after admission
        (spec/prefill.md#column-totals)."""
        query = len(self.kept)
        if attention is not None:
            self.record(attention)
        # spec/spans.md#when-room-is-made: `evict_at` 1 or 2 evicts before
        # admitting, and nothing after; so does `context_shift` 1, only when
        # the step does not fit (spec/spans.md#context-shift).
        evict_after = self.params.get("evict_at", 0) == 0 and self.params.get("context_shift", 0) == 0
        before = [] if evict_after else self.evict_before(count)
        # spec/prefill.md#the-prefill-step: 1. admit, 2. record the query
        # rows, 3. evict by the step budget.
        self.kept.extend(range(first, first + count))
        self.admitted(count)
        self.next_min = first + count
        # spec/spans.md#terms: the held set is the kept positions now, after
        # admission and before any eviction after it.
        record = None
        if self.params.get("spans", 0) == 1:
            record = spans_mod.step_record(self.kept, first, count, self.sinks_held(), self.params)
        m = None
        if prefill is not None:
            m, rows = prefill[:2]
            totals = prefill[2] if len(prefill) > 2 else None
            if totals is not None and self.READS_TOTALS:
                # spec/prefill.md#column-totals: a policy that reads totals
                # reads them instead of the query rows.
                self.record_totals(*totals)
            elif rows is not None:
                self.record_queries(m, rows)
        # spec/spans.md#the-log: `victims` holds every position evicted at
        # the step, before or after admission (never both).
        victims, cut = self.evict_fired(m, count) if evict_after else (before, [])
        out = StepOutcome(victims, len(self.kept), query, cut)
        if record is not None:
            out.spans, out.held = record
        return out

    # -- hooks ---------------------------------------------------------------
    def record(self, attention: Sequence[float]) -> None:
        """Record one attention vector, gathered in kept order."""

    def admitted(self, count: int) -> None:
        """The last `count` kept positions were just admitted."""

    def record_queries(self, m: int, rows: Sequence[np.ndarray]) -> None:
        """Record a prefill step's query rows (m rows, gathered at the kept
        positions after admission) by the card's "At prefill" rule."""

    def record_totals(self, total_rows: int, totals: np.ndarray) -> None:
        """Record a prefill step's column totals (over its last `total_rows`
        queries, gathered at the kept positions after admission) instead of
        its query rows; called only when READS_TOTALS
        (spec/prefill.md#column-totals)."""

    def evict_fired(self, m: Optional[int], count: int) -> Tuple[List[int], List[Tuple[int, float]]]:
        """Evict after admission if the step fires (spec/triggers.md#firing);
        `count`: the positions the step admitted. A policy without a budget
        (`full`) evicts nothing; `BudgetPolicy` asks its trigger."""
        return [], []

    def evict(self, m: Optional[int] = None) -> Tuple[List[int], List[Tuple[int, float]]]:
        """Evict after admission. `m`: None at a decode step, else the
        number of query rows of the prefill step (per head)."""
        return [], []

    def evict_before(self, count: int) -> List[int]:
        """Evict before admitting a step of `count` positions, with
        `evict_at` 1 or 2 (spec/spans.md#when-room-is-made) or
        `context_shift` 1 (spec/spans.md#context-shift); returns the
        victims, ascending."""
        return []

    def sinks_held(self) -> int:
        """The kept sinks (spec/spans.md#span-rules), the first kept slots."""
        return 0


class BudgetPolicy(Policy):
    """A policy with a budget (spec/harness.md#budget), and so with `slack`
    and `interval` (spec/triggers.md#parameters)."""

    def __init__(self, params: dict, rng) -> None:
        super().__init__(params, rng)
        # spec/triggers.md#firing: whether a step evicts after admission.
        self.trigger = Trigger(self.params)

    def evict_fired(self, m, count):
        # spec/triggers.md#firing: a decode step that does not fire evicts
        # nothing, whatever it keeps; a prefill step evicts by spec/prefill.md.
        if not self.trigger.fires(len(self.kept), count, m is not None):
            return [], []
        # spec/blocks.md: with `block` above 1 a step evicts whole closed
        # blocks; with `block` 1, every position is its own block and the
        # step evicts as it did before 0.13.0.
        if self.params["block"] > 1:
            return self.evict_blocks(m)
        return self.evict(m)

    def evict_blocks(self, m: Optional[int]) -> Tuple[List[int], List[Tuple[int, float]]]:
        """Evict whole closed blocks after admission (spec/blocks.md), with
        `block` above 1. `m`: None at a decode step, else the number of
        query rows of the prefill step (per head)."""
        raise NotImplementedError

    @property
    def budget(self) -> int:
        return self.params["budget"]

    def step_budget(self, m: Optional[int]) -> Optional[int]:
        """spec/prefill.md#when-a-policy-evicts (`budget` for a policy
        without the prefill parameters)."""
        return step_budget(self.params, len(self.kept), m is not None)


class RecentWindowMixin:
    @classmethod
    def check_relations(cls, values: dict) -> None:
        # spec/harness.md#protected-positions
        if not values["recent_window"] < values["budget"]:
            raise Refusal(
                INVALID_PARAMETER,
                Subject("rule", ("recent_window", "budget")),
                f"{cls.NAME}: recent_window must be below budget, got recent_window "
                f"{values['recent_window']}, budget {values['budget']}",
            )


BUDGET = ("budget", 512, 1, U32_MAX)
RECENT_WINDOW = ("recent_window", 16, 0, U32_MAX - 1)
# spec/heads.md#parameters: listed after each policy's own parameters.
GRANULARITY = ("granularity", 1, 0, 2)  # 0 layer, 1 kv_head, 2 query_head
AGGREGATION = ("aggregation", 0, 0, 2)  # 0 mean, 1 max, 2 sum
# spec/heads.md#parameters, after `aggregation`: the shared budget (AdaKV,
# spec/heads.md#head-adaptive-budgets).
ADAPTIVE = ("adaptive", 0, 0, 1)
SAFEGUARD_PERMILLE = ("safeguard_permille", 200, 0, 1000)
# spec/prefill.md#when-a-policy-evicts: PREFILL_ONLY, RATIO_PPM, after those.


class ScorePolicy(RecentWindowMixin, BudgetPolicy):
    """A score-based policy (h2o, tova, snapkv): spec/harness.md#victims.

    Subclasses keep per-slot state parallel to `kept` and implement
    `scores()` (binary64 per kept slot; at a prefill step, the prefill
    rule's) and `remove_slots(keep_mask)`.
    """

    PARAMS = (BUDGET, RECENT_WINDOW, GRANULARITY, AGGREGATION, ADAPTIVE, SAFEGUARD_PERMILLE,
              PREFILL_ONLY, RATIO_PPM)
    READS_ATTENTION = True

    @classmethod
    def check_relations(cls, values: dict) -> None:
        cls.card_relations(values)  # the card's own rules, in its order
        check_prefill_relations(cls.NAME, values)  # then spec/prefill.md's

    @classmethod
    def card_relations(cls, values: dict) -> None:
        RecentWindowMixin.check_relations.__func__(cls, values)  # recent_window < budget

    @classmethod
    def eviction_plan(cls, params: dict, n: int, m: Optional[int]) -> Tuple[int, int]:
        """(k, c) for a kept set keeping n positions after admission: the
        step evicts k positions (none if k <= 0) from its candidates, kept
        slots [0, c) (spec/harness.md#victims with the step budget of
        spec/prefill.md#when-a-policy-evicts). `m`: None at a decode step,
        else the prefill step's number of query rows."""
        b = step_budget(params, n, m is not None)
        if b is None:
            return 0, 0
        return n - b, n - params["recent_window"]

    def evict_blocks(self, m=None):
        # spec/blocks.md#ranking-blocks: the candidate blocks lie in the
        # card's candidates, slots [0, c) (before the recent window; at a
        # prefill step, tova's newest left out); k blocks go by block score.
        n = len(self.kept)
        b = self.step_budget(m)
        if b is None:  # a decode step with `prefill_only` 1
            return [], []
        block = self.params["block"]
        k = blocks.blocks_to_evict(n, b, block)
        if k <= 0:
            return [], []
        _, c = self.eviction_plan(self.params, n, m)
        scores = np.asarray(self.scores(), dtype=np.float64)
        victim_slots, victims, cut = blocks.rank_blocks(scores, self.kept, k, c, block,
                                                        self.params["block_score"])
        keep = np.ones(n, dtype=bool)
        keep[victim_slots] = False
        for i in reversed(victim_slots):  # ascending slots, deleted from the last
            del self.kept[i]
        self.remove_slots(keep)
        return victims, cut

    def scores(self) -> List[float]:
        raise NotImplementedError

    def remove_slots(self, keep: List[bool]) -> None:
        raise NotImplementedError

    def evict(self, m=None):
        n = len(self.kept)
        k, c = self.eviction_plan(self.params, n, m)
        if k <= 0:
            return [], []
        scores = np.asarray(self.scores(), dtype=np.float64)
        kept = self.kept
        victim_slots, victims, cut = rank(scores, kept, k, c)
        keep = np.ones(n, dtype=bool)
        keep[victim_slots] = False
        for i in sorted(victim_slots, reverse=True):
            del kept[i]
        self.remove_slots(keep)
        return victims, cut


def rank(scores, kept: List[int], k: int, m: int):
    """The ranking of spec/harness.md#victims over the candidates, slots [0, m).

    `scores`: a binary64 array, one per kept slot. Returns the victims' slots
    (rank order), the victims (ascending) and the cut (spec/vectors.md#the-cut):
    the victims and up to 4 more candidates in rank order, with their scores.
    """
    want = min(m, k + 4)
    # Rank: score ascending, then position ascending (a total order,
    # spec/harness.md#victims). lexsort compares the binary64 scores
    # exactly (no arithmetic); positions are distinct, so ties on the
    # score are broken by position and the order is unique.
    ranked = np.lexsort((np.asarray(kept[:m], dtype=np.int64), scores[:m]))[:want].tolist()
    victim_slots = ranked[:k]
    cut = [(kept[i], float(scores[i])) for i in ranked]
    victims = sorted(kept[i] for i in victim_slots)
    return victim_slots, victims, cut


# spec/heads.md#combining-heads-at-ranking-time: `aggregation` 0 mean, 1 max,
# 2 sum. Here, not in heads.py, so that a policy (knorm combines its KV
# heads) can use it without importing heads, which imports the policies.
def combine(scores: Sequence[np.ndarray], aggregation: int) -> np.ndarray:
    """The combined score per slot (spec/heads.md#combining-heads-at-ranking-time).

    `scores[h]`: head h's binary64 score per kept slot, heads in ascending
    order. Elementwise over slots; across heads an explicit loop in head order.
    """
    m = len(scores)
    if aggregation == 1:  # max
        # A maximum selects one operand exactly; scores are never NaN.
        out = scores[0]
        for x in scores[1:]:
            out = np.maximum(out, x)
        return out
    s = np.zeros(len(scores[0]), dtype=np.float64)  # starting from +0.0
    for x in scores:  # ((0.0 + x_0) + x_1) + ... + x_{m-1}
        s = s + x
    if aggregation == 2:  # sum
        return s
    if aggregation == 0:  # mean
        # One correctly rounded binary64 division by m (exact as a binary64).
        return s / np.float64(m)
    raise ValueError(f"aggregation {aggregation}")
