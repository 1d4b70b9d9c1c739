//! Spans and position ids (spec/spans.md): the parameters the positional
//! policies (`full`, `window`, `streamingllm`) take after their own, the
//! rules relating them to the others, how many positions go before a step
//! is admitted (`evict_at`, or a context shift: `context_shift`,
//! `discard`), and each step's held set, spans and position ids as the log
//! gives them.

use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::params::ParamSpec;
use crate::prefill::PrefillOptions;

/// The parameters of spec/spans.md#parameters, in card order; `evict_at`,
/// `position_ids`, `context_shift` and `discard` are not taken by `full`.
pub(crate) const SPANS: ParamSpec = ParamSpec { name: "spans", default: 0, min: 0, max: 1 };
pub(crate) const SPAN_WINDOW: ParamSpec = ParamSpec { name: "span_window", default: 0, min: 0, max: 4294967295 };
pub(crate) const SPAN_CHUNK: ParamSpec = ParamSpec { name: "span_chunk", default: 0, min: 0, max: 4294967295 };
pub(crate) const EVICT_AT: ParamSpec = ParamSpec { name: "evict_at", default: 0, min: 0, max: 2 };
pub(crate) const POSITION_IDS: ParamSpec = ParamSpec { name: "position_ids", default: 0, min: 0, max: 1 };
/// Feature `contextshift`, spec 0.9.0 (spec/spans.md#context-shift).
pub(crate) const CONTEXT_SHIFT: ParamSpec = ParamSpec { name: "context_shift", default: 0, min: 0, max: 1 };
pub(crate) const DISCARD: ParamSpec = ParamSpec { name: "discard", default: 0, min: 0, max: 4294967295 };

/// The span parameters of a policy that makes room (`window`,
/// `streamingllm`), listed after its own.
pub(crate) const SPAN_PARAMS: [ParamSpec; 7] =
    [SPANS, SPAN_WINDOW, SPAN_CHUNK, EVICT_AT, POSITION_IDS, CONTEXT_SHIFT, DISCARD];
/// Those of `full`, which evicts nothing: no `evict_at`, no `position_ids`,
/// no `context_shift`, no `discard`.
pub(crate) const FULL_SPAN_PARAMS: [ParamSpec; 3] = [SPANS, SPAN_WINDOW, SPAN_CHUNK];

/// When room is made (spec/spans.md#when-room-is-made).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EvictAt {
    /// 0: admit the step, then evict down to the budget
    /// (spec/harness.md#the-decode-step).
    #[default]
    After,
    /// 1: before admitting `c`, evict until `kept + c <= budget`.
    RoomForStep,
    /// 2: before admitting, evict until `kept <= budget - 1`, whatever `c`.
    BelowBudget,
}

/// The span parameters of one configuration, all 0 by default: a
/// configuration that sets none of them runs exactly as in spec 0.7.0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanOptions {
    /// `spans` 1: each step's record carries its spans and held set.
    pub log: bool,
    /// `span_window`: not 0, the sliding-window span rule of `W`.
    pub span_window: u64,
    /// `span_chunk`: not 0, the chunked span rule of `C`.
    pub span_chunk: u64,
    pub evict_at: EvictAt,
    /// `position_ids` 1: ids are indices in the held set (cache-relative).
    pub cache_relative: bool,
    /// `context_shift` 1: room is made by a context shift before a step
    /// that does not fit (spec/spans.md#context-shift).
    pub context_shift: bool,
    /// `discard`: how many a context shift discards; 0, half of those
    /// that may go.
    pub discard: u64,
}

impl SpanOptions {
    /// From the range-checked values of `params` (`SPAN_PARAMS` or
    /// `FULL_SPAN_PARAMS`, in that order).
    pub(crate) fn from_params(params: &[ParamSpec], v: &[i64]) -> Self {
        let mut o = SpanOptions::default();
        for (s, &x) in params.iter().zip(v) {
            match s.name {
                "spans" => o.log = x == 1,
                "span_window" => o.span_window = x as u64,
                "span_chunk" => o.span_chunk = x as u64,
                "evict_at" => {
                    o.evict_at = match x {
                        0 => EvictAt::After,
                        1 => EvictAt::RoomForStep,
                        _ => EvictAt::BelowBudget,
                    }
                }
                "position_ids" => o.cache_relative = x == 1,
                "context_shift" => o.context_shift = x == 1,
                "discard" => o.discard = x as u64,
                _ => unreachable!("{} is not a span parameter", s.name),
            }
        }
        o
    }

