"""Starts the Python port's testee with exactly one spec rule broken.

    python3 run_mutant.py NAME        # a testee, for the conformance runner
    python3 run_mutant.py --list      # NAME, the policies it touches, the rule

Each mutant monkeypatches one piece of kvspec_port and nothing else. The
test (tools/test_ports.sh) runs the conformance runner against every mutant
and fails if the vectors do not catch one: a mutant that passes means the
vectors miss a rule.
"""
import os

import numpy as np
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kvspec_port import harness, trace  # noqa: E402
from kvspec_port.policies import base, random as random_mod, snapkv, streamingllm  # noqa: E402

MUTANTS = {}


def mutant(name, policies, rule):
    def register(patch):
        MUTANTS[name] = (policies, rule, patch)
        return patch
    return register


def _score_evict(order_key, sort_victims=True, recent_delta=0):
    """ScorePolicy.evict with the ranking key, the victim order or the
    recent window changed (the step budget and the prefill candidates of
    spec/prefill.md as the port has them: `eviction_plan`)."""
    def evict(self, prefill_m=None):
        n = len(self.kept)
        recent = max(0, self.params["recent_window"] + recent_delta)
        k, m = self.eviction_plan(dict(self.params, recent_window=recent), n, prefill_m)
        if k <= 0:
            return [], []
        scores = [float(x) for x in self.scores()]
        kept = self.kept
        ranked = sorted(range(m), key=lambda i: order_key(scores[i], kept[i]))
        ranked = ranked[: min(m, k + 4)]
        victim_slots = ranked[:k]
        cut = [(kept[i], scores[i]) for i in ranked]
        keep = [True] * n
        for i in victim_slots:
            keep[i] = False
        victims = [kept[i] for i in victim_slots]
        if sort_victims:
            victims.sort()
        self.kept = [p for p, kp in zip(kept, keep) if kp]
        self.remove_slots(keep)
        return victims, cut
    return evict


@mutant("ties-evict-higher", "h2o,tova,snapkv", "harness.md#victims: equal scores evict the higher position")
def _():
    base.ScorePolicy.evict = _score_evict(lambda s, p: (s, -p))


@mutant("victims-unsorted", "h2o,tova,snapkv", "harness.md#victims: victims reported in rank order")
def _():
    base.ScorePolicy.evict = _score_evict(lambda s, p: (s, p), sort_victims=False)


@mutant("recent-window-one-short", "h2o,tova,snapkv", "harness.md#protected-positions: the window one too short")
def _():
    base.ScorePolicy.evict = _score_evict(lambda s, p: (s, p), recent_delta=-1)


@mutant("snapkv-time-order-sum", "snapkv", "snapkv.md#window-sums: the ring summed oldest first")
def _():
    original = snapkv.SnapKvPolicy.window_sums

    def window_sums(self):
        if self.columns is None:
            return original(self)
        n = len(self.kept)
        sums = [0.0] * n
        for j in range(self.obs):  # oldest first: from the cursor round
            col = self.columns[(self.cursor + j) % self.obs]
            sums = [a + b for a, b in zip(sums, col)]
        return sums
    snapkv.SnapKvPolicy.window_sums = window_sums


@mutant("binary32-sums", "h2o,snapkv", "arithmetic.md#widths: sums accumulated in binary32")
def _():
    from kvspec_port.policies import h2o
    from kvspec_port.f32 import f32

    def record(self, attention):
        self.cumulative = [f32(a + w) for a, w in zip(self.cumulative, attention)]
    h2o.H2oPolicy.record = record
    original = snapkv.SnapKvPolicy.window_sums

    def window_sums(self):
        if self.columns is None:
            return original(self)
        sums = [0.0] * len(self.kept)
        for col in self.columns:
            sums = [f32(a + b) for a, b in zip(sums, col)]
        return sums
    snapkv.SnapKvPolicy.window_sums = window_sums


