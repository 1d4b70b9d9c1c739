"""window: keeps the latest `budget` positions (spec/policies/window.md#how-it-works).

With `evict_at` 1 or 2 (spec/spans.md#when-room-is-made) it makes room
before admitting instead, taking the oldest, and evicts nothing after.
With `context_shift` 1 (spec/spans.md#context-shift) it does so only when
the step does not fit, in one block of the oldest kept positions.
"""

from ..spans import (CONTEXT_SHIFT, DISCARD, EVICT_AT, POSITION_IDS, SPAN_CHUNK, SPAN_WINDOW, SPANS,
                     check_context_shift_relations, check_span_relations, context_shift_discard,
                     shift_needed)
from ..blocks import BLOCK, blocks_to_evict
from ..triggers import TRIGGERS
from .base import BUDGET, BudgetPolicy


class WindowPolicy(BudgetPolicy):
    NAME = "window"
    # spec/spans.md#parameters: after the card's own; spec/triggers.md#parameters,
    # then spec/blocks.md#parameters, last.
    PARAMS = (BUDGET, SPANS, SPAN_WINDOW, SPAN_CHUNK, EVICT_AT, POSITION_IDS, CONTEXT_SHIFT, DISCARD) + TRIGGERS + (
        BLOCK,)

    @classmethod
    def check_relations(cls, values):
        check_span_relations(cls.NAME, values)
        check_context_shift_relations(cls.NAME, values)  # window: budget >= 2

    def evict(self, m=None):  # a prefill step is a step like any other (spec/prefill.md)
        kept = self.kept
        k = len(kept) - self.budget
        if k <= 0:
            return [], []
        victims = kept[:k]
        del kept[:k]
        return victims, []

    def evict_blocks(self, m=None):
        # spec/blocks.md#ranking-blocks: the k oldest closed blocks, slots
        # [0, kB) (every closed block is a candidate; a prefill step is a
        # step like any other).
        block = self.params["block"]
        k = blocks_to_evict(len(self.kept), self.budget, block)
        if k <= 0:
            return [], []
        victims = self.kept[:k * block]
        del self.kept[:k * block]
        return victims, []

    def evict_before(self, count):
        # spec/spans.md#when-room-is-made: evict the oldest until
        # kept + count <= budget (`evict_at` 1, room for the step) or
        # kept <= budget - 1 (`evict_at` 2, whatever the step's length).
        kept = self.kept
        if self.params["context_shift"] == 1:
            # spec/spans.md#context-shift: only when kept + count > budget;
            # every kept position may go (n_left = kept), the oldest d go, at
            # most one shift, and a chunk that still does not fit stays whole.
            if not shift_needed(len(kept), count, self.budget):
                return []
            d = context_shift_discard(len(kept), self.params["discard"])
            victims = kept[:d]
            del kept[:d]
            return victims
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
