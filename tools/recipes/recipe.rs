// Rust recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt.
// Built with overflow checks on: a plain `*` or `+` that wraps panics, so the
// wrapping arithmetic the spec needs is written wrapping_mul / wrapping_add /
// rotate_left. `/` on unsigned integers truncates (= floor); Option models
// presence (prost maps proto3 `optional` and message fields to Option<T>).
// exp and log (spec/elementary.md) are fdlibm 5.3's algorithms written out
// from the spec's steps (rustc never fuses `a * b + c`); f64::exp and f64::ln
// are the platform's libm, never used.

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

struct Rng {
    s: [u64; 4],
}

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut state = seed;
        let mut s = [0u64; 4];
        for w in s.iter_mut() {
            state = state.wrapping_add(0x9e3779b97f4a7c15);
            *w = mix64(state);
        }
        Rng { s }
    }
    fn next(&mut self) -> u64 {
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
    fn uniform(&mut self, n: u64) -> u64 {
        if n == 1 {
            return 0;
        }
        let bits = 64 - (n - 1).leading_zeros();
        loop {
            let candidate = self.next() >> (64 - bits);
            if candidate < n {
                return candidate;
            }
        }
    }
}

fn ratio_budget(n: u64, ppm: i64) -> u64 {
    let r = ppm as f64 / 1000000.0;
    let t = 1.0 - r;
    let u = n as f64 * t;
    let f = u.floor();
    if f < 1.0 { 1 } else { f as u64 }
}

fn floor_of(budget: u32, permille: u32) -> u64 {
    let f = budget as u64 * permille as u64 / 1000; // u32 * u32 would overflow
    if f == 0 && permille > 0 { 1 } else { f }
}

fn effective_heads(field: Option<u32>) -> u32 {
    field.unwrap_or(1)
}

// spec/elementary.md#constants, from their bits.
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

/// spec/elementary.md#scaling: the bits of y plus j * 2^52, modulo 2^64.
fn add_to_exponent(y: f64, j: i32) -> f64 {
    f64::from_bits(y.to_bits().wrapping_add((j as i64 as u64) << 52))
}

