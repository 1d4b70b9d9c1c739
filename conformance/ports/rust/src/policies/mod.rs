//! What the policies share: the `Policy` trait, the parameters several
//! cards take and their rules, and the ranking rule. Spec:
//! spec/harness.md#configuration, spec/harness.md#victims. The names live
//! in `registry.rs`, the parameter checks in `params.rs`.

use crate::blocks::{BlockOptions, SCORED_BLOCK_PARAMS};
use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::heads::{Aggregation, Granularity, HeadOptions};
use crate::prefill::{PrefillOptions, PREFILL_ONLY, RATIO_PPM};
pub use crate::params::{resolve_params, ParamSpec};
pub use crate::prefill::QueryRows;
use crate::spans::SpanOptions;
pub use crate::tensors::TensorNeeds;
use crate::triggers::{TriggerOptions, TRIGGER_PARAMS};

pub mod full;
pub mod h2o;
pub mod keydiff;
#[cfg(test)]
mod keydiff_tests;
pub mod knorm;
#[cfg(test)]
mod knorm_tests;
pub mod lagkv;
#[cfg(test)]
mod lagkv_tests;
pub mod openvino;
#[cfg(test)]
mod openvino_tests;
pub mod pyramid;
#[cfg(test)]
mod pyramid_tests;
pub mod random;
pub mod simlayerkv;
#[cfg(test)]
mod simlayerkv_tests;
pub mod snapkv;
pub mod streamingllm;
pub mod tova;
pub mod window;

/// What a policy chose at an evicting step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Victim slots, in the order chosen (rank order for score-based policies).
    pub victims: Vec<usize>,
    /// Score-based policies: the victims then up to four more candidates, in
    /// rank order, with the binary64 score each was ranked by
    /// (spec/vectors.md#the-cut). Empty for the others.
    pub cut: Vec<(usize, f64)>,
}

