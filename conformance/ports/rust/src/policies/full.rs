//! `full`: keeps every position, never evicts. Card: spec/policies/full.md.
use super::{resolve_params, Policy, Selection};
use crate::error::Result;
use crate::spans::{SpanOptions, FULL_SPAN_PARAMS};

#[derive(Debug)]
pub struct Full {
    spans: SpanOptions,
}

impl Full {
    /// `full` takes only the span parameters, without `evict_at`
    /// (spec/spans.md#parameters); every other parameter is refused as
    /// unknown.
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("full", &FULL_SPAN_PARAMS, params)?;
        let spans = SpanOptions::from_params(&FULL_SPAN_PARAMS, &v);
        spans.check("full", None, None, None)?;
        Ok(Full { spans })
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
    fn span_options(&self) -> SpanOptions {
        self.spans
    }
}
