//! exp and log as spec/elementary.md writes them (fdlibm 5.3's algorithms),
//! and the reductions over vectors of spec/elementary.md#reductions-over-vectors.
//!
//! `f64::exp` and `f64::ln` call the platform's libm, whose last bit is not
//! pinned; these use only binary64 `+ - * /` (rustc never fuses) and exact
//! moves of the 64 bits.

// spec/elementary.md#constants
const LN2_HI: f64 = f64::from_bits(0x3fe62e42fee00000);
const LN2_LO: f64 = f64::from_bits(0x3dea39ef35793c76);
const INV_LN2: f64 = f64::from_bits(0x3ff71547652b82fe);
const O_THRESHOLD: f64 = f64::from_bits(0x40862e42fefa39ef);
const U_THRESHOLD: f64 = f64::from_bits(0xc0874910d52d3051);
const P1: f64 = f64::from_bits(0x3fc555555555553e);
const P2: f64 = f64::from_bits(0xbf66c16c16bebd93);
const P3: f64 = f64::from_bits(0x3f11566aaf25de2c);
const P4: f64 = f64::from_bits(0xbebbbd41c5d26bf1);
const P5: f64 = f64::from_bits(0x3e66376972bea4d0);
const LG1: f64 = f64::from_bits(0x3fe5555555555593);
const LG2: f64 = f64::from_bits(0x3fd999999997fa04);
const LG3: f64 = f64::from_bits(0x3fd2492494229359);
const LG4: f64 = f64::from_bits(0x3fcc71c51d8e78af);
const LG5: f64 = f64::from_bits(0x3fc7466496cb03de);
const LG6: f64 = f64::from_bits(0x3fc39a09d078c69f);
const LG7: f64 = f64::from_bits(0x3fc2f112df3e5244);
const THIRD: f64 = f64::from_bits(0x3fd5555555555555);
const TWO54: f64 = f64::from_bits(0x4350000000000000);
const TWOM1000: f64 = f64::from_bits(0x0170000000000000);

/// spec/elementary.md#scaling: the bits of `y` plus `j * 2^52`.
fn add_to_exponent(y: f64, j: i32) -> f64 {
    f64::from_bits(y.to_bits().wrapping_add((j as i64 as u64) << 52))
}

/// spec/elementary.md#exp.
pub fn exp(x: f64) -> f64 {
    let b = x.to_bits();
    let negative = b >> 63 == 1;
    let h = ((b >> 32) as u32) & 0x7fff_ffff;
    // Step 1: special values.
    if x.is_nan() {
        return x;
    }
    if x.is_infinite() {
        return if negative { 0.0 } else { x };
    }
    if x > O_THRESHOLD {
        return f64::INFINITY;
    }
    if x < U_THRESHOLD {
        return 0.0;
    }
    // Step 2: reduction.
    let (k, hi, lo, r);
    if h > 0x3fd6_2e42 {
        if h < 0x3ff0_a2b2 {
            if negative {
                (k, hi, lo) = (-1, x + LN2_HI, -LN2_LO);
            } else {
                (k, hi, lo) = (1, x - LN2_HI, LN2_LO);
            }
        } else {
            // `as` truncates toward zero; |x| <= 745.14 here.
            k = (INV_LN2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = k as f64;
            hi = x - t * LN2_HI;
            lo = t * LN2_LO;
        }
        r = hi - lo;
    } else if h < 0x3e30_0000 {
        return 1.0 + x;
    } else {
        (k, hi, lo, r) = (0, 0.0, 0.0, x);
    }
    // Step 3: approximation.
    let t = r * r;
    let c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if k == 0 {
        return 1.0 - ((r * c) / (c - 2.0) - r);
    }
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    // Step 4: scaling.
    if k >= -1021 {
        add_to_exponent(y, k)
    } else {
        add_to_exponent(y, k + 1000) * TWOM1000
    }
}

/// spec/elementary.md#log.
pub fn log(x: f64) -> f64 {
    let mut x = x;
    let mut b = x.to_bits();
    let mut h = (b >> 32) as u32 as i32;
    let low = b as u32;
    let mut k: i32 = 0;
    // Step 1: special values and subnormals.
    if h < 0x0010_0000 {
        if ((h as u32 & 0x7fff_ffff) | low) == 0 {
            return f64::NEG_INFINITY;
        }
        if h < 0 {
            return f64::NAN;
        }
        k = -54;
        x *= TWO54;
        b = x.to_bits();
        h = (b >> 32) as u32 as i32;
    }
    if h >= 0x7ff0_0000 {
        return x + x;
    }
    // Step 2: reduction.
    k += (h >> 20) - 1023;
    let m = h & 0x000f_ffff;
    let i = (m + 0x95f64) & 0x10_0000;
    let x = f64::from_bits((((m | (i ^ 0x3ff0_0000)) as u32 as u64) << 32) | (b & 0xffff_ffff));
    k += i >> 20;
    let f = x - 1.0;
    let dk = k as f64;
    // Step 3: near 1.
    if (2 + m) & 0x000f_ffff < 3 {
        if f == 0.0 {
            return if k == 0 { 0.0 } else { dk * LN2_HI + dk * LN2_LO };
        }
        let r = f * f * (0.5 - THIRD * f);
        if k == 0 {
            return f - r;
        }
        return dk * LN2_HI - ((r - dk * LN2_LO) - f);
    }
    // Step 4: approximation.
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    if (0x6147a..=0x6b851).contains(&m) {
        let hfsq = 0.5 * f * f;
        if k == 0 {
            return f - (hfsq - s * (hfsq + r));
        }
        return dk * LN2_HI - ((hfsq - (s * (hfsq + r) + dk * LN2_LO)) - f);
    }
    if k == 0 {
        return f - s * (f - r);
    }
    dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f)
}