    /// The rules of spec/spans.md#parameters, checked after the card's own,
    /// in order (`INVALID_PARAMETER`, naming both parameters):
    /// 1. `span_window` and `span_chunk` are not both above 0;
    /// 2. `evict_at` above 0 requires `prefill_only` 0 and `ratio_ppm` 0
    ///    (`prefill` is `None` for the policies without them);
    ///
    /// then the rules of the context shift ([`SpanOptions::check_context_shift`]).
    /// `budget` is `None` for `full`, which takes no `context_shift`;
    /// `sinks` is `None` for a policy without sinks (`window`).
    pub(crate) fn check(self, policy: &str, prefill: Option<PrefillOptions>, budget: Option<u64>, sinks: Option<u64>) -> Result<()> {
        let refuse = |names: &[&str], m: String| {
            Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Rule, names), format!("{policy}: {m}")))
        };
        if self.span_window > 0 && self.span_chunk > 0 {
            return refuse(&["span_window", "span_chunk"], format!(
                "span_window and span_chunk are not both above 0, got span_window {}, span_chunk {}",
                self.span_window, self.span_chunk
            ));
        }
        if let Some(p) = prefill {
            if self.evict_at != EvictAt::After {
                let evict_at = self.evict_at as u8;
                if p.prefill_only {
                    return refuse(&["evict_at", "prefill_only"], format!("evict_at above 0 requires prefill_only 0, got evict_at {evict_at}, prefill_only 1"));
                }
                if p.ratio_ppm > 0 {
                    return refuse(&["evict_at", "ratio_ppm"], format!(
                        "evict_at above 0 requires ratio_ppm 0, got evict_at {evict_at}, ratio_ppm {}",
                        p.ratio_ppm
                    ));
                }
            }
        }
        match budget {
            Some(budget) => self.check_context_shift(policy, prefill, budget, sinks),
            None => Ok(()),
        }
    }

    /// The rules of the context shift (spec/spans.md#parameters, "Rules of
    /// the context shift", checked after the rules above; each
    /// `INVALID_PARAMETER`, naming the parameters):
    /// 1. `discard` above 0 needs `context_shift` 1;
    /// 2. `context_shift` 1 needs `evict_at` 0, `prefill_only` 0 and
    ///    `ratio_ppm` 0 (the shift is its own moment to make room);
    /// 3. `context_shift` 1 needs `budget - sinks >= 2` (`window`, `sinks`
    ///    `None`: `budget >= 2`), so a full cache has `n_left >= 2` and
    ///    `d >= 1` (spec/spans.md#context-shift).
    ///
    /// Rules 1 and 2..3 never both apply (one needs `context_shift` 0, the
    /// others 1), so their order does not change which refusal is given.
    fn check_context_shift(self, policy: &str, prefill: Option<PrefillOptions>, budget: u64, sinks: Option<u64>) -> Result<()> {
        let refuse = |names: &[&str], m: String| {
            Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Rule, names), format!("{policy}: {m}")))
        };
        if !self.context_shift {
            if self.discard > 0 {
                return refuse(&["discard", "context_shift"], format!("discard {} needs context_shift 1, got context_shift 0", self.discard));
            }
            return Ok(());
        }
        let p = prefill.unwrap_or_default();
        for (name, value) in [("evict_at", self.evict_at as u64), ("prefill_only", p.prefill_only as u64), ("ratio_ppm", p.ratio_ppm as u64)] {
            if value != 0 {
                return refuse(&["context_shift", name], format!("context_shift 1 needs {name} 0, got {name} {value}"));
            }
        }
        match sinks {
            Some(s) if budget < s + 2 => refuse(
                &["context_shift", "budget", "sinks"],
                format!("context_shift 1 needs budget - sinks >= 2, got budget {budget}, sinks {s}"),
            ),
            None if budget < 2 => {
                refuse(&["context_shift", "budget"], format!("context_shift 1 needs budget >= 2, got budget {budget}"))
            }
            _ => Ok(()),
        }
    }

    /// Does the policy evict after admission (spec/spans.md#when-room-is-made:
    /// with `evict_at` 1 or 2 it evicts nothing after; spec/spans.md#context-shift:
    /// nor with `context_shift` 1)?
    pub fn evicts_after(self) -> bool {
        self.evict_at == EvictAt::After && !self.context_shift
    }

    /// How many positions a set keeping `n`, of which `sinks` are never
    /// evicted, evicts before admitting `c` under `budget`
    /// (spec/spans.md#when-room-is-made): rule 1 until `kept + c <= budget`,
    /// rule 2 until `kept <= budget - 1`, neither taking a sink; 0 with
    /// `evict_at` 0. With `context_shift` 1, the context shift's `d`
    /// ([`SpanOptions::context_shift_discard`]).
    pub fn evict_before(self, budget: u64, n: usize, c: u64, sinks: usize) -> usize {
        if self.context_shift {
            return self.context_shift_discard(budget, n, c, sinks);
        }
        let n64 = n as u64;
        let over = match self.evict_at {
            EvictAt::After => 0,
            EvictAt::RoomForStep => (n64 + c).saturating_sub(budget),
            EvictAt::BelowBudget => n64.saturating_sub(budget - 1),
        };
        over.min((n - sinks) as u64) as usize
    }

    /// How many positions a context shift discards before a step admitting
    /// `c` to a set keeping `n`, of which `sinks` never go
    /// (spec/spans.md#context-shift). A step that fits (`kept + c <=
    /// budget`) evicts nothing; otherwise
    /// 1. `n_left` is the kept positions that may go: every kept non-sink
    ///    (`streamingllm`), every kept position (`window`, no sinks);
    /// 2. `d` is `discard` when above 0, else `floor(n_left / 2)`, then
    ///    `min(d, max(0, n_left - 1))`.
    ///
    /// The policy's `choose_victims` takes them oldest first (non-sinks by
    /// ascending position). One shift per step: this is called once, and a
    /// chunk that still does not fit is admitted whole (step 3, nothing is
    /// evicted after: [`SpanOptions::evicts_after`]).
    pub fn context_shift_discard(self, budget: u64, n: usize, c: u64, sinks: usize) -> usize {
        if n as u64 + c <= budget {
            return 0;
        }
        let n_left = (n - sinks) as u64;
        let d = if self.discard > 0 { self.discard } else { n_left / 2 };
        d.min(n_left.saturating_sub(1)) as usize
    }

    /// The lowest position the span rule allows a query at `q`
    /// (spec/spans.md#span-rules): `q - W + 1` over the integers (0 below
    /// it), `floor(q / C) * C`, or 0 (full causal).
    pub fn allowed_from(self, q: u64) -> u64 {
        if self.span_window > 0 {
            (q + 1).saturating_sub(self.span_window)
        } else if self.span_chunk > 0 {
            q / self.span_chunk * self.span_chunk
        } else {
            0
        }
    }
}

/// One maximal run of consecutive held positions, `first..=last`, and the
/// position id of `first` (kvspec.v1.HeldRun, spec/spans.md#the-log).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldRun {
    pub first: u32,
    pub last: u32,
    pub id: u32,
}

/// The held set `held` (ascending) as maximal runs, each with the id of its
/// first position (spec/spans.md#position-ids): the position itself, or
/// with `cache_relative` its index in the held set.
pub fn held_runs(held: &[u32], cache_relative: bool) -> Vec<HeldRun> {
    let mut runs: Vec<HeldRun> = Vec::new();
    for (i, &p) in held.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.last as u64 + 1 == p as u64 => r.last = p,
            _ => runs.push(HeldRun { first: p, last: p, id: if cache_relative { i as u32 } else { p } }),
        }
    }
    runs
}

/// Append to `out` the runs of `runs` (maximal, ascending) clipped to
/// `lo..=hi`, as `first, last` pairs.
fn clip(runs: &[HeldRun], lo: u64, hi: u64, out: &mut Vec<u32>) {
    let start = runs.partition_point(|r| (r.last as u64) < lo);
    for r in &runs[start..] {
        if r.first as u64 > hi {
            break;
        }
        out.push((r.first as u64).max(lo) as u32);
        out.push((r.last as u64).min(hi) as u32);
    }
}

