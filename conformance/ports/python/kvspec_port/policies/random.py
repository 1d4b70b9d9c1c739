"""random: evicts uniformly at random outside the recent window.

spec/policies/random.md#draws: at a step with k victims and m candidates,
exactly k calls Uniform(m), Uniform(m - 1), ..., each indexing the
candidates not drawn yet in ascending position order. The Rng lives as long
as the policy.
"""

from ..triggers import TRIGGERS
from .base import BUDGET, RECENT_WINDOW, BudgetPolicy, RecentWindowMixin


class RandomPolicy(RecentWindowMixin, BudgetPolicy):
    NAME = "random"
    PARAMS = (BUDGET, RECENT_WINDOW) + TRIGGERS  # spec/triggers.md#parameters: last

    def evict(self, m=None):  # a prefill step is a step like any other (spec/prefill.md)
        kept = self.kept
        n = len(kept)
        k = n - self.budget
        if k <= 0:
            return [], []
        remaining = list(range(n - self.params["recent_window"]))
        drawn = []
        for _ in range(k):
            i = self.rng.uniform(len(remaining))
            drawn.append(remaining.pop(i))
        gone = set(drawn)
        victims = sorted(kept[i] for i in drawn)
        self.kept = [p for i, p in enumerate(kept) if i not in gone]
        return victims, []
