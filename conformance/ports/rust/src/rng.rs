//! The one pseudo-random generator: xoshiro256** seeded by SplitMix64.
//! Spec: spec/rng.md. All arithmetic is u64, wrapping modulo 2^64.

/// SplitMix64's output function (spec/rng.md#splitmix64, without the
/// increment); spec/trace.md calls it `mix64`.
#[inline]
pub fn mix64(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// SplitMix64 generator (spec/rng.md#splitmix64).
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    pub state: u64,
}

impl SplitMix64 {
    pub fn new(state: u64) -> Self {
        SplitMix64 { state }
    }
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e3779b97f4a7c15);
        mix64(self.state)
    }
}

/// xoshiro256** (spec/rng.md#step), seeded through SplitMix64
/// (spec/rng.md#seeding).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        let s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        Rng { s }
    }

    pub fn state(&self) -> [u64; 4] {
        self.s
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform on `[0, n)` by bitmask rejection (spec/rng.md#uniform-integer).
    /// `n == 0` is a caller error and panics.
    pub fn uniform(&mut self, n: u64) -> u64 {
        assert!(n >= 1, "Uniform(0) is a caller error");
        if n == 1 {
            return 0;
        }
        let bits = 64 - (n - 1).leading_zeros();
        loop {
            let candidate = self.next_u64() >> (64 - bits);
            if candidate < n {
                return candidate;
            }
        }
    }

    /// `(Next() >> 11) * 2^-53` (spec/rng.md#uniform-float).
    pub fn uniform_double(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64) * f64::from_bits(0x3ca0000000000000)
    }

    /// `(Next() >> 40) * 2^-24` in binary32 (spec/rng.md#uniform-float).
    pub fn uniform_float(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32) * f32::from_bits(0x33800000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_goldens() {
        let mut sm = SplitMix64::new(0);
        assert_eq!(sm.next_u64(), 0xe220a8397b1dcdaf);
        assert_eq!(sm.next_u64(), 0x6e789e6aa1b965f4);
        assert_eq!(sm.next_u64(), 0x06c45d188009454f);
    }

    #[test]
    fn seeding_golden() {
        assert_eq!(
            Rng::new(42).state(),
            [0xbdd732262feb6e95, 0x28efe333b266f103, 0x47526757130f9f52, 0x581ce1ff0e4ae394]
        );
    }

    #[test]
    fn next_goldens() {
        let cases: [(u64, [u64; 5]); 3] = [
            (0, [0x99ec5f36cb75f2b4, 0xbf6e1f784956452a, 0x1a5f849d4933e6e0, 0x6aa594f1262d2d2c, 0xbba5ad4a1f842e59]),
            (42, [0x15780b2e0c2ec716, 0x6104d9866d113a7e, 0xae17533239e499a1, 0xecb8ad4703b360a1, 0xfde6dc7fe2ec5e64]),
            (u64::MAX, [0x8f5520d52a7ead08, 0xc476a018caa1802d, 0x81de31c0d260469e, 0xbf658d7e065f3c2f, 0x913593fda1bca32a]),
        ];
        for (seed, outs) in cases {
            let mut r = Rng::new(seed);
            for o in outs {
                assert_eq!(r.next_u64(), o, "seed {seed:#x}");
            }
        }
    }

    #[test]
    fn uniform_goldens() {
        let mut r = Rng::new(42);
        let got: Vec<u64> = (0..10).map(|_| r.uniform(10)).collect();
        assert_eq!(got, vec![1, 6, 9, 4, 5, 9, 1, 2, 6, 9]);
        let mut r = Rng::new(42);
        let got: Vec<u64> = (0..5).map(|_| r.uniform(1000)).collect();
        assert_eq!(got, vec![85, 388, 696, 946, 788]);
        let mut r = Rng::new(7);
        let got: Vec<u64> = (0..3).map(|_| r.uniform((1u64 << 63) + 1)).collect();
        assert_eq!(got, vec![0x475c3d964f482cd2, 0x0f8d72c295ec5854, 0x1abc4dcb546f61dc]);
        let mut r = Rng::new(42);
        let before = r.state();
        assert_eq!(r.uniform(1), 0);
        assert_eq!(r.state(), before, "Uniform(1) consumes no output");
    }

    #[test]
    fn uniform_float_goldens() {
        let mut r = Rng::new(42);
        // 0x1.5780b2e0c2ec0p-4, 0x1.84136619b444ep-2, 0x1.5c2ea66473c93p-1
        let expect = [
            (0x15780b2e0c2ec0u64, -4i32),
            (0x184136619b444e, -2),
            (0x15c2ea66473c93, -1),
        ];
        for (mant, exp) in expect {
            let want = (mant as f64) * 2f64.powi(exp - 52);
            assert_eq!(r.uniform_double().to_bits(), want.to_bits());
        }
        let mut r = Rng::new(42);
        for m in [1406987u32, 6358233, 11409235] {
            let want = (m as f32) * 2f32.powi(-24);
            assert_eq!(r.uniform_float().to_bits(), want.to_bits());
        }
    }
}
