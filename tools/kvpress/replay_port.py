#!/usr/bin/env python3
"""A port that replays kept sets recorded elsewhere, for the runner.

    python3 tools/kvpress/replay_port.py ANSWERS.json

tools/kvpress/model_check.py --dtype runs kvpress's presses inside a model
in bfloat16 or float16, reads back the positions each press kept, and
writes them to ANSWERS.json beside a vectors folder of the same cases
(tools/vectors/vectors_from_scenarios, spec/vectors.md#case-lists); the
runner then asks this port each case and judges its answer against the
reference at the precision ANSWERS.json declares (spec/protocol.md#precision).
No rule is computed here: an answer is what kvpress did.

ANSWERS.json:
    {"name": "kvpress-model-bfloat16", "version": "...",
     "precision": "bfloat16" | "float16" | "binary32",
     "cases": {"<case id>": {"length": L, "sets": [[kept position, ...], ...]}}}

Each case's log is one step: its victims (the positions below L that a set
does not keep) and kept count, as one record when "sets" holds one set,
else one set per entry. A case the file does not hold is answered
`skipped`; a file that cannot be read is a refusal at start (exit 2).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "conformance", "engines", "common"))
from engine_port import Port, Skip, cpb, kpb  # noqa: E402

SPEC_VERSION = "0.15.0"
POLICIES = ["h2o", "tova", "snapkv", "streamingllm"]
FEATURES = ["decode", "heads", "prefill"]
PRECISIONS = {"binary64": cpb.BINARY64, "binary32": cpb.BINARY32,
              "bfloat16": cpb.BFLOAT16, "float16": cpb.FLOAT16}


def record(kept, length):
    r = kpb.StepResult()
    r.victims.extend(sorted(set(range(length)) - set(kept)))
    r.kept_count = len(kept)
    return r


def make_run_case(cases):
    def run_case(req):
        answer = cases.get(req.case_id)
        if answer is None:
            raise Skip(f"no recorded answer for {req.case_id}")
        log = kpb.EvictionLog()
        step = log.steps.add()
        sets, length = answer["sets"], answer["length"]
        if len(sets) == 1:
            step.CopyFrom(record(sets[0], length))
        else:
            for kept in sets:
                step.sets.append(record(kept, length))
        return log
    return run_case


def main(argv):
    if len(argv) != 2:
        print("usage: replay_port.py ANSWERS.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            answers = json.load(f)
        precision = PRECISIONS[answers["precision"]]
        cases = answers["cases"]
        for case_id, answer in cases.items():
            if (not isinstance(answer.get("length"), int) or not answer.get("sets")
                    or any(not all(isinstance(p, int) and 0 <= p < answer["length"]
                                   for p in kept) for kept in answer["sets"])):
                raise ValueError(f"case {case_id}: length and sets of positions below it")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        print(f"replay_port.py: {argv[1]}: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    port = Port(answers.get("name", "replay"), SPEC_VERSION, answers.get("version", "replay"),
                POLICIES, FEATURES, make_run_case(cases), log_errors=True,
                score_precision=precision, accumulate_precision=precision)
    return port.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
