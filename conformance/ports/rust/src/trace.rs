//! The trace generator and the canonical trace. Spec: spec/trace.md.
//!
//! Binary64 with `+ - * /` only, in the written order; the background jitter
//! in binary32 (never fused); each weight rounded to binary32 at the end.

use std::collections::HashMap;

use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::pb::kvspec::v1::TraceConfig;
use crate::rng::{mix64, Rng};

/// 2^-53.
const TWO_M53: f64 = 1.0 / 9007199254740992.0;

/// A trace configuration with every default applied
/// (spec/trace.md#parameters).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceParams {
    pub seed: u64,
    pub steps: u32,
    pub sinks: u32,
    pub sink_mass: f64,
    pub recent_length: u32,
    pub recent_mass: f64,
    pub recent_decay: f64,
    pub heavy_count: u32,
    pub heavy_mass: f64,
    pub epoch_length: u32,
    pub background_mass: f64,
    pub noise: f64,
}

/// A trace parameter out of its range: `range trace.<name>`
/// (spec/harness.md#subjects).
fn invalid(name: &str, msg: String) -> Refusal {
    Refusal::new(Category::InvalidTrace, Subject::new(Check::Range, &[&format!("trace.{name}")]), format!("trace: {msg}"))
}

fn int_in(name: &str, v: u32, lo: u32, hi: u32) -> Result<u32> {
    if v < lo || v > hi {
        return Err(invalid(name, format!("{name} must be in [{lo}, {hi}], got {v}")));
    }
    Ok(v)
}

fn mass(name: &str, v: f64) -> Result<f64> {
    // A share of a row, in [+0.0, 1] (spec/trace.md#parameters): -0.0 is
    // refused like any negative value, its sign bit being set.
    if !(v >= 0.0 && v <= 1.0 && !v.is_sign_negative()) {
        return Err(invalid(name, format!("{name} must be in [+0.0, 1], got {v}")));
    }
    Ok(v)
}

impl TraceParams {
    /// The canonical trace of `steps` steps.
    pub fn canonical(steps: u32) -> Self {
        TraceParams {
            seed: 1,
            steps,
            sinks: 4,
            sink_mass: 0.5,
            recent_length: 8,
            recent_mass: 0.125,
            recent_decay: 0.5,
            heavy_count: 16,
            heavy_mass: 0.25,
            epoch_length: 512,
            background_mass: 0.125,
            noise: 0.3,
        }
    }

    /// Apply defaults and check ranges, in table order; `INVALID_TRACE`.
    pub fn from_config(c: &TraceConfig) -> Result<Self> {
        const TWO31: u32 = 1 << 31;
        let d = TraceParams::canonical(0);
        let steps = match c.steps {
            None => return Err(invalid("steps", "steps is required".into())),
            Some(s) => int_in("steps", s, 1, TWO31)?,
        };
        let sinks = int_in("sinks", c.sinks.unwrap_or(d.sinks), 0, TWO31)?;
        let sink_mass = mass("sink_mass", c.sink_mass.unwrap_or(d.sink_mass))?;
        let recent_length = int_in("recent_length", c.recent_length.unwrap_or(d.recent_length), 0, 65536)?;
        let recent_mass = mass("recent_mass", c.recent_mass.unwrap_or(d.recent_mass))?;
        let recent_decay = c.recent_decay.unwrap_or(d.recent_decay);
        if !(recent_decay > 0.0 && recent_decay <= 1.0) {
            return Err(invalid("recent_decay", format!("recent_decay must be in (0, 1], got {recent_decay}")));
        }
        let heavy_count = int_in("heavy_count", c.heavy_count.unwrap_or(d.heavy_count), 0, 65536)?;
        let heavy_mass = mass("heavy_mass", c.heavy_mass.unwrap_or(d.heavy_mass))?;
        let epoch_length = int_in("epoch_length", c.epoch_length.unwrap_or(d.epoch_length), 1, TWO31)?;
        let background_mass = c.background_mass.unwrap_or(d.background_mass);
        if !(background_mass > 0.0 && background_mass <= 1.0) {
            return Err(invalid("background_mass", format!("background_mass must be in (0, 1], got {background_mass}")));
        }
        let noise = c.noise.unwrap_or(d.noise);
        if !((0.0..=1.0).contains(&noise) && !noise.is_sign_negative()) {
            return Err(invalid("noise", format!("noise must be in [0, 1], got {noise}")));
        }
        Ok(TraceParams {
            seed: c.seed.unwrap_or(d.seed),
            steps,
            sinks,
            sink_mass,
            recent_length,
            recent_mass,
            recent_decay,
            heavy_count,
            heavy_mass,
            epoch_length,
            background_mass,
            noise,
        })
    }
}