@mutant("pooling-wraps", "snapkv", "snapkv.md#pooling: pooling wraps around the ends")
def _():
    def scores(self):
        sums = self.window_sums()
        n, r = len(sums), self.r
        return [max(sums[(i + d) % n] for d in range(-r, r + 1)) for i in range(n)]
    snapkv.SnapKvPolicy.scores = scores


@mutant("null-advances-ring", "snapkv", "harness.md#null-attention: a null step moves the ring's cursor")
def _():
    original = base.Policy.step_unchecked

    def step_unchecked(self, first, count, attention, prefill=None):
        if attention is None and prefill is None and isinstance(self, snapkv.SnapKvPolicy):
            if self.columns is None and self.pending[self.cursor] is None:
                self.pending[self.cursor] = {}  # the skipped index reads +0.0
            if self.columns is None and self.recorded >= self.obs:
                kept = self.kept
                self.columns = [[c.get(p, 0.0) for p in kept] for c in self.pending]
                self.pending = None
            self.cursor = (self.cursor + 1) % self.obs
            self.recorded += 1
        return original(self, first, count, attention, prefill)
    base.Policy.step_unchecked = step_unchecked


@mutant("empty-row-is-null", "snapkv", "harness.md#null-attention: a present empty row treated as null")
def _():
    original = base.Policy.step_unchecked

    def step_unchecked(self, first, count, attention, prefill=None):
        if attention is not None and len(attention) == 0:
            attention = None
        return original(self, first, count, attention, prefill)
    base.Policy.step_unchecked = step_unchecked


@mutant("fused-multiply-add", "", "arithmetic.md#operations: the trace's noise factor fused")
def _():
    original = trace.f32_list
    state = {"calls": 0}

    # In TraceGenerator.weights_array the third f32_list call rounds the products
    # noise * jit; skipping it fuses the product into the following add.
    def weights_array(self, positions):
        state["calls"] = 0

        def f32_list_fused(xs):
            state["calls"] += 1
            if state["calls"] == 3:  # the products: leave them unrounded
                return xs
            return original(xs)
        trace.f32_list = f32_list_fused
        try:
            return original_weights(self, positions)
        finally:
            trace.f32_list = original
    original_weights = trace.TraceGenerator.weights_array
    trace.TraceGenerator.weights_array = weights_array


@mutant("draws-descending", "random", "random.md#draws: draws index the candidates in descending order")
def _():
    def evict(self, prefill_m=None):
        kept = self.kept
        n = len(kept)
        k = n - self.budget
        if k <= 0:
            return [], []
        remaining = list(range(n - self.params["recent_window"]))[::-1]
        drawn = [remaining.pop(self.rng.uniform(len(remaining))) for _ in range(k)]
        gone = set(drawn)
        self.kept = [p for i, p in enumerate(kept) if i not in gone]
        return sorted(kept[i] for i in drawn), []
    random_mod.RandomPolicy.evict = evict


@mutant("one-sink-too-few", "streamingllm", "streamingllm.md: sinks - 1 positions kept for good")
def _():
    # The port counts the kept sinks as they are admitted.
    original = streamingllm.StreamingLlmPolicy.admitted

    def admitted(self, count):
        saved = self.params["sinks"]
        self.params["sinks"] = max(0, saved - 1)
        try:
            return original(self, count)
        finally:
            self.params["sinks"] = saved
    streamingllm.StreamingLlmPolicy.admitted = admitted


@mutant("seed-pytorch-cache", "streamingllm", "streamingllm.md#chunked-admission: chunks as the seed's PyTorch cache")
def _():
    def evict(self, prefill_m=None):
        s = self.params["sinks"]
        w = self.budget - s
        cap = s + w
        if not hasattr(self, "slots"):
            self.slots, self.current, self.seen = [None] * cap, 0, 0
        admitted = self.kept[self.seen_len:] if hasattr(self, "seen_len") else self.kept
        n = len(admitted)
        if self.current + n <= cap:
            self.slots[self.current:self.current + n] = admitted
            active = self.current + n
        else:
            keep = w - n
            if keep > 0:
                self.slots[s:s + keep] = self.slots[s + n:cap]
            start = s + max(0, keep)
            self.slots[start:cap] = admitted[-min(n, w):][: cap - start]
            active = cap
        self.current = min(self.current + n, cap)
        before = list(self.kept)
        now = sorted(p for p in self.slots[:active] if p is not None)
        self.kept = now
        self.seen_len = len(now)
        return sorted(set(before) - set(now)), []
    streamingllm.StreamingLlmPolicy.evict = evict


