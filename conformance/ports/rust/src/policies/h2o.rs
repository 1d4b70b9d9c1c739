//! `h2o`: evicts the lowest cumulative attention since admission, summed in
//! binary64 in step order. Card: spec/policies/h2o.md.
use super::{
    check_recent_below_budget, head_options, resolve_params, retain_slots, Policy, with_head_params, BUDGET,
    RECENT_WINDOW,
};
use crate::error::Result;
use crate::heads::HeadOptions;

#[derive(Debug)]
pub struct H2o {
    budget: u64,
    recent_window: u64,
    heads: HeadOptions,
    /// Per kept slot: the binary64 sum of its recorded weights.
    cumulative: Vec<f64>,
}

impl H2o {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("h2o", &with_head_params(&[BUDGET, RECENT_WINDOW]), params)?;
        check_recent_below_budget("h2o", v[0], v[1])?;
        Ok(H2o {
            budget: v[0] as u64,
            recent_window: v[1] as u64,
            heads: head_options(&v[2..]),
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
    fn admit(&mut self, count: usize) {
        self.cumulative.resize(self.cumulative.len() + count, 0.0);
    }
    fn scores(&self) -> Option<Vec<f64>> {
        Some(self.cumulative.clone())
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.cumulative, 1, evicted);
    }
}
