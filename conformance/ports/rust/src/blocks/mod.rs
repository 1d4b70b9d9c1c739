//! Blocks (spec/blocks.md, feature `blocks`, spec 0.13.0): evicting whole
//! blocks of positions, as paged caches do. `block` (every policy that
//! evicts) and `block_score` (`h2o`, `tova`, `snapkv`), listed after
//! `slack` and `interval`; their rules (spec/blocks.md#rules), checked
//! after every other rule of the card; and the arithmetic of an eviction
//! by blocks over one kept set's slots: how many closed blocks go
//! (spec/blocks.md#how-many-blocks-go), which blocks are candidates
//! (spec/blocks.md#candidates), each candidate block's score and their
//! ranking (spec/blocks.md#ranking-blocks) with the cut
//! (spec/blocks.md#the-cut). The kept set (`harness::KeptSet::evict`)
//! calls these with its own slots and scores; positional policies and
//! `random` choose among the candidate blocks themselves
//! (`Policy::choose_blocks`). With `block` 1 the harness does not come
//! here: every log is what it was before 0.13.0. The spec's examples and
//! hand-worked cases, through whole scenarios: `scenario_tests.rs`.
//!
//! Imports `error`, `params` and `spans` only, none of which imports it.

use std::ops::Range;

use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::params::ParamSpec;
use crate::spans::{EvictAt, SpanOptions};

/// `block` (spec/blocks.md#parameters).
pub(crate) const BLOCK: ParamSpec = ParamSpec { name: "block", default: 1, min: 1, max: 65536 };
/// `block_score` (spec/blocks.md#parameters).
pub(crate) const BLOCK_SCORE: ParamSpec = ParamSpec { name: "block_score", default: 0, min: 0, max: 2 };
/// The block parameters of the positional policies and `random`, listed
/// after `slack` and `interval`.
pub(crate) const POSITIONAL_BLOCK_PARAMS: [ParamSpec; 1] = [BLOCK];
/// The block parameters of the score-based policies (`h2o`, `tova`,
/// `snapkv`), listed after `slack` and `interval`, in this order.
pub(crate) const SCORED_BLOCK_PARAMS: [ParamSpec; 2] = [BLOCK, BLOCK_SCORE];

/// `block_score`: a block's score from its positions' scores
/// (spec/blocks.md#ranking-blocks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockScore {
    /// 0: the binary64 sum of the block's scores in slot order, from +0.0.
    #[default]
    Sum,
    /// 1: that sum divided by `block`, one binary64 division.
    Mean,
    /// 2: the largest of the block's scores.
    Max,
}

/// `block` and `block_score` of one configuration; `block` 1 (the
/// default): every eviction is by positions, as before 0.13.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockOptions {
    /// `B`, positions per block, in `[1, 65536]`.
    pub block: usize,
    /// `Sum` for the policies that do not take `block_score`.
    pub score: BlockScore,
}

impl Default for BlockOptions {
    fn default() -> Self {
        BlockOptions { block: 1, score: BlockScore::Sum }
    }
}

impl BlockOptions {
    /// From the range-checked values of `block` and, for a score-based
    /// policy, `block_score`, in that order (`v` holds one or two values).
    pub(crate) fn from_params(v: &[i64]) -> Self {
        let score = match v.get(1) {
            Some(1) => BlockScore::Mean,
            Some(2) => BlockScore::Max,
            _ => BlockScore::Sum,
        };
        BlockOptions { block: v[0] as usize, score }
    }

    /// Does the policy evict by blocks of more than one position?
    pub fn by_blocks(self) -> bool {
        self.block > 1
    }

