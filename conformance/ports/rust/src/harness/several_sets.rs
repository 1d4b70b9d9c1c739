//! Every kept set of a run (`Layer`): the sets of a configuration over a
//! scenario's heads (spec/heads.md#kept-sets,
//! spec/heads.md#policies-that-do-not-read-attention), one step of each set in
//! set order, a decode step or a prefill step
//! (spec/prefill.md#the-prefill-step), with its keys in a scenario with keys
//! (spec/tensors.md#what-a-policy-sees), and the step's record, one per set in
//! `sets` when there are several (spec/heads.md#the-eviction-log). And the
//! shared budget of `adaptive` 1 with at least two sets (`SharedBudget`,
//! `Layer::evict_shared`; spec/heads.md#head-adaptive-budgets), whose floor
//! and joint ranking are `heads::floor_of` and `heads::shared_victim_counts`.
//! The shared budget has no file of its own: it is a method of `Layer`, and
//! `Layer` holds it, so such a file and this one would import each other.

use super::log::StepRecord;
use super::one_set::KeptSet;
use super::refusals::{CheckedStep, StepRows};
use crate::error::Result;
use crate::heads::{floor_of, sets_of, shared_victim_counts, Aggregation, HeadCounts, Pair};
use crate::policies::rank;
use crate::prefill::Totals;
use crate::registry;
use crate::tensors::StepVectors;

/// A step's keys and values, each `None` in a scenario without them
/// (spec/tensors.md#what-a-policy-sees).
pub(super) type Tensors<'a> = (Option<StepVectors<'a>>, Option<StepVectors<'a>>);

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
    /// unit for a policy that takes `granularity`, one covering every head
    /// otherwise (spec/heads.md#kept-sets). A set holds one state per query
    /// head it covers, or, for a policy that reads keys, one per KV head it
    /// covers (spec/policies/knorm.md#several-kv-heads). Every state is
    /// built from the same configuration.
    pub fn build(name: &str, params: &[(String, i64)], seed: u64, heads: HeadCounts) -> Result<Self> {
        let first = registry::build(name, params, seed)?;
        let options = first.head_options();
        let budget = first.budget();
        let group = heads.group() as usize;
        let reads_keys = first.reads_keys();
        let sets = match options {
            None => vec![KeptSet::new((0..heads.query as usize).collect(), group, vec![first], Aggregation::Mean)],
            Some(opts) => {
                let mut first = Some(first);
                let mut sets = Vec::new();
                for covered in sets_of(opts.granularity, heads) {
                    // A set's heads are ascending, so its KV heads are
                    // `covered[0] / G ..= covered[last] / G`.
                    let count = if reads_keys {
                        covered[covered.len() - 1] / group - covered[0] / group + 1
                    } else {
                        covered.len()
                    };
                    let mut states = Vec::with_capacity(count);
                    for _ in 0..count {
                        states.push(match first.take() {
                            Some(p) => p,
                            None => registry::build(name, params, seed)?,
                        });
                    }
                    sets.push(KeptSet::new(covered, group, states, opts.aggregation));
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
    pub(super) fn reads_attention(&self) -> bool {
        self.sets.iter().any(|s| s.reads_attention())
    }

    /// One validated step: one full-cache row per query head, null
    /// attention for every head, or query rows (a prefill step), with its
    /// keys in a scenario with keys. Returns the step's record
    /// (spec/heads.md#the-eviction-log).
    pub(super) fn step(&mut self, first: u64, count: u64, step: &CheckedStep) -> StepRecord {
        let tensors = (step.keys, step.values);
        match &step.rows {
            StepRows::Rows(rows) => self.step_with(first, count, Some(&|h: usize, p: u32| rows[h][p as usize]), tensors),
            StepRows::Null => self.step_with(first, count, None::<&fn(usize, u32) -> f32>, tensors),
            StepRows::Queries { rows, totals } => self.step_prefill(first, count, rows, *totals, tensors),
        }
    }

    /// One validated prefill step (spec/prefill.md#the-prefill-step), with
    /// `queries` the step's `Hq x m` query rows and `totals` its column
    /// totals, if any: each set, in set order, admits the chunk, hands
    /// each covered head its gathered query rows (and totals), or each
    /// covered KV head its keys and values of the chunk, then evicts
    /// by its step budget with the prefill rule's scores and candidates;
    /// under a shared budget the sets evict together once all have
    /// recorded.
    fn step_prefill(
        &mut self,
        first: u64,
        count: u64,
        queries: &[&[f32]],
        totals: Option<Totals>,
        (keys, values): Tensors,
    ) -> StepRecord {
        let m = queries.len() / self.query_heads;
        let last = first + count - 1;
        let mut records = Vec::with_capacity(self.sets.len());
        for set in &mut self.sets {
            let mut record = set.begin_step(count);
            set.admit_step(first, count, &mut record);
            set.record_queries(queries, m, last, totals);
            set.record_tensors(keys, values);
            set.end_of_records();
            if self.shared.is_none() {
                records.push(set.evict(record, count, true));
            } else {
                records.push(record);
            }
        }
        self.finish_step(records, true)
    }

    /// One validated step, each head's weights given by `weight(h, p)` (or
    /// `None`: null attention for every head), and the step's keys and
    /// values in a scenario with them. Each set, in set order, records its
    /// heads' weights at its own kept positions, admits (handed its KV
    /// heads' keys and values of the admitted positions), then evicts down to its budget;
    /// under a shared budget the sets evict together once all have
    /// admitted.
    pub(super) fn step_with<W: Fn(usize, u32) -> f32>(
        &mut self,
        first: u64,
        count: u64,
        weight: Option<&W>,
        (keys, values): Tensors,
    ) -> StepRecord {
        let mut records = Vec::with_capacity(self.sets.len());
        for set in &mut self.sets {
            if let Some(weight) = weight {
                set.record_with(weight, &mut self.gathered);
            }
            let mut record = set.begin_step(count);
            set.admit_step(first, count, &mut record);
            set.record_tensors(keys, values);
            set.end_of_records();
            if self.shared.is_none() {
                records.push(set.evict(record, count, false));
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
