//! spec/policies/knorm.md and spec/tensors.md through whole scenarios:
//! the card's worked examples (the largest norm goes, the recent window,
//! a layer set's `mean` and `max` with its tie, equal norms, the prefill
//! ratio), hand-worked cases of its other rules (a zero key, `sum`, sets
//! per `granularity` over KV heads, attention ignored, keys ignored by the
//! other policies), the card's ranges and rules, and every check of
//! spec/tensors.md#checks with its category, subject and step through the
//! wire (`protocol::handle_request`). Every expected value is worked by
//! hand from the spec.

use super::knorm::key_score;
use crate::harness::{run_scenario_with_keys, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::pb::kvspec::conformance::v1 as conf;
use crate::pb::kvspec::v1 as kv;
use crate::protocol::handle_request;
use crate::registry;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

/// Run `policy` over explicit steps of `heads` with `head_dim`.
fn run_with(policy: &str, p: &[(&str, i64)], heads: HeadCounts, head_dim: Option<u32>, steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario_with_keys(policy, &params(p), 0, heads, head_dim, &Scenario::Steps(steps))
}

/// `knorm` over one head with keys of `d` = 2.
fn run(p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_with("knorm", p, HeadCounts::ONE, Some(2), steps)
}

fn ok(log: &EvictionLog) -> &[StepRecord] {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    &log.steps
}

fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
    ok(log).iter().map(|s| s.victims.clone()).collect()
}

/// A decode step of one position with null attention and one KV head's key.
fn key(k: &[f32]) -> ScenarioStep {
    ScenarioStep::single(1, None).with_keys(vec![k.to_vec()])
}

#[test]
fn key_scores() {
    // spec/policies/knorm.md#how-it-works: +0.0 - norm(k).
    assert_eq!(key_score(&[3.0, 4.0]), -5.0);
    assert_eq!(key_score(&[6.0, 8.0]), -10.0);
    assert_eq!(key_score(&[-1.0, 0.0]), -1.0);
    // A zero key scores +0.0, never -0.0, whatever its zeros' signs.
    assert_eq!(key_score(&[0.0, 0.0]).to_bits(), 0);
    assert_eq!(key_score(&[-0.0, -0.0]).to_bits(), 0);
    // Entries widened exactly: 0.1f32 squared in binary64, not 0.1f64.
    let x = 0.1f32 as f64;
    assert_eq!(key_score(&[0.1]), 0.0 - (x * x).sqrt());
    // The largest binary32 squared stays finite in binary64.
    assert_eq!(key_score(&[f32::MAX, -f32::MAX]), -((f32::MAX as f64) * (f32::MAX as f64) * 2.0).sqrt());
}

#[test]
fn example_largest_norm_goes() {
    // Vector knorm/basic/largest-norm-goes: keys (3, 4), (1, 0), (0, 2)
    // score -5, -1, -2; budget 2, recent_window 0: position 0 goes.
    let log = run(&[("budget", 2), ("recent_window", 0)], vec![key(&[3.0, 4.0]), key(&[1.0, 0.0]), key(&[0.0, 2.0])]);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0]]);
    assert_eq!(ok(&log).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![1, 2, 2]);
    assert_eq!(ok(&log).iter().map(|s| s.query_cache_position).collect::<Vec<_>>(), vec![0, 1, 2]);
    // The cut: the combined scores, negative.
    assert_eq!(log.steps[2].cut, vec![(0, -5.0), (2, -2.0), (1, -1.0)]);
    assert!(log.steps[..2].iter().all(|s| s.cut.is_empty()));
}

#[test]
fn example_recent_window_protects() {
    // Vector knorm/basic/recent-window-protects: (6, 8) third (-10);
    // recent_window 1 protects position 2, and 0 (-5) goes.
    let steps = || vec![key(&[3.0, 4.0]), key(&[1.0, 0.0]), key(&[6.0, 8.0])];
    let log = run(&[("budget", 2), ("recent_window", 1)], steps());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0]]);
    assert_eq!(log.steps[2].cut, vec![(0, -5.0), (1, -1.0)]);
    // Without the window, position 2 goes.
    let log = run(&[("budget", 2)], steps());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![2]]);
}