/// One eviction policy, as it runs for one head of one kept set. The
/// harness ([`crate::harness::KeptSet`]) owns the kept positions, validates
/// each step, then calls `record` (a decode step's row) or, after
/// admission, `record_queries` (a prefill step's query rows), `admit` and,
/// when the step budget requires it, ranks the set's heads' combined
/// `scores` (score-based policies) or calls `choose_victims` (the others),
/// then `remove` (spec/harness.md#the-decode-step,
/// spec/prefill.md#the-prefill-step, spec/heads.md#kept-sets). `prefill`
/// says whether the step is a prefill step (one that carries query rows).
pub trait Policy {
    fn name(&self) -> &'static str;
    /// Most positions kept after a step; `None` for unbounded (`full`).
    fn budget(&self) -> Option<u64>;
    /// `granularity` and `aggregation` for the policies that read attention
    /// (spec/heads.md#parameters); `None` for the others, which keep one
    /// kept set whatever the head count.
    fn head_options(&self) -> Option<HeadOptions> {
        None
    }
    /// Record one validated attention vector, one weight per kept slot.
    fn record(&mut self, attention: &[f32]);
    /// Prefill: record this head's gathered query rows by the card's
    /// prefill rule ("At prefill"), after the chunk's admission. Policies
    /// that read no attention ignore them. `rows` also holds the head's
    /// gathered column totals when the step carries them
    /// (spec/prefill.md#column-totals); only `h2o` reads them.
    fn record_queries(&mut self, _rows: &QueryRows) {}
    /// Append per-slot state for `count` newly admitted positions.
    fn admit(&mut self, count: usize);
    /// The step budget of a set keeping `n` positions after admission
    /// (spec/prefill.md#when-a-policy-evicts); `None`: the step evicts
    /// nothing. Without the prefill parameters, `budget` at every step.
    fn step_budget(&self, _n: usize, _prefill: bool) -> Option<u64> {
        self.budget()
    }
    /// How many of the `n` kept slots count against the step budget: all,
    /// except the window of `snapkv`'s `window_budget` 1 at a prefill step.
    fn counted(&self, n: usize, _prefill: bool) -> usize {
        n
    }
    /// Score-based policies: this head's binary64 score of every kept slot
    /// (after admission), the score its card ranks by at this step. `None`
    /// for the others.
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        None
    }
    /// The latest kept slots never evicted (score-based policies and
    /// `random`; 0 for the positional policies).
    fn recent_window(&self) -> usize {
        0
    }
    /// Score-based policies: how many kept slots, from the oldest, are
    /// candidates when the set keeps `n` (under a shared budget a set may
    /// keep fewer than its window). Candidates are always a prefix of the
    /// kept slots.
    fn candidates(&self, n: usize, _prefill: bool) -> usize {
        n.saturating_sub(self.recent_window())
    }
    /// Positional policies and `random`: choose `k` victims among the kept
    /// slots (`kept` after admission). Score-based policies are ranked by
    /// their kept set from `scores`.
    fn choose_victims(&mut self, _kept: &[u32], _k: usize) -> Selection {
        unreachable!("{} is ranked by its scores", self.name())
    }
    /// Drop per-slot state of the slots marked in `evicted`.
    fn remove(&mut self, evicted: &[bool]);
    /// The span parameters (spec/spans.md#parameters) of the positional
    /// policies; all 0 for the others, which do not take them.
    fn span_options(&self) -> SpanOptions {
        SpanOptions::default()
    }
    /// How many kept slots are sinks (`streamingllm`: those of the first
    /// `sinks` positions ever admitted still kept). They are the first
    /// kept slots, are never evicted before admission and are in every
    /// later query's span (spec/spans.md#span-rules).
    fn sinks_kept(&self) -> usize {
        0
    }
    /// `slack` and `interval` (spec/triggers.md#parameters): when a decode
    /// step evicts. All 0 for `full`, which does not take them.
    fn trigger_options(&self) -> TriggerOptions {
        TriggerOptions::default()
    }
    /// `block` and `block_score` (spec/blocks.md#parameters): whole blocks
    /// evicted. `block` 1 for `full`, which does not take them.
    fn block_options(&self) -> BlockOptions {
        BlockOptions::default()
    }
    /// Positional policies and `random`, evicting by blocks
    /// (spec/blocks.md#ranking-blocks): choose `k` of the `candidates`
    /// candidate blocks, as indices among them in ascending order of first
    /// position. By default the `k` oldest (`window`, `streamingllm`);
    /// `random` draws. Score-based policies are ranked by their kept set.
    fn choose_blocks(&mut self, _candidates: usize, k: usize) -> Vec<usize> {
        (0..k).collect()
    }
    /// `openvino` (spec/policies/openvino.md): one kept set whatever the
    /// head count (it takes no `granularity`), whose one state is handed
    /// every query head's row (`record`) or query rows (`record_queries`),
    /// head 0 first, and sums them itself. `false` for the others: a
    /// policy that reads attention has one state per covered head
    /// (`head_options`), one that does not is handed nothing.
    fn reads_every_head(&self) -> bool {
        false
    }
    /// Whether a kept set ranks the policy's `scores` (score-based: the
    /// policies that read attention, keys or every head) or asks it for
    /// its victims (`choose_victims`, `choose_blocks`: the positional
    /// policies and `random`). `simlayerkv` (spec/policies/simlayerkv.md)
    /// reads every head's query rows and ranks nothing.
    fn ranks_by_scores(&self) -> bool {
        self.head_options().is_some() || self.reads_every_head()
    }
    /// Called once a step, after the step's admissions and every record
    /// (a decode step's rows come before admission, a prefill step's query
    /// rows after it) and before any eviction. `openvino` registers its
    /// step's scores here (spec/policies/openvino.md#how-it-works: "A
    /// step records nothing before its admissions"); the others record as
    /// they are handed their rows.
    fn end_of_records(&mut self) {}
    /// Whether a step evicts whole closed blocks
    /// (spec/blocks.md#how-many-blocks-go, #candidates, #ranking-blocks):
    /// with `block` above 1; and always for `openvino`, whose candidates
    /// (blocks of one slot with `block` 1) start past its start area.
    fn evicts_by_blocks(&self) -> bool {
        self.block_options().by_blocks()
    }
    /// Whether the policy reads a scenario's keys
    /// (spec/tensors.md#policies-that-read-keys: `knorm`, `keydiff`, `lagkv`). Such a policy
    /// takes `granularity` (`head_options`) but reads no attention: a kept
    /// set holds one state per KV head it covers, is handed no row and no
    /// query row, and combines its KV heads' `scores`; a scenario without
    /// `head_dim` is refused before its first step.
    fn reads_keys(&self) -> bool {
        false
    }
    /// A policy that reads keys: this state's KV head's keys of the step's
    /// admitted positions (`keys`, `admit x head_dim` binary32 values,
    /// position ascending), handed after `admit`
    /// (spec/tensors.md#what-a-policy-sees). The others are never handed
    /// keys.
    fn record_keys(&mut self, _keys: &[f32], _head_dim: usize) {}
    /// What the policy reads of a scenario's tensors
    /// (spec/tensors.md#checks, 1.5 and 1.6): the least `head_dim` its card
    /// names if it reads keys (1 for `knorm` and `keydiff`), the least
    /// `value_dim` if it reads values (`lagkv`: 2 and 2).
    fn tensor_needs(&self) -> TensorNeeds {
        TensorNeeds { keys: self.reads_keys().then_some(1), values: None }
    }
    /// A policy that reads values: this state's KV head's values of the
    /// step's admitted positions (`values`, `admit x value_dim` binary32
    /// values, position ascending), handed after `record_keys`
    /// (spec/tensors.md#what-a-policy-sees). The others are never handed
    /// values.
    fn record_values(&mut self, _values: &[f32], _value_dim: usize) {}
}

