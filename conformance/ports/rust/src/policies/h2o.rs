//! `h2o`: evicts the lowest cumulative attention since admission, summed in
//! binary64 in step order; at a prefill step, adds each slot's observed
//! attention from the query rows, or from the column totals when the step
//! carries them. Card: spec/policies/h2o.md.
use super::{
    check_recent_below_budget, head_options, prefill_options, resolve_params, retain_slots, with_shared_params,
    ParamSpec, Policy, QueryRows, BUDGET, RECENT_WINDOW,
};
use crate::blocks::BlockOptions;
use crate::error::Result;
use crate::heads::HeadOptions;
use crate::prefill::{check_prefill_rules, PrefillOptions};
use crate::triggers::TriggerOptions;

const NORMALIZE: ParamSpec = ParamSpec { name: "normalize", default: 0, min: 0, max: 1 };

#[derive(Debug)]
pub struct H2o {
    budget: u64,
    recent_window: u64,
    heads: HeadOptions,
    prefill: PrefillOptions,
    /// `normalize` 1: a prefill contribution is divided by the number of
    /// query rows that see the key (spec/policies/h2o.md#at-prefill).
    normalize: bool,
    triggers: TriggerOptions,
    /// `block` and `block_score` (spec/blocks.md#parameters).
    blocks: BlockOptions,
    /// Per kept slot: the binary64 sum of its recorded weights.
    cumulative: Vec<f64>,
}

impl H2o {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("h2o", &with_shared_params(&[BUDGET, RECENT_WINDOW], &[NORMALIZE]), params)?;
        check_recent_below_budget("h2o", v[0], v[1])?;
        let heads = head_options(&v[2..6]);
        let prefill = prefill_options(&v[6..8]);
        check_prefill_rules("h2o", Some(v[1]), heads.adaptive, prefill, None)?;
        let triggers = TriggerOptions::from_params(&v[9..11]);
        triggers.check("h2o", Some(prefill), Some(heads.adaptive), None)?;
        let blocks = BlockOptions::from_params(&v[11..13]);
        blocks.check(
            "h2o",
            &[("budget", v[0] as u64), ("recent_window", v[1] as u64)],
            &[("ratio_ppm", prefill.ratio_ppm as u64), ("adaptive", heads.adaptive as u64)],
        )?;
        Ok(H2o {
            budget: v[0] as u64,
            recent_window: v[1] as u64,
            heads,
            prefill,
            normalize: v[8] == 1,
            triggers,
            blocks,
            cumulative: Vec::new(),
        })
    }
}

impl Policy for H2o {
    fn name(&self) -> &'static str {
        "h2o"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn head_options(&self) -> Option<HeadOptions> {
        Some(self.heads)
    }
    fn record(&mut self, attention: &[f32]) {
        for (c, &w) in self.cumulative.iter_mut().zip(attention) {
            *c += w as f64;
        }
    }
    /// Each kept slot's observed attention: the binary64 sum, from +0.0 in
    /// ascending query position, of the gathered rows that cover it,
    /// divided by their number with `normalize` 1, then added to its sum in
    /// one addition (spec/policies/h2o.md#at-prefill).
    ///
    /// With column totals ("With column totals", spec 0.10.0) the
    /// contribution is the slot's gathered total instead, divided with
    /// `normalize` 1 by `min(R, a + c - p)`, the number of the `R` queries
    /// that see its position `p`, then added in one addition; the query
    /// rows are not read.
    fn record_queries(&mut self, rows: &QueryRows) {
        if let Some(r) = rows.total_rows() {
            for (i, sum) in self.cumulative.iter_mut().enumerate() {
                let mut c = rows.total(i);
                if self.normalize {
                    c /= rows.queries_seeing(i, r) as f64;
                }
                *sum += c;
            }
            return;
        }
        let n = self.cumulative.len();
        let mut contribution = vec![0.0f64; n];
        let mut seen = vec![0u64; n];
        for j in 0..rows.count() {
            for (i, w) in rows.gathered(j).enumerate() {
                contribution[i] += w as f64;
                seen[i] += 1;
            }
        }
        for ((sum, mut c), k) in self.cumulative.iter_mut().zip(contribution).zip(seen) {
            if self.normalize {
                c /= k as f64;
            }
            *sum += c;
        }
    }
    fn admit(&mut self, count: usize) {
        self.cumulative.resize(self.cumulative.len() + count, 0.0);
    }
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        self.prefill.step_budget(self.budget, n, prefill)
    }
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        Some(self.cumulative.clone())
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.cumulative, 1, evicted);
    }
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
}
