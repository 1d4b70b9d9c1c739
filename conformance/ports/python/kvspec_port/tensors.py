"""Keys in a scenario (spec/tensors.md, the feature `tensors`, spec 0.16.0).

A scenario with `head_dim` d (`Scenario.head_dim`) carries, at every step,
one `HeadVectors` per KV head (`Step.keys`), KV head 0 first, each holding
the keys of the step's admitted positions, position ascending, each key's
d binary32 entries in channel order (spec/tensors.md#the-fields). Here a
step's keys are a list of Hkv lists of floats (binary32 values, exact as
Python floats), as the testee decodes them.

The checks (spec/tensors.md#checks, spec/harness.md#refusals):
`check_scenario_keys` at the scenario's shape (step -1, after the head
counts and before a trace's parameters); `check_keys` at step check 3,
after the column totals' shape; `check_key_values` at step check 4, after
the column totals' values. Every policy's scenario is checked; only a
policy that reads keys (`READS_KEYS`: `knorm`, `keydiff`) receives them
(spec/tensors.md#what-a-policy-sees): `kv_range` says which KV heads each
of its kept sets covers (harness.key_sets builds the sets). This module
imports no policy and no heads, so that a policy can import it.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import ATTENTION_LENGTH, ATTENTION_VALUE, INVALID_HEADS, INVALID_TRACE, Refusal, Subject

# spec/tensors.md#checks, scenario shape 1: `head_dim` in [1, 1024].
MAX_HEAD_DIM = 1024


def check_scenario_keys(head_dim: Optional[int], has_trace: bool, reads_keys: bool) -> None:
    """spec/tensors.md#checks, 1 (the scenario's shape, step -1), in order:
    `head_dim`, when present, in [1, 1024] (INVALID_HEADS, `range
    head_dim`); no `head_dim` beside a generated trace (INVALID_TRACE,
    `rule head_dim trace`); a policy that reads keys over a scenario
    without `head_dim` (INVALID_HEADS, `range head_dim`). `head_dim`: None
    when the field is absent."""
    if head_dim is not None and not 1 <= head_dim <= MAX_HEAD_DIM:
        raise Refusal(
            INVALID_HEADS, Subject("range", ("head_dim",)),
            f"head_dim must be in [1, {MAX_HEAD_DIM}], got {head_dim}",
        )
    if head_dim is not None and has_trace:
        raise Refusal(
            INVALID_TRACE, Subject("rule", ("head_dim", "trace")),
            f"a generated trace has no keys to give: head_dim {head_dim} beside a trace",
        )
    if head_dim is None and reads_keys:
        raise Refusal(
            INVALID_HEADS, Subject("range", ("head_dim",)),
            "the policy reads keys: the scenario has no head_dim",
        )


def check_keys(index: int, admit: int, keys: Sequence[Sequence[float]], head_dim: Optional[int],
               kv_heads: int) -> Optional[List[np.ndarray]]:
    """The keys' part of step check 3 (spec/tensors.md#checks, 2), after the
    column totals' shape: in a scenario with keys, Hkv entries, then each
    of `admit x d` values, KV head 0 first; in one without, none.
    ATTENTION_LENGTH, `length keys`.

    Returns None (a scenario without keys) or, per KV head, KV head 0
    first, its keys as an (admit, d) binary64 array (exact: binary32
    values). Their entries are checked by `check_key_values` (check 4).
    """
    if head_dim is None:
        if len(keys) != 0:
            raise Refusal(
                ATTENTION_LENGTH, Subject("length", ("keys",)),
                f"step {index}: {len(keys)} key entries, a scenario without head_dim has none",
            )
        return None
    if len(keys) != kv_heads:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", ("keys",)),
            f"step {index}: {len(keys)} key entries, {kv_heads} KV heads",
        )
    want = admit * head_dim
    for g, entry in enumerate(keys):
        if len(entry) != want:
            raise Refusal(
                ATTENTION_LENGTH, Subject("length", ("keys",)),
                f"step {index}: KV head {g}'s keys hold {len(entry)} values, want admit {admit} x "
                f"head_dim {head_dim}: {want}",
            )
    return [np.asarray(entry, dtype=np.float64).reshape(admit, head_dim) for entry in keys]


def check_key_values(index: int, keys: Optional[List[np.ndarray]]) -> None:
    """The keys' part of step check 4 (spec/tensors.md#checks, 3), after the
    column totals' values: every entry finite, KV head 0 first and within it
    from index 0 up (negative entries and -0.0 accepted: keys are signed).
    ATTENTION_VALUE, `value keys`."""
    if keys is None:
        return
    for g, entry in enumerate(keys):
        flat = entry.ravel()
        bad = ~np.isfinite(flat)
        if bad.any():
            i = int(np.argmax(bad))  # from index 0 up
            raise Refusal(
                ATTENTION_VALUE, Subject("value", ("keys",)),
                f"step {index}: KV head {g}'s key entry {i} (position {i // entry.shape[1]} of the step, "
                f"channel {i % entry.shape[1]}) is {flat[i]!r}",
            )


def kv_range(first_head: int, end_head: int, query_heads: int, kv_heads: int) -> Tuple[int, int]:
    """The KV heads a kept set covering query heads [first_head, end_head)
    covers, as a half-open range (spec/tensors.md#what-a-policy-sees: query
    head h belongs to KV head h / G, G = Hq / Hkv; a set's query heads are
    consecutive, so its KV heads are too)."""
    g = query_heads // kv_heads
    return first_head // g, (end_head - 1) // g + 1