@mutant("nan-at-evicted-position-accepted", "", "harness.md#refusals: only the kept weights are checked")
def _():
    from kvspec_port.errors import ATTENTION_LENGTH, POSITION, Refusal, Subject

    original = harness.run_steps

    def run_steps(policy, steps, log, query_heads=1, sets=None, **keys):
        # Scenarios with column totals, keys or values (spec/prefill.md,
        # spec/tensors.md) as the port runs them. The testee hands every
        # step as the full 8-tuple, absent fields empty (since 0.18.0).
        def extra(st):
            return any(len(st) > i and st[i] for i in (4, 5, 6, 7))
        if (query_heads != 1 or keys.get("head_dim") is not None
                or keys.get("value_dim") is not None or any(extra(st) for st in steps)):
            return original(policy, steps, log, query_heads, sets, **keys)
        first = 0
        for index, (admit, row, _heads, queries) in enumerate(st[:4] for st in steps):
            try:
                attention = None
                if row is not None:
                    if len(row) != first:
                        raise Refusal(ATTENTION_LENGTH, Subject("length", ("attention",)), f"step {index}: row length")
                    attention = [row[p] for p in policy.kept]
                if queries:
                    # Query rows (spec/prefill.md) as the port checks them.
                    if admit < 1:
                        raise Refusal(POSITION, Subject("range", ("admit",)), f"step {index} admits no position")
                    prefill = harness._check_queries(index, first, admit, row, _heads, queries, 1)
                    harness._check_query_weights(index, prefill)
                    m, rows = prefill
                    gathered = None
                    if policy.READS_ATTENTION:
                        kept_after = policy.kept + list(range(first, first + admit))
                        gathered = harness._gather_queries(rows[0], kept_after, m)
                    log.steps.append(policy.step_unchecked(first, admit, None, (m, gathered)))
                else:
                    # Policy.step checks only the gathered (kept) weights.
                    log.steps.append(policy.step(first, admit, attention))
            except Refusal as r:
                log.rejection = (r.category, index, r.message, r.subject)
                return
            first += admit
    harness.run_steps = run_steps


@mutant("shift-no-clamp", "window,streamingllm",
        "spans.md#context-shift: d not clamped to max(0, n_left - 1) (a large discard takes every one that may go)")
def _():
    from kvspec_port import spans

    def context_shift_discard(n_left, discard):
        return discard if discard > 0 else n_left // 2
    # The policies import the helper by name.
    from kvspec_port.policies import window
    spans.context_shift_discard = context_shift_discard
    window.context_shift_discard = context_shift_discard
    streamingllm.context_shift_discard = context_shift_discard


@mutant("shift-one-early", "window,streamingllm",
        "spans.md#context-shift: shifts when kept + c >= budget (n_ctx read as the budget), not > budget")
def _():
    from kvspec_port import spans

    def shift_needed(kept, count, budget):
        return kept + count >= budget
    from kvspec_port.policies import window
    spans.shift_needed = shift_needed
    window.shift_needed = shift_needed
    streamingllm.shift_needed = shift_needed


# The blind spots of issue 19: each a porting mistake the 0.6.0 vectors let
# through, named "blind.*". tools/search/rediscover.sh runs the differential
# search against each and must find a disagreement without any vector.

@mutant("blind.mean-by-reciprocal", "h2o,tova,snapkv",
        "heads.md#combining-heads-at-ranking-time: the mean as the sum times 1/m (inexact unless m is a power of two)")
