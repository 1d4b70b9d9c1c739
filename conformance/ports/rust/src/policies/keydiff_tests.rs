//! spec/policies/keydiff.md through whole scenarios: the card's worked
//! examples (the key nearest the anchor goes, the recent window, scores
//! that move, several KV heads under each aggregation and granularity, the
//! prefill ratio), hand-worked cases of its other rules (a zero key, all
//! keys zero, victims forgotten from the anchor, attention ignored), the
//! card's ranges and rules, and its refusal of a scenario without keys
//! through the wire. Every expected value is worked by hand from the spec
//! (decimals as the card prints them, checked to its digits).

use super::keydiff::{anchor, unit, unit_key};
use crate::harness::{run_scenario_with_keys, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::pb::kvspec::conformance::v1 as conf;
use crate::pb::kvspec::v1 as kv;
use crate::protocol::handle_request;
use crate::registry;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

/// Run `keydiff` over explicit steps of `heads` with `head_dim`.
fn run_with(p: &[(&str, i64)], heads: HeadCounts, head_dim: Option<u32>, steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario_with_keys("keydiff", &params(p), 0, heads, head_dim, &Scenario::Steps(steps))
}

/// `keydiff` over one head with keys of `d` = 2.
fn run(p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_with(p, HeadCounts::ONE, Some(2), steps)
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

/// Keys one a step.
fn keys(ks: &[[f32; 2]]) -> Vec<ScenarioStep> {
    ks.iter().map(|k| key(k)).collect()
}

/// A cut's positions, and its scores to the card's three decimals.
fn cut_of(s: &StepRecord) -> (Vec<u32>, Vec<f64>) {
    (s.cut.iter().map(|c| c.0).collect(), s.cut.iter().map(|c| (c.1 * 1000.0).trunc() / 1000.0).collect())
}

#[test]
fn unit_keys_and_anchor() {
    // spec/policies/keydiff.md#how-it-works: entry c is k[c] / norm(k),
    // one division each; a zero key is d zeros, +0.0 each.
    assert_eq!(unit_key(&[3.0, 4.0]), vec![0.6, 0.8]);
    assert_eq!(unit_key(&[0.0, 2.0]), vec![0.0, 1.0]);
    assert_eq!(unit_key(&[-2.0, 0.0]), vec![-1.0, 0.0]);
    let zero = unit_key(&[-0.0, 0.0]);
    assert_eq!(zero.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), vec![0, 0]);
    // Entries widened exactly: 0.1f32, not 0.1f64, over its own norm.
    let x = 0.1f32 as f64;
    assert_eq!(unit_key(&[0.1, 0.1]), vec![x / (x * x + x * x).sqrt(); 2]);
    // The largest binary32 entries: the norm stays finite in binary64.
    let m = f32::MAX as f64;
    assert_eq!(unit_key(&[f32::MAX, -f32::MAX]), vec![m / (m * m * 2.0).sqrt(), -m / (m * m * 2.0).sqrt()]);
    // The anchor: the mean per channel over the positions (sum from +0.0,
    // one division), then its unit; the worked example's (2/3, 1/3).
    let n = ((2.0f64 / 3.0) * (2.0 / 3.0) + (1.0 / 3.0) * (1.0 / 3.0)).sqrt();
    let a = anchor(&[vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 0.0]]);
    assert_eq!(a, vec![(2.0 / 3.0) / n, (1.0 / 3.0) / n]);
    assert!((a[0] - 2.0 / 5f64.sqrt()).abs() < 1e-15 && (a[1] - 1.0 / 5f64.sqrt()).abs() < 1e-15);
    // A mean of zeros has the zero unit, +0.0 each.
    let z = anchor(&[vec![1.0, -1.0], vec![-1.0, 1.0]]);
    assert_eq!(z.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), vec![0, 0]);
    assert_eq!(unit(&[0.0, 0.0, 0.0]), vec![0.0; 3]);
}

