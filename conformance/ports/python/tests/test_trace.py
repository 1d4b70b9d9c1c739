"""The trace generator (spec/trace.md): structural properties of its rows."""

import math

from kvspec_port.f32 import f32
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.trace import TraceGenerator, params_from_proto, salience


def rows(steps, **fields):
    gen = TraceGenerator(params_from_proto(kpb.TraceConfig(steps=steps, **fields)))
    out = []
    for t in range(steps):
        gen.begin_step(t)
        out.append(gen.row())
    return out


def test_first_row_is_empty_and_rows_grow():
    rs = rows(20)
    assert [len(r) for r in rs] == list(range(20))


def test_weights_are_binary32_and_sum_near_one():
    for r in rows(600)[1:]:
        assert all(f32(w) == w and w > 0 and math.isfinite(w) for w in r)
        assert abs(sum(r) - 1.0) < 0.05


def test_without_noise_rows_sum_to_one():
    for r in rows(40, noise=0.0)[1:]:
        assert abs(math.fsum(r) - 1.0) < 1e-5


def test_single_position_row():
    # t = 1: only the sink (position 0, s = 1) and the background are present.
    r = rows(2, noise=0.0)[1]
    assert r == [f32((0.5 + f32(0.125 * salience(1, 0) / salience(1, 0))) / 0.625)]


def test_streaming_equals_full_row():
    gen = TraceGenerator(params_from_proto(kpb.TraceConfig(steps=700)))
    for t in range(700):
        gen.begin_step(t)
        if t in (1, 9, 513, 699):
            row = gen.row()
            subset = list(range(0, t, 3))
            assert gen.weights(subset) == [row[p] for p in subset]


def test_heavy_hitters_are_stationary_within_an_epoch():
    rs = rows(540, noise=0.0, epoch_length=512)
    # From step 512 on, some positions get a heavy share; noise 0 keeps
    # background shares smooth, so a heavy hitter stands out.
    heavy = [p for p in range(4, 500) if rs[520][p] > 0.005]
    assert heavy
    assert all(rs[530][p] > 0.005 for p in heavy)
