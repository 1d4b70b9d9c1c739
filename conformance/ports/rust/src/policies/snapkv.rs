//! `snapkv`: evicts the lowest pooled window sum over the last
//! `obs_window` recorded steps; at a prefill step, the lowest pooled sum of
//! the observation window's query rows over the prefix.
//! Card: spec/policies/snapkv.md.
use super::pyramid::{PyramidOptions, PYRAMID_PARAMS};
use super::{
    check_recent_below_budget, head_options, prefill_options, resolve_params, retain_slots, with_shared_params,
    ParamSpec, Policy, QueryRows, BUDGET, RECENT_WINDOW,
};
use crate::blocks::BlockOptions;
use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::heads::HeadOptions;
use crate::prefill::{check_prefill_rules, PrefillOptions};
use crate::triggers::TriggerOptions;

const OBS_WINDOW: ParamSpec = ParamSpec { name: "obs_window", default: 16, min: 1, max: 65536 };
const POOL_KERNEL: ParamSpec = ParamSpec { name: "pool_kernel", default: 5, min: 1, max: 65535 };
const WINDOW_REDUCE: ParamSpec = ParamSpec { name: "window_reduce", default: 0, min: 0, max: 1 };
const POOLING: ParamSpec = ParamSpec { name: "pooling", default: 0, min: 0, max: 1 };
const WINDOW_BUDGET: ParamSpec = ParamSpec { name: "window_budget", default: 0, min: 0, max: 1 };

/// `pooling` (spec/policies/snapkv.md#pooling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    /// 0: the largest window sum among the neighbours.
    Max,
    /// 1: PyTorch's `avg_pool1d` with zero padding: the neighbours' sum
    /// divided by `pool_kernel`.
    Avg,
}

#[derive(Debug)]
pub struct SnapKv {
    budget: u64,
    recent_window: u64,
    obs_window: usize,
    pool_kernel: usize,
    heads: HeadOptions,
    prefill: PrefillOptions,
    /// `window_reduce` 1: the window rows' sums are divided by `w` (mean).
    window_mean: bool,
    pooling: Pooling,
    /// `window_budget` 1 (`outside`): at a prefill step the window's slots
    /// are neither candidates nor counted against the step budget.
    window_outside: bool,
    /// `pyramid`, `pyramid_beta`, `layer`, `layers` (spec 0.19.0,
    /// spec/policies/pyramidkv.md): with `pyramid` 1 or 2, a prefill step's
    /// budget is the layer's.
    pyramid: PyramidOptions,
    triggers: TriggerOptions,
    /// `block` and `block_score` (spec/blocks.md#parameters).
    blocks: BlockOptions,
    /// `obs_window` binary32 weights per kept slot (spec/policies/snapkv.md#the-ring).
    ring: Vec<f32>,
    /// The index the next recorded step writes, shared by all slots.
    cursor: usize,
    /// At a prefill step, from `record_queries`: this head's score of every
    /// kept slot (the pooled prefix, then +infinity for the window) and the
    /// window's length `w`.
    prefill_scores: Vec<f64>,
    prefill_window: usize,
}

