//! `openvino`: OpenVINO GenAI's block eviction. Each step's scores, its
//! heads summed, are registered after its admissions: max-pooled forward
//! over `max_pool` slots and accumulated per slot past a start area of
//! `sinks` slots, with a count of the steps each has been seen (seeded by
//! a prompt's SnapKV window of `obs_window` query rows). Only a decode
//! step with a row evicts: whole closed blocks between the start area and
//! the last `recent_window / block` closed blocks, the lowest by the sum
//! of their slots' scores (`acc`, or `acc / count` with `norm_sum` 1), the
//! older block first among equals. Card: spec/policies/openvino.md.
//!
//! One kept set whatever the heads (`Policy::reads_every_head`): the set's
//! one state is handed every head's row (or query rows), head 0 first, and
//! sums them. Nothing is registered before the step's admissions: a decode
//! step's rows are summed as they are handed (before admission) and
//! registered at `end_of_records`, with +0.0 for the admitted slots; a
//! prefill step's query rows (or column totals) are summed as they are
//! handed (after admission) and registered there too. The eviction itself
//! is the harness's by blocks (`KeptSet::evict_blocks`, even with `block`
//! 1: `Policy::evicts_by_blocks`), over the candidate blocks after the
//! start area (`sinks_kept`) and before the recent area (`recent_window`),
//! ranked by block `sum` of `scores`, at a step whose `step_budget` is
//! `Some`: only a decode step that registered.
use super::{resolve_params, retain_slots, ParamSpec, Policy, QueryRows};
use crate::blocks::{BlockOptions, BlockScore};
use crate::error::{Category, Check, Refusal, Result, Subject};

/// `max_cache_size`: the kept count in closed blocks after an eviction.
const BUDGET: ParamSpec = ParamSpec { name: "budget", default: 672, min: 1, max: 4294967295 };
/// `start_size`: the first `sinks` kept slots, never scored, never evicted.
const SINKS: ParamSpec = ParamSpec { name: "sinks", default: 32, min: 0, max: 4294967294 };
/// `recent_size`: the last `recent_window / block` closed blocks, never
/// evicted.
const RECENT_WINDOW: ParamSpec = ParamSpec { name: "recent_window", default: 128, min: 0, max: 4294967294 };
/// Positions per block.
const BLOCK: ParamSpec = ParamSpec { name: "block", default: 32, min: 1, max: 65536 };
/// 0 `SUM`: a slot's score is its sum; 1 `NORM_SUM`: its sum over its count.
const NORM_SUM: ParamSpec = ParamSpec { name: "norm_sum", default: 1, min: 0, max: 1 };
/// The forward max pool's width in slots.
const MAX_POOL: ParamSpec = ParamSpec { name: "max_pool", default: 7, min: 1, max: 65536 };
/// `snapkv_window_size`: the query rows that seed the counts; 0 counts
/// every query.
const OBS_WINDOW: ParamSpec = ParamSpec { name: "obs_window", default: 8, min: 0, max: 4294967295 };

/// The card's table, in its order (spec/policies/openvino.md#parameters).
const PARAMS: [ParamSpec; 7] = [BUDGET, SINKS, RECENT_WINDOW, BLOCK, NORM_SUM, MAX_POOL, OBS_WINDOW];

/// What the step has been handed so far, to register at `end_of_records`.
#[derive(Debug, Default)]
enum Pending {
    /// Nothing: null attention (or no step yet). Registers nothing.
    #[default]
    Nothing,
    /// A decode step: `x[i]`, the heads' rows summed per slot kept before
    /// the step (head 0 first, from +0.0). `k` = 1.
    Decode(Vec<f64>),
    /// A prefill step: `x[i]` over every slot kept after admission, and
    /// `k`, its query rows per head (or `total_rows` with column totals).
    Prefill { x: Vec<f64>, k: u64 },
}

#[derive(Debug)]
pub struct OpenVino {
    budget: u64,
    /// `S`: the kept slots `0 .. S - 1` are the start area.
    sinks: usize,
    /// `R`.
    recent_window: usize,
    /// `block` (and `Sum`: a block's score is the sum of its slots').
    blocks: BlockOptions,
    /// `norm_sum` 1: a slot's score is `acc / count`.
    norm_sum: bool,
    /// `w`.
    max_pool: usize,
    /// `W`.
    obs_window: u64,
    /// Query rows registered so far towards the window, `0 ..= W`.
    seen: u64,
    /// Per kept slot: `acc`, +0.0 where not tracked (the start area, the
    /// slots admitted since the last registration).
    acc: Vec<f64>,
    /// Per kept slot: `count`, 0 where not tracked.
    count: Vec<u64>,
    /// How many slots are tracked: the slots `S .. S + tracked`; the newer
    /// ones (`d` of them) are not yet. 0 until the first registration with
    /// more than `S` kept.
    tracked: usize,
    /// The step's scores so far.
    pending: Pending,
    /// The step registered a decode row: it may evict.
    decode_registered: bool,
}

