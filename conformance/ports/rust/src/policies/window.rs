//! `window`: keeps the latest `budget` positions, evicts the oldest.
//! Card: spec/policies/window.md.
use super::{resolve_params, Policy, Selection, BUDGET};
use crate::error::Result;

#[derive(Debug)]
pub struct Window {
    budget: u64,
}

impl Window {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("window", &[BUDGET], params)?;
        Ok(Window { budget: v[0] as u64 })
    }
}

impl Policy for Window {
    fn name(&self) -> &'static str {
        "window"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn record(&mut self, _attention: &[f32]) {}
    fn admit(&mut self, _count: usize) {}
    /// The `k` oldest kept positions (spec/policies/window.md#how-it-works).
    fn choose_victims(&mut self, _kept: &[u32], k: usize) -> Selection {
        Selection { victims: (0..k).collect(), cut: Vec::new() }
    }
    fn remove(&mut self, _evicted: &[bool]) {}
}
