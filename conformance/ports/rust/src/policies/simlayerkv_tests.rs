//! spec/policies/simlayerkv.md through whole scenarios: the card's worked
//! examples (the lazy layer, a score equal to the threshold, threshold
//! one; the two heads lazy at 300000 and not at 500000; the short cache
//! and one past it), and hand-worked cases of its other rules (fewer rows
//! than `n_last`, more rows than `n_last`, decode steps, several prefill
//! steps on the kept set, a score above 1.0, `n_initial` 0, column totals
//! and rows of other steps not read, a trace), and its parameters: ranges,
//! the rule `rule n_last n_recent`, and the parameters it does not take.
//! Every expected value is worked by hand from the card.

use crate::harness::{run_scenario, run_scenario_with_heads, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::error::Category;
use crate::heads::HeadCounts;
use crate::registry;
use crate::trace::TraceParams;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

/// The first example's parameters: `n_initial` 1, `n_recent` 2, `n_last`
/// 1, with the given `lazy_threshold_ppm`.
fn first(ppm: i64) -> Vec<(&'static str, i64)> {
    vec![("n_initial", 1), ("n_recent", 2), ("n_last", 1), ("lazy_threshold_ppm", ppm)]
}

fn run(p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario("simlayerkv", &params(p), 0, &Scenario::Steps(steps))
}

fn run_heads(p: &[(&str, i64)], heads: HeadCounts, steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario_with_heads("simlayerkv", &params(p), 0, heads, &Scenario::Steps(steps))
}

/// The log's steps, after checking that nothing was refused, that every
/// step has one set (no `sets`) and that no step logs a cut (nothing is
/// ranked: spec/policies/simlayerkv.md#tie-breaking).
fn ok(log: &EvictionLog) -> &[StepRecord] {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    assert!(log.steps.iter().all(|s| s.sets.is_empty() && s.cut.is_empty()), "{:?}", log.steps);
    &log.steps
}

fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
    ok(log).iter().map(|s| s.victims.clone()).collect()
}

fn kept_counts(log: &EvictionLog) -> Vec<u32> {
    ok(log).iter().map(|s| s.kept_count).collect()
}

