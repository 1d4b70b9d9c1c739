"""The committed vectors (vectors/*.pb), run in-process.

The conformance runner is the judge; this runs the short cases (and, with
KVSPEC_LONG=1, the long canonical ones) so that `pytest` catches a drift early.
A rejection is compared as the runner compares it for a port of spec 0.11.0
or later (spec/protocol.md#outcomes): its category, step and subject
(spec/harness.md#subjects), never its message. It is also the only test
mutation/run.sh kills mutants with.
"""

import glob
import os

import pytest

from conftest import REPO_ROOT
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.testee import handle_request

# KVSPEC_VECTORS: another vectors folder (e.g. a snapshot, for mutation runs).
VECTORS = os.environ.get("KVSPEC_VECTORS") or os.path.join(REPO_ROOT, "vectors")
LONG = os.environ.get("KVSPEC_LONG") == "1"


def load_cases():
    """Every case, the short ones first (so that `pytest -x` stops early on a
    broken port), then the long canonical-trace ones, each group in file order."""
    out = []
    long_out = []
    for path in sorted(glob.glob(os.path.join(VECTORS, "*.pb"))):
        vf = kpb.VectorFile.FromString(open(path, "rb").read())
        assert vf.schema == "kvspec.vectors.v1"
        scenarios = {s.id: s for s in vf.scenarios}
        for case in vf.cases:
            sc = scenarios[case.scenario_id]
            long_case = sc.HasField("trace") and sc.trace.steps > 300
            (long_out if long_case else out).append(pytest.param(
                case, sc, id=case.id,
                marks=[] if LONG or not long_case else [pytest.mark.skip("KVSPEC_LONG=1 runs it")]))
    return out + long_out


def normalised(log):
    log = kpb.EvictionLog.FromString(log.SerializeToString())
    if log.HasField("rejection"):
        log.rejection.message = ""
    return log


def refusal(log):
    """What the runner compares of a rejection: category, step, subject."""
    if not log.HasField("rejection"):
        return None
    r = log.rejection
    return kpb.ErrorCategory.Name(r.category), r.step, r.subject.check, list(r.subject.names)


@pytest.mark.parametrize("case, scenario", load_cases())
def test_vector(case, scenario):
    req = cpb.Request(seq=1, case_id=case.id, policy=case.policy, scenario=scenario, want_cut=True)
    reply = handle_request(req).response
    assert reply.WhichOneof("result") == "log", reply.error.message
    assert refusal(reply.log) == refusal(case.expected), reply.log.rejection.message
    assert normalised(reply.log) == normalised(case.expected)
