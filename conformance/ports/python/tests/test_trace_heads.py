"""A generated trace of several heads (spec/trace.md#several-heads), worked by
hand from the spec.

Head 0 is the trace configuration itself; head h >= 1 has
seed_h = mix64(seed ^ 0x3c6ef372fe94f82b ^ h) and role (h - 1) mod 3, which
multiplies sink_mass (role 0), recent_mass (1) or heavy_mass (2) by 4. Each
step, each kept set gets each of its heads' weights at its kept positions;
the log is spec/heads.md#the-eviction-log's.
"""

import dataclasses
import struct

import numpy as np
import pytest

from kvspec_port.f32 import f32
from kvspec_port.harness import EvictionLog, configure, run_scenario, run_trace
from kvspec_port.heads import KV_HEAD, LAYER, QUERY_HEAD
from kvspec_port.proto import kvspec_pb2 as kpb
from kvspec_port.rng import Rng
from kvspec_port.trace import HeadsTrace, TraceGenerator, head_params, params_from_proto, salience

M64 = (1 << 64) - 1


def spec_mix64(x):
    """spec/trace.md#hashes, written out again here (independent of the port's)."""
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def trace(**fields):
    return kpb.TraceConfig(**fields)


def run(name, params, tc, hq=None, hkv=None):
    return run_scenario(name, list(params), 0, [], tc, hq, hkv)


def record(s):
    return (s.victims, s.kept_count, s.query_cache_position, s.cut, s.sets)


# -- Head configurations -------------------------------------------------------

def test_head_configurations_of_the_canonical_trace():
    base = params_from_proto(trace(steps=10))  # seed 1, canonical masses
    # Head 0: the trace configuration itself.
    assert head_params(base, 0) == base
    # seed ^ key ^ h, worked by hand for seed 1 (1 ^ h: 0, 3, 2, 5).
    xored = {1: 0x3C6EF372FE94F82B, 2: 0x3C6EF372FE94F828, 3: 0x3C6EF372FE94F829, 4: 0x3C6EF372FE94F82E}
    masses = {  # (sink_mass, recent_mass, heavy_mass): role (h - 1) mod 3 times 4
        1: (2.0, 0.125, 0.25),  # role 0: sinks
        2: (0.5, 0.5, 0.25),    # role 1: recent positions
        3: (0.5, 0.125, 1.0),   # role 2: heavy hitters
        4: (2.0, 0.125, 0.25),  # role 0 again, with its own seed
    }
    seeds = set()
    for h in range(1, 5):
        hp = head_params(base, h)
        assert hp.seed == spec_mix64(xored[h])
        assert (hp.sink_mass, hp.recent_mass, hp.heavy_mass) == masses[h]
        # Every other parameter is the trace's.
        assert dataclasses.replace(hp, seed=1, sink_mass=0.5, recent_mass=0.125, heavy_mass=0.25) == base
        seeds.add(hp.seed)
    assert len(seeds) == 4 and 1 not in seeds
    assert base == params_from_proto(trace(steps=10))  # the trace's configuration is unchanged


def test_head_configurations_of_another_trace():
    seed = M64  # seed ^ key ^ h wraps nothing: XOR stays in 64 bits
    base = params_from_proto(trace(steps=5, seed=seed, sink_mass=1.0, recent_mass=0.75,
                                   heavy_mass=0.0, sinks=2, noise=0.0))
    for h, (sink, recent, heavy) in {1: (4.0, 0.75, 0.0), 2: (1.0, 3.0, 0.0), 3: (1.0, 0.75, 0.0),
                                     7: (4.0, 0.75, 0.0), 1024: (4.0, 0.75, 0.0), 1023: (1.0, 0.75, 0.0)}.items():
        hp = head_params(base, h)
        assert hp.seed == spec_mix64(seed ^ 0x3C6EF372FE94F82B ^ h)
        assert (hp.sink_mass, hp.recent_mass, hp.heavy_mass) == (sink, recent, heavy)
        assert (hp.steps, hp.sinks, hp.noise, hp.background_mass) == (5, 2, 0.0, 0.125)


def test_base_configuration_is_validated_head_configurations_are_not():
    # sink_mass 1 gives head 1 a sink mass of 4: not refused.
    log = run("h2o", [("budget", 4), ("recent_window", 1)], trace(steps=20, sink_mass=1.0), 4, 2)
    assert log.rejection is None and len(log.steps) == 20
    # The configuration as given is checked, with its bounds, before any head's.
    log = run("h2o", [("budget", 4), ("recent_window", 1)], trace(steps=20, sink_mass=1.0000001), 4, 2)
    assert log.rejection[:2] == ("INVALID_TRACE", -1)
    log = run("h2o", [("budget", 4), ("recent_window", 1)], trace(steps=20, heavy_mass=-0.0), 4, 2)
    assert log.rejection[:2] == ("INVALID_TRACE", -1)


