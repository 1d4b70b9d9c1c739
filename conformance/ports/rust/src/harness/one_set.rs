//! One kept set (`KeptSet`, spec/heads.md#kept-sets) and its decode step
//! (spec/harness.md#the-decode-step): record what each covered head sees
//! (spec/harness.md#what-a-policy-sees, spec/heads.md#what-each-head-records;
//! at a prefill step its query rows and column totals,
//! spec/prefill.md#what-a-policy-sees), or each covered KV head's keys of
//! the admitted positions (spec/tensors.md#what-a-policy-sees); make room before admission with
//! `evict_at` or the context shift (spec/spans.md#when-room-is-made,
//! spec/spans.md#context-shift); admit (spec/harness.md#chunked-admission) and
//! log the spans (spec/spans.md#the-log); evict down to the step budget
//! (spec/harness.md#budget, spec/harness.md#protected-positions,
//! spec/harness.md#victims, spec/prefill.md#when-a-policy-evicts), at a
//! decode step only when its trigger fires (spec/triggers.md#firing), ranking
//! the heads' combined scores (spec/heads.md#combining-heads-at-ranking-time);
//! with `block` above 1, in whole closed blocks (spec/blocks.md).
//! `Engine`: one set stepped directly (`Policy::Step`), with the checks of a
//! direct call (spec/harness.md#refusals); the single-head trace runs through
//! it.

use super::log::StepRecord;
use super::refusals::{check_weights, MAX_POSITION};
use crate::blocks::BlockOptions;
use crate::error::{Check, Refusal, Result};
use crate::heads::{combine, Aggregation};
use crate::policies::{rank, Policy, QueryRows, Selection};
use crate::prefill::Totals;
use crate::spans::{held_runs, query_spans};
use crate::tensors::StepVectors;
use crate::triggers::Trigger;

/// A kept set (spec/heads.md#kept-sets): kept positions with their own
/// budget, protected positions and victims, and one policy state per query
/// head it covers (for a policy that reads attention), one per KV head it
/// covers (for a policy that reads keys, spec/tensors.md#what-a-policy-sees)
/// or one state for the whole set (for the others).
pub struct KeptSet {
    pub(super) kept: Vec<u32>,
    /// The query heads the set covers, ascending.
    heads: Vec<usize>,
    /// The KV heads the set covers, ascending: those of its query heads
    /// (query head `h` belongs to KV head `h / G`).
    kv_heads: Vec<usize>,
    /// One state per covered head (`states[i]` is head `heads[i]`'s) for a
    /// policy that reads attention; one per covered KV head (`states[i]` is
    /// KV head `kv_heads[i]`'s) for a policy that reads keys; a single
    /// state otherwise.
    states: Vec<Box<dyn Policy>>,
    /// How the heads' scores combine (default `mean` for the policies that
    /// do not read attention, where there is nothing to combine).
    aggregation: Aggregation,
    /// When a decode step evicts (spec/triggers.md): the set's own
    /// interval count.
    trigger: Trigger,
}

impl KeptSet {
    /// A set covering the query heads `heads` of groups of `group` (`G =
    /// Hq / Hkv`), with `states` as above.
    pub(super) fn new(heads: Vec<usize>, group: usize, states: Vec<Box<dyn Policy>>, aggregation: Aggregation) -> Self {
        assert!(!states.is_empty());
        let trigger = Trigger::new(states[0].trigger_options(), states[0].budget());
        let mut kv_heads: Vec<usize> = heads.iter().map(|&h| h / group).collect();
        kv_heads.dedup();
        KeptSet { kept: Vec::new(), heads, kv_heads, states, aggregation, trigger }
    }

    /// The one-head set of a single-head policy.
    pub fn single(policy: Box<dyn Policy>) -> Self {
        let aggregation = policy.head_options().map_or(Aggregation::Mean, |o| o.aggregation);
        KeptSet::new(vec![0], 1, vec![policy], aggregation)
    }

    pub fn kept(&self) -> &[u32] {
        &self.kept
    }

    /// Is the set handed its heads' rows and query rows? A policy that
    /// reads keys reads no attention (spec/tensors.md#policies-that-read-keys).
    /// `simlayerkv` reads query rows (every head's) and ranks nothing.
    pub(super) fn reads_attention(&self) -> bool {
        let policy = &self.states[0];
        (policy.head_options().is_some() || policy.reads_every_head()) && !policy.reads_keys()
    }

