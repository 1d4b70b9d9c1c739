//! Unit tests of one head (one kept set): worked examples of
//! spec/harness.md and the policy cards, and the step refusals, through a
//! scenario and called directly (spec/harness.md#refusals,
//! spec/harness.md#subjects).

use super::*;
use crate::error::{Category, Check, Result, Subject};
use crate::registry;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

fn singles(rows: &[&[f32]]) -> Scenario {
    Scenario::Steps(rows.iter().map(|r| ScenarioStep::single(1, Some(r.to_vec()))).collect())
}

fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    log.steps.iter().map(|s| s.victims.clone()).collect()
}

fn chunks(sizes: &[u32]) -> Scenario {
    Scenario::Steps(sizes.iter().map(|&a| ScenarioStep::single(a, None)).collect())
}

fn kept_after(name: &str, p: &[(&str, i64)], scenario: &Scenario) -> Vec<u32> {
    let policy = registry::build(name, &params(p), 0).unwrap();
    let mut e = Engine::new(policy);
    let Scenario::Steps(steps) = scenario else { unreachable!() };
    let mut next = 0u64;
    for s in steps {
        e.step(next, s.admit as u64, None).unwrap();
        next += s.admit as u64;
    }
    e.kept().to_vec()
}

#[test]
fn window_worked_examples() {
    let log = run_scenario("window", &params(&[("budget", 3)]), 0, &chunks(&[1, 1, 1, 1, 1, 1]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![0], vec![1], vec![2]]);
    let log = run_scenario("window", &params(&[("budget", 3)]), 0, &chunks(&[5, 2]));
    assert_eq!(victims(&log), vec![vec![0, 1], vec![2, 3]]);
    let log = run_scenario("window", &params(&[("budget", 2)]), 0, &chunks(&[1, 4]));
    assert_eq!(victims(&log), vec![vec![], vec![0, 1, 2]]);
    assert_eq!(kept_after("window", &[("budget", 2)], &chunks(&[1, 4])), vec![3, 4]);
}

#[test]
fn streamingllm_worked_examples() {
    let p = [("budget", 5), ("sinks", 2)];
    let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[1; 7]));
    assert_eq!(log.steps[6].query_cache_position, 5);
    assert_eq!(log.steps[3].query_cache_position, 3);
    assert_eq!(kept_after("streamingllm", &p, &chunks(&[1; 7])), vec![0, 1, 4, 5, 6]);
    let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[10]));
    assert_eq!(victims(&log), vec![vec![2, 3, 4, 5, 6]]);
    let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[4, 2]));
    assert_eq!(victims(&log), vec![vec![], vec![2]]);
    let log = run_scenario("streamingllm", &params(&p), 0, &chunks(&[5, 4]));
    assert_eq!(victims(&log), vec![vec![], vec![2, 3, 4, 5]]);
    let p2 = [("budget", 6), ("sinks", 4)];
    let log = run_scenario("streamingllm", &params(&p2), 0, &chunks(&[2, 5]));
    assert_eq!(victims(&log), vec![vec![], vec![4]]);
    assert_eq!(kept_after("streamingllm", &p2, &chunks(&[2, 5])), vec![0, 1, 2, 3, 5, 6]);
}

#[test]
fn h2o_and_tova_worked_examples() {
    let sc = singles(&[&[], &[1.0], &[0.25, 0.5], &[0.25, 0.125, 0.5]]);
    let p = params(&[("budget", 3), ("recent_window", 1)]);
    let log = run_scenario("h2o", &p, 0, &sc);
    assert_eq!(log.steps[3].victims, vec![2]);
    assert_eq!(log.steps[3].cut, vec![(2, 0.5), (1, 0.625), (0, 1.5)]);
    let log = run_scenario("tova", &p, 0, &sc);
    assert_eq!(log.steps[3].victims, vec![1]);
    let sc = singles(&[&[], &[1.0], &[0.25, 0.5], &[0.0, 0.125, 0.5]]);
    assert_eq!(run_scenario("tova", &p, 0, &sc).steps[3].victims, vec![0]);
    // h2o tie: last row (0.25, 0.25, 0.75): sums of 1 and 2 are 0.75, 1 goes.
    let sc = singles(&[&[], &[1.0], &[0.25, 0.5], &[0.25, 0.25, 0.75]]);
    assert_eq!(run_scenario("h2o", &p, 0, &sc).steps[3].victims, vec![1]);
}

