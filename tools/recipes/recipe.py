# Python recipe of spec/arithmetic.md#recipes-by-language, checked by
# tools/recipes/check.sh against tools/recipes/expected.txt.
# Python ints are unbounded: every +, * and << on a 64-bit value is masked
# back to 64 bits. Integer division is //, never int(a / b) (a float).
# exp and log (spec/elementary.md) are fdlibm 5.3's algorithms written out
# from the spec's steps (Python floats are binary64, never fused; the bits
# move through struct); math.exp and math.log are the platform's libm, unused.
import math
import struct

M64 = (1 << 64) - 1


def hex64(x):
    return f"0x{x:016x}"


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) & M64) | (x >> (64 - k))


class Rng:
    def __init__(self, seed):
        state = seed
        self.s = []
        for _ in range(4):
            state = (state + 0x9E3779B97F4A7C15) & M64
            self.s.append(mix64(state))

    def next(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def uniform(self, n):
        if n == 1:
            return 0
        bits = (n - 1).bit_length()
        while True:
            candidate = self.next() >> (64 - bits)
            if candidate < n:
                return candidate


def ratio_budget(n, ppm):
    r = ppm / 1000000.0
    t = 1.0 - r
    u = float(n) * t
    return max(1, math.floor(u))


def floor_of(budget, permille):
    f = budget * permille // 1000
    return 1 if f == 0 and permille > 0 else f


def effective_heads(field):  # None: absent (HasField false)
    return 1 if field is None else field


def bits_of(x):
    """The 64 bits of a binary64 (spec/elementary.md#bits-and-words)."""
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def high_word(x):
    """The high word, signed: negative exactly when the sign bit is set."""
    h = bits_of(x) >> 32
    return h - (1 << 32) if h & 0x80000000 else h


# spec/elementary.md#constants, from their bits.
LN2_HI = from_bits(0x3FE62E42FEE00000)
LN2_LO = from_bits(0x3DEA39EF35793C76)
INV_LN2 = from_bits(0x3FF71547652B82FE)
O_THRESHOLD = from_bits(0x40862E42FEFA39EF)
U_THRESHOLD = from_bits(0xC0874910D52D3051)
P1 = from_bits(0x3FC555555555553E)
P2 = from_bits(0xBF66C16C16BEBD93)
P3 = from_bits(0x3F11566AAF25DE2C)
P4 = from_bits(0xBEBBBD41C5D26BF1)
P5 = from_bits(0x3E66376972BEA4D0)
LG1 = from_bits(0x3FE5555555555593)
LG2 = from_bits(0x3FD999999997FA04)
LG3 = from_bits(0x3FD2492494229359)
LG4 = from_bits(0x3FCC71C51D8E78AF)
LG5 = from_bits(0x3FC7466496CB03DE)
LG6 = from_bits(0x3FC39A09D078C69F)
LG7 = from_bits(0x3FC2F112DF3E5244)
THIRD = from_bits(0x3FD5555555555555)
TWO54 = from_bits(0x4350000000000000)
TWOM1000 = from_bits(0x0170000000000000)


def add_to_exponent(y, j):
    """spec/elementary.md#scaling: the bits of y plus j * 2^52, modulo 2^64."""
    return from_bits((bits_of(y) + (j << 52)) & M64)


def exp(x):
    """spec/elementary.md#exp."""
    negative = bits_of(x) >> 63 == 1
    h = (bits_of(x) >> 32) & 0x7FFFFFFF  # of |x|
    # Step 1: special values.
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0 if negative else x
    if x > O_THRESHOLD:
        return math.inf
    if x < U_THRESHOLD:
        return 0.0
    # Step 2: reduction, x = k ln2 + r with r = hi - lo.
    k, hi, lo, r = 0, 0.0, 0.0, x
    if h > 0x3FD62E42:
        if h < 0x3FF0A2B2:
            k, hi, lo = (-1, x + LN2_HI, -LN2_LO) if negative else (1, x - LN2_HI, LN2_LO)
        else:
            # int() truncates toward zero (|x| < 746 here).
            k = int(INV_LN2 * x - 0.5 if negative else INV_LN2 * x + 0.5)
            t = float(k)
            hi = x - t * LN2_HI
            lo = t * LN2_LO
        r = hi - lo
    elif h < 0x3E300000:
        return 1.0 + x  # |x| < 2^-28
    # Step 3: approximation.
    t = r * r
    c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))))
    if k == 0:
        return 1.0 - ((r * c) / (c - 2.0) - r)
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    # Step 4: scaling by 2^k; below 2^-1021 one rounding, by the multiplication.
    if k >= -1021:
        return add_to_exponent(y, k)
    return add_to_exponent(y, k + 1000) * TWOM1000


