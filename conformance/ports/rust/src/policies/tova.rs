//! `tova`: evicts the lowest latest attention weight (binary32, compared
//! widened); at a prefill step the latest weights become the last gathered
//! query row. Card: spec/policies/tova.md.
use super::{
    check_recent_below_budget, head_options, prefill_options, resolve_params, retain_slots, with_shared_params,
    ParamSpec, Policy, QueryRows, BUDGET, RECENT_WINDOW,
};
use crate::blocks::BlockOptions;
use crate::error::Result;
use crate::heads::HeadOptions;
use crate::prefill::{check_prefill_rules, PrefillOptions};
use crate::triggers::TriggerOptions;

const PROTECT_NEWEST: ParamSpec = ParamSpec { name: "protect_newest", default: 0, min: 0, max: 1 };

#[derive(Debug)]
pub struct Tova {
    budget: u64,
    recent_window: u64,
    heads: HeadOptions,
    prefill: PrefillOptions,
    /// `protect_newest` 1: at a prefill step the newest kept position is
    /// not a candidate (spec/policies/tova.md#at-prefill).
    protect_newest: bool,
    triggers: TriggerOptions,
    /// `block` and `block_score` (spec/blocks.md#parameters).
    blocks: BlockOptions,
    /// Per kept slot: its latest recorded weight, +0.0 if unobserved.
    latest: Vec<f32>,
}

impl Tova {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("tova", &with_shared_params(&[BUDGET, RECENT_WINDOW], &[PROTECT_NEWEST]), params)?;
        check_recent_below_budget("tova", v[0], v[1])?;
        let heads = head_options(&v[2..6]);
        let prefill = prefill_options(&v[6..8]);
        check_prefill_rules("tova", Some(v[1]), heads.adaptive, prefill, None)?;
        let triggers = TriggerOptions::from_params(&v[9..11]);
        triggers.check("tova", Some(prefill), Some(heads.adaptive), None)?;
        let blocks = BlockOptions::from_params(&v[11..13]);
        blocks.check(
            "tova",
            &[("budget", v[0] as u64), ("recent_window", v[1] as u64)],
            &[("ratio_ppm", prefill.ratio_ppm as u64), ("adaptive", heads.adaptive as u64)],
        )?;
        Ok(Tova {
            budget: v[0] as u64,
            recent_window: v[1] as u64,
            heads,
            prefill,
            protect_newest: v[8] == 1,
            triggers,
            blocks,
            latest: Vec::new(),
        })
    }
}

impl Policy for Tova {
    fn name(&self) -> &'static str {
        "tova"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn head_options(&self) -> Option<HeadOptions> {
        Some(self.heads)
    }
    fn record(&mut self, attention: &[f32]) {
        self.latest.copy_from_slice(attention);
    }
    /// The last gathered query row, which covers every kept slot, newest
    /// included, replaces the latest weights.
    fn record_queries(&mut self, rows: &QueryRows) {
        let last = rows.count() - 1;
        debug_assert_eq!(rows.covered(last), self.latest.len());
        for (l, w) in self.latest.iter_mut().zip(rows.gathered(last)) {
            *l = w;
        }
    }
    fn admit(&mut self, count: usize) {
        self.latest.resize(self.latest.len() + count, 0.0);
    }
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        self.prefill.step_budget(self.budget, n, prefill)
    }
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        Some(self.latest.iter().map(|&w| w as f64).collect())
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    /// Outside the recent window; with `protect_newest` 1 at a prefill
    /// step, not the newest kept slot either.
    fn candidates(&self, n: usize, prefill: bool) -> usize {
        let outside = n.saturating_sub(self.recent_window as usize);
        if prefill && self.protect_newest {
            outside.min(n.saturating_sub(1))
        } else {
            outside
        }
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.latest, 1, evicted);
    }
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
}
