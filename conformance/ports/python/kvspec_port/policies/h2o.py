"""h2o: evicts the lowest cumulative attention since admission.

spec/policies/h2o.md#how-it-works: each slot's sum is a binary64,
accumulated in step order, one addition per recorded step; a new position
starts at +0.0 (spec/harness.md#unobserved-positions).

spec/policies/h2o.md#at-prefill: a prefill step adds to every kept slot's
sum, in one addition, its observed attention: the sum over the gathered
query rows that cover the slot, ascending query position, binary64 from
+0.0, divided by the number of those rows with `normalize` 1. With column
totals (spec/policies/h2o.md#at-prefill, "With column totals") the slot's
gathered total is that contribution instead, divided by the number of the
step's last `total_rows` queries that see it with `normalize` 1; the query
rows are then not read.
"""

import numpy as np

from ..blocks import BLOCK, BLOCK_SCORE
from ..triggers import TRIGGERS
from .base import ScorePolicy


class H2oPolicy(ScorePolicy):
    NAME = "h2o"
    PARAMS = (ScorePolicy.PARAMS
              + (("normalize", 0, 0, 1),)  # 0 raw, 1 divided by the rows that see the key
              + TRIGGERS  # spec/triggers.md#parameters,
              + (BLOCK, BLOCK_SCORE))  # then spec/blocks.md#parameters, last
    READS_TOTALS = True  # spec/prefill.md#column-totals: only h2o reads them

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.cumulative = []

    def record(self, attention):
        # cumulative[slot] += double(weight); Python floats are binary64.
        # Elementwise, one binary64 addition per slot: the order per slot is
        # the step order, exactly as in the scalar loop.
        self.cumulative = np.asarray(self.cumulative, dtype=np.float64) + np.asarray(attention, dtype=np.float64)

    def record_queries(self, m, rows):
        n = len(self.kept)
        c = np.zeros(n, dtype=np.float64)  # +0.0 per slot
        k = np.zeros(n, dtype=np.int64)
        # Rows in ascending query position; gathered row j covers slots
        # [0, len(row)) (spec/prefill.md#what-a-policy-sees). Elementwise,
        # one binary64 addition per covered slot and row: each slot's sum
        # adds its rows in ascending query position.
        for row in rows:
            covered = len(row)
            c[:covered] = c[:covered] + np.asarray(row, dtype=np.float64)
            k[:covered] += 1
        if self.params["normalize"] == 1:
            # One correctly rounded division by k >= 1 (the last row covers
            # every slot); k is exact as a binary64.
            c = c / k.astype(np.float64)
        # Summed first, then added once to the running sum.
        self.cumulative = np.asarray(self.cumulative, dtype=np.float64) + c

    def record_totals(self, total_rows, totals):
        # spec/policies/h2o.md#at-prefill, "With column totals": for kept
        # slot i, position p = kept[i], c = T[p] (the gathered total,
        # binary64); with `normalize` 1, c / double(min(R, a + c_len - p)),
        # the number of the R queries that see p, where a + c_len is one
        # past the step's last position, the newest kept one. (The chunk's
        # positions are the last kept slots and R <= c_len, so this is
        # min(R, n - i) for n kept positions.)
        c = np.asarray(totals, dtype=np.float64)
        if self.params["normalize"] == 1:
            kept = np.asarray(self.kept, dtype=np.int64)
            end = int(kept[-1]) + 1  # a + c_len
            seeing = np.minimum(np.int64(total_rows), end - kept)  # >= 1: p <= a + c_len - 1
            # One correctly rounded division per slot; the count is exact as a binary64.
            c = c / seeing.astype(np.float64)
        # One addition, onto the running sum (as the rows' contribution).
        self.cumulative = np.asarray(self.cumulative, dtype=np.float64) + c

    def admitted(self, count):
        self.cumulative = np.concatenate((np.asarray(self.cumulative, dtype=np.float64), np.zeros(count)))

    def scores(self):
        return self.cumulative

    def remove_slots(self, keep):
        self.cumulative = np.asarray(self.cumulative, dtype=np.float64)[np.asarray(keep, dtype=bool)]
