//! PyramidKV (spec 0.19.0, feature `pyramid`, spec/policies/pyramidkv.md):
//! per-layer budgets at a prefill step, a mode of `snapkv`. `pyramid` 1
//! (kvpress's `PyramidKVPress`) or 2 (KVCache-Factory's
//! `PyramidKVCluster`) replaces a prefill step's budget by the layer's,
//! from `layer`, `layers` and `pyramid_beta`; the window, scores, pooling,
//! heads and ties stay `snapkv`'s. The parameters, their four rules, and
//! the two formulas: kvpress's in binary64 rounded half to even,
//! KVCache-Factory's in integers with floor division. The card's worked
//! examples by hand here; through whole scenarios in `pyramid_tests.rs`.

use super::ParamSpec;
use crate::error::{Category, Check, Refusal, Result, Subject};

/// `pyramid`: 0 off, 1 kvpress's formula, 2 KVCache-Factory's.
pub(crate) const PYRAMID: ParamSpec = ParamSpec { name: "pyramid", default: 0, min: 0, max: 2 };
/// `pyramid_beta`: the pyramid's steepness.
pub(crate) const PYRAMID_BETA: ParamSpec = ParamSpec { name: "pyramid_beta", default: 20, min: 1, max: 1 << 20 };
/// `layer`: this run's layer, 0 the first.
pub(crate) const LAYER: ParamSpec = ParamSpec { name: "layer", default: 0, min: 0, max: 65535 };
/// `layers`: the model's layer count.
pub(crate) const LAYERS: ParamSpec = ParamSpec { name: "layers", default: 1, min: 1, max: 65536 };
/// The four, in `snapkv`'s table order: after `window_budget`, before
/// `slack` and `interval` (spec/policies/snapkv.md#parameters).
pub(crate) const PYRAMID_PARAMS: [ParamSpec; 4] = [PYRAMID, PYRAMID_BETA, LAYER, LAYERS];

/// `pyramid` (spec/policies/pyramidkv.md#parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 0: a prefill step's budget is spec/prefill.md#when-a-policy-evicts's.
    Off,
    /// 1: kvpress's formula, from `ratio_ppm`.
    Kvpress,
    /// 2: KVCache-Factory's formula, from `budget`.
    Factory,
}

/// `pyramid`, `pyramid_beta`, `layer` and `layers`, range-checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PyramidOptions {
    pub mode: Mode,
    pub beta: u32,
    pub layer: u32,
    pub layers: u32,
}

impl PyramidOptions {
    /// From the range-checked values of the four, in table order.
    pub(crate) fn from_params(v: &[i64]) -> Self {
        let mode = match v[0] {
            1 => Mode::Kvpress,
            2 => Mode::Factory,
            _ => Mode::Off,
        };
        PyramidOptions { mode, beta: v[1] as u32, layer: v[2] as u32, layers: v[3] as u32 }
    }

    /// The card's rules, in order, after `snapkv`'s others (its own and
    /// spec/prefill.md's) and before the triggers' and blocks'
    /// (`INVALID_PARAMETER`, spec/harness.md#refusals):
    /// 1. `layer < layers`, whatever `pyramid` is: `rule layer layers`;
    /// 2. `pyramid` 1 needs `ratio_ppm` above 0, `pyramid` 2 needs it 0:
    ///    `rule pyramid ratio_ppm`;
    /// 3. `pyramid` 1 needs `window_budget` 0, `pyramid` 2 needs it 1:
    ///    `rule pyramid window_budget`;
    /// 4. `pyramid` above 0 needs `recent_window` 0: `rule pyramid recent_window`.
    pub(crate) fn check(self, policy: &str, ratio_ppm: u32, window_budget: i64, recent_window: i64) -> Result<()> {
        let refuse = |names: &[&str], m: String| {
            Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Rule, names), format!("{policy}: {m}")))
        };
        if self.layer >= self.layers {
            return refuse(
                &["layer", "layers"],
                format!("layer must be below layers, got layer {}, layers {}", self.layer, self.layers),
            );
        }
        match self.mode {
            Mode::Kvpress if ratio_ppm == 0 => {
                refuse(&["pyramid", "ratio_ppm"], "pyramid 1 requires ratio_ppm above 0".into())
            }
            Mode::Factory if ratio_ppm != 0 => {
                refuse(&["pyramid", "ratio_ppm"], format!("pyramid 2 requires ratio_ppm 0, got {ratio_ppm}"))
            }
            Mode::Kvpress if window_budget != 0 => {
                refuse(&["pyramid", "window_budget"], "pyramid 1 requires window_budget 0".into())
            }
            Mode::Factory if window_budget != 1 => {
                refuse(&["pyramid", "window_budget"], "pyramid 2 requires window_budget 1".into())
            }
            Mode::Kvpress | Mode::Factory if recent_window != 0 => refuse(
                &["pyramid", "recent_window"],
                format!("pyramid requires recent_window 0, got {recent_window}"),
            ),
            _ => Ok(()),
        }
    }

    /// The layer's budget at a prefill step of a set keeping `n` positions
    /// after admission (spec/policies/pyramidkv.md#how-it-works), from
    /// `budget`, `ratio_ppm` and `obs_window` (the parameter, not the
    /// step's window); `None` with `pyramid` 0.
    pub fn layer_budget(self, n: u64, budget: u64, ratio_ppm: u32, obs_window: u64) -> Option<u64> {
        match self.mode {
            Mode::Off => None,
            Mode::Kvpress => Some(kvpress_budget(n, ratio_ppm, obs_window, self.beta, self.layer, self.layers)),
            Mode::Factory => Some(factory_budget(n, budget, obs_window, self.beta, self.layer, self.layers)),
        }
    }
}