/// Keep only the elements of a per-slot vector (with `stride` entries per
/// slot) whose slot is not marked.
pub(crate) fn retain_slots<T: Copy>(v: &mut Vec<T>, stride: usize, evicted: &[bool]) {
    let mut w = 0;
    for (slot, &gone) in evicted.iter().enumerate() {
        if !gone {
            if w != slot {
                for j in 0..stride {
                    v[w * stride + j] = v[slot * stride + j];
                }
            }
            w += 1;
        }
    }
    v.truncate(w * stride);
}

/// Rank candidate slots `0..candidates` by score ascending, then position
/// ascending (spec/harness.md#victims), and take the first `k`. The cut is
/// the victims and up to four more (spec/vectors.md#the-cut).
pub fn rank(kept: &[u32], scores: &[f64], candidates: usize, k: usize) -> Selection {
    debug_assert!(k <= candidates);
    let cmp = |a: &usize, b: &usize| {
        scores[*a]
            .partial_cmp(&scores[*b])
            .expect("scores are never NaN")
            .then(kept[*a].cmp(&kept[*b]))
    };
    let mut idx: Vec<usize> = (0..candidates).collect();
    let cut_len = (k + 4).min(candidates);
    if cut_len == 0 {
        return Selection::default();
    }
    if cut_len < candidates {
        idx.select_nth_unstable_by(cut_len - 1, cmp);
        idx.truncate(cut_len);
    }
    idx.sort_unstable_by(cmp);
    Selection {
        victims: idx[..k].to_vec(),
        cut: idx.iter().map(|&i| (i, scores[i])).collect(),
    }
}

pub(crate) const BUDGET: ParamSpec = ParamSpec { name: "budget", default: 512, min: 1, max: 4294967295 };
pub(crate) const RECENT_WINDOW: ParamSpec =
    ParamSpec { name: "recent_window", default: 16, min: 0, max: 4294967294 };
/// The head parameters of the policies that read attention, listed after
/// each card's own (spec/heads.md#parameters).
pub(crate) const GRANULARITY: ParamSpec = ParamSpec { name: "granularity", default: 1, min: 0, max: 2 };
pub(crate) const AGGREGATION: ParamSpec = ParamSpec { name: "aggregation", default: 0, min: 0, max: 2 };
/// The shared budget of AdaKV (spec/heads.md#head-adaptive-budgets), listed
/// after `aggregation`.
pub(crate) const ADAPTIVE: ParamSpec = ParamSpec { name: "adaptive", default: 0, min: 0, max: 1 };
pub(crate) const SAFEGUARD_PERMILLE: ParamSpec =
    ParamSpec { name: "safeguard_permille", default: 200, min: 0, max: 1000 };