impl SnapKv {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let own_prefill = [WINDOW_REDUCE, POOLING, WINDOW_BUDGET];
        let specs = with_shared_params(
            &[BUDGET, RECENT_WINDOW, OBS_WINDOW, POOL_KERNEL],
            &[own_prefill.as_slice(), PYRAMID_PARAMS.as_slice()].concat(),
        );
        let v = resolve_params("snapkv", &specs, params)?;
        check_recent_below_budget("snapkv", v[0], v[1])?;
        if v[3] % 2 == 0 {
            return Err(Refusal::new(
                Category::InvalidParameter,
                Subject::new(Check::Rule, &["pool_kernel"]),
                format!("snapkv: pool_kernel must be odd, got {}", v[3]),
            ));
        }
        let heads = head_options(&v[4..8]);
        let prefill = prefill_options(&v[8..10]);
        check_prefill_rules("snapkv", Some(v[1]), heads.adaptive, prefill, Some(v[12]))?;
        let pyramid = PyramidOptions::from_params(&v[13..17]);
        pyramid.check("snapkv", prefill.ratio_ppm, v[12], v[1])?;
        let triggers = TriggerOptions::from_params(&v[17..19]);
        triggers.check("snapkv", Some(prefill), Some(heads.adaptive), None)?;
        let blocks = BlockOptions::from_params(&v[19..21]);
        blocks.check(
            "snapkv",
            &[("budget", v[0] as u64), ("recent_window", v[1] as u64)],
            &[("ratio_ppm", prefill.ratio_ppm as u64), ("adaptive", heads.adaptive as u64), ("window_budget", v[12] as u64)],
        )?;
        Ok(SnapKv {
            budget: v[0] as u64,
            recent_window: v[1] as u64,
            obs_window: v[2] as usize,
            pool_kernel: v[3] as usize,
            heads,
            prefill,
            window_mean: v[10] == 1,
            pooling: if v[11] == 1 { Pooling::Avg } else { Pooling::Max },
            window_outside: v[12] == 1,
            pyramid,
            triggers,
            blocks,
            ring: Vec::new(),
            cursor: 0,
            prefill_scores: Vec::new(),
            prefill_window: 0,
        })
    }

    /// Window sums in ring-index order, binary64 from +0.0
    /// (spec/policies/snapkv.md#window-sums).
    fn sums(&self) -> Vec<f64> {
        self.ring
            .chunks_exact(self.obs_window)
            .map(|r| {
                let mut s = 0.0f64;
                for &w in r {
                    s += w as f64;
                }
                s
            })
            .collect()
    }

    /// `sums` pooled by `pooling` over `pool_kernel` neighbours.
    fn pool(&self, sums: Vec<f64>) -> Vec<f64> {
        match self.pooling {
            Pooling::Max if self.pool_kernel == 1 => sums,
            Pooling::Max => max_pool(&sums, self.pool_kernel),
            Pooling::Avg => avg_pool(&sums, self.pool_kernel),
        }
    }
}

/// Max-pool over slots `i - r ..= i + r`, clamped to the kept set
/// (spec/policies/snapkv.md#pooling).
pub fn max_pool(sums: &[f64], pool_kernel: usize) -> Vec<f64> {
    let n = sums.len();
    let r = (pool_kernel - 1) / 2;
    (0..n)
        .map(|i| {
            let lo = i.saturating_sub(r);
            let hi = (i + r).min(n - 1);
            let mut m = sums[lo];
            for &s in &sums[lo + 1..=hi] {
                if s > m {
                    m = s;
                }
            }
            m
        })
        .collect()
}

/// Average pool with zero padding (`pooling` 1,
/// spec/policies/snapkv.md#pooling): the sums of slots `i - r ..= i + r`
/// that exist, added in ascending slot order in binary64 from +0.0, divided
/// by `pool_kernel` whatever the number of slots present.
pub fn avg_pool(sums: &[f64], pool_kernel: usize) -> Vec<f64> {
    let n = sums.len();
    let r = (pool_kernel - 1) / 2;
    let divisor = pool_kernel as f64;
    (0..n)
        .map(|i| {
            let lo = i.saturating_sub(r);
            let hi = (i + r).min(n - 1);
            let mut s = 0.0f64;
            for &x in &sums[lo..=hi] {
                s += x;
            }
            s / divisor
        })
        .collect()
}

