//! Prefill (spec/prefill.md): the gathered query rows a kept set's heads
//! see at a prefill step, with their column totals when the step carries
//! them (spec 0.10.0, feature `totals`), when a policy evicts
//! (`prefill_only`), budgets from a ratio (`ratio_ppm`) and the rules
//! relating them to the other parameters. Presets are tools-only (spec/prefill.md#presets): a port
//! sees only their expanded parameters. The cards' "At prefill" examples
//! and the file's rules, through whole scenarios: `scenario_tests.rs`.

use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::params::ParamSpec;

/// `prefill_only` (spec/prefill.md#when-a-policy-evicts).
pub(crate) const PREFILL_ONLY: ParamSpec = ParamSpec { name: "prefill_only", default: 0, min: 0, max: 1 };
/// `ratio_ppm` (spec/prefill.md#when-a-policy-evicts).
pub(crate) const RATIO_PPM: ParamSpec = ParamSpec { name: "ratio_ppm", default: 0, min: 0, max: 999_999 };

/// `prefill_only` and `ratio_ppm`, listed in the cards of `h2o`, `tova`,
/// `snapkv` and `streamingllm` after their other shared parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefillOptions {
    /// 1: decode steps never evict.
    pub prefill_only: bool,
    /// Not 0: a prefill step's budget comes from the ratio `ratio_ppm / 10^6`.
    pub ratio_ppm: u32,
}

impl PrefillOptions {
    /// From the range-checked values of `prefill_only` and `ratio_ppm`, in
    /// that order.
    pub(crate) fn from_params(v: &[i64]) -> Self {
        PrefillOptions { prefill_only: v[0] == 1, ratio_ppm: v[1] as u32 }
    }

    /// The step budget of a kept set keeping `n` positions after admission
    /// (spec/prefill.md#when-a-policy-evicts): the ratio budget at a
    /// prefill step with `ratio_ppm` above 0; none (`None`: the step evicts
    /// nothing) at a decode step with `prefill_only` 1; `budget` otherwise.
    pub fn step_budget(self, budget: u64, n: usize, prefill: bool) -> Option<u64> {
        if prefill && self.ratio_ppm > 0 {
            Some(ratio_budget(n as u64, self.ratio_ppm))
        } else if !prefill && self.prefill_only {
            None
        } else {
            Some(budget)
        }
    }
}

/// kvpress's `max(1, int(n * (1 - r)))`, in binary64 exactly as
/// spec/prefill.md#budgets-from-a-ratio writes it: each operation rounds
/// once (`n < 2^53` converts exactly), never in decimal or rationals.
pub fn ratio_budget(n: u64, ratio_ppm: u32) -> u64 {
    let r = ratio_ppm as f64 / 1_000_000.0;
    let t = 1.0 - r;
    let u = n as f64 * t;
    (u.floor() as u64).max(1)
}

/// The rules of spec/prefill.md#when-a-policy-evicts relating the prefill
/// parameters to the others, after each card's own rules, in order
/// (`INVALID_PARAMETER`):
/// 1. `ratio_ppm` above 0 requires `recent_window` 0 (`recent_window` is
///    `None` for `streamingllm`, which has none);
/// 2. `adaptive` 1 requires `prefill_only` 0 and `ratio_ppm` 0, and, for
///    `snapkv`, `window_budget` 0 (`window_budget` is `None` for the
///    others).
pub(crate) fn check_prefill_rules(
    policy: &str,
    recent_window: Option<i64>,
    adaptive: bool,
    options: PrefillOptions,
    window_budget: Option<i64>,
) -> Result<()> {
    // Each rule's subject (spec/harness.md#subjects): `rule` and the
    // parameters it relates, the one that needs the others first.
    let refuse = |names: &[&str], m: String| {
        Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Rule, names), format!("{policy}: {m}")))
    };
    if let Some(rw) = recent_window {
        if options.ratio_ppm > 0 && rw != 0 {
            return refuse(&["ratio_ppm", "recent_window"], format!(
                "ratio_ppm above 0 requires recent_window 0, got ratio_ppm {}, recent_window {rw}",
                options.ratio_ppm
            ));
        }
    }
    if adaptive {
        if options.prefill_only {
            return refuse(&["adaptive", "prefill_only"], "adaptive 1 requires prefill_only 0".into());
        }
        if options.ratio_ppm > 0 {
            return refuse(&["adaptive", "ratio_ppm"], format!("adaptive 1 requires ratio_ppm 0, got {}", options.ratio_ppm));
        }
        if window_budget.is_some_and(|wb| wb != 0) {
            return refuse(&["adaptive", "window_budget"], "adaptive 1 requires window_budget 0".into());
        }
    }
    Ok(())
}

