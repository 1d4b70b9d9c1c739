//! The cards' "At prefill" examples (spec/policies/*.md#at-prefill) and the
//! rules of spec/prefill.md (spec/prefill.md#the-prefill-step,
//! spec/prefill.md#when-a-policy-evicts, spec/prefill.md#budgets-from-a-ratio,
//! spec/prefill.md#column-totals, the checks: spec/prefill.md#checks,
//! spec/prefill.md#their-checks), through whole scenarios.

use crate::error::Category;
use crate::harness::{run_scenario, run_scenario_with_heads, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

fn run(name: &str, p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario(name, &params(p), 0, &Scenario::Steps(steps))
}

fn ok(log: &EvictionLog) -> &[StepRecord] {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    &log.steps
}

fn rejection(log: &EvictionLog) -> Option<(Category, i32)> {
    log.rejection.as_ref().map(|r| (r.refusal.category, r.step))
}

/// The whole causal matrix of a prompt, as query rows.
fn causal(rows: &[&[f32]]) -> ScenarioStep {
    ScenarioStep::prefill(rows.len() as u32, rows.iter().map(|r| r.to_vec()).collect())
}

const INF: f64 = f64::INFINITY;

#[test]
fn h2o_at_prefill() {
    // spec/policies/h2o.md#at-prefill: budget 2, recent_window 0.
    let rows: [&[f32]; 3] = [&[0.5], &[0.25, 0.75], &[0.5, 0.25, 0.25]];
    let p = |normalize| [("budget", 2), ("recent_window", 0), ("normalize", normalize)];
    let raw = run("h2o", &p(0), vec![causal(&rows)]);
    assert_eq!(ok(&raw)[0].victims, vec![2]);
    assert_eq!(raw.steps[0].cut, vec![(2, 0.25), (1, 1.0), (0, 1.25)]);
    assert_eq!((raw.steps[0].kept_count, raw.steps[0].query_cache_position), (2, 0));
    let norm = run("h2o", &p(1), vec![causal(&rows)]);
    assert_eq!(ok(&norm)[0].victims, vec![2]);
    assert_eq!(norm.steps[0].cut, vec![(2, 0.25), (0, 1.25 / 3.0), (1, 0.5)]);
    // A last row (0.125, 0.25, 0.625): raw evicts 2, normalized 0.
    let rows: [&[f32]; 3] = [&[0.5], &[0.25, 0.75], &[0.125, 0.25, 0.625]];
    let raw = run("h2o", &p(0), vec![causal(&rows)]);
    assert_eq!(raw.steps[0].cut, vec![(2, 0.625), (0, 0.875), (1, 1.0)]);
    let norm = run("h2o", &p(1), vec![causal(&rows)]);
    assert_eq!(norm.steps[0].victims, vec![0]);
    assert_eq!(norm.steps[0].cut, vec![(0, 0.875 / 3.0), (1, 0.5), (2, 0.625)]);
}

#[test]
fn h2o_decoding_continues_from_the_prefill_sums() {
    // The raw sums above (1.25, 1.0 kept), then a decode row (0.0,
    // 0.5) admitting 3: sums 1.25, 1.5, and the new 3 at 0 goes with
    // recent_window 0.
    let rows: [&[f32]; 3] = [&[0.5], &[0.25, 0.75], &[0.5, 0.25, 0.25]];
    let row = |w: &[f32]| ScenarioStep::single(1, Some(w.to_vec()));
    let log = run("h2o", &[("budget", 2), ("recent_window", 0)], vec![causal(&rows), row(&[0.0, 0.5, 9.0])]);
    assert_eq!(ok(&log)[1].victims, vec![3]);
    assert_eq!(log.steps[1].cut, vec![(3, 0.0), (0, 1.25), (1, 1.5)]);
}

#[test]
fn h2o_normalizes_by_the_carried_rows_that_see_the_key() {
    // A prefill of 3 carrying the rows of queries 1 and 2 only: key 0
    // is seen by both rows, key 1 by both, key 2 by one.
    // Raw (0.25 + 0.5, 0.75 + 0.25, 0.25): 2 goes; normalized
    // (0.375, 0.5, 0.25): 2 goes; with budget 1, 0 goes next.
    let step = ScenarioStep::prefill(3, vec![vec![0.25, 0.75], vec![0.5, 0.25, 0.25]]);
    let log = run("h2o", &[("budget", 1), ("recent_window", 0), ("normalize", 1)], vec![step]);
    assert_eq!(ok(&log)[0].victims, vec![0, 2]);
    assert_eq!(log.steps[0].cut, vec![(2, 0.25), (0, 0.375), (1, 0.5)]);
}

#[test]
fn tova_at_prefill() {
    // spec/policies/tova.md#at-prefill: budget 2, recent_window 0; the
    // last row (0.25, 0.5, 0.125) of a prefill of 3.
    let step = || ScenarioStep::prefill(3, vec![vec![0.25, 0.5, 0.125]]);
    let p = |protect| [("budget", 2), ("recent_window", 0), ("protect_newest", protect)];
    let log = run("tova", &p(0), vec![step()]);
    assert_eq!(ok(&log)[0].victims, vec![2]);
    assert_eq!(log.steps[0].cut, vec![(2, 0.125), (0, 0.25), (1, 0.5)]);
    let log = run("tova", &p(1), vec![step()]);
    assert_eq!(ok(&log)[0].victims, vec![0]);
    assert_eq!(log.steps[0].cut, vec![(0, 0.25), (1, 0.5)]);
    // At decode steps protect_newest changes nothing.
    let decode = vec![ScenarioStep::single(2, None), ScenarioStep::single(1, Some(vec![0.25, 0.5]))];
    assert_eq!(run("tova", &p(1), decode.clone()), run("tova", &p(0), decode));
}

#[test]
fn tova_at_prefill_reads_the_last_row_only() {
    // m = 3: the first two rows are checked but not read.
    let step = causal(&[&[9.0], &[9.0, 0.0], &[0.25, 0.5, 0.125]]);
    let log = run("tova", &[("budget", 2), ("recent_window", 0)], vec![step]);
    assert_eq!(ok(&log)[0].victims, vec![2]);
}

fn snapkv_example() -> ScenarioStep {
    // spec/policies/snapkv.md#at-prefill: a prefill of 5 carrying the
    // rows of queries 3 and 4.
    ScenarioStep::prefill(5, vec![vec![0.25, 0.125, 0.5, 0.125], vec![0.5, 0.125, 0.25, 0.0625, 0.0625]])
}

fn snapkv_p(budget: i64, window_budget: i64) -> Vec<(&'static str, i64)> {
    vec![
        ("budget", budget),
        ("recent_window", 0),
        ("obs_window", 2),
        ("pool_kernel", 1),
        ("window_reduce", 0),
        ("window_budget", window_budget),
    ]
}

#[test]
fn snapkv_at_prefill() {
    // Prefix sums of 0, 1, 2: 0.75, 0.25, 0.75; the window 3, 4.
    // inside, budget 3: victims 0, 1 (1 lowest, then the tie at 0.75).
    let log = run("snapkv", &snapkv_p(3, 0), vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![0, 1]);
    assert_eq!(log.steps[0].cut, vec![(1, 0.25), (0, 0.75), (2, 0.75), (3, INF), (4, INF)]);
    assert_eq!(log.steps[0].kept_count, 3);
    // inside, budget 1: the prefix, then the lower window position.
    let log = run("snapkv", &snapkv_p(1, 0), vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![0, 1, 2, 3]);
    assert_eq!(log.steps[0].cut, vec![(1, 0.25), (0, 0.75), (2, 0.75), (3, INF), (4, INF)]);
    // outside, budget 2: (5 - 2) - 2 = 1 goes from the prefix.
    let log = run("snapkv", &snapkv_p(2, 1), vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![1]);
    assert_eq!(log.steps[0].cut, vec![(1, 0.25), (0, 0.75), (2, 0.75)]);
    assert_eq!(log.steps[0].kept_count, 4);
    // outside, budget 3: n - w = 3 fits, nothing goes.
    let log = run("snapkv", &snapkv_p(3, 1), vec![snapkv_example()]);
    assert_eq!((ok(&log)[0].victims.len(), log.steps[0].cut.len(), log.steps[0].kept_count), (0, 0, 5));
}

#[test]
fn snapkv_window_mean_and_avg_pooling_at_prefill() {
    // window_reduce 1: the sums divided once by w = 2.
    let mut p = snapkv_p(3, 0);
    p[4] = ("window_reduce", 1);
    let log = run("snapkv", &p, vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].cut, vec![(1, 0.125), (0, 0.375), (2, 0.375), (3, INF), (4, INF)]);
    // pooling 1 (avg, kernel 3) over the prefix only: (0.75, 0.25,
    // 0.75) pools to (1.0 / 3, 1.75 / 3, 1.0 / 3), zero padded at both
    // ends; the window is not a neighbour.
    let mut p = snapkv_p(4, 0);
    p[3] = ("pool_kernel", 3);
    p.push(("pooling", 1));
    let log = run("snapkv", &p, vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![0]);
    assert_eq!(log.steps[0].cut, vec![(0, 1.0 / 3.0), (2, 1.0 / 3.0), (1, 1.75 / 3.0), (3, INF), (4, INF)]);
    // Max pooling over the prefix only: (0.75, 0.75, 0.75); a window
    // neighbour would not lift 2.
    let mut p = snapkv_p(4, 0);
    p[3] = ("pool_kernel", 3);
    let log = run("snapkv", &p, vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].cut, vec![(0, 0.75), (1, 0.75), (2, 0.75), (3, INF), (4, INF)]);
}

