# Python recipe of spec/arithmetic.md#recipes-by-language, checked by
# tools/recipes/check.sh against tools/recipes/expected.txt.
# Python ints are unbounded: every +, * and << on a 64-bit value is masked
# back to 64 bits. Integer division is //, never int(a / b) (a float).
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


main()
