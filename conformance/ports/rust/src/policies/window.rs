//! `window`: keeps the latest `budget` positions, evicts the oldest.
//! Card: spec/policies/window.md; the span parameters after `budget`
//! (spec/spans.md#parameters), then `slack` and `interval`
//! (spec/triggers.md#parameters), then `block` (spec/blocks.md#parameters).
//! By blocks it takes the oldest closed blocks
//! (`Policy::choose_blocks`' default).
use super::{resolve_params, ParamSpec, Policy, Selection, BUDGET};
use crate::blocks::{span_values, BlockOptions, POSITIONAL_BLOCK_PARAMS};
use crate::error::Result;
use crate::spans::{SpanOptions, SPAN_PARAMS};
use crate::triggers::{TriggerOptions, TRIGGER_PARAMS};

#[derive(Debug)]
pub struct Window {
    budget: u64,
    spans: SpanOptions,
    triggers: TriggerOptions,
    blocks: BlockOptions,
}

impl Window {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let specs: Vec<ParamSpec> =
            [BUDGET].iter().chain(SPAN_PARAMS.iter()).chain(TRIGGER_PARAMS.iter()).chain(POSITIONAL_BLOCK_PARAMS.iter()).copied().collect();
        let v = resolve_params("window", &specs, params)?;
        let spans = SpanOptions::from_params(&SPAN_PARAMS, &v[1..8]);
        spans.check("window", None, Some(v[0] as u64), None)?;
        let triggers = TriggerOptions::from_params(&v[8..10]);
        triggers.check("window", None, None, Some(spans))?;
        let blocks = BlockOptions::from_params(&v[10..11]);
        blocks.check("window", &[("budget", v[0] as u64)], &span_values(spans))?;
        Ok(Window { budget: v[0] as u64, spans, triggers, blocks })
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
    /// The `k` oldest kept positions (spec/policies/window.md#how-it-works),
    /// after admission or, with `evict_at` above 0, before it
    /// (spec/spans.md#when-room-is-made: `window` takes the oldest), or
    /// with `context_shift` 1 the shift's `d` oldest, every kept position
    /// being one that may go (spec/spans.md#context-shift).
    fn choose_victims(&mut self, _kept: &[u32], k: usize) -> Selection {
        Selection { victims: (0..k).collect(), cut: Vec::new() }
    }
    fn remove(&mut self, _evicted: &[bool]) {}
    fn span_options(&self) -> SpanOptions {
        self.spans
    }
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
}
