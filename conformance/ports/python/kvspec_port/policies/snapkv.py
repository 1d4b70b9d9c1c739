"""snapkv: lowest max-pooled window sum (spec/policies/snapkv.md).

The ring (spec/policies/snapkv.md#the-ring) is stored by ring index: one
column of binary32 weights per index, each column parallel to `kept`.
A recorded step overwrites column `cursor` and advances the cursor; null
attention does nothing; a present empty row advances the cursor.

Window sums (#window-sums) run in ring-index order 0 upward into a binary64
starting at +0.0; pooling (#pooling) is the maximum over kept slots
i - r .. i + r clamped to the kept set, protected slots included.
"""

from collections import deque
from operator import add

from ..errors import INVALID_PARAMETER, Refusal
from .base import BUDGET, RECENT_WINDOW, ScorePolicy


class SnapKvPolicy(ScorePolicy):
    NAME = "snapkv"
    PARAMS = (BUDGET, RECENT_WINDOW, ("obs_window", 16, 1, 65536), ("pool_kernel", 5, 1, 65535))

    @classmethod
    def check_relations(cls, values):
        super().check_relations(values)  # 1. recent_window < budget
        if values["pool_kernel"] % 2 == 0:  # 2. pool_kernel is odd
            raise Refusal(
                INVALID_PARAMETER, f"snapkv: pool_kernel must be odd, got {values['pool_kernel']}"
            )

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.obs = params["obs_window"]
        self.r = (params["pool_kernel"] - 1) // 2
        self.cursor = 0
        self.recorded = 0  # recorded steps so far
        # Before the ring wraps, the index-order sum of a slot equals the
        # running total of its writes: writes go to increasing ring indices,
        # and every other index holds +0.0, which adds exactly nothing to a
        # non-negative binary64 that starts at +0.0. So until the first
        # overwrite the ring is kept as `running` plus, per written index, a
        # dict position -> weight (absent: +0.0), which needs no upkeep.
        self.running = []
        self.pending = [None] * self.obs
        # Once the ring has wrapped: columns[j] is ring index j of every kept
        # slot, parallel to `kept`.
        self.columns = None

    def record(self, attention):
        if self.columns is None and self.recorded >= self.obs:
            # First overwrite: materialise every ring index, in kept order.
            kept = self.kept
            self.columns = [[col.get(p, 0.0) for p in kept] for col in self.pending]
            self.pending = None
        if self.columns is None:
            self.pending[self.cursor] = dict(zip(self.kept, attention))
            self.running = list(map(add, self.running, attention))
        else:
            self.columns[self.cursor] = list(attention)
        self.cursor = (self.cursor + 1) % self.obs
        self.recorded += 1

    def admitted(self, count):
        zeros = [0.0] * count
        if self.columns is None:
            self.running.extend(zeros)
        else:
            for col in self.columns:
                col.extend(zeros)

    def window_sums(self):
        if self.columns is None:
            return self.running
        n = len(self.kept)
        sums = [0.0] * n
        for col in self.columns:  # ring index order, 0 upward
            sums = list(map(add, sums, col))
        return sums

    def scores(self):
        sums = self.window_sums()
        r = self.r
        if r == 0:
            return sums
        n = len(sums)
        pooled = [0.0] * n
        # Sliding-window maximum over [max(0, i - r), min(n - 1, i + r)].
        dq = deque()  # indices with decreasing sums
        nxt = 0
        for i in range(n):
            hi = min(n - 1, i + r)
            while nxt <= hi:
                v = sums[nxt]
                while dq and sums[dq[-1]] <= v:
                    dq.pop()
                dq.append(nxt)
                nxt += 1
            lo = i - r
            while dq[0] < lo:
                dq.popleft()
            pooled[i] = sums[dq[0]]
        return pooled

    def remove_slots(self, keep):
        if self.columns is None:
            self.running = [w for w, kp in zip(self.running, keep) if kp]
        else:
            self.columns = [[w for w, kp in zip(col, keep) if kp] for col in self.columns]
