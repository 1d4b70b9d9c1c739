//! `lagkv`: kvpress's `LagKVPress` (spec 0.18.0). Lag-relative spread: at
//! a step that evicts, per KV head, the kept slots after the first `sinks`
//! are cut into partitions of `lag` slots, and each partition but the last
//! is judged against the next (its *reference*): every key and value is
//! scaled channel by channel into the reference's range, its spread is
//! `std(y, 1)` across channels, a softmax over the partition turns the
//! spreads into weights, and a slot's judgement is the mean of its key's
//! and its value's weight. A judged slot scores its rank in its partition
//! over `lag` (or, with `cross_scoring` 1, its judgement); the sinks, the
//! last partition and the slots after it score `1.0`. A short cache scores
//! by age. A kept set ranks the combined score of its KV heads, as
//! `knorm`'s. Reads keys and values, no attention. Card:
//! spec/policies/lagkv.md; tensors: spec/tensors.md.
use super::{prefill_options, resolve_params, ParamSpec, Policy, TensorNeeds, AGGREGATION, BUDGET, GRANULARITY, PREFILL_PARAMS};
use crate::elementary::{exp, std};
use crate::error::Result;
use crate::heads::{Aggregation, Granularity, HeadOptions};
use crate::prefill::{check_prefill_rules, PrefillOptions};

/// `sinks` of this card (spec/policies/lagkv.md#parameters).
const SINKS: ParamSpec = ParamSpec { name: "sinks", default: 4, min: 0, max: 4294967294 };
/// `lag`: slots in a partition.
const LAG: ParamSpec = ParamSpec { name: "lag", default: 128, min: 1, max: 1 << 20 };
/// `cross_scoring`: 1, a judged slot scores its judgement, not its rank.
const CROSS_SCORING: ParamSpec = ParamSpec { name: "cross_scoring", default: 0, min: 0, max: 1 };

/// The card's table, in order (spec/policies/lagkv.md#parameters).
const PARAMS: [ParamSpec; 8] =
    [BUDGET, SINKS, LAG, CROSS_SCORING, GRANULARITY, AGGREGATION, PREFILL_PARAMS[0], PREFILL_PARAMS[1]];

/// The least `head_dim` and `value_dim` (spec/policies/lagkv.md#how-it-works,
/// step 3: `std(y, 1)` needs at least two channels).
pub const LEAST_DIM: u32 = 2;

#[derive(Debug)]
pub struct LagKv {
    budget: u64,
    sinks: u64,
    lag: u64,
    cross_scoring: bool,
    heads: HeadOptions,
    prefill: PrefillOptions,
    /// Per kept slot, in kept (ascending position) order: this KV head's
    /// key of the position as admitted, binary32 (empty between `admit`
    /// and `record_keys` of the same step).
    keys: Vec<Vec<f32>>,
    /// The same for its value (`record_values`).
    values: Vec<Vec<f32>>,
}

impl LagKv {
    /// Checks the ranges in card order; no rule relates them
    /// (spec/policies/lagkv.md#parameters), and without `recent_window`
    /// and `adaptive` spec/prefill.md's rules have nothing to check.
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("lagkv", &PARAMS, params)?;
        let prefill = prefill_options(&v[6..8]);
        check_prefill_rules("lagkv", None, false, prefill, None)?;
        let heads = HeadOptions {
            granularity: Granularity::from_param(v[4]),
            aggregation: Aggregation::from_param(v[5]),
            // lagkv takes no `adaptive`: its sets never share a budget.
            adaptive: false,
            safeguard_permille: 0,
        };
        Ok(LagKv {
            budget: v[0] as u64,
            sinks: v[1] as u64,
            lag: v[2] as u64,
            cross_scoring: v[3] == 1,
            heads,
            prefill,
            keys: Vec::new(),
            values: Vec::new(),
        })
    }
}

/// The spreads of a judged partition's vectors `part` against its
/// reference `reference` (spec/policies/lagkv.md#how-it-works, step 3):
/// per channel `c`, `lo[c]` and `hi[c]` the least and greatest entry of
/// the reference's vectors; each vector `x` scaled to `y[c] = (x[c] -
/// lo[c]) / (hi[c] - lo[c])` in binary64 of the widened entries, `+0.0`
/// when `hi[c] = lo[c]`; its spread `std(y, 1)`.
pub fn spreads(part: &[Vec<f32>], reference: &[Vec<f32>]) -> Vec<f64> {
    let d = reference[0].len();
    let mut lo = vec![f64::INFINITY; d];
    let mut hi = vec![f64::NEG_INFINITY; d];
    for r in reference {
        for c in 0..d {
            let x = r[c] as f64;
            if x < lo[c] {
                lo[c] = x;
            }
            if x > hi[c] {
                hi[c] = x;
            }
        }
    }
    let mut y = vec![0.0f64; d];
    part.iter()
        .map(|x| {
            for c in 0..d {
                y[c] = if hi[c] == lo[c] { 0.0 } else { (x[c] as f64 - lo[c]) / (hi[c] - lo[c]) };
            }
            std(&y, 1)
        })
        .collect()
}