#[test]
fn example_nearest_the_anchor_goes() {
    // Vector keydiff/basic/nearest-the-anchor-goes: keys (1, 0), (0, 2),
    // (3, 0); budget 2, recent_window 0. Unit keys (1, 0), (0, 1), (1, 0),
    // anchor (2/sqrt(5), 1/sqrt(5)); scores -0.894.., -0.447.., -0.894..:
    // 0 and 2 tie, and 0 goes.
    let log = run(&[("budget", 2), ("recent_window", 0)], keys(&[[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0]]);
    assert_eq!(ok(&log).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![1, 2, 2]);
    assert_eq!(cut_of(&log.steps[2]), (vec![0, 2, 1], vec![-0.894, -0.894, -0.447]));
    let cut = &log.steps[2].cut;
    // The tie is exact: both unit keys are (1, 0).
    assert_eq!(cut[0].1.to_bits(), cut[1].1.to_bits());
    assert!((cut[0].1 + 2.0 / 5f64.sqrt()).abs() < 1e-15);
    // Steps that evict nothing have no cut (and need no scores).
    assert!(log.steps[..2].iter().all(|s| s.cut.is_empty()));
}

#[test]
fn example_recent_window() {
    // Vectors keydiff/basic/no-recent-window and
    // keydiff/basic/recent-window-protects: keys (1, 0), (0, 1),
    // (1, 0.125) score -0.871.., -0.491.., -0.925.. (anchor (0.871..,
    // 0.491..)), budget 2.
    let steps = || keys(&[[1.0, 0.0], [0.0, 1.0], [1.0, 0.125]]);
    // recent_window 0: position 2 goes.
    let log = run(&[("budget", 2), ("recent_window", 0)], steps());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![2]]);
    assert_eq!(cut_of(&log.steps[2]), (vec![2, 0, 1], vec![-0.925, -0.870, -0.491]));
    // recent_window 1: position 2 is protected, its key still in the
    // anchor (the same scores), and 0 goes.
    let log = run(&[("budget", 2), ("recent_window", 1)], steps());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0]]);
    assert_eq!(cut_of(&log.steps[2]), (vec![0, 1], vec![-0.870, -0.491]));
}

