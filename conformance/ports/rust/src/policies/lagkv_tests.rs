//! spec/policies/lagkv.md through whole scenarios: the card's six worked
//! examples (the flat key goes, equal judgements rank the older lower, a
//! channel the reference holds constant, the short cache, ranks per
//! partition and cross scoring), hand-worked cases of its other rules
//! (several KV heads under each aggregation and granularity, partitions
//! that move with the cache, the prefill ratio, sinks above the budget,
//! attention ignored), the card's ranges, and the checks of
//! spec/tensors.md#checks for values (each refusal subject, in order)
//! through the wire. Every expected value is worked by hand from the spec
//! (decimals as the card prints them, checked to its digits).

use super::lagkv::{ranks, scores_of, softmax, spreads};
use crate::harness::{run_scenario_with_tensors, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::pb::kvspec::conformance::v1 as conf;
use crate::pb::kvspec::v1 as kv;
use crate::protocol::handle_request;
use crate::registry;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

/// Run `lagkv` over explicit steps of `heads` with `d = e = 2`.
fn run_with(p: &[(&str, i64)], heads: HeadCounts, steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario_with_tensors("lagkv", &params(p), 0, heads, Some(2), Some(2), &Scenario::Steps(steps))
}

fn run(p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_with(p, HeadCounts::ONE, steps)
}

fn ok(log: &EvictionLog) -> &[StepRecord] {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    &log.steps
}

fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
    ok(log).iter().map(|s| s.victims.clone()).collect()
}

fn flat(v: &[[f32; 2]]) -> Vec<f32> {
    v.iter().flatten().copied().collect()
}

/// One decode step (null attention) admitting `keys.len()` positions of
/// one KV head with these keys and values.
fn step(keys: &[[f32; 2]], values: &[[f32; 2]]) -> ScenarioStep {
    assert_eq!(keys.len(), values.len());
    ScenarioStep::single(keys.len() as u32, None).with_keys(vec![flat(keys)]).with_values(vec![flat(values)])
}

/// A cut's positions, and its scores to the card's four decimals.
fn cut_of(s: &StepRecord) -> (Vec<u32>, Vec<f64>) {
    (s.cut.iter().map(|c| c.0).collect(), s.cut.iter().map(|c| (c.1 * 10000.0).trunc() / 10000.0).collect())
}

/// The worked examples' keys: (9, 9), (0, 1), (0.5, 0.5), (0, 0), (1, 1).
const KEYS: [[f32; 2]; 5] = [[9.0, 9.0], [0.0, 1.0], [0.5, 0.5], [0.0, 0.0], [1.0, 1.0]];
/// The first example's values.
const FLAT_VALUES: [[f32; 2]; 5] = [[9.0, 9.0], [0.5, 0.5], [0.5, 0.5], [0.0, 0.0], [1.0, 1.0]];
/// The second example's values.
const EQUAL_VALUES: [[f32; 2]; 5] = [[9.0, 9.0], [1.0, 1.0], [0.0, 2.0], [0.0, 0.0], [2.0, 2.0]];
/// The third example's values.
const CONSTANT_VALUES: [[f32; 2]; 5] = [[9.0, 9.0], [7.0, 2.0], [-3.0, 0.0], [1.0, 0.0], [1.0, 2.0]];

/// The worked examples' configuration: sinks 1, lag 2, budget 4.
const EXAMPLE: [(&str, i64); 3] = [("budget", 4), ("sinks", 1), ("lag", 2)];

fn owned(v: &[[f32; 2]]) -> Vec<Vec<f32>> {
    v.iter().map(|x| x.to_vec()).collect()
}

