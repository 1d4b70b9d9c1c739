"""exp and log as spec/elementary.md writes them (fdlibm 5.3's algorithms).

Python's math.exp and math.log call the platform's libm, whose last bit is
not pinned; these functions use only binary64 + - * / (Python floats, never
fused) and exact moves of the 64 bits through struct.
"""

import math
import struct

_D = struct.Struct("<d")
_Q = struct.Struct("<Q")


def bits(x: float) -> int:
    """The 64 bits of a binary64, as an unsigned integer."""
    return _Q.unpack(_D.pack(x))[0]


def from_bits(b: int) -> float:
    """The binary64 with these 64 bits."""
    return _D.unpack(_Q.pack(b & 0xFFFFFFFFFFFFFFFF))[0]


def _c(b: int) -> float:
    return from_bits(b)


# spec/elementary.md#constants
LN2_HI = _c(0x3FE62E42FEE00000)
LN2_LO = _c(0x3DEA39EF35793C76)
INV_LN2 = _c(0x3FF71547652B82FE)
O_THRESHOLD = _c(0x40862E42FEFA39EF)
U_THRESHOLD = _c(0xC0874910D52D3051)
P1 = _c(0x3FC555555555553E)
P2 = _c(0xBF66C16C16BEBD93)
P3 = _c(0x3F11566AAF25DE2C)
P4 = _c(0xBEBBBD41C5D26BF1)
P5 = _c(0x3E66376972BEA4D0)
LG1 = _c(0x3FE5555555555593)
LG2 = _c(0x3FD999999997FA04)
LG3 = _c(0x3FD2492494229359)
LG4 = _c(0x3FCC71C51D8E78AF)
LG5 = _c(0x3FC7466496CB03DE)
LG6 = _c(0x3FC39A09D078C69F)
LG7 = _c(0x3FC2F112DF3E5244)
THIRD = _c(0x3FD5555555555555)
TWO54 = _c(0x4350000000000000)
TWOM1000 = _c(0x0170000000000000)


def _add_to_exponent(y: float, j: int) -> float:
    """spec/elementary.md#scaling: the bits of y plus j * 2^52."""
    return from_bits(bits(y) + (j << 52))


def exp(x: float) -> float:
    """spec/elementary.md#exp."""
    b = bits(x)
    negative = b >> 63 == 1
    h = (b >> 32) & 0x7FFFFFFF
    # Step 1: special values.
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0 if negative else x
    if x > O_THRESHOLD:
        return math.inf
    if x < U_THRESHOLD:
        return 0.0
    # Step 2: reduction.
    hi = lo = 0.0
    if h > 0x3FD62E42:
        if h < 0x3FF0A2B2:
            if negative:
                k, hi, lo = -1, x + LN2_HI, -LN2_LO
            else:
                k, hi, lo = 1, x - LN2_HI, LN2_LO
        else:
            k = int(INV_LN2 * x + (-0.5 if negative else 0.5))  # truncates
            t = float(k)
            hi = x - t * LN2_HI
            lo = t * LN2_LO
        r = hi - lo
    elif h < 0x3E300000:
        return 1.0 + x
    else:
        k, r = 0, x
    # Step 3: approximation.
    t = r * r
    c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))))
    if k == 0:
        return 1.0 - ((r * c) / (c - 2.0) - r)
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    # Step 4: scaling.
    if k >= -1021:
        return _add_to_exponent(y, k)
    return _add_to_exponent(y, k + 1000) * TWOM1000


def _signed32(w: int) -> int:
    return w - (1 << 32) if w & 0x80000000 else w


def log(x: float) -> float:
    """spec/elementary.md#log."""
    b = bits(x)
    h = _signed32(b >> 32)
    low = b & 0xFFFFFFFF
    k = 0
    # Step 1: special values and subnormals.
    if h < 0x00100000:
        if ((h & 0x7FFFFFFF) | low) == 0:
            return -math.inf
        if h < 0:
            return math.nan
        k = -54
        x = x * TWO54
        b = bits(x)
        h = _signed32(b >> 32)
    if h >= 0x7FF00000:
        return x + x
    # Step 2: reduction.
    k += (h >> 20) - 1023
    m = h & 0x000FFFFF
    i = (m + 0x95F64) & 0x100000
    x = from_bits(((m | (i ^ 0x3FF00000)) << 32) | (b & 0xFFFFFFFF))
    k += i >> 20
    f = x - 1.0
    dk = float(k)
    # Step 3: near 1.
    if (2 + m) & 0x000FFFFF < 3:
        if f == 0.0:
            return 0.0 if k == 0 else dk * LN2_HI + dk * LN2_LO
        r = f * f * (0.5 - THIRD * f)
        if k == 0:
            return f - r
        return dk * LN2_HI - ((r - dk * LN2_LO) - f)
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


# spec/elementary.md#reductions-over-vectors


def dot(a, b) -> float:
    s = 0.0
    for x, y in zip(a, b, strict=True):
        s = s + x * y
    return s


def norm(a) -> float:
    return math.sqrt(dot(a, a))


def mean(a) -> float:
    s = 0.0
    for x in a:
        s = s + x
    return s / len(a)


def variance(a, correction: int) -> float:
    if len(a) <= correction:
        raise ValueError(f"variance: length {len(a)} must exceed correction {correction}")
    mu = mean(a)
    s = 0.0
    for x in a:
        d = x - mu
        s = s + d * d
    return s / (len(a) - correction)


def std(a, correction: int) -> float:
    """spec/elementary.md#reductions-over-vectors: `sqrt(variance(a, c))`
    (lagkv, spec 0.18.0, reads `std(y, 1)`: PyTorch's default, unbiased)."""
    return math.sqrt(variance(a, correction))
