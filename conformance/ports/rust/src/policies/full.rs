//! `full`: keeps every position, never evicts. Card: spec/policies/full.md.
use super::{resolve_params, Policy, Selection};
use crate::error::Result;

#[derive(Debug)]
pub struct Full;

impl Full {
    /// `full` takes no parameters: every parameter is refused as unknown.
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        resolve_params("full", &[], params)?;
        Ok(Full)
    }
}

impl Policy for Full {
    fn name(&self) -> &'static str {
        "full"
    }
    fn budget(&self) -> Option<u64> {
        None
    }
    fn record(&mut self, _attention: &[f32]) {}
    fn admit(&mut self, _count: usize) {}
    fn choose_victims(&mut self, _kept: &[u32], _k: usize) -> Selection {
        Selection::default()
    }
    fn remove(&mut self, _evicted: &[bool]) {}
}