# -- Rows of each head, worked by hand -----------------------------------------

def heads_at(tp, hq, t):
    ht = HeadsTrace(tp, hq)
    for u in range(t + 1):
        ht.begin_step(u)
    return ht


def full_rows(ht, hq, t):
    return ht.weights_matrix(np.tile(np.arange(t, dtype=np.int64), (hq, 1))).tolist()


def test_role_0_sinks_at_step_2():
    # t = 2, noise 0: sinks 0 and 1 (s = 2) each get sink_mass_1 / 2 = 1.0;
    # recent positions are max(4, 0) .. 1 (none), no heavy hitters in epoch 0;
    # M = 2.0 + 0.125. The noise factor is 1 +f (0 *f jit) = 1.
    tp = params_from_proto(trace(steps=3, noise=0.0))
    seed1 = spec_mix64(0x3C6EF372FE94F82B)
    z = 0.0 + salience(seed1, 0) + salience(seed1, 1)
    want = [f32((1.0 + f32((0.125 * salience(seed1, p)) / z)) / 2.125) for p in (0, 1)]
    assert full_rows(heads_at(tp, 2, 2), 2, 2)[1] == want


def test_role_1_recent_at_step_6():
    # t = 6, sinks 4: sinks 0..3 get 0.5 / 4; recent 4..5 (c = 2), norm
    # 1 + 0.5 = 1.5, position 5 gets (0.5 * 1) / 1.5, position 4 (0.5 * 0.5) / 1.5;
    # M = 0.5 + 0.5 + 0.125 (no heavy hitters before epoch 1).
    tp = params_from_proto(trace(steps=7, noise=0.0))
    seed2 = spec_mix64(0x3C6EF372FE94F828)
    z = 0.0
    for p in range(6):
        z = z + salience(seed2, p)

    def bg(p):
        return f32((0.125 * salience(seed2, p)) / z)

    want = [f32((0.0 + 0.5 / 4 + bg(p)) / 1.125) for p in range(4)]
    want += [f32((0.0 + (0.5 * 0.5) / 1.5 + bg(4)) / 1.125), f32((0.0 + (0.5 * 1.0) / 1.5 + bg(5)) / 1.125)]
    assert full_rows(heads_at(tp, 3, 6), 3, 6)[2] == want


def test_role_2_heavy_hitters_at_step_8():
    # epoch_length 8, recent_length 0: at t = 8 (epoch 1) the candidates are
    # 4..7 (n = 4), drawn 16 times by head 3's own epoch Rng; each heavy
    # hitter gets (heavy_mass_3 / 16) * m = (1.0 / 16) * m; M = 0.5 + 1.0 + 0.125.
    tp = params_from_proto(trace(steps=9, noise=0.0, epoch_length=8, recent_length=0))
    seed3 = spec_mix64(0x3C6EF372FE94F829)
    rng = Rng(spec_mix64(seed3 ^ 0xBB67AE8584CAA73B ^ 1))
    mult = [0] * 8
    for _ in range(16):
        mult[4 + rng.uniform(4)] += 1
    assert sum(mult) == 16
    z = 0.0
    for p in range(8):
        z = z + salience(seed3, p)

    def bg(p):
        return f32((0.125 * salience(seed3, p)) / z)

    want = [f32((0.0 + 0.5 / 4 + bg(p)) / 1.625) for p in range(4)]
    want += [f32((0.0 + ((1.0 / 16) * mult[p] if mult[p] else 0.0) + bg(p)) / 1.625) for p in range(4, 8)]
    assert full_rows(heads_at(tp, 4, 8), 4, 8)[3] == want


@pytest.mark.parametrize("hq, t, role_part, share", [
    (2, 39, range(4), 2 / 2.5),                 # head 1: sinks, 80%
    (3, 39, range(31, 39), 0.5 / 1.375),        # head 2: the last 8 positions, about 36%
])
def test_role_shares(hq, t, role_part, share):
    # Noise 0: a part's share of the row is its mass over M_t, plus the
    # background of its positions (at most background_mass / M_t).
    tp = params_from_proto(trace(steps=t + 1, noise=0.0, epoch_length=16))
    rows = full_rows(heads_at(tp, hq, t), hq, t)
    got = sum(rows[hq - 1][p] for p in role_part)
    assert share - 1e-5 <= got <= share + 0.125 / 1.75
    assert abs(sum(rows[0][p] for p in range(4)) - 0.5 / 1.0) < 0.125  # head 0: sinks 50%