/// spec/elementary.md#reductions-over-vectors: index 0 first, each product
/// rounded before it is added.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "dot: lengths differ");
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

pub fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

pub fn mean(a: &[f64]) -> f64 {
    let mut s = 0.0;
    for &x in a {
        s += x;
    }
    s / a.len() as f64
}

/// Requires `a.len() > correction`.
pub fn variance(a: &[f64], correction: usize) -> f64 {
    assert!(a.len() > correction, "variance: length must exceed the correction");
    let mu = mean(a);
    let mut s = 0.0;
    for &x in a {
        let d = x - mu;
        s += d * d;
    }
    s / (a.len() - correction) as f64
}

/// `std(a, c)` of spec/elementary.md#reductions-over-vectors:
/// `sqrt(variance(a, c))`, IEEE 754's correctly rounded `sqrt`. Requires
/// `a.len() > correction`.
pub fn std(a: &[f64], correction: usize) -> f64 {
    variance(a, correction).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    // spec/elementary.md#golden-values: (is exp, bits of x, bits of result).
    const GOLDEN: [(bool, u64, u64); 22] = [
        (true, 0x3ff0000000000000, 0x4005bf0a8b14576a),
        (true, 0xbff0000000000000, 0x3fd78b56362cef38),
        (true, 0x3fe0000000000000, 0x3ffa61298e1e069c),
        (true, 0x3ddb7cdfd9d7bdbb, 0x3ff000000006df38),
        (true, 0x39b4484bfeebc2a0, 0x3ff0000000000000),
        (true, 0x4024000000000000, 0x40d5829dcf950560),
        (true, 0xc034800000000000, 0x3e157a3afeed00ab),
        (true, 0x40862e3d70a3d70a, 0x7fefe9ce5c4c52b4),
        (true, 0x4086300000000000, 0x7ff0000000000000),
        (true, 0xc086240000000000, 0x000e6cf6d08897ac),
        (true, 0xc087480000000000, 0x0000000000000001),
        (true, 0xc087500000000000, 0x0000000000000000),
        (false, 0x4000000000000000, 0x3fe62e42fefa39ef),
        (false, 0x4024000000000000, 0x40026bb1bbb55516),
        (false, 0x3fe0000000000000, 0xbfe62e42fefa39ef),
        (false, 0x3ff000001ad7f29b, 0x3e7ad7f2847b6492),
        (false, 0x3ff6666666666666, 0x3fd588c2d913348e),
        (false, 0x3fe6666666666666, 0xbfd6d3c324e13f50),
        (false, 0x0000000000000001, 0xc0874385446d71c3),
        (false, 0x7fefffffffffffff, 0x40862e42fefa39ef),
        (false, 0x0000000000000000, 0xfff0000000000000),
        (false, 0x7ff0000000000000, 0x7ff0000000000000),
    ];

    #[test]
    fn golden_table() {
        for (is_exp, x, want) in GOLDEN {
            let x = f64::from_bits(x);
            let got = if is_exp { exp(x) } else { log(x) };
            assert_eq!(got.to_bits(), want, "{}({x:e})", if is_exp { "exp" } else { "log" });
        }
    }

    #[test]
    fn special_values() {
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(f64::NEG_INFINITY).to_bits(), 0);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(log(-0.0), f64::NEG_INFINITY);
        assert!(log(-1.0).is_nan());
        assert!(log(f64::NAN).is_nan());
    }

    // spec/elementary.md#spot-checks
    #[test]
    fn spot_check_digests() {
        fn pow2(e: i64) -> f64 {
            f64::from_bits(((e + 1023) as u64) << 52)
        }
        fn centred(u: u64) -> f64 {
            ((u >> 11) as i64 - (1i64 << 52)) as f64
        }
        // (name, is exp, input from u, digest)
        type Family = (&'static str, bool, fn(u64) -> f64, u64);
        let families: [Family; 6] = [
            ("exp wide", true, |u| centred(u) * pow2(-42), 0x0a32ea2e7f43012c),
            ("exp near 0", true, |u| centred(u) * pow2(-51), 0xd2bd2cb5aa0abfad),
            ("exp tiny", true, |u| centred(u) * pow2(-80), 0xb58076fce64cb01b),
            ("log wide", false, |u| f64::from_bits(u % 0x7ff0000000000000), 0x11f7a20bef104ba3),
            ("log near 1", false, |u| 1.0 + centred(u) * pow2(-75), 0x49df08a6e71eb149),
            ("log small", false, |u| (u >> 11) as f64 * pow2(-50), 0x0ac327932ad8629a),
        ];
        let mut rng = Rng::new(2026);
        for (name, is_exp, input, want) in families {
            let mut d: u64 = 0xcbf29ce484222325;
            for _ in 0..1000 {
                let x = input(rng.next_u64());
                let y = if is_exp { exp(x) } else { log(x) };
                d = (d ^ y.to_bits()).wrapping_mul(0x100000001b3);
            }
            assert_eq!(d, want, "{name}");
        }
    }

    #[test]
    fn reductions() {
        // Hand-worked: 1*4 + 2*5 + 3*6 = 32; the mean of 1, 2, 3, 4 is 2.5,
        // its squared deviations sum to 5, so the unbiased variance is 5/3.
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
        assert_eq!(norm(&[3.0, 4.0]), 5.0);
        assert_eq!(mean(&[1.0, 2.0, 3.0, 4.0]), 2.5);
        assert_eq!(variance(&[1.0, 2.0, 3.0, 4.0], 1), 5.0 / 3.0);
        assert_eq!(variance(&[1.0, 2.0, 3.0, 4.0], 0), 1.25);
        // std (spec 0.18.0): the square root of the variance; lagkv's
        // spread of (0, 1) is sqrt(1/2), of a constant vector +0.0.
        assert_eq!(std(&[1.0, 2.0, 3.0, 4.0], 1), (5.0f64 / 3.0).sqrt());
        assert_eq!(std(&[0.0, 1.0], 1), 0.5f64.sqrt());
        assert_eq!(std(&[0.5, 0.5], 1).to_bits(), 0);
        // Index order matters: 1e16 + 1 - 1e16 is 0 left to right.
        assert_eq!(dot(&[1e16, 1.0, -1e16], &[1.0, 1.0, 1.0]), 0.0);
    }
}
