"""The harness: configuration and RunScenario (spec/harness.md).

`configure` and `make_policy` follow spec/harness.md#configuration;
`run_scenario` runs a scenario (explicit steps, spec/harness.md#scenarios, or
a generated trace, spec/trace.md), with one head or several (spec/heads.md),
with or without keys and values (spec/tensors.md), and returns an eviction log
(spec/harness.md#eviction-log, spec/heads.md#the-eviction-log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .errors import (
    ATTENTION_LENGTH,
    ATTENTION_VALUE,
    INVALID_PARAMETER,
    INVALID_TRACE,
    POSITION,
    UNKNOWN_POLICY,
    Refusal,
    Subject,
)
from .f32 import weight_ok
from .heads import check_head_counts, evict_shared, kept_sets, sets_of
from .policies import REGISTRY
from .policies.base import MAX_POSITION, Policy, StepOutcome
from .rng import Rng
from . import trace as trace_mod
from . import tensors
from .blocks import check_block_relations
from .triggers import check_trigger_relations


@dataclass
class EvictionLog:
    steps: List[StepOutcome] = field(default_factory=list)
    # (category, step index or -1, message, subject) when refused.
    rejection: Optional[Tuple[str, int, str, Subject]] = None


def configure(name: str, parameters: Sequence[Tuple[str, int]]):
    """spec/harness.md#configuration, checks in order; raises Refusal.

    Returns the policy's class and its parameter values (defaults filled in).
    """
    cls = REGISTRY.get(name)
    if cls is None:
        raise Refusal(UNKNOWN_POLICY, Subject("unknown", ("name",)), f"unknown policy '{name}'")
    known = [p[0] for p in cls.PARAMS]
    given = {}
    for pname, value in parameters:
        if pname not in known:
            takes = ", ".join(known) if known else "no parameters"
            raise Refusal(
                INVALID_PARAMETER, Subject("unknown", (pname,)),
                f"{name}: unknown parameter '{pname}'; {name} takes {takes}"
            )
        if pname in given:
            raise Refusal(INVALID_PARAMETER, Subject("repeated", (pname,)), f"{name}: parameter '{pname}' given twice")
        given[pname] = value
    values = {}
    for pname, default, lo, hi in cls.PARAMS:
        v = given.get(pname, default)
        if not lo <= v <= hi:
            raise Refusal(
                INVALID_PARAMETER, Subject("range", (pname,)),
                f"{name}: {pname} must be in [{lo}, {hi}], got {v}",
            )
        values[pname] = v
    cls.check_relations(values)
    # spec/triggers.md#combinations: after every other rule of the policy.
    check_trigger_relations(name, values)
    # spec/blocks.md#rules: after those.
    check_block_relations(name, values)
    return cls, values


def make_policy(name: str, parameters: Sequence[Tuple[str, int]], seed: int = 0) -> Policy:
    """spec/harness.md#configuration, checks in order; raises Refusal."""
    cls, values = configure(name, parameters)
    return cls(values, Rng(seed))


def _check_rows(index: int, first: int, row, heads, query_heads: int):
    """The rows' part of step check 3 (spec/harness.md#refusals,
    spec/heads.md#rows-per-head): their number and lengths.

    Returns None for null attention, else the rows, head 0 first: with one
    query head the step's `attention` row as given; with several, a
    (query_heads, first) binary64 array. Their weights are checked by
    `_check_row_weights` (check 4).
    """
    if query_heads == 1:
        if heads:
            raise Refusal(
                ATTENTION_LENGTH, Subject("length", ("heads",)),
                f"step {index}: {len(heads)} rows in heads, a scenario with one query head has none"
            )
        if row is None:
            return None
        if len(row) != first:
            raise Refusal(
                ATTENTION_LENGTH,
                Subject("length", ("attention",)),
                f"step {index}: row has {len(row)} weights, {first} positions were admitted before",
            )
        return row
    if row is None and not heads:
        return None  # null for every head at once
    if row is not None:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", ("attention",)),
            f"step {index}: attention is present, {query_heads} query heads carry rows in heads"
        )
    if len(heads) != query_heads:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", ("heads",)),
            f"step {index}: {len(heads)} rows, {query_heads} query heads",
        )
    # Every row's length before any weight.
    for h, r in enumerate(heads):
        if len(r) != first:
            raise Refusal(
                ATTENTION_LENGTH,
                Subject("length", ("heads",)),
                f"step {index}: head {h}'s row has {len(r)} weights, {first} positions were admitted before",
            )
    return np.asarray(heads, dtype=np.float64).reshape(query_heads, first)