/// The four head parameters, in card order after each policy's own.
pub(crate) const HEAD_PARAMS: [ParamSpec; 4] = [GRANULARITY, AGGREGATION, ADAPTIVE, SAFEGUARD_PERMILLE];

/// `prefill_only` and `ratio_ppm`, listed after the head parameters
/// (spec/prefill.md#when-a-policy-evicts).
pub(crate) const PREFILL_PARAMS: [ParamSpec; 2] = [PREFILL_ONLY, RATIO_PPM];

/// The table of a policy that reads attention: its own parameters, the
/// head parameters, the prefill parameters, its own prefill parameters
/// (`normalize`, `protect_newest`, `window_reduce`, ...), then the
/// trigger parameters (spec/triggers.md#parameters), then `block` and
/// `block_score` (spec/blocks.md#parameters), in card order.
pub(crate) fn with_shared_params(own: &[ParamSpec], own_prefill: &[ParamSpec]) -> Vec<ParamSpec> {
    own.iter()
        .chain(HEAD_PARAMS.iter())
        .chain(PREFILL_PARAMS.iter())
        .chain(own_prefill)
        .chain(TRIGGER_PARAMS.iter())
        .chain(SCORED_BLOCK_PARAMS.iter())
        .copied()
        .collect()
}

/// `granularity`, `aggregation`, `adaptive` and `safeguard_permille` from
/// their range-checked values, in that order.
pub(crate) fn head_options(v: &[i64]) -> HeadOptions {
    HeadOptions {
        granularity: Granularity::from_param(v[0]),
        aggregation: Aggregation::from_param(v[1]),
        adaptive: v[2] == 1,
        safeguard_permille: v[3] as u32,
    }
}

/// `prefill_only` and `ratio_ppm` from their range-checked values.
pub(crate) fn prefill_options(v: &[i64]) -> PrefillOptions {
    PrefillOptions::from_params(v)
}

