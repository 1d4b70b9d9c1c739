//! `tova`: evicts the lowest latest attention weight (binary32, compared
//! widened). Card: spec/policies/tova.md.
use super::{
    check_recent_below_budget, head_options, resolve_params, retain_slots, Policy, with_head_params, BUDGET,
    RECENT_WINDOW,
};
use crate::error::Result;
use crate::heads::HeadOptions;

#[derive(Debug)]
pub struct Tova {
    budget: u64,
    recent_window: u64,
    heads: HeadOptions,
    /// Per kept slot: its latest recorded weight, +0.0 if unobserved.
    latest: Vec<f32>,
}

impl Tova {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("tova", &with_head_params(&[BUDGET, RECENT_WINDOW]), params)?;
        check_recent_below_budget("tova", v[0], v[1])?;
        Ok(Tova {
            budget: v[0] as u64,
            recent_window: v[1] as u64,
            heads: head_options(&v[2..]),
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
    fn admit(&mut self, count: usize) {
        self.latest.resize(self.latest.len() + count, 0.0);
    }
    fn scores(&self) -> Option<Vec<f64>> {
        Some(self.latest.iter().map(|&w| w as f64).collect())
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.latest, 1, evicted);
    }
}