def _check_row_weights(index: int, rows, query_heads: int) -> None:
    """The rows' part of step check 4: every weight, head 0 first, index 0 up."""
    if rows is None:
        return
    if query_heads == 1:
        for i, w in enumerate(rows):
            if not weight_ok(w):
                raise Refusal(ATTENTION_VALUE, Subject("value", ("attention",)), f"step {index}: weight {i} is {w!r}")
        return
    # spec/harness.md#attention-weights: finite, sign bit clear.
    bad = ~np.isfinite(rows) | np.signbit(rows)
    if bad.any():
        h, i = divmod(int(np.argmax(bad.ravel())), rows.shape[1])  # head 0 first, index 0 up
        raise Refusal(
            ATTENTION_VALUE, Subject("value", ("heads",)),
            f"step {index}: head {h}, weight {i} is {rows[h, i]!r}",
        )


def _check_queries(index: int, first: int, admit: int, row, heads, queries, query_heads: int):
    """The query rows' part of step check 3 (spec/prefill.md#checks), after
    the rows': no `attention` and no `heads` row; their number a multiple of
    Hq; m at most `admit`; then each row, head 0 first and in ascending query
    position, has q + 1 weights for its query q. ATTENTION_LENGTH.

    Returns None (no query rows) or (m, rows): rows[h][j] is head h's row of
    query first + admit - m + j, as a binary64 array (exact: binary32 values).
    """
    if not queries:
        return None
    if row is not None or heads:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", ("queries",)),
            f"step {index}: a step with query rows carries no other row",
        )
    total = len(queries)
    if total % query_heads != 0:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", ("queries",)),
            f"step {index}: {total} query rows is not a multiple of {query_heads} query heads"
        )
    m = total // query_heads
    if m > admit:
        raise Refusal(
            ATTENTION_LENGTH, Subject("length", ("queries",)),
            f"step {index}: {m} query rows per head, the step admits {admit}",
        )
    q0 = first + admit - m  # the chunk's last m positions
    for t, r in enumerate(queries):
        h, j = divmod(t, m)
        if len(r) != q0 + j + 1:
            raise Refusal(
                ATTENTION_LENGTH,
                Subject("length", ("queries",)),
                f"step {index}: head {h}'s query row for position {q0 + j} has {len(r)} weights, want {q0 + j + 1}",
            )
    rows = [[np.asarray(queries[h * m + j], dtype=np.float64) for j in range(m)] for h in range(query_heads)]
    return m, rows


def _check_query_weights(index: int, prefill) -> None:
    """The query rows' part of step check 4 (spec/prefill.md#checks): every
    weight, head 0 first, then ascending query position, index 0 up."""
    if prefill is None:
        return
    m, rows = prefill
    for h, head_rows in enumerate(rows):
        for j, r in enumerate(head_rows):
            bad = ~np.isfinite(r) | np.signbit(r)
            if bad.any():
                i = int(np.argmax(bad))
                raise Refusal(
                    ATTENTION_VALUE, Subject("value", ("queries",)),
                    f"step {index}: head {h}, query row {j}, weight {i} is {r[i]!r}",
                )


def _check_totals(index: int, first: int, admit: int, queries, totals, total_rows: int, query_heads: int):
    """The column totals' part of step check 3 (spec/prefill.md#their-checks),
    after the query rows' shape: if the step has totals or a `total_rows`
    above 0, it has query rows, Hq totals, 1 <= R <= admit; then each
    head's totals, head 0 first, hold exactly a + c values (positions
    0 .. a+c-1). ATTENTION_LENGTH.

    Returns None (no totals) or (R, sums): sums a (query_heads, a + c)
    binary64 array, head 0 first, exactly as given. Their values are
    checked by `_check_total_values` (check 4).
    """
    if not totals and total_rows == 0:
        return None
    # In the spec's order: query rows beside them and one list per query
    # head (else `length totals`), then R in 1..admit (else `length
    # total_rows`, spec/harness.md#subjects).
    in_place = bool(queries) and len(totals) == query_heads
    if not in_place or not 1 <= total_rows <= admit:
        raise Refusal(
            ATTENTION_LENGTH,
            Subject("length", ("total_rows" if in_place else "totals",)),
            f"step {index}: column totals need query rows beside them, one list per query head "
            f"({query_heads}) and total_rows 1..admit ({admit}); got {len(totals)} lists, "
            f"total_rows {total_rows}" + ("" if queries else ", no query rows"),
        )
    positions = first + admit
    for h, t in enumerate(totals):
        if len(t) != positions:
            raise Refusal(
                ATTENTION_LENGTH,
                Subject("length", ("totals",)),
                f"step {index}: head {h}'s column totals hold {len(t)} values, want one per position "
                f"0..{positions - 1}: {positions}",
            )
    return total_rows, np.asarray(totals, dtype=np.float64).reshape(query_heads, positions)


