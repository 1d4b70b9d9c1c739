# Independent Python implementation of spec/rng.md, used to compute the golden
# values in cc/rng_test.cc and spec/rng.md.
M = (1 << 64) - 1
def splitmix(state):
    state = (state + 0x9e3779b97f4a7c15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return state, z ^ (z >> 31)
def rotl(x, k): return ((x << k) | (x >> (64 - k))) & M
class Rng:
    def __init__(self, seed):
        st = seed; self.s = []
        for _ in range(4):
            st, o = splitmix(st); self.s.append(o)
    def next(self):
        s = self.s
        r = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 17) & M
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45)
        return r
    def uniform(self, n):
        if n == 1: return 0
        b = (n - 1).bit_length()
        while True:
            c = self.next() >> (64 - b)
            if c < n: return c
st = 0; out = []
for _ in range(3):
    st, o = splitmix(st); out.append(hex(o))
print("splitmix seed 0:", out)
for seed in (0, 42, 0xffffffffffffffff):
    r = Rng(seed); print("seed", hex(seed), "state", [hex(x) for x in r.s], "next", [hex(r.next()) for _ in range(5)])
r = Rng(42); print("uniform(10) x10 seed42:", [r.uniform(10) for _ in range(10)])
r = Rng(42); print("uniform(1000) x5:", [r.uniform(1000) for _ in range(5)])
r = Rng(7); print("uniform(2^63+1) x3:", [hex(r.uniform((1<<63)+1)) for _ in range(3)])
r = Rng(42); print("double x3:", [((r.next() >> 11) * 2.0**-53).hex() for _ in range(3)])
r = Rng(42); print("float x3 (as int*2^-24):", [(r.next() >> 40) for _ in range(3)])