#[test]
fn spreads_softmax_and_ranks() {
    // Step 3: the reference (0, 0), (1, 1) gives lo (0, 0), hi (1, 1); the
    // scaled keys (0, 1) and (0.5, 0.5) spread sqrt(1/2) and 0.
    let s = spreads(&owned(&KEYS[1..3]), &owned(&KEYS[3..5]));
    assert_eq!(s, vec![0.5f64.sqrt(), 0.0]);
    assert_eq!(s[1].to_bits(), 0);
    // Step 4: softmax 0.6697.. and 0.3302..
    let w = softmax(&s);
    assert_eq!(((w[0] * 1e4).trunc(), (w[1] * 1e4).trunc()), (6697.0, 3302.0));
    assert_eq!(w[0], 1.0 / (1.0 + crate::elementary::exp(-(0.5f64.sqrt()))));
    // Equal spreads: 1/n each, exactly.
    assert_eq!(softmax(&[0.0, 0.0, 0.0]), vec![1.0 / 3.0; 3]);
    // A channel the reference holds constant scales to +0.0: channel 0
    // is 1 in both reference values (1, 0) and (1, 2); channel 1 scales
    // (2 - 0) / 2 = 1 and (0 - 0) / 2 = 0.
    let s = spreads(&owned(&CONSTANT_VALUES[1..3]), &owned(&CONSTANT_VALUES[3..5]));
    assert_eq!(s, vec![0.5f64.sqrt(), 0.0]);
    // Ranks: sorted by (a, slot); equal a rank the older slot lower.
    assert_eq!(ranks(&[0.5, 0.25, 0.5, 0.125]), vec![2, 1, 3, 0]);
    assert_eq!(ranks(&[0.5, 0.5]), vec![0, 1]);
}