def _check_total_values(index: int, totals) -> None:
    """The column totals' part of step check 4 (spec/prefill.md#their-checks),
    after the query rows' weights: every total, head 0 first and within a
    head from position 0 up, is finite with its sign bit clear (binary64:
    NaN, infinities, -0.0 and every negative refused). ATTENTION_VALUE."""
    if totals is None:
        return
    _, sums = totals
    bad = ~np.isfinite(sums) | np.signbit(sums)
    if bad.any():
        h, p = divmod(int(np.argmax(bad.ravel())), sums.shape[1])  # head 0 first, position 0 up
        raise Refusal(
            ATTENTION_VALUE, Subject("value", ("totals",)),
            f"step {index}: the column total of head {h} for position {p} is {sums[h, p]!r}",
        )


def _gather_totals(sums, kept_after):
    """spec/prefill.md#column-totals: one head's totals gathered at the set's
    kept positions after admission (the positions kept before the step, then
    the chunk's), in kept order, bit for bit: n values for n kept positions."""
    return sums[np.asarray(kept_after, dtype=np.intp)]


def _gather_queries(rows, kept_after, m: int):
    """spec/prefill.md#what-a-policy-sees: each query row gathered at the
    set's kept positions after admission that it covers; the j-th (of m)
    has n - m + 1 + j weights, in kept order, bit for bit."""
    idx = np.asarray(kept_after, dtype=np.intp)
    n = len(idx)
    return [r[idx[:n - m + 1 + j]] for j, r in enumerate(rows)]


def _gather_heads(kept, rows, query_heads: int):
    """Every query head's row gathered at one set's kept positions, in kept
    order, bit for bit: None (null attention) or a (query_heads, kept)
    binary64 array, head 0 first."""
    if rows is None:
        return None
    idx = np.asarray(kept, dtype=np.intp)
    if query_heads == 1:
        return np.asarray(rows, dtype=np.float64)[idx][None, :]
    return rows[:, idx]


def _gather_prefill_heads(kept_after, prefill, totals, query_heads: int):
    """A prefill step's query rows (and column totals) of every query head,
    gathered at one set's kept positions after admission: (m, per head its
    m rows[, (R, per head its totals)])."""
    m, qrows = prefill
    out = (m, [_gather_queries(qrows[h], kept_after, m) for h in range(query_heads)])
    if totals is not None:
        out += ((totals[0], [_gather_totals(totals[1][h], kept_after) for h in range(query_heads)]),)
    return out