impl OpenVino {
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("openvino", &PARAMS, params)?;
        let (budget, sinks, recent_window, block) = (v[0], v[1], v[2], v[3]);
        // Rule 1: sinks + recent_window < budget (no overflow in i64).
        if sinks + recent_window >= budget {
            return Err(Refusal::new(
                Category::InvalidParameter,
                Subject::new(Check::Rule, &["sinks", "recent_window", "budget"]),
                format!(
                    "openvino: sinks + recent_window must be below budget, got sinks {sinks}, recent_window {recent_window}, budget {budget}"
                ),
            ));
        }
        // Rule 2: the areas are multiples of block, the first that is not
        // named (`rule block budget`, ...), in the order of
        // spec/blocks.md#rules: budget, then recent_window, then sinks.
        let blocks = BlockOptions { block: block as usize, score: BlockScore::Sum };
        blocks.check(
            "openvino",
            &[("budget", budget as u64), ("recent_window", recent_window as u64), ("sinks", sinks as u64)],
            &[],
        )?;
        Ok(OpenVino {
            budget: budget as u64,
            sinks: sinks as usize,
            recent_window: recent_window as usize,
            blocks,
            norm_sum: v[4] == 1,
            max_pool: v[5] as usize,
            obs_window: v[6] as u64,
            seen: 0,
            acc: Vec::new(),
            count: Vec::new(),
            tracked: 0,
            pending: Pending::Nothing,
            decode_registered: false,
        })
    }

    /// `register(x, k)` (spec/policies/openvino.md#registering), `x` one
    /// score per kept slot after the step's admissions.
    fn register(&mut self, x: &[f64], k: u64) {
        let n = self.acc.len();
        debug_assert_eq!(x.len(), n);
        let s = self.sinks;
        let w = self.obs_window;
        // 1. The window count: "if W > 0 and seen < W, seen = min(W, seen +
        // k)", which, as `seen <= W` always, is `min(W, seen + k)` at every
        // registration (0 stays 0 with W = 0, W stays W).
        self.seen = w.min(self.seen + k);
        // 2. Nothing tracked while n <= S.
        if n <= s {
            return;
        }
        // 3. The forward pool, past the start area.
        let u = forward_max_pool(x, s, self.max_pool);
        let m = (n - s) as u64;
        if self.tracked == 0 {
            // 4. The first registration.
            for i in s..n {
                let j = (i - s) as u64;
                self.acc[i] = u[i - s];
                self.count[i] = if w == 0 { m - j } else { k.min(m - j) };
            }
        } else {
            // 5. A later registration: the newest d slots join at +0.0.
            let old_end = s + self.tracked;
            let d = (n - old_end) as u64;
            for i in old_end..n {
                self.acc[i] = 0.0;
            }
            for i in s..n {
                self.acc[i] += u[i - s];
            }
            if w == 0 || self.seen == w {
                for i in s..old_end {
                    self.count[i] += d;
                }
                for (t, i) in (old_end..n).enumerate() {
                    self.count[i] = d - t as u64;
                }
            } else {
                for i in s..n {
                    let j = (i - s) as u64;
                    self.count[i] = self.seen.min(m - j);
                }
            }
        }
        self.tracked = n - s;
    }
}

/// `u[i - from] = max(x[i], ..., x[min(i + w, n) - 1])` for every slot `i`
/// from `from` to `n - 1`: a forward window of `w` slots cut at the last
/// slot (spec/policies/openvino.md#registering, step 3), in O(n) with a
/// monotonic queue. Exact: a maximum does not round.
pub(super) fn forward_max_pool(x: &[f64], from: usize, w: usize) -> Vec<f64> {
    let n = x.len();
    let mut u = vec![0.0f64; n - from];
    // Indices, ascending, of values strictly decreasing from the front:
    // the front is the window's maximum.
    let mut queue: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for i in (from..n).rev() {
        while queue.back().is_some_and(|&b| x[b] <= x[i]) {
            queue.pop_back();
        }
        queue.push_back(i);
        // The window of i is i .. i + w - 1.
        while queue.front().is_some_and(|&f| f >= i + w) {
            queue.pop_front();
        }
        u[i - from] = x[*queue.front().unwrap()];
    }
    u
}