    /// Is the set score-based, ranking its heads' combined `scores`
    /// (`h2o`, `tova`, `snapkv`, `openvino`, `knorm`, `keydiff`, `lagkv`)? The others choose
    /// their victims (`Policy::choose_victims`, `Policy::choose_blocks`).
    pub(super) fn ranks_by_scores(&self) -> bool {
        self.states[0].ranks_by_scores()
    }

    /// Does the set read keys (spec/tensors.md#policies-that-read-keys)?
    pub(super) fn reads_keys(&self) -> bool {
        self.states[0].reads_keys()
    }

    /// The state that records covered head `i` (the `i`-th of `heads`):
    /// its own, or the set's one state for a policy that reads every head
    /// (`openvino`, `Policy::reads_every_head`).
    fn state_of_head(&self, i: usize) -> usize {
        if self.states[0].reads_every_head() {
            0
        } else {
            i
        }
    }

    /// Record each covered head's row gathered at this set's kept positions
    /// (spec/heads.md#what-each-head-records): `weight(h, p)` is query head
    /// `h`'s weight of position `p` at this step (a full-cache row, or a
    /// trace head's generator, asked only for the kept positions).
    pub(super) fn record_with<W: Fn(usize, u32) -> f32>(&mut self, weight: &W, gathered: &mut Vec<f32>) {
        if !self.reads_attention() {
            return;
        }
        for (i, &h) in self.heads.iter().enumerate() {
            let s = self.state_of_head(i);
            gathered.clear();
            gathered.extend(self.kept.iter().map(|&p| weight(h, p)));
            self.states[s].record(gathered);
        }
    }

    /// Record one attention vector already gathered in kept order (a set
    /// with a single state).
    fn record_gathered(&mut self, attention: &[f32]) {
        debug_assert_eq!(self.states.len(), 1);
        self.states[0].record(attention);
    }

    /// Prefill: hand each covered head its `m` query rows (`queries`, the
    /// step's `Hq x m` rows, head 0's first) gathered at this set's kept
    /// positions after admission (spec/prefill.md#what-a-policy-sees); the
    /// step's queries are its last `m` positions, ending at `last`. With
    /// column totals, each covered head's totals too, gathered at the same
    /// kept positions (spec/prefill.md#column-totals: "as the rows are").
    pub(super) fn record_queries(&mut self, queries: &[&[f32]], m: usize, last: u64, totals: Option<Totals>) {
        if !self.reads_attention() {
            return;
        }
        let first_query = last + 1 - m as u64;
        for (i, &h) in self.heads.iter().enumerate() {
            let s = self.state_of_head(i);
            let mut rows = QueryRows::new(&self.kept, &queries[h * m..(h + 1) * m], first_query);
            if let Some(t) = totals {
                rows = rows.with_totals(&t.sums[h], t.rows);
            }
            self.states[s].record_queries(&rows);
        }
    }

    /// Hand each covered KV head's keys of the step's admitted positions,
    /// in ascending KV head order, to its state, after admission, then,
    /// to a policy that reads values, each covered KV head's values
    /// (spec/tensors.md#what-a-policy-sees). A set that reads no keys is
    /// handed nothing; a scenario without keys (values, `None`) hands no
    /// keys (values).
    pub(super) fn record_tensors(&mut self, keys: Option<StepVectors>, values: Option<StepVectors>) {
        if !self.reads_keys() {
            return;
        }
        debug_assert_eq!(self.states.len(), self.kv_heads.len());
        if let Some(keys) = keys {
            for (state, &g) in self.states.iter_mut().zip(&self.kv_heads) {
                state.record_keys(keys.head(g), keys.dim);
            }
        }
        let Some(values) = values else { return };
        if self.states[0].tensor_needs().values.is_none() {
            return;
        }
        for (state, &g) in self.states.iter_mut().zip(&self.kv_heads) {
            state.record_values(values.head(g), values.dim);
        }
    }

    /// The step's records are all handed (and its positions admitted):
    /// tell every state (`Policy::end_of_records`; `openvino` registers
    /// here), before any eviction.
    pub(super) fn end_of_records(&mut self) {
        for state in &mut self.states {
            state.end_of_records();
        }
    }

    fn admit(&mut self, first: u64, count: u64) {
        for p in first..first + count {
            self.kept.push(p as u32);
        }
        for state in &mut self.states {
            state.admit(count as usize);
        }
    }

