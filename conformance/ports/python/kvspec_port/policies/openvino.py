"""openvino: OpenVINO GenAI's block eviction (spec/policies/openvino.md,
spec 0.14.0).

One kept set whatever the scenario's heads (the card takes no
`granularity`): every step's rows are the heads' rows, summed per slot.
The start area, the first `sinks` kept slots, holds no state; every other
kept slot is tracked from the first registration that covers it with
`acc` (a binary64 sum) and `count` (the steps it is taken to have been
seen). `seen` counts the query rows registered towards the window,
saturating at `obs_window`.

A step admits first and records nothing before (spec/policies/openvino.md#how-it-works):

- a prefill step (query rows, or column totals beside them) registers its
  scores with `k` its query rows per head (`total_rows` with totals) and
  never evicts;
- a decode step with a row (one per head) registers its scores with
  `k` = 1, then evicts whole closed blocks once `n >= budget + block`;
- a step with null attention registers nothing and evicts nothing.

The harness hands this policy every query head's rows gathered at its one
set's kept positions (`step_heads`); a direct call (`Policy.step`) and a
single-head trace give one head's row (`step_unchecked`).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from ..blocks import SUM, block_scores, check_block_relations
from ..errors import INVALID_PARAMETER, Refusal, Subject
from .base import U32_MAX, Policy, StepOutcome


def forward_max_pool(xs: np.ndarray, w: int) -> np.ndarray:
    """spec/policies/openvino.md#registering, 3: u[i] = max(xs[i], ...,
    xs[min(i + w, len) - 1]), a forward window of `w` slots cut at the last
    one. Exact (a maximum selects one operand); by doubling: level p holds
    the maximum over 2^p slots, padded past the end with -inf (every score
    is >= +0.0, so the padding never wins), and two overlapping windows of
    the largest power of two <= w cover w slots."""
    size = len(xs)
    w = min(w, size)
    if w <= 1:
        return xs.copy()
    cur = np.concatenate((xs, np.full(w, -np.inf)))
    span = 1
    while span * 2 <= w:
        cur = np.maximum(cur[:-span], cur[span:])
        span *= 2
    return np.maximum(cur[:size], cur[w - span:w - span + size])


class OpenVinoPolicy(Policy):
    NAME = "openvino"
    # spec/policies/openvino.md#parameters, checked in this order.
    PARAMS = (
        ("budget", 672, 1, U32_MAX),          # max_cache_size
        ("sinks", 32, 0, U32_MAX - 1),        # start_size
        ("recent_window", 128, 0, U32_MAX - 1),  # recent_size
        ("block", 32, 1, 65536),              # positions per block
        ("norm_sum", 1, 0, 1),                # 0 SUM, 1 NORM_SUM
        ("max_pool", 7, 1, 65536),            # the forward max pool's width
        ("obs_window", 8, 0, U32_MAX),        # snapkv_window_size; 0 counts every query
    )
    # Not READS_ATTENTION (that means one set per `granularity` unit,
    # spec/heads.md#kept-sets): one set reading every query head's rows.
    SUMS_HEADS = True
    # spec/policies/openvino.md#the-scores-of-a-step: a prefill step with
    # column totals reads them instead of the query rows.
    READS_TOTALS = True

    @classmethod
    def check_relations(cls, values: dict) -> None:
        # spec/policies/openvino.md#parameters, the rules in this order.
        # 1. sinks + recent_window < budget.
        if not values["sinks"] + values["recent_window"] < values["budget"]:
            raise Refusal(
                INVALID_PARAMETER,
                Subject("rule", ("sinks", "recent_window", "budget")),
                f"openvino: sinks + recent_window must be below budget, got sinks {values['sinks']}, "
                f"recent_window {values['recent_window']}, budget {values['budget']}",
            )
        # 2. budget, sinks, recent_window multiples of block, "as
        # blocks.md#rules says": in blocks.md's order (`budget`, then
        # `recent_window`, then `sinks`; README, Readings). openvino takes
        # none of blocks.md's rule 2 parameters. (harness.configure runs
        # check_block_relations again after this; it passes then.)
        check_block_relations(cls.NAME, values)

    def __init__(self, params: dict, rng) -> None:
        super().__init__(params, rng)
        # Per tracked slot, parallel to kept slots sinks .. sinks + len - 1.
        self.acc = np.zeros(0, dtype=np.float64)
        self.count = np.zeros(0, dtype=np.int64)
        self.seen = 0

    # -- one step ------------------------------------------------------------
    def step_unchecked(self, first: int, count: int, attention, prefill=None) -> StepOutcome:
        """One head (a direct call, or a single-head trace): its row, or its
        query rows (m, rows[, (R, totals)]), as `step_heads` takes them for
        one head."""
        rows = None if attention is None else np.asarray(attention, dtype=np.float64)[None, :]
        heads_prefill = None
        if prefill is not None:
            m, qrows = prefill[:2]
            heads_prefill = (m, [qrows])
            if len(prefill) > 2:
                total_rows, sums = prefill[2]
                heads_prefill += ((total_rows, [sums]),)
        return self.step_heads(first, count, rows, heads_prefill)

    def step_heads(self, first: int, count: int, rows: Optional[np.ndarray], prefill=None) -> StepOutcome:
        """One step of the card's `on_step`. `rows`: None (null attention, or
        a prefill step) or one row per query head, head 0 first, gathered at
        the kept positions before the step (an (Hq, kept) binary64 array).
        `prefill`: None at a decode step, else (m, per head its m gathered
        query rows[, (R, per head its gathered totals)])."""
        query = len(self.kept)
        # The admissions come first; nothing is recorded before them.
        self.kept.extend(range(first, first + count))
        self.next_min = first + count
        n = len(self.kept)
        victims: List[int] = []
        cut: List[Tuple[int, float]] = []
        if prefill is not None:
            # A prefill step: registers, never evicts.
            x, k = self.prefill_scores(n, prefill)
            self.register(x, k)
        elif rows is not None:
            # A decode step: the heads' rows summed per slot, head 0 first,
            # from +0.0; +0.0 for the slots the step admitted.
            x = np.zeros(n, dtype=np.float64)
            for row in rows:
                x[:query] = x[:query] + np.asarray(row, dtype=np.float64)
            self.register(x, 1)
            victims, cut = self.evict()
        # Null attention: registers nothing, evicts nothing.
        return StepOutcome(victims, len(self.kept), query, cut)

    @staticmethod
    def prefill_scores(n: int, prefill) -> Tuple[np.ndarray, int]:
        """spec/policies/openvino.md#the-scores-of-a-step at a prefill step:
        (x, k), x one binary64 per kept slot after admission."""
        m, per_head = prefill[:2]
        x = np.zeros(n, dtype=np.float64)
        if len(prefill) > 2:
            # Column totals: x[i] = sum over heads of T_h[i], head 0 first,
            # from +0.0; k = total_rows; the query rows are not read.
            total_rows, totals = prefill[2]
            for sums in totals:
                x = x + np.asarray(sums, dtype=np.float64)
            return x, total_rows
        # Query rows: per head, t_h[i] the sum of its gathered rows covering
        # slot i (row j covers the first len(row) slots) in ascending query
        # order from +0.0; then x[i] the heads' t_h[i], head 0 first.
        for head_rows in per_head:
            t = np.zeros(n, dtype=np.float64)
            for row in head_rows:
                covered = len(row)
                t[:covered] = t[:covered] + np.asarray(row, dtype=np.float64)
            x = x + t
        return x, m

    # -- spec/policies/openvino.md#registering --------------------------------
    def register(self, x: np.ndarray, k: int) -> None:
        sinks = self.params["sinks"]
        window = self.params["obs_window"]
        n = len(self.kept)
        # 1. The window count.
        if window > 0 and self.seen < window:
            self.seen = min(window, self.seen + k)
        # 2. Nothing is tracked while n <= sinks.
        if n <= sinks:
            return
        # 3. The forward pool, from slot `sinks` on (never into the start area).
        u = forward_max_pool(np.asarray(x[sinks:], dtype=np.float64), self.params["max_pool"])
        m = n - sinks
        j = np.arange(m, dtype=np.int64)
        tracked = len(self.acc)
        if tracked == 0:
            # 4. The first registration: every slot >= sinks, acc = u.
            self.acc = u
            if window == 0:
                self.count = m - j
            else:
                self.count = np.minimum(np.int64(k), m - j)
            return
        # 5. A later registration: the newest d slots join at +0.0, then
        # one binary64 addition per tracked slot.
        d = m - tracked
        self.acc = np.concatenate((self.acc, np.zeros(d, dtype=np.float64))) + u
        if window == 0 or self.seen == window:
            self.count = np.concatenate((self.count + d, np.arange(d, 0, -1, dtype=np.int64)))
        else:
            # The window is not complete: min(seen, m - j) for every slot.
            self.count = np.minimum(np.int64(self.seen), m - j)

    # -- spec/policies/openvino.md#evicting ----------------------------------
    def evict(self) -> Tuple[List[int], List[Tuple[int, float]]]:
        budget = self.params["budget"]
        block = self.params["block"]
        sinks = self.params["sinks"]
        recent = self.params["recent_window"]
        kept = self.kept
        n = len(kept)
        # 1. Nothing goes below budget + block.
        if n < budget + block:
            return [], []
        # 2. k blocks, among the candidate blocks S/B .. floor(n/B) - R/B - 1.
        k = n // block - budget // block
        starts = np.arange(sinks // block, n // block - recent // block, dtype=np.intp) * block
        # 3. Each slot's value: acc (norm_sum 0) or acc / double(count)
        # (norm_sum 1, one division each); the block score their binary64
        # sum in slot order from +0.0. The start area (no state) is in no
        # candidate block.
        if self.params["norm_sum"] == 1:
            value = self.acc / self.count.astype(np.float64)
        else:
            value = self.acc
        assert len(value) == n - sinks  # registered just now, with n > sinks: every slot tracked
        per_slot = np.concatenate((np.zeros(sinks, dtype=np.float64), value))
        scores = block_scores(per_slot, starts, block, SUM)
        firsts = np.asarray(kept, dtype=np.int64)[starts]
        # 4. Ranked by (block score, first position); the first k go. The
        # cut: the victim blocks in rank order, then up to 4 more.
        ranked = np.lexsort((firsts, scores))[:k + 4].tolist()
        cut = [(int(firsts[i]), float(scores[i])) for i in ranked]
        victim_slots = sorted(int(starts[i]) + s for i in ranked[:k] for s in range(block))
        victims = [kept[s] for s in victim_slots]
        keep = np.ones(n, dtype=bool)
        keep[victim_slots] = False
        self.kept = [p for p, live in zip(kept, keep.tolist()) if live]
        # The victims' slots lose their acc and count; the survivors keep theirs.
        self.acc = self.acc[keep[sinks:]]
        self.count = self.count[keep[sinks:]]
        return victims, cut
