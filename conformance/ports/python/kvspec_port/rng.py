"""The Rng: xoshiro256** seeded by SplitMix64 (spec/rng.md).

All arithmetic is on unsigned 64-bit integers, wrapping modulo 2^64.
"""

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def mix64(x: int) -> int:
    """SplitMix64's output function (spec/rng.md#splitmix64, spec/trace.md#hashes)."""
    z = x
    z = ((z ^ (z >> 30)) * _C1) & MASK64
    z = ((z ^ (z >> 27)) * _C2) & MASK64
    return z ^ (z >> 31)


class SplitMix64:
    """spec/rng.md#splitmix64."""

    def __init__(self, state: int) -> None:
        self.state = state & MASK64

    def next(self) -> int:
        self.state = (self.state + GOLDEN_GAMMA) & MASK64
        return mix64(self.state)


def _rotl(x: int, k: int) -> int:
    return ((x << k) & MASK64) | (x >> (64 - k))


class Rng:
    """xoshiro256** (spec/rng.md#step), seeded per spec/rng.md#seeding."""

    __slots__ = ("s",)

    def __init__(self, seed: int) -> None:
        sm = SplitMix64(seed)
        self.s = [sm.next(), sm.next(), sm.next(), sm.next()]

    def next(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def uniform(self, n: int) -> int:
        """Uniform on [0, n) by bitmask rejection (spec/rng.md#uniform-integer)."""
        if n < 1 or n > MASK64:
            raise ValueError(f"Uniform({n}) is a caller error")
        if n == 1:
            return 0
        shift = 64 - (n - 1).bit_length()
        while True:
            candidate = self.next() >> shift
            if candidate < n:
                return candidate

    def uniform_double(self) -> float:
        """(Next() >> 11) * 2^-53, exact (spec/rng.md#uniform-float)."""
        return (self.next() >> 11) * (2.0 ** -53)

    def uniform_float(self) -> float:
        """(Next() >> 40) * 2^-24, a binary32 value, exact (spec/rng.md#uniform-float)."""
        return (self.next() >> 40) * (2.0 ** -24)
