//! Multi-head scenarios: head counts and their checks, which query heads
//! share a kept set (`granularity`), and how a set's heads' scores combine
//! (`aggregation`). Spec: spec/heads.md.

use crate::error::{Category, Check, Refusal, Result, Subject};

/// The largest `query_heads` and `kv_heads` (spec/heads.md#head-counts).
pub const MAX_HEADS: u32 = 1024;

/// A scenario's validated head counts: `kv` divides `query`, both in
/// `[1, MAX_HEADS]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadCounts {
    pub query: u32,
    pub kv: u32,
}

impl HeadCounts {
    /// One query head and one KV head: a scenario that declares none.
    pub const ONE: HeadCounts = HeadCounts { query: 1, kv: 1 };

    /// The checks of spec/heads.md#head-counts, in order: `query_heads` in
    /// range, `kv_heads` in range, `kv_heads` divides `query_heads`. An
    /// absent count is 1. Every failure is `INVALID_HEADS`. The same checks
    /// hold whether the scenario has steps, a trace or neither: since spec
    /// 0.5.0 a generated trace may have several heads
    /// (spec/trace.md#several-heads).
    pub fn check(query_heads: Option<u32>, kv_heads: Option<u32>) -> Result<HeadCounts> {
        let query = query_heads.unwrap_or(1);
        let kv = kv_heads.unwrap_or(1);
        if !(1..=MAX_HEADS).contains(&query) {
            return Err(invalid(Check::Range, &["query_heads"], format!("query_heads must be in [1, {MAX_HEADS}], got {query}")));
        }
        if !(1..=MAX_HEADS).contains(&kv) {
            return Err(invalid(Check::Range, &["kv_heads"], format!("kv_heads must be in [1, {MAX_HEADS}], got {kv}")));
        }
        if !query.is_multiple_of(kv) {
            return Err(invalid(Check::Rule, &["kv_heads", "query_heads"], format!("kv_heads must divide query_heads, got kv_heads {kv}, query_heads {query}")));
        }
        Ok(HeadCounts { query, kv })
    }

    /// The group size `G = Hq / Hkv`.
    pub fn group(self) -> u32 {
        self.query / self.kv
    }
}

fn invalid(check: Check, names: &[&str], message: String) -> Refusal {
    Refusal::new(Category::InvalidHeads, Subject::new(check, names), message)
}

/// Which query heads share a kept set (spec/heads.md#kept-sets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Layer,
    KvHead,
    QueryHead,
}

impl Granularity {
    /// The parameter's wire value, already range-checked to `[0, 2]`.
    pub fn from_param(v: i64) -> Self {
        match v {
            0 => Granularity::Layer,
            1 => Granularity::KvHead,
            2 => Granularity::QueryHead,
            _ => unreachable!("granularity {v} passed its range check"),
        }
    }
}

/// How a set's heads' scores combine
/// (spec/heads.md#combining-heads-at-ranking-time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    Mean,
    Max,
    Sum,
}

impl Aggregation {
    /// The parameter's wire value, already range-checked to `[0, 2]`.
    pub fn from_param(v: i64) -> Self {
        match v {
            0 => Aggregation::Mean,
            1 => Aggregation::Max,
            2 => Aggregation::Sum,
            _ => unreachable!("aggregation {v} passed its range check"),
        }
    }
}

/// The head parameters of a policy that reads attention
/// (spec/heads.md#parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadOptions {
    pub granularity: Granularity,
    pub aggregation: Aggregation,
    /// `adaptive` 1: with at least two kept sets, the sets share one budget
    /// (spec/heads.md#head-adaptive-budgets).
    pub adaptive: bool,
    /// The floor of each set under a shared budget, in thousandths of
    /// `budget`.
    pub safeguard_permille: u32,
}

/// The kept sets, in set order, each as the ascending query heads it covers
/// (spec/heads.md#kept-sets).
pub fn sets_of(granularity: Granularity, heads: HeadCounts) -> Vec<Vec<usize>> {
    let (hq, hkv, g) = (heads.query as usize, heads.kv as usize, heads.group() as usize);
    match granularity {
        Granularity::Layer => vec![(0..hq).collect()],
        Granularity::KvHead => (0..hkv).map(|s| (s * g..s * g + g).collect()).collect(),
        Granularity::QueryHead => (0..hq).map(|s| vec![s]).collect(),
    }
}

/// The combined score of each slot from each head's scores (`per_head[h][slot]`,
/// heads in ascending order): the binary64 sum from `+0.0` in head order,
/// that sum divided once by the head count, or the largest.
pub fn combine(per_head: &[Vec<f64>], aggregation: Aggregation) -> Vec<f64> {
    let m = per_head.len();
    assert!(m >= 1, "a kept set covers at least one head");
    let n = per_head[0].len();
    (0..n)
        .map(|slot| match aggregation {
            Aggregation::Max => {
                let mut best = per_head[0][slot];
                for h in &per_head[1..] {
                    if h[slot] > best {
                        best = h[slot];
                    }
                }
                best
            }
            Aggregation::Mean | Aggregation::Sum => {
                let mut s = 0.0f64;
                for h in per_head {
                    s += h[slot];
                }
                if aggregation == Aggregation::Mean {
                    s / m as f64
                } else {
                    s
                }
            }
        })
        .collect()
}