impl Policy for OpenVino {
    fn name(&self) -> &'static str {
        "openvino"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn reads_every_head(&self) -> bool {
        true
    }
    /// One head's row, gathered at the slots kept before the step: added
    /// to the step's decode scores, heads in the order handed (head 0
    /// first), from +0.0.
    fn record(&mut self, attention: &[f32]) {
        if !matches!(self.pending, Pending::Decode(_)) {
            self.pending = Pending::Decode(vec![0.0; attention.len()]);
        }
        let Pending::Decode(x) = &mut self.pending else { unreachable!() };
        for (xi, &a) in x.iter_mut().zip(attention) {
            *xi += a as f64;
        }
    }
    /// One head's query rows, after admission: `t_h[i]`, the sum of the
    /// head's gathered rows that cover slot `i` in ascending query order
    /// from +0.0, added to the step's prefill scores (head 0 first, from
    /// +0.0); `k` the rows per head. With column totals, the head's
    /// gathered totals instead, `k` = `total_rows`.
    fn record_queries(&mut self, rows: &QueryRows) {
        let n = self.acc.len();
        let k = rows.total_rows().map_or(rows.count() as u64, u64::from);
        if !matches!(self.pending, Pending::Prefill { .. }) {
            self.pending = Pending::Prefill { x: vec![0.0; n], k };
        }
        let Pending::Prefill { x, .. } = &mut self.pending else { unreachable!() };
        if rows.total_rows().is_some() {
            for (i, xi) in x.iter_mut().enumerate() {
                *xi += rows.total(i);
            }
            return;
        }
        let mut t = vec![0.0f64; n];
        for j in 0..rows.count() {
            for (ti, w) in t.iter_mut().zip(rows.gathered(j)) {
                *ti += w as f64;
            }
        }
        for (xi, ti) in x.iter_mut().zip(t) {
            *xi += ti;
        }
    }
    fn admit(&mut self, count: usize) {
        self.acc.resize(self.acc.len() + count, 0.0);
        self.count.resize(self.count.len() + count, 0);
    }
    /// Register what the step was handed (spec/policies/openvino.md#how-it-works):
    /// a decode step's row, `+0.0` for its admitted slots, with `k` 1; a
    /// prefill step's scores with its `k`; nothing at null attention.
    fn end_of_records(&mut self) {
        self.decode_registered = false;
        match std::mem::take(&mut self.pending) {
            Pending::Nothing => {}
            Pending::Decode(mut x) => {
                x.resize(self.acc.len(), 0.0);
                self.register(&x, 1);
                self.decode_registered = true;
            }
            Pending::Prefill { x, k } => self.register(&x, k),
        }
    }
    /// `budget` at a decode step that registered; `None` (nothing goes) at
    /// a prefill step and at null attention.
    fn step_budget(&self, _n: usize, _prefill: bool) -> Option<u64> {
        self.budget().filter(|_| self.decode_registered)
    }
    /// Per kept slot: `acc` (`norm_sum` 0) or `acc / double(count)`
    /// (`norm_sum` 1, one division); every tracked slot's count is at
    /// least 1. +0.0 where not tracked (`acc` +0.0 over a count of 0, read
    /// as 1): only the start area, never a candidate, since every slot
    /// past it is tracked at a step that evicts, right after its
    /// registration.
    fn scores(&self, _prefill: bool) -> Option<Vec<f64>> {
        Some(
            self.acc
                .iter()
                .zip(&self.count)
                .map(|(&a, &c)| if self.norm_sum { a / c.max(1) as f64 } else { a })
                .collect(),
        )
    }
    fn recent_window(&self) -> usize {
        self.recent_window
    }
    /// The start area: the first `S` kept slots (all of them while fewer
    /// are kept).
    fn sinks_kept(&self) -> usize {
        self.sinks.min(self.acc.len())
    }
    fn remove(&mut self, evicted: &[bool]) {
        let s = self.sinks.min(evicted.len());
        let end = (self.sinks + self.tracked).min(evicted.len());
        let gone_tracked = evicted[s..end].iter().filter(|&&e| e).count();
        self.tracked -= gone_tracked;
        retain_slots(&mut self.acc, 1, evicted);
        retain_slots(&mut self.count, 1, evicted);
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
    fn evicts_by_blocks(&self) -> bool {
        true
    }
}
