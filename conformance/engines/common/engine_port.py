"""The conformance protocol (spec/protocol.md) for kvspec's engine adapters.

Every conformance/engines/<engine>/adapter.py answers the runner through
this module; what stays in the adapter is its engine's: the hello's
fields, and run_case(request), which maps the case to the engine's cache
(or raises Skip naming what the engine lacks), drives the cache and returns
the kvspec EvictionLog it read back. The rest is here, once:

  - frames: a 4-byte little-endian length, then one serialized message
    (RunnerMessage in on stdin, PortMessage out on stdout);
  - Port.respond: one reply per request: the UNKNOWN_POLICY rejection every
    port gives a name its hello does not list, the log, `skipped` with the
    reason, or `error` with the traceback (an engine failure is a reply,
    never a crash);
  - Port.serve: the loop: the hello reply, one reply per request, exit 0
    when the runner closes stdin; stdout carries frames only, logs go to
    stderr;
  - read_card: kvspec's parameter cards, read only to decide what to skip
    (the engines validate none of kvspec's parameters);
  - position_runs: (position, id) pairs as the runs a step's held set and
    spans are reported in.

Each adapter runs in its own virtualenv (transformers: tools/.venv-torch,
protobuf 4.21.12; mlx-lm and llama.cpp: their own .venv, protobuf 7.36.2),
so this module imports only the standard library and the Python port's
generated modules (protoc 3.21.12, conformance/ports/python/kvspec_port/_gen,
imported by path), which both runtimes load unchanged.
"""

import os
import struct
import sys
import time
import traceback

_GEN = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "..", "..", "ports", "python", "kvspec_port", "_gen"))
if _GEN not in sys.path:
    sys.path.insert(0, _GEN)
from spec import conformance_pb2 as cpb  # noqa: E402
from spec import kvspec_pb2 as kpb  # noqa: E402

PROTOCOL_VERSION = 1
U32 = 2**32 - 1
NO_VALIDATION = "the engine does not validate kvspec configurations"


class Skip(Exception):
    """The engine cannot express this case; the message says what it lacks."""


def read_card(card, parameters):
    """A request's parameters (objects with .name and .value) read against a
    kvspec parameter card, [(name, default, min, max), ...] (spec/policies/,
    spec/spans.md#parameters): every name's value, the default where not
    given. An unknown, repeated or out-of-range parameter is a refusal case,
    which the engine has no notion of: Skip(NO_VALIDATION)."""
    names = {c[0] for c in card}
    given = {}
    for p in parameters:
        if p.name not in names or p.name in given:
            raise Skip(NO_VALIDATION)  # unknown or repeated parameter
        given[p.name] = p.value
    v = {name: given.get(name, default) for name, default, _, _ in card}
    if any(not lo <= v[name] <= hi for name, _, lo, hi in card):
        raise Skip(NO_VALIDATION)  # a parameter out of its range
    return v


def position_runs(pairs):
    """(position, id) pairs -> maximal runs (first, last, id of first), in
    position order, split also where the ids stop counting up with the
    positions: a step's held set, or (ids dropped) a query's span."""
    out = []
    for p, i in sorted(pairs):
        if out and p == out[-1][1] + 1 and i == out[-1][3] + 1:
            out[-1][1], out[-1][3] = p, i
        else:
            out.append([p, p, i, i])  # first, last, id of first, id of last
    return [tuple(r[:3]) for r in out]


def read_frame(f):
    """One frame's body, or None at the end of the stream."""
    head = f.read(4)
    if not head:
        return None
    if len(head) < 4:
        raise EOFError("truncated frame header")
    (n,) = struct.unpack("<I", head)
    body = f.read(n)
    if len(body) < n:
        raise EOFError("truncated frame")
    return body


def write_frame(f, msg):
    body = msg.SerializeToString()
    f.write(struct.pack("<I", len(body)) + body)
    f.flush()


def _unknown_policy(name):
    return f"unknown policy '{name}'"