def run_steps(policy: Policy, steps, log: EvictionLog, query_heads: int = 1, sets=None, *,
              kv_heads: int = 1, head_dim: Optional[int] = None, key_sets=None,
              value_dim: Optional[int] = None) -> None:
    """Explicit steps: (admit, row or None, heads, queries[, totals,
    total_rows[, keys[, values]]]), spec/harness.md#refusals through a scenario. `heads`: the
    rows of spec/heads.md#rows-per-head (a list of rows, empty when absent);
    `queries`: the query rows of spec/prefill.md#query-rows (empty when
    absent); `totals`, `total_rows`: the column totals of
    spec/prefill.md#column-totals (one list of a + c values per query head),
    and R; a step without them may leave both out (empty, 0); `keys`: the
    step's keys (spec/tensors.md#the-fields: one list of admit x head_dim
    values per KV head), empty or left out when absent; `values`: its
    values the same way (admit x value_dim per KV head, spec 0.18.0).

    With `sets` (a list of heads.KeptSet), the run is that of a policy that
    reads attention over several heads; with `key_sets` (tensors.key_sets),
    that of a policy that reads keys (spec/tensors.md#what-a-policy-sees);
    otherwise `policy` is the run's one kept set. `kv_heads`, `head_dim`
    and `value_dim` (None when absent) are the scenario's, for the checks of
    the keys and values.
    """
    first = 0
    for index, step in enumerate(steps):
        admit, row, heads, queries = step[:4]
        totals_given = step[4] if len(step) > 4 else ()
        total_rows = step[5] if len(step) > 5 else 0
        keys_given = step[6] if len(step) > 6 else ()
        values_given = step[7] if len(step) > 7 else ()
        try:
            if admit < 1:
                raise Refusal(POSITION, Subject("range", ("admit",)), f"step {index} admits no position")
            if first + admit - 1 > MAX_POSITION:
                raise Refusal(POSITION, Subject("rule", ("admit",)), f"step {index}: positions run past 2^32 - 1")
            # Check 3: the rows' lengths, then the query rows' shape, then
            # the column totals' shape, then the keys' shape, then the
            # values'; check 4: the rows' weights, then the query rows'
            # weights, then the column totals, then the key entries, then
            # the value entries (spec/harness.md#refusals,
            # spec/prefill.md#their-checks, spec/tensors.md#checks).
            rows = _check_rows(index, first, row, heads, query_heads)
            prefill = _check_queries(index, first, admit, row, heads, queries, query_heads)
            totals = _check_totals(index, first, admit, queries, totals_given, total_rows, query_heads)
            keys = tensors.check_vectors(index, admit, keys_given, head_dim, kv_heads, "keys")
            vals = tensors.check_vectors(index, admit, values_given, value_dim, kv_heads, "values")
            _check_row_weights(index, rows, query_heads)
            _check_query_weights(index, prefill)
            _check_total_values(index, totals)
            tensors.check_vector_values(index, keys, "keys")
            tensors.check_vector_values(index, vals, "values")
            chunk = range(first, first + admit)
            if key_sets is not None:
                # A policy that reads keys (knorm, keydiff, lagkv) and no
                # attention: each kept set its KV heads' keys, ascending, and
                # their values to one that reads them (lagkv); query rows make
                # the step a prefill step, nothing more
                # (spec/tensors.md#what-a-policy-sees, #policies-that-read-keys).
                m = None if prefill is None else prefill[0]
                outcomes = []
                for ks in key_sets:
                    kv = slice(ks.kv_first, ks.kv_end)
                    if ks.READS_VALUES:
                        outcomes.append(ks.step_tensors(first, admit, keys[kv], vals[kv], m))
                    else:
                        outcomes.append(ks.step_keys(first, admit, keys[kv], m))
                log.steps.append(outcomes[0] if len(outcomes) == 1 else StepOutcome([], 0, 0, [], outcomes))
            elif sets is None and policy.SUMS_HEADS:
                # One kept set reading every query head (openvino): each
                # head's row, query rows and totals at the set's kept
                # positions, head 0 first (spec/harness.md#what-a-policy-sees,
                # spec/prefill.md#what-a-policy-sees, #column-totals).
                gathered = None
                if prefill is not None:
                    gathered = _gather_prefill_heads(policy.kept + list(chunk), prefill, totals, query_heads)
                log.steps.append(policy.step_heads(first, admit, _gather_heads(policy.kept, rows, query_heads),
                                                   gathered))
            elif sets is None:
                attention = None
                if rows is not None and query_heads == 1:
                    # Gathered, in kept order, bit for bit (spec/harness.md#what-a-policy-sees).
                    attention = [row[p] for p in policy.kept]
                # With several heads the one set's policy reads no attention
                # (spec/heads.md#policies-that-do-not-read-attention).
                gathered = None
                if prefill is not None:
                    m, qrows = prefill
                    gathered = (m, None)
                    if query_heads == 1 and policy.READS_ATTENTION:
                        kept_after = policy.kept + list(chunk)
                        gathered = (m, _gather_queries(qrows[0], kept_after, m))
                        if totals is not None:
                            # spec/prefill.md#column-totals: gathered as the rows are.
                            gathered += ((totals[0], _gather_totals(totals[1][0], kept_after)),)
                log.steps.append(policy.step_unchecked(first, admit, attention, gathered))
            else:
                outcomes = []
                for ks in sets:
                    gathered = None
                    if rows is not None:
                        # Each head's own row at its set's kept positions.
                        gathered = rows[ks.first_head:ks.end_head][:, np.asarray(ks.kept, dtype=np.intp)]
                    gathered_queries = None
                    gathered_totals = None
                    if prefill is not None:
                        m, qrows = prefill
                        kept_after = ks.kept + list(chunk)
                        gathered_queries = (m, [_gather_queries(qrows[h], kept_after, m)
                                                for h in range(ks.first_head, ks.end_head)])
                        if totals is not None:
                            # spec/prefill.md#column-totals: each covered
                            # head's totals at the set's kept positions after
                            # admission, as the rows are gathered.
                            gathered_totals = (totals[0], [_gather_totals(totals[1][h], kept_after)
                                                           for h in range(ks.first_head, ks.end_head)])
                    outcomes.append(ks.step(first, admit, gathered, gathered_queries, gathered_totals))
                # Sets sharing a budget evict together (spec/heads.md#head-adaptive-budgets).
                evict_shared(sets, outcomes)
                if len(outcomes) == 1:
                    log.steps.append(outcomes[0])
                else:
                    log.steps.append(StepOutcome([], 0, 0, [], outcomes))
        except Refusal as r:
            log.rejection = (r.category, index, r.message, r.subject)
            return
        first += admit


