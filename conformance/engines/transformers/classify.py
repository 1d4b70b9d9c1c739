"""Classifies the adapter's disagreements with the vectors over EVERY step.

The runner reports a case's first divergent step; a class such as "held
differs, spans right" needs every step compared. This runs the adapter's own
answer() on each vector case it would be sent, outside the runner, and prints
per case: pass / skipped / the classes of difference with the steps where
each shows, and the first step's expected vs actual.

  tools/.venv-torch/bin/python conformance/engines/transformers/classify.py [case-prefix]
"""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adapter  # noqa: E402
from adapter import cpb, kpb  # noqa: E402


def held(s):
    return [(h.first, h.last, h.id) for h in s.held]


def classes(exp, act):
    out = {}  # class -> [steps]
    if exp.HasField("rejection") != act.HasField("rejection"):
        out.setdefault("rejection differs", []).append(-1)
    for i, (e, a) in enumerate(zip(exp.steps, act.steps)):
        if (list(e.victims), e.kept_count, e.query_cache_position) != (list(a.victims), a.kept_count, a.query_cache_position):
            out.setdefault("kept differs", []).append(i)
        if [list(q.ranges) for q in e.spans] != [list(q.ranges) for q in a.spans]:
            out.setdefault("span differs", []).append(i)
        eh, ah = held(e), held(a)
        if [(f, l) for f, l, _ in eh] != [(f, l) for f, l, _ in ah]:
            out.setdefault("held differs", []).append(i)
        elif eh != ah:
            out.setdefault("position id differs", []).append(i)
    if len(exp.steps) != len(act.steps):
        out.setdefault("step count differs", []).append(min(len(exp.steps), len(act.steps)))
    return out


def main():
    prefix = sys.argv[1] if len(sys.argv) > 1 else ""
    seq = 0
    for path in sorted(glob.glob(os.path.join(adapter.ROOT, "vectors", "*.pb"))):
        vf = kpb.VectorFile()
        vf.ParseFromString(open(path, "rb").read())
        scen = {s.id: s for s in vf.scenarios}
        for case in vf.cases:
            if not case.id.startswith(prefix):
                continue
            # What the runner sends: a registered policy the adapter lists, or an unregistered name.
            if not set(case.features) <= set(adapter.FEATURES):
                continue
            seq += 1
            req = cpb.Request(seq=seq, case_id=case.id, policy=case.policy, scenario=scen[case.scenario_id], want_cut=True)
            if case.policy.name not in adapter.POLICIES and case.policy.name in (
                    "full", "window", "streamingllm", "h2o", "tova", "snapkv", "random"):
                continue  # not run
            resp = adapter.answer(req).response
            kind = resp.WhichOneof("result")
            if kind != "log":
                print(f"{case.id}: {kind}: {resp.skipped.reason or resp.error.message}")
                continue
            diff = classes(case.expected, resp.log)
            if not diff:
                print(f"{case.id}: pass")
                continue
            print(f"{case.id}: " + "; ".join(f"{k} at steps {v}" for k, v in diff.items()))
            i = min(min(v) for v in diff.values())
            if i >= 0:
                e, a = case.expected.steps[i], resp.log.steps[i]
                print(f"    step {i}: expected held {held(e)} spans {[list(q.ranges) for q in e.spans]}")
                print(f"    step {i}: actual   held {held(a)} spans {[list(q.ranges) for q in a.spans]}")


if __name__ == "__main__":
    main()
