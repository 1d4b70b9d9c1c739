"""window: keeps the latest `budget` positions (spec/policies/window.md#how-it-works)."""

from .base import BUDGET, BudgetPolicy


class WindowPolicy(BudgetPolicy):
    NAME = "window"
    PARAMS = (BUDGET,)

    def evict(self, m=None):  # a prefill step is a step like any other (spec/prefill.md)
        kept = self.kept
        k = len(kept) - self.budget
        if k <= 0:
            return [], []
        victims = kept[:k]
        del kept[:k]
        return victims, []
