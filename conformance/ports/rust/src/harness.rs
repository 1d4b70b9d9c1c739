//! The decode loop every policy runs in: steps, validation and refusals,
//! gathering, admission, eviction and the eviction log; with several heads,
//! one kept set per granularity unit; prefill steps, which carry query rows
//! and may carry column totals.
//! Spec: spec/harness.md, spec/heads.md, spec/prefill.md.

use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::heads::{combine, floor_of, sets_of, shared_victim_counts, Aggregation, HeadCounts, Pair};
use crate::{policies::{rank, Policy, QueryRows, Selection}, registry};
use crate::prefill::Totals;
use crate::spans::{held_runs, query_spans, HeldRun};
use crate::trace::{TraceGenerator, TraceParams};

/// The highest position (spec/harness.md#positions).
pub const MAX_POSITION: u64 = u32::MAX as u64;

/// What one step did (spec/harness.md#eviction-log).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepRecord {
    /// Evicted positions, ascending.
    pub victims: Vec<u32>,
    pub kept_count: u32,
    pub query_cache_position: u32,
    /// Score-based policies: (position, score) in rank order
    /// (spec/vectors.md#the-cut; a set's combined scores). Empty otherwise.
    pub cut: Vec<(u32, f64)>,
    /// With more than one kept set: one record per set, in set order, and
    /// the fields above empty (spec/heads.md#the-eviction-log).
    pub sets: Vec<StepRecord>,
    /// With `spans` 1 (spec/spans.md#the-log): each query's span, in
    /// ascending query position, as `first, last` pairs of its maximal
    /// runs. Empty otherwise.
    pub spans: Vec<Vec<u32>>,
    /// With `spans` 1: the held set's maximal runs with their position ids.
    pub held: Vec<HeldRun>,
}

/// A refusal and where it happened: `step` is -1 for the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    pub refusal: Refusal,
    pub step: i32,
}

/// The eviction log of a scenario run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvictionLog {
    pub steps: Vec<StepRecord>,
    pub rejection: Option<Rejection>,
}

/// Is a weight accepted? Finite with its sign bit clear
/// (spec/harness.md#attention-weights).
#[inline]
pub fn weight_accepted(w: f32) -> bool {
    w.is_finite() && !w.is_sign_negative()
}

/// Is a column total accepted? Finite with its sign bit clear, in
/// binary64: NaN, the infinities and every value with the sign bit set,
/// -0.0 included, are refused (spec/prefill.md#their-checks, check 4).
#[inline]
pub fn total_accepted(t: f64) -> bool {
    t.is_finite() && !t.is_sign_negative()
}

/// The field that carries a step's rows with `hq` query heads
/// (spec/heads.md#rows-per-head): `attention` with one, `heads` with several.
fn rows_field(hq: usize) -> &'static str {
    if hq == 1 { "attention" } else { "heads" }
}

/// Every weight of a row in `field` (`attention`, `heads` or `queries`, the
/// value refusal's subject) is accepted.
fn check_weights(weights: &[f32], field: &str) -> Result<()> {
    for (i, &w) in weights.iter().enumerate() {
        if !weight_accepted(w) {
            return Err(Refusal::new(
                Category::AttentionValue,
                Subject::new(Check::Value, &[field]),
                format!("attention weight {i} is {w} ({:#010x}); weights must be finite and non-negative", w.to_bits()),
            ));
        }
    }
    Ok(())
}

/// A kept set (spec/heads.md#kept-sets): kept positions with their own
/// budget, protected positions and victims, and one policy state per query
/// head it covers (for a policy that reads attention) or one state for the
/// whole set (for the others).
pub struct KeptSet {
    kept: Vec<u32>,
    /// The query heads the set covers, ascending.
    heads: Vec<usize>,
    /// One state per covered head (`states[i]` is head `heads[i]`'s) for a
    /// policy that reads attention; a single state otherwise.
    states: Vec<Box<dyn Policy>>,
    /// How the heads' scores combine (default `mean` for the policies that
    /// do not read attention, where there is nothing to combine).
    aggregation: Aggregation,
}

impl KeptSet {
    /// A set covering `heads`, with `states` as above.
    fn new(heads: Vec<usize>, states: Vec<Box<dyn Policy>>, aggregation: Aggregation) -> Self {
        assert!(!states.is_empty());
        KeptSet { kept: Vec::new(), heads, states, aggregation }
    }

    /// The one-head set of a single-head policy.
    pub fn single(policy: Box<dyn Policy>) -> Self {
        let aggregation = policy.head_options().map_or(Aggregation::Mean, |o| o.aggregation);
        KeptSet::new(vec![0], vec![policy], aggregation)
    }

    pub fn kept(&self) -> &[u32] {
        &self.kept
    }

    fn reads_attention(&self) -> bool {
        self.states[0].head_options().is_some()
    }