#[test]
fn example_flat_key_goes() {
    // Vector lagkv/basic/flat-key-goes: m = 5 = sinks + 2 lag, P = 2.
    // a = 0.5848.. (position 1) and 0.4151.. (position 2): position 2
    // ranks 0 (score 0), position 1 ranks 1 (score 0.5); 2 goes. The
    // sink and partition 1 score 1.0.
    let log = run(&EXAMPLE, vec![step(&KEYS, &FLAT_VALUES)]);
    assert_eq!(victims(&log), vec![vec![2]]);
    assert_eq!(log.steps[0].kept_count, 4);
    assert_eq!(log.steps[0].cut, vec![(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]);
    // With cross_scoring 1 the judgements themselves are the scores.
    let log = run(&[EXAMPLE[0], EXAMPLE[1], EXAMPLE[2], ("cross_scoring", 1)], vec![step(&KEYS, &FLAT_VALUES)]);
    assert_eq!(victims(&log), vec![vec![2]]);
    assert_eq!(cut_of(&log.steps[0]), (vec![2, 1, 0, 3, 4], vec![0.4151, 0.5848, 1.0, 1.0, 1.0]));
}

#[test]
fn example_equal_judgement_older_ranks_lower() {
    // Vector lagkv/basic/equal-judgement-older-ranks-lower: the values
    // scale to (0.5, 0.5) and (0, 1), softmax 0.3302.. and 0.6697.., the
    // keys' the other way round: a = 0.5 for both, bit for bit; position
    // 1, the older, ranks 0 and goes.
    let scores = scores_of(&owned(&KEYS), &owned(&EQUAL_VALUES), 1, 2, true);
    assert_eq!(scores[1].to_bits(), scores[2].to_bits());
    assert_eq!(scores[1], 0.5);
    let log = run(&EXAMPLE, vec![step(&KEYS, &EQUAL_VALUES)]);
    assert_eq!(victims(&log), vec![vec![1]]);
    assert_eq!(log.steps[0].cut, vec![(1, 0.0), (2, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]);
}

#[test]
fn example_constant_channel() {
    // Vector lagkv/basic/constant-channel: the values spread 0.7071.. and
    // 0, softmax as the keys': position 2 goes.
    let log = run(&EXAMPLE, vec![step(&KEYS, &CONSTANT_VALUES)]);
    assert_eq!(victims(&log), vec![vec![2]]);
    assert_eq!(log.steps[0].cut, vec![(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]);
    // Its judgements are the keys' weights: 0.6697.. and 0.3302...
    let log = run(&[EXAMPLE[0], EXAMPLE[1], EXAMPLE[2], ("cross_scoring", 1)], vec![step(&KEYS, &CONSTANT_VALUES)]);
    assert_eq!(cut_of(&log.steps[0]), (vec![2, 1, 0, 3, 4], vec![0.3302, 0.6697, 1.0, 1.0, 1.0]));
}

#[test]
fn example_short_cache() {
    // Vector lagkv/basic/short-cache: sinks 1, lag 2, budget 3, four
    // positions: m = 4 < 5, scores 1, 0, 1/3, 2/3; position 1 goes
    // whatever the tensors.
    for values in [&FLAT_VALUES, &EQUAL_VALUES] {
        let log = run(&[("budget", 3), ("sinks", 1), ("lag", 2)], vec![step(&KEYS[..4], &values[..4])]);
        assert_eq!(victims(&log), vec![vec![1]]);
        assert_eq!(log.steps[0].cut, vec![(1, 0.0), (2, 1.0 / 3.0), (3, 2.0 / 3.0), (0, 1.0)]);
    }
    // Without sinks: i / m; and sinks past the cache score 1.0 alike.
    assert_eq!(scores_of(&owned(&KEYS[..3]), &owned(&KEYS[..3]), 0, 2, false), vec![0.0, 1.0 / 3.0, 2.0 / 3.0]);
    assert_eq!(scores_of(&owned(&KEYS[..3]), &owned(&KEYS[..3]), 5, 1, false), vec![1.0; 3]);
}

/// The ranks-per-partition example's one step: nine positions, every
/// value (0, 0).
fn nine() -> ScenarioStep {
    let keys = [
        [0.0, 0.0], [0.0, 0.0], [0.0, 4.0],
        [0.0, 0.0], [1.0, 1.0], [0.5, 0.5],
        [0.0, 0.0], [1.0, 1.0], [0.0, 0.0],
    ];
    step(&keys, &[[0.0, 0.0]; 9])
}

#[test]
fn example_ranks_per_partition() {
    // Vector lagkv/basic/ranks-per-partition: sinks 0, lag 3, budget 7.
    // Partition 0's a = 0.1930.., 0.1930.., 0.6138.., partition 1's 1/3
    // each: ranks 0, 1, 2 in each, scores 0, 1/3, 2/3; positions 0 and 3
    // (both 0) go.
    let log = run(&[("budget", 7), ("sinks", 0), ("lag", 3)], vec![nine()]);
    assert_eq!(victims(&log), vec![vec![0, 3]]);
    let third = 1.0 / 3.0;
    assert_eq!(log.steps[0].cut, vec![(0, 0.0), (3, 0.0), (1, third), (4, third), (2, 2.0 * third), (5, 2.0 * third)]);
}

#[test]
fn example_cross_scoring() {
    // Vector lagkv/basic/cross-scoring: the same with cross_scoring 1:
    // the scores are the a's, and positions 0 and 1 go.
    let log = run(&[("budget", 7), ("sinks", 0), ("lag", 3), ("cross_scoring", 1)], vec![nine()]);
    assert_eq!(victims(&log), vec![vec![0, 1]]);
    assert_eq!(cut_of(&log.steps[0]), (vec![0, 1, 3, 4, 5, 2], vec![0.1930, 0.1930, 0.3333, 0.3333, 0.3333, 0.6138]));
    // Every value channel is constant: the values' weights are 1/3, and
    // partition 1's a is (1/3 + 1/3) / 2 = 1/3 exactly.
    assert_eq!(log.steps[0].cut[2].1, 1.0 / 3.0);
    // Partition 0's keys spread 0, 0 and sqrt(8) = 2.8284...
    let k = [vec![0.0f32, 0.0], vec![0.0, 0.0], vec![0.0, 4.0]];
    let r = [vec![0.0f32, 0.0], vec![1.0, 1.0], vec![0.5, 0.5]];
    assert_eq!(spreads(&k, &r), vec![0.0, 0.0, 8f64.sqrt()]);
}

/// Two KV heads in one step: KV head 0 as the first example, KV head 1
/// as the second (both positions 0 to 4).
fn heads_step() -> ScenarioStep {
    ScenarioStep::per_head(5, vec![])
        .with_keys(vec![flat(&KEYS), flat(&KEYS)])
        .with_values(vec![flat(&FLAT_VALUES), flat(&EQUAL_VALUES)])
}

#[test]
fn several_kv_heads() {
    // KV head 0 judges 0.5848.. and 0.4151.. (positions 1, 2), KV head 1
    // 0.5 and 0.5. With cross_scoring 1, a layer set combines them: mean
    // 0.5424.., 0.4575..; max 0.5848.., 0.5; sum twice the mean. 2 goes
    // under each.
    let two = HeadCounts { query: 2, kv: 2 };
    let layer = |aggregation, heads| {
        let p = [("budget", 4), ("sinks", 1), ("lag", 2), ("cross_scoring", 1), ("granularity", 0), ("aggregation", aggregation)];
        run_with(&p, heads, vec![heads_step()])
    };
    let mean = layer(0, two);
    assert_eq!(victims(&mean), vec![vec![2]]);
    assert_eq!(cut_of(&mean.steps[0]), (vec![2, 1, 0, 3, 4], vec![0.4575, 0.5424, 1.0, 1.0, 1.0]));
    assert_eq!((mean.steps[0].kept_count, mean.steps[0].sets.len()), (4, 0));
    let max = layer(1, two);
    assert_eq!(victims(&max), vec![vec![2]]);
    assert_eq!(cut_of(&max.steps[0]), (vec![2, 1, 0, 3, 4], vec![0.5, 0.5848, 1.0, 1.0, 1.0]));
    let sum = layer(2, two);
    let doubled: Vec<(u32, f64)> = mean.steps[0].cut.iter().map(|&(p, s)| (p, s * 2.0)).collect();
    assert_eq!(sum.steps[0].cut, doubled);
    // The KV heads are combined, not the query heads: Hq = 4 gives mean's.
    assert_eq!(layer(0, HeadCounts { query: 4, kv: 2 }).steps[0].cut, mean.steps[0].cut);
    // Ranks (cross_scoring 0): KV head 0 scores 0.5, 0 and KV head 1 0,
    // 0.5 (positions 1, 2): every aggregation ties them, and 1 goes.
    for aggregation in 0..3 {
        let p = [("budget", 4), ("sinks", 1), ("lag", 2), ("granularity", 0), ("aggregation", aggregation)];
        assert_eq!(victims(&run_with(&p, two, vec![heads_step()])), vec![vec![1]]);
    }
    // One set per KV head (granularity 1), or per query head (2): each
    // ranks its own KV head's, so set 0 evicts 2 and set 1 evicts 1.
    let sets = |granularity, heads| {
        let log = run_with(&[("budget", 4), ("sinks", 1), ("lag", 2), ("granularity", granularity)], heads, vec![heads_step()]);
        let step = &ok(&log)[0];
        assert!(step.victims.is_empty() && step.cut.is_empty());
        step.sets.iter().map(|s| s.victims.clone()).collect::<Vec<_>>()
    };
    assert_eq!(sets(1, two), vec![vec![2], vec![1]]);
    assert_eq!(sets(2, HeadCounts { query: 4, kv: 2 }), vec![vec![2], vec![2], vec![1], vec![1]]);
}

#[test]
fn partitions_move_with_the_cache() {
    // sinks 0, lag 1, budget 2, one position a step. From step 2 on, m =
    // 3: partitions 0 and 1 are judged (one slot each, weight 1, rank 0,
    // score 0) and partition 2 scores 1.0; the older of the two goes. The
    // partitions are counted from the oldest kept slot, so after each
    // eviction slot 0 is a newer position.
    let one = |x: f32| step(&[[x, 1.0]], &[[1.0, x]]);
    let log = run(&[("budget", 2), ("sinks", 0), ("lag", 1)], (0..5).map(|i| one(i as f32)).collect());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0], vec![1], vec![2]]);
    assert_eq!(log.steps[4].cut, vec![(2, 0.0), (3, 0.0), (4, 1.0)]);
    // Steps that evict nothing have no cut.
    assert!(log.steps[..2].iter().all(|s| s.cut.is_empty()));
    // The evicted slots' tensors are forgotten: sinks 1, lag 2, budget 4,
    // the first example then a sixth position (0, 0), (0, 0). Kept 0, 1,
    // 3, 4, 5: partition 0 is positions 1 and 3 (keys (0, 1), (0, 0);
    // values (0.5, 0.5), (0, 0)) judged against 4 and 5 (keys (1, 1), (0,
    // 0): lo (0, 0), hi (1, 1)): key spreads sqrt(1/2) and 0, values 0 and
    // 0, so 1 ranks 1 and 3 ranks 0 and goes.
    let log = run(&EXAMPLE, vec![step(&KEYS, &FLAT_VALUES), step(&[[0.0, 0.0]], &[[0.0, 0.0]])]);
    assert_eq!(victims(&log), vec![vec![2], vec![3]]);
    assert_eq!(log.steps[1].cut, vec![(3, 0.0), (1, 0.5), (0, 1.0), (4, 1.0), (5, 1.0)]);
}