#[test]
fn defaults() {
    // budget 512 and recent_window 0 at the defaults: nothing goes in
    // two steps, and with budget 1 every position is a candidate.
    let log = run(&[], vec![key(&[3.0, 4.0]), key(&[1.0, 0.0])]);
    assert_eq!(victims(&log), vec![vec![], vec![]]);
    let log = run(&[("budget", 1)], vec![key(&[1.0, 0.0]), key(&[3.0, 4.0])]);
    assert_eq!(victims(&log), vec![vec![], vec![1]]);
}

/// The layer example's one step: positions 0 and 1; KV head 0's keys
/// (3, 4), (0, 1), KV head 1's (0, 1), (6, 8).
fn layer_step() -> ScenarioStep {
    ScenarioStep::per_head(2, vec![]).with_keys(vec![vec![3.0, 4.0, 0.0, 1.0], vec![0.0, 1.0, 6.0, 8.0]])
}

#[test]
fn example_layer_mean_and_max_tie() {
    // Vectors knorm/heads/layer-mean and knorm/heads/layer-max-tie: Hq =
    // Hkv = 2, granularity 0, budget 1. Position 0 scores -5 and -1,
    // position 1 -1 and -10.
    let layer = |aggregation| {
        let p = [("budget", 1), ("granularity", 0), ("aggregation", aggregation)];
        run_with("knorm", &p, HeadCounts { query: 2, kv: 2 }, Some(2), vec![layer_step()])
    };
    // mean: -3 and -5.5, position 1 goes; one set logs in the step's fields.
    let mean = layer(0);
    assert_eq!(victims(&mean), vec![vec![1]]);
    assert_eq!(mean.steps[0].cut, vec![(1, -5.5), (0, -3.0)]);
    assert_eq!((mean.steps[0].kept_count, mean.steps[0].sets.len()), (1, 0));
    // max: -1 and -1, a tie, position 0 goes.
    let max = layer(1);
    assert_eq!(victims(&max), vec![vec![0]]);
    assert_eq!(max.steps[0].cut, vec![(0, -1.0), (1, -1.0)]);
    // sum: -6 and -11, position 1 goes.
    let sum = layer(2);
    assert_eq!(victims(&sum), vec![vec![1]]);
    assert_eq!(sum.steps[0].cut, vec![(1, -11.0), (0, -6.0)]);
    // The KV heads are combined, not the query heads: with Hq = 4 (two
    // query heads per KV head) mean is still (-5 + -1) / 2 and (-1 + -10)
    // / 2.
    let p = [("budget", 1), ("granularity", 0)];
    let four = run_with("knorm", &p, HeadCounts { query: 4, kv: 2 }, Some(2), vec![layer_step()]);
    assert_eq!(four.steps[0].cut, vec![(1, -5.5), (0, -3.0)]);
}

#[test]
fn sets_per_granularity_read_their_kv_heads() {
    // spec/policies/knorm.md#several-kv-heads: a kv_head set ranks its
    // one KV head's score, a query_head set its query head's KV head's.
    // KV head 0 keeps 1 (-1 over -5), KV head 1 keeps 0 (-1 over -10).
    let sets = |granularity, heads| {
        let log = run_with("knorm", &[("budget", 1), ("granularity", granularity)], heads, Some(2), vec![layer_step()]);
        assert!(log.rejection.is_none(), "{:?}", log.rejection);
        let step = &log.steps[0];
        assert!(step.victims.is_empty() && step.cut.is_empty());
        step.sets.iter().map(|s| (s.victims.clone(), s.cut.clone())).collect::<Vec<_>>()
    };
    let kv0 = (vec![0], vec![(0, -5.0), (1, -1.0)]);
    let kv1 = (vec![1], vec![(1, -10.0), (0, -1.0)]);
    assert_eq!(sets(1, HeadCounts { query: 2, kv: 2 }), vec![kv0.clone(), kv1.clone()]);
    assert_eq!(sets(1, HeadCounts { query: 4, kv: 2 }), vec![kv0.clone(), kv1.clone()]);
    assert_eq!(sets(2, HeadCounts { query: 4, kv: 2 }), vec![kv0.clone(), kv0, kv1.clone(), kv1]);
}