def log(x):
    """spec/elementary.md#log."""
    h = high_word(x)
    low = bits_of(x) & 0xFFFFFFFF
    k = 0
    # Step 1: zero, negatives, subnormals, then +inf and NaN.
    if h < 0x00100000:
        if (h & 0x7FFFFFFF) | low == 0:
            return -math.inf
        if h < 0:
            return math.nan
        k = -54
        x = x * TWO54  # exact
        h = high_word(x)
    if h >= 0x7FF00000:
        return x + x
    # Step 2: reduction, x = 2^k (1 + f). h >= 0 here, so >> is a plain shift.
    k += (h >> 20) - 1023
    m = h & 0x000FFFFF
    i = (m + 0x95F64) & 0x100000
    x = from_bits(((m | (i ^ 0x3FF00000)) << 32) | (bits_of(x) & 0xFFFFFFFF))
    k += i >> 20
    f = x - 1.0
    dk = float(k)
    # Step 3: near 1, |f| < 2^-20.
    if (2 + m) & 0x000FFFFF < 3:
        if f == 0.0:
            return 0.0 if k == 0 else dk * LN2_HI + dk * LN2_LO
        r = f * f * (0.5 - THIRD * f)
        return f - r if k == 0 else dk * LN2_HI - ((r - dk * LN2_LO) - f)
    # Step 4: approximation.
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (LG2 + w * (LG4 + w * LG6))
    t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)))
    r = t2 + t1
    if 0x6147A <= m <= 0x6B851:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + r))
        return dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f)
    if k == 0:
        return f - s * (f - r)
    return dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f)


def centered(u):
    """(u >> 11) - 2^52, in [-2^52, 2^52): exact as a binary64."""
    return float((u >> 11) - (1 << 52))


# spec/elementary.md#spot-checks: name, function, input from one draw u.
SPOT_FAMILIES = [
    ("exp wide", exp, lambda u: centered(u) * math.ldexp(1.0, -42)),
    ("exp near 0", exp, lambda u: centered(u) * math.ldexp(1.0, -51)),
    ("exp tiny", exp, lambda u: centered(u) * math.ldexp(1.0, -80)),
    ("log wide", log, lambda u: from_bits(u % 0x7FF0000000000000)),
    ("log near 1", log, lambda u: 1.0 + centered(u) * math.ldexp(1.0, -75)),
    ("log small", log, lambda u: float(u >> 11) * math.ldexp(1.0, -50)),
]

# spec/elementary.md#golden-values: the inputs' bits.
EXP_INPUTS = [
    0x3FF0000000000000, 0xBFF0000000000000, 0x3FE0000000000000, 0x3DDB7CDFD9D7BDBB,
    0x39B4484BFEEBC2A0, 0x4024000000000000, 0xC034800000000000, 0x40862E3D70A3D70A,
    0x4086300000000000, 0xC086240000000000, 0xC087480000000000, 0xC087500000000000,
]
LOG_INPUTS = [
    0x4000000000000000, 0x4024000000000000, 0x3FE0000000000000, 0x3FF000001AD7F29B,
    0x3FF6666666666666, 0x3FE6666666666666, 0x0000000000000001, 0x7FEFFFFFFFFFFFFF,
    0x0000000000000000, 0x7FF0000000000000,
]