    /// The rules of spec/blocks.md#rules, checked after every other rule of
    /// the card, with `block` above 1 only, in order (`INVALID_PARAMETER`):
    /// 1. each of `areas` (`budget`, then `recent_window` and `sinks`, those
    ///    the policy takes, with their values) is a multiple of `block`:
    ///    `rule block budget` (`rule block recent_window`, `rule block
    ///    sinks`);
    /// 2. each of `others` (`ratio_ppm`, `adaptive`, `evict_at`,
    ///    `context_shift`, `window_budget`, those the policy takes, with
    ///    their values, in that order) is 0; the first that is not is
    ///    named: `rule block ratio_ppm` (`rule block adaptive`, ...).
    ///
    /// [`span_values`] gives `evict_at` and `context_shift` of a policy
    /// that takes the span parameters.
    pub(crate) fn check(self, policy: &str, areas: &[(&str, u64)], others: &[(&str, u64)]) -> Result<()> {
        if !self.by_blocks() {
            return Ok(());
        }
        let refuse = |name: &str, m: String| {
            Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Rule, &["block", name]), format!("{policy}: {m}")))
        };
        let b = self.block as u64;
        for &(name, value) in areas {
            if value % b != 0 {
                return refuse(name, format!("{name} must be a multiple of block, got {name} {value}, block {b}"));
            }
        }
        for &(name, value) in others {
            if value != 0 {
                return refuse(name, format!("block above 1 needs {name} 0, got {name} {value}, block {b}"));
            }
        }
        Ok(())
    }

    /// `k`, how many closed blocks a step that evicts takes from a set
    /// keeping `n` after its admissions with step budget `budget`
    /// (spec/blocks.md#how-many-blocks-go): `floor(n / B) - budget / B`
    /// when above 0 (`budget` is a multiple of `B`), and 0 otherwise. So a
    /// step evicts only once `n >= budget + B`, and leaves
    /// `budget + n mod B` kept.
    pub fn blocks_to_evict(self, n: usize, budget: u64) -> usize {
        let closed = (n / self.block) as u64;
        closed.saturating_sub(budget / self.block as u64) as usize
    }

    /// The candidate blocks (spec/blocks.md#candidates) of a set whose
    /// candidate positions are the slots `first_slot .. end_slot` (the
    /// card's rule: after the sinks, before the recent window and what a
    /// prefill step takes out): the closed blocks every slot of which is
    /// among them, as block indices (block `j` holds slots `jB .. jB + B -
    /// 1`). A block holding a sink or a protected slot is not one, and the
    /// open block never is (`end_slot <= n`).
    pub fn candidate_blocks(self, first_slot: usize, end_slot: usize) -> Range<usize> {
        let first = first_slot.div_ceil(self.block);
        let end = end_slot / self.block;
        first..end.max(first)
    }

    /// The slots of blocks `blocks` (block indices), each block's slots
    /// ascending, blocks in the order given.
    pub fn slots_of(self, blocks: &[usize]) -> Vec<usize> {
        blocks.iter().flat_map(|&j| j * self.block..(j + 1) * self.block).collect()
    }

    /// Block `j`'s score from the per-slot `scores`
    /// (spec/blocks.md#ranking-blocks): `Sum`, the binary64 sum of its
    /// `B` scores in slot order into an accumulator starting at +0.0
    /// (spec/arithmetic.md#reductions); `Mean`, that sum divided by `B`
    /// in one binary64 division; `Max`, the largest of them.
    pub fn block_score(self, scores: &[f64], j: usize) -> f64 {
        let slots = &scores[j * self.block..(j + 1) * self.block];
        match self.score {
            BlockScore::Sum => sum(slots),
            BlockScore::Mean => sum(slots) / self.block as f64,
            BlockScore::Max => slots.iter().copied().fold(slots[0], f64::max),
        }
    }

    /// A score-based set's victims (spec/blocks.md#ranking-blocks): its
    /// candidate blocks `candidates` ranked by block score ascending, then
    /// first position ascending (block index ascending: a set's slots are
    /// in ascending position order), the first `k` going. Returns the
    /// victim slots (the blocks in rank order, each one's slots ascending)
    /// and the cut (spec/blocks.md#the-cut): the victim blocks in rank
    /// order, then up to 4 more candidate blocks, each as its first slot
    /// and its block score.
    pub fn rank(self, scores: &[f64], candidates: Range<usize>, k: usize) -> (Vec<usize>, Vec<(usize, f64)>) {
        debug_assert!(k <= candidates.len());
        let mut ranked: Vec<(f64, usize)> = candidates.map(|j| (self.block_score(scores, j), j)).collect();
        ranked.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).expect("block scores are never NaN").then(a.1.cmp(&b.1)));
        ranked.truncate(k + 4);
        let victims: Vec<usize> = ranked[..k].iter().map(|&(_, j)| j).collect();
        let cut = ranked.iter().map(|&(s, j)| (j * self.block, s)).collect();
        (self.slots_of(&victims), cut)
    }
}

/// The binary64 sum of `x` in order, from +0.0.
fn sum(x: &[f64]) -> f64 {
    let mut s = 0.0f64;
    for &v in x {
        s += v;
    }
    s
}