/// The salt of a head's seed: `seed_h = mix64(seed ^ HEAD_SALT ^ h)`
/// (spec/trace.md#several-heads).
pub const HEAD_SALT: u64 = 0x3c6ef372fe94f82b;

/// What head `h >= 1` of a multi-head trace does: role `(h - 1) mod 3`
/// multiplies one mass by 4 (spec/trace.md#several-heads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadRole {
    /// Role 0 (heads 1, 4, 7, ...): `sink_mass` times 4.
    Sinks,
    /// Role 1 (heads 2, 5, 8, ...): `recent_mass` times 4.
    Recent,
    /// Role 2 (heads 3, 6, 9, ...): `heavy_mass` times 4.
    Heavy,
}

impl HeadRole {
    /// The role of query head `h`; `None` for head 0, which is the trace
    /// itself.
    pub fn of(h: u32) -> Option<HeadRole> {
        match h {
            0 => None,
            _ => Some(match (h - 1) % 3 {
                0 => HeadRole::Sinks,
                1 => HeadRole::Recent,
                _ => HeadRole::Heavy,
            }),
        }
    }
}

impl TraceParams {
    /// The configuration of query head `h` of a multi-head trace
    /// (spec/trace.md#several-heads): head 0 is `self` unchanged; head
    /// `h >= 1` has `seed_h = mix64(seed ^ HEAD_SALT ^ h)` and its role's
    /// mass multiplied by 4 (exact in binary64), every other parameter the
    /// trace's. Not validated: the bounds of spec/trace.md#parameters apply
    /// to the configuration as given (`self`, already checked), and a
    /// multiplied mass may exceed 1.
    pub fn for_head(&self, h: u32) -> TraceParams {
        let mut p = self.clone();
        if let Some(role) = HeadRole::of(h) {
            p.seed = mix64(self.seed ^ HEAD_SALT ^ h as u64);
            match role {
                HeadRole::Sinks => p.sink_mass = 4.0 * self.sink_mass,
                HeadRole::Recent => p.recent_mass = 4.0 * self.recent_mass,
                HeadRole::Heavy => p.heavy_mass = 4.0 * self.heavy_mass,
            }
        }
        p
    }
}

/// `unit(x) = (x >> 11) * 2^-53` (spec/trace.md#hashes).
#[inline]
pub fn unit(x: u64) -> f64 {
    ((x >> 11) as f64) * TWO_M53
}

/// `salience(p)`, in (0, 1] (spec/trace.md#hashes).
#[inline]
pub fn salience(seed: u64, p: u64) -> f64 {
    let h = mix64(seed.wrapping_add(0x9e3779b97f4a7c15u64.wrapping_mul(p.wrapping_mul(2).wrapping_add(1))));
    (((h >> 11) + 1) as f64) * TWO_M53
}

/// `jitter(t, p)`, in [0, 1) (spec/trace.md#hashes).
#[inline]
pub fn jitter(seed: u64, t: u64, p: u64) -> f64 {
    unit(mix64(mix64(seed ^ 0x6a09e667f3bcc909 ^ t).wrapping_add(p)))
}

/// Streaming generator: `begin_step(t)` for t = 0, 1, ... in order, then
/// `weight(p)` for any `p < t` (spec/trace.md#streaming).
pub struct TraceGenerator {
    p: TraceParams,
    t: u64,
    /// `Z_t`, summed from position 0 up, and how many positions it covers.
    z: f64,
    z_upto: u64,
    /// The current epoch and its heavy hitters with multiplicities.
    epoch: Option<u64>,
    heavy: HashMap<u64, u32>,
    heavy_present: bool,
    /// Recent part: first recent position, `d^k` for k = 0..c, and the norm.
    recent_lo: u64,
    powers: Vec<f64>,
    norm: f64,
    sink_count: u64,
    m_t: f64,
    noise32: f32,
}

impl TraceGenerator {
    pub fn new(p: TraceParams) -> Self {
        let noise32 = p.noise as f32;
        TraceGenerator {
            p,
            t: 0,
            z: 0.0,
            z_upto: 0,
            epoch: None,
            heavy: HashMap::new(),
            heavy_present: false,
            recent_lo: 0,
            powers: Vec::new(),
            norm: 0.0,
            sink_count: 0,
            m_t: 0.0,
            noise32,
        }
    }