/// The span of each query `first .. first + count - 1` over the held set
/// given as its maximal runs (spec/spans.md#span-rules), each as its
/// maximal runs' `first, last` pairs (kvspec.v1.QuerySpan.ranges). A query
/// at `q` sees the held positions `p <= q`, of those the ones its rule
/// allows (`p >= allowed_from(q)`) and the held sinks, which are every held
/// position up to `last_sink` (the sinks are the lowest positions ever
/// admitted, so those held are a prefix of the held set).
pub fn query_spans(runs: &[HeldRun], first: u64, count: u64, options: SpanOptions, last_sink: Option<u32>) -> Vec<Vec<u32>> {
    (first..first + count)
        .map(|q| {
            let lo = options.allowed_from(q);
            let mut ranges = Vec::new();
            match last_sink {
                // Sinks below the allowed range and apart from it: two
                // pieces, never adjacent (lo - 1 is not in the span).
                Some(s) if (s as u64) + 1 < lo => {
                    clip(runs, 0, s as u64, &mut ranges);
                    clip(runs, lo, q, &mut ranges);
                }
                Some(_) => clip(runs, 0, q, &mut ranges),
                None => clip(runs, lo, q, &mut ranges),
            }
            ranges
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(window: u64, chunk: u64) -> SpanOptions {
        SpanOptions { log: true, span_window: window, span_chunk: chunk, ..Default::default() }
    }

    #[test]
    fn runs_and_ids() {
        let held = [0, 1, 4, 5, 6, 9];
        let abs = held_runs(&held, false);
        assert_eq!(
            abs,
            vec![HeldRun { first: 0, last: 1, id: 0 }, HeldRun { first: 4, last: 6, id: 4 }, HeldRun { first: 9, last: 9, id: 9 }]
        );
        let rel = held_runs(&held, true);
        assert_eq!(rel.iter().map(|r| r.id).collect::<Vec<_>>(), vec![0, 2, 5]);
        assert!(held_runs(&[], false).is_empty());
        // The highest position is a run of its own, without overflow.
        assert_eq!(held_runs(&[u32::MAX - 1, u32::MAX], false), vec![HeldRun { first: u32::MAX - 1, last: u32::MAX, id: u32::MAX - 1 }]);
    }

    #[test]
    fn span_rules() {
        // spans.md#span-rules: W is over the integers; C is the query's chunk.
        assert_eq!(opts(4, 0).allowed_from(2), 0);
        assert_eq!(opts(4, 0).allowed_from(3), 0);
        assert_eq!(opts(4, 0).allowed_from(4), 1);
        assert_eq!(opts(1, 0).allowed_from(7), 7);
        assert_eq!(opts(0, 4).allowed_from(3), 0);
        assert_eq!(opts(0, 4).allowed_from(4), 4);
        assert_eq!(opts(0, 4).allowed_from(11), 8);
        assert_eq!(opts(0, 0).allowed_from(11), 0);
        assert_eq!(opts(u32::MAX as u64, 0).allowed_from(u32::MAX as u64), 1);
        let runs = held_runs(&[0, 1, 2, 3, 4, 5, 6], false);
        assert_eq!(query_spans(&runs, 2, 5, opts(4, 0), None), vec![vec![0, 2], vec![0, 3], vec![1, 4], vec![2, 5], vec![3, 6]]);
        // Sinks 0, 1 with W 2: apart from the window, then touching it.
        assert_eq!(query_spans(&runs, 5, 2, opts(2, 0), Some(1)), vec![vec![0, 1, 4, 5], vec![0, 1, 5, 6]]);
        assert_eq!(query_spans(&runs, 3, 1, opts(2, 0), Some(1)), vec![vec![0, 3]]);
        // A sink in the chunk is seen only by the queries after it.
        assert_eq!(query_spans(&runs, 0, 2, opts(1, 0), Some(1)), vec![vec![0, 0], vec![0, 1]]);
    }

    #[test]
    fn room_before_admission() {
        let at = |e| SpanOptions { evict_at: e, ..Default::default() };
        // Budget 6, 6 kept, 2 sinks.
        assert_eq!(at(EvictAt::After).evict_before(6, 6, 3, 2), 0);
        assert_eq!(at(EvictAt::RoomForStep).evict_before(6, 6, 3, 2), 3);
        assert_eq!(at(EvictAt::RoomForStep).evict_before(6, 6, 9, 2), 4);
        assert_eq!(at(EvictAt::BelowBudget).evict_before(6, 6, 3, 2), 1);
        assert_eq!(at(EvictAt::BelowBudget).evict_before(6, 4, 3, 2), 0);
        assert_eq!(at(EvictAt::BelowBudget).evict_before(1, 1, 1, 0), 1);
        assert!(at(EvictAt::After).evicts_after() && !at(EvictAt::BelowBudget).evicts_after());
    }

    // The log through the harness: worked examples of spec/spans.md.
    use crate::harness::{run_scenario, run_scenario_with_heads, EvictionLog, Scenario, ScenarioStep, StepRecord};
    use crate::heads::HeadCounts;
    use crate::trace::TraceParams;

    fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn chunks(sizes: &[u32]) -> Scenario {
        Scenario::Steps(sizes.iter().map(|&a| ScenarioStep::single(a, None)).collect())
    }

    fn run(name: &str, p: &[(&str, i64)], sizes: &[u32]) -> EvictionLog {
        let log = run_scenario(name, &params(p), 0, &chunks(sizes));
        assert!(log.rejection.is_none(), "{name} {p:?}: {:?}", log.rejection);
        log
    }

    fn run_of(first: u32, last: u32, id: u32) -> HeldRun {
        HeldRun { first, last, id }
    }

    /// A step's record with spans: victims, kept_count,
    /// query_cache_position, spans, held.
    fn rec(victims: &[u32], kept: u32, qcp: u32, spans: &[&[u32]], held: &[HeldRun]) -> StepRecord {
        StepRecord {
            victims: victims.to_vec(),
            kept_count: kept,
            query_cache_position: qcp,
            spans: spans.iter().map(|s| s.to_vec()).collect(),
            held: held.to_vec(),
            ..Default::default()
        }
    }

    /// The held set's positions of a step, from its runs.
    fn held_positions(r: &StepRecord) -> Vec<u32> {
        r.held.iter().flat_map(|h| h.first..=h.last).collect()
    }

    #[test]
    fn span_rules_worked_example() {
        // spans.md#span-rules: window budget 3, span_window 4, steps of 2, 5, 1.
        let log = run("window", &[("budget", 3), ("spans", 1), ("span_window", 4)], &[2, 5, 1]);
        assert_eq!(
            log.steps,
            vec![
                rec(&[], 2, 0, &[&[0, 0], &[0, 1]], &[run_of(0, 1, 0)]),
                rec(&[0, 1, 2, 3], 3, 2, &[&[0, 2], &[0, 3], &[1, 4], &[2, 5], &[3, 6]], &[run_of(0, 6, 0)]),
                rec(&[4], 3, 3, &[&[4, 7]], &[run_of(4, 7, 4)]),
            ]
        );
        // The same with cache-relative ids: only the ids change.
        let rel = run("window", &[("budget", 3), ("spans", 1), ("span_window", 4), ("position_ids", 1)], &[2, 5, 1]);
        assert_eq!(rel.steps[2].held, vec![run_of(4, 7, 0)]);
        assert_eq!(rel.steps[..2], log.steps[..2]);
        // spans 0: the same victims and counts, and no spans or held set.
        let quiet = run("window", &[("budget", 3), ("span_window", 4), ("position_ids", 1)], &[2, 5, 1]);
        for (q, s) in quiet.steps.iter().zip(&log.steps) {
            assert!(q.spans.is_empty() && q.held.is_empty());
            assert_eq!((&q.victims, q.kept_count, q.query_cache_position), (&s.victims, s.kept_count, s.query_cache_position));
        }
    }

    #[test]
    fn span_chunk_and_full_causal() {
        // span_chunk 3 under full: each query sees its own chunk of 3
        // positions up to itself; full causal sees everything up to itself.
        let log = run("full", &[("spans", 1), ("span_chunk", 3)], &[4, 3]);
        assert_eq!(log.steps[0].spans, vec![vec![0, 0], vec![0, 1], vec![0, 2], vec![3, 3]]);
        assert_eq!(log.steps[1].spans, vec![vec![3, 4], vec![3, 5], vec![6, 6]]);
        assert_eq!(log.steps[1].held, vec![run_of(0, 6, 0)]);
        let log = run("full", &[("spans", 1)], &[2, 2]);
        assert_eq!(log.steps[1], rec(&[], 4, 2, &[&[0, 2], &[0, 3]], &[run_of(0, 3, 0)]));
    }

    /// spans.md#when-room-is-made: streamingllm budget 6, sinks 2, chunks of
    /// 4, 3, 1; each `evict_at`'s victims and held set per step.
    #[test]
    fn evict_at_worked_example() {
        let table: [(i64, [(&[u32], &[u32]); 3]); 3] = [
            (0, [(&[], &[0, 1, 2, 3]), (&[2], &[0, 1, 2, 3, 4, 5, 6]), (&[3], &[0, 1, 3, 4, 5, 6, 7])]),
            (1, [(&[], &[0, 1, 2, 3]), (&[2], &[0, 1, 3, 4, 5, 6]), (&[3], &[0, 1, 4, 5, 6, 7])]),
            (2, [(&[], &[0, 1, 2, 3]), (&[], &[0, 1, 2, 3, 4, 5, 6]), (&[2, 3], &[0, 1, 4, 5, 6, 7])]),
        ];
        for (evict_at, rows) in table {
            let p = [("budget", 6), ("sinks", 2), ("spans", 1), ("evict_at", evict_at)];
            let log = run("streamingllm", &p, &[4, 3, 1]);
            let mut kept = 0u32;
            for (step, (victims, held)) in rows.iter().enumerate() {
                let r = &log.steps[step];
                assert_eq!(r.victims, victims.to_vec(), "evict_at {evict_at} step {step}");
                assert_eq!(held_positions(r), held.to_vec(), "evict_at {evict_at} step {step}");
                // Kept when the step started, before any eviction.
                assert_eq!(r.query_cache_position, kept, "evict_at {evict_at} step {step}");
                // Before admission nothing goes after: the held set is kept.
                let after = if evict_at == 0 { held.len() - victims.len() } else { held.len() };
                assert_eq!(r.kept_count as usize, after, "evict_at {evict_at} step {step}");
                kept = r.kept_count;
            }
            // The same victims without spans: only evict_at changes the log.
            let quiet = run("streamingllm", &p[..2].iter().chain(&[("evict_at", evict_at)]).copied().collect::<Vec<_>>(), &[4, 3, 1]);
            assert_eq!(quiet.steps.iter().map(|r| &r.victims).collect::<Vec<_>>(), log.steps.iter().map(|r| &r.victims).collect::<Vec<_>>());
        }
        // With span_window R = budget - sinks = 4 every query sees the sinks
        // and the latest 4 up to itself (spans.md#span-rules): evict_at 1,
        // step 4..6 holds 0, 1, 3..6.
        let p = [("budget", 6), ("sinks", 2), ("spans", 1), ("evict_at", 1), ("span_window", 4)];
        let log = run("streamingllm", &p, &[4, 3, 1]);
        assert_eq!(log.steps[1].spans, vec![vec![0, 1, 3, 4], vec![0, 1, 3, 5], vec![0, 1, 3, 6]]);
        assert_eq!(log.steps[2].spans, vec![vec![0, 1, 4, 7]]);
        assert_eq!(log.steps[2].held, vec![run_of(0, 1, 0), run_of(4, 7, 4)]);
    }

    #[test]
    fn evict_at_long_chunks() {
        // evict_at 1: a chunk longer than budget - sinks takes every
        // non-sink and stays whole, kept sinks + c, until a later step
        // makes room.
        let p = [("budget", 6), ("sinks", 2), ("evict_at", 1)];
        let log = run("streamingllm", &p, &[4, 7, 1]);
        assert_eq!(log.steps.iter().map(|r| (r.victims.clone(), r.kept_count)).collect::<Vec<_>>(), vec![
            (vec![], 4),
            (vec![2, 3], 9),
            (vec![4, 5, 6, 7], 6),
        ]);
        // evict_at 2: nothing at the first step, so a first chunk longer
        // than the budget is kept whole; a chunk of c > 1 leaves budget - 1 + c.
        let log = run("window", &[("budget", 3), ("evict_at", 2)], &[5, 2, 1]);
        assert_eq!(log.steps.iter().map(|r| (r.victims.clone(), r.kept_count)).collect::<Vec<_>>(), vec![
            (vec![], 5),
            (vec![0, 1, 2], 4),
            (vec![3, 4], 3),
        ]);
        // evict_at 1 under window: room for the step, the whole cache for
        // a chunk above the budget.
        let log = run("window", &[("budget", 3), ("evict_at", 1)], &[2, 2, 5]);
        assert_eq!(log.steps.iter().map(|r| (r.victims.clone(), r.kept_count)).collect::<Vec<_>>(), vec![
            (vec![], 2),
            (vec![0], 3),
            (vec![1, 2, 3], 5),
        ]);
        // On decode steps rules 1 and 2 agree (room for one is budget - 1),
        // and keep what evict_at 0 keeps.
        for policy in [("window", vec![("budget", 4)]), ("streamingllm", vec![("budget", 4), ("sinks", 1)])] {
            let at = |e: i64| {
                let mut p = policy.1.clone();
                p.push(("evict_at", e));
                run(policy.0, &p, &[1; 9])
            };
            assert_eq!(at(1), at(2), "{}", policy.0);
            assert_eq!(at(1).steps.iter().map(|r| &r.victims).collect::<Vec<_>>(), at(0).steps.iter().map(|r| &r.victims).collect::<Vec<_>>());
        }
    }

    #[test]
    fn position_ids() {
        // spans.md#position-ids: with position_ids 1 a step's first query
        // has id query_cache_position under evict_at 0, and the number
        // kept after the eviction before admission under 1 or 2; the
        // absolute id of a position is itself. Ids fall as positions below
        // leave.
        for evict_at in 0..3 {
            for rel in [0, 1] {
                let p = [("budget", 6), ("sinks", 2), ("spans", 1), ("evict_at", evict_at), ("position_ids", rel)];
                let log = run("streamingllm", &p, &[4, 3, 1, 1, 5, 2]);
                for (step, r) in log.steps.iter().enumerate() {
                    // The step admitted the last `count` held positions.
                    let count = r.spans.len() as u32;
                    let run = r.held.last().unwrap();
                    let q = run.last + 1 - count;
                    let id = run.id + (q - run.first);
                    let before = if evict_at == 0 { 0 } else { r.victims.len() as u32 };
                    let want = if rel == 1 { r.query_cache_position - before } else { q };
                    assert_eq!(id, want, "evict_at {evict_at} position_ids {rel} step {step}");
                    if rel == 1 {
                        assert_eq!(r.held[0].id, 0);
                    } else {
                        assert!(r.held.iter().all(|h| h.id == h.first));
                    }
                }
            }
        }
        // Worked by hand, evict_at 0: position 3's id is 3 at step 0
        // (held 0..3), still 3 at step 1 (held 0..6), 2 at step 2 (held
        // 0, 1, 3..7).
        let log = run("streamingllm", &[("budget", 6), ("sinks", 2), ("spans", 1), ("position_ids", 1)], &[4, 3, 1]);
        assert_eq!(log.steps[2].held, vec![run_of(0, 1, 0), run_of(3, 7, 2)]);
    }

    #[test]
    fn parameters() {
        use crate::error::Category;
        let refusal = |name: &str, p: &[(&str, i64)]| crate::registry::build(name, &params(p), 0).err();
        let refused = |name: &str, p: &[(&str, i64)]| refusal(name, p).map(|r| r.category);
        let base = |name: &str| -> Vec<(&'static str, i64)> {
            match name {
                "full" => vec![],
                "window" => vec![("budget", 8)],
                _ => vec![("budget", 8), ("sinks", 2)],
            }
        };
        let with = |name: &str, more: &[(&'static str, i64)]| base(name).into_iter().chain(more.iter().copied()).collect::<Vec<_>>();
        let bad = Some(Category::InvalidParameter);
        for name in ["full", "window", "streamingllm"] {
            for (n, v) in [("spans", 2), ("spans", -1), ("span_window", -1), ("span_window", 1i64 << 32), ("span_chunk", 1i64 << 32), ("position_ids", 2)] {
                assert_eq!(refused(name, &with(name, &[(n, v)])), bad, "{name} {n} {v}");
            }
            for (n, v) in [("spans", 1), ("span_window", u32::MAX as i64), ("span_chunk", u32::MAX as i64), ("position_ids", 1)] {
                // full takes no position_ids (spec/spans.md#parameters).
                let expected = if name == "full" && n == "position_ids" { bad } else { None };
                assert_eq!(refused(name, &with(name, &[(n, v)])), expected, "{name} {n} {v}");
            }
            // span_window and span_chunk not both above 0; the message names both.
            let r = refusal(name, &with(name, &[("span_window", 4), ("span_chunk", 4)])).unwrap();
            assert_eq!(r.category, Category::InvalidParameter);
            assert!(r.message.contains("span_window") && r.message.contains("span_chunk"), "{}", r.message);
            assert_eq!(refused(name, &with(name, &[("span_window", 4), ("span_chunk", 0)])), None);
        }
        // full takes no evict_at, and still no budget.
        assert_eq!(refused("full", &[("evict_at", 0)]), bad);
        assert_eq!(refused("full", &[("budget", 4)]), bad);
        for name in ["window", "streamingllm"] {
            assert_eq!(refused(name, &with(name, &[("evict_at", 3)])), bad);
            assert_eq!(refused(name, &with(name, &[("evict_at", -1)])), bad);
            assert_eq!(refused(name, &with(name, &[("evict_at", 2)])), None);
        }
        // evict_at above 0 requires prefill_only 0 and ratio_ppm 0.
        for e in [1, 2] {
            for (n, v) in [("prefill_only", 1), ("ratio_ppm", 500_000)] {
                let r = refusal("streamingllm", &with("streamingllm", &[(n, v), ("evict_at", e)])).unwrap();
                assert_eq!(r.category, Category::InvalidParameter);
                assert!(r.message.contains("evict_at") && r.message.contains(n), "{}", r.message);
            }
        }
        assert_eq!(refused("streamingllm", &with("streamingllm", &[("prefill_only", 1), ("ratio_ppm", 500_000), ("spans", 1)])), None);
        // The card's own rules first (sinks below budget), then the
        // ranges before any rule.
        let r = refusal("streamingllm", &[("budget", 2), ("sinks", 2), ("span_window", 1), ("span_chunk", 1)]).unwrap();
        assert!(r.message.contains("sinks must be below budget"), "{}", r.message);
        let r = refusal("streamingllm", &[("budget", 2), ("sinks", 2), ("position_ids", 5)]).unwrap();
        assert!(r.message.contains("position_ids must be in [0, 1]"), "{}", r.message);
        // Every other policy refuses them as unknown.
        for name in ["h2o", "tova", "snapkv", "random"] {
            for n in ["spans", "span_window", "span_chunk", "evict_at", "position_ids", "context_shift", "discard"] {
                let r = refusal(name, &[("budget", 8), (n, 0)]).unwrap();
                assert_eq!(r.category, Category::InvalidParameter, "{name} {n}");
                assert!(r.message.contains("unknown parameter"), "{}", r.message);
            }
        }
    }

    #[test]
    fn zeros_change_nothing() {
        // Every span parameter given as 0 is the 0.7.0 configuration; so is
        // any span rule or id numbering with spans 0.
        let sizes = [3, 1, 1, 4, 1, 2, 7, 1, 1];
        for (name, p) in [("full", vec![]), ("window", vec![("budget", 4)]), ("streamingllm", vec![("budget", 5), ("sinks", 2)])] {
            let plain = run(name, &p, &sizes);
            let mut zeros = p.clone();
            zeros.extend([("spans", 0), ("span_window", 0), ("span_chunk", 0)]);
            if name != "full" {
                zeros.extend([("evict_at", 0), ("position_ids", 0), ("context_shift", 0), ("discard", 0)]);
            }
            assert_eq!(run(name, &zeros, &sizes), plain, "{name}");
            let mut rules = p.clone();
            rules.push(("span_chunk", 3));
            if name != "full" {
                rules.push(("position_ids", 1));
            }
            assert_eq!(run(name, &rules, &sizes), plain, "{name}");
        }
    }

    #[test]
    fn traces_heads_and_query_rows() {
        // Each trace step is a decode step: full keeps 0..t, and with W 8
        // position t sees the latest 8 up to itself.
        let trace = Scenario::Trace(TraceParams::canonical(40));
        let log = run_scenario("full", &params(&[("spans", 1), ("span_window", 8)]), 0, &trace);
        assert!(log.rejection.is_none());
        for (t, r) in log.steps.iter().enumerate() {
            let t = t as u32;
            assert_eq!(r.held, vec![run_of(0, t, 0)]);
            assert_eq!(r.spans, vec![vec![(t + 1).saturating_sub(8), t]]);
        }
        // streamingllm on the trace: sinks and the latest budget - sinks.
        let p = params(&[("budget", 8), ("sinks", 3), ("spans", 1), ("span_window", 5), ("evict_at", 1), ("position_ids", 1)]);
        let log = run_scenario("streamingllm", &p, 0, &trace);
        let r = &log.steps[30];
        assert_eq!((r.victims.clone(), r.kept_count, r.query_cache_position), (vec![25], 8, 8));
        assert_eq!(r.held, vec![run_of(0, 2, 0), run_of(26, 30, 3)]);
        assert_eq!(r.spans, vec![vec![0, 2, 26, 30]]);
        // One kept set whatever the heads: the step's own record carries
        // them, for a trace and for explicit steps of several heads.
        let heads = HeadCounts { query: 4, kv: 2 };
        assert_eq!(run_scenario_with_heads("streamingllm", &p, 0, heads, &trace), log);
        let steps = vec![ScenarioStep::per_head(4, vec![]), ScenarioStep::per_head(3, vec![vec![0.25; 4]; 4]), ScenarioStep::per_head(1, vec![])];
        let multi = run_scenario_with_heads("streamingllm", &p, 0, heads, &Scenario::Steps(steps));
        assert_eq!(multi, run("streamingllm", &[("budget", 8), ("sinks", 3), ("spans", 1), ("span_window", 5), ("evict_at", 1), ("position_ids", 1)], &[4, 3, 1]));
        assert!(multi.steps.iter().all(|r| r.sets.is_empty() && !r.spans.is_empty()));
        // A prefill step's query rows are checked and ignored: spans as for
        // the same step without them.
        let p = params(&[("budget", 3), ("spans", 1), ("span_window", 2), ("evict_at", 2)]);
        let with = run_scenario("window", &p, 0, &Scenario::Steps(vec![ScenarioStep::single(2, None), ScenarioStep::prefill(3, vec![vec![0.5; 4], vec![0.5; 5]])]));
        let without = run_scenario("window", &p, 0, &chunks(&[2, 3]));
        assert_eq!(with, without);
        assert_eq!(with.steps[1], rec(&[], 5, 2, &[&[1, 2], &[2, 3], &[3, 4]], &[run_of(0, 4, 0)]));
    }
    // spec/spans.md#context-shift (feature contextshift, spec 0.9.0).

    fn shift(discard: u64) -> SpanOptions {
        SpanOptions { context_shift: true, discard, ..Default::default() }
    }

    #[test]
    fn context_shift_discard() {
        // A step that fits evicts nothing: kept + c <= budget.
        assert_eq!(shift(0).evict_before(7, 6, 1, 2), 0);
        assert_eq!(shift(0).evict_before(7, 0, 7, 0), 0);
        assert_eq!(shift(9).evict_before(7, 5, 2, 2), 0);
        // d = floor(n_left / 2), n_left the kept non-sinks (window: all kept).
        assert_eq!(shift(0).evict_before(7, 7, 1, 2), 2);
        assert_eq!(shift(0).evict_before(4, 4, 1, 0), 2);
        assert_eq!(shift(0).evict_before(7, 5, 3, 2), 1);
        // discard above 0 replaces the half, clamped to n_left - 1.
        assert_eq!(shift(1).evict_before(7, 7, 1, 2), 1);
        assert_eq!(shift(4).evict_before(7, 5, 3, 2), 2);
        assert_eq!(shift(u32::MAX as u64).evict_before(7, 7, 1, 2), 4);
        // max(0, n_left - 1): one that may go is always kept, and with
        // n_left 1 or 0 nothing goes, whatever discard.
        assert_eq!(shift(0).evict_before(7, 3, 6, 2), 0);
        assert_eq!(shift(5).evict_before(7, 3, 6, 2), 0);
        assert_eq!(shift(5).evict_before(3, 2, 6, 2), 0);
        // Nothing after admission; evict_at's own rules are not used.
        assert!(!shift(0).evicts_after());
        assert!(SpanOptions::default().evicts_after());
        assert_eq!(SpanOptions::default().context_shift_discard(7, 7, 1, 2), 2);
    }

    /// spans.md#context-shift, the first worked example: streamingllm
    /// budget 7, sinks 2, default discard, position_ids 1, decode steps
    /// 0..20: a shift at steps 7, 9, .., 19 discarding the two oldest
    /// non-sinks, {2, 3}, {4, 5}, .., {14, 15}.
    #[test]
    fn context_shift_decode_worked_example() {
        let p = [("budget", 7), ("sinks", 2), ("spans", 1), ("position_ids", 1), ("context_shift", 1)];
        let log = run("streamingllm", &p, &[1; 21]);
        assert_eq!(log.steps.len(), 21);
        let mut kept: Vec<u32> = Vec::new();
        for (t, r) in log.steps.iter().enumerate() {
            let t = t as u32;
            let victims: Vec<u32> = if t >= 7 && t % 2 == 1 { vec![t - 5, t - 4] } else { vec![] };
            assert_eq!(r.victims, victims, "step {t}");
            assert_eq!(r.query_cache_position as usize, kept.len(), "step {t}");
            kept.retain(|p| !victims.contains(p));
            kept.push(t);
            // The held set is kept after the shift plus the step; nothing
            // goes after admission.
            assert_eq!(held_positions(r), kept, "step {t}");
            assert_eq!(r.kept_count as usize, kept.len(), "step {t}");
            // Ids are indices in the held set: no gap after a shift.
            assert_eq!(r.held[0].id, 0, "step {t}");
            for w in r.held.windows(2) {
                assert_eq!(w[1].id, w[0].id + (w[0].last - w[0].first) + 1, "step {t}");
            }
            // Full causal: the query sees all it holds.
            let mut spans = vec![];
            clip(&r.held, 0, t as u64, &mut spans);
            assert_eq!(r.spans, vec![spans], "step {t}");
        }
        // The table's rows, p@id.
        assert_eq!(log.steps[6].held, vec![run_of(0, 6, 0)]);
        assert_eq!(log.steps[7].held, vec![run_of(0, 1, 0), run_of(4, 7, 2)]);
        assert_eq!(log.steps[8].held, vec![run_of(0, 1, 0), run_of(4, 8, 2)]);
        assert_eq!(log.steps[9].held, vec![run_of(0, 1, 0), run_of(6, 9, 2)]);
        assert_eq!((log.steps[7].query_cache_position, log.steps[7].kept_count), (7, 6));
        // After position 20: 0@0 1@1 16@2 17@3 18@4 19@5 20@6.
        assert_eq!(log.steps[20].held, vec![run_of(0, 1, 0), run_of(16, 20, 2)]);
        assert_eq!(log.steps[20].spans, vec![vec![0, 1, 16, 20]]);
        // spans 0 and absolute ids: the same victims and counts (only
        // evict_at, context_shift and discard change what is kept).
        let quiet = run("streamingllm", &[("budget", 7), ("sinks", 2), ("context_shift", 1)], &[1; 21]);
        for (q, s) in quiet.steps.iter().zip(&log.steps) {
            assert!(q.spans.is_empty() && q.held.is_empty());
            assert_eq!((&q.victims, q.kept_count, q.query_cache_position), (&s.victims, s.kept_count, s.query_cache_position));
        }
        // With absolute ids a held position's id is itself.
        let abs = run("streamingllm", &[("budget", 7), ("sinks", 2), ("spans", 1), ("context_shift", 1)], &[1; 21]);
        assert_eq!(abs.steps[20].held, vec![run_of(0, 1, 0), run_of(16, 20, 16)]);
    }

    /// spans.md#context-shift, the chunk example: budget 7, sinks 2, steps
    /// of 5, 3, 1; default discard, then discard 4.
    #[test]
    fn context_shift_chunk_worked_example() {
        let base = [("budget", 7), ("sinks", 2), ("spans", 1), ("context_shift", 1)];
        let log = run("streamingllm", &base, &[5, 3, 1]);
        let got: Vec<_> = log.steps.iter().map(|r| (r.victims.clone(), held_positions(r), r.kept_count, r.query_cache_position)).collect();
        assert_eq!(got, vec![
            (vec![], vec![0, 1, 2, 3, 4], 5, 0),
            (vec![2], vec![0, 1, 3, 4, 5, 6, 7], 7, 5),
            (vec![3, 4], vec![0, 1, 5, 6, 7, 8], 6, 7),
        ]);
        let p: Vec<_> = base.iter().copied().chain([("discard", 4)]).collect();
        let log = run("streamingllm", &p, &[5, 3, 1]);
        let got: Vec<_> = log.steps.iter().map(|r| (r.victims.clone(), held_positions(r), r.kept_count)).collect();
        assert_eq!(got, vec![
            (vec![], vec![0, 1, 2, 3, 4], 5),
            (vec![2, 3], vec![0, 1, 4, 5, 6, 7], 6),
            (vec![], vec![0, 1, 4, 5, 6, 7, 8], 7),
        ]);
        // With position_ids 1 the chunk's first query has the id of the
        // number kept after the shift: 4 at step 1 (0, 1, 4, 5 before it).
        let p: Vec<_> = p.into_iter().chain([("position_ids", 1)]).collect();
        let log = run("streamingllm", &p, &[5, 3, 1]);
        assert_eq!(log.steps[1].held, vec![run_of(0, 1, 0), run_of(4, 7, 2)]);
    }

    #[test]
    fn context_shift_window_and_long_chunks() {
        // window budget 4, decode steps 0..6: every kept position may go,
        // d = floor(4 / 2) = 2 at steps 4 and 6.
        let log = run("window", &[("budget", 4), ("context_shift", 1)], &[1; 7]);
        assert_eq!(log.steps.iter().map(|r| (r.victims.clone(), r.kept_count)).collect::<Vec<_>>(), vec![
            (vec![], 1),
            (vec![], 2),
            (vec![], 3),
            (vec![], 4),
            (vec![0, 1], 3),
            (vec![], 4),
            (vec![2, 3], 3),
        ]);
        // A chunk longer than one shift's room is admitted whole (at most
        // one shift per step): chunks 3, 6, 1 under budget 7, sinks 2. At
        // step 1 n_left is 1, so d is 0 and the cache holds 9 until step 2
        // shifts 7 non-sinks' half, 3.
        let log = run("streamingllm", &[("budget", 7), ("sinks", 2), ("context_shift", 1)], &[3, 6, 1]);
        assert_eq!(log.steps.iter().map(|r| (r.victims.clone(), r.kept_count)).collect::<Vec<_>>(), vec![
            (vec![], 3),
            (vec![], 9),
            (vec![2, 3, 4], 7),
        ]);
        // window: a first chunk above the budget is kept whole; the next
        // step shifts half of it, once, and still does not fit.
        let log = run("window", &[("budget", 3), ("context_shift", 1), ("discard", 1)], &[5, 4, 1]);
        assert_eq!(log.steps.iter().map(|r| (r.victims.clone(), r.kept_count)).collect::<Vec<_>>(), vec![
            (vec![], 5),
            (vec![0], 8),
            (vec![1], 8),
        ]);
        // The smallest budgets the rules allow keep decode steps within it.
        let log = run("window", &[("budget", 2), ("context_shift", 1)], &[1; 6]);
        assert!(log.steps.iter().skip(2).all(|r| r.victims.len() == 1 && r.kept_count == 2));
        let log = run("streamingllm", &[("budget", 4), ("sinks", 2), ("context_shift", 1)], &[1; 8]);
        assert!(log.steps.iter().all(|r| r.kept_count <= 4));
        assert_eq!(log.steps[4].victims, vec![2]);
    }

    #[test]
    fn context_shift_heads_and_prefill_steps() {
        // One kept set whatever the heads; a prefill step's query rows are
        // checked and ignored; both take the shift like a plain step.
        let p = params(&[("budget", 7), ("sinks", 2), ("spans", 1), ("position_ids", 1), ("context_shift", 1)]);
        let plain = run_scenario("streamingllm", &p, 0, &chunks(&[5, 3, 1]));
        let heads = HeadCounts { query: 4, kv: 2 };
        let multi = Scenario::Steps(vec![ScenarioStep::per_head(5, vec![]), ScenarioStep::per_head(3, vec![vec![0.2; 5]; 4]), ScenarioStep::per_head(1, vec![vec![0.1; 8]; 4])]);
        assert_eq!(run_scenario_with_heads("streamingllm", &p, 0, heads, &multi), plain);
        let prefill = Scenario::Steps(vec![ScenarioStep::prefill(5, vec![vec![0.5; 5]]), ScenarioStep::prefill(3, vec![vec![0.5; 7], vec![0.5; 8]]), ScenarioStep::single(1, None)]);
        assert_eq!(run_scenario("streamingllm", &p, 0, &prefill), plain);
        // On a trace: every step a decode step; budget 6 with no sinks
        // discards 3 when full, so a shift every third step.
        let trace = Scenario::Trace(TraceParams::canonical(30));
        let log = run_scenario("window", &params(&[("budget", 6), ("context_shift", 1)]), 0, &trace);
        assert!(log.rejection.is_none());
        let shifts: Vec<usize> = log.steps.iter().enumerate().filter(|(_, r)| !r.victims.is_empty()).map(|(t, _)| t).collect();
        assert_eq!(shifts, vec![6, 9, 12, 15, 18, 21, 24, 27]);
        assert!(log.steps.iter().all(|r| r.kept_count <= 6));
    }

    #[test]
    fn context_shift_parameters() {
        use crate::error::Category;
        let refusal = |name: &str, p: &[(&str, i64)]| crate::registry::build(name, &params(p), 0).err();
        let refused = |name: &str, p: &[(&str, i64)]| refusal(name, p).map(|r| r.category);
        let bad = Some(Category::InvalidParameter);
        let names = |name: &str, p: &[(&str, i64)], want: &[&str]| {
            let r = refusal(name, p).unwrap_or_else(|| panic!("{name} {p:?} accepted"));
            assert_eq!(r.category, Category::InvalidParameter, "{name} {p:?}");
            for n in want {
                assert!(r.message.contains(n), "{name} {p:?}: {}", r.message);
            }
        };
        for (name, base) in [("window", vec![("budget", 8)]), ("streamingllm", vec![("budget", 8), ("sinks", 2)])] {
            let with = |more: &[(&'static str, i64)]| base.iter().copied().chain(more.iter().copied()).collect::<Vec<_>>();
            // Ranges: context_shift [0, 1], discard [0, 2^32 - 1].
            for (n, v) in [("context_shift", 2), ("context_shift", -1), ("discard", -1), ("discard", 1i64 << 32)] {
                assert_eq!(refused(name, &with(&[("context_shift", 1), (n, v)])), bad, "{name} {n} {v}");
            }
            assert_eq!(refused(name, &with(&[("context_shift", 1), ("discard", u32::MAX as i64)])), None);
            assert_eq!(refused(name, &with(&[("context_shift", 1), ("position_ids", 1), ("spans", 1), ("span_window", 3)])), None);
            // discard above 0 needs context_shift 1.
            names(name, &with(&[("discard", 1)]), &["discard", "context_shift"]);
            names(name, &with(&[("discard", 3), ("context_shift", 0)]), &["discard", "context_shift"]);
            assert_eq!(refused(name, &with(&[("discard", 0), ("context_shift", 0)])), None);
            // context_shift 1 needs evict_at 0.
            for e in [1, 2] {
                names(name, &with(&[("context_shift", 1), ("evict_at", e)]), &["context_shift", "evict_at"]);
            }
        }
        // streamingllm: context_shift 1 needs prefill_only 0 and ratio_ppm 0.
        names("streamingllm", &[("budget", 8), ("sinks", 2), ("prefill_only", 1), ("context_shift", 1)], &["context_shift", "prefill_only"]);
        names("streamingllm", &[("budget", 8), ("sinks", 2), ("ratio_ppm", 500_000), ("context_shift", 1)], &["context_shift", "ratio_ppm"]);
        // Without context_shift they are what they were.
        assert_eq!(refused("streamingllm", &[("budget", 8), ("sinks", 2), ("prefill_only", 1), ("ratio_ppm", 500_000)]), None);
        // budget - sinks >= 2 (streamingllm), budget >= 2 (window).
        names("streamingllm", &[("budget", 3), ("sinks", 2), ("context_shift", 1)], &["context_shift", "budget", "sinks"]);
        names("streamingllm", &[("budget", 1), ("sinks", 0), ("context_shift", 1)], &["context_shift", "budget", "sinks"]);
        assert_eq!(refused("streamingllm", &[("budget", 4), ("sinks", 2), ("context_shift", 1)]), None);
        assert_eq!(refused("streamingllm", &[("budget", 2), ("sinks", 0), ("context_shift", 1)]), None);
        assert_eq!(refused("streamingllm", &[("budget", 3), ("sinks", 2)]), None);
        names("window", &[("budget", 1), ("context_shift", 1)], &["context_shift", "budget"]);
        assert_eq!(refused("window", &[("budget", 2), ("context_shift", 1)]), None);
        assert_eq!(refused("window", &[("budget", 1)]), None);
        // Checked after the span rules and the card's own.
        let r = refusal("streamingllm", &[("budget", 8), ("sinks", 2), ("prefill_only", 1), ("evict_at", 1), ("context_shift", 1)]).unwrap();
        assert!(r.message.contains("evict_at above 0 requires prefill_only 0"), "{}", r.message);
        let r = refusal("window", &[("budget", 1), ("span_window", 2), ("span_chunk", 2), ("context_shift", 1)]).unwrap();
        assert!(r.message.contains("span_window and span_chunk"), "{}", r.message);
        let r = refusal("streamingllm", &[("budget", 2), ("sinks", 2), ("context_shift", 1)]).unwrap();
        assert!(r.message.contains("sinks must be below budget"), "{}", r.message);
        // full takes neither (it has no moment to make room).
        for n in ["context_shift", "discard"] {
            let r = refusal("full", &[(n, 0)]).unwrap();
            assert!(r.message.contains("unknown parameter"), "{}", r.message);
        }
    }
}