def run_trace(policy: Policy, gen: trace_mod.TraceGenerator, steps: int, log: EvictionLog) -> None:
    """A generated trace: step t admits t with weights of the kept positions (RunTrace)."""
    for t in range(steps):
        gen.begin_step(t)
        attention = gen.weights_array(policy.kept)
        log.steps.append(policy.step_unchecked(t, 1, attention))


def run_trace_heads(policy: Policy, sets, tp: trace_mod.TraceParams, query_heads: int,
                    log: EvictionLog) -> None:
    """A generated trace of several query heads (spec/trace.md#several-heads).

    Query head h streams its own rows (`trace.head_params(tp, h)`). With
    `sets` (a list of heads.KeptSet: a policy that reads attention), each
    step gives each set each of its heads' weights at the set's kept
    positions, then logs as spec/heads.md#the-eviction-log says; otherwise
    `policy` is the run's one kept set and reads no row
    (spec/heads.md#policies-that-do-not-read-attention).
    """
    if sets is None and policy.SUMS_HEADS:
        # One kept set reading every head (openvino): each head's weights
        # at the set's kept positions.
        heads = trace_mod.HeadsTrace(tp, query_heads)
        for t in range(tp.steps):
            heads.begin_step(t)
            kept = np.asarray(policy.kept, dtype=np.int64)
            weights = heads.weights_matrix(np.repeat(kept[None, :], query_heads, axis=0))
            log.steps.append(policy.step_heads(t, 1, weights))
        return
    if sets is None:
        for t in range(tp.steps):
            log.steps.append(policy.step_unchecked(t, 1, None))
        return
    heads = trace_mod.HeadsTrace(tp, query_heads)
    # Sets cover consecutive heads, set 0 first (spec/heads.md#kept-sets).
    sizes = [ks.end_head - ks.first_head for ks in sets]
    for t in range(tp.steps):
        heads.begin_step(t)
        # Row h of `positions`: the kept positions of head h's set. Without
        # a shared budget every set keeps as many positions as any other
        # (one admitted per step, the same budget for every set); with one
        # (spec/heads.md#head-adaptive-budgets) the counts differ, and a
        # shorter set is padded with position 0 (< t whenever any set keeps
        # a position), whose weights are computed elementwise and then left out.
        counts = [len(ks.kept) for ks in sets]
        width = max(counts)
        kept = np.zeros((len(sets), width), dtype=np.int64)
        for i, ks in enumerate(sets):
            kept[i, :counts[i]] = ks.kept
        weights = heads.weights_matrix(np.repeat(kept, sizes, axis=0))
        outcomes = []
        for i, ks in enumerate(sets):
            outcomes.append(ks.step(t, 1, weights[ks.first_head:ks.end_head, :counts[i]]))
        evict_shared(sets, outcomes)  # spec/heads.md#head-adaptive-budgets
        if len(outcomes) == 1:
            log.steps.append(outcomes[0])
        else:
            log.steps.append(StepOutcome([], 0, 0, [], outcomes))