#[test]
fn sinks_above_the_budget_go_oldest_first() {
    // spec/policies/lagkv.md#parameters: no rule relates sinks and budget;
    // the sinks then go oldest first, by the tie rule. sinks 4, budget 2,
    // three positions: a short cache of sinks only, all 1.0.
    let log = run(&[("budget", 2), ("sinks", 4), ("lag", 1)], vec![step(&KEYS[..3], &KEYS[..3])]);
    assert_eq!(victims(&log), vec![vec![0]]);
    assert_eq!(log.steps[0].cut, vec![(0, 1.0), (1, 1.0), (2, 1.0)]);
}

#[test]
fn defaults() {
    // budget 512, sinks 4, lag 128: nothing goes in one step of five.
    let log = run(&[], vec![step(&KEYS, &FLAT_VALUES)]);
    assert_eq!(victims(&log), vec![vec![]]);
    // With budget 1: a short cache (5 < 4 + 256); the four sinks score
    // 1.0, position 4 scores 0 and goes first, then the sinks oldest first.
    let log = run(&[("budget", 1)], vec![step(&KEYS, &FLAT_VALUES)]);
    assert_eq!(victims(&log), vec![vec![0, 1, 2, 4]]);
    assert_eq!(log.steps[0].cut, vec![(4, 0.0), (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0)]);
}

