//! `streamingllm`: keeps the first `sinks` positions for good and the latest
//! `budget - sinks`. Card: spec/policies/streamingllm.md.
use super::{resolve_params, ParamSpec, Policy, Selection, BUDGET};
use crate::error::{Category, Refusal, Result};

const SINKS: ParamSpec = ParamSpec { name: "sinks", default: 4, min: 0, max: 4294967294 };

#[derive(Debug)]
pub struct StreamingLlm {
    budget: u64,
    sinks: u64,
}

impl StreamingLlm {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("streamingllm", &[BUDGET, SINKS], params)?;
        let (budget, sinks) = (v[0], v[1]);
        if sinks >= budget {
            return Err(Refusal::new(
                Category::InvalidParameter,
                format!("streamingllm: sinks must be below budget, got sinks {sinks}, budget {budget}"),
            ));
        }
        Ok(StreamingLlm { budget: budget as u64, sinks: sinks as u64 })
    }
}

impl Policy for StreamingLlm {
    fn name(&self) -> &'static str {
        "streamingllm"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn record(&mut self, _attention: &[f32]) {}
    fn admit(&mut self, _count: usize) {}
    /// `kept[S : len - W]`: the sinks are always slots `0..S`
    /// (spec/policies/streamingllm.md#how-it-works).
    fn choose_victims(&mut self, _kept: &[u32], k: usize) -> Selection {
        let s = self.sinks as usize;
        Selection { victims: (s..s + k).collect(), cut: Vec::new() }
    }
    fn remove(&mut self, _evicted: &[bool]) {}
}