#[test]
fn snapkv_window_is_at_most_the_rows() {
    // obs_window 16 with m = 2: w = 2, the same as obs_window 2.
    let mut p = snapkv_p(3, 0);
    p[2] = ("obs_window", 16);
    assert_eq!(run("snapkv", &p, vec![snapkv_example()]), run("snapkv", &snapkv_p(3, 0), vec![snapkv_example()]));
    // obs_window 1: only query 4's row, prefix 0..3: (0.5, 0.125, 0.25,
    // 0.0625); the window is 4 alone.
    p[2] = ("obs_window", 1);
    let log = run("snapkv", &p, vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![1, 3]);
    assert_eq!(log.steps[0].cut, vec![(3, 0.0625), (1, 0.125), (2, 0.25), (0, 0.5), (4, INF)]);
}

#[test]
fn snapkv_prefill_leaves_the_ring_alone() {
    // After a prefill (outside, nothing evicted) a decode step ranks by
    // the ring, which holds only what decode steps wrote: one row.
    let p = [("budget", 4), ("recent_window", 1), ("obs_window", 2), ("pool_kernel", 1), ("window_budget", 1)];
    let steps = vec![snapkv_example(), ScenarioStep::single(1, Some(vec![0.5, 0.25, 0.125, 1.0, 2.0]))];
    let log = run("snapkv", &p, steps);
    // Prefill: (5 - 2) - 4 < 0, nothing. Decode: kept 6, two go: 2
    // (0.125) and 1 (0.25); 5 is protected.
    assert_eq!(ok(&log)[0].victims, Vec::<u32>::new());
    assert_eq!(log.steps[1].victims, vec![1, 2]);
    assert_eq!(log.steps[1].cut, vec![(2, 0.125), (1, 0.25), (0, 0.5), (3, 1.0), (4, 2.0)]);
}

#[test]
fn avg_pooling_at_decode() {
    // pooling 1 at a decode eviction: sums 0.5, 0.125, 1.0, 0.25 and
    // a new 0 (budget 4, recent_window 1, kernel 3) average to
    // 0.625 / 3, 1.625 / 3, 1.375 / 3, 1.25 / 3, 0.25 / 3: 0 goes.
    let steps = vec![ScenarioStep::single(4, None), ScenarioStep::single(1, Some(vec![0.5, 0.125, 1.0, 0.25]))];
    let p = [("budget", 4), ("recent_window", 1), ("pool_kernel", 3), ("pooling", 1)];
    let log = run("snapkv", &p, steps);
    assert_eq!(ok(&log)[1].victims, vec![0]);
    assert_eq!(log.steps[1].cut, vec![(0, 0.625 / 3.0), (3, 1.25 / 3.0), (2, 1.375 / 3.0), (1, 1.625 / 3.0)]);
}

/// A prefill of `n` positions carrying one query row (the last).
fn last_row_prefill(n: u32) -> ScenarioStep {
    ScenarioStep::prefill(n, vec![vec![0.5; n as usize]])
}