/// `evict_at` and `context_shift` of a policy that takes the span
/// parameters, with their values, for rule 2 of [`BlockOptions::check`].
pub(crate) fn span_values(spans: SpanOptions) -> [(&'static str, u64); 2] {
    let evict_at = match spans.evict_at {
        EvictAt::After => 0,
        EvictAt::RoomForStep => 1,
        EvictAt::BelowBudget => 2,
    };
    [("evict_at", evict_at), ("context_shift", spans.context_shift as u64)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(block: usize, score: BlockScore) -> BlockOptions {
        BlockOptions { block, score }
    }

    #[test]
    fn from_params_reads_block_then_block_score() {
        assert_eq!(BlockOptions::from_params(&[1]), BlockOptions::default());
        assert_eq!(BlockOptions::from_params(&[4]), options(4, BlockScore::Sum));
        assert_eq!(BlockOptions::from_params(&[2, 0]), options(2, BlockScore::Sum));
        assert_eq!(BlockOptions::from_params(&[2, 1]), options(2, BlockScore::Mean));
        assert_eq!(BlockOptions::from_params(&[65536, 2]), options(65536, BlockScore::Max));
        assert!(!BlockOptions::default().by_blocks());
        assert!(options(2, BlockScore::Sum).by_blocks());
    }

    #[test]
    fn how_many_blocks_go() {
        // spec/blocks.md#how-many-blocks-go, budget 4, block 2: nothing
        // until n = budget + B = 6; then floor(n/2) - 2.
        let b = options(2, BlockScore::Sum);
        assert_eq!((0..=9).map(|n| b.blocks_to_evict(n, 4)).collect::<Vec<_>>(), [0, 0, 0, 0, 0, 0, 1, 1, 2, 2]);
        // budget 32, block 4, a chunk of 61: 15 - 8 = 7 blocks.
        assert_eq!(options(4, BlockScore::Sum).blocks_to_evict(61, 32), 7);
        assert_eq!(options(4, BlockScore::Sum).blocks_to_evict(35, 32), 0);
        assert_eq!(options(4, BlockScore::Sum).blocks_to_evict(36, 32), 1);
        // The top of both ranges.
        assert_eq!(options(65536, BlockScore::Sum).blocks_to_evict(65536 * 3 + 5, 65536), 2);
        // budget 65535 * 65536, the largest multiple in budget's range:
        // nothing until budget + B.
        assert_eq!(options(65536, BlockScore::Sum).blocks_to_evict(65536 * 65536 - 1, 4294901760), 0);
        assert_eq!(options(65536, BlockScore::Sum).blocks_to_evict(65536 * 65536, 4294901760), 1);
    }

    #[test]
    fn candidate_blocks_are_closed_and_wholly_candidates() {
        let b = options(2, BlockScore::Sum);
        // Six kept, recent window 2: candidate slots 0..4, blocks 0 and 1.
        assert_eq!(b.candidate_blocks(0, 4), 0..2);
        // Seven kept, no window: the open block (slot 6) is not one.
        assert_eq!(b.candidate_blocks(0, 7), 0..3);
        // Sinks 2 (slots 0, 1): the first block holds them.
        assert_eq!(b.candidate_blocks(2, 10), 1..5);
        // A block partly protected is not a candidate: slots 1..5 leave
        // only block 1 (slots 2, 3) whole.
        assert_eq!(b.candidate_blocks(1, 5), 1..2);
        // Fewer candidate slots than a block: none.
        assert_eq!(options(4, BlockScore::Sum).candidate_blocks(0, 3), 0..0);
        assert_eq!(options(4, BlockScore::Sum).candidate_blocks(3, 5).len(), 0);
        assert_eq!(b.slots_of(&[2, 0]), vec![4, 5, 0, 1]);
    }

    #[test]
    fn block_scores() {
        // spec/blocks.md's h2o example: sums 0.75, 0, 0.5, 0.5 for slots
        // 0 to 3.
        let scores = [0.75, 0.0, 0.5, 0.5, 0.25, 0.0];
        let sum = options(2, BlockScore::Sum);
        let mean = options(2, BlockScore::Mean);
        let max = options(2, BlockScore::Max);
        assert_eq!([sum.block_score(&scores, 0), sum.block_score(&scores, 1)], [0.75, 1.0]);
        assert_eq!([mean.block_score(&scores, 0), mean.block_score(&scores, 1)], [0.375, 0.5]);
        assert_eq!([max.block_score(&scores, 0), max.block_score(&scores, 1)], [0.75, 0.5]);
        // The largest wherever it is in the block.
        assert_eq!(options(3, BlockScore::Max).block_score(&[0.25, 1.0, 0.5, 0.0, 0.0, 2.0], 1), 2.0);
        assert_eq!(options(3, BlockScore::Max).block_score(&[0.25, 1.0, 0.5], 0), 1.0);
        // Slot order from +0.0: in (1e16, 1, 1) each 1 is added alone to
        // 1e16, a tie at ulp 2 that rounds back to the even 1e16; in
        // (1, 1, 1e16) the 1s make 2 first, and 2 + 1e16 is exact.
        assert_eq!(sum.block_score(&[1e16, 1.0], 0), 1e16);
        assert_eq!(options(3, BlockScore::Sum).block_score(&[1e16, 1.0, 1.0], 0), 1e16);
        assert_eq!(options(3, BlockScore::Sum).block_score(&[1.0, 1.0, 1e16], 0), 1e16 + 2.0);
        // +infinity (snapkv's window at prefill) stays +infinity.
        assert_eq!(mean.block_score(&[f64::INFINITY, 0.5], 0), f64::INFINITY);
        // Mean: one division of the sum by B, 3 + 2^-51 over 3 rounds to
        // 1 + 2^-52.
        let s = 3.0 + 2f64.powi(-51);
        assert_eq!(options(3, BlockScore::Mean).block_score(&[2f64.powi(-51), 3.0, 0.0], 0), 1.0 + 2f64.powi(-52));
        assert_eq!(options(3, BlockScore::Sum).block_score(&[2f64.powi(-51), 3.0, 0.0], 0), s);
    }

    #[test]
    fn rank_by_score_then_first_position() {
        // Blocks of 2 over eight slots: sums 1.0, 0.5, 0.5, 0.25.
        let scores = [0.5, 0.5, 0.25, 0.25, 0.0, 0.5, 0.125, 0.125];
        let b = options(2, BlockScore::Sum);
        let (victims, cut) = b.rank(&scores, 0..4, 2);
        // 0.25 (block 3) first, then the tie 0.5 of blocks 1 and 2: the
        // older, block 1, goes.
        assert_eq!(victims, vec![6, 7, 2, 3]);
        assert_eq!(cut, vec![(6, 0.25), (2, 0.5), (4, 0.5), (0, 1.0)]);
        // Only candidate blocks are ranked: blocks 0 and 1.
        let (victims, cut) = b.rank(&scores, 0..2, 1);
        assert_eq!(victims, vec![2, 3]);
        assert_eq!(cut, vec![(2, 0.5), (0, 1.0)]);
        // The cut stops 4 blocks after the victims.
        let many: Vec<f64> = (0..20).map(|i| (20 - i) as f64).collect();
        let (victims, cut) = b.rank(&many, 0..10, 1);
        assert_eq!(victims, vec![18, 19]);
        assert_eq!(cut.iter().map(|c| c.0).collect::<Vec<_>>(), [18, 16, 14, 12, 10]);
        assert_eq!(cut[0].1, 3.0);
        // Candidate blocks starting past block 0 (sinks): named by slot.
        let (victims, cut) = b.rank(&scores, 2..4, 1);
        assert_eq!(victims, vec![6, 7]);
        assert_eq!(cut, vec![(6, 0.25), (4, 0.5)]);
    }

    #[test]
    fn rules_in_order() {
        let subject = |block, areas: &[(&str, u64)], others: &[(&str, u64)]| {
            options(block, BlockScore::Sum).check("p", areas, others).err().map(|r| (r.category, r.subject.names.join(" ")))
        };
        let rule = |names: &str| Some((Category::InvalidParameter, names.to_string()));
        // Block 1: no rule.
        assert_eq!(subject(1, &[("budget", 3)], &[("ratio_ppm", 5)]), None);
        assert_eq!(subject(2, &[("budget", 4), ("recent_window", 2)], &[("ratio_ppm", 0)]), None);
        assert_eq!(subject(2, &[("budget", 3), ("recent_window", 1)], &[("ratio_ppm", 5)]), rule("block budget"));
        assert_eq!(subject(2, &[("budget", 4), ("recent_window", 1)], &[("ratio_ppm", 5)]), rule("block recent_window"));
        assert_eq!(subject(4, &[("budget", 8), ("sinks", 2)], &[]), rule("block sinks"));
        assert_eq!(subject(4, &[("budget", 8), ("sinks", 0)], &[]), None);
        // Rule 1 before rule 2; in rule 2 the first not 0.
        assert_eq!(subject(2, &[("budget", 4)], &[("ratio_ppm", 5), ("adaptive", 1)]), rule("block ratio_ppm"));
        assert_eq!(subject(2, &[("budget", 4)], &[("ratio_ppm", 0), ("adaptive", 1)]), rule("block adaptive"));
        assert_eq!(subject(2, &[("budget", 4)], &[("evict_at", 0), ("context_shift", 1)]), rule("block context_shift"));
        assert_eq!(subject(2, &[("budget", 4)], &[("adaptive", 0), ("window_budget", 1)]), rule("block window_budget"));
        assert_eq!(subject(65536, &[("budget", 65536 * 3)], &[("evict_at", 0)]), None);
    }

    #[test]
    fn span_values_name_evict_at_then_context_shift() {
        let mut s = SpanOptions::default();
        assert_eq!(span_values(s), [("evict_at", 0), ("context_shift", 0)]);
        s.evict_at = EvictAt::RoomForStep;
        assert_eq!(span_values(s)[0], ("evict_at", 1));
        s.evict_at = EvictAt::BelowBudget;
        s.context_shift = true;
        assert_eq!(span_values(s), [("evict_at", 2), ("context_shift", 1)]);
    }
}

#[cfg(test)]
mod scenario_tests;
