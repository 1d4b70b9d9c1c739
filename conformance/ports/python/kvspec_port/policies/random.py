"""random: evicts uniformly at random outside the recent window.

spec/policies/random.md#draws: at a step with k victims and m candidates,
exactly k calls Uniform(m), Uniform(m - 1), ..., each indexing the
candidates not drawn yet in ascending position order. The Rng lives as long
as the policy.
"""

from ..blocks import BLOCK, blocks_to_evict, draw_blocks
from ..triggers import TRIGGERS
from .base import BUDGET, RECENT_WINDOW, BudgetPolicy, RecentWindowMixin


class RandomPolicy(RecentWindowMixin, BudgetPolicy):
    NAME = "random"
    # spec/triggers.md#parameters, then spec/blocks.md#parameters, last.
    PARAMS = (BUDGET, RECENT_WINDOW) + TRIGGERS + (BLOCK,)

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

    def evict_blocks(self, m=None):
        # spec/blocks.md#ranking-blocks: k draws over the candidate blocks
        # (closed, before the recent window), in ascending order.
        kept = self.kept
        n = len(kept)
        block = self.params["block"]
        k = blocks_to_evict(n, self.budget, block)
        if k <= 0:
            return [], []
        slots = draw_blocks(self.rng, k, n - self.params["recent_window"], block)
        victims = [kept[i] for i in slots]
        gone = set(slots)
        self.kept = [p for i, p in enumerate(kept) if i not in gone]
        return victims, []