#[test]
fn streamingllm_ratio_budgets() {
    // n = 20, ratio_ppm 900000: B = 1 in binary64 (2 exactly): every
    // non-sink and the lowest sinks go, keeping the highest sink.
    let p = |ratio| [("budget", 8), ("sinks", 4), ("ratio_ppm", ratio)];
    let log = run("streamingllm", &p(900_000), vec![last_row_prefill(20)]);
    assert_eq!(ok(&log)[0].victims, (0..20).filter(|&v| v != 3).collect::<Vec<_>>());
    assert_eq!(log.steps[0].kept_count, 1);
    // ratio 0.5: B = 10, above the sinks: the sinks and the latest 6.
    let log = run("streamingllm", &p(500_000), vec![last_row_prefill(20)]);
    assert_eq!(ok(&log)[0].victims, (4..14).collect::<Vec<_>>());
    assert_eq!(log.steps[0].kept_count, 10);
    // ratio 0.9 with B = 2 of 4 sinks at n = 30: 2 and 3 stay.
    let log = run("streamingllm", &p(900_000), vec![last_row_prefill(30)]);
    assert_eq!(ok(&log)[0].victims, (0..2).chain(4..30).collect::<Vec<_>>());
    // Without a ratio, a prefill step evicts by budget, as any step.
    let log = run("streamingllm", &p(0), vec![last_row_prefill(10)]);
    assert_eq!(ok(&log)[0].victims, (4..6).collect::<Vec<_>>());
    // A ratio does not touch decode steps: budget there.
    let log = run("streamingllm", &p(500_000), vec![ScenarioStep::single(10, None)]);
    assert_eq!(ok(&log)[0].victims, vec![4, 5]);
}

#[test]
fn streamingllm_sinks_are_the_first_positions_ever_admitted() {
    // sinks 4, ratio 0.9 on a prefill of 30 keeps sinks 2 and 3; then
    // decode steps by budget 5: the non-sinks go before the sinks
    // 2 and 3, which stay (the first kept slots are not all sinks any
    // more).
    let mut steps = vec![last_row_prefill(30)];
    steps.extend((0..5).map(|_| ScenarioStep::single(1, None)));
    let log = run("streamingllm", &[("budget", 5), ("sinks", 4), ("ratio_ppm", 900_000)], steps);
    let kept: Vec<u32> = ok(&log).iter().map(|r| r.kept_count).collect();
    assert_eq!(kept, vec![2, 3, 4, 5, 5, 5]);
    assert_eq!(log.steps[4].victims, vec![30]);
    assert_eq!(log.steps[5].victims, vec![31]);
}

#[test]
fn prefill_only_never_evicts_at_decode_steps() {
    let p = |policy: &str| -> Vec<(&'static str, i64)> {
        match policy {
            "streamingllm" => vec![("budget", 3), ("sinks", 1), ("prefill_only", 1)],
            _ => vec![("budget", 3), ("recent_window", 0), ("prefill_only", 1)],
        }
    };
    for policy in ["h2o", "tova", "snapkv", "streamingllm"] {
        let mut steps = vec![ScenarioStep::single(2, None)];
        steps.extend((2..7).map(|n| ScenarioStep::single(1, Some(vec![0.5; n]))));
        let log = run(policy, &p(policy), steps.clone());
        let kept: Vec<u32> = ok(&log).iter().map(|r| r.kept_count).collect();
        assert_eq!(kept, vec![2, 3, 4, 5, 6, 7], "{policy}");
        // A prefill step then evicts by budget.
        steps.push(ScenarioStep::prefill(1, vec![vec![0.5; 8]]));
        let log = run(policy, &p(policy), steps);
        assert_eq!(ok(&log)[6].kept_count, 3, "{policy}");
        assert_eq!(log.steps[6].victims.len(), 5, "{policy}");
    }
}

#[test]
fn ratio_budget_from_each_set_kept_count() {
    // h2o, two query heads in two sets, budget 4 then a ratio 0.5:
    // a decode chunk leaves each set at 4 (different positions), a
    // prefill of 4 makes 8 in each, and B = 4 per set.
    let p = [("budget", 4), ("recent_window", 0), ("granularity", 2), ("ratio_ppm", 500_000)];
    let steps = vec![
        ScenarioStep::per_head(2, vec![]),
        ScenarioStep::per_head(4, vec![vec![1.0, 0.0], vec![0.0, 1.0]]),
        ScenarioStep::prefill(4, vec![vec![0.0; 10], vec![0.0; 10]]),
    ];
    let log = run_scenario_with_heads("h2o", &params(&p), 0, HeadCounts { query: 2, kv: 1 }, &Scenario::Steps(steps));
    let s = ok(&log);
    assert_eq!(s[1].sets.iter().map(|r| r.kept_count).collect::<Vec<_>>(), vec![4, 4]);
    assert_eq!(s[2].sets.iter().map(|r| r.kept_count).collect::<Vec<_>>(), vec![4, 4]);
    // Set 0 kept 0 (sum 1.0), set 1 kept 1; every other score is 0.
    assert_eq!(s[2].sets[0].victims, vec![3, 4, 5, 6]);
    assert_eq!(s[2].sets[1].victims, vec![3, 4, 5, 6]);
}

#[test]
fn query_rows_are_gathered_at_each_set_kept_positions() {
    // tova, two query heads in two sets, budget 2, recent_window 0.
    // Step 0: a prefill of 3, head 0's last row (0.5, 0.25, 0.125)
    // keeps 0, 1; head 1's (0.125, 0.25, 0.5) keeps 1, 2. Step 1: a
    // prefill of 1 (query 3, 4 weights): head 0 gathers positions 0,
    // 1, 3; head 1 positions 1, 2, 3.
    let steps = vec![
        ScenarioStep::prefill(3, vec![vec![0.5, 0.25, 0.125], vec![0.125, 0.25, 0.5]]),
        ScenarioStep::prefill(1, vec![vec![0.25, 0.5, 9.0, 0.375], vec![9.0, 0.5, 0.25, 0.375]]),
    ];
    let p = [("budget", 2), ("recent_window", 0), ("granularity", 2)];
    let log = run_scenario_with_heads("tova", &params(&p), 0, HeadCounts { query: 2, kv: 2 }, &Scenario::Steps(steps));
    let s = ok(&log);
    assert_eq!(s[0].sets[0].victims, vec![2]);
    assert_eq!(s[0].sets[1].victims, vec![0]);
    assert_eq!(s[1].sets[0].cut, vec![(0, 0.25), (3, 0.375), (1, 0.5)]);
    assert_eq!(s[1].sets[1].cut, vec![(2, 0.25), (3, 0.375), (1, 0.5)]);
    assert_eq!((s[1].sets[0].query_cache_position, s[1].sets[0].kept_count), (2, 2));
}

