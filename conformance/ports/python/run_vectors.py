#!/usr/bin/env python3
"""Runs vectors/*.pb in-process against the port and reports time per case.

A development aid (the conformance runner is the judge):
    python3 run_vectors.py [--vectors DIR] [CASE_PREFIX ...]
"""

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kvspec_port.proto import kvspec_pb2 as kpb  # noqa: E402
from kvspec_port.testee import handle_request  # noqa: E402
from kvspec_port.proto import conformance_pb2 as cpb  # noqa: E402


def strip_messages(log):
    log = kpb.EvictionLog.FromString(log.SerializeToString())
    if log.HasField("rejection"):
        log.rejection.message = ""
    return log


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--vectors", default=os.path.join(here, "..", "..", "..", "vectors"))
    ap.add_argument("prefixes", nargs="*")
    args = ap.parse_args()
    passed = failed = 0
    for path in sorted(glob.glob(os.path.join(args.vectors, "*.pb"))):
        vf = kpb.VectorFile.FromString(open(path, "rb").read())
        scenarios = {s.id: s for s in vf.scenarios}
        for case in vf.cases:
            if args.prefixes and not any(case.id.startswith(p) for p in args.prefixes):
                continue
            req = cpb.Request(seq=1, case_id=case.id, policy=case.policy,
                              scenario=scenarios[case.scenario_id], want_cut=True)
            start = time.monotonic()
            reply = handle_request(req)
            elapsed = time.monotonic() - start
            ok = reply.response.HasField("log") and strip_messages(reply.response.log) == strip_messages(case.expected)
            passed += ok
            failed += not ok
            print(f"{'pass' if ok else 'FAIL'} {elapsed:7.2f}s {case.id}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