#[test]
fn example_equal_norms_evict_lower() {
    // Vector knorm/ties/equal-norms-evict-lower: (0, 1) and (1, 0) both
    // score -1; with (0, 0.5) after them and budget 2, position 0 goes.
    let log = run(&[("budget", 2)], vec![key(&[0.0, 1.0]), key(&[1.0, 0.0]), key(&[0.0, 0.5])]);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0]]);
    assert_eq!(log.steps[2].cut, vec![(0, -1.0), (1, -1.0), (2, -0.5)]);
}

#[test]
fn example_prefill_ratio() {
    // Vector prefill/knorm/ratio: ratio_ppm 500000, prefill_only 1, a
    // prefill of 4 positions with keys (1, 0), (0, 3), (2, 0), (0, 0):
    // scores -1, -3, -2, +0.0; the ratio budget max(1, floor(4 x 0.5)) =
    // 2; positions 1 and 2 go. A decode step after it evicts nothing.
    let prefill = ScenarioStep::prefill(4, vec![vec![0.25; 4]]).with_keys(vec![vec![1.0, 0.0, 0.0, 3.0, 2.0, 0.0, 0.0, 0.0]]);
    let p = [("ratio_ppm", 500_000), ("prefill_only", 1)];
    let log = run(&p, vec![prefill, key(&[5.0, 0.0])]);
    assert_eq!(victims(&log), vec![vec![1, 2], vec![]]);
    assert_eq!(ok(&log).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![2, 3]);
    let cut = &log.steps[0].cut;
    assert_eq!(cut, &vec![(1, -3.0), (2, -2.0), (0, -1.0), (3, 0.0)]);
    // The zero key's score is +0.0 in the cut.
    assert_eq!(cut[3].1.to_bits(), 0);
    assert!(log.steps[1].cut.is_empty());
}

#[test]
fn zero_key_ranks_above_every_nonzero_key() {
    // A zero key scores +0.0, the highest possible: it goes last.
    let log = run(&[("budget", 1)], vec![key(&[0.0, -0.0]), key(&[0.0, 1.0e-30])]);
    assert_eq!(victims(&log), vec![vec![], vec![1]]);
    assert_eq!(log.steps[1].cut[1].0, 0);
    assert_eq!(log.steps[1].cut[1].1.to_bits(), 0);
}

#[test]
fn attention_is_ignored() {
    // spec/tensors.md#policies-that-read-keys: rows and query rows are
    // checked and otherwise ignored; the same keys give the same log.
    let keys = [[3.0f32, 4.0], [1.0, 0.0], [0.0, 2.0]];
    let with_rows = |rows: [Vec<f32>; 3]| {
        let steps = rows.into_iter().zip(keys).map(|(r, k)| ScenarioStep::single(1, Some(r)).with_keys(vec![k.to_vec()])).collect();
        run(&[("budget", 2)], steps)
    };
    let plain = run(&[("budget", 2)], keys.iter().map(|k| key(k)).collect());
    assert_eq!(with_rows([vec![], vec![1.0], vec![0.0, 1.0]]), plain);
    assert_eq!(with_rows([vec![], vec![0.0], vec![1.0, 0.0]]), plain);
}

#[test]
fn other_policies_ignore_keys() {
    // spec/tensors.md#policies-that-read-keys: a scenario with keys runs
    // every other policy exactly as without.
    let rows = [vec![], vec![0.5], vec![0.25, 0.75], vec![0.5, 0.25, 0.25]];
    let keys = [[9.0f32, 9.0], [0.0, 0.0], [-1.0, 2.0], [3.0, -0.0]];
    let steps = |with_keys: bool| {
        rows.iter()
            .zip(keys)
            .map(|(r, k)| {
                let s = ScenarioStep::single(1, Some(r.clone()));
                if with_keys { s.with_keys(vec![k.to_vec()]) } else { s }
            })
            .collect::<Vec<_>>()
    };
    for (policy, p) in [
        ("h2o", vec![("budget", 2), ("recent_window", 0)]),
        ("tova", vec![("budget", 2), ("recent_window", 0)]),
        ("window", vec![("budget", 2)]),
        ("random", vec![("budget", 2), ("recent_window", 0)]),
    ] {
        let with = run_with(policy, &p, HeadCounts::ONE, Some(2), steps(true));
        let without = run_with(policy, &p, HeadCounts::ONE, None, steps(false));
        assert!(with.rejection.is_none(), "{policy}");
        assert_eq!(with, without, "{policy}");
    }
}