    /// Start a step admitting `count` positions: its record, with
    /// `query_cache_position` the number kept when the step starts; then,
    /// with `evict_at` above 0 or `context_shift` 1, make room before
    /// admission (spec/spans.md#when-room-is-made, #context-shift), victims
    /// chosen by the policy's own rule among those kept, never a sink.
    pub(super) fn begin_step(&mut self, count: u64) -> StepRecord {
        let mut record = StepRecord { query_cache_position: self.kept.len() as u32, ..Default::default() };
        let policy = &self.states[0];
        if let Some(budget) = policy.budget() {
            let k = policy.span_options().evict_before(budget, self.kept.len(), count, policy.sinks_kept());
            if k > 0 {
                let sel = self.states[0].choose_victims(&self.kept, k);
                self.remove(sel, k, &mut record);
            }
        }
        record
    }

    /// Admit `first .. first + count - 1` and, with `spans` 1, log the
    /// step's held set (what is kept now, before any eviction after
    /// admission) and each query's span (spec/spans.md#the-log).
    pub(super) fn admit_step(&mut self, first: u64, count: u64, record: &mut StepRecord) {
        self.admit(first, count);
        let options = self.states[0].span_options();
        if options.log {
            let runs = held_runs(&self.kept, options.cache_relative);
            let sinks = self.states[0].sinks_kept();
            let last_sink = sinks.checked_sub(1).map(|i| self.kept[i]);
            record.spans = query_spans(&runs, first, count, options, last_sink);
            record.held = runs;
        }
    }

    /// Evict down to the step budget (spec/harness.md#victims,
    /// spec/prefill.md#when-a-policy-evicts): a set keeping `n` (of which
    /// the policy counts `counted`) with step budget `B < counted` loses
    /// `counted - B`. Score-based policies rank the heads' combined scores
    /// (spec/heads.md#combining-heads-at-ranking-time), at a prefill step
    /// those of the policy's prefill rule. With `evict_at` above 0 nothing
    /// goes after admission (spec/spans.md#when-room-is-made). With `slack`
    /// or `interval` a decode step that does not fire evicts nothing
    /// (spec/triggers.md#firing; the rules keep `prefill_only`, `evict_at`
    /// and `context_shift` 0 there, so its step budget is `budget`).
    /// With `block` above 1 whole closed blocks go ([`KeptSet::evict_blocks`]),
    /// and always for `openvino` (`Policy::evicts_by_blocks`), whose step
    /// budget is `None` but at a decode step that registered a row.
    /// `record` is the step's so far ([`KeptSet::begin_step`]); the step
    /// admitted `admitted` positions.
    pub(super) fn evict(&mut self, mut record: StepRecord, admitted: u64, prefill: bool) -> StepRecord {
        let n = self.kept.len();
        let fires = self.trigger.may_evict(prefill, n as u64, admitted);
        let evicts = fires && self.states[0].span_options().evicts_after();
        let budget = self.states[0].step_budget(n, prefill).filter(|_| evicts);
        let blocks = self.states[0].block_options();
        if let Some(budget) = budget.filter(|_| self.states[0].evicts_by_blocks()) {
            self.evict_blocks(blocks, budget, prefill, &mut record);
        } else if let Some(budget) = budget {
            let counted = self.states[0].counted(n, prefill) as u64;
            if counted > budget {
                let k = (counted - budget) as usize;
                let sel = if self.ranks_by_scores() {
                    rank(&self.kept, &self.combined_scores(prefill), self.candidates(prefill), k)
                } else {
                    self.states[0].choose_victims(&self.kept, k)
                };
                self.remove(sel, k, &mut record);
            }
        }
        record.kept_count = self.kept.len() as u32;
        record
    }

    /// A step that evicts, by blocks of `B` = `block` above 1
    /// (spec/blocks.md): with `n` kept, `k = floor(n / B) - budget / B`
    /// closed blocks go when above 0 (spec/blocks.md#how-many-blocks-go;
    /// the rules keep `ratio_ppm` and `window_budget` 0, so the step
    /// budget is `budget` and every slot counts). The candidate blocks are
    /// the closed blocks whose every slot is a candidate: after the kept
    /// sinks and within the policy's candidates (spec/blocks.md#candidates).
    /// A score-based set ranks them by block score, then first position
    /// (with the cut of blocks); the others choose `k` of them
    /// (`Policy::choose_blocks`: the oldest, or `random`'s draws). Every
    /// slot of a victim block goes (spec/blocks.md#ranking-blocks).
    fn evict_blocks(&mut self, blocks: BlockOptions, budget: u64, prefill: bool, record: &mut StepRecord) {
        let k = blocks.blocks_to_evict(self.kept.len(), budget);
        if k == 0 {
            return;
        }
        let candidates = blocks.candidate_blocks(self.states[0].sinks_kept(), self.candidates(prefill));
        let sel = if self.ranks_by_scores() {
            let (victims, cut) = blocks.rank(&self.combined_scores(prefill), candidates, k);
            Selection { victims, cut }
        } else {
            let chosen: Vec<usize> =
                self.states[0].choose_blocks(candidates.len(), k).into_iter().map(|i| candidates.start + i).collect();
            Selection { victims: blocks.slots_of(&chosen), cut: Vec::new() }
        };
        self.remove(sel, k * blocks.block, record);
    }