#[test]
fn shared_budget_at_a_prefill_step() {
    // adaptive 1 with prefill_only 0 and ratio_ppm 0: a prefill step
    // evicts jointly with the prefill rule's scores and candidates.
    // tova, protect_newest 1, budget 2, two sets: the newest position
    // is no candidate of either set.
    let p = [("budget", 2), ("recent_window", 0), ("granularity", 2), ("adaptive", 1), ("protect_newest", 1)];
    let steps = vec![ScenarioStep::prefill(3, vec![vec![0.5, 0.25, 0.0], vec![0.0625, 0.125, 0.0]])];
    let log = run_scenario_with_heads("tova", &params(&p), 0, HeadCounts { query: 2, kv: 2 }, &Scenario::Steps(steps));
    // T = 6 of L = 4: ranked (0.0625, 0, set 1), (0.125, 1, set 1),
    // (0.25, 1, set 0), ...; set 1 keeps 2 alone (floor 1).
    let s = ok(&log);
    assert_eq!(s[0].sets[0].victims, Vec::<u32>::new());
    assert_eq!(s[0].sets[1].victims, vec![0, 1]);
    assert_eq!(s[0].sets[1].cut, vec![(0, 0.0625), (1, 0.125)]);
}

#[test]
fn positional_policies_check_query_rows_and_ignore_them() {
    for (policy, p) in [("full", vec![]), ("window", vec![("budget", 3)]), ("random", vec![("budget", 3), ("recent_window", 1)])] {
        let with = run(policy, &p, vec![ScenarioStep::single(2, None), ScenarioStep::prefill(3, vec![vec![0.5; 4], vec![0.5; 5]])]);
        let without = run(policy, &p, vec![ScenarioStep::single(2, None), ScenarioStep::single(3, None)]);
        assert_eq!(with, without, "{policy}");
        let bad = run(policy, &p, vec![ScenarioStep::prefill(2, vec![vec![0.5, f32::NAN]])]);
        assert_eq!(rejection(&bad), Some((Category::AttentionValue, 0)), "{policy}");
    }
}

#[test]
fn query_row_checks_in_order() {
    let p = [("budget", 8), ("recent_window", 1)];
    let al = Some((Category::AttentionLength, 1));
    let av = Some((Category::AttentionValue, 1));
    let with = |second: ScenarioStep, hq: u32| {
        let first = if hq == 1 { ScenarioStep::single(2, None) } else { ScenarioStep::per_head(2, vec![]) };
        let heads = HeadCounts { query: hq, kv: 1 };
        rejection(&run_scenario_with_heads("h2o", &params(&p), 0, heads, &Scenario::Steps(vec![first, second])))
    };
    let q = |admit, rows: Vec<Vec<f32>>| ScenarioStep::prefill(admit, rows);
    // Accepted: m = 1 or 2 of a chunk of 2 (queries 2, 3).
    assert_eq!(with(q(2, vec![vec![0.5; 4]]), 1), None);
    assert_eq!(with(q(2, vec![vec![0.5; 3], vec![0.5; 4]]), 1), None);
    assert_eq!(with(q(2, vec![vec![0.5; 3], vec![0.5; 4], vec![0.0; 3], vec![0.0; 4]]), 2), None);
    // Beside `attention` or `heads`: refused, even a valid row.
    let mut both = q(1, vec![vec![0.5; 3]]);
    both.row = Some(vec![0.5, 0.5]);
    assert_eq!(with(both.clone(), 1), al);
    // ... and before the row's weights.
    both.row = Some(vec![f32::NAN, 0.5]);
    assert_eq!(with(both, 1), al);
    let mut both = q(1, vec![vec![0.5; 3], vec![0.5; 3]]);
    both.heads = vec![vec![0.5, 0.5]; 2];
    assert_eq!(with(both, 2), al);
    // Not a multiple of Hq.
    assert_eq!(with(q(2, vec![vec![0.5; 4]; 3]), 2), al);
    // m above admit: three rows for a chunk of 2.
    assert_eq!(with(q(2, vec![vec![0.5; 2], vec![0.5; 3], vec![0.5; 4]]), 1), al);
    // A row of the wrong length: short, non-causal (longer), or in the
    // wrong order; head 1's too.
    assert_eq!(with(q(2, vec![vec![0.5; 3]]), 1), al);
    assert_eq!(with(q(2, vec![vec![0.5; 5]]), 1), al);
    assert_eq!(with(q(2, vec![vec![0.5; 4], vec![0.5; 3]]), 1), al);
    assert_eq!(with(q(1, vec![vec![0.5; 3], vec![0.5; 2]]), 2), al);
    // Lengths before weights: head 0 has a NaN, head 1 is short.
    assert_eq!(with(q(1, vec![vec![f32::NAN, 0.5, 0.5], vec![0.5; 2]]), 2), al);
    // Weights: any row, any index, including -0.0 and infinity.
    for bad in [f32::NAN, f32::INFINITY, -1.0, -0.0] {
        assert_eq!(with(q(2, vec![vec![0.5; 3], vec![0.5, 0.5, 0.5, bad]]), 1), av, "{bad}");
        assert_eq!(with(q(1, vec![vec![0.5; 3], vec![bad, 0.0, 0.0]]), 2), av, "{bad}");
    }
    // The positions first.
    assert_eq!(with(q(0, vec![vec![0.5; 2]]), 1), Some((Category::Position, 1)));
    // Steps in order: a query-row fault at step 1 before a fault at 2.
    let steps = vec![ScenarioStep::single(2, None), q(1, vec![vec![0.5; 2]]), ScenarioStep::single(0, None)];
    let log = run("h2o", &p, steps);
    assert_eq!((rejection(&log), log.steps.len()), (al, 1));
}

