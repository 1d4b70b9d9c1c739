//! `snapkv`: evicts the lowest max-pooled window sum over the last
//! `obs_window` recorded steps. Card: spec/policies/snapkv.md.
use super::{
    check_recent_below_budget, head_options, resolve_params, retain_slots, ParamSpec, Policy, with_head_params, BUDGET,
    RECENT_WINDOW,
};
use crate::error::{Category, Refusal, Result};
use crate::heads::HeadOptions;

const OBS_WINDOW: ParamSpec = ParamSpec { name: "obs_window", default: 16, min: 1, max: 65536 };
const POOL_KERNEL: ParamSpec = ParamSpec { name: "pool_kernel", default: 5, min: 1, max: 65535 };

#[derive(Debug)]
pub struct SnapKv {
    budget: u64,
    recent_window: u64,
    obs_window: usize,
    pool_kernel: usize,
    heads: HeadOptions,
    /// `obs_window` binary32 weights per kept slot (spec/policies/snapkv.md#the-ring).
    ring: Vec<f32>,
    /// The index the next recorded step writes, shared by all slots.
    cursor: usize,
}

impl SnapKv {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("snapkv", &with_head_params(&[BUDGET, RECENT_WINDOW, OBS_WINDOW, POOL_KERNEL]), params)?;
        check_recent_below_budget("snapkv", v[0], v[1])?;
        if v[3] % 2 == 0 {
            return Err(Refusal::new(
                Category::InvalidParameter,
                format!("snapkv: pool_kernel must be odd, got {}", v[3]),
            ));
        }
        Ok(SnapKv {
            budget: v[0] as u64,
            recent_window: v[1] as u64,
            obs_window: v[2] as usize,
            pool_kernel: v[3] as usize,
            heads: head_options(&v[4..]),
            ring: Vec::new(),
            cursor: 0,
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
    fn admit(&mut self, count: usize) {
        self.ring.resize(self.ring.len() + count * self.obs_window, 0.0);
    }
    /// The pooled window sums, pooled over this head's kept set.
    fn scores(&self) -> Option<Vec<f64>> {
        let sums = self.sums();
        Some(if self.pool_kernel == 1 { sums } else { max_pool(&sums, self.pool_kernel) })
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.ring, self.obs_window, evicted);
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
    }
}