class Port:
    """An engine adapter's side of the conversation.

    name, spec_version, port_version, policies, features: the hello reply.
    run_case(request) -> kpb.EvictionLog, raising Skip for a case the engine
    cannot express; any other exception is answered `error`.
    Keyword options keep each adapter's own wording and logs:
      unknown_message(name): the UNKNOWN_POLICY rejection's message;
      log_errors: also write an error reply's traceback to stderr;
      timings: log each request's seconds after its reply (else its outcome,
        before the reply);
      score_precision, accumulate_precision: the hello's precision fields
        (spec/protocol.md#precision), cpb.Precision values; unset (0) for an
        engine whose cache ranks nothing by score.
    """

    def __init__(self, name, spec_version, port_version, policies, features, run_case, *,
                 unknown_message=_unknown_policy, log_errors=False, timings=False,
                 score_precision=0, accumulate_precision=0):
        self.name = name
        self.spec_version = spec_version
        self.port_version = port_version
        self.policies = list(policies)
        self.features = list(features)
        self.run_case = run_case
        self.unknown_message = unknown_message
        self.log_errors = log_errors
        self.timings = timings
        self.score_precision = score_precision
        self.accumulate_precision = accumulate_precision

    def log(self, msg):
        print(f"{self.name}: {msg}", file=sys.stderr, flush=True)

    def hello(self):
        out = cpb.PortMessage()
        h = out.hello
        h.protocol_version = PROTOCOL_VERSION
        h.spec_version = self.spec_version
        h.port_name = self.name
        h.language = "python"
        h.port_version = self.port_version
        h.policies.extend(self.policies)
        h.features.extend(self.features)
        if self.score_precision:
            h.score_precision = self.score_precision
        if self.accumulate_precision:
            h.accumulate_precision = self.accumulate_precision
        return out

    def respond(self, req):
        out = cpb.PortMessage()
        resp = out.response
        resp.seq = req.seq
        if req.policy.name not in self.policies:
            # spec/protocol.md: every port refuses a name it does not implement
            # (the runner sends it only the names kvspec does not register).
            resp.log.rejection.category = kpb.UNKNOWN_POLICY
            resp.log.rejection.step = -1
            resp.log.rejection.message = self.unknown_message(req.policy.name)
            # spec/harness.md#subjects (compared for ports of 0.11.0 on):
            # an unknown policy name.
            resp.log.rejection.subject.check = "unknown"
            resp.log.rejection.subject.names.append("name")
            return out
        try:
            resp.log.CopyFrom(self.run_case(req))
        except Skip as e:
            resp.skipped.reason = str(e)
        except Exception:  # the engine (or the adapter) failed on this case: an error, not a crash
            resp.error.message = traceback.format_exc()
            if self.log_errors:
                self.log(f"error in {req.case_id}:\n{resp.error.message}")
        return out

    def serve(self, frames=None):
        """The request loop, over stdin and `frames` (default: stdout). Returns
        the exit status: 0 when the runner closes stdin."""
        stdin = sys.stdin.buffer
        frames = sys.stdout.buffer if frames is None else frames
        sys.stdout = sys.stderr  # nothing but frames on the runner's stdout
        while (body := read_frame(stdin)) is not None:
            msg = cpb.RunnerMessage()
            msg.ParseFromString(body)
            kind = msg.WhichOneof("message")
            if kind == "hello":
                write_frame(frames, self.hello())
            elif kind == "request":
                req = msg.request
                t = time.monotonic()
                reply = self.respond(req)
                if self.timings:
                    write_frame(frames, reply)
                    self.log(f"#{req.seq} {req.case_id}: {time.monotonic() - t:.2f}s")
                else:
                    self.log(f"#{req.seq} {req.case_id}: {reply.response.WhichOneof('result')}")
                    write_frame(frames, reply)
            else:
                self.log(f"unknown runner message {kind!r}")
                return 1
        return 0
