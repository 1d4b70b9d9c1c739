"""tova: evicts the lowest latest attention weight (spec/policies/tova.md#how-it-works).

The latest weight is stored as given (a binary32 value); its score is that
weight widened to binary64, which is exact. Null attention keeps it.
"""

from .base import ScorePolicy


class TovaPolicy(ScorePolicy):
    NAME = "tova"

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.latest = []

    def record(self, attention):
        self.latest = list(attention)

    def admitted(self, count):
        self.latest.extend([0.0] * count)

    def scores(self):
        return self.latest

    def remove_slots(self, keep):
        self.latest = [w for w, kp in zip(self.latest, keep) if kp]