#[test]
fn prefill_parameters() {
    let cat = |name: &str, p: &[(&str, i64)]| {
        crate::registry::build(name, &params(p), 0).err().map(|r| (r.category, r.message))
    };
    let refused = |name: &str, p: &[(&str, i64)], needle: &str| {
        let (c, m) = cat(name, p).unwrap_or_else(|| panic!("{name} {p:?} accepted"));
        assert_eq!(c, Category::InvalidParameter, "{m}");
        assert!(m.contains(needle), "{name} {p:?}: {m}");
    };
    for policy in ["h2o", "tova", "snapkv", "streamingllm"] {
        refused(policy, &[("prefill_only", 2)], "prefill_only must be in [0, 1]");
        refused(policy, &[("prefill_only", -1)], "prefill_only must be in [0, 1]");
        refused(policy, &[("ratio_ppm", 1_000_000)], "ratio_ppm must be in [0, 999999]");
        refused(policy, &[("ratio_ppm", -1)], "ratio_ppm must be in [0, 999999]");
        // Card order: prefill_only before ratio_ppm.
        refused(policy, &[("ratio_ppm", -1), ("prefill_only", 5)], "prefill_only");
        assert!(cat(policy, &[("budget", 32), ("prefill_only", 1)]).is_none(), "{policy}");
    }
    // ratio_ppm above 0 requires recent_window 0, after the card's own
    // rules; streamingllm has no recent window.
    for policy in ["h2o", "tova", "snapkv"] {
        refused(policy, &[("ratio_ppm", 500_000)], "requires recent_window 0");
        assert!(cat(policy, &[("ratio_ppm", 999_999), ("recent_window", 0)]).is_none());
        refused(policy, &[("ratio_ppm", 500_000), ("budget", 4), ("recent_window", 4)], "recent_window must be below budget");
        // adaptive 1 requires prefill_only 0 and ratio_ppm 0.
        refused(policy, &[("adaptive", 1), ("prefill_only", 1)], "requires prefill_only 0");
        refused(policy, &[("adaptive", 1), ("ratio_ppm", 1), ("recent_window", 0)], "requires ratio_ppm 0");
        // Rule 1 before rule 2.
        refused(policy, &[("adaptive", 1), ("ratio_ppm", 1)], "requires recent_window 0");
        assert!(cat(policy, &[("adaptive", 1)]).is_none());
    }
    assert!(cat("streamingllm", &[("ratio_ppm", 500_000)]).is_none());
    refused("snapkv", &[("pool_kernel", 4), ("ratio_ppm", 500_000)], "pool_kernel must be odd");
    refused("snapkv", &[("adaptive", 1), ("window_budget", 1)], "requires window_budget 0");
    assert!(cat("snapkv", &[("window_budget", 1), ("ratio_ppm", 1), ("recent_window", 0)]).is_none());
    // Each policy's own prefill parameters, after ratio_ppm, and only its own.
    for (policy, own) in [("h2o", "normalize"), ("tova", "protect_newest")] {
        refused(policy, &[(own, 2)], &format!("{own} must be in [0, 1]"));
        refused(policy, &[(own, 2), ("ratio_ppm", -1)], "ratio_ppm");
    }
    for own in ["window_reduce", "pooling", "window_budget"] {
        refused("snapkv", &[(own, 2)], &format!("{own} must be in [0, 1]"));
        refused("snapkv", &[(own, -1), ("ratio_ppm", -1)], "ratio_ppm");
    }
    refused("snapkv", &[("window_budget", 2), ("pooling", 2), ("window_reduce", 2)], "window_reduce");
    refused("snapkv", &[("window_budget", 2), ("pooling", 2)], "pooling");
    for (policy, other) in [("h2o", "protect_newest"), ("tova", "normalize"), ("snapkv", "normalize"), ("streamingllm", "normalize")] {
        refused(policy, &[(other, 0)], "unknown parameter");
    }
    for policy in ["full", "window", "random"] {
        for name in ["prefill_only", "ratio_ppm"] {
            refused(policy, &[(name, 0)], "unknown parameter");
        }
    }
}

#[test]
fn snapkv_ratio_budget_counts_the_window_inside() {
    // window_budget 0 with a ratio: n = 5, ratio 0.6 -> B = max(1,
    // floor(5 * 0.4)) = 2: three go, the prefix first.
    let mut p = snapkv_p(3, 0);
    p.push(("ratio_ppm", 600_000));
    let log = run("snapkv", &p, vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![0, 1, 2]);
    // window_budget 1 with the same ratio: B = 2 from n = 5, and
    // (5 - 2) - 2 = 1 goes from the prefix.
    let mut p = snapkv_p(3, 1);
    p.push(("ratio_ppm", 600_000));
    let log = run("snapkv", &p, vec![snapkv_example()]);
    assert_eq!(ok(&log)[0].victims, vec![1]);
}

// Column totals (spec/prefill.md#column-totals, spec 0.10.0) and h2o's
// rule with them (spec/policies/h2o.md#at-prefill, "With column
// totals"). Expected values worked from the spec's text.

#[test]
fn h2o_totals_replace_the_rows() {
    // The card's two examples as totals over all 3 queries (R = 3),
    // beside one query row (0, 0, 1) that h2o must not read: alone,
    // that row makes 0 go (0 and 1 tie at 0.0), raw or normalized.
    let p = |normalize| [("budget", 2), ("recent_window", 0), ("normalize", normalize)];
    let row = || ScenarioStep::prefill(3, vec![vec![0.0, 0.0, 1.0]]);
    for normalize in [0, 1] {
        assert_eq!(ok(&run("h2o", &p(normalize), vec![row()]))[0].victims, vec![0]);
    }
    let step = |t: &[f64]| row().with_totals(vec![t.to_vec()], 3);
    // Raw 1.25, 1.0, 0.25: 2 goes. Normalized by min(3, 3 - p) = 3,
    // 2, 1: 1.25 / 3, 0.5, 0.25: 2 goes.
    let raw = run("h2o", &p(0), vec![step(&[1.25, 1.0, 0.25])]);
    assert_eq!(ok(&raw)[0].victims, vec![2]);
    assert_eq!(raw.steps[0].cut, vec![(2, 0.25), (1, 1.0), (0, 1.25)]);
    assert_eq!((raw.steps[0].kept_count, raw.steps[0].query_cache_position), (2, 0));
    let norm = run("h2o", &p(1), vec![step(&[1.25, 1.0, 0.25])]);
    assert_eq!(ok(&norm)[0].victims, vec![2]);
    assert_eq!(norm.steps[0].cut, vec![(2, 0.25), (0, 1.25 / 3.0), (1, 0.5)]);
    // Raw 0.875, 1.0, 0.625: 2 goes; normalized 0.2916..., 0.5, 0.625:
    // 0 goes.
    let raw2 = run("h2o", &p(0), vec![step(&[0.875, 1.0, 0.625])]);
    assert_eq!(ok(&raw2)[0].cut, vec![(2, 0.625), (0, 0.875), (1, 1.0)]);
    let norm2 = run("h2o", &p(1), vec![step(&[0.875, 1.0, 0.625])]);
    assert_eq!(ok(&norm2)[0].victims, vec![0]);
    assert_eq!(norm2.steps[0].cut, vec![(0, 0.875 / 3.0), (1, 0.5), (2, 0.625)]);
    // The rows these totals come from, carried whole, give the same
    // log bit for bit.
    let first: [&[f32]; 3] = [&[0.5], &[0.25, 0.75], &[0.5, 0.25, 0.25]];
    let second: [&[f32]; 3] = [&[0.5], &[0.25, 0.75], &[0.125, 0.25, 0.625]];
    assert_eq!(run("h2o", &p(0), vec![causal(&first)]), raw);
    assert_eq!(run("h2o", &p(1), vec![causal(&first)]), norm);
    assert_eq!(run("h2o", &p(0), vec![causal(&second)]), raw2);
    assert_eq!(run("h2o", &p(1), vec![causal(&second)]), norm2);
}

