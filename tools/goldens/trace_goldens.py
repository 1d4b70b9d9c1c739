#!/usr/bin/env python3
"""Independent implementation of spec/trace.md, written from the spec.

Prints the rows of small traces as binary32 hex bits; cc/trace_test.cc holds
the same values as goldens. The multi-head rows (spec/trace.md#several-heads)
come last, in the layout of spec/trace.md#golden-rows-of-several-heads;
`--heads` prints them alone. Python floats are binary64 and its + - * / are
correctly rounded, so this follows the spec's arithmetic exactly; the final
rounding to binary32 uses struct.
"""
import struct
from fractions import Fraction

M64 = (1 << 64) - 1


def mix64(x):
    z = x & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def unit(x):
    return (x >> 11) * 2.0 ** -53


def splitmix_next(state):
    state = (state + 0x9e3779b97f4a7c15) & M64
    return state, mix64(state)


class Rng:
    def __init__(self, seed):
        st = seed
        self.s = []
        for _ in range(4):
            st, o = splitmix_next(st)
            self.s.append(o)

    def next(self):
        s = self.s
        rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64
        r = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t
        s[3] = rotl(s[3], 45)
        return r

    def uniform(self, n):
        if n == 1:
            return 0
        b = (n - 1).bit_length()
        while True:
            c = self.next() >> (64 - b)
            if c < n:
                return c


def salience(seed, p):
    return ((mix64((seed + 0x9e3779b97f4a7c15 * (2 * p + 1)) & M64) >> 11) + 1) * 2.0 ** -53


def jitter(seed, t, p):
    return unit(mix64((mix64(seed ^ 0x6a09e667f3bcc909 ^ t) + p) & M64))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_exact(x):
    """Rounds an exact rational to the nearest binary32, ties to even (normal
    range only: the values it is used on lie between 0.5 and 2)."""
    x = Fraction(x)
    assert x > 0
    e = 0
    while x >= 2 ** (e + 1):
        e += 1
    while x < 2 ** e:
        e -= 1
    scale = Fraction(2) ** (e - 23)
    q = x / scale
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    return float(n * scale)


def fused_factor(noise, jit):
    """1 + noise * jit with one rounding: what a fused multiply-add computes,
    and what spec/arithmetic.md#operations forbids."""
    return f32_exact(1 + Fraction(noise) * Fraction(jit))


DEFAULTS = dict(seed=1, sinks=4, sink_mass=0.5, recent_length=8, recent_mass=0.125,
                recent_decay=0.5, heavy_count=16, heavy_mass=0.25, epoch_length=512,
                background_mass=0.125, noise=0.3)


def epoch_heavy(c, e):
    """Epoch e's heavy hitters, {position: multiplicity} (empty if absent)."""
    heavy = {}
    n = e * c["epoch_length"] - c["sinks"]
    if n > 0 and c["heavy_count"] > 0:
        rng = Rng(mix64(c["seed"] ^ 0xbb67ae8584caa73b ^ e))
        for _ in range(c["heavy_count"]):
            p = c["sinks"] + rng.uniform(n)
            heavy[p] = heavy.get(p, 0) + 1
    return heavy


# spec/trace.md#several-heads: head 0 is the trace's configuration; head
# h >= 1 has seed mix64(seed ^ HEAD_KEY ^ h) and role (h - 1) mod 3, which
# multiplies one mass by 4.
HEAD_KEY = 0x3c6ef372fe94f82b
ROLE_MASS = ("sink_mass", "recent_mass", "heavy_mass")
ROLE_NAME = ("sinks", "recent", "heavy hitters")


def head_config(h, **overrides):
    c = dict(DEFAULTS, **overrides)
    if h >= 1:
        c["seed"] = mix64(c["seed"] ^ HEAD_KEY ^ h)
        mass = ROLE_MASS[(h - 1) % 3]
        c[mass] = 4 * c[mass]
    return c


# The multi-head golden rows of spec/trace.md#several-heads: query heads 0..3
# (the trace itself, then one head of each role) of a small trace whose
# epoch 2 draws each head's heavy hitters among six positions.
HEADS_TRACE = dict(sinks=2, recent_length=2, heavy_count=2, epoch_length=4)
HEADS_STEPS = (3, 9)