    pub fn params(&self) -> &TraceParams {
        &self.p
    }

    /// Prepare step `t`'s parts. Steps must be visited in increasing order.
    pub fn begin_step(&mut self, t: u64) {
        assert!(t >= self.z_upto, "trace steps go forward");
        self.t = t;
        let p = &self.p;
        let sinks = p.sinks as u64;
        // Sinks.
        self.sink_count = sinks.min(t);
        // Recent.
        self.recent_lo = sinks.max(t.saturating_sub(p.recent_length as u64));
        let c = t.saturating_sub(self.recent_lo) as usize;
        if c != self.powers.len() {
            self.powers.clear();
            let mut d = 1.0f64;
            let mut norm = 0.0f64;
            for k in 0..c {
                if k > 0 {
                    d *= p.recent_decay;
                }
                self.powers.push(d);
                norm += d;
            }
            self.norm = norm;
        }
        // Heavy hitters.
        let e = t / p.epoch_length as u64;
        if self.epoch != Some(e) {
            self.epoch = Some(e);
            self.heavy.clear();
            let start = e * p.epoch_length as u64;
            self.heavy_present = start > sinks && p.heavy_count > 0;
            if self.heavy_present {
                let n = start - sinks;
                let mut rng = Rng::new(mix64(p.seed ^ 0xbb67ae8584caa73b ^ e));
                for _ in 0..p.heavy_count {
                    *self.heavy.entry(sinks + rng.uniform(n)).or_insert(0) += 1;
                }
            }
        }
        // Background: Z_t from position 0 up.
        while self.z_upto < t {
            self.z += salience(p.seed, self.z_upto);
            self.z_upto += 1;
        }
        // M_t: present parts' masses, in order sink, recent, heavy, background.
        let mut m = 0.0f64;
        if self.sink_count > 0 {
            m += p.sink_mass;
        }
        if c > 0 {
            m += p.recent_mass;
        }
        if self.heavy_present {
            m += p.heavy_mass;
        }
        if t > 0 {
            m += p.background_mass;
        }
        self.m_t = m;
    }

    /// `weight(t, p)` for the current step `t` and a position `p < t`.
    pub fn weight(&self, pos: u64) -> f32 {
        debug_assert!(pos < self.t);
        let p = &self.p;
        let t = self.t;
        let mut c = 0.0f64;
        if pos < self.sink_count {
            c += p.sink_mass / self.sink_count as f64;
        }
        if pos >= self.recent_lo && !self.powers.is_empty() {
            let k = (t - 1 - pos) as usize;
            c += (p.recent_mass * self.powers[k]) / self.norm;
        }
        if self.heavy_present {
            if let Some(&m) = self.heavy.get(&pos) {
                c += (p.heavy_mass / p.heavy_count as f64) * m as f64;
            }
        }
        // Background (present, since pos < t implies t > 0).
        let share = ((p.background_mass * salience(p.seed, pos)) / self.z) as f32;
        let jit = (2.0 * jitter(p.seed, t, pos) - 1.0) as f32;
        let factor = 1.0f32 + std::hint::black_box(self.noise32 * jit);
        let noisy = share * factor;
        c += noisy as f64;
        (c / self.m_t) as f32
    }

