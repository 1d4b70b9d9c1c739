//! `keydiff`: kvpress's `KeyDiffPress`. Evicts the keys nearest the
//! cache's mean key direction: each admitted position's unit key is
//! computed once, per KV head; at a step that evicts, the anchor is the
//! unit of the mean of every kept position's unit key, and a position
//! scores `+0.0 - dot(unit key, anchor)`, so its score moves as the cache
//! does. A kept set ranks the combined score of its KV heads, as `knorm`'s.
//! Reads no attention. Card: spec/policies/keydiff.md; keys:
//! spec/tensors.md.
use super::{
    check_recent_below_budget, prefill_options, resolve_params, ParamSpec, Policy, AGGREGATION, BUDGET,
    GRANULARITY, PREFILL_PARAMS,
};
use crate::elementary::{dot, mean, norm};
use crate::error::Result;
use crate::heads::{Aggregation, Granularity, HeadOptions};
use crate::prefill::{check_prefill_rules, PrefillOptions};

/// `recent_window` of this card: default 0, as `knorm`'s
/// (spec/policies/keydiff.md#parameters).
const RECENT_WINDOW: ParamSpec = ParamSpec { name: "recent_window", default: 0, min: 0, max: 4294967294 };

/// The card's table, in order (spec/policies/keydiff.md#parameters):
/// knorm's, with `recent_window` 0 by default.
const PARAMS: [ParamSpec; 6] = [BUDGET, RECENT_WINDOW, GRANULARITY, AGGREGATION, PREFILL_PARAMS[0], PREFILL_PARAMS[1]];

#[derive(Debug)]
pub struct KeyDiff {
    budget: u64,
    recent_window: u64,
    heads: HeadOptions,
    prefill: PrefillOptions,
    /// Per kept slot, in kept (ascending position) order: this KV head's
    /// unit key of the position, computed when it was admitted (empty
    /// between `admit` and `record_keys` of the same step).
    units: Vec<Vec<f64>>,
}

impl KeyDiff {
    /// Checks the ranges in card order, then `rule recent_window budget`,
    /// then `rule ratio_ppm recent_window` (spec/policies/keydiff.md#parameters).
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("keydiff", &PARAMS, params)?;
        check_recent_below_budget("keydiff", v[0], v[1])?;
        let prefill = prefill_options(&v[4..6]);
        check_prefill_rules("keydiff", Some(v[1]), false, prefill, None)?;
        let heads = HeadOptions {
            granularity: Granularity::from_param(v[2]),
            aggregation: Aggregation::from_param(v[3]),
            // keydiff takes no `adaptive`: its sets never share a budget.
            adaptive: false,
            safeguard_permille: 0,
        };
        Ok(KeyDiff { budget: v[0] as u64, recent_window: v[1] as u64, heads, prefill, units: Vec::new() })
    }
}

/// The unit of a binary64 vector (spec/policies/keydiff.md#how-it-works):
/// `n = norm(a)` of spec/elementary.md#reductions-over-vectors; `d` zeros
/// (+0.0 each) when `n` is +0.0, otherwise `a[c] / n`, one division each.
pub fn unit(a: &[f64]) -> Vec<f64> {
    let n = norm(a);
    if n == 0.0 {
        vec![0.0; a.len()]
    } else {
        a.iter().map(|&x| x / n).collect()
    }
}

/// A key's unit key: its binary32 entries widened exactly to binary64,
/// then `unit`.
pub fn unit_key(key: &[f32]) -> Vec<f64> {
    let wide: Vec<f64> = key.iter().map(|&x| x as f64).collect();
    unit(&wide)
}

/// The anchor of one KV head (spec/policies/keydiff.md#how-it-works): the
/// unit of the per-channel mean of the unit keys `units` (every kept
/// position, ascending; `mean` sums from +0.0 in that order and divides
/// once by their number).
pub fn anchor(units: &[Vec<f64>]) -> Vec<f64> {
    let d = units.first().map_or(0, Vec::len);
    let mut column = Vec::with_capacity(units.len());
    let means: Vec<f64> = (0..d)
        .map(|c| {
            column.clear();
            column.extend(units.iter().map(|u| u[c]));
            mean(&column)
        })
        .collect();
    unit(&means)
}

/// Every kept slot's score under one KV head: `+0.0 - dot(unit key,
/// anchor)`, so a zero dot product scores +0.0, never -0.0.
pub fn scores_of(units: &[Vec<f64>]) -> Vec<f64> {
    let a = anchor(units);
    units.iter().map(|u| 0.0 - dot(u, &a)).collect()
}

impl Policy for KeyDiff {
    fn name(&self) -> &'static str {
        "keydiff"
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
        self.units.resize(self.units.len() + count, Vec::new());
    }
    fn reads_keys(&self) -> bool {
        true
    }
    /// The admitted positions are the last `keys.len() / head_dim` slots:
    /// each gets `unit_key` of its key, kept until the slot is forgotten.
    fn record_keys(&mut self, keys: &[f32], head_dim: usize) {
        let admitted = keys.len() / head_dim;
        let start = self.units.len() - admitted;
        for (unit, key) in self.units[start..].iter_mut().zip(keys.chunks_exact(head_dim)) {
            *unit = unit_key(key);
        }
    }
    /// As `knorm`'s: `budget`, or at a prefill step the ratio budget with
    /// `ratio_ppm` above 0, or none at a decode step with `prefill_only` 1
    /// (spec/prefill.md#when-a-policy-evicts).
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        self.prefill.step_budget(self.budget()?, n, prefill)
    }
    /// Computed anew at each call, from the slots kept now: the harness
    /// asks only at a step that evicts, after its admissions, and the
    /// anchor is over every kept slot, the recent window's included.
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        Some(scores_of(&self.units))
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, evicted: &[bool]) {
        let mut slot = 0;
        self.units.retain(|_| {
            let keep = !evicted[slot];
            slot += 1;
            keep
        });
    }
}