@pytest.mark.parametrize("fields", [
    {},
    {"epoch_length": 3, "sinks": 2, "recent_length": 2, "heavy_count": 2},
    {"sinks": 0, "recent_length": 0, "heavy_count": 0, "noise": 0.0},
    {"seed": 12345, "epoch_length": 5, "heavy_count": 64, "recent_decay": 0.75, "sink_mass": 1.0},
])
def test_every_head_streams_its_own_single_head_rows(fields):
    # Head h's rows are the rows of spec/trace.md computed with head h's
    # configuration: the heads evaluated together equal each head's own
    # generator, bit for bit, at every step, on full rows.
    steps = 40
    tp = params_from_proto(trace(steps=steps, **fields))
    hq = 5
    ht = HeadsTrace(tp, hq)
    gens = [TraceGenerator(head_params(tp, h)) for h in range(hq)]
    for t in range(steps):
        ht.begin_step(t)
        for g in gens:
            g.begin_step(t)
        rows = full_rows(ht, hq, t)
        assert rows == [g.row() for g in gens], f"step {t}"
    # Head 0's generator is the single-head trace's.
    single = TraceGenerator(tp)
    for t in range(steps):
        single.begin_step(t)
    assert single.row() == gens[0].row()


# -- Golden rows -----------------------------------------------------------------

# spec/trace.md#golden-rows-of-several-heads (printed by
# `tools/goldens/trace_goldens.py --heads`): query heads 0..3 (the trace itself, then
# roles 0, 1, 2), binary32 bits of steps 3 and 9's full rows.
SEVERAL_HEADS_SEEDS = [1, 0xBEEB8DA1658EEC67, 0xBA56949915DCF9E9, 0xE99FF867DBF682C9]
SEVERAL_HEADS_GOLDENS = {
    3: [
        [0x3EC0D18D, 0x3EDC759A, 0x3E5B4ED2],
        [0x3EF4C260, 0x3EE4D22D, 0x3DA7A3CF],
        [0x3E7BE722, 0x3E8A6FEC, 0x3EF60395],
        [0x3ED02272, 0x3EC253F2, 0x3E63A317],
    ],
    9: [
        [0x3E852E45, 0x3E8D93B5, 0x3E84C912, 0x3CBE528D, 0x3BF16D8A,
         0x3C25AABB, 0x3C47443C, 0x3D4D64AE, 0x3DCE5D50],
        [0x3ECF8888, 0x3ECD0530, 0x3B944FB2, 0x3B908556, 0x3C10C70F,
         0x3D61661C, 0x3BC2BE15, 0x3DA08F6E, 0x3D29A994],
        [0x3E4241B0, 0x3E4BFC73, 0x3DE979A0, 0x3B810AFC, 0x3B8675E3,
         0x3C02A819, 0x3B72AAA6, 0x3E5FD592, 0x3E85AE61],
        [0x3E1BC352, 0x3E17090B, 0x3C19A7B7, 0x3E9761A6, 0x3E92F5D8,
         0x3C3D683E, 0x3C603E18, 0x3CD6DBCA, 0x3D6DC910],
    ],
}


def test_several_heads_golden_rows():
    tp = params_from_proto(trace(steps=10, sinks=2, recent_length=2, heavy_count=2, epoch_length=4))
    assert [head_params(tp, h).seed for h in range(4)] == SEVERAL_HEADS_SEEDS
    ht = HeadsTrace(tp, 4)  # the generators the harness evaluates together
    for t in range(10):
        ht.begin_step(t)
        if t in SEVERAL_HEADS_GOLDENS:
            got = [[struct.unpack("<I", struct.pack("<f", w))[0] for w in row] for row in full_rows(ht, 4, t)]
            assert got == SEVERAL_HEADS_GOLDENS[t], f"step {t}"


# -- Running a multi-head trace through kept sets ------------------------------

SCORED = [
    ("h2o", [("budget", 16), ("recent_window", 2)]),
    ("tova", [("budget", 16), ("recent_window", 2)]),
    ("snapkv", [("budget", 16), ("recent_window", 2), ("obs_window", 4), ("pool_kernel", 3)]),
]
SMALL = dict(steps=120, epoch_length=24, heavy_count=6)


