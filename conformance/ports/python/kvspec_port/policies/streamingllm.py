"""streamingllm: `sinks` first positions plus the latest `budget - sinks`.

spec/policies/streamingllm.md#at-prefill: one rule for every step. With the
step budget B (spec/prefill.md#when-a-policy-evicts: `budget`, a ratio
budget at a prefill step with `ratio_ppm` above 0, or none at a decode step
with `prefill_only` 1), a step keeping n > B positions after admission
evicts the first n - B kept positions in this order: the non-sinks by
ascending position, then the sinks by ascending position. With B > sinks
that is #how-it-works and #chunked-admission: victims = kept[S : n - W].

The sinks are the first `sinks` positions ever admitted. Positions are
admitted in ascending order and a sink precedes every non-sink, so the
kept sinks are always the first `sinks_kept` kept slots.

With `evict_at` 1 or 2 (spec/spans.md#when-room-is-made) it makes room
before admitting instead, taking non-sinks by ascending position and never
a sink, and evicts nothing after; those require `prefill_only` 0 and
`ratio_ppm` 0, so the budget is always `budget` then.

With `context_shift` 1 (spec/spans.md#context-shift) it makes room before
admitting only when the step does not fit: the oldest d of the kept
non-sinks in one block (llama.cpp's shift), never a sink; it too requires
`prefill_only` 0 and `ratio_ppm` 0, so no sink is ever evicted then.
"""

from ..errors import INVALID_PARAMETER, Refusal, Subject
from ..prefill import PREFILL_ONLY, RATIO_PPM
from ..spans import (CONTEXT_SHIFT, DISCARD, EVICT_AT, POSITION_IDS, SPAN_CHUNK, SPAN_WINDOW, SPANS,
                     check_context_shift_relations, check_span_relations, context_shift_discard,
                     shift_needed)
from ..blocks import BLOCK, blocks_to_evict, candidate_starts
from ..triggers import TRIGGERS
from .base import BUDGET, U32_MAX, BudgetPolicy


class StreamingLlmPolicy(BudgetPolicy):
    NAME = "streamingllm"
    # spec/spans.md#parameters: after the card's own; spec/triggers.md#parameters,
    # then spec/blocks.md#parameters, last.
    PARAMS = (BUDGET, ("sinks", 4, 0, U32_MAX - 1), PREFILL_ONLY, RATIO_PPM,
              SPANS, SPAN_WINDOW, SPAN_CHUNK, EVICT_AT, POSITION_IDS, CONTEXT_SHIFT, DISCARD) + TRIGGERS + (BLOCK,)

    @classmethod
    def check_relations(cls, values):
        if not values["sinks"] < values["budget"]:
            raise Refusal(
                INVALID_PARAMETER,
                Subject("rule", ("sinks", "budget")),
                f"streamingllm: sinks must be below budget, got sinks {values['sinks']}, "
                f"budget {values['budget']}",
            )
        # spec/prefill.md's rules relate recent_window and adaptive, which
        # streamingllm does not take: none applies. Then spec/spans.md's,
        # then the context shift's (budget - sinks >= 2).
        check_span_relations(cls.NAME, values)
        check_context_shift_relations(cls.NAME, values, values["sinks"])

    def __init__(self, params, rng):
        super().__init__(params, rng)
        self.admitted_total = 0  # positions admitted so far
        self.sinks_kept = 0  # kept sinks: kept slots [0, sinks_kept)

    def admitted(self, count):
        s = self.params["sinks"]
        self.sinks_kept += max(0, min(count, s - self.admitted_total))
        self.admitted_total += count

    def sinks_held(self):
        return self.sinks_kept

    def evict_before(self, count):
        # spec/spans.md#when-room-is-made: the first non-sinks (slots
        # ns .. ns + k - 1) until kept + count <= budget (`evict_at` 1) or
        # kept <= budget - 1 (`evict_at` 2); never a sink, so a chunk longer
        # than budget - sinks takes every non-sink and stays whole.
        kept = self.kept
        ns = self.sinks_kept
        if self.params["context_shift"] == 1:
            # spec/spans.md#context-shift: only when kept + count > budget;
            # n_left = the kept non-sinks, the oldest d of them go (slots
            # ns .. ns + d - 1), never a sink; at most one shift, and a chunk
            # that still does not fit stays whole.
            if not shift_needed(len(kept), count, self.budget):
                return []
            d = context_shift_discard(len(kept) - ns, self.params["discard"])
            victims = kept[ns:ns + d]
            del kept[ns:ns + d]
            return victims
        if self.params["evict_at"] == 1:
            k = len(kept) + count - self.budget
        else:
            k = len(kept) - (self.budget - 1)
        k = min(k, len(kept) - ns)
        if k <= 0:
            return []
        victims = kept[ns:ns + k]
        del kept[ns:ns + k]
        return victims

    def evict(self, m=None):
        kept = self.kept
        n = len(kept)
        b = self.step_budget(m)
        if b is None or n <= b:
            return [], []
        k = n - b
        ns = self.sinks_kept
        non_sinks = n - ns
        if k <= non_sinks:
            # The first k non-sinks (slots ns .. ns + k - 1).
            victims = kept[ns:ns + k]
            del kept[ns:ns + k]
        else:
            # Every non-sink, then the lowest k - non_sinks sinks; reported
            # ascending (the sinks come first in position order).
            gone_sinks = k - non_sinks
            victims = kept[:gone_sinks] + kept[ns:]
            del kept[ns:]
            del kept[:gone_sinks]
            self.sinks_kept -= gone_sinks
        return victims, []

    def evict_blocks(self, m=None):
        # spec/blocks.md#ranking-blocks: the k candidate blocks with the
        # lowest first positions; a block holding a sink is no candidate
        # (the kept sinks are the first `sinks_kept` slots). With `block`
        # above 1 no ratio budget is allowed (spec/blocks.md#rules), so the
        # step budget is `budget` (or none at a decode step with
        # `prefill_only` 1) and no sink is ever evicted.
        b = self.step_budget(m)
        if b is None:
            return [], []
        block = self.params["block"]
        k = blocks_to_evict(len(self.kept), b, block)
        if k <= 0:
            return [], []
        start = candidate_starts(self.sinks_kept, len(self.kept), block)[0]
        victims = self.kept[start:start + k * block]
        del self.kept[start:start + k * block]
        return victims, []