/// The subject as spec/harness.md#subjects writes it; `None` when the
/// configuration is accepted.
fn subject(p: &[(&str, i64)]) -> Option<String> {
    registry::build("simlayerkv", &params(p), 0).err().map(|r| {
        assert_eq!(r.category, Category::InvalidParameter);
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

/// The first example's step: a prefill admitting 0 .. 5 with the row of
/// query 5.
fn first_step() -> ScenarioStep {
    ScenarioStep::prefill(6, vec![vec![0.25, 0.0625, 0.0625, 0.125, 0.25, 0.25]])
}

#[test]
fn example_lazy() {
    // Vector simlayerkv/basic/lazy. n = 6 > 1 + 2 + 1; prefix 0 .. 4;
    // initial a[0] = 0.25, recent slots 3 .. 4, 0.125 + 0.25 = 0.375;
    // 0.625 > 0.5: slots 1 .. 6 - (2 - 1) - 1 = 4 go; 0 and 5 stay.
    let log = run(&first(500000), vec![first_step()]);
    assert_eq!(victims(&log), vec![vec![1, 2, 3, 4]]);
    assert_eq!(kept_counts(&log), vec![2]);
    assert_eq!(log.steps[0].query_cache_position, 0);
}

#[test]
fn example_equal_is_not_lazy() {
    // Vector simlayerkv/basic/equal-is-not-lazy: the score 0.625 equals
    // the threshold 625000 / 10^6 (both exact), and equal is not lazy.
    let log = run(&first(625000), vec![first_step()]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
    assert_eq!(kept_counts(&log), vec![6]);
    // One ppm below, the same score is lazy.
    let log = run(&first(624999), vec![first_step()]);
    assert_eq!(victims(&log), vec![vec![1, 2, 3, 4]]);
}

#[test]
fn example_threshold_one_never() {
    // Vector simlayerkv/basic/threshold-one-never.
    let log = run(&first(1000000), vec![first_step()]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
    assert_eq!(kept_counts(&log), vec![6]);
}

#[test]
fn threshold_one_never_even_above_one() {
    // Weights need not sum to 1: the row (1, 0, 0, 1, 1, 0) scores 1 + (1
    // + 1) = 3.0, above 1.0; 1000000 still compresses nothing, 999999
    // (0.999999) is lazy.
    let step = || ScenarioStep::prefill(6, vec![vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0]]);
    assert_eq!(victims(&run(&first(1000000), vec![step()])), vec![Vec::<u32>::new()]);
    assert_eq!(victims(&run(&first(999999), vec![step()])), vec![vec![1, 2, 3, 4]]);
}

/// The second example's step: two query heads, a prefill admitting 0 ..
/// 7 with the rows of queries 6 and 7, head 0's first. The rows' slots 6
/// and 7 are not read: they hold 1.0.
fn heads_step() -> ScenarioStep {
    ScenarioStep::prefill(
        8,
        vec![
            vec![0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            vec![0.25, 0.0, 0.0, 0.0, 0.0, 0.25, 1.0, 1.0],
            vec![0.0, 0.125, 0.125, 0.25, 0.0, 0.0, 1.0],
            vec![0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, 1.0],
        ],
    )
}

fn heads_params(ppm: i64) -> Vec<(&'static str, i64)> {
    vec![("n_initial", 1), ("n_recent", 3), ("n_last", 2), ("lazy_threshold_ppm", ppm)]
}

#[test]
fn example_heads() {
    // Vectors simlayerkv/heads/not-lazy and simlayerkv/heads/lazy. Sums
    // over both heads' two rows: 0.75, 0.125, 0.625, 0.25, 0, 0.25, / 4:
    // a = (0.1875, 0.03125, 0.15625, 0.0625, 0, 0.0625); initial 0.1875,
    // recent slots 3 .. 5, 0.125; score 0.3125. One kept set whatever the
    // KV heads (it takes no granularity).
    for kv in [1, 2] {
        let hc = HeadCounts { query: 2, kv };
        let log = run_heads(&heads_params(500000), hc, vec![heads_step()]);
        assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
        assert_eq!(kept_counts(&log), vec![8]);
        // 300000: slots 1 .. 8 - (3 - 2) - 1 = 6 go; 0 and 7 stay.
        let log = run_heads(&heads_params(300000), hc, vec![heads_step()]);
        assert_eq!(victims(&log), vec![vec![1, 2, 3, 4, 5, 6]]);
        assert_eq!(kept_counts(&log), vec![2]);
        // The score is 0.3125 exactly: equal is not lazy, one ppm below is.
        let log = run_heads(&heads_params(312500), hc, vec![heads_step()]);
        assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
        let log = run_heads(&heads_params(312499), hc, vec![heads_step()]);
        assert_eq!(victims(&log), vec![vec![1, 2, 3, 4, 5, 6]]);
    }
}

#[test]
fn heads_weigh_alike() {
    // Head 1 alone (head 0's rows zero) sums 0, 0.125, 0.625, 0.25, 0, 0
    // over the prefix, / 4: initial 0, recent slots 3 .. 5: 0.0625. Lazy
    // at 62499, not at 62500: the mean is over both heads, the zero head
    // included (head 1 alone over its 2 rows would score 0.125).
    let mut step = heads_step();
    step.queries[0] = vec![0.0; 7];
    step.queries[1] = vec![0.0; 8];
    let hc = HeadCounts { query: 2, kv: 1 };
    assert_eq!(victims(&run_heads(&heads_params(62500), hc, vec![step.clone()])), vec![Vec::<u32>::new()]);
    assert_eq!(victims(&run_heads(&heads_params(62499), hc, vec![step])), vec![vec![1, 2, 3, 4, 5, 6]]);
}

#[test]
fn example_short_cache() {
    // Vectors simlayerkv/basic/short-not-judged and
    // simlayerkv/basic/one-past-short, lazy_threshold_ppm 0. 4 positions:
    // 4 <= 1 + 2 + 1, not judged, whatever the row.
    let log = run(&first(0), vec![ScenarioStep::prefill(4, vec![vec![1.0, 1.0, 1.0, 1.0]])]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
    assert_eq!(kept_counts(&log), vec![4]);
    // 5 positions: judged. Prefix 0 .. 3, initial 0.25, recent slots 2 ..
    // 3, 0.5: 0.75 > 0, slots 1 .. 5 - 1 - 1 = 3 go (2 * n_last + 1 = 3).
    let log = run(&first(0), vec![ScenarioStep::prefill(5, vec![vec![0.25, 0.25, 0.25, 0.25, 0.0]])]);
    assert_eq!(victims(&log), vec![vec![1, 2, 3]]);
    assert_eq!(kept_counts(&log), vec![2]);
    // A score of 0 is not above 0: the middle slot 1 alone has weight,
    // and the query's weight on itself is not in the prefix.
    let log = run(&first(0), vec![ScenarioStep::prefill(5, vec![vec![0.0, 1.0, 0.0, 0.0, 1.0]])]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
}

#[test]
fn short_cache_counts_the_kept_set() {
    // The rule reads n, the kept count after admission: two prefill steps
    // of 3 and 2 (0.25 on every kept slot): n 3, then 5, judged.
    let steps = vec![
        ScenarioStep::prefill(3, vec![vec![0.25, 0.25, 0.25]]),
        ScenarioStep::prefill(2, vec![vec![0.25, 0.25, 0.25, 0.25, 0.25]]),
    ];
    let log = run(&first(0), steps);
    assert_eq!(victims(&log), vec![vec![], vec![1, 2, 3]]);
    assert_eq!(kept_counts(&log), vec![3, 2]);
    // n_initial + n_recent + n_last at the top of their ranges: no
    // overflow, never judged.
    let p = [("n_initial", 4294967295), ("n_recent", 4294967295), ("n_last", 4294967294), ("lazy_threshold_ppm", 0)];
    let log = run(&p, vec![ScenarioStep::prefill(6, vec![vec![1.0; 6]])]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
}

#[test]
fn fewer_rows_than_n_last() {
    // n_initial 1, n_recent 3, n_last 2, threshold 0.5; a prefill of 0 ..
    // 7 with the row of query 7 alone: w = min(2, 1) = 1, divided by 1;
    // the prefix is still slots 0 .. 8 - 2 - 1 = 5. Row (0.25, 0, 0,
    // 0.25, 0, 0.125, 0, 1): initial 0.25, recent slots 3 .. 5, 0.375;
    // 0.625 > 0.5. The kept region still uses n_last: slots 1 .. 8 - (3 -
    // 2) - 1 = 6 go. (The prefix n - w would read slots 4 .. 6, 0.125,
    // and not be lazy; dividing by Hq * n_last would give 0.3125.)
    let row = vec![0.25, 0.0, 0.0, 0.25, 0.0, 0.125, 0.0, 1.0];
    let log = run(&heads_params(500000), vec![ScenarioStep::prefill(8, vec![row.clone()])]);
    assert_eq!(victims(&log), vec![vec![1, 2, 3, 4, 5, 6]]);
    assert_eq!(kept_counts(&log), vec![2]);
    // Two query heads of one row each: w = 1, Hq * w = 2. Head 1's row
    // zero: the score halves to 0.3125, not lazy at 0.5, lazy at 0.3.
    let hc = HeadCounts { query: 2, kv: 2 };
    let step = || ScenarioStep::prefill(8, vec![row.clone(), vec![0.0; 8]]);
    assert_eq!(victims(&run_heads(&heads_params(500000), hc, vec![step()])), vec![Vec::<u32>::new()]);
    assert_eq!(victims(&run_heads(&heads_params(312500), hc, vec![step()])), vec![Vec::<u32>::new()]);
    assert_eq!(victims(&run_heads(&heads_params(300000), hc, vec![step()])), vec![vec![1, 2, 3, 4, 5, 6]]);
}

#[test]
fn only_the_last_n_last_rows_are_read() {
    // The second example with a third row per head, of query 5, before
    // the others: (1, 1, 1, 1, 1, 1), not read (the last w = 2 rows are).
    // Read, it would raise the score far above 0.5.
    let mut step = heads_step();
    step.admit = 8;
    let q = std::mem::take(&mut step.queries);
    let five = vec![1.0f32; 6];
    step.queries = vec![five.clone(), q[0].clone(), q[1].clone(), five, q[2].clone(), q[3].clone()];
    let hc = HeadCounts { query: 2, kv: 1 };
    assert_eq!(victims(&run_heads(&heads_params(500000), hc, vec![step.clone()])), vec![Vec::<u32>::new()]);
    assert_eq!(victims(&run_heads(&heads_params(300000), hc, vec![step])), vec![vec![1, 2, 3, 4, 5, 6]]);
}

#[test]
fn decode_steps_never_evict() {
    // ppm 0, so any positive score is lazy at a prefill. Ten decode steps
    // with rows (all 0.125) and null attention keep everything.
    let p = first(0);
    let mut steps: Vec<ScenarioStep> =
        (0..10).map(|i| ScenarioStep::single(1, (i % 2 == 0).then(|| vec![0.125; i as usize]))).collect();
    // A prefill of position 10 with the row of query 10, 0.125 each: n
    // 11, prefix 0 .. 9, initial 0.125, recent slots 8 .. 9, 0.25: lazy,
    // slots 1 .. 11 - 1 - 1 = 9 go.
    steps.push(ScenarioStep::prefill(1, vec![vec![0.125; 11]]));
    // Then decode steps again, with full-cache rows (one weight per
    // position admitted before the step).
    steps.push(ScenarioStep::single(1, Some(vec![0.5; 11])));
    steps.push(ScenarioStep::single(3, Some(vec![1.0; 12])));
    steps.push(ScenarioStep::single(1, None));
    let log = run(&p, steps);
    let mut expected = vec![Vec::<u32>::new(); 10];
    expected.push((1..10).collect());
    expected.extend([vec![], vec![], vec![]]);
    assert_eq!(victims(&log), expected);
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 2, 3, 6, 7]);
}

#[test]
fn each_prefill_step_is_judged_on_its_kept_set() {
    // The first example, then a second prefill admitting 6 .. 9 with the
    // row of query 9, whose weights at the evicted 1 .. 4 are 1.0 and at
    // the kept 0, 5, 6, 7, 8, 9 the first example's row: gathered, it is
    // that row again (n = 6), lazy: slots 1 .. 4, positions 5 .. 8, go.
    let second = vec![0.25, 1.0, 1.0, 1.0, 1.0, 0.0625, 0.0625, 0.125, 0.25, 0.25];
    let log = run(&first(500000), vec![first_step(), ScenarioStep::prefill(4, vec![second])]);
    assert_eq!(victims(&log), vec![vec![1, 2, 3, 4], vec![5, 6, 7, 8]]);
    assert_eq!(kept_counts(&log), vec![2, 2]);
    assert_eq!(log.steps[1].query_cache_position, 2);
}

#[test]
fn n_initial_zero_keeps_no_first_position() {
    // n_initial 0, n_recent 2, n_last 1, ppm 0; 4 positions > 0 + 2 + 1:
    // prefix 0 .. 2, initial +0.0, recent slots 1 .. 2, 0.5 > 0: slots 0
    // .. 4 - 1 - 1 = 2 go, 3 alone stays.
    let p = [("n_initial", 0), ("n_recent", 2), ("n_last", 1), ("lazy_threshold_ppm", 0)];
    let log = run(&p, vec![ScenarioStep::prefill(4, vec![vec![1.0, 0.25, 0.25, 0.0]])]);
    assert_eq!(victims(&log), vec![vec![0, 1, 2]]);
    assert_eq!(kept_counts(&log), vec![1]);
    // Slot 0 has weight but is in neither region: score 0, not lazy.
    let log = run(&p, vec![ScenarioStep::prefill(4, vec![vec![1.0, 0.0, 0.0, 1.0]])]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
}

#[test]
fn the_middle_of_the_prefix_is_not_read() {
    // The first example with the weight of slots 1 and 2 raised to 4.0:
    // the same score, still lazy at 0.5 and not at 0.625.
    let step = || ScenarioStep::prefill(6, vec![vec![0.25, 4.0, 4.0, 0.125, 0.25, 0.25]]);
    assert_eq!(victims(&run(&first(500000), vec![step()])), vec![vec![1, 2, 3, 4]]);
    assert_eq!(victims(&run(&first(625000), vec![step()])), vec![Vec::<u32>::new()]);
    // And the query's weight on itself (slot 5, not in the prefix).
    let step = ScenarioStep::prefill(6, vec![vec![0.25, 0.0625, 0.0625, 0.125, 0.25, 9.0]]);
    assert_eq!(victims(&run(&first(625000), vec![step])), vec![Vec::<u32>::new()]);
}

#[test]
fn column_totals_are_not_read() {
    // The first example's step carrying totals (large ones): the same log.
    let with = first_step().with_totals(vec![vec![9.0; 6]], 1);
    for ppm in [500000, 625000] {
        assert_eq!(run(&first(ppm), vec![with.clone()]), run(&first(ppm), vec![first_step()]));
    }
}

#[test]
fn a_trace_never_evicts() {
    // A trace has no query rows: every step is a decode step.
    for heads in [HeadCounts::ONE, HeadCounts { query: 4, kv: 2 }] {
        let trace = Scenario::Trace(TraceParams::canonical(60));
        let log = run_scenario_with_heads("simlayerkv", &params(&first(0)), 0, heads, &trace);
        let steps = ok(&log);
        assert_eq!(steps.len(), 60);
        assert!(steps.iter().all(|s| s.victims.is_empty()));
        assert_eq!(steps[59].kept_count, 60);
    }
}

#[test]
fn parameters_ranges_and_defaults() {
    // The card's table: names, defaults, ranges, in order.
    assert_eq!(subject(&[]), None);
    for (name, low, high) in
        [("n_initial", 0, 4294967295), ("n_recent", 2, 4294967295), ("n_last", 1, 4294967294), ("lazy_threshold_ppm", 0, 1000000)]
    {
        let range = Some(format!("range {name}"));
        assert_eq!(subject(&[(name, low - 1)]), range, "{name} below");
        assert_eq!(subject(&[(name, high + 1)]), range, "{name} above");
    }
    // The limits, accepted where the rule allows them.
    assert_eq!(subject(&[("n_initial", 0), ("lazy_threshold_ppm", 0)]), None);
    assert_eq!(subject(&[("n_initial", 4294967295), ("lazy_threshold_ppm", 1000000)]), None);
    assert_eq!(subject(&[("n_recent", 2), ("n_last", 1)]), None);
    assert_eq!(subject(&[("n_recent", 4294967295), ("n_last", 4294967294)]), None);
    // Ranges in table order, and before the rule.
    assert_eq!(subject(&[("lazy_threshold_ppm", -1), ("n_recent", 1)]).as_deref(), Some("range n_recent"));
    assert_eq!(subject(&[("n_last", 4294967295), ("n_recent", 1)]).as_deref(), Some("range n_recent"));
    assert_eq!(subject(&[("n_last", 5), ("n_recent", 2), ("lazy_threshold_ppm", 1000001)]).as_deref(), Some("range lazy_threshold_ppm"));
    // Defaults: n_recent 1024, n_last 1; n_last 1024 reaches the default
    // n_recent, 1023 does not.
    assert_eq!(subject(&[("n_last", 1024)]).as_deref(), Some("rule n_last n_recent"));
    assert_eq!(subject(&[("n_last", 1023)]), None);
    // n_recent 1 is out of range (the rule would refuse it too).
    assert_eq!(subject(&[("n_recent", 1)]).as_deref(), Some("range n_recent"));
    // The defaults compress nothing (lazy_threshold_ppm 1000000).
    let log = run(&[], vec![ScenarioStep::prefill(2000, vec![vec![1.0; 2000]])]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
    // With a threshold, the defaults n_initial 4, n_recent 1024, n_last 1:
    // 1030 > 1029 is judged, the score 4 + 1024 weights of 1.0 is lazy:
    // slots 4 .. 1030 - 1023 - 1 = 6 go.
    let log = run(&[("lazy_threshold_ppm", 900000)], vec![ScenarioStep::prefill(1030, vec![vec![1.0; 1030]])]);
    assert_eq!(victims(&log), vec![vec![4, 5, 6]]);
    let log = run(&[("lazy_threshold_ppm", 900000)], vec![ScenarioStep::prefill(1029, vec![vec![1.0; 1029]])]);
    assert_eq!(victims(&log), vec![Vec::<u32>::new()]);
}

#[test]
fn rule_n_last_below_n_recent() {
    // Vector simlayerkv/refusal/last-not-below-recent: n_last >= n_recent,
    // equal or above, INVALID_PARAMETER with subject `rule n_last
    // n_recent`, at step -1 through a scenario.
    assert_eq!(subject(&[("n_recent", 2), ("n_last", 2)]).as_deref(), Some("rule n_last n_recent"));
    assert_eq!(subject(&[("n_recent", 2), ("n_last", 3)]).as_deref(), Some("rule n_last n_recent"));
    assert_eq!(subject(&[("n_recent", 4294967294), ("n_last", 4294967294)]).as_deref(), Some("rule n_last n_recent"));
    let log = run(&[("n_recent", 3), ("n_last", 3)], vec![first_step()]);
    let rejection = log.rejection.expect("refused");
    assert_eq!(rejection.step, -1);
    assert_eq!(rejection.refusal.category, Category::InvalidParameter);
    assert!(log.steps.is_empty());
    let r = registry::build("simlayerkv", &params(&[("n_recent", 2), ("n_last", 2)]), 0).err().unwrap();
    assert_eq!(r.message, "simlayerkv: n_last must be below n_recent, got n_last 2, n_recent 2");
}

#[test]
fn other_cards_parameters_are_unknown() {
    // No budget, no head, prefill, span, trigger or block parameters.
    for foreign in [
        "budget",
        "granularity",
        "aggregation",
        "adaptive",
        "safeguard_permille",
        "prefill_only",
        "ratio_ppm",
        "spans",
        "span_window",
        "span_chunk",
        "evict_at",
        "context_shift",
        "slack",
        "interval",
        "block",
        "block_score",
        "sinks",
        "recent_window",
        "obs_window",
    ] {
        assert_eq!(subject(&[(foreign, 1)]), Some(format!("unknown {foreign}")));
    }
    // A repeated parameter.
    assert_eq!(subject(&[("n_last", 1), ("n_last", 1)]).as_deref(), Some("repeated n_last"));
    // And simlayerkv's own are unknown to the others.
    for name in ["full", "streamingllm", "snapkv", "openvino", "lagkv"] {
        for own in ["n_initial", "n_recent", "n_last", "lazy_threshold_ppm"] {
            let r = registry::build(name, &params(&[(own, 1)]), 0).err().unwrap();
            assert_eq!(r.subject.names, vec![own.to_string()], "{name} {own}");
        }
    }
}
