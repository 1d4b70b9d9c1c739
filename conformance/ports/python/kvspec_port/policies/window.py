"""window: keeps the latest `budget` positions (spec/policies/window.md#how-it-works).

With `evict_at` 1 or 2 (spec/spans.md#when-room-is-made) it makes room
before admitting instead, taking the oldest, and evicts nothing after.
"""

from ..spans import EVICT_AT, POSITION_IDS, SPAN_CHUNK, SPAN_WINDOW, SPANS, check_span_relations
from .base import BUDGET, BudgetPolicy


class WindowPolicy(BudgetPolicy):
    NAME = "window"
    # spec/spans.md#parameters: after the card's own.
    PARAMS = (BUDGET, SPANS, SPAN_WINDOW, SPAN_CHUNK, EVICT_AT, POSITION_IDS)

    @classmethod
    def check_relations(cls, values):
        check_span_relations(cls.NAME, values)

    def evict(self, m=None):  # a prefill step is a step like any other (spec/prefill.md)
        kept = self.kept
        k = len(kept) - self.budget
        if k <= 0:
            return [], []
        victims = kept[:k]
        del kept[:k]
        return victims, []

    def evict_before(self, count):
        # spec/spans.md#when-room-is-made: evict the oldest until
        # kept + count <= budget (`evict_at` 1, room for the step) or
        # kept <= budget - 1 (`evict_at` 2, whatever the step's length).
        kept = self.kept
        if self.params["evict_at"] == 1:
            k = len(kept) + count - self.budget
        else:
            k = len(kept) - (self.budget - 1)
        k = min(k, len(kept))  # a chunk longer than the budget takes every kept one
        if k <= 0:
            return []
        victims = kept[:k]
        del kept[:k]
        return victims