/// The subject as spec/harness.md#subjects writes it; `None` when the
/// configuration is accepted.
fn subject(p: &[(&str, i64)]) -> Option<String> {
    registry::build("knorm", &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

#[test]
fn parameters_ranges_and_rules() {
    // spec/policies/knorm.md#parameters, in card order.
    assert_eq!(subject(&[]), None);
    assert_eq!(subject(&[("budget", 0)]).as_deref(), Some("range budget"));
    assert_eq!(subject(&[("budget", 1i64 << 32)]).as_deref(), Some("range budget"));
    assert_eq!(subject(&[("budget", 4294967295), ("recent_window", 4294967294)]), None);
    assert_eq!(subject(&[("recent_window", 4294967295)]).as_deref(), Some("range recent_window"));
    assert_eq!(subject(&[("recent_window", -1)]).as_deref(), Some("range recent_window"));
    assert_eq!(subject(&[("granularity", 3)]).as_deref(), Some("range granularity"));
    assert_eq!(subject(&[("aggregation", 3)]).as_deref(), Some("range aggregation"));
    assert_eq!(subject(&[("prefill_only", 2)]).as_deref(), Some("range prefill_only"));
    assert_eq!(subject(&[("ratio_ppm", 1_000_000)]).as_deref(), Some("range ratio_ppm"));
    assert_eq!(subject(&[("ratio_ppm", 999_999), ("prefill_only", 1), ("granularity", 2), ("aggregation", 2)]), None);
    // Ranges in card order: budget before ratio_ppm.
    assert_eq!(subject(&[("ratio_ppm", -1), ("budget", 0)]).as_deref(), Some("range budget"));
    // The rules, in order, after every range.
    assert_eq!(subject(&[("budget", 2), ("recent_window", 2)]).as_deref(), Some("rule recent_window budget"));
    assert_eq!(subject(&[("budget", 2), ("recent_window", 2), ("aggregation", 5)]).as_deref(), Some("range aggregation"));
    assert_eq!(subject(&[("recent_window", 1), ("ratio_ppm", 5)]).as_deref(), Some("rule ratio_ppm recent_window"));
    assert_eq!(subject(&[("budget", 1), ("recent_window", 1), ("ratio_ppm", 5)]).as_deref(), Some("rule recent_window budget"));
    // What it does not take is unknown.
    for name in ["adaptive", "safeguard_permille", "slack", "interval", "block", "block_score", "sinks", "normalize"] {
        assert_eq!(subject(&[(name, 0)]), Some(format!("unknown {name}")), "{name}");
    }
}

/// One request through the wire's handler; the rejection as `(category,
/// "check names", step)`.
fn refused(policy: &str, p: &[(&str, i64)], scenario: kv::Scenario) -> Option<(kv::ErrorCategory, String, i32)> {
    let policy = kv::PolicyConfig {
        name: policy.into(),
        parameters: p.iter().map(|(n, v)| kv::Parameter { name: n.to_string(), value: *v }).collect(),
        seed: 0,
    };
    let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(scenario), want_cut: true };
    let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
    log.rejection.map(|r| {
        let s = r.subject.expect("every refusal has a subject");
        let subject = std::iter::once(s.check).chain(s.names).collect::<Vec<_>>().join(" ");
        (kv::ErrorCategory::try_from(r.category).unwrap(), subject, r.step)
    })
}

fn wire_step(admit: u32, keys: Vec<Vec<f32>>) -> kv::Step {
    kv::Step { admit, keys: keys.into_iter().map(|values| kv::HeadVectors { values }).collect(), ..Default::default() }
}

fn wire(head_dim: Option<u32>, steps: Vec<kv::Step>) -> kv::Scenario {
    kv::Scenario { id: "s".into(), steps, head_dim, ..Default::default() }
}

#[test]
fn scenario_checks_through_the_wire() {
    use kv::ErrorCategory::{InvalidHeads, InvalidParameter, InvalidTrace};
    let at = |c, s: &str| Some((c, s.to_string(), -1));
    let one = || vec![wire_step(1, vec![vec![1.0]])];
    // head_dim 0 and 1025: range head_dim, whatever the policy.
    assert_eq!(refused("window", &[], wire(Some(0), one())), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("knorm", &[], wire(Some(1025), one())), at(InvalidHeads, "range head_dim"));
    // 1 and 1024 are in range.
    assert_eq!(refused("knorm", &[], wire(Some(1), one())), None);
    assert_eq!(refused("knorm", &[], wire(Some(1024), vec![wire_step(1, vec![vec![-0.5; 1024]])])), None);
    // head_dim beside a trace.
    let traced = |head_dim, tc| kv::Scenario { id: "t".into(), trace: Some(tc), head_dim, ..Default::default() };
    let four = kv::TraceConfig { steps: Some(4), ..Default::default() };
    assert_eq!(refused("window", &[], traced(Some(4), four)), at(InvalidTrace, "rule head_dim trace"));
    // Before the trace's parameters (a missing steps is range trace.steps).
    assert_eq!(refused("window", &[], traced(Some(4), kv::TraceConfig::default())), at(InvalidTrace, "rule head_dim trace"));
    assert_eq!(refused("window", &[], traced(Some(0), four)), at(InvalidHeads, "range head_dim"));
    // knorm without head_dim: steps, a trace, or nothing at all.
    assert_eq!(refused("knorm", &[], wire(None, vec![wire_step(1, vec![])])), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("knorm", &[], traced(None, four)), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("knorm", &[], traced(None, kv::TraceConfig::default())), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("knorm", &[], wire(None, vec![])), at(InvalidHeads, "range head_dim"));
    // The checks before them: the configuration, steps beside a trace, the
    // head counts.
    assert_eq!(refused("knorm", &[("budget", 0)], wire(None, one())), at(InvalidParameter, "range budget"));
    let mut both = traced(Some(0), four);
    both.steps = one();
    assert_eq!(refused("knorm", &[], both), at(InvalidTrace, "rule steps trace"));
    let mut heads = wire(Some(0), one());
    heads.query_heads = Some(0);
    assert_eq!(refused("knorm", &[], heads), at(InvalidHeads, "range query_heads"));
    let mut heads = wire(None, one());
    heads.kv_heads = Some(2);
    heads.query_heads = Some(3);
    assert_eq!(refused("knorm", &[], heads), at(InvalidHeads, "rule kv_heads query_heads"));
}

#[test]
fn step_checks_through_the_wire() {
    use kv::ErrorCategory::{AttentionLength, AttentionValue};
    let at = |c, s: &str, step| Some((c, s.to_string(), step));
    let first = || wire_step(2, vec![vec![0.0; 4], vec![0.0; 4]]);
    // Two KV heads, head_dim 2; step 1 admits 1 position: 2 entries of 2.
    let run = |policy: &str, second: kv::Step| {
        let mut s = wire(Some(2), vec![first(), second]);
        s.query_heads = Some(2);
        s.kv_heads = Some(2);
        let p: &[(&str, i64)] = if policy == "h2o" { &[("budget", 2), ("recent_window", 0)] } else { &[("budget", 2)] };
        refused(policy, p, s)
    };
    for policy in ["knorm", "window", "h2o"] {
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, -2.0], vec![-0.0, 0.0]])), None, "{policy}");
        // The number of entries, then each entry's length, KV head 0 first.
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, 2.0]])), at(AttentionLength, "length keys", 1), "{policy}");
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, 2.0]; 3])), at(AttentionLength, "length keys", 1), "{policy}");
        assert_eq!(run(policy, wire_step(1, vec![])), at(AttentionLength, "length keys", 1), "{policy}");
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, 2.0], vec![1.0]])), at(AttentionLength, "length keys", 1), "{policy}");
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, 2.0, 3.0], vec![1.0, 2.0]])), at(AttentionLength, "length keys", 1), "{policy}");
        // A NaN or an infinite entry.
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, 2.0], vec![f32::NAN, 0.0]])), at(AttentionValue, "value keys", 1), "{policy}");
        assert_eq!(run(policy, wire_step(1, vec![vec![f32::INFINITY, 2.0], vec![0.0, 0.0]])), at(AttentionValue, "value keys", 1), "{policy}");
        assert_eq!(run(policy, wire_step(1, vec![vec![1.0, f32::NEG_INFINITY], vec![0.0, 0.0]])), at(AttentionValue, "value keys", 1), "{policy}");
        // Shape before values: a short entry after a NaN is length keys.
        assert_eq!(run(policy, wire_step(1, vec![vec![f32::NAN, 2.0], vec![1.0]])), at(AttentionLength, "length keys", 1), "{policy}");
    }
    // Keys on a scenario without head_dim: length keys at that step.
    let no_dim = wire(None, vec![wire_step(1, vec![]), wire_step(1, vec![vec![1.0]])]);
    assert_eq!(refused("window", &[], no_dim), at(AttentionLength, "length keys", 1));
    let empty_entry = wire(None, vec![wire_step(1, vec![vec![]])]);
    assert_eq!(refused("window", &[], empty_entry), at(AttentionLength, "length keys", 0));
}