    /// Record each covered head's row gathered at this set's kept positions
    /// (spec/heads.md#what-each-head-records): `weight(h, p)` is query head
    /// `h`'s weight of position `p` at this step (a full-cache row, or a
    /// trace head's generator, asked only for the kept positions).
    fn record_with<W: Fn(usize, u32) -> f32>(&mut self, weight: &W, gathered: &mut Vec<f32>) {
        if !self.reads_attention() {
            return;
        }
        for (state, &h) in self.states.iter_mut().zip(&self.heads) {
            gathered.clear();
            gathered.extend(self.kept.iter().map(|&p| weight(h, p)));
            state.record(gathered);
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
    fn record_queries(&mut self, queries: &[&[f32]], m: usize, last: u64, totals: Option<Totals>) {
        if !self.reads_attention() {
            return;
        }
        let first_query = last + 1 - m as u64;
        for (state, &h) in self.states.iter_mut().zip(&self.heads) {
            let mut rows = QueryRows::new(&self.kept, &queries[h * m..(h + 1) * m], first_query);
            if let Some(t) = totals {
                rows = rows.with_totals(&t.sums[h], t.rows);
            }
            state.record_queries(&rows);
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
    fn begin_step(&mut self, count: u64) -> StepRecord {
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
    fn admit_step(&mut self, first: u64, count: u64, record: &mut StepRecord) {
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
    /// goes after admission (spec/spans.md#when-room-is-made). `record` is
    /// the step's so far ([`KeptSet::begin_step`]).
    fn evict(&mut self, mut record: StepRecord, prefill: bool) -> StepRecord {
        let n = self.kept.len();
        let budget = self.states[0].step_budget(n, prefill).filter(|_| self.states[0].span_options().evicts_after());
        if let Some(budget) = budget {
            let counted = self.states[0].counted(n, prefill) as u64;
            if counted > budget {
                let k = (counted - budget) as usize;
                let sel = if self.reads_attention() {
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

    /// A score-based set's combined score of every kept slot
    /// (spec/heads.md#combining-heads-at-ranking-time).
    fn combined_scores(&self, prefill: bool) -> Vec<f64> {
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
    fn candidates(&self, prefill: bool) -> usize {
        self.states[0].candidates(self.kept.len(), prefill)
    }

    /// Remove the `k` victims of `sel` from the set and every head's state,
    /// logging them ascending and the cut in `record`.
    /// A step evicts before or after admission, never both, so the victims
    /// stay ascending.
    fn remove(&mut self, sel: Selection, k: usize, record: &mut StepRecord) {
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
        // 3. Evict.
        Ok(self.set.evict(record, false))
    }
}

/// Every kept set of a run over a scenario's heads (spec/heads.md), in set
/// order.
pub struct Layer {
    sets: Vec<KeptSet>,
    /// With `adaptive` 1 and at least two sets: the set budget and the
    /// floor of the shared budget (spec/heads.md#head-adaptive-budgets).
    shared: Option<SharedBudget>,
    /// Scratch for gathering a head's row.
    gathered: Vec<f32>,
    /// `Hq`: a prefill step carries `Hq x m` query rows.
    query_heads: usize,
}

impl Layer {
    /// The kept sets of a configuration over `heads`: one per granularity
    /// unit for a policy that reads attention, one covering every head
    /// otherwise (spec/heads.md#kept-sets). Every state is built from the
    /// same configuration.
    pub fn build(name: &str, params: &[(String, i64)], seed: u64, heads: HeadCounts) -> Result<Self> {
        let first = registry::build(name, params, seed)?;
        let options = first.head_options();
        let budget = first.budget();
        let sets = match options {
            None => vec![KeptSet::new((0..heads.query as usize).collect(), vec![first], Aggregation::Mean)],
            Some(opts) => {
                let mut first = Some(first);
                let mut sets = Vec::new();
                for covered in sets_of(opts.granularity, heads) {
                    let mut states = Vec::with_capacity(covered.len());
                    for _ in &covered {
                        states.push(match first.take() {
                            Some(p) => p,
                            None => registry::build(name, params, seed)?,
                        });
                    }
                    sets.push(KeptSet::new(covered, states, opts.aggregation));
                }
                sets
            }
        };
        // One set: `adaptive` changes nothing (L = budget, and the floor
        // never binds).
        let shared = match (options, budget) {
            (Some(o), Some(budget)) if o.adaptive && sets.len() >= 2 => {
                Some(SharedBudget { budget, floor: floor_of(budget, o.safeguard_permille) })
            }
            _ => None,
        };
        Ok(Layer { sets, shared, gathered: Vec::new(), query_heads: heads.query as usize })
    }

    /// Does any kept set read attention? (All or none do: every set is
    /// built from the same configuration.)
    fn reads_attention(&self) -> bool {
        self.sets.iter().any(|s| s.reads_attention())
    }

    /// One validated step: one full-cache row per query head, null
    /// attention for every head, or query rows (a prefill step). Returns
    /// the step's record (spec/heads.md#the-eviction-log).
    fn step(&mut self, first: u64, count: u64, rows: &StepRows) -> StepRecord {
        match rows {
            StepRows::Rows(rows) => self.step_with(first, count, Some(&|h: usize, p: u32| rows[h][p as usize])),
            StepRows::Null => self.step_with(first, count, None::<&fn(usize, u32) -> f32>),
            StepRows::Queries { rows, totals } => self.step_prefill(first, count, rows, *totals),
        }
    }

    /// One validated prefill step (spec/prefill.md#the-prefill-step), with
    /// `queries` the step's `Hq x m` query rows and `totals` its column
    /// totals, if any: each set, in set order, admits the chunk, hands
    /// each covered head its gathered query rows (and totals), then evicts
    /// by its step budget with the prefill rule's scores and candidates;
    /// under a shared budget the sets evict together once all have
    /// recorded.
    fn step_prefill(&mut self, first: u64, count: u64, queries: &[&[f32]], totals: Option<Totals>) -> StepRecord {
        let m = queries.len() / self.query_heads;
        let last = first + count - 1;
        let mut records = Vec::with_capacity(self.sets.len());
        for set in &mut self.sets {
            let mut record = set.begin_step(count);
            set.admit_step(first, count, &mut record);
            set.record_queries(queries, m, last, totals);
            if self.shared.is_none() {
                records.push(set.evict(record, true));
            } else {
                records.push(record);
            }
        }
        self.finish_step(records, true)
    }

    /// One validated step, each head's weights given by `weight(h, p)` (or
    /// `None`: null attention for every head). Each set, in set order,
    /// records its heads' weights at its own kept positions, admits, then
    /// evicts down to its budget; under a shared budget the sets evict
    /// together once all have admitted.
    fn step_with<W: Fn(usize, u32) -> f32>(&mut self, first: u64, count: u64, weight: Option<&W>) -> StepRecord {
        let mut records = Vec::with_capacity(self.sets.len());
        for set in &mut self.sets {
            if let Some(weight) = weight {
                set.record_with(weight, &mut self.gathered);
            }
            let mut record = set.begin_step(count);
            set.admit_step(first, count, &mut record);
            if self.shared.is_none() {
                records.push(set.evict(record, false));
            } else {
                records.push(record);
            }
        }
        self.finish_step(records, false)
    }

    /// Under a shared budget, the sets' joint eviction; then the step's
    /// record: one set's in the step's own fields, several in `sets`.
    fn finish_step(&mut self, mut records: Vec<StepRecord>, prefill: bool) -> StepRecord {
        if let Some(shared) = self.shared {
            self.evict_shared(shared, &mut records, prefill);
        }
        if records.len() == 1 {
            records.pop().unwrap()
        } else {
            StepRecord { sets: records, ..Default::default() }
        }
    }

    /// The sets' joint eviction under a shared budget
    /// (spec/heads.md#head-adaptive-budgets): if the sets keep more than
    /// `budget * S` positions together, the excess goes as (set, position)
    /// pairs, ranked jointly and walked above each set's floor. Each set
    /// then loses its lowest candidates in its own ranking, which is the
    /// joint order restricted to the set, so its victims and cut are those
    /// of `rank` with the set's victim count; a set that loses nothing
    /// logs no cut. Fills each set's victims, cut and kept count.
    /// `adaptive` 1 requires `prefill_only` 0 and `ratio_ppm` 0 (and
    /// `window_budget` 0), so the step budget is `budget` and every kept
    /// slot counts, at a prefill step too; the prefill rule still decides
    /// the scores and the candidates (`tova`'s `protect_newest`).
    fn evict_shared(&mut self, shared: SharedBudget, records: &mut [StepRecord], prefill: bool) {
        let kept: Vec<u64> = self.sets.iter().map(|s| s.kept.len() as u64).collect();
        let total: u64 = kept.iter().sum();
        let layer_budget = shared.budget * self.sets.len() as u64;
        if total > layer_budget {
            let scores: Vec<Vec<f64>> = self.sets.iter().map(|s| s.combined_scores(prefill)).collect();
            let mut pairs = Vec::with_capacity(total as usize);
            for (s, set) in self.sets.iter().enumerate() {
                for (&position, &score) in set.kept.iter().zip(&scores[s]).take(set.candidates(prefill)) {
                    pairs.push(Pair { score, position, set: s });
                }
            }
            let lost = shared_victim_counts(&mut pairs, &kept, total - layer_budget, shared.floor);
            for (s, set) in self.sets.iter_mut().enumerate() {
                if lost[s] > 0 {
                    let sel = rank(&set.kept, &scores[s], set.candidates(prefill), lost[s]);
                    set.remove(sel, lost[s], &mut records[s]);
                }
            }
        }
        for (set, record) in self.sets.iter().zip(records.iter_mut()) {
            record.kept_count = set.kept.len() as u32;
        }
    }
}

/// The shared budget of `adaptive` 1 (spec/heads.md#head-adaptive-budgets):
/// each set's `budget` (the layer keeps `budget * S`) and each set's floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SharedBudget {
    budget: u64,
    floor: u64,
}

/// One step of an explicit scenario, as on the wire: how many it admits,
/// `row` (the proto's `attention`: one full-cache row, `None` if absent),
/// `heads` (one row per query head when there are several), `queries`
/// (the query rows of a prefill step, `Hq x m` of them, head 0's first;
/// spec/prefill.md#query-rows), and `totals` with `total_rows` (the
/// proto's fields 5 and 6: per query head, head 0 first, one binary64 per
/// position `0 .. a+c-1`, summed over the step's last `total_rows`
/// queries; empty and 0 without totals; spec/prefill.md#column-totals).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioStep {
    pub admit: u32,
    pub row: Option<Vec<f32>>,
    pub heads: Vec<Vec<f32>>,
    pub queries: Vec<Vec<f32>>,
    pub totals: Vec<Vec<f64>>,
    pub total_rows: u32,
}

impl ScenarioStep {
    /// A single-head step: `row` is its full-cache row (`None` is null).
    pub fn single(admit: u32, row: Option<Vec<f32>>) -> Self {
        ScenarioStep { admit, row, ..Default::default() }
    }

    /// A multi-head step: one row per query head (empty is null attention).
    pub fn per_head(admit: u32, heads: Vec<Vec<f32>>) -> Self {
        ScenarioStep { admit, heads, ..Default::default() }
    }

    /// A prefill step: its query rows, `Hq x m`, head 0's first.
    pub fn prefill(admit: u32, queries: Vec<Vec<f32>>) -> Self {
        ScenarioStep { admit, queries, ..Default::default() }
    }

    /// The same step carrying column totals: `totals[h]` is query head
    /// `h`'s, over the step's last `total_rows` queries.
    pub fn with_totals(self, totals: Vec<Vec<f64>>, total_rows: u32) -> Self {
        ScenarioStep { totals, total_rows, ..self }
    }
}

/// What a validated step carries (spec/harness.md#scenarios,
/// spec/prefill.md#query-rows).
#[derive(Debug)]
enum StepRows<'a> {
    /// Null attention for every head.
    Null,
    /// One full-cache row per query head.
    Rows(Vec<&'a [f32]>),
    /// A prefill step's query rows, `Hq x m`, head 0's first, and its
    /// column totals if it carries them.
    Queries { rows: Vec<&'a [f32]>, totals: Option<Totals<'a>> },
}

/// A scenario: explicit steps or a generated trace (spec/harness.md#scenarios).
#[derive(Clone, Debug, PartialEq)]
pub enum Scenario {
    Steps(Vec<ScenarioStep>),
    Trace(TraceParams),
}

/// Run a policy configuration over a single-head scenario (`RunScenario`).
/// Never fails: a refusal ends the log.
pub fn run_scenario(name: &str, params: &[(String, i64)], seed: u64, scenario: &Scenario) -> EvictionLog {
    run_scenario_with_heads(name, params, seed, HeadCounts::ONE, scenario)
}

/// Run a policy configuration over a scenario with validated head counts
/// (spec/heads.md#head-counts; the caller checked them after the
/// scenario's shape). Never fails: a refusal ends the log.
pub fn run_scenario_with_heads(
    name: &str,
    params: &[(String, i64)],
    seed: u64,
    heads: HeadCounts,
    scenario: &Scenario,
) -> EvictionLog {
    let mut log = EvictionLog::default();
    let refuse = |log: &mut EvictionLog, refusal: Refusal, step: i32| {
        log.rejection = Some(Rejection { refusal, step });
    };
    match scenario {
        Scenario::Steps(steps) => {
            let mut layer = match Layer::build(name, params, seed, heads) {
                Ok(l) => l,
                Err(refusal) => {
                    refuse(&mut log, refusal, -1);
                    return log;
                }
            };
            let mut next: u64 = 0;
            for (index, step) in steps.iter().enumerate() {
                match check_explicit_step(next, step, heads.query as usize) {
                    Ok(rows) => log.steps.push(layer.step(next, step.admit as u64, &rows)),
                    Err(refusal) => {
                        refuse(&mut log, refusal, index as i32);
                        return log;
                    }
                }
                next += step.admit as u64;
            }
        }
        Scenario::Trace(params_t) if heads != HeadCounts::ONE => {
            let mut layer = match Layer::build(name, params, seed, heads) {
                Ok(l) => l,
                Err(refusal) => {
                    refuse(&mut log, refusal, -1);
                    return log;
                }
            };
            run_multi_head_trace(&mut layer, params_t, heads, &mut log);
        }
        Scenario::Trace(params_t) => {
            // One head: the single-head trace, exactly as before heads
            // existed (spec/trace.md#several-heads, head 0).
            let policy = match registry::build(name, params, seed) {
                Ok(p) => p,
                Err(refusal) => {
                    refuse(&mut log, refusal, -1);
                    return log;
                }
            };
            let mut engine = Engine::new(policy);
            let mut gen = TraceGenerator::new(params_t.clone());
            let mut gathered: Vec<f32> = Vec::new();
            for t in 0..params_t.steps as u64 {
                gen.begin_step(t);
                gathered.clear();
                gathered.extend(engine.kept().iter().map(|&p| gen.weight(p as u64)));
                match engine.step(t, 1, Some(&gathered)) {
                    Ok(rec) => log.steps.push(rec),
                    Err(refusal) => {
                        refuse(&mut log, refusal, t as i32);
                        return log;
                    }
                }
            }
        }
    }
    log
}

/// A generated trace of several heads (spec/trace.md#several-heads): query
/// head `h` has its own generator, of `params.for_head(h)` (head 0 is the
/// trace itself), streamed as one head's is (spec/trace.md#streaming). Step
/// `t` admits position `t`, and each set records each of its heads' weights
/// at the set's own kept positions. Generated weights are valid by
/// construction and positions stay below 2^31, so no step is refused.
/// A policy that reads no attention builds no generator: its one set
/// records nothing.
fn run_multi_head_trace(layer: &mut Layer, params: &TraceParams, heads: HeadCounts, log: &mut EvictionLog) {
    let mut gens: Vec<TraceGenerator> = if layer.reads_attention() {
        (0..heads.query).map(|h| TraceGenerator::new(params.for_head(h))).collect()
    } else {
        Vec::new()
    };
    for t in 0..params.steps as u64 {
        let record = if gens.is_empty() {
            layer.step_with(t, 1, None::<&fn(usize, u32) -> f32>)
        } else {
            for g in &mut gens {
                g.begin_step(t);
            }
            let gens = &gens;
            layer.step_with(t, 1, Some(&|h: usize, p: u32| gens[h].weight(p as u64)))
        };
        log.steps.push(record);
    }
}

/// The checks of spec/harness.md#refusals for one step of a scenario with
/// `hq` query heads, in order (spec/heads.md#rows-per-head,
/// spec/prefill.md#checks, spec/prefill.md#their-checks): the positions;
/// then the rows (their number, then each row's length, head 0 first),
/// then the query rows' shape, then the column totals' shape; then every
/// weight of every row (head 0 first, index 0 up), then every weight of
/// every query row, then every column total. Returns what the step
/// carries.
fn check_explicit_step(first: u64, step: &ScenarioStep, hq: usize) -> Result<StepRows<'_>> {
    if step.admit == 0 {
        return Err(Refusal::position(Check::Range, "a step must admit at least one position"));
    }
    if first + (step.admit as u64 - 1) > MAX_POSITION {
        return Err(Refusal::position(Check::Rule, "positions run past 2^32 - 1"));
    }
    // Check 3: the rows' shape, the query rows', then the totals'.
    let rows = check_rows_shape(first, step, hq)?;
    let has_queries = !step.queries.is_empty();
    if has_queries {
        check_queries_shape(first, step, hq)?;
    }
    let has_totals = check_totals_shape(first, step, hq)?;
    // Check 4: the rows' weights, the query rows', then the totals.
    let field = rows_field(hq);
    for (h, row) in rows.iter().flatten().enumerate() {
        check_weights(row, field).map_err(|r| r.in_context(format_args!("head {h}")))?;
    }
    if has_queries {
        let m = step.queries.len() / hq;
        for (r, row) in step.queries.iter().enumerate() {
            check_weights(row, "queries").map_err(|e| e.in_context(format_args!("head {}, query row {}", r / m, r % m)))?;
        }
        // Totals come only beside query rows (check 3 refused them
        // otherwise).
        let totals = if has_totals {
            check_totals_values(step)?;
            Some(Totals { sums: &step.totals, rows: step.total_rows })
        } else {
            None
        };
        return Ok(StepRows::Queries { rows: step.queries.iter().map(|r| r.as_slice()).collect(), totals });
    }
    Ok(match rows {
        None => StepRows::Null,
        Some(rows) => StepRows::Rows(rows),
    })
}

/// Step check 3, the rows (spec/heads.md#rows-per-head): with one query
/// head the row is `attention` and `heads` is empty; with several,
/// `attention` is absent and `heads` holds `hq` rows; then each row has one
/// weight per position admitted before the step. `None`: no row.
fn check_rows_shape(first: u64, step: &ScenarioStep, hq: usize) -> Result<Option<Vec<&[f32]>>> {
    let rows: Vec<&[f32]> = if hq == 1 {
        if !step.heads.is_empty() {
            return Err(Refusal::length(
                "heads",
                format!("with one query head the row is `attention`, but `heads` holds {} rows", step.heads.len()),
            ));
        }
        match &step.row {
            None => return Ok(None),
            Some(row) => vec![row.as_slice()],
        }
    } else {
        match (&step.row, step.heads.is_empty()) {
            (None, true) => return Ok(None),
            (Some(_), _) => {
                return Err(Refusal::length(
                    "attention",
                    format!("with {hq} query heads the rows are in `heads`, and `attention` must be absent"),
                ))
            }
            (None, false) => {
                if step.heads.len() != hq {
                    return Err(Refusal::length(
                        "heads",
                        format!("`heads` holds {} rows, the scenario has {hq} query heads", step.heads.len()),
                    ));
                }
                step.heads.iter().map(|r| r.as_slice()).collect()
            }
        }
    };
    for (h, row) in rows.iter().enumerate() {
        if row.len() as u64 != first {
            return Err(Refusal::length(
                rows_field(hq),
                format!("head {h}: the row has {} weights, {first} positions were admitted before the step", row.len()),
            ));
        }
    }
    Ok(Some(rows))
}

/// Step check 3, the query rows (spec/prefill.md#checks), after the rows'
/// checks: no `attention` and no `heads` row beside them; their number a
/// multiple of `hq`; `m` at most the step's `admit`; then each row, head 0
/// first and within a head in ascending query position, has `q + 1`
/// weights for its query `q` (the step's last `m` positions). Every
/// failure is `ATTENTION_LENGTH`.
fn check_queries_shape(first: u64, step: &ScenarioStep, hq: usize) -> Result<()> {
    let refuse = |m: String| Err(Refusal::length("queries", m));
    if step.row.is_some() || !step.heads.is_empty() {
        return refuse("a step with query rows carries no `attention` and no `heads` row".into());
    }
    let rows = step.queries.len();
    if !rows.is_multiple_of(hq) {
        return refuse(format!("{rows} query rows are not a multiple of the {hq} query heads"));
    }
    let m = rows / hq;
    if m as u64 > step.admit as u64 {
        return refuse(format!("{m} query rows per head, but the step admits {}", step.admit));
    }
    let first_query = first + step.admit as u64 - m as u64;
    for (r, row) in step.queries.iter().enumerate() {
        let q = first_query + (r % m) as u64;
        if row.len() as u64 != q + 1 {
            return refuse(format!(
                "head {}: the query row of position {q} has {} weights, a causal row has {}",
                r / m,
                row.len(),
                q + 1
            ));
        }
    }
    Ok(())
}

/// Step check 3, the column totals (spec/prefill.md#their-checks), after
/// the query rows' shape: if the step has totals or a `total_rows` above
/// 0, it has query rows, `hq` lists of totals and `1 <= total_rows <=
/// admit`; then each head's list, head 0 first, holds exactly `a + c`
/// values (one per position `0 .. a+c-1`). Every failure is
/// `ATTENTION_LENGTH`. `Ok(false)`: the step carries no totals.
fn check_totals_shape(first: u64, step: &ScenarioStep, hq: usize) -> Result<bool> {
    let refuse = |field, m: String| Err(Refusal::length(field, m));
    if step.totals.is_empty() && step.total_rows == 0 {
        return Ok(false);
    }
    if step.queries.is_empty() {
        return refuse("totals", "column totals come only beside query rows".into());
    }
    if step.totals.len() != hq {
        return refuse("totals", format!("{} lists of column totals, the scenario has {hq} query heads", step.totals.len()));
    }
    if step.total_rows == 0 || step.total_rows > step.admit {
        return refuse("total_rows", format!("total_rows is {}, it must be 1 to the step's admit {}", step.total_rows, step.admit));
    }
    let positions = first + step.admit as u64;
    for (h, sums) in step.totals.iter().enumerate() {
        if sums.len() as u64 != positions {
            return refuse("totals", format!(
                "head {h}: {} column totals, the step needs one per position 0 .. {}",
                sums.len(),
                positions - 1
            ));
        }
    }
    Ok(true)
}

/// Step check 4, the column totals (spec/prefill.md#their-checks), after
/// the query rows' weights: every total, head 0 first and within a head
/// from position 0 up, is finite with its sign bit clear, or
/// `ATTENTION_VALUE`.
fn check_totals_values(step: &ScenarioStep) -> Result<()> {
    for (h, sums) in step.totals.iter().enumerate() {
        for (p, &t) in sums.iter().enumerate() {
            if !total_accepted(t) {
                return Err(Refusal::new(
                    Category::AttentionValue,
                    Subject::new(Check::Value, &["totals"]),
                    format!(
                        "head {h}: the column total of position {p} is {t} ({:#018x}); totals must be finite and non-negative",
                        t.to_bits()
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn singles(rows: &[&[f32]]) -> Scenario {
        Scenario::Steps(rows.iter().map(|r| ScenarioStep::single(1, Some(r.to_vec()))).collect())
    }

    fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
        assert!(log.rejection.is_none(), "{:?}", log.rejection);
        log.steps.iter().map(|s| s.victims.clone()).collect()
    }

    fn chunks(sizes: &[u32]) -> Scenario {
        Scenario::Steps(sizes.iter().map(|&a| ScenarioStep::single(a, None)).collect())
    }

    fn kept_after(name: &str, p: &[(&str, i64)], scenario: &Scenario) -> Vec<u32> {
        let policy = registry::build(name, &params(p), 0).unwrap();
        let mut e = Engine::new(policy);
        let Scenario::Steps(steps) = scenario else { unreachable!() };
        let mut next = 0u64;
        for s in steps {
            e.step(next, s.admit as u64, None).unwrap();
            next += s.admit as u64;
        }
        e.kept().to_vec()
    }

    #[test]
    fn window_worked_examples() {
        let log = run_scenario("window", &params(&[("budget", 3)]), 0, &chunks(&[1, 1, 1, 1, 1, 1]));
        assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![0], vec![1], vec![2]]);
        let log = run_scenario("window", &params(&[("budget", 3)]), 0, &chunks(&[5, 2]));
        assert_eq!(victims(&log), vec![vec![0, 1], vec![2, 3]]);
        let log = run_scenario("window", &params(&[("budget", 2)]), 0, &chunks(&[1, 4]));
        assert_eq!(victims(&log), vec![vec![], vec![0, 1, 2]]);
        assert_eq!(kept_after("window", &[("budget", 2)], &chunks(&[1, 4])), vec![3, 4]);
    }

    #[test]
    fn streamingllm_worked_examples() {
        let p = [("budget", 5), ("sinks", 2)];
        let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[1; 7]));
        assert_eq!(log.steps[6].query_cache_position, 5);
        assert_eq!(log.steps[3].query_cache_position, 3);
        assert_eq!(kept_after("streamingllm", &p, &chunks(&[1; 7])), vec![0, 1, 4, 5, 6]);
        let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[10]));
        assert_eq!(victims(&log), vec![vec![2, 3, 4, 5, 6]]);
        let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[4, 2]));
        assert_eq!(victims(&log), vec![vec![], vec![2]]);
        let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[5, 4]));
        assert_eq!(victims(&log), vec![vec![], vec![2, 3, 4, 5]]);
        let p2 = [("budget", 6), ("sinks", 4)];
        let log = run_scenario("streamingllm", &params(&p2), 0, &chunks(&[2, 5]));
        assert_eq!(victims(&log), vec![vec![], vec![4]]);
        assert_eq!(kept_after("streamingllm", &p2, &chunks(&[2, 5])), vec![0, 1, 2, 3, 5, 6]);
    }

    #[test]
    fn h2o_and_tova_worked_examples() {
        let sc = singles(&[&[], &[1.0], &[0.25, 0.5], &[0.25, 0.125, 0.5]]);
        let p = params(&[("budget", 3), ("recent_window", 1)]);
        let log = run_scenario("h2o", &p, 0, &sc);
        assert_eq!(log.steps[3].victims, vec![2]);
        assert_eq!(log.steps[3].cut, vec![(2, 0.5), (1, 0.625), (0, 1.5)]);
        let log = run_scenario("tova", &p, 0, &sc);
        assert_eq!(log.steps[3].victims, vec![1]);
        let sc = singles(&[&[], &[1.0], &[0.25, 0.5], &[0.0, 0.125, 0.5]]);
        assert_eq!(run_scenario("tova", &p, 0, &sc).steps[3].victims, vec![0]);
        // h2o tie: last row (0.25, 0.25, 0.75): sums of 1 and 2 are 0.75, 1 goes.
        let sc = singles(&[&[], &[1.0], &[0.25, 0.5], &[0.25, 0.25, 0.75]]);
        assert_eq!(run_scenario("h2o", &p, 0, &sc).steps[3].victims, vec![1]);
    }

    #[test]
    fn snapkv_wrap_around() {
        let sc = Scenario::Steps(vec![
            ScenarioStep::single(1, None),
            ScenarioStep::single(1, Some(vec![0.5])),
            ScenarioStep::single(1, Some(vec![0.25, 0.75])),
            ScenarioStep::single(1, Some(vec![0.125, 0.25, 0.5])),
        ]);
        let p = params(&[("budget", 3), ("recent_window", 1), ("obs_window", 2), ("pool_kernel", 1)]);
        let log = run_scenario("snapkv", &p, 0, &sc);
        assert_eq!(log.steps[3].victims, vec![0]);
        assert_eq!(log.steps[3].cut[0], (0, 0.375));
    }

    /// A null chunk of `n`, then one step admitting 1 with the given row.
    fn one_row(n: u32, row: &[f32]) -> Scenario {
        Scenario::Steps(vec![
            ScenarioStep::single(n, None),
            ScenarioStep::single(1, Some(row.to_vec())),
        ])
    }

    #[test]
    fn snapkv_pooling_examples() {
        let sc = one_row(4, &[0.5, 0.125, 1.0, 0.25]);
        let p1 = params(&[("budget", 4), ("recent_window", 1), ("pool_kernel", 1)]);
        assert_eq!(run_scenario("snapkv", &p1, 0, &sc).steps[1].victims, vec![1]);
        let p3 = params(&[("budget", 4), ("recent_window", 1), ("pool_kernel", 3)]);
        assert_eq!(run_scenario("snapkv", &p3, 0, &sc).steps[1].victims, vec![0]);
        // High end clamps.
        let sc = one_row(3, &[1.0, 0.5, 0.25]);
        let p = params(&[("budget", 3), ("recent_window", 0), ("pool_kernel", 3)]);
        let log = run_scenario("snapkv", &p, 0, &sc);
        assert_eq!(log.steps[1].victims, vec![3]);
        assert_eq!(log.steps[1].cut, vec![(3, 0.25), (2, 0.5), (0, 1.0), (1, 1.0)]);
        // Equal pooled scores evict the lower position.
        let sc = one_row(3, &[0.375, 1.0, 0.5]);
        let p = params(&[("budget", 3), ("recent_window", 1), ("pool_kernel", 3)]);
        assert_eq!(run_scenario("snapkv", &p, 0, &sc).steps[1].victims, vec![0]);
    }

    #[test]
    fn snapkv_sums_in_ring_index_order() {
        // obs_window 3. Position 0 is written at ring indices 0, 1, 2, 0 with
        // 0.5, t, t, 1.0 (t = 2^-53): index order sums (1.0, t, t) to 1.0,
        // time order (t, t, 1.0) would give 1 + 2^-52. Position 1 sums to
        // exactly 1.0, so index order ties 0 and 1 and 0 goes; time order
        // would evict 1.
        let t = f32::from_bits(0x25000000);
        assert_eq!(t as f64, 2f64.powi(-53));
        let sc = Scenario::Steps(vec![
            ScenarioStep::single(1, None),
            ScenarioStep::single(1, Some(vec![0.5])),
            ScenarioStep::single(1, Some(vec![t, 0.0])),
            ScenarioStep::single(1, Some(vec![t, 0.0, 2.0])),
            ScenarioStep::single(1, Some(vec![1.0, 1.0, 2.0, 2.0])),
        ]);
        let p = params(&[("budget", 4), ("recent_window", 1), ("obs_window", 3), ("pool_kernel", 1)]);
        let log = run_scenario("snapkv", &p, 0, &sc);
        assert_eq!(log.steps[4].victims, vec![0]);
        assert_eq!(log.steps[4].cut, vec![(0, 1.0), (1, 1.0), (3, 2.0), (2, 4.0)]);
    }

    #[test]
    fn streamingllm_without_sinks_is_window() {
        let sc = chunks(&[1, 3, 1, 5, 2, 1, 7, 1]);
        let w = run_scenario("window", &params(&[("budget", 4)]), 0, &sc);
        let s = run_scenario("streamingllm", &params(&[("budget", 4), ("sinks", 0)]), 0, &sc);
        assert_eq!(w, s);
    }

    #[test]
    fn random_worked_examples() {
        let p = params(&[("budget", 2), ("recent_window", 0)]);
        let log = run_scenario("random", &p, 42, &chunks(&[1; 5]));
        assert_eq!(victims(&log), vec![vec![], vec![], vec![0], vec![2], vec![4]]);
        let log = run_scenario("random", &p, 42, &chunks(&[4]));
        assert_eq!(victims(&log), vec![vec![0, 2]]);
    }

    #[test]
    fn step_refusals() {
        let p = params(&[("budget", 3)]);
        let cat = |sc: Scenario| run_scenario("window", &p, 0, &sc).rejection.map(|r| (r.refusal.category, r.step));
        assert_eq!(cat(chunks(&[1, 0])), Some((Category::Position, 1)));
        let bad_len = Scenario::Steps(vec![
            ScenarioStep::single(2, Some(vec![])),
            ScenarioStep::single(1, Some(vec![0.5])),
        ]);
        assert_eq!(cat(bad_len), Some((Category::AttentionLength, 1)));
        for w in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -1.0, -0.0] {
            let sc = Scenario::Steps(vec![
                ScenarioStep::single(2, Some(vec![])),
                ScenarioStep::single(1, Some(vec![0.5, w])),
            ]);
            assert_eq!(cat(sc), Some((Category::AttentionValue, 1)), "{w}");
        }
        let sub = f32::from_bits(1);
        let sc = Scenario::Steps(vec![
            ScenarioStep::single(2, Some(vec![])),
            ScenarioStep::single(1, Some(vec![0.0, sub])),
        ]);
        assert_eq!(cat(sc), None);
        let log = run_scenario("window", &params(&[("budget", 0)]), 0, &chunks(&[1]));
        let r = log.rejection.unwrap();
        assert_eq!((r.refusal.category, r.step), (Category::InvalidParameter, -1));
    }

    #[test]
    fn direct_step_refusals_leave_the_policy_unchanged() {
        let mut e = Engine::new(registry::build("h2o", &params(&[("budget", 3), ("recent_window", 1)]), 0).unwrap());
        e.step(0, 2, None).unwrap();
        assert_eq!(e.step(1, 1, None).unwrap_err().category, Category::Position);
        assert_eq!(e.step(5, 0, None).unwrap_err().category, Category::Position);
        assert_eq!(e.step(5, 1, Some(&[0.5])).unwrap_err().category, Category::AttentionLength);
        assert_eq!(e.step(5, 1, Some(&[0.5, f32::NAN])).unwrap_err().category, Category::AttentionValue);
        // spec/harness.md#subjects: in a direct call a position not above
        // those admitted is `rule admit` too.
        let subject = |r: Result<StepRecord>| r.unwrap_err().subject;
        assert_eq!(subject(e.step(1, 1, None)), Subject::new(Check::Rule, &["admit"]));
        assert_eq!(subject(e.step(5, 0, None)), Subject::new(Check::Range, &["admit"]));
        assert_eq!(subject(e.step(5, 1, Some(&[0.5]))), Subject::new(Check::Length, &["attention"]));
        assert_eq!(subject(e.step(5, 1, Some(&[0.5, f32::NAN]))), Subject::new(Check::Value, &["attention"]));
        assert_eq!(e.kept(), &[0, 1]);
        // gaps are allowed; the chunk's unobserved 5 scores +0.0 and goes
        let r = e.step(5, 2, Some(&[0.5, 0.25])).unwrap();
        assert_eq!(r.victims, vec![5]);
        assert_eq!(r.cut, vec![(5, 0.0), (1, 0.25), (0, 0.5)]);
        assert_eq!(e.kept(), &[0, 1, 6]);
        // position 2^32 - 1 is admitted, 2^32 is not
        assert!(e.step(MAX_POSITION, 1, None).is_ok());
        assert_eq!(e.step(MAX_POSITION + 1, 1, None).unwrap_err().category, Category::Position);
        let mut e = Engine::new(registry::build("window", &params(&[("budget", 3)]), 0).unwrap());
        assert_eq!(e.step(MAX_POSITION - 1, 3, None).unwrap_err().category, Category::Position);
    }
}

/// Multi-head rules (spec/heads.md), worked by hand.
#[cfg(test)]
mod heads_tests {
    use super::*;
    use crate::rng::Rng;

    fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn hc(query: u32, kv: u32) -> HeadCounts {
        HeadCounts { query, kv }
    }

    fn run(name: &str, p: &[(&str, i64)], heads: HeadCounts, steps: Vec<ScenarioStep>) -> EvictionLog {
        run_scenario_with_heads(name, &params(p), 0, heads, &Scenario::Steps(steps))
    }

    fn rejection(log: &EvictionLog) -> Option<(Category, i32)> {
        log.rejection.as_ref().map(|r| (r.refusal.category, r.step))
    }

    /// Victims of each set at `step` (the step's own victims with one set).
    fn set_victims(log: &EvictionLog, step: usize) -> Vec<Vec<u32>> {
        assert!(log.rejection.is_none(), "{:?}", log.rejection);
        let r = &log.steps[step];
        if r.sets.is_empty() {
            vec![r.victims.clone()]
        } else {
            r.sets.iter().map(|s| s.victims.clone()).collect()
        }
    }

    /// A null chunk of 2 (positions 0, 1), then one step admitting 2 with
    /// one row per head over positions 0 and 1.
    fn two_then(rows: &[[f32; 2]]) -> Vec<ScenarioStep> {
        vec![ScenarioStep::per_head(2, vec![]), ScenarioStep::per_head(1, rows.iter().map(|r| r.to_vec()).collect())]
    }

    #[test]
    fn aggregation_decides() {
        // One set of two heads (kv_head, Hkv 1). budget 2, recent_window 1:
        // kept 0, 1, 2 after admission; candidates 0 and 1.
        // head 0: 0.5, 0.25; head 1: 0.0, 0.375.
        // mean 0.25, 0.3125 -> 0; max 0.5, 0.375 -> 1; sum 0.5, 0.625 -> 0.
        let rows = two_then(&[[0.5, 0.25], [0.0, 0.375]]);
        for (policy, extra) in [("h2o", vec![]), ("tova", vec![]), ("snapkv", vec![("pool_kernel", 1)])] {
            let with = |agg: i64| {
                let mut p = vec![("budget", 2), ("recent_window", 1), ("aggregation", agg)];
                p.extend(extra.iter().cloned());
                run(policy, &p, hc(2, 1), rows.clone())
            };
            let mean = with(0);
            assert_eq!(set_victims(&mean, 1), vec![vec![0]], "{policy}");
            assert_eq!(mean.steps[1].cut, vec![(0, 0.25), (1, 0.3125)], "{policy}");
            assert_eq!(set_victims(&with(1), 1), vec![vec![1]], "{policy}");
            assert_eq!(with(1).steps[1].cut, vec![(1, 0.375), (0, 0.5)], "{policy}");
            assert_eq!(set_victims(&with(2), 1), vec![vec![0]], "{policy}");
            assert_eq!(with(2).steps[1].cut, vec![(0, 0.5), (1, 0.625)], "{policy}");
        }
    }

    #[test]
    fn mean_and_sum_differ_by_rounding() {
        // Three heads, one set. Slot 0: 1.0 + 0.5 + 2^-51 = 1.5 + 2^-51;
        // slot 1: 1.0 + 0.5 + 2^-52 = 1.5 + 2^-52 (both exact). Divided by
        // 3 both round to 0.5 + 2^-53: mean ties and evicts 0; sum evicts
        // the smaller, 1. Max is 1.0 for both: 0 goes.
        let a = f32::from_bits(0x26000000); // 2^-51
        let b = f32::from_bits(0x25800000); // 2^-52
        assert_eq!((a as f64, b as f64), (2f64.powi(-51), 2f64.powi(-52)));
        let rows = two_then(&[[1.0, 1.0], [0.5, 0.5], [a, b]]);
        let p = |agg| [("budget", 2), ("recent_window", 1), ("aggregation", agg)];
        let mean = run("h2o", &p(0), hc(3, 1), rows.clone());
        let half = 0.5 + 2f64.powi(-53);
        assert_eq!(mean.steps[1].victims, vec![0]);
        assert_eq!(mean.steps[1].cut, vec![(0, half), (1, half)]);
        let sum = run("h2o", &p(2), hc(3, 1), rows.clone());
        assert_eq!(sum.steps[1].victims, vec![1]);
        assert_eq!(sum.steps[1].cut, vec![(1, 1.5 + 2f64.powi(-52)), (0, 1.5 + 2f64.powi(-51))]);
        assert_eq!(run("h2o", &p(1), hc(3, 1), rows).steps[1].victims, vec![0]);
    }

    #[test]
    fn granularity_decides_and_sets_are_numbered() {
        // Hq 4, Hkv 2 (G 2); tova, budget 2, recent_window 1; latest
        // weights of positions 0, 1 per head:
        let rows = two_then(&[[0.5, 0.0], [0.5, 0.0], [0.0, 0.5], [0.0, 0.25]]);
        let p = |g, agg| [("budget", 2), ("recent_window", 1), ("granularity", g), ("aggregation", agg)];
        // query_head: four sets, heads 0 and 1 evict 1, heads 2 and 3 evict 0.
        let log = run("tova", &p(2, 0), hc(4, 2), rows.clone());
        assert_eq!(set_victims(&log, 1), vec![vec![1], vec![1], vec![0], vec![0]]);
        // kv_head (the default): set 0 = heads 0, 1 (mean 0.5, 0.0) -> 1;
        // set 1 = heads 2, 3 (mean 0.0, 0.375) -> 0.
        let log = run("tova", &p(1, 0), hc(4, 2), rows.clone());
        assert_eq!(set_victims(&log, 1), vec![vec![1], vec![0]]);
        assert_eq!(log.steps[1].sets[1].cut, vec![(0, 0.0), (1, 0.375)]);
        let default = run("tova", &[("budget", 2), ("recent_window", 1)], hc(4, 2), rows.clone());
        assert_eq!(default, log);
        // layer: one set; mean 0.25, 0.1875 -> 1; max 0.5, 0.5 -> tie, 0.
        let log = run("tova", &p(0, 0), hc(4, 2), rows.clone());
        assert_eq!(log.steps[1].sets, vec![]);
        assert_eq!(log.steps[1].victims, vec![1]);
        assert_eq!(log.steps[1].cut, vec![(1, 0.1875), (0, 0.25)]);
        assert_eq!(set_victims(&run("tova", &p(0, 1), hc(4, 2), rows), 1), vec![vec![0]]);
    }

    #[test]
    fn multi_set_log_leaves_own_fields_empty() {
        let rows = two_then(&[[0.5, 0.0], [0.0, 0.5]]);
        let log = run("h2o", &[("budget", 2), ("recent_window", 1)], hc(2, 2), rows);
        let set = |victims: Vec<u32>, kept_count, qcp, cut: Vec<(u32, f64)>| StepRecord {
            victims,
            kept_count,
            query_cache_position: qcp,
            cut,
            ..Default::default()
        };
        assert_eq!(
            log.steps,
            vec![
                StepRecord { sets: vec![set(vec![], 2, 0, vec![]), set(vec![], 2, 0, vec![])], ..Default::default() },
                StepRecord {
                    sets: vec![
                        set(vec![1], 2, 2, vec![(1, 0.0), (0, 0.5)]),
                        set(vec![0], 2, 2, vec![(0, 0.0), (1, 0.5)]),
                    ],
                    ..Default::default()
                },
            ]
        );
        // A set that evicts nothing still logs the step. Kept sets now differ:
        // set 0 keeps 0, 2; set 1 keeps 1, 2. Next row: head 0 gathers
        // row[0], row[2]; head 1 gathers row[1], row[2].
        let mut steps = two_then(&[[0.5, 0.0], [0.0, 0.5]]);
        steps.push(ScenarioStep::per_head(1, vec![vec![0.25, 9.0, 0.125], vec![9.0, 0.0, 0.75]]));
        let log = run("h2o", &[("budget", 2), ("recent_window", 1)], hc(2, 2), steps);
        // set 0: sums 0: 0.5 + 0.25 = 0.75, 2: 0.125, 3: 0 (protected) -> 2.
        // set 1: sums 1: 0.5 + 0.0 = 0.5, 2: 0.75 -> 1.
        assert_eq!(set_victims(&log, 2), vec![vec![2], vec![1]]);
        assert_eq!(log.steps[2].sets[0].cut, vec![(2, 0.125), (0, 0.75)]);
        assert_eq!(log.steps[2].sets[1].cut, vec![(1, 0.5), (2, 0.75)]);
    }

    #[test]
    fn snapkv_pools_each_head_then_combines() {
        // Hq 2 in one set, mean, pool_kernel 3, budget 3, recent_window 1.
        // Sums: head 0 (0, 0, 0.25, 0), head 1 (0.5, 0.25, 0, 0); pooled
        // head 0 (0, 0.25, 0.25, 0.25), head 1 (0.5, 0.5, 0.25, 0); mean
        // (0.25, 0.375, 0.25, 0.125): 0 and 2 tie, 0 goes. Pooling the mean
        // row (0.25, 0.125, 0.125, 0) would give (0.25, 0.25, 0.125, ...)
        // and evict 2.
        let steps = vec![
            ScenarioStep::per_head(3, vec![]),
            ScenarioStep::per_head(1, vec![vec![0.0, 0.0, 0.25], vec![0.5, 0.25, 0.0]]),
        ];
        let p = [("budget", 3), ("recent_window", 1), ("pool_kernel", 3)];
        let log = run("snapkv", &p, hc(2, 1), steps);
        assert_eq!(log.steps[1].victims, vec![0]);
        assert_eq!(log.steps[1].cut, vec![(0, 0.25), (2, 0.25), (1, 0.375)]);
    }

    #[test]
    fn null_attention_is_null_for_every_head() {
        // h2o, one set of two heads: a null step between two rows records
        // nothing for any head.
        let steps = vec![
            ScenarioStep::per_head(2, vec![]),
            ScenarioStep::per_head(1, vec![vec![0.5, 0.25], vec![0.25, 0.5]]),
            ScenarioStep::per_head(1, vec![]),
        ];
        let log = run("h2o", &[("budget", 3), ("recent_window", 1), ("aggregation", 2)], hc(2, 1), steps);
        // sums 0: 0.75, 1: 0.75, 2: 0, 3 protected -> 2 goes.
        assert_eq!(log.steps[2].victims, vec![2]);
        assert_eq!(log.steps[2].cut, vec![(2, 0.0), (0, 0.75), (1, 0.75)]);
    }

    /// A pseudo-random multi-head scenario: chunks of 1 to 3, some null.
    fn random_steps(seed: u64, hq: usize, n_steps: usize) -> Vec<ScenarioStep> {
        let mut rng = Rng::new(seed);
        let mut next = 0usize;
        let mut steps = Vec::new();
        for _ in 0..n_steps {
            let admit = 1 + rng.uniform(3) as usize;
            let heads = if rng.uniform(5) == 0 {
                vec![]
            } else {
                (0..hq).map(|_| (0..next).map(|_| rng.uniform_float()).collect()).collect()
            };
            steps.push(ScenarioStep::per_head(admit as u32, heads));
            next += admit;
        }
        steps
    }

    /// Head `h`'s rows of a multi-head scenario, as a single-head scenario.
    fn head_only(steps: &[ScenarioStep], h: usize) -> Scenario {
        Scenario::Steps(
            steps.iter().map(|s| ScenarioStep::single(s.admit, s.heads.get(h).cloned())).collect(),
        )
    }

    #[test]
    fn a_one_head_set_is_the_single_head_policy() {
        // query_head sets (and kv_head sets without GQA) each evict exactly
        // what the card's single-head policy evicts on that head's rows.
        let steps = random_steps(7, 3, 40);
        for (policy, extra) in [("h2o", vec![]), ("tova", vec![]), ("snapkv", vec![("obs_window", 3), ("pool_kernel", 3)])] {
            for (g, heads) in [(2, hc(3, 1)), (1, hc(3, 3))] {
                for agg in 0..3 {
                    let mut p = vec![("budget", 5), ("recent_window", 2), ("granularity", g), ("aggregation", agg)];
                    p.extend(extra.iter().cloned());
                    let log = run(policy, &p, heads, steps.clone());
                    assert!(log.rejection.is_none());
                    for h in 0..3 {
                        let mut single_p = vec![("budget", 5), ("recent_window", 2)];
                        single_p.extend(extra.iter().cloned());
                        let single = run_scenario(policy, &params(&single_p), 0, &head_only(&steps, h));
                        let of_set: Vec<StepRecord> = log.steps.iter().map(|r| r.sets[h].clone()).collect();
                        assert_eq!(of_set, single.steps, "{policy} granularity {g} aggregation {agg} head {h}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_head_ignores_granularity_and_aggregation() {
        let steps: Vec<ScenarioStep> =
            random_steps(11, 1, 30).into_iter().map(|s| ScenarioStep::single(s.admit, s.heads.into_iter().next())).collect();
        for policy in ["h2o", "tova", "snapkv"] {
            let base = run(policy, &[("budget", 4), ("recent_window", 1)], HeadCounts::ONE, steps.clone());
            assert!(base.steps.iter().any(|r| !r.cut.is_empty()));
            for g in 0..3 {
                for agg in 0..3 {
                    let p = [("budget", 4), ("recent_window", 1), ("granularity", g), ("aggregation", agg)];
                    assert_eq!(run(policy, &p, HeadCounts::ONE, steps.clone()), base, "{policy} {g} {agg}");
                }
            }
        }
    }

    #[test]
    fn policies_that_do_not_read_attention_keep_one_set() {
        let steps = random_steps(3, 4, 20);
        let single: Vec<ScenarioStep> = steps.iter().map(|s| ScenarioStep::single(s.admit, s.heads.first().cloned())).collect();
        for (policy, p) in [
            ("full", vec![]),
            ("window", vec![("budget", 4)]),
            ("streamingllm", vec![("budget", 5), ("sinks", 2)]),
            ("random", vec![("budget", 4), ("recent_window", 1)]),
        ] {
            let log = run_scenario_with_heads(policy, &params(&p), 42, hc(4, 2), &Scenario::Steps(steps.clone()));
            let one = run_scenario(policy, &params(&p), 42, &Scenario::Steps(single.clone()));
            assert!(log.steps.iter().all(|r| r.sets.is_empty()), "{policy}");
            assert_eq!(log, one, "{policy}");
            // They take neither head parameter.
            for name in ["granularity", "aggregation"] {
                let mut q = p.clone();
                q.push((name, 1));
                let log = run_scenario_with_heads(policy, &params(&q), 42, hc(4, 2), &Scenario::Steps(steps.clone()));
                assert_eq!(rejection(&log), Some((Category::InvalidParameter, -1)), "{policy} {name}");
            }
        }
    }

    #[test]
    fn head_parameters_are_checked_after_the_policy_own() {
        let cat = |name: &str, p: &[(&str, i64)]| {
            registry::build(name, &params(p), 0).err().map(|r| (r.category, r.message))
        };
        for policy in ["h2o", "tova", "snapkv"] {
            assert_eq!(cat(policy, &[("budget", 32), ("granularity", 3)]).unwrap().0, Category::InvalidParameter);
            assert_eq!(cat(policy, &[("budget", 32), ("aggregation", -1)]).unwrap().0, Category::InvalidParameter);
            // Both out of range: granularity is listed first.
            let m = cat(policy, &[("budget", 32), ("aggregation", 3), ("granularity", 3)]).unwrap().1;
            assert!(m.contains("granularity must be in [0, 2]"), "{m}");
            // The policy's own range before the head parameters'.
            let m = cat(policy, &[("budget", 0), ("granularity", 3)]).unwrap().1;
            assert!(m.contains("budget must be in"), "{m}");
            // Ranges (step 3) before the rules relating parameters (step 4).
            let m = cat(policy, &[("budget", 4), ("recent_window", 4), ("aggregation", 7)]).unwrap().1;
            assert!(m.contains("aggregation must be in [0, 2], got 7"), "{m}");
            for g in 0..3 {
                for a in 0..3 {
                    assert!(cat(policy, &[("budget", 32), ("granularity", g), ("aggregation", a)]).is_none());
                }
            }
        }
        let m = cat("snapkv", &[("pool_kernel", 4), ("granularity", 5)]).unwrap().1;
        assert!(m.contains("granularity"), "{m}");
    }

    #[test]
    fn row_checks_in_order() {
        let p = [("budget", 8), ("recent_window", 1)];
        let ok_first = ScenarioStep::per_head(2, vec![vec![], vec![]]);
        let with = |second: ScenarioStep, heads: HeadCounts| rejection(&run("h2o", &p, heads, vec![ok_first.clone(), second]));
        let al = Some((Category::AttentionLength, 1));
        let av = Some((Category::AttentionValue, 1));
        // Head 0 holds a NaN, head 1 is one weight short: the length first.
        assert_eq!(with(ScenarioStep::per_head(1, vec![vec![f32::NAN, 0.5], vec![0.5]]), hc(2, 1)), al);
        // Too few rows, too many rows.
        assert_eq!(with(ScenarioStep::per_head(1, vec![vec![0.5, 0.5]]), hc(2, 1)), al);
        assert_eq!(with(ScenarioStep::per_head(1, vec![vec![0.5, 0.5]; 3]), hc(2, 1)), al);
        // The row count before any row's length or weight.
        assert_eq!(with(ScenarioStep::per_head(1, vec![vec![f32::NAN]]), hc(2, 1)), al);
        // `attention` with several heads, even beside the right rows.
        let both = ScenarioStep { admit: 1, row: Some(vec![0.5, 0.5]), heads: vec![vec![0.5, 0.5]; 2], ..Default::default() };
        assert_eq!(with(both, hc(2, 1)), al);
        assert_eq!(with(ScenarioStep::single(1, Some(vec![0.5, 0.5])), hc(2, 1)), al);
        // `heads` with one head, even one row.
        let one = |second| rejection(&run("h2o", &p, HeadCounts::ONE, vec![ScenarioStep::single(2, None), second]));
        assert_eq!(one(ScenarioStep::per_head(1, vec![vec![0.5, 0.5]])), al);
        assert_eq!(one(ScenarioStep { admit: 1, row: Some(vec![0.5, 0.5]), heads: vec![vec![0.5, 0.5]], ..Default::default() }), al);
        assert_eq!(one(ScenarioStep::single(1, Some(vec![0.5, 0.5]))), None);
        // A bad weight in any head, including positions no set keeps.
        assert_eq!(with(ScenarioStep::per_head(1, vec![vec![0.5, 0.5], vec![0.5, -0.0]]), hc(2, 1)), av);
        assert_eq!(with(ScenarioStep::per_head(1, vec![vec![0.5, 0.5], vec![0.5, 0.5]]), hc(2, 1)), None);
        // The positions before the rows.
        assert_eq!(with(ScenarioStep::per_head(0, vec![vec![0.5]]), hc(2, 1)), Some((Category::Position, 1)));
        // Null attention: no `attention`, no `heads`.
        assert_eq!(with(ScenarioStep::per_head(1, vec![]), hc(2, 1)), None);
        // Steps in order: a row-count fault at step 1 is reported before a
        // position fault at step 2.
        let log = run(
            "h2o",
            &p,
            hc(2, 1),
            vec![ok_first.clone(), ScenarioStep::per_head(1, vec![vec![0.5, 0.5]]), ScenarioStep::per_head(0, vec![])],
        );
        assert_eq!((rejection(&log), log.steps.len()), (al, 1));
    }

    /// A record of one set: victims, cut, kept count, query position.
    fn rec(victims: &[u32], cut: &[(u32, f64)], kept_count: u32, query_cache_position: u32) -> StepRecord {
        StepRecord { victims: victims.to_vec(), kept_count, query_cache_position, cut: cut.to_vec(), ..Default::default() }
    }

    fn adakv(more: &[(&'static str, i64)]) -> Vec<(&'static str, i64)> {
        [("budget", 2), ("recent_window", 1), ("granularity", 2), ("adaptive", 1)].iter().chain(more).copied().collect()
    }

    #[test]
    fn adakv_worked_example() {
        // spec/policies/adakv.md, "How it works": h2o, two heads with one
        // set each, budget 2, recent_window 1, floor max(1, 2 * 200 / 1000)
        // = 1. A null chunk admits 0 and 1; step 1 gives head 0 (0.5, 0.25)
        // and head 1 (0.0625, 0.125) and admits 2. The layer keeps 6 of
        // L = 4: ranked head 1's 0, head 1's 1, head 0's 1, head 0's 0, so
        // both victims are head 1's.
        let steps = vec![
            ScenarioStep::per_head(2, vec![]),
            ScenarioStep::per_head(1, vec![vec![0.5, 0.25], vec![0.0625, 0.125]]),
            // Worked on: set 0 keeps 0, 1, 2 (sums 0.5, 0.25, 0), set 1
            // keeps 2 (sum 0). Head 0 adds (0.5, 0, 0.25), head 1 adds 0.5
            // at 2; 3 is admitted. Set 0: 0 -> 1.0, 1 -> 0.25, 2 -> 0.25;
            // set 1: 2 -> 0.5. T = 6, two pairs go: ranked (0.25, 1, set 0),
            // (0.25, 2, set 0), (0.5, 2, set 1), (1.0, 0, set 0).
            ScenarioStep::per_head(1, vec![vec![0.5, 0.0, 0.25], vec![0.0, 0.0, 0.5]]),
        ];
        for (heads, g) in [(hc(2, 1), 2), (hc(2, 2), 1)] {
            let mut p = adakv(&[]);
            p[2] = ("granularity", g);
            let log = run("h2o", &p, heads, steps.clone());
            assert!(log.rejection.is_none());
            assert_eq!(log.steps[0].sets, vec![rec(&[], &[], 2, 0), rec(&[], &[], 2, 0)]);
            assert_eq!(log.steps[1].sets, vec![rec(&[], &[], 3, 2), rec(&[0, 1], &[(0, 0.0625), (1, 0.125)], 1, 2)]);
            assert_eq!(
                log.steps[2].sets,
                vec![rec(&[1, 2], &[(1, 0.25), (2, 0.25), (0, 1.0)], 2, 3), rec(&[], &[], 2, 1)]
            );
            // The step's own fields stay empty with several sets.
            assert!(log.steps.iter().all(|r| r.victims.is_empty() && r.cut.is_empty() && r.kept_count == 0));
        }
        // Without the mode each set evicts its own lowest: head 0 position
        // 1, head 1 position 0.
        let log = run("h2o", &[("budget", 2), ("recent_window", 1), ("granularity", 2)], hc(2, 1), steps);
        assert_eq!(set_victims(&log, 1), vec![vec![1], vec![0]]);
    }

    /// Budget 4, recent_window 1, two sets: a null chunk of 4, then head 0
    /// all ones and head 1 (0.125, 0.25, 0.375, 0.5), admitting 4; then
    /// head 0 all ones and head 1 all zeros, admitting 5.
    fn floor_steps() -> Vec<ScenarioStep> {
        vec![
            ScenarioStep::per_head(4, vec![]),
            ScenarioStep::per_head(1, vec![vec![1.0; 4], vec![0.125, 0.25, 0.375, 0.5]]),
            ScenarioStep::per_head(1, vec![vec![1.0; 5], vec![0.0; 5]]),
        ]
    }

    #[test]
    fn adakv_floor_binds() {
        // Step 1: T = 10 of L = 8. Ranked: set 1's 0 (0.125) and 1 (0.25)
        // first, and set 1 keeps 3 >= any floor below: set 1 loses 0 and 1.
        // Step 2: set 0 keeps 0..5 (sums 2, 2, 2, 2, 1, 0), set 1 keeps
        // 2, 3, 4, 5 (sums 0.375, 0.5, 0, 0). T = 10, two go. Ranked:
        // (0, 4, set 1), (0.375, 2, set 1), (0.5, 3, set 1), (1, 4, set 0),
        // (2, 0, set 0), ...
        let p = |permille: i64| {
            let mut p = adakv(&[("safeguard_permille", permille)]);
            p[0] = ("budget", 4);
            p
        };
        // Default floor max(1, 4 * 200 / 1000) = 1: set 1 loses 4 and 2
        // and keeps 3 and 5.
        for permille in [200, 250, 499, 1] {
            let log = run("h2o", &p(permille), hc(2, 2), floor_steps());
            assert_eq!(log.steps[1].sets[1], rec(&[0, 1], &[(0, 0.125), (1, 0.25), (2, 0.375), (3, 0.5)], 3, 4));
            assert_eq!(log.steps[2].sets, vec![rec(&[], &[], 6, 5), rec(&[2, 4], &[(4, 0.0), (2, 0.375), (3, 0.5)], 2, 3)]);
        }
        // safeguard 0 (floor 0) gives the same here: set 1 is not emptied
        // beyond its candidates.
        assert_eq!(run("h2o", &p(0), hc(2, 2), floor_steps()), run("h2o", &p(200), hc(2, 2), floor_steps()));
        // Floor 4 * 750 / 1000 = 3: set 1 stops at 3 after losing 4, its
        // 2 and 3 are passed over, and set 0 gives its 4.
        let log = run("h2o", &p(750), hc(2, 2), floor_steps());
        assert_eq!(log.steps[1].sets[1].victims, vec![0, 1]);
        assert_eq!(
            log.steps[2].sets,
            vec![
                rec(&[4], &[(4, 1.0), (0, 2.0), (1, 2.0), (2, 2.0), (3, 2.0)], 5, 5),
                rec(&[4], &[(4, 0.0), (2, 0.375), (3, 0.5)], 3, 3),
            ]
        );
        // The floor is reached, not crossed: 500 gives floor 2, and set 1
        // (4 after admitting 5) loses 4 and 2, keeping 2.
        let log = run("h2o", &p(500), hc(2, 2), floor_steps());
        assert_eq!(set_victims(&log, 2), vec![vec![], vec![2, 4]]);
    }

    #[test]
    fn adakv_safeguard_1000_evicts_as_adaptive_0() {
        // Floor = budget: every set keeps exactly budget, as without the
        // mode (the worked steps, then random scenarios for every policy).
        let p = |adaptive: i64, permille: i64| {
            let mut p = adakv(&[("safeguard_permille", permille)]);
            p[0] = ("budget", 4);
            p[3] = ("adaptive", adaptive);
            p
        };
        let fixed = run("h2o", &p(0, 1000), hc(2, 2), floor_steps());
        assert_eq!(run("h2o", &p(1, 1000), hc(2, 2), floor_steps()), fixed);
        // Step 1 by hand: each set loses its own lowest, set 0 its 0 (all
        // tie at 1.0), set 1 its 0 (0.125).
        assert_eq!(set_victims(&fixed, 1), vec![vec![0], vec![0]]);
        assert_ne!(run("h2o", &p(1, 200), hc(2, 2), floor_steps()), fixed);
        let steps = random_steps(5, 4, 40);
        let mut differ = 0;
        for (policy, extra) in [("h2o", vec![]), ("tova", vec![]), ("snapkv", vec![("obs_window", 3), ("pool_kernel", 3)])] {
            for g in 1..3 {
                for agg in 0..3 {
                    let base = [("budget", 5), ("recent_window", 2), ("granularity", g), ("aggregation", agg)];
                    let mut fixed_p = base.to_vec();
                    fixed_p.extend(extra.iter().cloned());
                    let mut shared_p = fixed_p.clone();
                    shared_p.extend([("adaptive", 1), ("safeguard_permille", 1000)]);
                    let fixed = run(policy, &fixed_p, hc(4, 2), steps.clone());
                    assert!(fixed.rejection.is_none());
                    assert_eq!(run(policy, &shared_p, hc(4, 2), steps.clone()), fixed, "{policy} {g} {agg}");
                    // The default floor (1) shares the budget: the layer
                    // keeps at most budget * S, each set at least its
                    // floor, and the sets' kept counts come to differ (not
                    // always: h2o here evicts every set's newest candidates).
                    shared_p.pop();
                    let shared = run(policy, &shared_p, hc(4, 2), steps.clone());
                    let s = shared.steps[0].sets.len() as u32;
                    for r in &shared.steps {
                        let total: u32 = r.sets.iter().map(|x| x.kept_count).sum();
                        assert!(total <= 5 * s);
                        assert!(r.sets.iter().all(|x| x.kept_count >= 1));
                    }
                    differ += shared.steps.iter().any(|r| r.sets.iter().any(|x| x.kept_count != r.sets[0].kept_count)) as usize;
                }
            }
        }
        assert!(differ >= 6, "{differ}");
    }

    #[test]
    fn adakv_ties_across_sets() {
        // Budget 3, recent_window 1, two sets: a null chunk of 3, then one
        // step admitting 3. T = 8 of L = 6: two pairs go.
        let p = adakv(&[]).iter().map(|&(n, v)| if n == "budget" { (n, 3) } else { (n, v) }).collect::<Vec<_>>();
        let steps = |h0: Vec<f32>, h1: Vec<f32>| vec![ScenarioStep::per_head(3, vec![]), ScenarioStep::per_head(1, vec![h0, h1])];
        // Set 0 scores (0.75, 1, 0.25), set 1 (0.0625, 0.75, 0.25). Ranked:
        // (0.0625, 0, set 1), then 0.25 at position 2 in both sets: the
        // lower set goes first, so set 0 loses 2, set 1 keeps its 2.
        let log = run("h2o", &p, hc(2, 2), steps(vec![0.75, 1.0, 0.25], vec![0.0625, 0.75, 0.25]));
        assert_eq!(
            log.steps[1].sets,
            vec![
                rec(&[2], &[(2, 0.25), (0, 0.75), (1, 1.0)], 3, 3),
                rec(&[0], &[(0, 0.0625), (2, 0.25), (1, 0.75)], 3, 3),
            ]
        );
        // The heads swapped: (0.0625, 0, set 0), (0.25, 2, set 0), then
        // set 1's 2: set 0 loses both, set 1 nothing.
        let log = run("h2o", &p, hc(2, 2), steps(vec![0.0625, 0.75, 0.25], vec![0.75, 1.0, 0.25]));
        assert_eq!(
            log.steps[1].sets,
            vec![rec(&[0, 2], &[(0, 0.0625), (2, 0.25), (1, 0.75)], 2, 3), rec(&[], &[], 4, 3)]
        );
        // Position before set: set 1's 0.25 at position 1 goes before set
        // 0's 0.25 at position 2 (and set 0's 0.0625 at 0 first).
        let log = run("h2o", &p, hc(2, 2), steps(vec![0.0625, 0.75, 0.25], vec![0.75, 0.25, 0.5]));
        assert_eq!(set_victims(&log, 1), vec![vec![0], vec![1]]);
        // Equal scores everywhere: position 0 of both sets (position before
        // set, then the lower set never takes a second).
        let log = run("h2o", &p, hc(2, 2), steps(vec![0.5; 3], vec![0.5; 3]));
        assert_eq!(set_victims(&log, 1), vec![vec![0], vec![0]]);
    }

    #[test]
    fn adakv_with_one_set_changes_nothing() {
        let steps = random_steps(9, 4, 30);
        for policy in ["h2o", "tova", "snapkv"] {
            let base = [("budget", 4), ("recent_window", 1), ("granularity", 0)];
            let fixed = run(policy, &base, hc(4, 2), steps.clone());
            assert!(fixed.steps.iter().any(|r| !r.victims.is_empty()));
            for permille in [0, 200, 1000] {
                let mut p = base.to_vec();
                p.extend([("adaptive", 1), ("safeguard_permille", permille)]);
                assert_eq!(run(policy, &p, hc(4, 2), steps.clone()), fixed, "{policy} {permille}");
            }
        }
    }

    #[test]
    fn adakv_parameters() {
        let cat = |name: &str, p: &[(&str, i64)]| {
            registry::build(name, &params(p), 0).err().map(|r| (r.category, r.message))
        };
        for policy in ["h2o", "tova", "snapkv"] {
            for (n, v) in [("adaptive", -1), ("adaptive", 2), ("safeguard_permille", -1), ("safeguard_permille", 1001)] {
                let m = cat(policy, &[("budget", 32), (n, v)]).unwrap();
                assert_eq!(m.0, Category::InvalidParameter);
                assert!(m.1.contains(&format!("{n} must be in")), "{}", m.1);
            }
            for (n, v) in [("adaptive", 0), ("adaptive", 1), ("safeguard_permille", 0), ("safeguard_permille", 1000)] {
                assert!(cat(policy, &[("budget", 32), (n, v)]).is_none());
            }
            // Card order: aggregation, then adaptive, then safeguard_permille.
            let m = cat(policy, &[("safeguard_permille", 2000), ("adaptive", 5), ("aggregation", 3)]).unwrap().1;
            assert!(m.contains("aggregation"), "{m}");
            let m = cat(policy, &[("safeguard_permille", 2000), ("adaptive", 5)]).unwrap().1;
            assert!(m.contains("adaptive must be in [0, 1], got 5"), "{m}");
        }
        for policy in ["full", "window", "streamingllm", "random"] {
            for n in ["adaptive", "safeguard_permille"] {
                assert_eq!(cat(policy, &[(n, 0)]).unwrap().0, Category::InvalidParameter, "{policy} {n}");
            }
        }
    }

    /// The attention policies with small budgets, so that a 300-step
    /// canonical trace evicts from step 24 on.
    fn trace_policies() -> Vec<(&'static str, Vec<(&'static str, i64)>)> {
        vec![
            ("h2o", vec![("budget", 24), ("recent_window", 4)]),
            ("tova", vec![("budget", 24), ("recent_window", 4)]),
            ("snapkv", vec![("budget", 24), ("recent_window", 4), ("obs_window", 8), ("pool_kernel", 3)]),
        ]
    }

    fn with(p: &[(&'static str, i64)], more: &[(&'static str, i64)]) -> Vec<(String, i64)> {
        params(&p.iter().chain(more).copied().collect::<Vec<_>>())
    }

    #[test]
    fn trace_head_0_at_query_head_is_the_single_head_trace() {
        // spec/trace.md#several-heads: head 0 of every multi-head trace is
        // the single-head trace, and each head's generator streams as one
        // head's does. So at granularity query_head, set 0 keeps exactly
        // what the single-head trace keeps, step for step (victims, counts,
        // cut), and set h what a single-head trace of head h's
        // configuration keeps.
        let base = TraceParams::canonical(300);
        for (policy, p) in trace_policies() {
            let multi = run_scenario_with_heads(
                policy,
                &with(&p, &[("granularity", 2)]),
                0,
                hc(4, 2),
                &Scenario::Trace(base.clone()),
            );
            assert!(multi.rejection.is_none(), "{policy}: {:?}", multi.rejection);
            assert_eq!(multi.steps.len(), 300);
            let single = run_scenario(policy, &params(&p), 0, &Scenario::Trace(base.clone()));
            assert!(single.steps.iter().any(|r| !r.victims.is_empty()));
            let set = |h: usize| multi.steps.iter().map(|r| r.sets[h].clone()).collect::<Vec<_>>();
            assert_eq!(set(0), single.steps, "{policy}: head 0");
            for h in 1..4 {
                let own = run_scenario(policy, &params(&p), 0, &Scenario::Trace(base.for_head(h as u32)));
                assert_eq!(set(h), own.steps, "{policy}: head {h}");
                // The roles change what a head keeps.
                assert_ne!(set(h), set(0), "{policy}: head {h}");
            }
            // The step's own fields are empty with several sets.
            assert!(multi.steps.iter().all(|r| r.victims.is_empty() && r.cut.is_empty() && r.kept_count == 0));
        }
    }

    #[test]
    fn trace_sets_by_granularity() {
        // Hq 4, Hkv 2 over the canonical trace: layer logs one set in the
        // step's own fields; kv_head two sets; without GQA (Hkv = Hq)
        // kv_head and query_head are the same sets. A set of several heads
        // keeps what none of its heads alone would (the heads' roles
        // differ), so kv_head's set 0 differs from query_head's set 0.
        let base = Scenario::Trace(TraceParams::canonical(300));
        for (policy, p) in trace_policies() {
            let run_g = |g: i64, heads| run_scenario_with_heads(policy, &with(&p, &[("granularity", g)]), 0, heads, &base);
            let layer = run_g(0, hc(4, 2));
            assert!(layer.rejection.is_none() && layer.steps.iter().all(|r| r.sets.is_empty()), "{policy}");
            assert_eq!(layer.steps[299].kept_count, 24);
            let kv = run_g(1, hc(4, 2));
            assert!(kv.steps.iter().all(|r| r.sets.len() == 2), "{policy}");
            let q = run_g(2, hc(4, 2));
            let set0 = |log: &EvictionLog| log.steps.iter().map(|r| r.sets[0].clone()).collect::<Vec<_>>();
            assert_ne!(set0(&kv), set0(&q), "{policy}");
            assert_eq!(run_g(1, hc(4, 4)), run_g(2, hc(4, 4)), "{policy}");
            // The default granularity is kv_head.
            assert_eq!(run_scenario_with_heads(policy, &params(&p), 0, hc(4, 2), &base), kv, "{policy}");
        }
    }

    #[test]
    fn trace_with_heads_for_policies_that_read_no_attention() {
        // One set covering every head, logged in the step's own fields:
        // the same log as the single-head trace.
        let base = Scenario::Trace(TraceParams::canonical(200));
        for (policy, p) in [
            ("full", vec![]),
            ("window", vec![("budget", 16)]),
            ("streamingllm", vec![("budget", 16), ("sinks", 4)]),
            ("random", vec![("budget", 16), ("recent_window", 2)]),
        ] {
            let one = run_scenario(policy, &params(&p), 7, &base);
            for heads in [hc(2, 1), hc(4, 2), hc(3, 3)] {
                assert_eq!(run_scenario_with_heads(policy, &params(&p), 7, heads, &base), one, "{policy} {heads:?}");
            }
        }
    }

    #[test]
    fn directly_given_trace_with_heads() {
        // The configuration is checked first, then the trace runs with its
        // heads (no refusal for a trace of several heads since spec 0.5.0).
        let trace = Scenario::Trace(crate::trace::TraceParams::canonical(4));
        let log = run_scenario_with_heads("window", &params(&[("budget", 0)]), 0, hc(2, 1), &trace);
        assert_eq!(rejection(&log), Some((Category::InvalidParameter, -1)));
        let log = run_scenario_with_heads("h2o", &params(&[("budget", 2), ("recent_window", 0)]), 0, hc(2, 2), &trace);
        assert_eq!(rejection(&log), None);
        assert_eq!(log.steps.len(), 4);
        assert!(log.steps.iter().all(|r| r.sets.len() == 2));
        assert_eq!(log.steps[3].sets.iter().map(|s| (s.kept_count, s.query_cache_position)).collect::<Vec<_>>(), vec![(2, 2); 2]);
    }
}