/// spec/elementary.md#exp.
fn exp(x: f64) -> f64 {
    let negative = x.to_bits() >> 63 != 0;
    let h = (x.to_bits() >> 32) as u32 & 0x7fffffff; // of |x|
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
    // Step 2: reduction, x = k ln2 + r with r = hi - lo.
    let (k, hi, lo, r);
    if h > 0x3fd62e42 {
        if h < 0x3ff0a2b2 {
            (k, hi, lo) =
                if negative { (-1, x + LN2_HI, -LN2_LO) } else { (1, x - LN2_HI, LN2_LO) };
        } else {
            // `as i32` truncates toward zero (|x| < 746 here).
            k = (if negative { INV_LN2 * x - 0.5 } else { INV_LN2 * x + 0.5 }) as i32;
            let t = k as f64;
            hi = x - t * LN2_HI;
            lo = t * LN2_LO;
        }
        r = hi - lo;
    } else if h < 0x3e300000 {
        return 1.0 + x; // |x| < 2^-28
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
    // Step 4: scaling by 2^k; below 2^-1021 one rounding, by the multiplication.
    if k >= -1021 {
        add_to_exponent(y, k)
    } else {
        add_to_exponent(y, k + 1000) * TWOM1000
    }
}

/// The high word, signed: negative exactly when the sign bit is set.
fn high_word(x: f64) -> i32 {
    (x.to_bits() >> 32) as u32 as i32
}

/// spec/elementary.md#log.
fn log(mut x: f64) -> f64 {
    let mut h = high_word(x);
    let l = x.to_bits() as u32;
    let mut k: i32 = 0;
    // Step 1: zero, negatives, subnormals, then +inf and NaN.
    if h < 0x00100000 {
        if (h as u32 & 0x7fffffff) | l == 0 {
            return f64::NEG_INFINITY;
        }
        if h < 0 {
            return f64::NAN;
        }
        k = -54;
        x *= TWO54; // exact
        h = high_word(x);
    }
    if h >= 0x7ff00000 {
        return x + x;
    }
    // Step 2: reduction, x = 2^k (1 + f). h >= 0 here, so >> is a plain shift.
    k += (h >> 20) - 1023;
    let m = h & 0x000fffff;
    let i = (m + 0x95f64) & 0x100000;
    let high = (m | (i ^ 0x3ff00000)) as u32 as u64;
    x = f64::from_bits(high << 32 | (x.to_bits() & 0xffffffff));
    k += i >> 20;
    let f = x - 1.0;
    let dk = k as f64;
    // Step 3: near 1, |f| < 2^-20.
    if (2 + m) & 0x000fffff < 3 {
        if f == 0.0 {
            return if k == 0 { 0.0 } else { dk * LN2_HI + dk * LN2_LO };
        }
        let r = f * f * (0.5 - THIRD * f);
        return if k == 0 { f - r } else { dk * LN2_HI - ((r - dk * LN2_LO) - f) };
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
    if k == 0 { f - s * (f - r) } else { dk * LN2_HI - ((s * (f - r) - dk * LN2_LO) - f) }
}

/// (u >> 11) - 2^52, in [-2^52, 2^52): exact as a binary64.
fn centered(u: u64) -> f64 {
    ((u >> 11) as i64 - (1i64 << 52)) as f64
}

/// spec/elementary.md#spot-checks: name, function, input from one draw u.
type SpotFamily = (&'static str, fn(f64) -> f64, fn(u64) -> f64);

/// 2^e for a normal power of two, from its bits.
fn two_to(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

fn hex_list(xs: impl Iterator<Item = u64>) -> String {
    xs.map(|x| format!("{:#018x}", x)).collect::<Vec<_>>().join(" ")
}

fn main() {
    let mut state = 0u64;
    let sm = hex_list((0..3).map(|_| {
        state = state.wrapping_add(0x9e3779b97f4a7c15);
        mix64(state)
    }));
    println!("splitmix64 state=0: {}", sm);
    for seed in [0u64, 42, u64::MAX] {
        let mut rng = Rng::new(seed);
        println!("next seed={}: {}", seed, hex_list((0..5).map(|_| rng.next())));
    }
    let mut rng = Rng::new(42);
    let u: Vec<String> = (0..10).map(|_| rng.uniform(10).to_string()).collect();
    println!("uniform(10) seed=42: {}", u.join(" "));
    let mut rng = Rng::new(42);
    let u: Vec<String> = (0..5).map(|_| rng.uniform(1000).to_string()).collect();
    println!("uniform(1000) seed=42: {}", u.join(" "));
    let mut rng = Rng::new(7);
    println!(
        "uniform(2^63+1) seed=7: {}",
        hex_list((0..3).map(|_| rng.uniform((1u64 << 63) + 1)))
    );

    let parts: Vec<String> = (1u64..=3)
        .map(|h| format!("h={} {:#018x}", h, mix64(1 ^ 0x3c6ef372fe94f82b ^ h)))
        .collect();
    println!("trace head seeds seed=1: {}", parts.join("; "));

    let m: u64 = "18446744073709551615".parse().unwrap();
    println!("u64 parse 18446744073709551615: {} {:#018x}", m, m);
    println!("u64 2^64-1 > 2^63: {}", m > 1u64 << 63);
    println!("u64 (2^64-1) / 3: {} rem {}", m / 3, m % 3);
    println!("u64 (2^64-1) % 10: {}", m % 10);
    println!("u64 2^64-1 as binary64: {:.0}", m as f64);
    println!("u64 2^53+1 as binary64: {:.0}", ((1u64 << 53) + 1) as f64);

    let heads: [(u32, u32, u32); 4] = [(32, 8, 31), (6, 3, 5), (1024, 1, 1023), (1024, 1024, 1023)];
    let parts: Vec<String> = heads
        .iter()
        .map(|&(q, k, h)| format!("Hq={} Hkv={} h={} -> {}", q, k, h, h / (q / k)))
        .collect();
    println!("kv head h / (Hq / Hkv): {}", parts.join("; "));
    let floors: [(u32, u32); 6] =
        [(2, 200), (512, 200), (100, 290), (7, 0), (4294967295, 999), (4294967295, 1000)];
    let parts: Vec<String> = floors
        .iter()
        .map(|&(b, p)| format!("budget={} permille={} -> {}", b, p, floor_of(b, p)))
        .collect();
    println!("adakv floor: {}", parts.join("; "));
    let epochs: [(u32, u32); 3] = [(1300, 512), (2147483647, 2147483647), (511, 512)];
    let parts: Vec<String> =
        epochs.iter().map(|&(t, l)| format!("t={} L={} -> {}", t, l, t / l)).collect();
    println!("trace epoch t / epoch_length: {}", parts.join("; "));
    let parts: Vec<String> =
        [1u64, 4, 5, 9].iter().map(|&h| format!("h={} -> {}", h, (h - 1) % 3)).collect();
    println!("trace role (h - 1) mod 3: {}", parts.join("; "));
    let recents: [(u32, u32, u32); 3] = [(3, 0, 8), (1300, 4, 8), (5, 4, 8)];
    let parts: Vec<String> = recents
        .iter()
        .map(|&(t, s, r)| format!("t={} sinks={} R={} -> {}", t, s, r, s.max(t.saturating_sub(r))))
        .collect();
    println!(
        "trace recent start max(sinks, t - recent_length), t - recent_length stopping at 0: {}",
        parts.join("; ")
    );
    println!("snapkv (pool_kernel - 1) / 2: 5 -> {}; 65535 -> {}", (5u32 - 1) / 2, (65535u32 - 1) / 2);

    let ratios: [(u64, i64); 7] = [
        (20, 900000),
        (10, 800000),
        (90, 300000),
        (1000, 500000),
        (7, 999999),
        (4294967295, 1),
        (4294967295, 999999),
    ];
    for &(n, ppm) in ratios.iter() {
        let exact = (n * (1000000 - ppm as u64) / 1000000).max(1);
        println!("ratio budget n={} ppm={}: binary64 {} exact {}", n, ppm, ratio_budget(n, ppm), exact);
    }
    println!("kvpress int(100 * 0.29): {} exact {}", (100.0f64 * 0.29).trunc() as i64, 100 * 290 / 1000);
    println!(
        "presence query_heads: absent -> {}; present 0 -> {}; present 4 -> {}",
        effective_heads(None),
        effective_heads(Some(0)),
        effective_heads(Some(4))
    );
    // uint32 fields (prost: u32) hold every value up to 2^32 - 1.
    let admit: u32 = 4294967295;
    let half: u32 = 2147483648;
    println!("u32 field 4294967295: {}; 2^31 > 1 as u32: {}", admit, half > 1);
    // The sign bit: to_bits() or is_sign_negative(), never == or < (-0.0 == 0.0).
    let (positive_zero, negative_zero) = (0.0f64, -0.0f64);
    let weight = f32::from_bits(0x8000_0000); // a binary32 weight's bits
    println!(
        "sign bit: +0.0 -> {}; -0.0 -> {}; binary32 -0.0 -> {}; -0.0 == +0.0: {}",
        positive_zero.to_bits() >> 63,
        negative_zero.to_bits() >> 63,
        u32::from(weight.is_sign_negative()),
        negative_zero == positive_zero
    );

    // spec/elementary.md#golden-values: the inputs' bits; the results computed.
    let exp_inputs: [u64; 12] = [
        0x3ff0000000000000, 0xbff0000000000000, 0x3fe0000000000000, 0x3ddb7cdfd9d7bdbb,
        0x39b4484bfeebc2a0, 0x4024000000000000, 0xc034800000000000, 0x40862e3d70a3d70a,
        0x4086300000000000, 0xc086240000000000, 0xc087480000000000, 0xc087500000000000,
    ];
    let log_inputs: [u64; 10] = [
        0x4000000000000000, 0x4024000000000000, 0x3fe0000000000000, 0x3ff000001ad7f29b,
        0x3ff6666666666666, 0x3fe6666666666666, 0x0000000000000001, 0x7fefffffffffffff,
        0x0000000000000000, 0x7ff0000000000000,
    ];
    for b in exp_inputs {
        println!("exp {:#018x} -> {:#018x}", b, exp(f64::from_bits(b)).to_bits());
    }
    for b in log_inputs {
        println!("log {:#018x} -> {:#018x}", b, log(f64::from_bits(b)).to_bits());
    }
    // Spot checks: one generator across the families, in order.
    let families: [SpotFamily; 6] = [
        ("exp wide", exp, |u| centered(u) * two_to(-42)),
        ("exp near 0", exp, |u| centered(u) * two_to(-51)),
        ("exp tiny", exp, |u| centered(u) * two_to(-80)),
        ("log wide", log, |u| f64::from_bits(u % 0x7ff0000000000000)),
        ("log near 1", log, |u| 1.0 + centered(u) * two_to(-75)),
        ("log small", log, |u| (u >> 11) as f64 * two_to(-50)),
    ];
    let mut spot = Rng::new(2026);
    for (name, function, input) in families {
        let mut d: u64 = 0xcbf29ce484222325;
        for _ in 0..1000 {
            d = (d ^ function(input(spot.next())).to_bits()).wrapping_mul(0x100000001b3);
        }
        println!("spot {}: {:#018x}", name, d);
    }
}