def print_heads_goldens():
    steps = max(HEADS_STEPS) + 1
    print("several heads: query heads 0..3; steps %d, %s" % (
        steps, ", ".join("%s %d" % kv for kv in HEADS_TRACE.items())))
    for h in range(4):
        c = head_config(h, **HEADS_TRACE)
        role = "the trace itself" if h == 0 else "role %d, %s" % ((h - 1) % 3, ROLE_NAME[(h - 1) % 3])
        heavy = epoch_heavy(c, max(HEADS_STEPS) // c["epoch_length"])
        hh = ", ".join("%d" % p if m == 1 else "%d (x%d)" % (p, m) for p, m in sorted(heavy.items()))
        print("    head %d: %s; seed 0x%016x; epoch 2 heavy hitters %s" % (h, role, c["seed"], hh))
        for t, row in rows(steps, **c):
            if t in HEADS_STEPS:
                words = ["0x%08x" % f32_bits(w) for w in row]
                for i in range(0, len(words), 5):
                    print("      %s %s" % ("step %d:" % t if i == 0 else "       ", " ".join(words[i:i + 5])))


def rows(steps, fused=False, **overrides):
    c = dict(DEFAULTS, **overrides)
    seed = c["seed"]
    z = 0.0
    heavy = {}
    epoch = None
    for t in range(steps):
        if t > 0:
            z = z + salience(seed, t - 1)
        e = t // c["epoch_length"]
        if e != epoch:
            epoch = e
            heavy = epoch_heavy(c, e)
        s = min(c["sinks"], t)
        lo = max(c["sinks"], t - c["recent_length"])
        count = t - lo if t > lo else 0
        powers = []
        d = 1.0
        for j in range(count):
            powers.append(d)
            d = d * c["recent_decay"]
        norm = 0.0
        for pw in powers:
            norm = norm + pw
        mass = 0.0
        if s > 0:
            mass = mass + c["sink_mass"]
        if count > 0:
            mass = mass + c["recent_mass"]
        if heavy:
            mass = mass + c["heavy_mass"]
        if t > 0:
            mass = mass + c["background_mass"]
        row = []
        for p in range(t):
            w = 0.0
            if p < s:
                w = w + c["sink_mass"] / s
            if count > 0 and lo <= p:
                w = w + c["recent_mass"] * powers[t - 1 - p] / norm
            if p in heavy:
                w = w + (c["heavy_mass"] / c["heavy_count"]) * heavy[p]
            # binary32 arithmetic: each op in binary64, then rounded to
            # binary32, which gives the correctly rounded binary32 result.
            bg = f32((c["background_mass"] * salience(seed, p)) / z)
            noise = f32(c["noise"])
            jit = f32(2.0 * jitter(seed, t, p) - 1.0)
            if fused:
                factor = fused_factor(noise, jit)
            else:
                factor = f32(1.0 + f32(noise * jit))
            noisy = f32(bg * factor)
            w = w + noisy
            row.append(f32(w / mass))
        yield t, row


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--heads"]:  # the multi-head rows alone (fast)
        print_heads_goldens()
        sys.exit(0)
    print("small: steps 6, sinks 2, recent_length 2, heavy_count 2, epoch_length 3")
    for t, row in rows(6, sinks=2, recent_length=2, heavy_count=2, epoch_length=3):
        print(t, " ".join("0x%08x" % f32_bits(w) for w in row))
    print("canonical, step 1300, positions 0..5 and 1290..1299:")
    for t, row in rows(1301):
        if t == 1300:
            sel = list(range(6)) + list(range(1290, 1300))
            print(" ".join("%d:0x%08x" % (p, f32_bits(row[p])) for p in sel))
            print("sum", sum(row))
            heavy = sorted(p for p in range(1300) if row[p] > 0.01 and p >= 4 and p < 1292)
            print("heavy-looking", heavy)
            correct = row
    # Positions whose weight a fused multiply-add in the noise factor changes:
    # spec/trace.md's golden rows list the first eight, so a port that fuses
    # fails them before it runs any vector.
    for t, row in rows(1301, fused=True):
        if t == 1300:
            changed = [p for p in range(1300) if f32_bits(row[p]) != f32_bits(correct[p])]
            print("canonical, step 1300: %d of 1300 weights change under a fused "
                  "multiply-add; the first eight (correct, then fused):" % len(changed))
            print(" ".join("%d:0x%08x/0x%08x" % (p, f32_bits(correct[p]), f32_bits(row[p]))
                           for p in changed[:8]))
    print_heads_goldens()
