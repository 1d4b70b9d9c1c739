//! `simlayerkv`: kvpress's `SimLayerKVPress` (spec 0.20.0). A layer-level
//! decision, taken at each prefill step from the step's query rows: the
//! attention of every head's last `w = min(n_last, m)` rows over the
//! prefix (the kept slots before the last `n_last`), averaged over heads
//! and rows in binary64, summed over the prefix's first `n_initial` and
//! last `n_recent` slots, is the layer's score; a score strictly above
//! `lazy_threshold_ppm / 10^6` makes the layer lazy, and a lazy layer
//! keeps its first `n_initial` and last `n_recent - n_last` slots. A
//! decode step, a cache of at most `n_initial + n_recent + n_last` and
//! `lazy_threshold_ppm` 1000000 evict nothing. Card:
//! spec/policies/simlayerkv.md.
//!
//! One kept set whatever the heads (it takes no `granularity`), whose one
//! state is handed every head's query rows, head 0 first
//! (`Policy::reads_every_head`, as `openvino`); it ranks nothing
//! (`Policy::ranks_by_scores` false, no cut): a lazy prefill step's step
//! budget is the lazy set's size, `n_initial + n_recent - n_last`, and
//! `choose_victims` gives the slots from `n_initial` on. The step is
//! judged when the harness asks for its budget (`step_budget`, after every
//! head's query rows); `admit` starts a step afresh. Rows of a decode step
//! and column totals are handed to it and not read.
use super::{resolve_params, ParamSpec, Policy, QueryRows, Selection};
use crate::error::{Category, Check, Refusal, Result, Subject};

/// First positions a lazy layer keeps, and the score's first region.
const N_INITIAL: ParamSpec = ParamSpec { name: "n_initial", default: 4, min: 0, max: 4294967295 };
/// The score's recent region; a lazy layer keeps the last `n_recent - n_last`.
const N_RECENT: ParamSpec = ParamSpec { name: "n_recent", default: 1024, min: 2, max: 4294967295 };
/// The last queries whose attention is read.
const N_LAST: ParamSpec = ParamSpec { name: "n_last", default: 1, min: 1, max: 4294967294 };
/// Lazy when the score is above `lazy_threshold_ppm / 10^6`.
const LAZY_THRESHOLD_PPM: ParamSpec = ParamSpec { name: "lazy_threshold_ppm", default: 1000000, min: 0, max: 1000000 };

/// The card's table, in order (spec/policies/simlayerkv.md#parameters).
const PARAMS: [ParamSpec; 4] = [N_INITIAL, N_RECENT, N_LAST, LAZY_THRESHOLD_PPM];

/// `lazy_threshold_ppm` 1000000: kvpress's `lazy_threshold == 1.0`, which
/// returns before judging.
const NEVER: u64 = 1000000;

#[derive(Debug)]
pub struct SimLayerKv {
    n_initial: usize,
    n_recent: usize,
    n_last: usize,
    lazy_threshold_ppm: u64,
    /// The step's per-slot sums `s` so far, over the heads handed so far
    /// (head 0 first), each head's last `w` rows ascending: one per slot
    /// the first of those rows covers (`n - w + 1`, the prefix `0 .. P - 1`
    /// and more). Empty at a step without query rows: `admit` clears it.
    sums: Vec<f64>,
    /// `Hq * w` so far: the rows added into `sums`.
    rows_read: u64,
}

impl SimLayerKv {
    /// Checks the ranges in card order, then the one rule, `n_last <
    /// n_recent` (`rule n_last n_recent`).
    pub fn configure(params: &[(String, i64)]) -> Result<Self> {
        let v = resolve_params("simlayerkv", &PARAMS, params)?;
        let (n_initial, n_recent, n_last, ppm) = (v[0], v[1], v[2], v[3]);
        if n_last >= n_recent {
            return Err(Refusal::new(
                Category::InvalidParameter,
                Subject::new(Check::Rule, &["n_last", "n_recent"]),
                format!("simlayerkv: n_last must be below n_recent, got n_last {n_last}, n_recent {n_recent}"),
            ));
        }
        Ok(SimLayerKv {
            n_initial: n_initial as usize,
            n_recent: n_recent as usize,
            n_last: n_last as usize,
            lazy_threshold_ppm: ppm as u64,
            sums: Vec::new(),
            rows_read: 0,
        })
    }

