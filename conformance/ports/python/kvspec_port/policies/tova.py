"""tova: evicts the lowest latest attention weight (spec/policies/tova.md#how-it-works).

The latest weight is stored as given (a binary32 value); its score is that
weight widened to binary64, which is exact. Null attention keeps it.
"""

import numpy as np

from .base import ScorePolicy


class TovaPolicy(ScorePolicy):
    NAME = "tova"

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.latest = []

    def record(self, attention):
        self.latest = np.asarray(attention, dtype=np.float64)

    def admitted(self, count):
        self.latest = np.concatenate((np.asarray(self.latest, dtype=np.float64), np.zeros(count)))

    def scores(self):
        return self.latest

    def remove_slots(self, keep):
        self.latest = np.asarray(self.latest, dtype=np.float64)[np.asarray(keep, dtype=bool)]
