//! `knorm`: kvpress's `KnormPress`. Evicts the largest key norm: a
//! position's score under one KV head is `+0.0 - norm(key)`, fixed at
//! admission, and a kept set ranks the combined score of its KV heads.
//! Reads no attention. Card: spec/policies/knorm.md; keys:
//! spec/tensors.md.
use super::{
    check_recent_below_budget, prefill_options, resolve_params, retain_slots, ParamSpec, Policy, AGGREGATION, BUDGET,
    GRANULARITY, PREFILL_PARAMS,
};
use crate::elementary::norm;
use crate::error::Result;
use crate::heads::{Aggregation, Granularity, HeadOptions};
use crate::prefill::{check_prefill_rules, PrefillOptions};

/// `recent_window` of this card: default 0, not the 16 of the cards that
/// read attention (spec/policies/knorm.md#parameters).
const RECENT_WINDOW: ParamSpec = ParamSpec { name: "recent_window", default: 0, min: 0, max: 4294967294 };

/// The card's table, in order (spec/policies/knorm.md#parameters): no
/// `adaptive`, `safeguard_permille`, trigger or block parameter.
const PARAMS: [ParamSpec; 6] = [BUDGET, RECENT_WINDOW, GRANULARITY, AGGREGATION, PREFILL_PARAMS[0], PREFILL_PARAMS[1]];

#[derive(Debug)]
pub struct Knorm {
    budget: u64,
    recent_window: u64,
    heads: HeadOptions,
    prefill: PrefillOptions,
    /// Per kept slot: this KV head's score of the position, `+0.0 -
    /// norm(key)`, set when the position was admitted.
    scores: Vec<f64>,
}

impl Knorm {
    /// Checks the ranges in card order, then `rule recent_window budget`,
    /// then `rule ratio_ppm recent_window` (spec/policies/knorm.md#parameters).
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("knorm", &PARAMS, params)?;
        check_recent_below_budget("knorm", v[0], v[1])?;
        let prefill = prefill_options(&v[4..6]);
        check_prefill_rules("knorm", Some(v[1]), false, prefill, None)?;
        let heads = HeadOptions {
            granularity: Granularity::from_param(v[2]),
            aggregation: Aggregation::from_param(v[3]),
            // knorm takes no `adaptive`: its sets never share a budget.
            adaptive: false,
            safeguard_permille: 0,
        };
        Ok(Knorm { budget: v[0] as u64, recent_window: v[1] as u64, heads, prefill, scores: Vec::new() })
    }
}

/// The score of a position under one KV head from its key
/// (spec/policies/knorm.md#how-it-works): the key's entries widened to
/// binary64, `norm` of spec/elementary.md#reductions-over-vectors (squares
/// summed from channel 0 into +0.0, one sqrt), subtracted from +0.0, so a
/// zero key scores +0.0, never -0.0.
pub fn key_score(key: &[f32]) -> f64 {
    let wide: Vec<f64> = key.iter().map(|&x| x as f64).collect();
    0.0 - norm(&wide)
}

impl Policy for Knorm {
    fn name(&self) -> &'static str {
        "knorm"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn head_options(&self) -> Option<HeadOptions> {
        Some(self.heads)
    }
    /// Attention is ignored (spec/tensors.md#policies-that-read-keys); the
    /// harness hands none to a policy that reads keys.
    fn record(&mut self, _attention: &[f32]) {}
    /// Appends a placeholder per admitted slot, which `record_keys` sets in
    /// the same step.
    fn admit(&mut self, count: usize) {
        self.scores.resize(self.scores.len() + count, 0.0);
    }
    fn reads_keys(&self) -> bool {
        true
    }
    /// The admitted positions are the last `keys.len() / head_dim` slots:
    /// each scores `key_score` of its key, fixed from now on.
    fn record_keys(&mut self, keys: &[f32], head_dim: usize) {
        let admitted = keys.len() / head_dim;
        let start = self.scores.len() - admitted;
        for (score, key) in self.scores[start..].iter_mut().zip(keys.chunks_exact(head_dim)) {
            *score = key_score(key);
        }
    }
    /// `budget`, or at a prefill step the ratio budget with `ratio_ppm`
    /// above 0, or none at a decode step with `prefill_only` 1
    /// (spec/prefill.md#when-a-policy-evicts). Reads `budget()`, its only
    /// reader that matters: `knorm` takes no trigger, span or `adaptive`
    /// parameter, the other readers of `Policy::budget`.
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        self.prefill.step_budget(self.budget()?, n, prefill)
    }
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        Some(self.scores.clone())
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.scores, 1, evicted);
    }
}