/// A prefill step's column totals as the step carries them
/// (spec/prefill.md#column-totals): `sums[h]` is query head `h`'s, one
/// binary64 per position `0 .. a+c-1`, and `rows` is `R` (`total_rows`),
/// how many of the step's last queries they sum over. Checked before use
/// (spec/prefill.md#their-checks).
#[derive(Clone, Copy, Debug)]
pub struct Totals<'a> {
    pub sums: &'a [Vec<f64>],
    pub rows: u32,
}

/// One head's query rows at a prefill step, gathered at its kept set's
/// kept positions after the step's admissions
/// (spec/prefill.md#what-a-policy-sees): row `j` (0-based, of `m`, the
/// query at position `first_query + j`) covers the set's kept positions
/// `<= first_query + j`, in kept order, which are its first
/// `covered(j)` kept slots; the last row covers every kept slot. Nothing
/// is renormalized: `weight(j, i)` is the full row's weight at the
/// position in slot `i`, bit for bit.
///
/// With column totals (spec/prefill.md#column-totals) it also holds this
/// head's totals, gathered the same way: `total(i)` is the total of the
/// position in kept slot `i`, read in place, bit for bit.
pub struct QueryRows<'a> {
    kept: &'a [u32],
    /// This head's `m` full causal rows, ascending query position.
    rows: &'a [&'a [f32]],
    /// The position of the first of the `m` queries.
    first_query: u64,
    /// This head's column totals, one per position `0 .. a+c-1`, and `R`;
    /// `None` when the step carries none.
    totals: Option<(&'a [f64], u32)>,
}

