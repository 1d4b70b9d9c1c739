"""tova: evicts the lowest latest attention weight (spec/policies/tova.md#how-it-works).

The latest weight is stored as given (a binary32 value); its score is that
weight widened to binary64, which is exact. Null attention keeps it.

spec/policies/tova.md#at-prefill: at a prefill step the latest weights
become the last gathered query row (every kept position after admission,
the newest one's weight on itself included); with `protect_newest` 1 the
newest kept position is not a candidate at that step.
"""

import numpy as np

from ..blocks import BLOCK, BLOCK_SCORE
from ..triggers import TRIGGERS
from .base import ScorePolicy


class TovaPolicy(ScorePolicy):
    NAME = "tova"
    # spec/triggers.md#parameters, then spec/blocks.md#parameters, last.
    PARAMS = ScorePolicy.PARAMS + (("protect_newest", 0, 0, 1),) + TRIGGERS + (BLOCK, BLOCK_SCORE)

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.latest = []

    @classmethod
    def eviction_plan(cls, params, n, m):
        k, c = super().eviction_plan(params, n, m)
        if m is not None and params["protect_newest"] == 1:
            c = min(c, n - 1)  # the newest kept position is slot n - 1
        return k, c

    def record(self, attention):
        self.latest = np.asarray(attention, dtype=np.float64)

    def record_queries(self, m, rows):
        self.latest = np.asarray(rows[-1], dtype=np.float64)  # covers every kept slot

    def admitted(self, count):
        self.latest = np.concatenate((np.asarray(self.latest, dtype=np.float64), np.zeros(count)))

    def scores(self):
        return self.latest

    def remove_slots(self, keep):
        self.latest = np.asarray(self.latest, dtype=np.float64)[np.asarray(keep, dtype=bool)]