#[test]
fn prefill_ratio() {
    // sinks 1, lag 2, ratio_ppm 200000, prefill_only 1: a prefill of the
    // first example
    // (its query rows make it one): the ratio budget floor(5 x 0.8) = 4,
    // and 2 goes; a decode step after it evicts nothing.
    let prefill = ScenarioStep::prefill(5, vec![vec![0.2; 5]]).with_keys(vec![flat(&KEYS)]).with_values(vec![flat(&FLAT_VALUES)]);
    let p = [("sinks", 1), ("lag", 2), ("ratio_ppm", 200_000), ("prefill_only", 1)];
    let log = run(&p, vec![prefill, step(&[[1.0, 1.0]], &[[1.0, 1.0]])]);
    assert_eq!(victims(&log), vec![vec![2], vec![]]);
    assert_eq!(ok(&log).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![4, 5]);
    assert!(log.steps[1].cut.is_empty());
}

#[test]
fn attention_is_ignored() {
    // spec/tensors.md#policies-that-read-keys: rows are checked and
    // otherwise ignored; the same tensors give the same log.
    let steps = |rows: [Option<Vec<f32>>; 2]| {
        let [a, b] = rows;
        let mut first = step(&KEYS, &FLAT_VALUES);
        first.row = a;
        let mut second = step(&[[0.0, 0.0]], &[[0.0, 0.0]]);
        second.row = b;
        run(&EXAMPLE, vec![first, second])
    };
    let plain = steps([None, None]);
    // The second step's row has one weight per position admitted before
    // it, evicted position 2's included.
    assert_eq!(steps([Some(vec![]), Some(vec![1.0, 0.0, 0.0, 0.0, 0.0])]), plain);
    assert_eq!(steps([Some(vec![]), Some(vec![0.0, 0.0, 1.0, 0.0, 1.0])]), plain);
}