#[test]
fn example_scores_move() {
    // Vector keydiff/basic/scores-move: keys (1, 0), (0, 1), (0, 1), (1,
    // 0), budget 2. Step 2: anchor (1/3, 2/3) made unit, scores -0.447..,
    // -0.894.., -0.894..: 1 goes. Step 3: kept keys (1, 0), (0, 1), (1,
    // 0) (the victim's unit key forgotten), anchor (0.894.., 0.447..): 0
    // goes, whose score moved from -0.447.. to -0.894...
    let log = run(&[("budget", 2)], keys(&[[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![1], vec![0]]);
    assert_eq!(cut_of(&log.steps[2]), (vec![1, 2, 0], vec![-0.894, -0.894, -0.447]));
    assert_eq!(cut_of(&log.steps[3]), (vec![0, 3, 2], vec![-0.894, -0.894, -0.447]));
}

#[test]
fn example_zero_key() {
    // A zero key: keys (0, 0), (1, 0), (1, 0), budget 2. Unit keys (0,
    // 0), (1, 0), (1, 0); the mean (2/3, 0) made unit is (1, 0); scores
    // +0.0, -1, -1: 1 goes (the lower of two equal), and the zero key's
    // +0.0 - (0 * 1 + 0 * 0) is +0.0, its sign bit clear.
    let log = run(&[("budget", 2)], keys(&[[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![1]]);
    let cut = &log.steps[2].cut;
    assert_eq!(cut, &vec![(1, -1.0), (2, -1.0), (0, 0.0)]);
    assert_eq!(cut[2].1.to_bits(), 0);
    // A negative zero key against a negative anchor: still +0.0.
    let log = run(&[("budget", 1)], keys(&[[-0.0, -0.0], [-1.0, 0.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![1]]);
    assert_eq!(log.steps[1].cut, vec![(1, -1.0), (0, 0.0)]);
    assert_eq!(log.steps[1].cut[1].1.to_bits(), 0);
}

#[test]
fn all_zero_keys_tie_at_zero() {
    // Every key zero: the anchor is zeros, every score +0.0, and the lowest
    // positions go.
    let log = run(&[("budget", 1)], vec![ScenarioStep::single(3, None).with_keys(vec![vec![0.0; 6]])]);
    assert_eq!(victims(&log), vec![vec![0, 1]]);
    assert!(log.steps[0].cut.iter().all(|c| c.1.to_bits() == 0));
    // Opposite keys: the mean is zeros, and so is every score.
    let log = run(&[("budget", 1)], keys(&[[1.0, 2.0], [-1.0, -2.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![0]]);
    assert_eq!(log.steps[1].cut.iter().map(|c| c.1.to_bits()).collect::<Vec<_>>(), vec![0, 0]);
}

#[test]
fn defaults() {
    // budget 512 and recent_window 0 at the defaults: nothing goes in two
    // steps, and with budget 1 every position is a candidate.
    let log = run(&[], keys(&[[3.0, 4.0], [1.0, 0.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![]]);
    // (1, 0) and (0, 1): the anchor (1, 1) made unit, a tie; 0 goes.
    let log = run(&[("budget", 1)], keys(&[[1.0, 0.0], [0.0, 1.0]]));
    assert_eq!(victims(&log), vec![vec![], vec![0]]);
}

/// The several-KV-heads example's one step: positions 0, 1, 2; KV head
/// 0's keys (1, 0), (0, 1), (2, 1), KV head 1's (2, 1), (1, 2), (-1, 1).
fn heads_step() -> ScenarioStep {
    ScenarioStep::per_head(3, vec![]).with_keys(vec![vec![1.0, 0.0, 0.0, 1.0, 2.0, 1.0], vec![2.0, 1.0, 1.0, 2.0, -1.0, 1.0]])
}

#[test]
fn example_several_kv_heads() {
    // Vectors keydiff/heads/layer-mean, layer-max, layer-sum: Hq = Hkv =
    // 2, granularity 0, budget 2. KV head 0 scores -0.794.., -0.607..,
    // -0.982..; KV head 1 -0.691.., -0.986.., -0.466...
    let layer = |aggregation, heads| {
        let p = [("budget", 2), ("granularity", 0), ("aggregation", aggregation)];
        run_with(&p, heads, Some(2), vec![heads_step()])
    };
    let two = HeadCounts { query: 2, kv: 2 };
    // mean: -0.743.., -0.796.., -0.724..: 1 goes; one set logs in the
    // step's fields.
    let mean = layer(0, two);
    assert_eq!(victims(&mean), vec![vec![1]]);
    assert_eq!(cut_of(&mean.steps[0]), (vec![1, 0, 2], vec![-0.796, -0.743, -0.724]));
    assert_eq!((mean.steps[0].kept_count, mean.steps[0].sets.len()), (2, 0));
    // max: -0.691.., -0.607.., -0.466..: 0 goes.
    let max = layer(1, two);
    assert_eq!(victims(&max), vec![vec![0]]);
    assert_eq!(cut_of(&max.steps[0]), (vec![0, 1, 2], vec![-0.691, -0.607, -0.466]));
    // sum: as mean, 1 goes (twice mean's scores, exactly).
    let sum = layer(2, two);
    assert_eq!(victims(&sum), vec![vec![1]]);
    let doubled: Vec<(u32, f64)> = mean.steps[0].cut.iter().map(|&(p, s)| (p, s * 2.0)).collect();
    assert_eq!(sum.steps[0].cut, doubled);
    // The KV heads are combined, not the query heads: Hq = 4 gives mean's.
    assert_eq!(layer(0, HeadCounts { query: 4, kv: 2 }).steps[0].cut, mean.steps[0].cut);
}

#[test]
fn example_kv_head_sets() {
    // Vector keydiff/heads/kv-head-sets: one set per KV head (granularity
    // 1), each its own anchor: set 0 evicts 2, set 1 evicts 1; query_head
    // sets rank their query head's KV head's.
    let sets = |granularity, heads| {
        let log = run_with(&[("budget", 2), ("granularity", granularity)], heads, Some(2), vec![heads_step()]);
        let step = &ok(&log)[0];
        assert!(step.victims.is_empty() && step.cut.is_empty());
        step.sets.iter().map(|s| s.victims.clone()).collect::<Vec<_>>()
    };
    assert_eq!(sets(1, HeadCounts { query: 2, kv: 2 }), vec![vec![2], vec![1]]);
    assert_eq!(sets(1, HeadCounts { query: 4, kv: 2 }), vec![vec![2], vec![1]]);
    assert_eq!(sets(2, HeadCounts { query: 4, kv: 2 }), vec![vec![2], vec![2], vec![1], vec![1]]);
}

#[test]
fn example_prefill_ratio() {
    // Vector prefill/keydiff/ratio: ratio_ppm 500000, prefill_only 1, a
    // prefill of 4 positions with keys (1, 0), (2, 0), (0, 1), (1, 1): the
    // ratio budget 2; anchor (0.845.., 0.533..); scores -0.845..,
    // -0.845.., -0.533.., -0.975..: 3 and 0 go. A decode step after it
    // evicts nothing.
    let prefill = ScenarioStep::prefill(4, vec![vec![0.25; 4]]).with_keys(vec![vec![1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 1.0, 1.0]]);
    let log = run(&[("ratio_ppm", 500_000), ("prefill_only", 1)], vec![prefill, key(&[5.0, 0.0])]);
    assert_eq!(victims(&log), vec![vec![0, 3], vec![]]);
    assert_eq!(ok(&log).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(cut_of(&log.steps[0]), (vec![3, 0, 1, 2], vec![-0.975, -0.845, -0.845, -0.533]));
    assert!(log.steps[1].cut.is_empty());
}

#[test]
fn attention_is_ignored() {
    // spec/tensors.md#policies-that-read-keys: rows are checked and
    // otherwise ignored; the same keys give the same log.
    let ks = [[1.0f32, 0.0], [0.0, 2.0], [3.0, 0.0]];
    let with_rows = |rows: [Vec<f32>; 3]| {
        let steps = rows.into_iter().zip(ks).map(|(r, k)| ScenarioStep::single(1, Some(r)).with_keys(vec![k.to_vec()])).collect();
        run(&[("budget", 2)], steps)
    };
    let plain = run(&[("budget", 2)], keys(&ks));
    assert_eq!(with_rows([vec![], vec![1.0], vec![0.0, 1.0]]), plain);
    assert_eq!(with_rows([vec![], vec![0.0], vec![1.0, 0.0]]), plain);
}

/// The subject as spec/harness.md#subjects writes it; `None` when the
/// configuration is accepted.
fn subject(p: &[(&str, i64)]) -> Option<String> {
    registry::build("keydiff", &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

#[test]
fn parameters_ranges_and_rules() {
    // spec/policies/keydiff.md#parameters, in card order (knorm's).
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

#[test]
fn without_keys_refused_through_the_wire() {
    // spec/policies/keydiff.md#parameters: a scenario without keys is
    // INVALID_HEADS, range head_dim, before its first step; with keys the
    // worked example runs, its cut's scores negative.
    let request = |head_dim, steps| {
        let policy = kv::PolicyConfig {
            name: "keydiff".into(),
            parameters: vec![kv::Parameter { name: "budget".into(), value: 2 }],
            seed: 0,
        };
        let scenario = kv::Scenario { id: "s".into(), steps, head_dim, ..Default::default() };
        let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(scenario), want_cut: true };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        log
    };
    let step = |k: Vec<f32>| kv::Step { admit: 1, keys: vec![kv::HeadVectors { values: k }], ..Default::default() };
    let log = request(None, vec![kv::Step { admit: 1, ..Default::default() }]);
    let r = log.rejection.expect("refused");
    assert_eq!(kv::ErrorCategory::try_from(r.category).unwrap(), kv::ErrorCategory::InvalidHeads);
    let s = r.subject.unwrap();
    assert_eq!((s.check.as_str(), s.names.as_slice(), r.step), ("range", &["head_dim".to_string()][..], -1));
    let log = request(Some(2), vec![step(vec![1.0, 0.0]), step(vec![0.0, 2.0]), step(vec![3.0, 0.0])]);
    assert!(log.rejection.is_none());
    assert_eq!(log.steps[2].victims, vec![0]);
    assert_eq!(log.steps[2].cut.iter().map(|r| r.position).collect::<Vec<_>>(), vec![0, 2, 1]);
    assert!(log.steps[2].cut.iter().all(|r| r.score < 0.0));
}