def run_scenario(name, parameters, seed, steps=None, trace_config=None,
                 query_heads=None, kv_heads=None, head_dim=None, value_dim=None) -> EvictionLog:
    """Run one configuration over one scenario.

    `steps`: list of (admit, row-or-None[, heads[, queries[, totals,
    total_rows[, keys[, values]]]]]) (a step without column totals may stop
    at `queries`, one without keys or values at `total_rows`, one without
    values at `keys`); `trace_config`: a
    TraceConfig proto (or None). Both given is INVALID_TRACE. `query_heads`,
    `kv_heads`: the scenario's head counts, None when absent (1);
    `head_dim`: the length of its keys, None when absent (a scenario
    without keys, spec/tensors.md#the-fields); `value_dim`: the length of
    its values, None when absent (since 0.18.0).
    """
    log = EvictionLog()
    # (admit, row) is (admit, row, no heads, no query rows); a step with
    # column totals keeps its last two fields (totals, total_rows), and one
    # without them needs neither (run_steps reads them as (), 0).
    steps = [tuple(st) + ((), ())[len(st) - 2:] for st in steps or []]
    try:
        # 1. the configuration.
        cls, values = configure(name, parameters)
        policy = cls(values, Rng(seed))
        # 2. the scenario's shape: not both steps and a trace, then its head counts.
        if trace_config is not None and steps:
            raise Refusal(
                INVALID_TRACE, Subject("rule", ("steps", "trace")),
                "a scenario has either steps or a trace, not both",
            )
        hq = 1 if query_heads is None else query_heads
        hkv = 1 if kv_heads is None else kv_heads
        check_head_counts(hq, hkv)
        # Then its head_dim and value_dim, and whether the policy's keys
        # and values are there, as long as its card needs
        # (spec/tensors.md#checks, 1).
        tensors.check_scenario_tensors(head_dim, value_dim, trace_config is not None, cls.READS_KEYS,
                                       cls.READS_VALUES, cls.MIN_HEAD_DIM, cls.MIN_VALUE_DIM)
        # 3. a trace's parameters.
        gen = None
        if trace_config is not None:
            tp = trace_mod.params_from_proto(trace_config)
            gen = trace_mod.TraceGenerator(tp)
    except Refusal as r:
        log.rejection = (r.category, -1, r.message, r.subject)
        return log
    if cls.READS_KEYS:
        # Never a trace: a trace with head_dim, or a policy that reads keys
        # without it, is refused above.
        run_steps(None, steps, log, hq, kv_heads=hkv, head_dim=head_dim, value_dim=value_dim,
                  key_sets=key_sets(cls, values, hq, hkv, head_dim, value_dim))
    elif gen is not None and hq == 1:
        run_trace(policy, gen, tp.steps, log)
    elif gen is not None:
        sets = None
        if cls.READS_ATTENTION:
            sets = kept_sets(cls, values, hq, hkv)
        run_trace_heads(policy, sets, tp, hq, log)
    elif hq > 1 and cls.READS_ATTENTION:
        sets = kept_sets(cls, values, hq, hkv)
        run_steps(None, steps, log, hq, sets, kv_heads=hkv, head_dim=head_dim, value_dim=value_dim)
    else:
        run_steps(policy, steps, log, hq, kv_heads=hkv, head_dim=head_dim, value_dim=value_dim)
    return log


def key_sets(cls, values: dict, query_heads: int, kv_heads: int, head_dim: int,
             value_dim: Optional[int] = None) -> list:
    """The kept sets of a policy that reads keys, in set order: one per
    `granularity` unit (spec/heads.md#kept-sets), each a policy object
    holding its own kept positions and the scores (or tensors) of the KV
    heads it covers (spec/policies/knorm.md#several-kv-heads). With one
    query head, one set. A policy that reads values (lagkv) is given
    `value_dim` too."""
    out = []
    extra = {"value_dim": value_dim} if cls.READS_VALUES else {}
    for h0, h1 in sets_of(values["granularity"], query_heads, kv_heads):
        kv0, kv1 = tensors.kv_range(h0, h1, query_heads, kv_heads)
        out.append(cls(values, None, kv_first=kv0, kv_end=kv1, head_dim=head_dim, **extra))
    return out