#[test]
fn h2o_totals_normalize_by_their_own_rows() {
    // normalize divides by min(R, a + c - p), R the totals' queries,
    // not c nor m. A prefill of 4, R = 2, totals 0.5, 0.4, 0.75, 0.3:
    // divisors 2, 2, 2, 1 give 0.25, 0.2, 0.375, 0.3 and 1 goes;
    // divisors from c (4, 3, 2, 1) would give 0.125, 0.1333..., 0.375,
    // 0.3 and 0 would go; from the one query row (min(1, ...) = 1) the
    // raw totals, and 3 (0.3) would.
    let step = ScenarioStep::prefill(4, vec![vec![0.25; 4]]).with_totals(vec![vec![0.5, 0.4, 0.75, 0.3]], 2);
    let log = run("h2o", &[("budget", 3), ("recent_window", 0), ("normalize", 1)], vec![step]);
    assert_eq!(ok(&log)[0].victims, vec![1]);
    assert_eq!(log.steps[0].cut, vec![(1, 0.4 / 2.0), (0, 0.5 / 2.0), (3, 0.3), (2, 0.75 / 2.0)]);
}

#[test]
fn h2o_totals_are_gathered_at_the_kept_positions() {
    // Budget 2, recent_window 0: step 0 admits 0..2 with null
    // attention and evicts 0 (all 0.0, the lowest position). Step 1
    // admits 3 and 4 with totals over R = 2 queries, 9.0 (position 0,
    // no longer kept), 0.3, 0.25, 0.75, 0.2; kept 1..4.
    let steps = || {
        vec![
            ScenarioStep::single(3, None),
            ScenarioStep::prefill(2, vec![vec![0.25; 5]]).with_totals(vec![vec![9.0, 0.3, 0.25, 0.75, 0.2]], 2),
        ]
    };
    let p = |normalize| [("budget", 2), ("recent_window", 0), ("normalize", normalize)];
    // Raw: 4 (0.2) and 2 (0.25) go.
    let raw = run("h2o", &p(0), steps());
    assert_eq!(ok(&raw)[0].victims, vec![0]);
    assert_eq!(raw.steps[1].victims, vec![2, 4]);
    assert_eq!(raw.steps[1].cut, vec![(4, 0.2), (2, 0.25), (1, 0.3), (3, 0.75)]);
    assert_eq!((raw.steps[1].kept_count, raw.steps[1].query_cache_position), (2, 2));
    // Normalized, divisors min(2, 5 - p) = 2, 2, 2, 1: 0.15, 0.125,
    // 0.375, 0.2: 2 and 1 go.
    let norm = run("h2o", &p(1), steps());
    assert_eq!(ok(&norm)[1].victims, vec![1, 2]);
    assert_eq!(norm.steps[1].cut, vec![(2, 0.25 / 2.0), (1, 0.3 / 2.0), (4, 0.2), (3, 0.75 / 2.0)]);
}

/// Two query heads in two sets (granularity 2), budget 2, recent_window
/// 0: step 0 admits 0, 1 (null); step 1 admits 2 with head 0's row (1,
/// 0) and head 1's (0, 1): set 0 keeps 0, 2 (1 and 2 tie at 0.0, 1
/// goes), set 1 keeps 1, 2. Step 2 admits 3, 4 with one zero query row
/// per head and totals over R = 2: head 0's (0.5, 9.0, 0.25, 0.125,
/// 0.0625), head 1's (9.0, 0.125, 0.0, 0.25, 0.375); each set reads
/// its own head's totals at its own kept positions (the 9.0s at
/// positions it no longer keeps).
fn two_set_totals_steps() -> Vec<ScenarioStep> {
    vec![
        ScenarioStep::per_head(2, vec![]),
        ScenarioStep::per_head(1, vec![vec![1.0, 0.0], vec![0.0, 1.0]]),
        ScenarioStep::prefill(2, vec![vec![0.0; 5], vec![0.0; 5]])
            .with_totals(vec![vec![0.5, 9.0, 0.25, 0.125, 0.0625], vec![9.0, 0.125, 0.0, 0.25, 0.375]], 2),
    ]
}

