//! Multi-head rules (spec/heads.md), worked by hand: kept sets by
//! granularity, combining heads, the log of several sets, rows per head, the
//! shared budget (spec/heads.md#head-adaptive-budgets) and traces of several
//! heads (spec/trace.md#several-heads).

use super::*;
use crate::error::Category;
use crate::heads::HeadCounts;
use crate::registry;
use crate::rng::Rng;
use crate::trace::TraceParams;

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
