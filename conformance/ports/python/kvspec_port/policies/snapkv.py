"""snapkv: lowest pooled window sum (spec/policies/snapkv.md).

The ring (spec/policies/snapkv.md#the-ring) is stored by ring index: one
column of binary32 weights per index, each column parallel to `kept`.
A recorded step overwrites column `cursor` and advances the cursor; null
attention does nothing; a present empty row advances the cursor.

Window sums (#window-sums) run in ring-index order 0 upward into a binary64
starting at +0.0; pooling (#pooling) is, with `pooling` 0, the maximum
over kept slots i - r .. i + r clamped to the kept set, protected slots
included, and with `pooling` 1 their sum (ascending slot, binary64 from
+0.0; slots outside the kept set add +0.0) divided by `pool_kernel`.

At a prefill step (#at-prefill) the ring is neither written nor moved: the
step's scores are the window rows' sums over the prefix (the kept slots
before the last w = min(obs_window, m) ones), reduced by `window_reduce`
and pooled over the prefix alone; the window's slots score +infinity
(`window_budget` 0) or are not candidates and not counted (1).

With `pyramid` 1 or 2 (spec/policies/pyramidkv.md, spec 0.19.0) a prefill
step's budget is the layer's (`pyramid.layer_budget`), in place of
spec/prefill.md's step budget; the pyramid's four rules follow the card's
and spec/prefill.md's.
"""

import numpy as np

from ..errors import INVALID_PARAMETER, Refusal, Subject
from ..blocks import BLOCK, BLOCK_SCORE
from .. import pyramid
from ..triggers import TRIGGERS
from .base import (ADAPTIVE, AGGREGATION, BUDGET, GRANULARITY, PREFILL_ONLY, RATIO_PPM, RECENT_WINDOW,
                   SAFEGUARD_PERMILLE, RecentWindowMixin, ScorePolicy)


class SnapKvPolicy(ScorePolicy):
    NAME = "snapkv"
    PARAMS = (BUDGET, RECENT_WINDOW, ("obs_window", 16, 1, 65536), ("pool_kernel", 5, 1, 65535),
              GRANULARITY, AGGREGATION, ADAPTIVE, SAFEGUARD_PERMILLE, PREFILL_ONLY, RATIO_PPM,
              ("window_reduce", 0, 0, 1),  # at prefill: 0 sum, 1 mean
              ("pooling", 0, 0, 1),  # 0 max, 1 avg (zero padding, divided by pool_kernel)
              ("window_budget", 0, 0, 1),  # at prefill: 0 inside, 1 outside
              # pyramid, pyramid_beta, layer, layers (spec/policies/pyramidkv.md, 0.19.0)
              ) + pyramid.PYRAMID_PARAMS + TRIGGERS + (BLOCK, BLOCK_SCORE)  # spec/triggers.md's, then blocks.md's

    @classmethod
    def card_relations(cls, values):
        RecentWindowMixin.check_relations.__func__(cls, values)  # 1. recent_window < budget
        if values["pool_kernel"] % 2 == 0:  # 2. pool_kernel is odd
            raise Refusal(
                INVALID_PARAMETER, Subject("rule", ("pool_kernel",)),
                f"snapkv: pool_kernel must be odd, got {values['pool_kernel']}"
            )

    @classmethod
    def check_relations(cls, values):
        super().check_relations(values)  # the card's rules, then spec/prefill.md's
        # spec/policies/pyramidkv.md#parameters: after those, before the
        # triggers' and blocks' (harness.configure checks those next).
        pyramid.check_pyramid_relations(cls.NAME, values)

    @classmethod
    def eviction_plan(cls, params, n, m):
        k, c = super().eviction_plan(params, n, m)
        if m is not None and params["pyramid"] != 0:
            # spec/policies/pyramidkv.md#how-it-works: at a prefill step the
            # layer's budget B replaces spec/prefill.md's step budget (the
            # candidates are unchanged). `block` above 1 and `adaptive` 1,
            # which read the step budget elsewhere, are refused with a
            # pyramid (the rules `block ratio_ppm`, `block window_budget`,
            # `adaptive ratio_ppm`, `adaptive window_budget`).
            k = n - pyramid.layer_budget(params, n)
        if m is not None and params["window_budget"] == 1:
            # `outside`: the window's w slots are neither candidates nor
            # counted: (n - w) - B go, from the prefix slots outside
            # recent_window (B computed from n, spec/prefill.md).
            w = min(params["obs_window"], m)
            k -= w
            c = min(c, n - w)
        return k, c

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
        # The scores of the current prefill step (None at a decode step).
        self.prefill_scores = None

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

    def record_queries(self, m, rows):
        # spec/policies/snapkv.md#at-prefill. The ring is not touched.
        n = len(self.kept)
        w = min(self.obs, m)
        p = n - w  # slots 0 .. p-1: the prefix
        s = np.zeros(p, dtype=np.float64)
        # The last w gathered rows, ascending query position: each covers
        # at least p + 1 slots. One binary64 addition per prefix slot and
        # row, elementwise.
        for row in rows[m - w:]:
            s = s + np.asarray(row[:p], dtype=np.float64)
        if self.params["window_reduce"] == 1:
            s = s / np.float64(w)  # mean: the sum divided once by w
        scores = np.full(n, np.inf)  # the window: +infinity (window_budget 0)
        scores[:p] = self.pool(s)  # pooled over the prefix alone
        self.prefill_scores = scores

    def admitted(self, count):
        self.prefill_scores = None  # a new step
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
        if self.prefill_scores is not None:
            return self.prefill_scores
        return self.pool(np.asarray(self.window_sums(), dtype=np.float64))

    def pool(self, sums):
        """spec/policies/snapkv.md#pooling over `sums`, slots in kept order."""
        if self.params["pooling"] == 1:
            return avg_pool(sums, self.r, self.params["pool_kernel"])
        return max_pool(sums, self.r)

    def remove_slots(self, keep):
        mask = np.asarray(keep, dtype=bool)
        if self.columns is None:
            self.running = np.asarray(self.running, dtype=np.float64)[mask]
        else:
            self.columns = np.asarray(self.columns, dtype=np.float64).reshape(self.obs, -1)[:, mask]
        self.prefill_scores = None


def max_pool(sums, r):
    """pooled[i] = max(sums[max(0, i - r) .. min(n - 1, i + r)])."""
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


def avg_pool(sums, r, kernel):
    """pooled[i] = (sum of sums[j], j = i - r .. i + r, 0 <= j < n,
    ascending j, binary64 from +0.0) / double(kernel): PyTorch's avg_pool1d
    with padding r and count_include_pad (spec/policies/snapkv.md#pooling)."""
    n = len(sums)
    if n == 0:
        return np.asarray(sums, dtype=np.float64)
    # Offsets beyond n - 1 reach no slot for any i.
    rr = min(r, n - 1)
    pad = np.zeros(n + 2 * rr, dtype=np.float64)
    pad[rr:rr + n] = sums
    acc = np.zeros(n, dtype=np.float64)  # +0.0
    # An explicit loop over the offsets, ascending: slot i adds
    # sums[i - rr], ..., sums[i + rr] in ascending j, one binary64 addition
    # each; a padding +0.0 added to a non-negative binary64 (never -0.0)
    # leaves it unchanged, as leaving it out would.
    for d in range(2 * rr + 1):
        acc = acc + pad[d:d + n]
    return acc / np.float64(kernel)