/// The softmax over a partition (spec/policies/lagkv.md#how-it-works, step
/// 4): `mx` the greatest spread, `t[i] = exp(s[i] - mx)` with
/// spec/elementary.md's `exp`, `z` their sum in slot order from +0.0,
/// `w[i] = t[i] / z`.
pub fn softmax(s: &[f64]) -> Vec<f64> {
    let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let t: Vec<f64> = s.iter().map(|&x| exp(x - mx)).collect();
    let mut z = 0.0;
    for &x in &t {
        z += x;
    }
    t.iter().map(|&x| x / z).collect()
}

/// Each slot's rank in its partition (spec/policies/lagkv.md#how-it-works,
/// step 6): the number of slots before it when they are sorted by `(a,
/// slot)` ascending.
pub fn ranks(a: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..a.len()).collect();
    order.sort_by(|&i, &j| a[i].partial_cmp(&a[j]).expect("judgements are never NaN").then(i.cmp(&j)));
    let mut rank = vec![0; a.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    rank
}

/// Every kept slot's score under one KV head (spec/policies/lagkv.md#how-it-works),
/// from the kept keys and values, slot 0 the oldest.
pub fn scores_of(keys: &[Vec<f32>], values: &[Vec<f32>], sinks: u64, lag: u64, cross_scoring: bool) -> Vec<f64> {
    let m = keys.len() as u64;
    let mut scores = vec![1.0; m as usize];
    // 1. Short cache: the sinks 1.0, the others by age.
    if m < sinks + 2 * lag {
        for i in sinks..m {
            scores[i as usize] = (i - sinks) as f64 / (m - sinks) as f64;
        }
        return scores;
    }
    // 2. Partitions 0 .. P - 2 are judged, each against the next.
    let partitions = (m - sinks) / lag;
    let lag = lag as usize;
    for j in 0..(partitions - 1) as usize {
        let start = sinks as usize + j * lag;
        let (part, reference) = (start..start + lag, start + lag..start + 2 * lag);
        // 3 and 4: the keys' weights, then the values'.
        let wk = softmax(&spreads(&keys[part.clone()], &keys[reference.clone()]));
        let wv = softmax(&spreads(&values[part], &values[reference]));
        // 5. Judgement.
        let a: Vec<f64> = wk.iter().zip(&wv).map(|(k, v)| (k + v) / 2.0).collect();
        // 6. Score.
        if cross_scoring {
            scores[start..start + lag].copy_from_slice(&a);
        } else {
            for (i, r) in ranks(&a).into_iter().enumerate() {
                scores[start + i] = r as f64 / lag as f64;
            }
        }
    }
    scores
}

impl Policy for LagKv {
    fn name(&self) -> &'static str {
        "lagkv"
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
    /// Appends a placeholder key and value per admitted slot, which
    /// `record_keys` and `record_values` set in the same step.
    fn admit(&mut self, count: usize) {
        self.keys.resize(self.keys.len() + count, Vec::new());
        self.values.resize(self.values.len() + count, Vec::new());
    }
    fn reads_keys(&self) -> bool {
        true
    }
    /// Keys and values, each at least 2 long (spec/tensors.md#checks, 1.5
    /// and 1.6).
    fn tensor_needs(&self) -> TensorNeeds {
        TensorNeeds { keys: Some(LEAST_DIM), values: Some(LEAST_DIM) }
    }
    /// The admitted positions are the last `keys.len() / head_dim` slots:
    /// each keeps its key until the slot is forgotten.
    fn record_keys(&mut self, keys: &[f32], head_dim: usize) {
        let start = self.keys.len() - keys.len() / head_dim;
        for (slot, key) in self.keys[start..].iter_mut().zip(keys.chunks_exact(head_dim)) {
            *slot = key.to_vec();
        }
    }
    /// As `record_keys`, for the values.
    fn record_values(&mut self, values: &[f32], value_dim: usize) {
        let start = self.values.len() - values.len() / value_dim;
        for (slot, value) in self.values[start..].iter_mut().zip(values.chunks_exact(value_dim)) {
            *slot = value.to_vec();
        }
    }
    /// As `knorm`'s: `budget`, or at a prefill step the ratio budget with
    /// `ratio_ppm` above 0, or none at a decode step with `prefill_only` 1
    /// (spec/prefill.md#when-a-policy-evicts).
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        self.prefill.step_budget(self.budget, n, prefill)
    }
    /// Computed anew at each call, from the slots kept now: the harness
    /// asks only at a step that evicts, after its admissions. Every kept
    /// slot is a candidate (no recent window).
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        Some(scores_of(&self.keys, &self.values, self.sinks, self.lag, self.cross_scoring))
    }
    fn remove(&mut self, evicted: &[bool]) {
        for v in [&mut self.keys, &mut self.values] {
            let mut slot = 0;
            v.retain(|_| {
                let keep = !evicted[slot];
                slot += 1;
                keep
            });
        }
    }
}
