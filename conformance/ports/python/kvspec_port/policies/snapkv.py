"""snapkv: lowest max-pooled window sum (spec/policies/snapkv.md).

The ring (spec/policies/snapkv.md#the-ring) is stored by ring index: one
column of binary32 weights per index, each column parallel to `kept`.
A recorded step overwrites column `cursor` and advances the cursor; null
attention does nothing; a present empty row advances the cursor.

Window sums (#window-sums) run in ring-index order 0 upward into a binary64
starting at +0.0; pooling (#pooling) is the maximum over kept slots
i - r .. i + r clamped to the kept set, protected slots included.
"""

import numpy as np

from ..errors import INVALID_PARAMETER, Refusal
from .base import ADAPTIVE, AGGREGATION, BUDGET, GRANULARITY, RECENT_WINDOW, SAFEGUARD_PERMILLE, ScorePolicy


class SnapKvPolicy(ScorePolicy):
    NAME = "snapkv"
    PARAMS = (BUDGET, RECENT_WINDOW, ("obs_window", 16, 1, 65536), ("pool_kernel", 5, 1, 65535),
              GRANULARITY, AGGREGATION, ADAPTIVE, SAFEGUARD_PERMILLE)

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
            self.columns = np.array([[col.get(p, 0.0) for p in kept] for col in self.pending],
                                    dtype=np.float64).reshape(self.obs, len(kept))
            self.pending = None
        if self.columns is None:
            self.pending[self.cursor] = dict(zip(self.kept, attention))
            # One binary64 addition per slot (elementwise, order kept).
            self.running = np.asarray(self.running, dtype=np.float64) + np.asarray(attention, dtype=np.float64)
        else:
            self.columns = np.asarray(self.columns, dtype=np.float64)
            self.columns[self.cursor] = attention
        self.cursor = (self.cursor + 1) % self.obs
        self.recorded += 1

    def admitted(self, count):
        if self.columns is None:
            self.running = np.concatenate((np.asarray(self.running, dtype=np.float64), np.zeros(count)))
        else:
            cols = np.asarray(self.columns, dtype=np.float64).reshape(self.obs, -1)
            self.columns = np.concatenate((cols, np.zeros((self.obs, count))), axis=1)

    def window_sums(self):
        if self.columns is None:
            return self.running
        cols = np.asarray(self.columns, dtype=np.float64)
        sums = np.zeros(len(self.kept), dtype=np.float64)
        # Ring index order, 0 upward: an explicit loop of elementwise
        # binary64 additions (never a NumPy reduction, whose order is not
        # the spec's).
        for j in range(self.obs):
            sums = sums + cols[j]
        return sums

    def scores(self):
        sums = np.asarray(self.window_sums(), dtype=np.float64)
        r = self.r
        n = len(sums)
        if r == 0 or n == 0:
            return sums
        # Maximum over [max(0, i - r), min(n - 1, i + r)] (van Herk /
        # Gil-Werman). A maximum selects one of its operands exactly, so the
        # grouping does not matter; the sums are never NaN and never -0.0
        # (they start at +0.0 and add non-negative weights), so the pad
        # value -inf never wins over a real slot.
        r = min(r, n - 1)
        w = 2 * r + 1
        padded_len = -(-(n + 2 * r) // w) * w
        pad = np.full(padded_len, -np.inf)
        pad[r:r + n] = sums
        blocks = pad.reshape(-1, w)
        g = np.maximum.accumulate(blocks, axis=1).ravel()  # from each block's start
        h = np.maximum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()  # to each block's end
        i = np.arange(n)
        return np.maximum(h[i], g[i + w - 1])

    def remove_slots(self, keep):
        mask = np.asarray(keep, dtype=bool)
        if self.columns is None:
            self.running = np.asarray(self.running, dtype=np.float64)[mask]
        else:
            self.columns = np.asarray(self.columns, dtype=np.float64).reshape(self.obs, -1)[:, mask]
