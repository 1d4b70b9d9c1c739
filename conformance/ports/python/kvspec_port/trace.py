"""The trace generator (spec/trace.md).

`TraceGenerator(config)` validates a TraceConfig (spec/trace.md#parameters,
INVALID_TRACE) and then produces, step by step, the weight of any position
p < t (spec/trace.md#streaming): `begin_step(t)` once per step, in order,
then `weights(positions)` (a list) or `weights_array(positions)` (a NumPy
array) for the positions wanted (the policy's kept ones).

A trace of several query heads (spec/trace.md#several-heads): head h's
configuration is `head_params(config, h)`, and `HeadsTrace` streams every
head's rows at once (one `TraceGenerator` per head for the per-step
scalars, the per-position recipe evaluated over a heads-by-positions array).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence

from .errors import INVALID_TRACE, Refusal, Subject
import numpy as np

from .f32 import f32
from .rng import GOLDEN_GAMMA, MASK64, Rng, mix64

_NOISE_KEY = 0x6A09E667F3BCC909
_EPOCH_KEY = 0xBB67AE8584CAA73B
_HEAD_KEY = 0x3C6EF372FE94F82B
# spec/trace.md#several-heads: the mass that role (h - 1) mod 3 multiplies by 4.
_ROLE_MASSES = ("sink_mass", "recent_mass", "heavy_mass")
_TWO_M53 = 2.0 ** -53

_GOLDEN_U = np.uint64(GOLDEN_GAMMA)
_C1_U = np.uint64(0xBF58476D1CE4E5B9)
_C2_U = np.uint64(0x94D049BB133111EB)
_ONE_U = np.uint64(1)
_TWO_U = np.uint64(2)
_S11 = np.uint64(11)
_S27 = np.uint64(27)
_S30 = np.uint64(30)
_S31 = np.uint64(31)


def f32_list(xs: np.ndarray) -> np.ndarray:
    """Each binary64 element rounded to binary32 (round to nearest, ties to
    even, NumPy's cast), returned widened to binary64, exactly."""
    return np.asarray(xs, dtype=np.float64).astype(np.float32).astype(np.float64)


def _mix64_array(x: np.ndarray) -> np.ndarray:
    """mix64 elementwise on uint64 (spec/rng.md#splitmix64); NumPy's uint64
    multiplication wraps modulo 2^64, as the spec's does."""
    x = (x ^ (x >> _S30)) * _C1_U
    x = (x ^ (x >> _S27)) * _C2_U
    return x ^ (x >> _S31)


@dataclass
class TraceParams:
    seed: int = 1
    steps: int = 0
    sinks: int = 4
    sink_mass: float = 0.5
    recent_length: int = 8
    recent_mass: float = 0.125
    recent_decay: float = 0.5
    heavy_count: int = 16
    heavy_mass: float = 0.25
    epoch_length: int = 512
    background_mass: float = 0.125
    noise: float = 0.3


def _sign_clear(x: float) -> bool:
    return math.copysign(1.0, x) > 0.0


def _share(x: float) -> bool:
    """in [+0.0, 1]: -0.0 is refused (spec/trace.md#parameters)."""
    return 0.0 <= x <= 1.0 and _sign_clear(x)


def params_from_proto(tc) -> TraceParams:
    """Defaults for absent fields; INVALID_TRACE for a value out of range."""
    p = TraceParams()
    for name in (
        "seed", "steps", "sinks", "sink_mass", "recent_length", "recent_mass", "recent_decay",
        "heavy_count", "heavy_mass", "epoch_length", "background_mass", "noise",
    ):
        if tc.HasField(name):
            setattr(p, name, getattr(tc, name))
    if not tc.HasField("steps"):
        raise Refusal(INVALID_TRACE, Subject("range", ("trace.steps",)), "trace: steps is required")
    validate(p)
    return p


def validate(p: TraceParams) -> None:
    """spec/trace.md#parameters, in the table's order."""
    checks = [
        ("steps", 1 <= p.steps <= 2 ** 31, "must be in [1, 2147483648]"),
        ("sinks", 0 <= p.sinks <= 2 ** 31, "must be in [0, 2147483648]"),
        ("sink_mass", _share(p.sink_mass), "must be in [+0.0, 1]"),
        ("recent_length", 0 <= p.recent_length <= 65536, "must be in [0, 65536]"),
        ("recent_mass", _share(p.recent_mass), "must be in [+0.0, 1]"),
        ("recent_decay", 0.0 < p.recent_decay <= 1.0, "must be in (0, 1]"),
        ("heavy_count", 0 <= p.heavy_count <= 2 ** 16, "must be in [0, 65536]"),
        ("heavy_mass", _share(p.heavy_mass), "must be in [+0.0, 1]"),
        ("epoch_length", 1 <= p.epoch_length <= 2 ** 31, "must be in [1, 2147483648]"),
        ("background_mass", 0.0 < p.background_mass <= 1.0, "must be in (0, 1]"),
        ("noise", 0.0 <= p.noise <= 1.0 and _sign_clear(p.noise), "must be in [+0.0, 1]"),
    ]
    for name, ok, rule in checks:
        if not ok:
            raise Refusal(
                INVALID_TRACE, Subject("range", ("trace." + name,)), f"trace: {name} {rule}, got {getattr(p, name)!r}"
            )


def head_params(p: TraceParams, h: int) -> TraceParams:
    """Query head h's configuration (spec/trace.md#several-heads).

    Head 0 is the trace configuration itself. Head h >= 1 has
    seed_h = mix64(seed ^ 0x3c6ef372fe94f82b ^ h) and role (h - 1) mod 3,
    which multiplies sink_mass (role 0), recent_mass (1) or heavy_mass (2)
    by 4, exactly in binary64; every other parameter is the trace's. Not
    validated: only the configuration as given is (a multiplied mass may
    exceed 1).
    """
    if h == 0:
        return p
    mass = _ROLE_MASSES[(h - 1) % 3]
    return replace(p, seed=mix64((p.seed ^ _HEAD_KEY ^ h) & MASK64),
                   **{mass: float(getattr(p, mass)) * 4.0})


def salience(seed: int, p: int) -> float:
    """spec/trace.md#hashes."""
    x = (seed + GOLDEN_GAMMA * (2 * p + 1)) & MASK64
    return ((mix64(x) >> 11) + 1) * _TWO_M53


class TraceGenerator:
    def __init__(self, p: TraceParams) -> None:
        self.p = p
        self.noise32 = f32(p.noise)
        # Powers d^k by repeated multiplication, and norm(c) summed from d^0 up.
        self.powers: List[float] = []
        self.norms: List[float] = [0.0]  # norms[c] = d^0 + ... + d^(c-1)
        d = 1.0
        acc = 0.0
        for _ in range(p.recent_length):
            self.powers.append(d)
            acc = acc + d
            self.norms.append(acc)
            d = d * p.recent_decay
        self.z = 0.0  # Z_t, summed from position 0 up
        self.t = -1
        self.epoch: Optional[int] = None
        self.heavy: Dict[int, int] = {}
        self.heavy_present = False

    # -- per step --------------------------------------------------------------
    def begin_step(self, t: int) -> None:
        p = self.p
        if t != self.t + 1:
            raise ValueError("steps must be generated in order")
        if t > 0:
            self.z = self.z + salience(p.seed, t - 1)
        self.t = t
        # Sinks.
        self.s = min(p.sinks, t)
        self.sink_share = p.sink_mass / self.s if self.s > 0 else 0.0
        # Recent: positions max(sinks, t - recent_length) .. t-1.
        self.rec_lo = max(p.sinks, t - p.recent_length)
        c = t - self.rec_lo
        self.rec_c = c if c > 0 else 0
        if self.rec_c > 0:
            norm = self.norms[self.rec_c]
            self.rec_shares = [(p.recent_mass * self.powers[k]) / norm for k in range(self.rec_c)]
        # Heavy hitters of epoch e.
        e = t // p.epoch_length
        if e != self.epoch:
            self.epoch = e
            n = e * p.epoch_length - p.sinks
            self.heavy_present = n > 0 and p.heavy_count > 0
            self.heavy = {}
            if self.heavy_present:
                rng = Rng(mix64((p.seed ^ _EPOCH_KEY ^ e) & MASK64))
                unit_share = p.heavy_mass / p.heavy_count
                counts: Dict[int, int] = {}
                for _ in range(p.heavy_count):
                    h = p.sinks + rng.uniform(n)
                    counts[h] = counts.get(h, 0) + 1
                self.heavy = {h: unit_share * m for h, m in counts.items()}
            hs = sorted(self.heavy)
            self._heavy_arrays = (np.array(hs, dtype=np.int64),
                                  np.array([self.heavy[h] for h in hs], dtype=np.float64))
        # M_t: masses of the present parts, in the order sink, recent, heavy, background.
        m = 0.0
        if self.s > 0:
            m = m + p.sink_mass
        if self.rec_c > 0:
            m = m + p.recent_mass
        if self.heavy_present:
            m = m + p.heavy_mass
        if t > 0:
            m = m + p.background_mass
        self.m = m
        self.noise_hash = mix64((p.seed ^ _NOISE_KEY ^ t) & MASK64)

    def weights(self, positions: Sequence[int]) -> List[float]:
        """binary32 weights of step t for the given positions, as a list."""
        return self.weights_array(positions).tolist()

    def weights_array(self, positions: Sequence[int]) -> np.ndarray:
        """binary32 weights of step t for the given positions (each < t).

        Vectorised with NumPy, elementwise only: every weight is a function of
        its own position, and each element goes through exactly the scalar
        recipe of spec/trace.md#steps-and-rows (binary64 operations, then a
        rounding to binary32 where the spec writes f32/+f/*f; a binary64
        result rounded to binary32 is the correctly rounded binary32 result
        for + - * /, spec/arithmetic.md#operations). No reduction across
        positions happens here; Z_t and M_t are scalars summed in order in
        begin_step.
        """
        if len(positions) == 0:
            return np.zeros(0, dtype=np.float64)
        p = self.p
        t = self.t
        q = np.asarray(positions, dtype=np.int64)
        qu = q.astype(np.uint64)
        # salience(p) (spec/trace.md#hashes), uint64 arithmetic wraps mod 2^64.
        x = np.uint64(p.seed) + _GOLDEN_U * (qu * _TWO_U + _ONE_U)
        sal = ((_mix64_array(x) >> _S11) + _ONE_U).astype(np.float64) * _TWO_M53
        # Background, partly binary32 (spec/trace.md#steps-and-rows).
        shares = f32_list((p.background_mass * sal) / self.z)
        jits = f32_list(2.0 * ((_mix64_array(np.uint64(self.noise_hash) + qu) >> _S11).astype(np.float64) * _TWO_M53) - 1.0)
        prods = f32_list(self.noise32 * jits)
        factors = f32_list(1.0 + prods)
        noisy = f32_list(shares * factors)
        # c = 0.0, then + sink, + recent, + heavy, + noisy, in that order,
        # per position. Where a part does not apply to a position this adds
        # +0.0 instead of skipping the addition: c is never -0.0 or NaN
        # (every share is a finite value with the sign bit clear), and
        # c + (+0.0) == c exactly, so the result is bit-identical.
        c = np.zeros(len(q), dtype=np.float64)
        if self.s > 0:
            c = c + np.where(q < self.s, self.sink_share, 0.0)
        if self.rec_c > 0:
            rec = np.asarray(self.rec_shares, dtype=np.float64)
            k = np.minimum(t - 1 - q, self.rec_c - 1)  # q < t, so k >= 0
            c = c + np.where(q >= self.rec_lo, rec[k], 0.0)
        if self.heavy_present and self.heavy:
            hpos, hval = self._heavy_arrays
            i = np.minimum(np.searchsorted(hpos, q), len(hpos) - 1)
            c = c + np.where(hpos[i] == q, hval[i], 0.0)
        c = c + noisy
        return f32_list(c / self.m)

    def row(self) -> List[float]:
        return self.weights(range(self.t))


class HeadsTrace:
    """The generators of a trace of several query heads, evaluated together
    (spec/trace.md#several-heads).

    `gens[h]` is query head h's own streaming generator (`head_params(p, h)`);
    `begin_step(t)` advances every one of them, then `weights_matrix(P)`
    gives, for a (query_heads, n) array of positions (row h: the positions
    head h is asked for), every head's binary32 weights at once.

    Elementwise only, as `TraceGenerator.weights_array`: each element goes
    through exactly the scalar recipe of spec/trace.md#steps-and-rows with
    its own head's scalars (Z_t, M_t, seed, shares), which each head's
    generator has summed in order in its `begin_step`. Which parts are
    present, and where (sinks, recent positions, whether heavy hitters
    exist), depends only on parameters every head shares (`sinks`,
    `recent_length`, `heavy_count`, `epoch_length`): only the masses and the
    seed differ between heads. So head 0's generator says which parts apply.
    """

    def __init__(self, p: TraceParams, query_heads: int) -> None:
        self.gens = [TraceGenerator(head_params(p, h)) for h in range(query_heads)]
        self.seeds = np.array([g.p.seed for g in self.gens], dtype=np.uint64).reshape(-1, 1)
        self.head_index = np.arange(query_heads, dtype=np.int64).reshape(-1, 1)
        self.head_keys = self.head_index << 32
        self.epoch: Optional[int] = None

    def begin_step(self, t: int) -> None:
        gens = self.gens
        for g in gens:
            g.begin_step(t)
        g0 = gens[0]
        self.t = t
        self.z = np.array([g.z for g in gens], dtype=np.float64).reshape(-1, 1)
        self.m = np.array([g.m for g in gens], dtype=np.float64).reshape(-1, 1)
        self.noise_hash = np.array([g.noise_hash for g in gens], dtype=np.uint64).reshape(-1, 1)
        if g0.s > 0:
            self.sink_share = np.array([g.sink_share for g in gens], dtype=np.float64).reshape(-1, 1)
        if g0.rec_c > 0:
            self.rec = np.array([g.rec_shares for g in gens], dtype=np.float64)  # (heads, rec_c)
        if g0.epoch != self.epoch:
            self.epoch = g0.epoch
            # Every head's heavy hitters, keyed (h << 32) + position: positions
            # are below 2^31 + 1, so the keys sort by head, then position.
            keys = [g._heavy_arrays[0] + (h << 32) for h, g in enumerate(gens)]
            vals = [g._heavy_arrays[1] for g in gens]
            self.heavy_keys = np.concatenate(keys).astype(np.int64)
            self.heavy_vals = np.concatenate(vals).astype(np.float64)

    def weights_matrix(self, positions: np.ndarray) -> np.ndarray:
        """binary32 weights of step t (widened), row h for head h at row h's
        positions (each < t)."""
        q = np.asarray(positions, dtype=np.int64)
        if q.shape[1] == 0:
            return np.zeros(q.shape, dtype=np.float64)
        g0 = self.gens[0]
        t = self.t
        qu = q.astype(np.uint64)
        # salience(p) with head h's seed (spec/trace.md#hashes), wrapping mod 2^64.
        x = self.seeds + _GOLDEN_U * (qu * _TWO_U + _ONE_U)
        sal = ((_mix64_array(x) >> _S11) + _ONE_U).astype(np.float64) * _TWO_M53
        # Background, partly binary32 (spec/trace.md#steps-and-rows);
        # background_mass and noise are the trace's, the same for every head.
        shares = f32_list((g0.p.background_mass * sal) / self.z)
        jits = f32_list(2.0 * ((_mix64_array(self.noise_hash + qu) >> _S11).astype(np.float64) * _TWO_M53) - 1.0)
        prods = f32_list(g0.noise32 * jits)
        factors = f32_list(1.0 + prods)
        noisy = f32_list(shares * factors)
        # c = 0.0, + sink, + recent, + heavy, + noisy, in that order, per
        # element; +0.0 where a part does not apply (see weights_array).
        c = np.zeros(q.shape, dtype=np.float64)
        if g0.s > 0:
            c = c + np.where(q < g0.s, self.sink_share, 0.0)
        if g0.rec_c > 0:
            k = np.minimum(t - 1 - q, g0.rec_c - 1)  # q < t, so k >= 0
            c = c + np.where(q >= g0.rec_lo, self.rec[self.head_index, k], 0.0)
        if g0.heavy_present and len(self.heavy_keys):
            hk = self.head_keys + q
            i = np.minimum(np.searchsorted(self.heavy_keys, hk), len(self.heavy_keys) - 1)
            c = c + np.where(self.heavy_keys[i] == hk, self.heavy_vals[i], 0.0)
        c = c + noisy
        return f32_list(c / self.m)