/// The integer nearest `x`, and of two equally near the even one
/// (Python's `round`); `x` is finite and not below -0.5 here.
pub fn round_half_even(x: f64) -> u64 {
    x.round_ties_even() as u64
}

/// `pyramid` 1, kvpress's `PyramidKVPress.get_layer_budget`: every
/// operation in binary64, each correctly rounded, in the card's order
/// (spec/policies/pyramidkv.md#pyramid-1-kvpress). `w` is `obs_window`.
pub fn kvpress_budget(n: u64, ratio_ppm: u32, w: u64, beta: u32, layer: u32, layers: u32) -> u64 {
    let n = n as f64;
    let w = w as f64;
    let r = ratio_ppm as f64 / 1_000_000.0;
    let t = 1.0 - r;
    let u = n * t;
    let c = w + u;
    let a = c - w;
    let mut lo = a / beta as f64;
    let mut hi = a * 2.0 - lo;
    if hi >= n - w {
        hi = n - w;
        lo = a * 2.0 - hi;
    }
    if !(n >= hi && hi >= lo && lo >= w) {
        return round_half_even(u).max(1);
    }
    let steps = if layers > 1 { (hi - lo) / (layers - 1) as f64 } else { 0.0 };
    round_half_even(hi - layer as f64 * steps)
}

