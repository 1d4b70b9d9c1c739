"""Blocks: evicting whole blocks of positions (spec/blocks.md, the feature
`blocks`, spec 0.13.0).

Every policy that evicts (`window`, `streamingllm`, `h2o`, `tova`,
`snapkv`, `random`; not `full`) takes `block`, and the score-based ones
(`h2o`, `tova`, `snapkv`) `block_score` after it, listed after `slack` and
`interval` (spec/blocks.md#parameters). With `block` 1 nothing changes: a
policy's `evict_fired` (policies/base.py, heads.py) calls its `evict`,
untouched since 0.12.0, and calls `evict_blocks` only with `block` above 1.

A kept set's slots fall into blocks of B = `block`: slots jB .. jB + B - 1
are block j (spec/blocks.md#blocks). A block of B positions is closed; the
last one, holding n mod B positions when that is not 0, is open. A step
that evicts, keeping n after its admissions with step budget b (`budget`;
no rule allows a ratio budget with blocks), evicts

    k = floor(n / B) - b / B    closed blocks, if above 0

(spec/blocks.md#how-many-blocks-go), chosen among the candidate blocks:
closed, and every slot in them a candidate of the card's rule
(spec/blocks.md#candidates). The card's candidates here are always the
kept slots [lo, c) (`lo` the kept sinks of `streamingllm`, else 0; `c` the
slots before the recent window, or tova's newest left out at a prefill
step), so the candidate blocks are those with lo <= jB and jB + B <= c.
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from .errors import INVALID_PARAMETER, Refusal, Subject

# spec/blocks.md#parameters: after `slack` and `interval`, in this order;
# `block_score` only in the score-based policies.
BLOCK = ("block", 1, 1, 65536)
BLOCK_SCORE = ("block_score", 0, 0, 2)  # 0 sum, 1 mean, 2 max
SUM, MEAN, MAX = 0, 1, 2

# spec/blocks.md#rules, 1: multiples of `block`, in this order, those the
# policy takes.
MULTIPLES = ("budget", "recent_window", "sinks")
# spec/blocks.md#rules, 2: 0 with `block` above 1, in this order, those the
# policy takes; the first that is not is named.
ZEROS = ("ratio_ppm", "adaptive", "evict_at", "context_shift", "window_budget")


def check_block_relations(name: str, values: dict) -> None:
    """spec/blocks.md#rules: checked after every other rule of the policy
    (so after spec/triggers.md#combinations'), in this order;
    INVALID_PARAMETER. A policy that takes no `block` (`full`) passes."""
    if "block" not in values:
        return
    block = values["block"]
    # 1. `budget`, then `recent_window` and `sinks`, are multiples of
    # `block` (with `block` 1 every integer is).
    for pname in MULTIPLES:
        if pname in values and values[pname] % block != 0:
            raise Refusal(
                INVALID_PARAMETER,
                Subject("rule", ("block", pname)),
                f"{name}: {pname} must be a multiple of block, got {pname} {values[pname]}, block {block}",
            )
    # 2. With `block` above 1, each of the other rules the policy takes is 0.
    if block > 1:
        for pname in ZEROS:
            if values.get(pname, 0) != 0:
                raise Refusal(
                    INVALID_PARAMETER,
                    Subject("rule", ("block", pname)),
                    f"{name}: block above 1 needs {pname} 0, got block {block}, {pname} {values[pname]}",
                )


def blocks_to_evict(n: int, budget: int, block: int) -> int:
    """spec/blocks.md#how-many-blocks-go: floor(n / B) - budget / B closed
    blocks (`budget` a multiple of B); the step evicts only when this is
    above 0, leaving budget + (n mod B) kept."""
    return n // block - budget // block


def candidate_starts(lo: int, c: int, block: int) -> range:
    """The first slots of the candidate blocks, ascending
    (spec/blocks.md#candidates): every block j with lo <= jB and
    jB + B <= c, the card's candidates being the slots [lo, c). The open
    block ends past n >= c, so it is never among them."""
    first = -(-lo // block)  # the first block starting at or after lo
    return range(first * block, (c // block) * block, block)


def block_scores(scores: np.ndarray, starts: np.ndarray, block: int, mode: int) -> np.ndarray:
    """Each candidate block's score from its positions' binary64 scores
    (spec/blocks.md#ranking-blocks), elementwise over the blocks:

    - 0 `sum`: its B scores added in slot order into a binary64 starting at
      +0.0 (spec/arithmetic.md#reductions: an explicit loop, one binary64
      addition per slot, never a library sum);
    - 1 `mean`: that sum divided by B, one correctly rounded binary64
      division (B <= 65536 is exact as a binary64);
    - 2 `max`: the largest of its B scores (a maximum selects one operand
      exactly; scores are never NaN).
    """
    if mode == MAX:
        out = scores[starts]
        for i in range(1, block):
            out = np.maximum(out, scores[starts + i])
        return out
    total = np.zeros(len(starts), dtype=np.float64)  # +0.0 per block
    for i in range(block):  # slot order: the block's first slot first
        total = total + scores[starts + i]
    if mode == MEAN:
        return total / np.float64(block)
    return total


def rank_blocks(scores, kept: List[int], k: int, c: int, block: int,
                mode: int) -> Tuple[List[int], List[int], List[Tuple[int, float]]]:
    """spec/blocks.md#ranking-blocks for a score-based policy: the `k`
    candidate blocks (slots [0, c): the score-based cards have no sinks) of lowest block score, equal block
    scores evicting the lower first position.

    Returns the victims' slots (every slot of every victim block,
    ascending), the victims (ascending positions) and the cut
    (spec/blocks.md#the-cut): the victim blocks in rank order, then up to 4
    more candidate blocks, each as (first position, block score).
    """
    starts = np.asarray(candidate_starts(0, c, block), dtype=np.intp)
    values = block_scores(np.asarray(scores, dtype=np.float64), starts, block, mode)
    firsts = np.asarray(kept, dtype=np.int64)[starts]
    # Rank: block score ascending, then first position ascending (a total
    # order: first positions are distinct). lexsort compares the binary64
    # block scores exactly; its last key is the primary one.
    ranked = np.lexsort((firsts, values))[:k + 4].tolist()
    cut = [(int(firsts[i]), float(values[i])) for i in ranked]
    victim_slots = sorted(int(starts[i]) + s for i in ranked[:k] for s in range(block))
    victims = [kept[s] for s in victim_slots]  # kept order is ascending
    return victim_slots, victims, cut


def draw_blocks(rng, k: int, c: int, block: int) -> List[int]:
    """spec/blocks.md#ranking-blocks for `random`: `k` draws as its card
    makes them (spec/policies/random.md#draws) over the candidate blocks
    (slots [0, c)) in ascending order: each `Uniform(m)`, `m` the candidate
    blocks not drawn yet, takes the block at that index among them.

    Returns the victims' slots, ascending."""
    remaining = list(candidate_starts(0, c, block))
    slots = []
    for _ in range(k):
        start = remaining.pop(rng.uniform(len(remaining)))
        slots.extend(range(start, start + block))
    return sorted(slots)