    /// Is a layer keeping `n` slots after admission judged? Not with
    /// `lazy_threshold_ppm` 1000000, nor with `n <= n_initial + n_recent +
    /// n_last` (in u64: each is below 2^32).
    fn judged(&self, n: usize) -> bool {
        self.lazy_threshold_ppm != NEVER && n as u64 > self.n_initial as u64 + self.n_recent as u64 + self.n_last as u64
    }

    /// The layer's score with `n` kept (spec/policies/simlayerkv.md#how-it-works):
    /// `a[i] = s[i] / double(Hq * w)` over the prefix `0 .. P - 1`, `P = n -
    /// n_last`; the sum of `a` over `0 .. n_initial - 1` plus its sum over
    /// `P - n_recent .. P - 1`, each from +0.0 ascending.
    fn score(&self, n: usize) -> f64 {
        let d = self.rows_read as f64;
        let p = n - self.n_last;
        let initial = self.sums[..self.n_initial].iter().fold(0.0f64, |acc, &s| acc + s / d);
        let recent = self.sums[p - self.n_recent..p].iter().fold(0.0f64, |acc, &s| acc + s / d);
        initial + recent
    }
}

impl Policy for SimLayerKv {
    fn name(&self) -> &'static str {
        "simlayerkv"
    }
    /// No `budget`: a layer keeps everything or its fixed lazy set.
    fn budget(&self) -> Option<u64> {
        None
    }
    /// One kept set, handed every head's query rows, head 0 first.
    fn reads_every_head(&self) -> bool {
        true
    }
    /// Nothing is ranked: the victims are positional (`choose_victims`).
    fn ranks_by_scores(&self) -> bool {
        false
    }
    /// A decode step's rows are not read.
    fn record(&mut self, _attention: &[f32]) {}
    /// One head's query rows, after admission: its last `w = min(n_last,
    /// m)` rows, ascending, each gathered row added slot by slot into the
    /// sums (the first of them, the shortest, covers `n - w + 1 >= P + 1`
    /// slots: every read row covers the whole prefix). Column totals are
    /// not read.
    fn record_queries(&mut self, rows: &QueryRows) {
        let m = rows.count();
        let w = self.n_last.min(m);
        for j in m - w..m {
            if self.sums.is_empty() {
                self.sums = vec![0.0; rows.covered(j)];
            }
            for (s, x) in self.sums.iter_mut().zip(rows.gathered(j)) {
                *s += x as f64;
            }
        }
        self.rows_read += w as u64;
    }
    /// A step starts: nothing read yet.
    fn admit(&mut self, _count: usize) {
        self.sums.clear();
        self.rows_read = 0;
    }
    /// A prefill step (one whose rows were read) of a judged layer whose
    /// score is above `lazy_threshold_ppm / 10^6` keeps `n_initial +
    /// n_recent - n_last`; any other step evicts nothing.
    fn step_budget(&self, n: usize, _prefill: bool) -> Option<u64> {
        if self.sums.is_empty() || !self.judged(n) {
            return None;
        }
        let threshold = self.lazy_threshold_ppm as f64 / 1000000.0;
        (self.score(n) > threshold).then_some((self.n_initial + self.n_recent - self.n_last) as u64)
    }
    /// The `k` slots from `n_initial` on: `n_initial .. n - (n_recent -
    /// n_last) - 1`, `k` being `n` less the lazy step budget.
    fn choose_victims(&mut self, _kept: &[u32], k: usize) -> Selection {
        Selection { victims: (self.n_initial..self.n_initial + k).collect(), cut: Vec::new() }
    }
    fn remove(&mut self, _evicted: &[bool]) {}
}
