"""The testee speaks spec/protocol.md: frames, hello, request, exit status 0."""

import os
import struct
import subprocess

from conftest import PORT_DIR
from kvspec_port.proto import conformance_pb2 as cpb
from kvspec_port.proto import kvspec_pb2 as kpb


def frame(msg):
    body = msg.SerializeToString()
    return struct.pack("<I", len(body)) + body


def read_frames(data):
    out = []
    while data:
        (n,) = struct.unpack("<I", data[:4])
        out.append(cpb.PortMessage.FromString(data[4 : 4 + n]))
        data = data[4 + n :]
    return out


def test_conversation():
    hello = cpb.RunnerMessage(hello=cpb.Hello(protocol_version=1, spec_version="0.3.0"))
    scenario = kpb.Scenario(steps=[kpb.Step(admit=5), kpb.Step(admit=2)])
    req = cpb.RunnerMessage(
        request=cpb.Request(
            seq=1, case_id="x/y/z", scenario=scenario,
            policy=kpb.PolicyConfig(name="window", parameters=[kpb.Parameter(name="budget", value=3)]),
        )
    )
    bad = cpb.RunnerMessage(request=cpb.Request(seq=2, policy=kpb.PolicyConfig(name="nope")))
    proc = subprocess.run(
        [os.path.join(PORT_DIR, "port.sh")], input=frame(hello) + frame(req) + frame(bad),
        capture_output=True, timeout=60,
    )
    assert proc.returncode == 0
    replies = read_frames(proc.stdout)
    assert replies[0].hello.protocol_version == 1
    assert list(replies[0].hello.policies) == [
        "full", "window", "streamingllm", "h2o", "tova", "snapkv", "random", "openvino", "knorm", "keydiff",
        "lagkv", "simlayerkv",
    ]
    log = replies[1].response.log
    assert replies[1].response.seq == 1
    assert [list(s.victims) for s in log.steps] == [[0, 1], [2, 3]]
    assert not log.HasField("rejection")
    rej = replies[2].response.log.rejection
    assert (rej.category, rej.step) == (kpb.UNKNOWN_POLICY, -1)