@pytest.mark.parametrize("name, params", SCORED)
@pytest.mark.parametrize("hq, hkv", [(4, 2), (3, 1), (2, 2)])
def test_head_0_at_query_head_keeps_what_the_single_head_trace_keeps(name, params, hq, hkv):
    tc = trace(**SMALL)
    single = run(name, params, tc)
    multi = run(name, params + [("granularity", QUERY_HEAD)], tc, hq, hkv)
    assert single.rejection is None and multi.rejection is None
    assert len(multi.steps) == len(single.steps) == 120
    for s, m in zip(single.steps, multi.steps):
        assert len(m.sets) == hq
        assert record(m.sets[0]) == record(s)
    assert any(s.victims for s in single.steps)


@pytest.mark.parametrize("name, params", SCORED)
def test_each_query_head_set_runs_its_head_configuration(name, params):
    # At query_head, set h is a single-head run over head h's configuration
    # (which may not pass the trace bounds: head 1's sink_mass is 2).
    tc = trace(**SMALL)
    multi = run(name, params + [("granularity", QUERY_HEAD)], tc, 4, 4)
    tp = params_from_proto(tc)
    for h in range(4):
        cls, values = configure(name, params)
        log = EvictionLog()
        run_trace(cls(values, None), TraceGenerator(head_params(tp, h)), tp.steps, log)
        assert [record(m.sets[h]) for m in multi.steps] == [record(s) for s in log.steps], f"head {h}"
    # The heads' roles and seeds make their sets' scores differ.
    assert len({tuple(tuple(m.sets[h].cut) for m in multi.steps) for h in range(4)}) == 4


@pytest.mark.parametrize("name, params", SCORED)
def test_log_shape(name, params):
    tc = trace(**SMALL)
    # One kept set (layer, or kv_head with one KV head): the step's own fields.
    for granularity, hkv in ((LAYER, 2), (KV_HEAD, 1)):
        log = run(name, params + [("granularity", granularity)], tc, 4, hkv)
        assert all(s.sets == [] for s in log.steps)
        assert [s.kept_count for s in log.steps] == [min(t + 1, 16) for t in range(120)]
        assert [s.query_cache_position for s in log.steps] == [min(t, 16) for t in range(120)]
    # Several: own fields empty, one record per set, in set order.
    log = run(name, params + [("granularity", KV_HEAD)], tc, 4, 2)
    for t, s in enumerate(log.steps):
        assert (s.victims, s.kept_count, s.query_cache_position, s.cut) == ([], 0, 0, [])
        assert len(s.sets) == 2
        assert all((x.kept_count, x.query_cache_position, x.sets) == (min(t + 1, 16), min(t, 16), [])
                   for x in s.sets)


def test_layer_combines_every_head():
    # One set over 4 heads: its cut lists the combined scores, not head 0's.
    tc = trace(**SMALL)
    params = [("budget", 16), ("recent_window", 2)]
    layer = run("h2o", params + [("granularity", LAYER)], tc, 4, 1)
    single = run("h2o", params, tc)
    assert [s.cut for s in layer.steps] != [s.cut for s in single.steps]
    tova = [("budget", 16), ("recent_window", 2)]
    layer = run("tova", tova + [("granularity", LAYER)], tc, 4, 1)
    single = run("tova", tova, tc)
    assert [s.victims for s in layer.steps] != [s.victims for s in single.steps]


@pytest.mark.parametrize("name, params", [
    ("full", []),
    ("window", [("budget", 8)]),
    ("streamingllm", [("budget", 8), ("sinks", 2)]),
    ("random", [("budget", 8), ("recent_window", 2)]),
])
def test_policies_without_attention_keep_one_set(name, params):
    # spec/heads.md#policies-that-do-not-read-attention: one set, read no
    # row; the log is the single-head trace's.
    tc = trace(**SMALL)
    single = run_scenario(name, params, 7, [], tc)
    multi = run_scenario(name, params, 7, [], tc, 4, 2)
    assert [record(s) for s in multi.steps] == [record(s) for s in single.steps]


def test_weights_are_elementwise_per_head_and_position():
    # Row h, column i depends on head h and that position alone: any
    # positions (in any order, repeated, padded) give each its own weight.
    tp = params_from_proto(trace(steps=60, epoch_length=16, heavy_count=8))
    ht = heads_at(tp, 3, 59)
    rows = full_rows(ht, 3, 59)
    picks = np.array([[58, 0, 0, 17, 33], [3, 3, 50, 0, 0], [0, 41, 12, 57, 5]], dtype=np.int64)
    got = ht.weights_matrix(picks).tolist()
    assert got == [[rows[h][p] for p in picks[h]] for h in range(3)]