/// The subject as spec/harness.md#subjects writes it; `None` when the
/// configuration is accepted.
fn subject(p: &[(&str, i64)]) -> Option<String> {
    registry::build("lagkv", &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

#[test]
fn parameters_ranges() {
    // spec/policies/lagkv.md#parameters, in card order.
    assert_eq!(subject(&[]), None);
    assert_eq!(subject(&[("budget", 0)]).as_deref(), Some("range budget"));
    assert_eq!(subject(&[("budget", 1i64 << 32)]).as_deref(), Some("range budget"));
    assert_eq!(subject(&[("sinks", 4294967295)]).as_deref(), Some("range sinks"));
    assert_eq!(subject(&[("sinks", -1)]).as_deref(), Some("range sinks"));
    assert_eq!(subject(&[("lag", 0)]).as_deref(), Some("range lag"));
    assert_eq!(subject(&[("lag", (1 << 20) + 1)]).as_deref(), Some("range lag"));
    assert_eq!(subject(&[("cross_scoring", 2)]).as_deref(), Some("range cross_scoring"));
    assert_eq!(subject(&[("granularity", 3)]).as_deref(), Some("range granularity"));
    assert_eq!(subject(&[("aggregation", 3)]).as_deref(), Some("range aggregation"));
    assert_eq!(subject(&[("prefill_only", 2)]).as_deref(), Some("range prefill_only"));
    assert_eq!(subject(&[("ratio_ppm", 1_000_000)]).as_deref(), Some("range ratio_ppm"));
    let top = [
        ("budget", 4294967295),
        ("sinks", 4294967294),
        ("lag", 1 << 20),
        ("cross_scoring", 1),
        ("granularity", 2),
        ("aggregation", 2),
        ("prefill_only", 1),
        ("ratio_ppm", 999_999),
    ];
    assert_eq!(subject(&top), None);
    // In card order: lag before cross_scoring, sinks before lag.
    assert_eq!(subject(&[("cross_scoring", 5), ("lag", 0)]).as_deref(), Some("range lag"));
    assert_eq!(subject(&[("lag", 0), ("sinks", -1)]).as_deref(), Some("range sinks"));
    // No rule relates them: sinks above budget, a ratio with sinks.
    assert_eq!(subject(&[("budget", 1), ("sinks", 8), ("ratio_ppm", 5)]), None);
    // What it does not take is unknown.
    for name in ["recent_window", "adaptive", "safeguard_permille", "slack", "interval", "block", "block_score", "normalize"] {
        assert_eq!(subject(&[(name, 0)]), Some(format!("unknown {name}")), "{name}");
    }
}

/// A request's rejection through the wire: category, subject, step.
fn refused(policy: &str, scenario: kv::Scenario) -> Option<(kv::ErrorCategory, String, i32)> {
    let policy = kv::PolicyConfig { name: policy.into(), parameters: vec![kv::Parameter { name: "budget".into(), value: 4 }], seed: 0 };
    let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(scenario), want_cut: true };
    let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
    log.rejection.map(|r| {
        let s = r.subject.expect("every refusal has a subject");
        let subject = std::iter::once(s.check).chain(s.names).collect::<Vec<_>>().join(" ");
        (kv::ErrorCategory::try_from(r.category).unwrap(), subject, r.step)
    })
}

fn vectors(entries: Vec<Vec<f32>>) -> Vec<kv::HeadVectors> {
    entries.into_iter().map(|values| kv::HeadVectors { values }).collect()
}

fn wire_step(admit: u32, keys: Vec<Vec<f32>>, values: Vec<Vec<f32>>) -> kv::Step {
    kv::Step { admit, keys: vectors(keys), values: vectors(values), ..Default::default() }
}

fn wire(head_dim: Option<u32>, value_dim: Option<u32>, steps: Vec<kv::Step>) -> kv::Scenario {
    kv::Scenario { id: "s".into(), steps, head_dim, value_dim, ..Default::default() }
}

#[test]
fn scenario_checks_through_the_wire() {
    // spec/tensors.md#checks, 1.1 to 1.6, and spec/policies/lagkv.md#parameters.
    use kv::ErrorCategory::{InvalidHeads, InvalidParameter, InvalidTrace};
    let at = |c, s: &str| Some((c, s.to_string(), -1));
    let two = || vec![wire_step(1, vec![vec![1.0, 2.0]], vec![vec![3.0, 4.0]])];
    // value_dim 0 and 1025: range value_dim, whatever the policy; after
    // head_dim's range.
    assert_eq!(refused("window", wire(None, Some(0), vec![])), at(InvalidHeads, "range value_dim"));
    assert_eq!(refused("lagkv", wire(Some(2), Some(1025), two())), at(InvalidHeads, "range value_dim"));
    assert_eq!(refused("window", wire(Some(0), Some(0), vec![])), at(InvalidHeads, "range head_dim"));
    // The configuration first.
    let bad = kv::PolicyConfig { name: "lagkv".into(), parameters: vec![kv::Parameter { name: "lag".into(), value: 0 }], seed: 0 };
    let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(bad), scenario: Some(wire(None, Some(0), vec![])), want_cut: false };
    let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
    let r = log.rejection.unwrap();
    assert_eq!((kv::ErrorCategory::try_from(r.category).unwrap(), r.step), (InvalidParameter, -1));
    // value_dim beside a trace, after both ranges, after head_dim's trace
    // rule, before the trace's parameters.
    let traced = |head_dim, value_dim, tc| kv::Scenario { id: "t".into(), trace: Some(tc), head_dim, value_dim, ..Default::default() };
    let four = kv::TraceConfig { steps: Some(4), ..Default::default() };
    assert_eq!(refused("window", traced(None, Some(2), four)), at(InvalidTrace, "rule value_dim trace"));
    assert_eq!(refused("window", traced(None, Some(2), kv::TraceConfig::default())), at(InvalidTrace, "rule value_dim trace"));
    assert_eq!(refused("window", traced(Some(2), Some(2), four)), at(InvalidTrace, "rule head_dim trace"));
    assert_eq!(refused("window", traced(Some(2), Some(0), four)), at(InvalidHeads, "range value_dim"));
    // lagkv: keys missing or too short, then values missing or too short.
    assert_eq!(refused("lagkv", wire(None, None, vec![])), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("lagkv", wire(None, Some(2), vec![])), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("lagkv", wire(Some(1), Some(1), vec![])), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("lagkv", wire(Some(2), None, vec![])), at(InvalidHeads, "range value_dim"));
    assert_eq!(refused("lagkv", wire(Some(2), Some(1), vec![])), at(InvalidHeads, "range value_dim"));
    assert_eq!(refused("lagkv", traced(None, None, four)), at(InvalidHeads, "range head_dim"));
    assert_eq!(refused("lagkv", wire(Some(2), Some(2), two())), None);
    // Policies that read keys only accept value_dim 1 and ignore values.
    let knorm_step = || vec![wire_step(1, vec![vec![1.0]], vec![vec![f32::MAX]])];
    assert_eq!(refused("knorm", wire(Some(1), Some(1), knorm_step())), None);
    assert_eq!(refused("keydiff", wire(Some(1), Some(1), knorm_step())), None);
    assert_eq!(refused("knorm", wire(Some(1), None, vec![])), None);
}