impl Policy for SnapKv {
    fn name(&self) -> &'static str {
        "snapkv"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn head_options(&self) -> Option<HeadOptions> {
        Some(self.heads)
    }
    /// Null attention never reaches here; a present row (even empty)
    /// advances the cursor.
    fn record(&mut self, attention: &[f32]) {
        for (slot, &w) in attention.iter().enumerate() {
            self.ring[slot * self.obs_window + self.cursor] = w;
        }
        self.cursor = (self.cursor + 1) % self.obs_window;
    }
    /// The prefill rule (spec/policies/snapkv.md#at-prefill): the window is
    /// the last `w = min(obs_window, m)` queries, which are the set's last
    /// `w` kept slots; each prefix slot sums the window rows' weights in
    /// ascending query position (divided once by `w` with `window_reduce`
    /// 1), the prefix alone is pooled, and the window's slots score
    /// +infinity. The ring is neither written nor advanced.
    fn record_queries(&mut self, rows: &QueryRows) {
        let m = rows.count();
        let n = self.ring.len() / self.obs_window;
        let w = self.obs_window.min(m);
        let prefix = n - w;
        let mut sums = vec![0.0f64; prefix];
        for j in m - w..m {
            for (i, s) in sums.iter_mut().enumerate() {
                *s += rows.weight(j, i) as f64;
            }
        }
        if self.window_mean {
            for s in &mut sums {
                *s /= w as f64;
            }
        }
        let mut scores = self.pool(sums);
        scores.resize(n, f64::INFINITY);
        self.prefill_scores = scores;
        self.prefill_window = w;
    }
    fn admit(&mut self, count: usize) {
        self.ring.resize(self.ring.len() + count * self.obs_window, 0.0);
    }
    /// spec/prefill.md#when-a-policy-evicts's step budget; at a prefill
    /// step with `pyramid` 1 or 2, the layer's budget in its place
    /// (spec/policies/pyramidkv.md#how-it-works), from `n` and the
    /// parameter `obs_window`.
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        let layer = || self.pyramid.layer_budget(n as u64, self.budget, self.prefill.ratio_ppm, self.obs_window as u64);
        match prefill.then(layer).flatten() {
            Some(b) => Some(b),
            None => self.prefill.step_budget(self.budget, n, prefill),
        }
    }
    /// With `window_budget` 1 at a prefill step, the window does not count.
    fn counted(&self, n: usize, prefill: bool) -> usize {
        if prefill && self.window_outside {
            n - self.prefill_window
        } else {
            n
        }
    }
    /// The pooled window sums, pooled over this head's kept set; at a
    /// prefill step, the prefill rule's scores.
    fn scores(&self, prefill: bool) -> Option<Vec<f64>> {
        if prefill {
            return Some(self.prefill_scores.clone());
        }
        Some(self.pool(self.sums()))
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    /// Outside the recent window; with `window_budget` 1 at a prefill step,
    /// in the prefix only.
    fn candidates(&self, n: usize, prefill: bool) -> usize {
        let outside = n.saturating_sub(self.recent_window as usize);
        if prefill && self.window_outside {
            outside.min(n - self.prefill_window)
        } else {
            outside
        }
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.ring, self.obs_window, evicted);
    }
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_clamps_at_both_ends() {
        // High end clamps: sums 1.0, 0.5, 0.25, 0 pool to 1.0, 1.0, 0.5, 0.25.
        assert_eq!(max_pool(&[1.0, 0.5, 0.25, 0.0], 3), vec![1.0, 1.0, 0.5, 0.25]);
        // Pooling defends a neighbour: 0.5, 0.125, 1.0, 0.25, 0.
        assert_eq!(max_pool(&[0.5, 0.125, 1.0, 0.25, 0.0], 3), vec![0.5, 1.0, 1.0, 1.0, 0.25]);
        assert_eq!(max_pool(&[0.375, 1.0, 0.5, 0.0], 3), vec![1.0, 1.0, 1.0, 0.5]);
        assert_eq!(max_pool(&[], 3), Vec::<f64>::new());
    }

    #[test]
    fn avg_pooling_pads_with_zeros() {
        // spec/policies/snapkv.md#pooling: the divisor is always
        // pool_kernel, so an end slot averages lower than a middle slot
        // with the same neighbours.
        assert_eq!(avg_pool(&[1.0, 0.5, 0.25, 0.0], 3), vec![1.5 / 3.0, 1.75 / 3.0, 0.75 / 3.0, 0.25 / 3.0]);
        assert_eq!(avg_pool(&[0.75, 0.75], 3), vec![0.5, 0.5]);
        assert_eq!(avg_pool(&[0.75, 0.75, 0.75], 3), vec![0.5, 0.75, 0.5]);
        // Kernel 5 on 2 slots: both see both, divided by 5.
        assert_eq!(avg_pool(&[1.0, 4.0], 5), vec![1.0, 1.0]);
        // Kernel 1: the sums divided by 1.
        let sums = [0.1, 0.3, 1e-300];
        assert_eq!(avg_pool(&sums, 1), sums.to_vec());
        assert_eq!(avg_pool(&[], 5), Vec::<f64>::new());
    }
}
