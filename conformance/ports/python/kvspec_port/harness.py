"""The harness: configuration and RunScenario (spec/harness.md).

`make_policy` follows spec/harness.md#configuration; `run_scenario` runs a
scenario (explicit steps, spec/harness.md#scenarios, or a generated trace,
spec/trace.md) and returns an eviction log (spec/harness.md#eviction-log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from .errors import (
    ATTENTION_LENGTH,
    ATTENTION_VALUE,
    INVALID_PARAMETER,
    INVALID_TRACE,
    POSITION,
    UNKNOWN_POLICY,
    Refusal,
)
from .f32 import weight_ok
from .policies import REGISTRY
from .policies.base import MAX_POSITION, Policy, StepOutcome
from .rng import Rng
from . import trace as trace_mod


@dataclass
class EvictionLog:
    steps: List[StepOutcome] = field(default_factory=list)
    # (category, step index or -1, message) when refused.
    rejection: Optional[Tuple[str, int, str]] = None


def make_policy(name: str, parameters: Sequence[Tuple[str, int]], seed: int = 0) -> Policy:
    """spec/harness.md#configuration, checks in order; raises Refusal."""
    cls = REGISTRY.get(name)
    if cls is None:
        raise Refusal(UNKNOWN_POLICY, f"unknown policy '{name}'")
    known = [p[0] for p in cls.PARAMS]
    given = {}
    for pname, value in parameters:
        if pname not in known:
            takes = ", ".join(known) if known else "no parameters"
            raise Refusal(
                INVALID_PARAMETER, f"{name}: unknown parameter '{pname}'; {name} takes {takes}"
            )
        if pname in given:
            raise Refusal(INVALID_PARAMETER, f"{name}: parameter '{pname}' given twice")
        given[pname] = value
    values = {}
    for pname, default, lo, hi in cls.PARAMS:
        v = given.get(pname, default)
        if not lo <= v <= hi:
            raise Refusal(INVALID_PARAMETER, f"{name}: {pname} must be in [{lo}, {hi}], got {v}")
        values[pname] = v
    cls.check_relations(values)
    return cls(values, Rng(seed))


def run_steps(policy: Policy, steps: Sequence[Tuple[int, Optional[Sequence[float]]]], log: EvictionLog) -> None:
    """Explicit steps: (admit, row or None). spec/harness.md#refusals, through a scenario."""
    first = 0
    for index, (admit, row) in enumerate(steps):
        try:
            if admit < 1:
                raise Refusal(POSITION, f"step {index} admits no position")
            if first + admit - 1 > MAX_POSITION:
                raise Refusal(POSITION, f"step {index}: positions run past 2^32 - 1")
            attention = None
            if row is not None:
                if len(row) != first:
                    raise Refusal(
                        ATTENTION_LENGTH,
                        f"step {index}: row has {len(row)} weights, {first} positions were admitted before",
                    )
                for i, w in enumerate(row):
                    if not weight_ok(w):
                        raise Refusal(ATTENTION_VALUE, f"step {index}: weight {i} is {w!r}")
                # Gathered, in kept order, bit for bit (spec/harness.md#what-a-policy-sees).
                attention = [row[p] for p in policy.kept]
            log.steps.append(policy.step_unchecked(first, admit, attention))
        except Refusal as r:
            log.rejection = (r.category, index, r.message)
            return
        first += admit


def run_trace(policy: Policy, gen: trace_mod.TraceGenerator, steps: int, log: EvictionLog) -> None:
    """A generated trace: step t admits t with weights of the kept positions (RunTrace)."""
    for t in range(steps):
        gen.begin_step(t)
        attention = gen.weights_array(policy.kept)
        log.steps.append(policy.step_unchecked(t, 1, attention))


def run_scenario(name, parameters, seed, steps=None, trace_config=None) -> EvictionLog:
    """Run one configuration over one scenario.

    `steps`: list of (admit, row-or-None); `trace_config`: a TraceConfig
    proto (or None). Both given is INVALID_TRACE.
    """
    log = EvictionLog()
    try:
        policy = make_policy(name, parameters, seed)
        gen = None
        if trace_config is not None:
            if steps:
                raise Refusal(INVALID_TRACE, "a scenario has either steps or a trace, not both")
            tp = trace_mod.params_from_proto(trace_config)
            gen = trace_mod.TraceGenerator(tp)
    except Refusal as r:
        log.rejection = (r.category, -1, r.message)
        return log
    if gen is not None:
        run_trace(policy, gen, tp.steps, log)
    else:
        run_steps(policy, steps or [], log)
    return log
