"""The conformance testee (spec/protocol.md).

Frames on stdin/stdout: a 4-byte little-endian length, then one serialized
message (RunnerMessage in, PortMessage out). Logs go to stderr only.
"""

from __future__ import annotations

import struct
import sys
import time
import traceback

from . import FEATURES, PORT_VERSION, PROTOCOL_VERSION, SPEC_VERSION, precision
from .harness import run_scenario
from .policies import REGISTRY
from .proto import conformance_pb2 as cpb
from .proto import kvspec_pb2 as kpb


def log(msg: str) -> None:
    print(f"kvspec-port-python: {msg}", file=sys.stderr, flush=True)


def read_frame(stream):
    header = stream.read(4)
    if not header:
        return None
    if len(header) < 4:
        raise EOFError("truncated frame header")
    (n,) = struct.unpack("<I", header)
    body = stream.read(n)
    if len(body) < n:
        raise EOFError("truncated frame")
    return body


def write_frame(stream, message) -> None:
    body = message.SerializeToString()
    stream.write(struct.pack("<I", len(body)) + body)
    stream.flush()


def hello_reply() -> "cpb.PortMessage":
    out = cpb.PortMessage()
    h = out.hello
    h.protocol_version = PROTOCOL_VERSION
    h.spec_version = SPEC_VERSION
    h.port_name = "kvspec-port-python"
    h.language = "python"
    h.port_version = PORT_VERSION
    h.features.extend(FEATURES)
    if not precision.LOWER:
        h.policies.extend(REGISTRY.keys())
        return out
    # spec/protocol.md#precision: this build's precision, and only the
    # policies whose scores it rounds (kvspec_port/precision.py).
    h.policies.extend(n for n in REGISTRY
                      if n in precision.ROUNDED_POLICIES + precision.UNSCORED_POLICIES)
    h.port_name = f"kvspec-port-python ({precision.SCORE}/{precision.ACCUMULATE})"
    if not precision.DECLARED:
        return out  # judged as binary64, bit for bit: what not declaring costs
    h.score_precision = cpb.Precision.Value(precision.SCORE.upper())
    h.accumulate_precision = cpb.Precision.Value(precision.ACCUMULATE.upper())
    return out


def _fill_step(sr, s, want_cut: bool) -> None:
    sr.victims.extend(s.victims)
    sr.kept_count = s.kept_count
    sr.query_cache_position = s.query_cache_position
    if want_cut:
        for pos, score in s.cut:
            rp = sr.cut.add()
            rp.position = pos
            rp.score = score
    # spec/spans.md#the-log: with `spans` 1 only.
    if s.spans is not None:
        for ranges in s.spans:
            sr.spans.add().ranges.extend(ranges)
        for first, last, pid in s.held:
            run = sr.held.add()
            run.first = first
            run.last = last
            run.id = pid
    # More than one kept set: one record per set, in set order
    # (spec/heads.md#the-eviction-log).
    for sub in s.sets:
        _fill_step(sr.sets.add(), sub, want_cut)


def to_proto_log(elog, want_cut: bool) -> "kpb.EvictionLog":
    out = kpb.EvictionLog()
    for s in elog.steps:
        _fill_step(out.steps.add(), s, want_cut)
    if elog.rejection is not None:
        category, step, message, subject = elog.rejection
        out.rejection.category = kpb.ErrorCategory.Value(category)
        out.rejection.step = step
        out.rejection.message = message
        # spec/harness.md#subjects: the check and the names, in order.
        out.rejection.subject.check = subject.check
        out.rejection.subject.names.extend(subject.names)
    return out


def handle_request(req) -> "cpb.PortMessage":
    out = cpb.PortMessage()
    resp = out.response
    resp.seq = req.seq
    try:
        sc = req.scenario
        # Every step as the full 8-tuple run_steps reads; an absent field is
        # an empty list (0 for total_rows), which every check reads as
        # absent (spec/prefill.md#their-checks: no totals and total_rows 0;
        # spec/tensors.md#checks: no entry).
        steps = [
            (
                st.admit,
                list(st.attention.weights) if st.HasField("attention") else None,
                [list(h.weights) for h in st.heads],  # spec/heads.md#rows-per-head
                [list(q.weights) for q in st.queries],  # spec/prefill.md#query-rows
                # spec/prefill.md#column-totals: `totals` (field 5, one
                # ColumnTotals per query head, its `sums` binary64) and
                # `total_rows` (field 6).
                [list(t.sums) for t in st.totals],
                st.total_rows,
                # spec/tensors.md#the-fields: `keys` (field 7, one
                # HeadVectors per KV head, its binary32 `values` exact as
                # Python floats) and `values` (field 8, the same, since 0.18.0).
                [list(k.values) for k in st.keys],
                [list(v.values) for v in st.values],
            )
            for st in sc.steps
        ]
        trace_config = sc.trace if sc.HasField("trace") else None
        # spec/heads.md#head-counts: an absent count is 1 (None here).
        query_heads = sc.query_heads if sc.HasField("query_heads") else None
        kv_heads = sc.kv_heads if sc.HasField("kv_heads") else None
        # spec/tensors.md#the-fields: present makes the scenario one with keys.
        head_dim = sc.head_dim if sc.HasField("head_dim") else None
        # The same for values (since 0.18.0).
        value_dim = sc.value_dim if sc.HasField("value_dim") else None
        params = [(p.name, p.value) for p in req.policy.parameters]
        elog = run_scenario(req.policy.name, params, req.policy.seed, steps, trace_config,
                            query_heads, kv_heads, head_dim, value_dim)
        resp.log.CopyFrom(to_proto_log(elog, req.want_cut))
    except Exception:  # a bug of the port, not a spec refusal
        resp.error.message = traceback.format_exc()
        log(f"error in {req.case_id}:\n{resp.error.message}")
    return out


def main() -> int:
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    # Nothing but frames may reach stdout: route stray prints to stderr.
    sys.stdout = sys.stderr
    while True:
        body = read_frame(stdin)
        if body is None:
            return 0
        msg = cpb.RunnerMessage()
        msg.ParseFromString(body)
        kind = msg.WhichOneof("message")
        if kind == "hello":
            log(f"hello: runner speaks protocol {msg.hello.protocol_version}, spec {msg.hello.spec_version}")
            write_frame(stdout, hello_reply())
        elif kind == "request":
            start = time.monotonic()
            reply = handle_request(msg.request)
            write_frame(stdout, reply)
            log(f"#{msg.request.seq} {msg.request.case_id}: {time.monotonic() - start:.2f}s")
        else:
            log(f"unknown runner message {kind!r}")
            return 1