    /// The full-cache row of step `t` (call after `begin_step(t)`).
    pub fn row(&self) -> Vec<f32> {
        (0..self.t).map(|p| self.weight(p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_valid_and_sum_to_about_one() {
        let mut g = TraceGenerator::new(TraceParams::canonical(1100));
        for t in 0..1100u64 {
            g.begin_step(t);
            let row = g.row();
            assert_eq!(row.len() as u64, t);
            assert!(row.iter().all(|&w| w.is_finite() && !w.is_sign_negative()));
            if t > 0 {
                let s: f64 = row.iter().map(|&w| w as f64).sum();
                assert!((s - 1.0).abs() < 0.05, "step {t}: {s}");
            }
        }
    }

    #[test]
    fn zero_noise_rows_sum_to_one() {
        let mut p = TraceParams::canonical(64);
        p.noise = 0.0;
        let mut g = TraceGenerator::new(p);
        g.begin_step(63);
        let s: f64 = g.row().iter().map(|&w| w as f64).sum();
        assert!((s - 1.0).abs() < 1e-5);
    }

    #[test]
    fn heavy_hitters_are_stationary_within_an_epoch() {
        let mut p = TraceParams::canonical(40);
        p.epoch_length = 16;
        p.noise = 0.0;
        let mut g = TraceGenerator::new(p);
        g.begin_step(16);
        let hh: Vec<u64> = {
            let mut v: Vec<u64> = g.heavy.keys().copied().collect();
            v.sort();
            v
        };
        assert!(!hh.is_empty() && hh.iter().all(|&h| (4..16).contains(&h)));
        g.begin_step(31);
        let mut v: Vec<u64> = g.heavy.keys().copied().collect();
        v.sort();
        assert_eq!(v, hh);
    }

    /// Seeds computed by hand from spec/trace.md#several-heads:
    /// `mix64(1 ^ 0x3c6ef372fe94f82b ^ h)` (mix64 written out
    /// independently from spec/trace.md#hashes).
    const SEED_1: [u64; 5] = [1, 0xbeeb8da1658eec67, 0xba56949915dcf9e9, 0xe99ff867dbf682c9, 0xe474c66a4b98b030];

    #[test]
    fn head_roles() {
        use HeadRole::*;
        let roles: Vec<Option<HeadRole>> = (0..8).map(HeadRole::of).collect();
        assert_eq!(roles, vec![None, Some(Sinks), Some(Recent), Some(Heavy), Some(Sinks), Some(Recent), Some(Heavy), Some(Sinks)]);
        assert_eq!(HeadRole::of(1023), Some(Heavy)); // (1023 - 1) mod 3 = 2
    }

    #[test]
    fn head_configurations_0_to_4() {
        let base = TraceParams::canonical(768);
        // Head 0 is the trace itself.
        assert_eq!(base.for_head(0), base);
        let with = |seed, sink_mass, recent_mass, heavy_mass| TraceParams {
            seed,
            sink_mass,
            recent_mass,
            heavy_mass,
            ..TraceParams::canonical(768)
        };
        // Head 1, role 0: sinks times 4. Head 2, role 1: recent. Head 3,
        // role 2: heavy. Head 4, role 0 again.
        assert_eq!(base.for_head(1), with(SEED_1[1], 2.0, 0.125, 0.25));
        assert_eq!(base.for_head(2), with(SEED_1[2], 0.5, 0.5, 0.25));
        assert_eq!(base.for_head(3), with(SEED_1[3], 0.5, 0.125, 1.0));
        assert_eq!(base.for_head(4), with(SEED_1[4], 2.0, 0.125, 0.25));
        // Another seed and other masses: seed 42, head 7 (role 0) and
        // head 5 (role 1); mix64(42 ^ 0x3c6ef372fe94f82b ^ 7) and ^ 5.
        let mut b = TraceParams::canonical(10);
        b.seed = 42;
        b.sink_mass = 0.75;
        b.recent_mass = 1.0;
        b.heavy_mass = 0.0;
        let h7 = b.for_head(7);
        assert_eq!((h7.seed, h7.sink_mass, h7.recent_mass, h7.heavy_mass), (0x1cb420958e16fc77, 3.0, 1.0, 0.0));
        let h5 = b.for_head(5);
        assert_eq!((h5.seed, h5.sink_mass, h5.recent_mass, h5.heavy_mass), (0x037bcbfe5d778899, 0.75, 4.0, 0.0));
        let h6 = b.for_head(6);
        assert_eq!(h6.heavy_mass.to_bits(), 0.0f64.to_bits()); // 4 * +0.0 = +0.0
        // Every other parameter is the trace's.
        for h in 0..8 {
            let q = b.for_head(h);
            assert_eq!(
                (q.steps, q.sinks, q.recent_length, q.recent_decay, q.heavy_count, q.epoch_length, q.background_mass, q.noise),
                (b.steps, b.sinks, b.recent_length, b.recent_decay, b.heavy_count, b.epoch_length, b.background_mass, b.noise),
                "head {h}"
            );
        }
    }

    #[test]
    fn a_role_head_row_from_the_formulas() {
        // Head 2 (role 1, recent_mass 0.125 * 4 = 0.5) of a trace with no
        // sinks, recent_length 2, no heavy hitters and no noise, at step 3:
        // recent positions 1, 2 (norm 1 + 0.5 = 1.5): position 2 gets
        // 0.5 * 1 / 1.5, position 1 gets 0.5 * 0.5 / 1.5; M_3 = 0.5 + 0.125;
        // the background uses head 2's own salience (seed SEED_1[2]).
        let mut base = TraceParams::canonical(4);
        base.sinks = 0;
        base.recent_length = 2;
        base.heavy_count = 0;
        base.noise = 0.0;
        let mut g = TraceGenerator::new(base.for_head(2));
        for t in 0..=3 {
            g.begin_step(t);
        }
        let sal = |p| salience(SEED_1[2], p);
        let z = sal(0) + sal(1) + sal(2);
        let bg = |p| (((0.125 * sal(p)) / z) as f32) as f64;
        let m = 0.5 + 0.125;
        let want = [
            ((0.0 + bg(0)) / m) as f32,
            ((0.0 + (0.5 * 0.5) / 1.5 + bg(1)) / m) as f32,
            ((0.0 + (0.5 * 1.0) / 1.5 + bg(2)) / m) as f32,
        ];
        let got = g.row();
        assert_eq!(got.iter().map(|w| w.to_bits()).collect::<Vec<_>>(), want.iter().map(|w| w.to_bits()).collect::<Vec<_>>());
        // Head 0's background is the trace seed's: a different row.
        let mut g0 = TraceGenerator::new(base.for_head(0));
        for t in 0..=3 {
            g0.begin_step(t);
        }
        assert_ne!(g0.row()[0].to_bits(), got[0].to_bits());
    }

    #[test]
    fn role_shares_of_the_canonical_masses() {
        // spec/trace.md#several-heads: once every part is present (step 600,
        // epoch 1), a part's share is its mass over M_t: head 0 puts 0.5 on
        // the sinks, 0.125 on the recent positions and 0.25 on the heavy
        // hitters; role 0 puts 2 / 2.5 on the sinks, role 1 0.5 / 1.375 on
        // the recent positions, role 2 1 / 1.75 on the heavy hitters. The
        // background adds a little to each (without noise, exactly its
        // share of 0.125 / M_t spread over 600 positions).
        let mut base = TraceParams::canonical(601);
        base.noise = 0.0;
        let shares = |h: u32| {
            let mut g = TraceGenerator::new(base.for_head(h));
            for t in 0..=600 {
                g.begin_step(t);
            }
            let row = g.row();
            let sum = |ps: &mut dyn Iterator<Item = u64>| ps.map(|p| row[p as usize] as f64).sum::<f64>();
            let heavy: Vec<u64> = g.heavy.keys().copied().collect();
            assert!(heavy.iter().all(|&p| (4..512).contains(&p)), "head {h}: {heavy:?}");
            (sum(&mut (0..4u64)), sum(&mut (592..600u64)), sum(&mut heavy.clone().into_iter()), heavy)
        };
        let near = |got: f64, want: f64| got >= want - 1e-6 && got <= want + 0.01;
        let (s0, r0, h0, hh0) = shares(0);
        assert!(near(s0, 0.5) && near(r0, 0.125) && near(h0, 0.25), "{s0} {r0} {h0}");
        let (s1, _, _, hh1) = shares(1);
        assert!(near(s1, 2.0 / 2.5), "{s1}");
        let (_, r2, _, _) = shares(2);
        assert!(near(r2, 0.5 / 1.375), "{r2}");
        let (_, _, h3, _) = shares(3);
        assert!(near(h3, 1.0 / 1.75), "{h3}");
        // Each head draws its own heavy hitters.
        let sorted = |mut v: Vec<u64>| {
            v.sort();
            v
        };
        assert_ne!(sorted(hh0), sorted(hh1));
    }

    #[test]
    fn refusals() {
        let ok = TraceConfig { steps: Some(10), ..Default::default() };
        assert_eq!(TraceParams::from_config(&ok).unwrap(), TraceParams::canonical(10));
        let bad = [
            TraceConfig { ..Default::default() },
            TraceConfig { steps: Some(0), ..Default::default() },
            TraceConfig { steps: Some(10), background_mass: Some(0.0), ..Default::default() },
            TraceConfig { steps: Some(10), recent_decay: Some(0.0), ..Default::default() },
            TraceConfig { steps: Some(10), noise: Some(1.5), ..Default::default() },
            TraceConfig { steps: Some(10), sink_mass: Some(f64::NAN), ..Default::default() },
            TraceConfig { steps: Some(10), epoch_length: Some(0), ..Default::default() },
            TraceConfig { steps: Some(10), heavy_count: Some(65537), ..Default::default() },
            TraceConfig { steps: Some(10), sink_mass: Some(-0.0), ..Default::default() },
            TraceConfig { steps: Some(10), noise: Some(-0.0), ..Default::default() },
        ];
        for c in bad {
            assert_eq!(TraceParams::from_config(&c).unwrap_err().category, Category::InvalidTrace, "{c:?}");
        }
    }
}