#[test]
fn snapkv_wrap_around() {
    let sc = Scenario::Steps(vec![
        ScenarioStep::single(1, None),
        ScenarioStep::single(1, Some(vec![0.5])),
        ScenarioStep::single(1, Some(vec![0.25, 0.75])),
        ScenarioStep::single(1, Some(vec![0.125, 0.25, 0.5])),
    ]);
    let p = params(&[("budget", 3), ("recent_window", 1), ("obs_window", 2), ("pool_kernel", 1)]);
    let log = run_scenario("snapkv", &p, 0, &sc);
    assert_eq!(log.steps[3].victims, vec![0]);
    assert_eq!(log.steps[3].cut[0], (0, 0.375));
}

/// A null chunk of `n`, then one step admitting 1 with the given row.
fn one_row(n: u32, row: &[f32]) -> Scenario {
    Scenario::Steps(vec![
        ScenarioStep::single(n, None),
        ScenarioStep::single(1, Some(row.to_vec())),
    ])
}

#[test]
fn snapkv_pooling_examples() {
    let sc = one_row(4, &[0.5, 0.125, 1.0, 0.25]);
    let p1 = params(&[("budget", 4), ("recent_window", 1), ("pool_kernel", 1)]);
    assert_eq!(run_scenario("snapkv", &p1, 0, &sc).steps[1].victims, vec![1]);
    let p3 = params(&[("budget", 4), ("recent_window", 1), ("pool_kernel", 3)]);
    assert_eq!(run_scenario("snapkv", &p3, 0, &sc).steps[1].victims, vec![0]);
    // High end clamps.
    let sc = one_row(3, &[1.0, 0.5, 0.25]);
    let p = params(&[("budget", 3), ("recent_window", 0), ("pool_kernel", 3)]);
    let log = run_scenario("snapkv", &p, 0, &sc);
    assert_eq!(log.steps[1].victims, vec![3]);
    assert_eq!(log.steps[1].cut, vec![(3, 0.25), (2, 0.5), (0, 1.0), (1, 1.0)]);
    // Equal pooled scores evict the lower position.
    let sc = one_row(3, &[0.375, 1.0, 0.5]);
    let p = params(&[("budget", 3), ("recent_window", 1), ("pool_kernel", 3)]);
    assert_eq!(run_scenario("snapkv", &p, 0, &sc).steps[1].victims, vec![0]);
}

#[test]
fn snapkv_sums_in_ring_index_order() {
    // obs_window 3. Position 0 is written at ring indices 0, 1, 2, 0 with
    // 0.5, t, t, 1.0 (t = 2^-53): index order sums (1.0, t, t) to 1.0,
    // time order (t, t, 1.0) would give 1 + 2^-52. Position 1 sums to
    // exactly 1.0, so index order ties 0 and 1 and 0 goes; time order
    // would evict 1.
    let t = f32::from_bits(0x25000000);
    assert_eq!(t as f64, 2f64.powi(-53));
    let sc = Scenario::Steps(vec![
        ScenarioStep::single(1, None),
        ScenarioStep::single(1, Some(vec![0.5])),
        ScenarioStep::single(1, Some(vec![t, 0.0])),
        ScenarioStep::single(1, Some(vec![t, 0.0, 2.0])),
        ScenarioStep::single(1, Some(vec![1.0, 1.0, 2.0, 2.0])),
    ]);
    let p = params(&[("budget", 4), ("recent_window", 1), ("obs_window", 3), ("pool_kernel", 1)]);
    let log = run_scenario("snapkv", &p, 0, &sc);
    assert_eq!(log.steps[4].victims, vec![0]);
    assert_eq!(log.steps[4].cut, vec![(0, 1.0), (1, 1.0), (3, 2.0), (2, 4.0)]);
}

#[test]
fn streamingllm_without_sinks_is_window() {
    let sc = chunks(&[1, 3, 1, 5, 2, 1, 7, 1]);
    let w = run_scenario("window", &params(&[("budget", 4)]), 0, &sc);
    let s = run_scenario("streamingllm", &params(&[("budget", 4), ("sinks", 0)]), 0, &sc);
    assert_eq!(w, s);
}