#[test]
fn step_checks_through_the_wire() {
    // spec/tensors.md#checks, 2 and 3: the keys' shape, then the values'
    // shape, then the keys' entries, then the values' entries; at the
    // step, whatever the policy.
    use kv::ErrorCategory::{AttentionLength, AttentionValue};
    let at1 = |c, s: &str| Some((c, s.to_string(), 1));
    let first = || wire_step(1, vec![vec![0.0; 2]; 2], vec![vec![0.0; 3]; 2]);
    // Two KV heads, head_dim 2, value_dim 3; the second step admits 2.
    let run = |policy: &str, second: kv::Step| {
        let mut s = wire(Some(2), Some(3), vec![first(), second]);
        s.query_heads = Some(2);
        s.kv_heads = Some(2);
        refused(policy, s)
    };
    let good_keys = || vec![vec![0.5; 4]; 2];
    let good_values = || vec![vec![0.5; 6]; 2];
    for policy in ["window", "knorm", "lagkv"] {
        assert_eq!(run(policy, wire_step(2, good_keys(), good_values())), None, "{policy}");
        // The number of entries, then each entry's length.
        assert_eq!(run(policy, wire_step(2, good_keys(), vec![vec![0.5; 6]])), at1(AttentionLength, "length values"));
        assert_eq!(run(policy, wire_step(2, good_keys(), vec![vec![0.5; 6]; 3])), at1(AttentionLength, "length values"));
        assert_eq!(run(policy, wire_step(2, good_keys(), vec![vec![0.5; 6], vec![0.5; 4]])), at1(AttentionLength, "length values"));
        // Values of d, not e: refused.
        assert_eq!(run(policy, wire_step(2, good_keys(), good_keys())), at1(AttentionLength, "length values"));
        // Entries: finite; signed and -0.0 accepted.
        let nan = vec![vec![0.5; 6], vec![0.5, 0.5, 0.5, f32::NAN, 0.5, 0.5]];
        assert_eq!(run(policy, wire_step(2, good_keys(), nan.clone())), at1(AttentionValue, "value values"));
        let signed = vec![vec![-0.0, -1.0, f32::MAX, -f32::MAX, 0.0, 2.0]; 2];
        assert_eq!(run(policy, wire_step(2, good_keys(), signed)), None, "{policy}");
        // Keys' shape before values' shape; both shapes before any entry.
        assert_eq!(run(policy, wire_step(2, vec![vec![0.5; 4]], vec![vec![0.5; 6]])), at1(AttentionLength, "length keys"));
        let bad_key = vec![vec![f32::INFINITY; 4]; 2];
        assert_eq!(run(policy, wire_step(2, bad_key.clone(), vec![vec![0.5; 6]])), at1(AttentionLength, "length values"));
        // Keys' entries before values' entries.
        assert_eq!(run(policy, wire_step(2, bad_key, nan)), at1(AttentionValue, "value keys"));
    }
    // Values in a scenario without value_dim: length values (one empty
    // entry is an entry).
    let no_values = |second: kv::Step| refused("knorm", wire(Some(2), None, vec![wire_step(1, vec![vec![0.0; 2]], vec![]), second]));
    assert_eq!(no_values(wire_step(1, vec![vec![0.5; 2]], vec![])), None);
    assert_eq!(no_values(wire_step(1, vec![vec![0.5; 2]], vec![vec![]])), at1(AttentionLength, "length values"));
    // A value check after every other check of the step: a NaN weight in
    // the row first.
    let mut s = wire_step(1, vec![vec![0.5; 2]], vec![vec![f32::NAN]]);
    s.attention = Some(kv::AttentionRow { weights: vec![f32::NAN] });
    assert_eq!(refused("window", wire(Some(2), Some(1), vec![wire_step(1, vec![vec![0.0; 2]], vec![vec![0.0]]), s])), at1(AttentionValue, "value attention"));
}

#[test]
fn runs_through_the_wire() {
    // The first example as a request: position 2 goes, the cut's scores
    // are ranks over lag.
    let steps = vec![wire_step(5, vec![flat(&KEYS)], vec![flat(&FLAT_VALUES)])];
    let policy = kv::PolicyConfig {
        name: "lagkv".into(),
        parameters: [("budget", 4), ("sinks", 1), ("lag", 2)].iter().map(|&(n, v)| kv::Parameter { name: n.into(), value: v }).collect(),
        seed: 0,
    };
    let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(wire(Some(2), Some(2), steps)), want_cut: true };
    let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
    assert!(log.rejection.is_none());
    assert_eq!(log.steps[0].victims, vec![2]);
    assert_eq!(log.steps[0].cut.iter().map(|r| (r.position, r.score)).collect::<Vec<_>>(), vec![(2, 0.0), (1, 0.5), (0, 1.0), (3, 1.0), (4, 1.0)]);
}
