"""h2o: evicts the lowest cumulative attention since admission.

spec/policies/h2o.md#how-it-works: each slot's sum is a binary64,
accumulated in step order, one addition per recorded step; a new position
starts at +0.0 (spec/harness.md#unobserved-positions).
"""

import numpy as np

from .base import ScorePolicy


class H2oPolicy(ScorePolicy):
    NAME = "h2o"

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.cumulative = []

    def record(self, attention):
        # cumulative[slot] += double(weight); Python floats are binary64.
        # Elementwise, one binary64 addition per slot: the order per slot is
        # the step order, exactly as in the scalar loop.
        self.cumulative = np.asarray(self.cumulative, dtype=np.float64) + np.asarray(attention, dtype=np.float64)

    def admitted(self, count):
        self.cumulative = np.concatenate((np.asarray(self.cumulative, dtype=np.float64), np.zeros(count)))

    def scores(self):
        return self.cumulative

    def remove_slots(self, keep):
        self.cumulative = np.asarray(self.cumulative, dtype=np.float64)[np.asarray(keep, dtype=bool)]