/// `pyramid` 2, KVCache-Factory's `PyramidKVCluster`: in integers with
/// floor division (spec/policies/pyramidkv.md#pyramid-2-kvcache-factory).
/// `budget` excludes the window; `w` is `obs_window`. May be 0 (the layer
/// keeps the window alone).
pub fn factory_budget(n: u64, budget: u64, w: u64, beta: u32, layer: u32, layers: u32) -> u64 {
    if n < budget + w || n < 2 * budget {
        return budget;
    }
    let mut lo = budget / beta as u64;
    let mut hi = 2 * budget - lo;
    // n - w >= budget here.
    if hi >= n - w {
        hi = n - w;
        lo = 2 * budget - hi;
    }
    let steps = if layers > 1 { (hi - lo) / (layers - 1) as u64 } else { 0 };
    hi - layer as u64 * steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(mode: i64, beta: i64, layer: i64, layers: i64) -> PyramidOptions {
        PyramidOptions::from_params(&[mode, beta, layer, layers])
    }

    /// The subject as spec/harness.md#subjects writes it, or `None`.
    fn subject(o: PyramidOptions, ratio_ppm: u32, window_budget: i64) -> Option<String> {
        subject_with(o, ratio_ppm, window_budget, 0)
    }

    fn subject_with(o: PyramidOptions, ratio_ppm: u32, window_budget: i64, recent_window: i64) -> Option<String> {
        o.check("snapkv", ratio_ppm, window_budget, recent_window).err().map(|r| {
            assert_eq!(r.category, Category::InvalidParameter);
            std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
        })
    }

    #[test]
    fn round_half_even_is_pythons_round() {
        // The card's two: 2.5 -> 2, 7.5 -> 8.
        assert_eq!(round_half_even(2.5), 2);
        assert_eq!(round_half_even(7.5), 8);
        assert_eq!(round_half_even(0.5), 0);
        assert_eq!(round_half_even(1.5), 2);
        assert_eq!(round_half_even(3.5), 4);
        assert_eq!(round_half_even(4.5), 4);
        // Not a half: the nearest.
        assert_eq!(round_half_even(2.4999999999999996), 2);
        assert_eq!(round_half_even(2.5000000000000004), 3);
        assert_eq!(round_half_even(6.825), 7);
        assert_eq!(round_half_even(0.0), 0);
        assert_eq!(round_half_even(0.4), 0);
        assert_eq!(round_half_even(12.0), 12);
    }

    #[test]
    fn example_1_kvpress() {
        // n 40, ratio 0.5, obs_window 4, beta 2, layers 3: u 20, c 24,
        // a 20, lo 10, hi 30 (< 36); steps 10: 30, 20, 10, 60 in all.
        let b: Vec<u64> = (0..3).map(|l| kvpress_budget(40, 500_000, 4, 2, l, 3)).collect();
        assert_eq!(b, vec![30, 20, 10]);
        assert_eq!(b.iter().sum::<u64>(), 3 * 20);
        assert_eq!(options(1, 2, 1, 3).layer_budget(40, 512, 500_000, 4), Some(20));
    }

    #[test]
    fn example_2_kvpress_halves() {
        // n 10, ratio 0.5, obs_window 1, beta 2, layers 2: lo 2.5, hi
        // 7.5, steps 5; round_half_even(7.5) = 8, round_half_even(2.5) = 2.
        assert_eq!(kvpress_budget(10, 500_000, 1, 2, 0, 2), 8);
        assert_eq!(kvpress_budget(10, 500_000, 1, 2, 1, 2), 2);
    }

    #[test]
    fn example_3_kvpress_clip() {
        // n 20, ratio 0.25, obs_window 2, beta 20, layers 4: u 15, lo
        // 0.75, hi 29.25 >= 18, so hi 18, lo 12; steps 2.
        let b: Vec<u64> = (0..4).map(|l| kvpress_budget(20, 250_000, 2, 20, l, 4)).collect();
        assert_eq!(b, vec![18, 16, 14, 12]);
    }

    #[test]
    fn example_4_kvpress_fallback() {
        // n 7, ratio 0.5, obs_window 4, beta 20: u 3.5, hi 6.825 >= 3, so
        // hi 3, lo 4; 3 >= 4 fails: round_half_even(3.5) = 4 at every
        // layer, where the plain ratio keeps floor(3.5) = 3.
        for layers in [1u32, 2, 5] {
            for layer in 0..layers {
                assert_eq!(kvpress_budget(7, 500_000, 4, 20, layer, layers), 4, "layer {layer} of {layers}");
            }
        }
        assert_eq!(crate::prefill::ratio_budget(7, 500_000), 3);
        // The fallback is at least 1: n 1 at ratio 0.6 (u 0.4 rounds to 0).
        assert_eq!(kvpress_budget(1, 600_000, 1, 20, 0, 1), 1);
    }

    #[test]
    fn example_5_factory() {
        // budget 10, obs_window 2, beta 4, layers 4. n 30: lo 2, hi 18
        // (< 28), steps 16 // 3 = 5: 18, 13, 8, 3 (42 in all, not 40).
        let b: Vec<u64> = (0..4).map(|l| factory_budget(30, 10, 2, 4, l, 4)).collect();
        assert_eq!(b, vec![18, 13, 8, 3]);
        assert_eq!(b.iter().sum::<u64>(), 42);
        // n 15, below 2 * budget: every layer 10; n 11, below budget + w: 10.
        for l in 0..4 {
            assert_eq!(factory_budget(15, 10, 2, 4, l, 4), 10);
            assert_eq!(factory_budget(11, 10, 2, 4, l, 4), 10);
        }
        assert_eq!(options(2, 4, 3, 4).layer_budget(30, 10, 0, 2), Some(3));
    }

    #[test]
    fn example_6_factory_clip() {
        // budget 10, obs_window 6, beta 4, layers 3, n 22: lo 2, hi 18 >=
        // 16, so hi 16, lo 4; steps 6: 16, 10, 4.
        let b: Vec<u64> = (0..3).map(|l| factory_budget(22, 10, 6, 4, l, 3)).collect();
        assert_eq!(b, vec![16, 10, 4]);
    }

    #[test]
    fn kvpress_fallback_checks() {
        // hi below lo (example 4) at the first layer of 3: hi 3, lo 4, and
        // without the check round_half_even(3 - 0 * -0.5) = 3; the fallback
        // keeps 4. (The middle layer would keep (hi + lo) / 2 = 3.5 -> 4
        // either way.)
        assert_eq!(kvpress_budget(7, 500_000, 4, 20, 0, 3), 4);
        // lo below the window: n 100, ratio 0.75, obs_window 4, beta 20:
        // u 25, c 29, a 25, lo 1.25, hi 48.75 (< 96, no clip); 1.25 >= 4
        // fails: round_half_even(25) = 25, where layer 0 would keep 49.
        assert_eq!(kvpress_budget(100, 750_000, 4, 20, 0, 2), 25);
        assert_eq!(kvpress_budget(100, 750_000, 4, 20, 1, 2), 25);
    }

    #[test]
    fn factory_boundaries() {
        // n = 2 * budget is the pyramid's: example 5 at n 20: lo 2, hi 18
        // >= 18, so hi 18, lo 2; steps 16 // 3 = 5: 18, 13, 8, 3.
        let b: Vec<u64> = (0..4).map(|l| factory_budget(20, 10, 2, 4, l, 4)).collect();
        assert_eq!(b, vec![18, 13, 8, 3]);
        assert_eq!(factory_budget(19, 10, 2, 4, 0, 4), 10);
        // obs_window above budget: budget 4, obs_window 8, beta 4, layers
        // 2. n 10 (>= 2 * budget, < budget + w): budget, 4. n 12 (= budget
        // + w): lo 1, hi 7 >= 4, so hi 4, lo 4, steps 0: 4. n 20: lo 1, hi
        // 7 (< 12), steps 6: 7, 1.
        assert_eq!(factory_budget(10, 4, 8, 4, 0, 2), 4);
        assert_eq!(factory_budget(10, 4, 8, 4, 1, 2), 4);
        assert_eq!(factory_budget(12, 4, 8, 4, 0, 2), 4);
        assert_eq!(factory_budget(12, 4, 8, 4, 1, 2), 4);
        assert_eq!(factory_budget(20, 4, 8, 4, 0, 2), 7);
        assert_eq!(factory_budget(20, 4, 8, 4, 1, 2), 1);
    }

    #[test]
    fn one_layer_keeps_the_largest_budget() {
        // layers 1: steps 0 (KVCache-Factory would divide by zero).
        assert_eq!(kvpress_budget(40, 500_000, 4, 2, 0, 1), 30);
        assert_eq!(factory_budget(30, 10, 2, 4, 0, 1), 18);
    }

    #[test]
    fn factory_budget_may_be_zero() {
        // budget 4, obs_window 1, beta 4, layers 2, n 12: lo 1, hi 7
        // (< 11); steps 6: 7, 1. beta 1: lo 4, hi 4, steps 0: 4, 4. With
        // beta 8, lo 0, hi 8, steps 8: 8, 0.
        assert_eq!(factory_budget(12, 4, 1, 4, 1, 2), 1);
        assert_eq!(factory_budget(12, 4, 1, 1, 1, 2), 4);
        assert_eq!(factory_budget(12, 4, 1, 8, 0, 2), 8);
        assert_eq!(factory_budget(12, 4, 1, 8, 1, 2), 0);
    }

    #[test]
    fn off_gives_no_layer_budget() {
        assert_eq!(options(0, 2, 1, 3).layer_budget(40, 10, 500_000, 4), None);
        assert_eq!(options(0, 20, 0, 1).mode, Mode::Off);
    }

    #[test]
    fn rules_and_their_subjects() {
        // Rule 1, whatever pyramid is.
        assert_eq!(subject(options(0, 20, 1, 1), 0, 0).as_deref(), Some("rule layer layers"));
        assert_eq!(subject(options(0, 20, 3, 3), 0, 0).as_deref(), Some("rule layer layers"));
        assert_eq!(subject(options(0, 20, 2, 3), 0, 0), None);
        // Rule 1 before rule 2, rule 2 before rule 3.
        assert_eq!(subject(options(1, 20, 4, 4), 0, 0).as_deref(), Some("rule layer layers"));
        assert_eq!(subject(options(2, 20, 4, 4), 5, 0).as_deref(), Some("rule layer layers"));
        assert_eq!(subject(options(1, 20, 0, 4), 0, 0).as_deref(), Some("rule pyramid ratio_ppm"));
        assert_eq!(subject(options(2, 20, 0, 4), 1, 0).as_deref(), Some("rule pyramid ratio_ppm"));
        assert_eq!(subject(options(2, 20, 0, 4), 1, 1).as_deref(), Some("rule pyramid ratio_ppm"));
        assert_eq!(subject(options(2, 20, 0, 4), 0, 0).as_deref(), Some("rule pyramid window_budget"));
        // Rule 3: pyramid 1 needs window_budget 0.
        assert_eq!(subject(options(1, 20, 3, 4), 1, 1).as_deref(), Some("rule pyramid window_budget"));
        // Rule 4: a recent window with either formula.
        assert_eq!(subject_with(options(2, 20, 3, 4), 0, 1, 9).as_deref(), Some("rule pyramid recent_window"));
        assert_eq!(subject_with(options(0, 20, 3, 4), 0, 1, 9), None);
        // Accepted.
        assert_eq!(subject(options(1, 20, 3, 4), 1, 0), None);
        assert_eq!(subject(options(2, 20, 3, 4), 0, 1), None);
        assert_eq!(subject(options(0, 20, 0, 1), 5, 1), None);
    }
}
