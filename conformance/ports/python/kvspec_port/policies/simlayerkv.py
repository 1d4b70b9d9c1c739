"""simlayerkv: kvpress's SimLayerKVPress, one layer's lazy-or-not decision
at each prefill step (spec/policies/simlayerkv.md, spec 0.20.0).

One kept set whatever the scenario's heads, as the policies that do not
read attention keep (spec/heads.md#policies-that-do-not-read-attention):
the decision is the layer's and every head keeps the same positions. It
reads every query head's query rows (spec/prefill.md#query-rows), so the
harness hands it, as it hands `openvino`, every head's rows gathered at the
one set's kept positions after admission (`SUMS_HEADS`,
spec/prefill.md#what-a-policy-sees); a step's `attention` and `heads`
rows and its column totals are checked by the harness and not read.

spec/policies/simlayerkv.md#how-it-works, at a prefill step with `m`
query rows per head, `Hq` query heads and `n` kept slots after admission:

- nothing goes with `lazy_threshold_ppm` 1000000 (kvpress's 1.0), or when
  `n <= n_initial + n_recent + n_last` (a short cache is not judged);
- `w = min(n_last, m)` rows are read, each head's last `w`; the prefix is
  slots `0 .. P - 1`, `P = n - n_last`; per prefix slot `a[i]` is the
  binary64 sum from +0.0 over the heads ascending and, within a head, its
  last `w` rows ascending, divided once by `double(Hq * w)`;
- the score is `initial + recent`: `initial` the sum of `a[0 ..
  n_initial - 1]`, `recent` of `a[P - n_recent .. P - 1]`, each from +0.0
  ascending; the layer is lazy when the score is strictly above
  `lazy_threshold_ppm / 1000000.0`;
- a lazy layer evicts slots `n_initial .. n - (n_recent - n_last) - 1`:
  it keeps its first `n_initial` and last `n_recent - n_last` positions.

A decode step (no query rows) admits and evicts nothing. Nothing is kept
between steps but the kept positions; the log has no cut (no position is
ranked).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from ..errors import INVALID_PARAMETER, Refusal, Subject
from .base import U32_MAX, Policy, StepOutcome

# spec/policies/simlayerkv.md#parameters: `lazy_threshold_ppm` in
# [0, 1000000]; 1000000 (kvpress's 1.0) never compresses.
PPM = 1000000


def lazy_score(n: int, n_initial: int, n_recent: int, n_last: int, per_head: Sequence[Sequence]) -> float:
    """The layer's score (spec/policies/simlayerkv.md#how-it-works) for a
    judged cache of `n` kept slots (`n > n_initial + n_recent + n_last`):
    `per_head` holds, per query head, head 0 first, its m gathered query
    rows in ascending query position (row j of m covers n - m + 1 + j
    slots, so every row covers the prefix)."""
    m = len(per_head[0])
    w = min(n_last, m)
    p = n - n_last
    s = np.zeros(p, dtype=np.float64)
    for rows in per_head:  # heads ascending
        for row in rows[m - w:]:  # the head's last w rows, ascending
            s = s + np.asarray(row[:p], dtype=np.float64)
    a = (s / float(len(per_head) * w)).tolist()  # one division per slot
    initial = 0.0
    for x in a[:n_initial]:
        initial = initial + x
    recent = 0.0
    for x in a[p - n_recent:p]:
        recent = recent + x
    return initial + recent


class SimLayerKvPolicy(Policy):
    NAME = "simlayerkv"
    # spec/policies/simlayerkv.md#parameters, checked in this order; no
    # budget, no heads, prefill, span, trigger or block parameter.
    PARAMS = (
        ("n_initial", 4, 0, U32_MAX),
        ("n_recent", 1024, 2, U32_MAX),
        ("n_last", 1, 1, U32_MAX - 1),
        ("lazy_threshold_ppm", PPM, 0, PPM),
    )
    # One kept set reading every query head's query rows (not
    # READS_ATTENTION: no `granularity`, one set however many heads).
    SUMS_HEADS = True

    @classmethod
    def check_relations(cls, values: dict) -> None:
        # The card's one rule: n_last < n_recent.
        if not values["n_last"] < values["n_recent"]:
            raise Refusal(
                INVALID_PARAMETER,
                Subject("rule", ("n_last", "n_recent")),
                f"simlayerkv: n_last must be below n_recent, got n_last {values['n_last']}, "
                f"n_recent {values['n_recent']}",
            )

    # -- one step ------------------------------------------------------------
    def step_unchecked(self, first: int, count: int, attention, prefill=None) -> StepOutcome:
        """One head (a direct call, or a single-head trace): its query rows
        (m, rows[, totals]) as `step_heads` takes them for one head; its
        row, if any, is not read."""
        heads_prefill = None
        if prefill is not None:
            heads_prefill = (prefill[0], [prefill[1]])
        return self.step_heads(first, count, None, heads_prefill)

    def step_heads(self, first: int, count: int, rows: Optional[np.ndarray], prefill=None) -> StepOutcome:
        """One step. `rows` (every head's row at a decode step) is not read.
        `prefill`: None at a decode step, else (m, per head its m gathered
        query rows[, totals]); the totals are not read."""
        query = len(self.kept)
        self.kept.extend(range(first, first + count))
        self.next_min = first + count
        victims: List[int] = []
        if prefill is not None:
            victims = self.evict_prefill(prefill[1])
        return StepOutcome(victims, len(self.kept), query, [])

    def evict_prefill(self, per_head) -> List[int]:
        """spec/policies/simlayerkv.md#how-it-works at a prefill step, after
        admission: the victims, ascending (none unless the layer is lazy)."""
        p = self.params
        n_initial, n_recent, n_last = p["n_initial"], p["n_recent"], p["n_last"]
        n = len(self.kept)
        if p["lazy_threshold_ppm"] == PPM:  # 1.0: never lazy
            return []
        if n <= n_initial + n_recent + n_last:  # too short: not judged
            return []
        score = lazy_score(n, n_initial, n_recent, n_last, per_head)
        threshold = p["lazy_threshold_ppm"] / 1000000.0  # one correctly rounded division
        if not score > threshold:  # a score equal to it is not lazy
            return []
        end = n - (n_recent - n_last)  # slots n_initial .. end - 1 go
        victims = self.kept[n_initial:end]
        del self.kept[n_initial:end]
        return victims