/// The shared rule `recent_window < budget` (spec/harness.md#protected-positions).
pub(crate) fn check_recent_below_budget(policy: &str, budget: i64, recent_window: i64) -> Result<()> {
    if recent_window >= budget {
        return Err(Refusal::new(
            Category::InvalidParameter,
            Subject::new(Check::Rule, &["recent_window", "budget"]),
            format!(
                "{policy}: recent_window must be below budget, got recent_window {recent_window}, budget {budget}"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{build, REGISTRY};

    fn p(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn category(name: &str, params: &[(&str, i64)]) -> Option<Category> {
        build(name, &p(params), 0).err().map(|r| r.category)
    }

    #[test]
    fn configuration_refusals() {
        assert_eq!(category("Window", &[]), Some(Category::UnknownPolicy));
        assert_eq!(category("lru", &[]), Some(Category::UnknownPolicy));
        assert_eq!(category("full", &[("budget", 4)]), Some(Category::InvalidParameter));
        assert_eq!(category("window", &[("budget", 0)]), Some(Category::InvalidParameter));
        assert_eq!(category("window", &[("budget", 1i64 << 32)]), Some(Category::InvalidParameter));
        assert_eq!(category("window", &[("budget", 3), ("budget", 3)]), Some(Category::InvalidParameter));
        assert_eq!(category("window", &[("sinks", 3)]), Some(Category::InvalidParameter));
        assert_eq!(category("streamingllm", &[("budget", 4), ("sinks", 4)]), Some(Category::InvalidParameter));
        assert_eq!(category("h2o", &[("budget", 8)]), Some(Category::InvalidParameter));
        assert_eq!(category("tova", &[("budget", 2), ("recent_window", 2)]), Some(Category::InvalidParameter));
        assert_eq!(category("snapkv", &[("pool_kernel", 4)]), Some(Category::InvalidParameter));
        assert_eq!(category("snapkv", &[("obs_window", 0)]), Some(Category::InvalidParameter));
        assert_eq!(category("random", &[("recent_window", -1)]), Some(Category::InvalidParameter));
        for name in REGISTRY {
            assert_eq!(category(name, &[]), None, "{name} at its defaults");
        }
    }

    /// The subject as spec/harness.md#subjects writes it: "range budget".
    fn subject(name: &str, params: &[(&str, i64)]) -> Option<String> {
        build(name, &p(params), 0).err().map(|r| {
            std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
        })
    }

    #[test]
    fn configuration_subjects() {
        // spec/harness.md#subjects, the first table: one parameter, budget,
        // refused as unknown, repeated, out of range and by a rule.
        assert_eq!(subject("lru", &[("budget", 4)]).as_deref(), Some("unknown name"));
        assert_eq!(subject("full", &[("budget", 4)]).as_deref(), Some("unknown budget"));
        assert_eq!(subject("window", &[("budget", 4), ("budget", 4)]).as_deref(), Some("repeated budget"));
        assert_eq!(subject("window", &[("budget", 0)]).as_deref(), Some("range budget"));
        assert_eq!(subject("h2o", &[("budget", 4), ("recent_window", 4)]).as_deref(), Some("rule recent_window budget"));
        // Check 2 before check 3: an unknown name after a bad value.
        assert_eq!(subject("window", &[("budget", 0), ("foo", 1)]).as_deref(), Some("unknown foo"));
        // The second table: each rule names the parameters it relates.
        assert_eq!(subject("streamingllm", &[("budget", 4), ("sinks", 4)]).as_deref(), Some("rule sinks budget"));
        assert_eq!(subject("snapkv", &[("pool_kernel", 4)]).as_deref(), Some("rule pool_kernel"));
        assert_eq!(subject("window", &[("span_window", 2), ("span_chunk", 2)]).as_deref(), Some("rule span_window span_chunk"));
        assert_eq!(subject("window", &[("discard", 1)]).as_deref(), Some("rule discard context_shift"));
        assert_eq!(subject("window", &[("budget", 1), ("context_shift", 1)]).as_deref(), Some("rule context_shift budget"));
        let shift = |more: &[(&'static str, i64)]| {
            let mut v = vec![("budget", 8), ("sinks", 2), ("context_shift", 1)];
            v.extend_from_slice(more);
            subject("streamingllm", &v)
        };
        assert_eq!(shift(&[]), None);
        assert_eq!(shift(&[("ratio_ppm", 5)]).as_deref(), Some("rule context_shift ratio_ppm"));
        // The first not 0 of evict_at, prefill_only, ratio_ppm is named.
        assert_eq!(shift(&[("ratio_ppm", 5), ("prefill_only", 1)]).as_deref(), Some("rule context_shift prefill_only"));
        assert_eq!(subject("streamingllm", &[("budget", 3), ("sinks", 2), ("context_shift", 1)]).as_deref(), Some("rule context_shift budget sinks"));
        assert_eq!(subject("tova", &[("ratio_ppm", 5)]).as_deref(), Some("rule ratio_ppm recent_window"));
        let ada = |more: &[(&'static str, i64)]| {
            let mut v = vec![("recent_window", 0), ("adaptive", 1)];
            v.extend_from_slice(more);
            subject("snapkv", &v)
        };
        assert_eq!(ada(&[("window_budget", 1), ("ratio_ppm", 5)]).as_deref(), Some("rule adaptive ratio_ppm"));
        assert_eq!(ada(&[("window_budget", 1)]).as_deref(), Some("rule adaptive window_budget"));
        assert_eq!(ada(&[("prefill_only", 1), ("ratio_ppm", 5)]).as_deref(), Some("rule adaptive prefill_only"));
    }

    #[test]
    fn message_names_parameter_value_and_rule() {
        let r = build("window", &p(&[("budget", 0)]), 0).err().unwrap();
        assert_eq!(r.message, "window: budget must be in [1, 4294967295], got 0");
        let r = build("full", &p(&[("budget", 5)]), 0).err().unwrap();
        assert_eq!(r.message, "full: unknown parameter 'budget'; full takes spans, span_window, span_chunk");
    }

    #[test]
    fn rank_breaks_ties_by_position() {
        // harness.md#victims: candidates 4, 9, 12 score 0.5, 0.25, 0.25; 9 goes.
        let kept = [4u32, 9, 12, 13];
        let scores = [0.5, 0.25, 0.25, 0.0];
        let s = rank(&kept, &scores, 3, 1);
        assert_eq!(s.victims, vec![1]);
        assert_eq!(s.cut, vec![(1, 0.25), (2, 0.25), (0, 0.5)]);
    }
}
