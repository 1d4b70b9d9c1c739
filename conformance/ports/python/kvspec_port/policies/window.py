"""window: keeps the latest `budget` positions (spec/policies/window.md#how-it-works)."""

from .base import BUDGET, BudgetPolicy


class WindowPolicy(BudgetPolicy):
    NAME = "window"
    PARAMS = (BUDGET,)

    def evict(self):
        kept = self.kept
        k = len(kept) - self.budget
        if k <= 0:
            return [], []
        victims = kept[:k]
        del kept[:k]
        return victims, []