#[test]
fn h2o_totals_per_head_and_per_set() {
    let heads = HeadCounts { query: 2, kv: 2 };
    let run2 = |extra: &[(&str, i64)]| {
        let mut p = vec![("budget", 2), ("recent_window", 0), ("granularity", 2)];
        p.extend_from_slice(extra);
        run_scenario_with_heads("h2o", &params(&p), 0, heads, &Scenario::Steps(two_set_totals_steps()))
    };
    let raw = run2(&[]);
    let s = ok(&raw);
    assert_eq!(s[1].sets.iter().map(|r| r.victims.clone()).collect::<Vec<_>>(), vec![vec![1], vec![0]]);
    // Set 0 (kept 0, 2, 3, 4): 1.0 + 0.5, 0.25, 0.125, 0.0625. Set 1
    // (kept 1, 2, 3, 4): 1.0 + 0.125, 0.0, 0.25, 0.375.
    assert_eq!(s[2].sets[0].victims, vec![3, 4]);
    assert_eq!(s[2].sets[0].cut, vec![(4, 0.0625), (3, 0.125), (2, 0.25), (0, 1.5)]);
    assert_eq!(s[2].sets[1].victims, vec![2, 3]);
    assert_eq!(s[2].sets[1].cut, vec![(2, 0.0), (3, 0.25), (4, 0.375), (1, 1.125)]);
    // normalize 1, divisors min(2, 5 - p): 2 but for position 4 (1).
    // Set 0: 1.25, 0.125, 0.0625, 0.0625 (3 before 4 by position).
    // Set 1: 1.0625, 0.0, 0.125, 0.375.
    let norm = run2(&[("normalize", 1)]);
    let s = ok(&norm);
    assert_eq!(s[2].sets[0].victims, vec![3, 4]);
    assert_eq!(s[2].sets[0].cut, vec![(3, 0.0625), (4, 0.0625), (2, 0.125), (0, 1.25)]);
    assert_eq!(s[2].sets[1].victims, vec![2, 3]);
    assert_eq!(s[2].sets[1].cut, vec![(2, 0.0), (3, 0.125), (4, 0.375), (1, 1.0625)]);
    // AdaKV (adaptive 1, floor max(1, 2 * 200 / 1000) = 1): step 1 as
    // above (ranked (0.0, 0, set 1), (0.0, 1, set 0), ...). Step 2:
    // T = 8 of L = 4, ranked (0.0, 2, set 1), (0.0625, 4, set 0),
    // (0.125, 3, set 0), (0.25, 2, set 0) before (0.25, 3, set 1) by
    // position: set 0 loses 2, 3, 4 (keeping its floor), set 1 its 2.
    let shared = run2(&[("adaptive", 1)]);
    let s = ok(&shared);
    assert_eq!(s[1].sets.iter().map(|r| r.victims.clone()).collect::<Vec<_>>(), vec![vec![1], vec![0]]);
    assert_eq!(s[2].sets[0].victims, vec![2, 3, 4]);
    assert_eq!(s[2].sets[0].cut, vec![(4, 0.0625), (3, 0.125), (2, 0.25), (0, 1.5)]);
    assert_eq!(s[2].sets[0].kept_count, 1);
    assert_eq!(s[2].sets[1].victims, vec![2]);
    assert_eq!(s[2].sets[1].cut, vec![(2, 0.0), (3, 0.25), (4, 0.375), (1, 1.125)]);
    assert_eq!(s[2].sets[1].kept_count, 3);
}

