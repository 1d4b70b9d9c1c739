//! `streamingllm`: keeps the first `sinks` positions for good and the latest
//! `budget - sinks`; at every step the victims are the non-sinks by
//! ascending position, then the sinks, which only a ratio budget below the
//! sinks reaches. Card: spec/policies/streamingllm.md; the span
//! parameters after the prefill parameters (spec/spans.md#parameters),
//! then `slack` and `interval` (spec/triggers.md#parameters), then `block`
//! (spec/blocks.md#parameters). By blocks it takes the oldest closed
//! blocks after the sinks' (`Policy::choose_blocks`' default over the
//! candidate blocks, which start after the kept sinks).
use super::{prefill_options, resolve_params, retain_slots, ParamSpec, Policy, Selection, BUDGET, PREFILL_PARAMS};
use crate::blocks::{span_values, BlockOptions, POSITIONAL_BLOCK_PARAMS};
use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::prefill::{check_prefill_rules, PrefillOptions};
use crate::spans::{SpanOptions, SPAN_PARAMS};
use crate::triggers::{TriggerOptions, TRIGGER_PARAMS};

const SINKS: ParamSpec = ParamSpec { name: "sinks", default: 4, min: 0, max: 4294967294 };

#[derive(Debug)]
pub struct StreamingLlm {
    budget: u64,
    sinks: u64,
    prefill: PrefillOptions,
    spans: SpanOptions,
    triggers: TriggerOptions,
    blocks: BlockOptions,
    /// How many positions were ever admitted.
    admitted: u64,
    /// Per kept slot: is it a sink, one of the first `sinks` positions
    /// ever admitted (spec/harness.md#protected-positions)?
    sink: Vec<bool>,
}

impl StreamingLlm {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let specs: Vec<ParamSpec> = [BUDGET, SINKS]
            .iter()
            .chain(PREFILL_PARAMS.iter())
            .chain(SPAN_PARAMS.iter())
            .chain(TRIGGER_PARAMS.iter())
            .chain(POSITIONAL_BLOCK_PARAMS.iter())
            .copied()
            .collect();
        let v = resolve_params("streamingllm", &specs, params)?;
        let (budget, sinks) = (v[0], v[1]);
        if sinks >= budget {
            return Err(Refusal::new(
                Category::InvalidParameter,
                Subject::new(Check::Rule, &["sinks", "budget"]),
                format!("streamingllm: sinks must be below budget, got sinks {sinks}, budget {budget}"),
            ));
        }
        let prefill = prefill_options(&v[2..4]);
        check_prefill_rules("streamingllm", None, false, prefill, None)?;
        let spans = SpanOptions::from_params(&SPAN_PARAMS, &v[4..11]);
        spans.check("streamingllm", Some(prefill), Some(budget as u64), Some(sinks as u64))?;
        let triggers = TriggerOptions::from_params(&v[11..13]);
        triggers.check("streamingllm", Some(prefill), None, Some(spans))?;
        let blocks = BlockOptions::from_params(&v[13..14]);
        let [evict_at, context_shift] = span_values(spans);
        blocks.check(
            "streamingllm",
            &[("budget", budget as u64), ("sinks", sinks as u64)],
            &[("ratio_ppm", prefill.ratio_ppm as u64), evict_at, context_shift],
        )?;
        Ok(StreamingLlm {
            budget: budget as u64,
            sinks: sinks as u64,
            prefill,
            spans,
            triggers,
            blocks,
            admitted: 0,
            sink: Vec::new(),
        })
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
    fn admit(&mut self, count: usize) {
        for _ in 0..count {
            self.sink.push(self.admitted < self.sinks);
            self.admitted += 1;
        }
    }
    fn step_budget(&self, n: usize, prefill: bool) -> Option<u64> {
        self.prefill.step_budget(self.budget, n, prefill)
    }
    /// The first `k` kept slots in the order non-sinks by ascending
    /// position, then sinks by ascending position
    /// (spec/policies/streamingllm.md#at-prefill). With every sink kept and
    /// a step budget above `sinks` these are `kept[S : S + k]`, the card's
    /// rule (spec/policies/streamingllm.md#how-it-works). Before admission
    /// (`evict_at` above 0) `k` is at most the non-sinks kept, so these are
    /// non-sinks by ascending position (spec/spans.md#when-room-is-made);
    /// so too with `context_shift` 1, whose `d` is at most the kept
    /// non-sinks minus one: the oldest `d` non-sinks
    /// (spec/spans.md#context-shift).
    fn choose_victims(&mut self, _kept: &[u32], k: usize) -> Selection {
        let non_sinks = (0..self.sink.len()).filter(|&i| !self.sink[i]);
        let sinks = (0..self.sink.len()).filter(|&i| self.sink[i]);
        Selection { victims: non_sinks.chain(sinks).take(k).collect(), cut: Vec::new() }
    }
    fn remove(&mut self, evicted: &[bool]) {
        retain_slots(&mut self.sink, 1, evicted);
    }
    fn span_options(&self) -> SpanOptions {
        self.spans
    }
    /// Sinks are the first positions ever admitted, so the kept ones are
    /// the first kept slots.
    fn sinks_kept(&self) -> usize {
        let n = self.sink.iter().take_while(|&&s| s).count();
        debug_assert!(self.sink[n..].iter().all(|&s| !s));
        n
    }
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
}