#[test]
fn key_checks_come_last_in_each_check() {
    use kv::ErrorCategory::{AttentionLength, AttentionValue};
    let at = |c, s: &str| Some((c, s.to_string(), 1));
    // One head, head_dim 1; step 1 admits 2 (positions 2, 3) with one query
    // row (4 weights) and totals over R = 1.
    let step = |query: Vec<f32>, sums: Vec<f64>, keys: Vec<f32>| kv::Step {
        admit: 2,
        queries: vec![kv::AttentionRow { weights: query }],
        totals: vec![kv::ColumnTotals { sums }],
        total_rows: 1,
        keys: vec![kv::HeadVectors { values: keys }],
        ..Default::default()
    };
    let run = |second: kv::Step| refused("knorm", &[("budget", 8)], wire(Some(1), vec![wire_step(2, vec![vec![1.0, 2.0]]), second]));
    let q = || vec![0.25f32; 4];
    let t = || vec![0.5f64; 4];
    assert_eq!(run(step(q(), t(), vec![1.0, 2.0])), None);
    // Check 3: the totals' shape before the keys'.
    assert_eq!(run(step(q(), vec![0.5; 3], vec![1.0])), at(AttentionLength, "length totals"));
    assert_eq!(run(step(q(), t(), vec![1.0])), at(AttentionLength, "length keys"));
    // The keys' shape (check 3) before every value (check 4).
    assert_eq!(run(step(vec![0.25, f32::NAN, 0.25, 0.25], vec![f64::NAN; 4], vec![1.0])), at(AttentionLength, "length keys"));
    // Check 4: the query rows' weights, the totals, then the keys.
    assert_eq!(run(step(vec![0.25, f32::NAN, 0.25, 0.25], t(), vec![f32::NAN, 1.0])), at(AttentionValue, "value queries"));
    assert_eq!(run(step(q(), vec![0.5, -0.0, 0.5, 0.5], vec![f32::NAN, 1.0])), at(AttentionValue, "value totals"));
    assert_eq!(run(step(q(), t(), vec![f32::NAN, 1.0])), at(AttentionValue, "value keys"));
}

#[test]
fn example_through_the_wire() {
    // The first worked example as a request: the keys travel in field 7
    // and the cut's scores are negative.
    let s = wire(Some(2), vec![wire_step(1, vec![vec![3.0, 4.0]]), wire_step(1, vec![vec![1.0, 0.0]]), wire_step(1, vec![vec![0.0, 2.0]])]);
    let policy = kv::PolicyConfig {
        name: "knorm".into(),
        parameters: vec![kv::Parameter { name: "budget".into(), value: 2 }],
        seed: 0,
    };
    let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(s), want_cut: true };
    let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
    assert!(log.rejection.is_none());
    assert_eq!(log.steps[2].victims, vec![0]);
    let cut: Vec<(u32, f64)> = log.steps[2].cut.iter().map(|r| (r.position, r.score)).collect();
    assert_eq!(cut, vec![(0, -5.0), (2, -2.0), (1, -1.0)]);
}
