"""h2o: evicts the lowest cumulative attention since admission.

spec/policies/h2o.md#how-it-works: each slot's sum is a binary64,
accumulated in step order, one addition per recorded step; a new position
starts at +0.0 (spec/harness.md#unobserved-positions).
"""

from operator import add

from .base import ScorePolicy


class H2oPolicy(ScorePolicy):
    NAME = "h2o"

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.cumulative = []

    def record(self, attention):
        # cumulative[slot] += double(weight); Python floats are binary64.
        self.cumulative = list(map(add, self.cumulative, attention))

    def admitted(self, count):
        self.cumulative.extend([0.0] * count)

    def scores(self):
        return self.cumulative

    def remove_slots(self, keep):
        self.cumulative = [c for c, kp in zip(self.cumulative, keep) if kp]