def _():
    from kvspec_port import heads
    original = heads.combine

    def combine(scores, aggregation):
        if aggregation != heads.MEAN:
            return original(scores, aggregation)
        s = original(scores, heads.SUM)
        return s * (np.float64(1.0) / np.float64(len(scores)))
    heads.combine = combine


@mutant("blind.h2o-prefill-assumes-empty-cache", "h2o",
        "prefill.md#the-prefill-step: a prefill step's totals replace the running sums (right only on an empty cache)")
def _():
    from kvspec_port.policies import h2o
    original = h2o.H2oPolicy.record_queries

    def record_queries(self, m, rows):
        self.cumulative = np.zeros(len(self.kept), dtype=np.float64)
        original(self, m, rows)
    h2o.H2oPolicy.record_queries = record_queries


@mutant("blind.h2o-prefill-not-carried", "h2o",
        "h2o.md: decoding after a prefill step restarts the sums from zero")
def _():
    from kvspec_port.policies import h2o
    original_queries = h2o.H2oPolicy.record_queries
    original_record = h2o.H2oPolicy.record

    def record_queries(self, m, rows):
        original_queries(self, m, rows)
        self.after_prefill = True

    def record(self, attention):
        if getattr(self, "after_prefill", False):
            self.cumulative = np.zeros(len(self.kept), dtype=np.float64)
            self.after_prefill = False
        original_record(self, attention)
    h2o.H2oPolicy.record_queries = record_queries
    h2o.H2oPolicy.record = record


@mutant("blind.snapkv-mean-by-obs-window", "snapkv",
        "policies/snapkv.md#at-prefill: the window mean divided by obs_window, not by min(obs_window, m)")
def _():
    original = snapkv.SnapKvPolicy.record_queries

    def record_queries(self, m, rows):
        original(self, m, rows)
        w = min(self.obs, m)
        if self.params["window_reduce"] == 1 and w != self.obs:
            p = len(self.kept) - w
            s = np.zeros(p, dtype=np.float64)
            for row in rows[m - w:]:
                s = s + np.asarray(row[:p], dtype=np.float64)
            self.prefill_scores[:p] = self.pool(s / np.float64(self.obs))
    snapkv.SnapKvPolicy.record_queries = record_queries


@mutant("blind.snapkv-outside-by-obs-window", "snapkv",
        "prefill.md (window_budget 1): the window outside the budget is obs_window slots, not min(obs_window, m)")
def _():
    original = base.ScorePolicy.eviction_plan.__func__

    def eviction_plan(cls, params, n, m):
        k, c = original(cls, params, n, m)
        if m is not None and params["window_budget"] == 1:
            w = params["obs_window"]
            k -= w
            c = min(c, n - w)
        return k, c
    snapkv.SnapKvPolicy.eviction_plan = classmethod(eviction_plan)


@mutant("blind.tova-protect-newest-beyond-recent", "tova",
        "prefill.md (protect_newest): the newest protected on top of the recent window, not inside it")
def _():
    from kvspec_port.policies import tova
    original = base.ScorePolicy.eviction_plan.__func__

    def eviction_plan(cls, params, n, m):
        k, c = original(cls, params, n, m)
        if m is not None and params["protect_newest"] == 1:
            c = c - 1
        return k, c
    tova.TovaPolicy.eviction_plan = classmethod(eviction_plan)


@mutant("blind.subnormals-flushed", "",
        "harness.md#attention-weights: subnormal weights read as zero (flush to zero, as FTZ/DAZ hardware does)")
def _():
    tiny = float(np.finfo(np.float32).tiny)

    def flush(row):
        return None if row is None else [0.0 if 0.0 < w < tiny else w for w in row]
    original = harness.run_steps

    def run_steps(policy, steps, log, query_heads=1, sets=None, **keys):
        # A step's column totals and keys (its fields after the query rows) as given.
        flushed = [(st[0], flush(st[1]), [flush(r) for r in st[2]], [flush(r) for r in st[3]]) + tuple(st[4:])
                   for st in steps]
        return original(policy, flushed, log, query_heads, sets, **keys)
    harness.run_steps = run_steps


