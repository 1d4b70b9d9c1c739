"""The golden rows of spec/trace.md#golden-rows, checked bit for bit.

The last eight positions are ones a fused multiply-add in the noise factor
would change (spec/arithmetic.md#operations).
"""

import struct

from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.trace import TraceGenerator, params_from_proto


def bits(w):
    return struct.unpack("<I", struct.pack("<f", w))[0]


def row_at(step, **fields):
    gen = TraceGenerator(params_from_proto(kpb.TraceConfig(steps=step + 1, **fields)))
    for t in range(step + 1):
        gen.begin_step(t)
    return gen


def test_small_trace_rows():
    expected = {
        1: [0x3f80337b],
        2: [0x3ee92879, 0x3f100ab3],
        3: [0x3e909d2a, 0x3ea55833, 0x3ed23d8f],
        4: [0x3e8a27d7, 0x3e9ada58, 0x3e9d87d2, 0x3de90157],
        5: [0x3e8d89ed, 0x3e96f687, 0x3e883fa5, 0x3d9e2020, 0x3dc37c42],
    }
    for step, want in expected.items():
        gen = row_at(step, sinks=2, recent_length=2, heavy_count=2, epoch_length=3)
        assert [bits(w) for w in gen.row()] == want, f"step {step}"


def test_canonical_trace_at_step_1300():
    gen = row_at(1300)
    expected = {
        0: 0x3e001701, 1: 0x3e002ce5, 2: 0x3e00176a, 3: 0x3e002e36,
        4: 0x38628a17, 5: 0x38d2ba71, 1290: 0x392349ab, 1291: 0x390aea48,
        1292: 0x3a2e3ab0, 1293: 0x3a929f26, 1294: 0x3b058d42, 1295: 0x3b83f4fa,
        1296: 0x3c02c75c, 1297: 0x3c81abde, 1298: 0x3d00e8d0, 1299: 0x3d80dd21,
        # Changed by a fused multiply-add in 1 + noise * jit.
        22: 0x39636b7d, 34: 0x38c98c58, 46: 0x3783b804, 51: 0x38e63677,
        58: 0x391b83ff, 61: 0x39239443, 74: 0x38fb76f2, 92: 0x38d2f1f8,
    }
    positions = sorted(expected)
    got = dict(zip(positions, (bits(w) for w in gen.weights(positions))))
    assert got == expected