impl<'a> QueryRows<'a> {
    pub fn new(kept: &'a [u32], rows: &'a [&'a [f32]], first_query: u64) -> Self {
        QueryRows { kept, rows, first_query, totals: None }
    }

    /// The same rows with this head's column totals `sums` (one per
    /// position `0 .. a+c-1`, checked) over the step's last `total_rows`
    /// queries (spec/prefill.md#column-totals).
    pub fn with_totals(self, sums: &'a [f64], total_rows: u32) -> Self {
        QueryRows { totals: Some((sums, total_rows)), ..self }
    }

    /// `R`, the number of queries the column totals sum over; `None`
    /// without totals.
    pub fn total_rows(&self) -> Option<u32> {
        self.totals.map(|(_, r)| r)
    }

    /// The column total of the position in kept slot `i`: the set's
    /// heads' totals gathered at its kept positions after admission, as
    /// the rows are (spec/prefill.md#column-totals). Only with totals.
    #[inline]
    pub fn total(&self, i: usize) -> f64 {
        let (sums, _) = self.totals.expect("a step with column totals");
        sums[self.kept[i] as usize]
    }

    /// How many of the step's last `count` queries see the position `p` in
    /// kept slot `i`: `min(count, a + c - p)`, the step admitting `c`
    /// positions from `a` (spec/prefill.md#column-totals: "Position `p`
    /// is seen by `min(R, a+c-p)` of the `R` queries"). The queries end at
    /// `a + c - 1 = first_query + m - 1`.
    pub fn queries_seeing(&self, i: usize, count: u32) -> u64 {
        let end = self.first_query + self.rows.len() as u64;
        (count as u64).min(end - self.kept[i] as u64)
    }

    /// `m`, the number of query rows.
    pub fn count(&self) -> usize {
        self.rows.len()
    }

    /// How many kept slots row `j` covers: the kept positions `<= q_j`.
    pub fn covered(&self, j: usize) -> usize {
        let q = self.first_query + j as u64;
        self.kept.partition_point(|&p| p as u64 <= q)
    }

    /// Row `j`'s weight of kept slot `i` (`i < covered(j)`).
    #[inline]
    pub fn weight(&self, j: usize, i: usize) -> f32 {
        self.rows[j][self.kept[i] as usize]
    }

    /// Row `j` gathered: `covered(j)` weights in kept order.
    pub fn gathered(&self, j: usize) -> impl Iterator<Item = f32> + '_ {
        let row = self.rows[j];
        self.kept[..self.covered(j)].iter().map(move |&p| row[p as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_budget_rounds_in_binary64() {
        // spec/prefill.md#budgets-from-a-ratio: 1 - 0.9 is
        // 0.09999999999999998, 20 times it 1.9999999999999996, B is 1
        // (the exact value would give 2).
        assert_eq!(1.0 - 900_000f64 / 1_000_000.0, 0.09999999999999998);
        assert_eq!(20.0 * (1.0 - 0.9f64), 1.9999999999999996);
        assert_eq!(ratio_budget(20, 900_000), 1);
        assert_eq!(ratio_budget(20, 500_000), 10);
        assert_eq!(ratio_budget(20, 250_000), 15);
        // max(1, ...): a ratio that would keep nothing keeps one.
        assert_eq!(ratio_budget(3, 999_999), 1);
        assert_eq!(ratio_budget(1, 1), 1);
        assert_eq!(ratio_budget(1_000_000, 1), 999_999);
        assert_eq!(ratio_budget(7, 0), 7);
    }

    #[test]
    fn step_budgets() {
        let o = |prefill_only, ratio_ppm| PrefillOptions { prefill_only, ratio_ppm };
        // Defaults: budget at every step.
        assert_eq!(o(false, 0).step_budget(8, 20, false), Some(8));
        assert_eq!(o(false, 0).step_budget(8, 20, true), Some(8));
        // prefill_only: decode steps evict nothing; prefill steps by budget.
        assert_eq!(o(true, 0).step_budget(8, 20, false), None);
        assert_eq!(o(true, 0).step_budget(8, 20, true), Some(8));
        // A ratio decides prefill steps only, from n, whatever budget is.
        assert_eq!(o(false, 500_000).step_budget(8, 20, true), Some(10));
        assert_eq!(o(false, 500_000).step_budget(8, 20, false), Some(8));
        assert_eq!(o(true, 900_000).step_budget(8, 20, true), Some(1));
        assert_eq!(o(true, 900_000).step_budget(8, 20, false), None);
    }

    #[test]
    fn gathered_rows_cover_kept_positions_up_to_the_query() {
        // Kept before the step 1, 4; the chunk 5..7 (m = 2: queries 6, 7).
        let kept = [1u32, 4, 5, 6, 7];
        let r6: Vec<f32> = (0..7).map(|p| p as f32).collect();
        let r7: Vec<f32> = (0..8).map(|p| 10.0 + p as f32).collect();
        let rows = [r6.as_slice(), r7.as_slice()];
        let q = QueryRows::new(&kept, &rows, 6);
        assert_eq!(q.count(), 2);
        // n - m + 1 + j weights: 4 and 5.
        assert_eq!((q.covered(0), q.covered(1)), (4, 5));
        assert_eq!(q.gathered(0).collect::<Vec<_>>(), vec![1.0, 4.0, 5.0, 6.0]);
        assert_eq!(q.gathered(1).collect::<Vec<_>>(), vec![11.0, 14.0, 15.0, 16.0, 17.0]);
        assert_eq!(q.weight(1, 0), 11.0);
    }
}

#[cfg(test)]
mod scenario_tests;