# PyramidKV (spec/policies/pyramidkv.md, spec 0.19.0): the layer's budget at
# a prefill step of snapkv with `pyramid` 1 or 2.

@mutant("pyramid-round-half-up", "snapkv",
        "policies/pyramidkv.md#pyramid-1-kvpress: kvpress's budget rounded half up, floor(x + 0.5), not half to even")
def _():
    import math
    from kvspec_port import pyramid

    def round_half_up(x):
        return math.floor(x + 0.5)
    # kvpress_budget looks the name up in the module at each call.
    pyramid.round_half_even = round_half_up


@mutant("pyramid-factory-true-division", "snapkv",
        "policies/pyramidkv.md#pyramid-2-kvcache-factory: the steps by true division, (hi - lo) / (layers - 1), "
        "the layer's budget then floored, not hi - layer * ((hi - lo) // (layers - 1))")
def _():
    import math
    from kvspec_port import pyramid
    original = pyramid.factory_budget

    def factory_budget(n, budget, w, beta, layer, layers):
        if n < budget + w or n < 2 * budget or layers == 1:
            return original(n, budget, w, beta, layer, layers)
        lo = budget // beta
        hi = 2 * budget - lo
        if hi >= n - w:
            hi = n - w
            lo = 2 * budget - hi
        return math.floor(hi - layer * ((hi - lo) / (layers - 1)))
    pyramid.factory_budget = factory_budget


# SimLayerKV (spec/policies/simlayerkv.md, spec 0.20.0): one layer's
# lazy-or-not decision at a prefill step.

def _simlayerkv_evict(lazy, kept_recent):
    """SimLayerKvPolicy.evict_prefill with the comparison (lazy(score,
    threshold)) or the kept recent region's length (kept_recent(n_recent,
    n_last)) changed."""
    from kvspec_port.policies import simlayerkv

    def evict_prefill(self, per_head):
        p = self.params
        n_initial, n_recent, n_last = p["n_initial"], p["n_recent"], p["n_last"]
        n = len(self.kept)
        if p["lazy_threshold_ppm"] == simlayerkv.PPM or n <= n_initial + n_recent + n_last:
            return []
        score = simlayerkv.lazy_score(n, n_initial, n_recent, n_last, per_head)
        if not lazy(score, p["lazy_threshold_ppm"] / 1000000.0):
            return []
        end = n - kept_recent(n_recent, n_last)
        victims = self.kept[n_initial:end]
        del self.kept[n_initial:end]
        return victims
    simlayerkv.SimLayerKvPolicy.evict_prefill = evict_prefill


@mutant("simlayerkv-greater-equal", "simlayerkv",
        "policies/simlayerkv.md#tie-breaking: lazy when the score equals the threshold (>=, not >)")
def _():
    _simlayerkv_evict(lambda score, threshold: score >= threshold, lambda n_recent, n_last: n_recent - n_last)


@mutant("simlayerkv-keeps-n-recent", "simlayerkv",
        "policies/simlayerkv.md#how-it-works: a lazy layer keeps the last n_recent positions, not n_recent - n_last")
def _():
    _simlayerkv_evict(lambda score, threshold: score > threshold, lambda n_recent, n_last: n_recent)


def main():
    if sys.argv[1:] == ["--list"]:
        for name, (policies, rule, _) in MUTANTS.items():
            print(f"{name}\t{policies or 'all'}\t{rule}")
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in MUTANTS:
        print(f"usage: run_mutant.py NAME | --list; names: {', '.join(MUTANTS)}", file=sys.stderr)
        return 2
    MUTANTS[sys.argv[1]][2]()
    from kvspec_port import testee
    return testee.main()


if __name__ == "__main__":
    sys.exit(main())
