// Rust recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt.
// Built with overflow checks on: a plain `*` or `+` that wraps panics, so the
// wrapping arithmetic the spec needs is written wrapping_mul / wrapping_add /
// rotate_left. `/` on unsigned integers truncates (= floor); Option models
// presence (prost maps proto3 `optional` and message fields to Option<T>).

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
}