    /// A score-based set's combined score of every kept slot
    /// (spec/heads.md#combining-heads-at-ranking-time).
    pub(super) fn combined_scores(&self, prefill: bool) -> Vec<f64> {
        let per_head: Vec<Vec<f64>> = self.states.iter().map(|s| s.scores(prefill).unwrap()).collect();
        if per_head.len() == 1 {
            // (+0.0 + x) / 1 and max(x) are x, bit for bit.
            per_head.into_iter().next().unwrap()
        } else {
            combine(&per_head, self.aggregation)
        }
    }

    /// How many kept slots, from the oldest, are candidates: those outside
    /// the set's own recent window (spec/harness.md#protected-positions),
    /// and at a prefill step outside what the policy's prefill rule
    /// protects. Under a shared budget a set may keep fewer than its window.
    pub(super) fn candidates(&self, prefill: bool) -> usize {
        self.states[0].candidates(self.kept.len(), prefill)
    }

    /// Remove the `k` victims of `sel` from the set and every head's state,
    /// logging them ascending and the cut in `record`.
    /// A step evicts before or after admission, never both, so the victims
    /// stay ascending.
    pub(super) fn remove(&mut self, sel: Selection, k: usize, record: &mut StepRecord) {
        assert_eq!(sel.victims.len(), k, "{} chose the wrong number of victims", self.states[0].name());
        debug_assert!(record.victims.is_empty());
        record.cut = sel.cut.iter().map(|&(slot, s)| (self.kept[slot], s)).collect();
        let mut evicted = vec![false; self.kept.len()];
        for &slot in &sel.victims {
            evicted[slot] = true;
        }
        for state in &mut self.states {
            state.remove(&evicted);
        }
        let mut w = 0;
        for slot in 0..self.kept.len() {
            if evicted[slot] {
                record.victims.push(self.kept[slot]);
            } else {
                self.kept[w] = self.kept[slot];
                w += 1;
            }
        }
        self.kept.truncate(w);
    }
}

/// One policy and the positions it keeps, for one head (`Policy::Step` in
/// the spec).
pub struct Engine {
    set: KeptSet,
    /// The lowest position the next step may admit.
    next: u64,
}

impl Engine {
    pub fn new(policy: Box<dyn Policy>) -> Self {
        Engine { set: KeptSet::single(policy), next: 0 }
    }

    pub fn kept(&self) -> &[u32] {
        self.set.kept()
    }

    pub fn policy(&self) -> &dyn Policy {
        self.set.states[0].as_ref()
    }

    /// One step admitting `count` positions from `first`, with `attention`
    /// over the kept positions in kept order (or null). Validated first, in
    /// the order of spec/harness.md#refusals (called directly); a refused
    /// step changes nothing.
    pub fn step(&mut self, first: u64, count: u64, attention: Option<&[f32]>) -> Result<StepRecord> {
        if count == 0 {
            return Err(Refusal::position(Check::Range, "a step must admit at least one position"));
        }
        if first < self.next {
            return Err(Refusal::position(Check::Rule, format!("position {first} is not above every position admitted before")));
        }
        if first + (count - 1) > MAX_POSITION {
            return Err(Refusal::position(Check::Rule, "positions run past 2^32 - 1"));
        }
        if let Some(a) = attention {
            if a.len() != self.set.kept.len() {
                return Err(Refusal::length(
                    "attention",
                    format!("attention has {} weights, {} positions are kept", a.len(), self.set.kept.len()),
                ));
            }
            check_weights(a, "attention")?;
        }
        // 1. Record.
        if let Some(a) = attention {
            self.set.record_gathered(a);
        }
        // 2. Admit, making room first with `evict_at` above 0.
        let mut record = self.set.begin_step(count);
        self.set.admit_step(first, count, &mut record);
        self.next = first + count;
        // 3. Evict, once every record is handed (`openvino` registers
        // after admission).
        self.set.end_of_records();
        Ok(self.set.evict(record, count, false))
    }
}