def main():
    state, out = 0, []
    for _ in range(3):
        state = (state + 0x9E3779B97F4A7C15) & M64
        out.append(hex64(mix64(state)))
    print("splitmix64 state=0:", " ".join(out))
    for seed in (0, 42, M64):
        rng = Rng(seed)
        print(f"next seed={seed}:", " ".join(hex64(rng.next()) for _ in range(5)))
    rng = Rng(42)
    print("uniform(10) seed=42:", " ".join(str(rng.uniform(10)) for _ in range(10)))
    rng = Rng(42)
    print("uniform(1000) seed=42:", " ".join(str(rng.uniform(1000)) for _ in range(5)))
    rng = Rng(7)
    print("uniform(2^63+1) seed=7:",
          " ".join(hex64(rng.uniform((1 << 63) + 1)) for _ in range(3)))

    print("trace head seeds seed=1: " + "; ".join(
        f"h={h} {hex64(mix64(1 ^ 0x3C6EF372FE94F82B ^ h))}" for h in (1, 2, 3)))

    m = int("18446744073709551615")
    print(f"u64 parse 18446744073709551615: {m} {hex64(m)}")
    print("u64 2^64-1 > 2^63:", "true" if m > (1 << 63) else "false")
    print(f"u64 (2^64-1) / 3: {m // 3} rem {m % 3}")
    print(f"u64 (2^64-1) % 10: {m % 10}")
    print(f"u64 2^64-1 as binary64: {int(float(m))}")
    print(f"u64 2^53+1 as binary64: {int(float((1 << 53) + 1))}")

    heads = [(32, 8, 31), (6, 3, 5), (1024, 1, 1023), (1024, 1024, 1023)]
    print("kv head h / (Hq / Hkv): " + "; ".join(
        f"Hq={q} Hkv={k} h={h} -> {h // (q // k)}" for q, k, h in heads))
    floors = [(2, 200), (512, 200), (100, 290), (7, 0), (4294967295, 999), (4294967295, 1000)]
    print("adakv floor: " + "; ".join(
        f"budget={b} permille={p} -> {floor_of(b, p)}" for b, p in floors))
    epochs = [(1300, 512), (2147483647, 2147483647), (511, 512)]
    print("trace epoch t / epoch_length: " + "; ".join(
        f"t={t} L={l} -> {t // l}" for t, l in epochs))
    print("trace role (h - 1) mod 3: " + "; ".join(
        f"h={h} -> {(h - 1) % 3}" for h in (1, 4, 5, 9)))
    recents = [(3, 0, 8), (1300, 4, 8), (5, 4, 8)]
    print("trace recent start max(sinks, t - recent_length), t - recent_length stopping at 0: "
          + "; ".join(f"t={t} sinks={s} R={r} -> {max(s, max(0, t - r))}" for t, s, r in recents))
    print("snapkv (pool_kernel - 1) / 2: " + "; ".join(
        f"{k} -> {(k - 1) // 2}" for k in (5, 65535)))

    for n, ppm in [(20, 900000), (10, 800000), (90, 300000), (1000, 500000),
                   (7, 999999), (4294967295, 1), (4294967295, 999999)]:
        exact = max(1, n * (1000000 - ppm) // 1000000)
        print(f"ratio budget n={n} ppm={ppm}: binary64 {ratio_budget(n, ppm)} exact {exact}")
    print(f"kvpress int(100 * 0.29): {int(100 * 0.29)} exact {100 * 290 // 1000}")
    print(f"presence query_heads: absent -> {effective_heads(None)}; "
          f"present 0 -> {effective_heads(0)}; present 4 -> {effective_heads(4)}")
    # uint32 fields are ints in [0, 2^32).
    admit = 4294967295
    print(f"u32 field 4294967295: {admit}; 2^31 > 1 as u32: "
          + ("true" if (1 << 31) > 1 else "false"))
    # The sign bit: math.copysign, never == or < (-0.0 == 0.0 is True).
    def sign_bit(x):
        return 1 if math.copysign(1.0, x) < 0 else 0
    weight = struct.unpack("<f", struct.pack("<I", 0x80000000))[0]  # binary32 bits
    print(f"sign bit: +0.0 -> {sign_bit(0.0)}; -0.0 -> {sign_bit(-0.0)}; "
          f"binary32 -0.0 -> {sign_bit(weight)}; -0.0 == +0.0: "
          + ("true" if -0.0 == 0.0 else "false"))

    # spec/elementary.md#golden-values: the inputs' bits; the results computed.
    for name, function, inputs in (("exp", exp, EXP_INPUTS), ("log", log, LOG_INPUTS)):
        for b in inputs:
            print(f"{name} {hex64(b)} -> {hex64(bits_of(function(from_bits(b))))}")
    # Spot checks: one generator across the families, in order.
    spot = Rng(2026)
    for name, function, make_input in SPOT_FAMILIES:
        d = 0xCBF29CE484222325
        for _ in range(1000):
            d = ((d ^ bits_of(function(make_input(spot.next())))) * 0x100000001B3) & M64
        print(f"spot {name}: {hex64(d)}")


main()
