"""Triggers: when a decode step evicts (spec/triggers.md, the feature
`triggers`, spec 0.12.0).

Every policy that evicts (`window`, `streamingllm`, `h2o`, `tova`,
`snapkv`, `random`; not `full`) takes `slack` and `interval`, listed last in
its card, after every other parameter (spec/triggers.md#parameters). With
both at 0 every step evicts as spec/harness.md#budget says.

A *decode step* is a step without query rows (an attention row, `heads`
rows or null attention; one position or a chunk); a *prefill step* has
query rows and evicts as spec/prefill.md#when-a-policy-evicts says,
whatever the trigger (spec/triggers.md#parameters).

Each kept set holds one `Trigger` (a single-head policy its own; each
`heads.KeptSet` its own, spec/triggers.md#interval: "Every kept set has its
own count"). After a step's admissions the set asks it whether the step
fires (`Trigger.fires`); a step that does not fire evicts nothing, whatever
it keeps, and has still recorded its attention and admitted its positions
(spec/triggers.md#firing). A step that fires evicts exactly as without a
trigger: `n - budget` positions by one ranking when `n > budget`, else
nothing.
"""

from __future__ import annotations

from .errors import INVALID_PARAMETER, Refusal, Subject

U32_MAX = (1 << 32) - 1

# spec/triggers.md#parameters: last in each card, in this order.
SLACK = ("slack", 0, 0, U32_MAX)
INTERVAL = ("interval", 0, 0, U32_MAX)
TRIGGERS = (SLACK, INTERVAL)

# spec/triggers.md#combinations, rule 2: the other rules for when a step
# evicts, each named (the first not 0) in this order when the policy takes it.
OTHER_RULES = ("prefill_only", "adaptive", "evict_at", "context_shift")


def check_trigger_relations(name: str, values: dict) -> None:
    """spec/triggers.md#combinations: checked after every other rule of the
    policy (its card's, spec/prefill.md's, spec/spans.md's), in this order;
    INVALID_PARAMETER. A policy that takes neither parameter (`full`)
    passes."""
    if "slack" not in values:
        return
    slack = values["slack"]
    interval = values["interval"]
    # 1. Not both above 0.
    if slack > 0 and interval > 0:
        raise Refusal(
            INVALID_PARAMETER,
            Subject("rule", ("slack", "interval")),
            f"{name}: slack and interval are not both above 0, got slack {slack}, interval {interval}",
        )
    # 2. With slack (or else interval) above 0, every other rule the policy
    # takes is 0; the first that is not is named.
    if slack == 0 and interval == 0:
        return
    trigger = "slack" if slack > 0 else "interval"
    for pname in OTHER_RULES:
        if values.get(pname, 0) != 0:
            raise Refusal(
                INVALID_PARAMETER,
                Subject("rule", (trigger, pname)),
                f"{name}: {trigger} above 0 needs {pname} 0, got {trigger} {values[trigger]}, "
                f"{pname} {values[pname]}",
            )


class Trigger:
    """One kept set's trigger (spec/triggers.md#firing), built from the
    parameters of a policy that takes `budget`, `slack` and `interval`
    (`full` takes none and evicts nothing: it has no trigger).

    `count`: the set's count of decode steps since the start, the last
    firing or the last prefill step (spec/triggers.md#interval).
    """

    def __init__(self, params: dict) -> None:
        self.budget = params["budget"]
        self.slack = params["slack"]
        self.interval = params["interval"]
        self.count = 0

    def fires(self, kept: int, admitted: int, prefill: bool) -> bool:
        """Whether the step evicts after admission: `kept` positions are
        kept after its admissions, of which it admitted `admitted`;
        `prefill`: the step has query rows.

        A prefill step sets the count to 0 and evicts as prefill.md says
        (it neither fires nor counts). With `slack` S a decode step fires
        when more than `budget + S` are kept (spec/triggers.md#slack). With
        `interval` N the count goes up by 1 (null attention too), and the
        step fires when it reaches N or when the step admits at least
        `budget` positions, returning the count to 0 whether or not the
        step evicts anything (spec/triggers.md#interval). With neither,
        every step evicts as spec/harness.md#budget says.
        """
        if prefill:
            self.count = 0
            return True
        if self.slack > 0:
            return kept > self.budget + self.slack
        # `interval` above 0 (`!= 0`: with `interval` 1 every decode step
        # fires, as with neither trigger).
        if self.interval != 0:
            self.count += 1
            if self.count == self.interval or admitted >= self.budget:
                self.count = 0
                return True
            return False
        return True