#[test]
fn h2o_totals_from_the_rows_give_the_rows_log() {
    // spec/prefill.md#column-totals: totals formed from rows (summed
    // from +0.0 in ascending query order, R = m) give bit for bit the
    // log those rows give, normalize 0 or 1, one set or several, and
    // decoding continues from the same sums.
    let mut rng = crate::rng::Rng::new(0x0010_0000);
    for case in 0..40u64 {
        let hq = [1usize, 2, 4][case as usize % 3];
        let prefix = rng.uniform(5) as u32;
        let c = 1 + rng.uniform(8) as u32;
        let m = 1 + rng.uniform(c as u64) as u32;
        let end = (prefix + c) as usize;
        let mut queries = Vec::new();
        for _ in 0..hq {
            for q in end - m as usize..end {
                queries.push((0..=q).map(|_| rng.uniform_float()).collect::<Vec<f32>>());
            }
        }
        let mut totals = vec![vec![0.0f64; end]; hq];
        for (r, row) in queries.iter().enumerate() {
            for (p, &w) in row.iter().enumerate() {
                totals[r / m as usize][p] += w as f64;
            }
        }
        let decode = |n: usize| {
            if hq == 1 {
                ScenarioStep::single(1, Some(vec![0.125; n]))
            } else {
                ScenarioStep::per_head(1, vec![vec![0.125; n]; hq])
            }
        };
        let null = if hq == 1 { ScenarioStep::single(prefix, None) } else { ScenarioStep::per_head(prefix, vec![]) };
        let mut rows_steps = if prefix > 0 { vec![null] } else { vec![] };
        rows_steps.push(ScenarioStep::prefill(c, queries.clone()));
        rows_steps.push(decode(end));
        let mut totals_steps = rows_steps.clone();
        let at = totals_steps.len() - 2;
        totals_steps[at] = ScenarioStep::prefill(c, queries).with_totals(totals, m);
        for normalize in [0, 1] {
            for granularity in [0, 2] {
                let p = params(&[
                    ("budget", 3),
                    ("recent_window", 0),
                    ("granularity", granularity),
                    ("aggregation", 1),
                    ("normalize", normalize),
                ]);
                let heads = HeadCounts { query: hq as u32, kv: 1 };
                let rows = run_scenario_with_heads("h2o", &p, 0, heads, &Scenario::Steps(rows_steps.clone()));
                let with = run_scenario_with_heads("h2o", &p, 0, heads, &Scenario::Steps(totals_steps.clone()));
                ok(&rows);
                let bits = |log: &EvictionLog| {
                    log.steps
                        .iter()
                        .flat_map(|r| std::iter::once(r).chain(&r.sets))
                        .map(|r| (r.victims.clone(), r.cut.iter().map(|&(p, s)| (p, s.to_bits())).collect::<Vec<_>>()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&with), bits(&rows), "case {case} normalize {normalize} granularity {granularity}");
                assert_eq!(with, rows);
            }
        }
    }
}

#[test]
fn other_policies_ignore_totals() {
    // Only h2o reads totals; tova and snapkv decide by the query rows,
    // the positional policies by positions, as without them. A prefix
    // of 1, then a prefill of 3 with query 3's row (0.25, 0.5, 0.125,
    // 0.375) and totals (0.0, 9.0, 9.0, 9.0) over R = 1.
    let row = || ScenarioStep::prefill(3, vec![vec![0.25, 0.5, 0.125, 0.375]]);
    for (policy, p) in [
        ("tova", vec![("budget", 2), ("recent_window", 0)]),
        ("snapkv", vec![("budget", 2), ("recent_window", 0)]),
        ("streamingllm", vec![("budget", 2), ("sinks", 1)]),
        ("full", vec![]),
        ("window", vec![("budget", 2)]),
        ("random", vec![("budget", 2), ("recent_window", 1)]),
    ] {
        let plain = run(policy, &p, vec![ScenarioStep::single(1, None), row()]);
        ok(&plain);
        let with = run(policy, &p, vec![ScenarioStep::single(1, None), row().with_totals(vec![vec![0.0, 9.0, 9.0, 9.0]], 1)]);
        assert_eq!(with, plain, "{policy}");
        // Checked all the same.
        let bad = ScenarioStep::prefill(3, vec![vec![0.25, 0.5, 0.125]]).with_totals(vec![vec![0.0, f64::NAN, 9.0]], 1);
        assert_eq!(rejection(&run(policy, &p, vec![bad])), Some((Category::AttentionValue, 0)), "{policy}");
    }
    // h2o does read them (budget 2): the row alone makes 2 (0.125) and
    // 0 (0.25) go; the totals make 0 (0.0) and, of the tie at 9.0,
    // the lowest position, 1.
    let p = [("budget", 2), ("recent_window", 0)];
    let plain = run("h2o", &p, vec![ScenarioStep::single(1, None), row()]);
    let with = run("h2o", &p, vec![ScenarioStep::single(1, None), row().with_totals(vec![vec![0.0, 9.0, 9.0, 9.0]], 1)]);
    assert_eq!(ok(&plain)[1].victims, vec![0, 2]);
    assert_eq!(ok(&with)[1].victims, vec![0, 1]);
}

#[test]
fn totals_checks_in_order() {
    // spec/prefill.md#their-checks: the totals' shape after the query
    // rows' shape (check 3), their values after the query rows'
    // weights (check 4); spec/harness.md#refusals.
    let p = [("budget", 2), ("recent_window", 0)];
    let al = Some((Category::AttentionLength, 0));
    let av = Some((Category::AttentionValue, 0));
    let check = |hq: u32, steps: Vec<ScenarioStep>| {
        let heads = HeadCounts { query: hq, kv: 1 };
        rejection(&run_scenario_with_heads("h2o", &params(&p), 0, heads, &Scenario::Steps(steps)))
    };
    let one = |step: ScenarioStep| check(1, vec![step]);
    let rows = || ScenarioStep::prefill(2, vec![vec![0.5, 0.5]]);
    // Well formed: R 1 or 2, two values; 0.0 and large values pass.
    assert_eq!(one(rows().with_totals(vec![vec![0.5, 0.5]], 2)), None);
    assert_eq!(one(rows().with_totals(vec![vec![0.0, 1e300]], 1)), None);
    // Totals without query rows: null attention, or beside a row.
    assert_eq!(one(ScenarioStep::single(2, None).with_totals(vec![vec![0.5, 0.5]], 2)), al);
    let beside = ScenarioStep::single(1, Some(vec![0.5])).with_totals(vec![vec![0.5, 0.5]], 1);
    assert_eq!(check(1, vec![ScenarioStep::single(1, None), beside]), Some((Category::AttentionLength, 1)));
    // ... even with a bad weight in that row: shape before values.
    let beside = ScenarioStep::single(1, Some(vec![f32::NAN])).with_totals(vec![vec![0.5, 0.5]], 1);
    assert_eq!(check(1, vec![ScenarioStep::single(1, None), beside]), Some((Category::AttentionLength, 1)));
    // total_rows 0 with totals, above admit, or above 0 without totals.
    assert_eq!(one(rows().with_totals(vec![vec![0.5, 0.5]], 0)), al);
    assert_eq!(one(rows().with_totals(vec![vec![0.5, 0.5]], 3)), al);
    assert_eq!(one(rows().with_totals(vec![], 1)), al);
    // One value short, one too many, two lists for one head.
    assert_eq!(one(rows().with_totals(vec![vec![0.5]], 2)), al);
    assert_eq!(one(rows().with_totals(vec![vec![0.5; 3]], 2)), al);
    assert_eq!(one(rows().with_totals(vec![vec![0.5, 0.5]; 2], 2)), al);
    // Values: NaN, the infinities, -0.0, a negative, the smallest
    // negative subnormal; at any position.
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, -0.5, -f64::from_bits(1)] {
        assert_eq!(one(rows().with_totals(vec![vec![0.5, bad]], 2)), av, "{bad}");
        assert_eq!(one(rows().with_totals(vec![vec![bad, 0.5]], 1)), av, "{bad}");
    }
    // Several heads: Hq lists, each a + c long, head 0 first.
    let two = |totals: Vec<Vec<f64>>| {
        let q = ScenarioStep::prefill(1, vec![vec![0.5, 0.5], vec![0.5, 0.5]]).with_totals(totals, 1);
        check(2, vec![ScenarioStep::per_head(1, vec![]), q])
    };
    let (al1, av1) = (Some((Category::AttentionLength, 1)), Some((Category::AttentionValue, 1)));
    assert_eq!(two(vec![vec![0.5, 0.5], vec![0.0, 0.25]]), None);
    assert_eq!(two(vec![vec![0.5, 0.5]]), al1);
    assert_eq!(two(vec![vec![0.5, 0.5], vec![0.5]]), al1);
    assert_eq!(two(vec![vec![0.5, 0.5], vec![0.5, -1.0]]), av1);
    // Every head's shape before any value: head 0's NaN beside head
    // 1's short list is a length fault.
    assert_eq!(two(vec![vec![f64::NAN, 0.5], vec![0.5]]), al1);
    // Order, check 3 before 4: short totals beside a NaN query weight
    // is a length fault; a short query row beside a NaN total too.
    assert_eq!(one(ScenarioStep::prefill(2, vec![vec![0.5, f32::NAN]]).with_totals(vec![vec![0.5]], 2)), al);
    assert_eq!(one(ScenarioStep::prefill(2, vec![vec![0.5]]).with_totals(vec![vec![0.5, f64::NAN]], 2)), al);
    // Within check 4: the query rows' weights before the totals'.
    assert_eq!(
        one(ScenarioStep::prefill(2, vec![vec![0.5, f32::NAN]]).with_totals(vec![vec![0.5, f64::NAN]], 2)),
        av
    );
    let log = run("h2o", &p, vec![ScenarioStep::prefill(2, vec![vec![0.5, f32::NAN]]).with_totals(vec![vec![0.5, f64::NAN]], 2)]);
    assert!(log.rejection.unwrap().refusal.message.contains("query row"));
    // The positions before everything.
    assert_eq!(one(ScenarioStep::prefill(0, vec![]).with_totals(vec![vec![f64::NAN]], 0)), Some((Category::Position, 0)));
    // Steps in order: a totals fault at step 1 before a fault at 2.
    let short = ScenarioStep::prefill(2, vec![vec![0.5; 3]]).with_totals(vec![vec![0.5; 2]], 2);
    let steps = vec![ScenarioStep::single(1, None), short, ScenarioStep::single(0, None)];
    let log = run("h2o", &p, steps);
    assert_eq!((rejection(&log), log.steps.len()), (Some((Category::AttentionLength, 1)), 1));
}