#[test]
fn random_worked_examples() {
    let p = params(&[("budget", 2), ("recent_window", 0)]);
    let log = run_scenario("random", &p, 42, &chunks(&[1; 5]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0], vec![2], vec![4]]);
    let log = run_scenario("random", &p, 42, &chunks(&[4]));
    assert_eq!(victims(&log), vec![vec![0, 2]]);
}

#[test]
fn step_refusals() {
    let p = params(&[("budget", 3)]);
    let cat = |sc: Scenario| run_scenario("window", &p, 0, &sc).rejection.map(|r| (r.refusal.category, r.step));
    assert_eq!(cat(chunks(&[1, 0])), Some((Category::Position, 1)));
    let bad_len = Scenario::Steps(vec![
        ScenarioStep::single(2, Some(vec![])),
        ScenarioStep::single(1, Some(vec![0.5])),
    ]);
    assert_eq!(cat(bad_len), Some((Category::AttentionLength, 1)));
    for w in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -1.0, -0.0] {
        let sc = Scenario::Steps(vec![
            ScenarioStep::single(2, Some(vec![])),
            ScenarioStep::single(1, Some(vec![0.5, w])),
        ]);
        assert_eq!(cat(sc), Some((Category::AttentionValue, 1)), "{w}");
    }
    let sub = f32::from_bits(1);
    let sc = Scenario::Steps(vec![
        ScenarioStep::single(2, Some(vec![])),
        ScenarioStep::single(1, Some(vec![0.0, sub])),
    ]);
    assert_eq!(cat(sc), None);
    let log = run_scenario("window", &params(&[("budget", 0)]), 0, &chunks(&[1]));
    let r = log.rejection.unwrap();
    assert_eq!((r.refusal.category, r.step), (Category::InvalidParameter, -1));
}

#[test]
fn direct_step_refusals_leave_the_policy_unchanged() {
    let mut e = Engine::new(registry::build("h2o", &params(&[("budget", 3), ("recent_window", 1)]), 0).unwrap());
    e.step(0, 2, None).unwrap();
    assert_eq!(e.step(1, 1, None).unwrap_err().category, Category::Position);
    assert_eq!(e.step(5, 0, None).unwrap_err().category, Category::Position);
    assert_eq!(e.step(5, 1, Some(&[0.5])).unwrap_err().category, Category::AttentionLength);
    assert_eq!(e.step(5, 1, Some(&[0.5, f32::NAN])).unwrap_err().category, Category::AttentionValue);
    // spec/harness.md#subjects: in a direct call a position not above
    // those admitted is `rule admit` too.
    let subject = |r: Result<StepRecord>| r.unwrap_err().subject;
    assert_eq!(subject(e.step(1, 1, None)), Subject::new(Check::Rule, &["admit"]));
    assert_eq!(subject(e.step(5, 0, None)), Subject::new(Check::Range, &["admit"]));
    assert_eq!(subject(e.step(5, 1, Some(&[0.5]))), Subject::new(Check::Length, &["attention"]));
    assert_eq!(subject(e.step(5, 1, Some(&[0.5, f32::NAN]))), Subject::new(Check::Value, &["attention"]));
    assert_eq!(e.kept(), &[0, 1]);
    // gaps are allowed; the chunk's unobserved 5 scores +0.0 and goes
    let r = e.step(5, 2, Some(&[0.5, 0.25])).unwrap();
    assert_eq!(r.victims, vec![5]);
    assert_eq!(r.cut, vec![(5, 0.0), (1, 0.25), (0, 0.5)]);
    assert_eq!(e.kept(), &[0, 1, 6]);
    // position 2^32 - 1 is admitted, 2^32 is not
    assert!(e.step(MAX_POSITION, 1, None).is_ok());
    assert_eq!(e.step(MAX_POSITION + 1, 1, None).unwrap_err().category, Category::Position);
    let mut e = Engine::new(registry::build("window", &params(&[("budget", 3)]), 0).unwrap());
    assert_eq!(e.step(MAX_POSITION - 1, 3, None).unwrap_err().category, Category::Position);
}
