"""The trace generator (spec/trace.md).

`TraceGenerator(config)` validates a TraceConfig (spec/trace.md#parameters,
INVALID_TRACE) and then produces, step by step, the weight of any position
p < t (spec/trace.md#streaming): `begin_step(t)` once per step, in order,
then `weights(positions)` for the positions wanted (the policy's kept ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from .errors import INVALID_TRACE, Refusal
from .f32 import f32, f32_list
from .rng import GOLDEN_GAMMA, MASK64, Rng, mix64

_NOISE_KEY = 0x6A09E667F3BCC909
_EPOCH_KEY = 0xBB67AE8584CAA73B
_TWO_M53 = 2.0 ** -53


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
        raise Refusal(INVALID_TRACE, "trace: steps is required")
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
            raise Refusal(INVALID_TRACE, f"trace: {name} {rule}, got {getattr(p, name)!r}")


def salience(seed: int, p: int) -> float:
    """spec/trace.md#hashes."""
    x = (seed + GOLDEN_GAMMA * (2 * p + 1)) & MASK64
    return ((mix64(x) >> 11) + 1) * _TWO_M53


def unit(x: int) -> float:
    return (x >> 11) * _TWO_M53


def jitter(seed: int, t: int, p: int) -> float:
    return unit(mix64((mix64(seed ^ _NOISE_KEY ^ t) + p) & MASK64))


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
        # salience of the positions asked for at the previous step: memory
        # follows the kept set, not the run's length (spec/trace.md#streaming).
        self.sal_cache: Dict[int, float] = {}
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
        """binary32 weights of step t for the given positions (each < t)."""
        if not positions:
            return []
        p = self.p
        t = self.t
        old = self.sal_cache
        seed = p.seed
        sal = {q: old[q] if q in old else salience(seed, q) for q in positions}
        self.sal_cache = sal
        z = self.z
        bm = p.background_mass
        h = self.noise_hash
        C1 = 0xBF58476D1CE4E5B9
        C2 = 0x94D049BB133111EB
        M = MASK64
        # Background, partly binary32 (spec/trace.md#steps-and-rows).
        shares = f32_list([(bm * sal[q]) / z for q in positions])
        jits64 = []
        for q in positions:
            x = (h + q) & M
            x = ((x ^ (x >> 30)) * C1) & M
            x = ((x ^ (x >> 27)) * C2) & M
            x ^= x >> 31
            jits64.append(2.0 * ((x >> 11) * _TWO_M53) - 1.0)
        jits = f32_list(jits64)
        n32 = self.noise32
        prods = f32_list([n32 * j for j in jits])
        factors = f32_list([1.0 + x for x in prods])
        noisy = f32_list([a * b for a, b in zip(shares, factors)])
        s = self.s
        sink_share = self.sink_share
        rec_lo = self.rec_lo if self.rec_c > 0 else t
        rec_shares = self.rec_shares if self.rec_c > 0 else None
        heavy = self.heavy if self.heavy_present else {}
        m = self.m
        out = []
        for q, nz in zip(positions, noisy):
            c = 0.0
            if q < s:
                c = c + sink_share
            if q >= rec_lo:
                c = c + rec_shares[t - 1 - q]
            hv = heavy.get(q)
            if hv is not None:
                c = c + hv
            c = c + nz
            out.append(c / m)
        return f32_list(out)

    def row(self) -> List[float]:
        return self.weights(range(self.t))