/// The floor of each set under a shared budget
/// (spec/heads.md#head-adaptive-budgets, step 4): `budget *
/// safeguard_permille / 1000` in integer division, raised to 1 if it is 0
/// and `safeguard_permille > 0`; 0 when `safeguard_permille` is 0.
pub fn floor_of(budget: u64, safeguard_permille: u32) -> u64 {
    if safeguard_permille == 0 {
        return 0;
    }
    (budget * safeguard_permille as u64 / 1000).max(1)
}

/// One candidate of the joint ranking: a kept set, one of its candidate
/// positions and the set's combined score of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub score: f64,
    pub position: u32,
    pub set: usize,
}

/// The joint ranking and the floor walk of spec/heads.md#head-adaptive-budgets
/// (steps 3 and 4): sorts `pairs` by score ascending, then position
/// ascending, then set ascending, and walks them from the lowest, evicting
/// a pair unless its set (keeping `kept[set]` positions) would keep fewer
/// than `floor`, until `excess` pairs are evicted. Returns how many pairs
/// each set loses. Within one set the walk evicts a prefix of the set's own
/// ranking (a set at its floor stays there), so a set losing `v` pairs
/// loses its `v` lowest candidates in its own order.
pub fn shared_victim_counts(pairs: &mut [Pair], kept: &[u64], excess: u64, floor: u64) -> Vec<usize> {
    pairs.sort_unstable_by(|a, b| {
        a.score
            .partial_cmp(&b.score)
            .expect("scores are never NaN")
            .then(a.position.cmp(&b.position))
            .then(a.set.cmp(&b.set))
    });
    let mut left: Vec<u64> = kept.to_vec();
    let mut lost = vec![0usize; kept.len()];
    let mut evicted = 0u64;
    for pair in pairs.iter() {
        if evicted == excess {
            break;
        }
        if left[pair.set] > floor {
            left[pair.set] -= 1;
            lost[pair.set] += 1;
            evicted += 1;
        }
    }
    assert_eq!(evicted, excess, "the floor walk found too few pairs");
    lost
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(q: Option<u32>, kv: Option<u32>) -> Option<Category> {
        HeadCounts::check(q, kv).err().map(|r| r.category)
    }

    #[test]
    fn head_counts_default_to_one() {
        assert_eq!(HeadCounts::check(None, None).unwrap(), HeadCounts::ONE);
        assert_eq!(HeadCounts::check(Some(1), Some(1)).unwrap(), HeadCounts::ONE);
        assert_eq!(HeadCounts::check(Some(8), None).unwrap(), HeadCounts { query: 8, kv: 1 });
        assert_eq!(HeadCounts::check(Some(4), Some(2)).unwrap(), HeadCounts { query: 4, kv: 2 });
        assert_eq!(HeadCounts::check(Some(1024), Some(1024)).unwrap(), HeadCounts { query: 1024, kv: 1024 });
    }

    #[test]
    fn head_count_refusals() {
        let h = Some(Category::InvalidHeads);
        assert_eq!(cat(Some(0), None), h);
        assert_eq!(cat(Some(1025), None), h);
        assert_eq!(cat(None, Some(0)), h);
        assert_eq!(cat(Some(4), Some(1025)), h);
        // kv_heads above query_heads does not divide it.
        assert_eq!(cat(None, Some(2)), h);
        assert_eq!(cat(Some(6), Some(4)), h);
    }

    #[test]
    fn head_count_check_order() {
        // query_heads, then kv_heads, then the division.
        let msg = |q, kv| HeadCounts::check(q, kv).unwrap_err().message;
        assert!(msg(Some(0), Some(0)).starts_with("query_heads"));
        assert!(msg(Some(0), Some(3)).starts_with("query_heads"));
        assert!(msg(Some(3), Some(0)).starts_with("kv_heads must be in"));
        assert!(msg(Some(2), Some(2000)).starts_with("kv_heads must be in"));
        assert!(msg(Some(3), Some(2)).starts_with("kv_heads must divide"));
    }

    #[test]
    fn set_numbering() {
        let h = HeadCounts { query: 6, kv: 2 };
        assert_eq!(sets_of(Granularity::Layer, h), vec![vec![0, 1, 2, 3, 4, 5]]);
        assert_eq!(sets_of(Granularity::KvHead, h), vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert_eq!(sets_of(Granularity::QueryHead, h), (0..6).map(|s| vec![s]).collect::<Vec<_>>());
        for g in [Granularity::Layer, Granularity::KvHead, Granularity::QueryHead] {
            assert_eq!(sets_of(g, HeadCounts::ONE), vec![vec![0]]);
        }
        // Without GQA, kv_head and query_head are the same sets.
        let h = HeadCounts { query: 3, kv: 3 };
        assert_eq!(sets_of(Granularity::KvHead, h), sets_of(Granularity::QueryHead, h));
    }

    #[test]
    fn combining() {
        let heads = vec![vec![0.5, 0.0, 3.0], vec![0.25, 0.0, 1.0]];
        assert_eq!(combine(&heads, Aggregation::Mean), vec![0.375, 0.0, 2.0]);
        assert_eq!(combine(&heads, Aggregation::Max), vec![0.5, 0.0, 3.0]);
        assert_eq!(combine(&heads, Aggregation::Sum), vec![0.75, 0.0, 4.0]);
        // One head combines to itself, bit for bit, whatever the aggregation.
        let one = vec![vec![0.1, 0.0, 1e300, f64::from_bits(1)]];
        for a in [Aggregation::Mean, Aggregation::Max, Aggregation::Sum] {
            let c = combine(&one, a);
            assert!(c.iter().zip(&one[0]).all(|(x, y)| x.to_bits() == y.to_bits()), "{a:?}");
        }
    }

    #[test]
    fn mean_is_one_division_of_the_head_order_sum() {
        // Head order: (1 + 2^-53) + 2^-53 = 1 (each addition rounds to even),
        // where 2^-53 + 2^-53 first would give 1 + 2^-52.
        let t = 2f64.powi(-53);
        let heads = vec![vec![1.0], vec![t], vec![t]];
        assert_eq!(combine(&heads, Aggregation::Sum), vec![1.0]);
        assert_eq!(combine(&heads, Aggregation::Mean), vec![1.0 / 3.0]);
        // One division of the sum, not a sum of thirds: 0.1 + 0.1 + 0.1 is
        // 0.30000000000000004, whose third is 0.10000000000000002, while
        // the thirds add up to 0.1.
        let heads = vec![vec![0.1], vec![0.1], vec![0.1]];
        assert_eq!(combine(&heads, Aggregation::Mean), vec![0.10000000000000002]);
        assert_eq!(0.1 / 3.0 + 0.1 / 3.0 + 0.1 / 3.0, 0.1);
    }

    #[test]
    fn floors() {
        // spec/heads.md#head-adaptive-budgets, step 4.
        assert_eq!(floor_of(2, 200), 1); // 0, raised to 1
        assert_eq!(floor_of(4, 200), 1);
        assert_eq!(floor_of(5, 200), 1);
        assert_eq!(floor_of(10, 200), 2);
        assert_eq!(floor_of(10, 300), 3); // kvpress's int(10 * 0.3) is 2
        assert_eq!(floor_of(128, 200), 25);
        assert_eq!(floor_of(1000, 1), 1);
        assert_eq!(floor_of(1999, 1), 1);
        assert_eq!(floor_of(7, 0), 0);
        assert_eq!(floor_of(7, 1000), 7);
        assert_eq!(floor_of(u32::MAX as u64, 1000), u32::MAX as u64);
        assert_eq!(floor_of(u32::MAX as u64, 999), u32::MAX as u64 * 999 / 1000);
    }

    fn pair(score: f64, position: u32, set: usize) -> Pair {
        Pair { score, position, set }
    }

    #[test]
    fn joint_ranking_order() {
        // Score, then position, then set; given in reverse order.
        let mut pairs =
            vec![pair(0.5, 0, 0), pair(0.25, 3, 1), pair(0.25, 3, 0), pair(0.25, 2, 1), pair(0.125, 9, 1)];
        let lost = shared_victim_counts(&mut pairs, &[10, 10], 3, 0);
        assert_eq!(pairs, vec![pair(0.125, 9, 1), pair(0.25, 2, 1), pair(0.25, 3, 0), pair(0.25, 3, 1), pair(0.5, 0, 0)]);
        assert_eq!(lost, vec![1, 2]);
        // At the same score and position the lower set goes first.
        let mut pairs = vec![pair(0.25, 3, 1), pair(0.25, 3, 0)];
        assert_eq!(shared_victim_counts(&mut pairs, &[5, 5], 1, 0), vec![1, 0]);
        // Nothing to evict.
        let mut pairs = vec![pair(0.0, 0, 0)];
        assert_eq!(shared_victim_counts(&mut pairs, &[3, 3], 0, 1), vec![0, 0]);
    }

    #[test]
    fn the_floor_walk() {
        // Set 1 holds every low score and keeps 4; with floor 2 it loses
        // two, then its pairs are passed over and set 0 gives the rest.
        let pairs = || vec![pair(0.0, 0, 1), pair(0.0, 1, 1), pair(0.0, 2, 1), pair(1.0, 0, 0), pair(1.0, 1, 0)];
        assert_eq!(shared_victim_counts(&mut pairs(), &[4, 4], 3, 2), vec![1, 2]);
        // Floor 1 lets set 1 lose three; floor 0 the same (the walk stops).
        assert_eq!(shared_victim_counts(&mut pairs(), &[4, 4], 3, 1), vec![0, 3]);
        assert_eq!(shared_victim_counts(&mut pairs(), &[4, 4], 3, 0), vec![0, 3]);
        // A set already at its floor loses nothing.
        assert_eq!(shared_victim_counts(&mut pairs(), &[4, 2], 2, 2), vec![2, 0]);
    }
}
