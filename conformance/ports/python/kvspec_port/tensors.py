"""Keys and values in a scenario (spec/tensors.md, the features `tensors`,
spec 0.16.0, and `values`, spec 0.18.0).

A scenario with `head_dim` d (`Scenario.head_dim`) carries, at every step,
one `HeadVectors` per KV head (`Step.keys`), KV head 0 first, each holding
the keys of the step's admitted positions, position ascending, each key's
d binary32 entries in channel order (spec/tensors.md#the-fields); one with
`value_dim` e (`Scenario.value_dim`) carries the values the same way
(`Step.values`, e entries each). Here a step's keys (values) are a list of
Hkv lists of floats (binary32 values, exact as Python floats), as the
testee decodes them.

The checks (spec/tensors.md#checks, spec/harness.md#refusals):
`check_scenario_tensors` at the scenario's shape (step -1, after the head
counts and before a trace's parameters); `check_vectors` at step check 3,
after the column totals' shape, keys then values; `check_vector_values` at
step check 4, after the column totals' values, keys then values. Every
policy's scenario is checked; only a policy that reads keys (`READS_KEYS`:
`knorm`, `keydiff`, `lagkv`) receives them, and only one that reads values
(`READS_VALUES`: `lagkv`) receives values
(spec/tensors.md#what-a-policy-sees): `kv_range` says which KV heads each
of its kept sets covers (harness.key_sets builds the sets). This module
imports no policy and no heads, so that a policy can import it.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import ATTENTION_LENGTH, ATTENTION_VALUE, INVALID_HEADS, INVALID_TRACE, Refusal, Subject

# spec/tensors.md#checks, scenario shape 1 and 2: `head_dim` and
# `value_dim` in [1, 1024].
MAX_HEAD_DIM = 1024
MAX_VALUE_DIM = 1024


def check_scenario_tensors(head_dim: Optional[int], value_dim: Optional[int], has_trace: bool,
                           reads_keys: bool, reads_values: bool, min_head_dim: int,
                           min_value_dim: int) -> None:
    """spec/tensors.md#checks, 1 (the scenario's shape, step -1), in order:
    1. `head_dim`, when present, in [1, 1024] (INVALID_HEADS, `range
    head_dim`); 2. `value_dim`, when present, in [1, 1024] (INVALID_HEADS,
    `range value_dim`); 3. no `head_dim` beside a generated trace
    (INVALID_TRACE, `rule head_dim trace`); 4. nor `value_dim` (`rule
    value_dim trace`); 5. a policy that reads keys over a scenario without
    `head_dim`, or with one below `min_head_dim`, the least its card names
    (INVALID_HEADS, `range head_dim`); 6. a policy that reads values over
    one without `value_dim`, or with one below `min_value_dim`
    (INVALID_HEADS, `range value_dim`). `head_dim`, `value_dim`: None when
    the field is absent."""
    if head_dim is not None and not 1 <= head_dim <= MAX_HEAD_DIM:
        raise Refusal(
            INVALID_HEADS, Subject("range", ("head_dim",)),
            f"head_dim must be in [1, {MAX_HEAD_DIM}], got {head_dim}",
        )
    if value_dim is not None and not 1 <= value_dim <= MAX_VALUE_DIM:
        raise Refusal(
            INVALID_HEADS, Subject("range", ("value_dim",)),
            f"value_dim must be in [1, {MAX_VALUE_DIM}], got {value_dim}",
        )
    if head_dim is not None and has_trace:
        raise Refusal(
            INVALID_TRACE, Subject("rule", ("head_dim", "trace")),
            f"a generated trace has no keys to give: head_dim {head_dim} beside a trace",
        )
    if value_dim is not None and has_trace:
        raise Refusal(
            INVALID_TRACE, Subject("rule", ("value_dim", "trace")),
            f"a generated trace has no values to give: value_dim {value_dim} beside a trace",
        )
    if reads_keys:
        check_least(head_dim, min_head_dim, "head_dim")
    if reads_values:
        check_least(value_dim, min_value_dim, "value_dim")


def check_least(dim: Optional[int], least: int, name: str) -> None:
    """spec/tensors.md#checks, 1.5 and 1.6: a policy that reads keys
    (`name` `head_dim`) or values (`value_dim`) needs the field, at least
    `least` (INVALID_HEADS, `range head_dim` or `range value_dim`)."""
    if dim is None:
        raise Refusal(
            INVALID_HEADS, Subject("range", (name,)),
            f"the policy reads the scenario's {name}, which it does not have",
        )
    if dim < least:
        raise Refusal(
            INVALID_HEADS, Subject("range", (name,)),
            f"the policy needs {name} at least {least}, got {dim}",
        )


def check_vectors(index: int, admit: int, given: Sequence[Sequence[float]], dim: Optional[int],
                  kv_heads: int, field: str) -> Optional[List[np.ndarray]]:
    """The keys' (`field` "keys", `dim` d) or values' (`field` "values",
    `dim` e) part of step check 3 (spec/tensors.md#checks, 2), after the
    column totals' shape, keys before values: in a scenario with the
    field's dimension, Hkv entries, then each of `admit x dim` values, KV
    head 0 first; in one without, none. ATTENTION_LENGTH, `length keys`
    or `length values`.

    Returns None (a scenario without them) or, per KV head, KV head 0
    first, its vectors as an (admit, dim) binary64 array (exact: binary32
    values). Their entries are checked by `check_vector_values` (check 4).
    """
    if dim is None:
        if len(given) != 0:
            raise Refusal(
                ATTENTION_LENGTH, Subject("length", (field,)),
                f"step {index}: {len(given)} {field} entries, a scenario without their dimension has none",
            )
        return None
    if len(given) != kv_heads:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", (field,)),
            f"step {index}: {len(given)} {field} entries, {kv_heads} KV heads",
        )
    want = admit * dim
    for g, entry in enumerate(given):
        if len(entry) != want:
            raise Refusal(
                ATTENTION_LENGTH, Subject("length", (field,)),
                f"step {index}: KV head {g}'s {field} hold {len(entry)} values, want admit {admit} x "
                f"{dim}: {want}",
            )
    return [np.asarray(entry, dtype=np.float64).reshape(admit, dim) for entry in given]


def check_vector_values(index: int, vectors: Optional[List[np.ndarray]], field: str) -> None:
    """The keys' or values' part of step check 4 (spec/tensors.md#checks,
    3), after the column totals' values, keys before values: every entry
    finite, KV head 0 first and within it from index 0 up (negative
    entries and -0.0 accepted: keys and values are signed).
    ATTENTION_VALUE, `value keys` or `value values`."""
    if vectors is None:
        return
    for g, entry in enumerate(vectors):
        flat = entry.ravel()
        bad = ~np.isfinite(flat)
        if bad.any():
            i = int(np.argmax(bad))  # from index 0 up
            raise Refusal(
                ATTENTION_VALUE, Subject("value", (field,)),
                f"step {index}: KV head {g}'s {field} entry {i} (position {i // entry.shape[1]} of the "
                f"step, channel {i % entry.shape[1]}) is {flat[i]!r}",
            )


def kv_range(first_head: int, end_head: int, query_heads: int, kv_heads: int) -> Tuple[int, int]:
    """The KV heads a kept set covering query heads [first_head, end_head)
    covers, as a half-open range (spec/tensors.md#what-a-policy-sees: query
    head h belongs to KV head h / G, G = Hq / Hkv; a set's query heads are
    consecutive, so its KV heads are too)."""
    g = query_heads // kv_heads
    return first_head // g, (end_head - 1) // g + 1
