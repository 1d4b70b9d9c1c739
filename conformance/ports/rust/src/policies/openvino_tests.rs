//! spec/policies/openvino.md through whole scenarios: every worked example
//! (`norm_sum` against `SUM`, the forward pool, the SnapKV window's counts,
//! the prompt that waits for the first decode step, GenAI's
//! `four_zeroed_two_to_evict`), hand-worked cases of the card's other
//! rules (null attention, heads summed into one set, column totals, the
//! window still filling, blocks above 1 with the open block, the start
//! area), and the parameters' ranges and rules with their subjects
//! (spec/policies/openvino.md#parameters, spec/harness.md#subjects).
//! Every expected value is worked by hand from the card.
//!
//! The worked examples say "`sinks` 1, `recent_window` 1, `budget` 3,
//! `block` 1, `obs_window` 0 unless it says otherwise"; their numbers are
//! those of `max_pool` 1 (no pool: the pool example is "the same rows with
//! `max_pool` 2"), which `EXAMPLE` sets.

use super::openvino::forward_max_pool;
use crate::harness::{run_scenario, run_scenario_with_heads, Engine, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::registry;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

/// The worked examples' parameters (with `max_pool` 1, see above).
const EXAMPLE: [(&str, i64); 6] =
    [("sinks", 1), ("recent_window", 1), ("budget", 3), ("block", 1), ("obs_window", 0), ("max_pool", 1)];

/// `EXAMPLE` with `more` replacing or adding values.
fn example(more: &[(&'static str, i64)]) -> Vec<(&'static str, i64)> {
    let mut p: Vec<(&'static str, i64)> = EXAMPLE.iter().filter(|(n, _)| !more.iter().any(|(m, _)| m == n)).copied().collect();
    p.extend_from_slice(more);
    p
}

fn run(p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario("openvino", &params(p), 0, &Scenario::Steps(steps))
}

fn ok(log: &EvictionLog) -> &[StepRecord] {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    &log.steps
}

fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
    ok(log).iter().map(|s| s.victims.clone()).collect()
}

fn kept_counts(log: &EvictionLog) -> Vec<u32> {
    ok(log).iter().map(|s| s.kept_count).collect()
}

fn row(w: &[f32]) -> ScenarioStep {
    ScenarioStep::single(1, Some(w.to_vec()))
}

/// The subject as spec/harness.md#subjects writes it; `None` when the
/// configuration is accepted.
fn subject(p: &[(&str, i64)]) -> Option<String> {
    registry::build("openvino", &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

/// The first example's rows: step 0 `()`, step 1 `(1.0)`, step 2 `(0.5,
/// 0.5)`, step 3 `(0.25, 0.125, 0.5)`.
fn first_rows() -> Vec<ScenarioStep> {
    vec![row(&[]), row(&[1.0]), row(&[0.5, 0.5]), row(&[0.25, 0.125, 0.5])]
}

#[test]
fn example_norm_sum_against_sum() {
    // Vectors openvino/decode/norm-sum and openvino/decode/sum. After
    // step 3: acc 0.625, 0.5, 0 and count 3, 2, 1 for positions 1, 2, 3;
    // n 4 reaches budget + B: one of the candidates 1, 2 goes.
    let norm = run(&example(&[("norm_sum", 1)]), first_rows());
    assert_eq!(victims(&norm), vec![vec![], vec![], vec![], vec![1]]);
    assert_eq!(kept_counts(&norm), vec![1, 2, 3, 3]);
    // NORM_SUM: 0.625 / 3 = 0.2083... against 0.5 / 2 = 0.25.
    assert_eq!(norm.steps[3].cut, vec![(1, 0.625 / 3.0), (2, 0.25)]);
    assert!(norm.steps[..3].iter().all(|s| s.cut.is_empty()));
    // SUM: 0.625 against 0.5, position 2 goes.
    let sum = run(&example(&[("norm_sum", 0)]), first_rows());
    assert_eq!(victims(&sum), vec![vec![], vec![], vec![], vec![2]]);
    assert_eq!(sum.steps[3].cut, vec![(2, 0.5), (1, 0.625)]);
    // The default norm_sum is 1.
    assert_eq!(victims(&run(&example(&[]), first_rows())), victims(&norm));
}

#[test]
fn example_forward_pool() {
    // Vector openvino/decode/max-pool: max_pool 2. Step 3: u = (0.5,
    // 0.5, 0), acc 1.0, 0.5, 0. NORM_SUM: 1.0 / 3 against 0.5 / 2:
    // position 2 goes, where without the pool position 1 went.
    let log = run(&example(&[("max_pool", 2)]), first_rows());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![2]]);
    assert_eq!(log.steps[3].cut, vec![(2, 0.25), (1, 1.0 / 3.0)]);
    // With SUM position 2 goes either way: 1.0 against 0.5.
    let sum = run(&example(&[("max_pool", 2), ("norm_sum", 0)]), first_rows());
    assert_eq!(sum.steps[3].cut, vec![(2, 0.5), (1, 1.0)]);
}

/// The SnapKV example's steps: a prefill of 0 to 3 with the rows of
/// queries 2 and 3, then a decode step admitting 4.
fn window_steps() -> Vec<ScenarioStep> {
    vec![
        ScenarioStep::prefill(4, vec![vec![0.25, 0.5, 0.25], vec![0.25, 0.125, 0.125, 0.5]]),
        row(&[0.125, 0.25, 0.375, 0.25]),
    ]
}

#[test]
fn example_window_counts() {
    // Vectors openvino/prefill/window-counts and
    // openvino/prefill/every-query-counts: budget 4, obs_window 2. Step 0
    // registers x = (0.5, 0.625, 0.375, 0.5) with k 2 and evicts nothing;
    // step 1: acc 0.875, 0.75, 0.75, 0, counts 3, 3, 2, 1; position 2
    // (0.25) goes among 0.2916..., 0.25, 0.375.
    let log = run(&example(&[("budget", 4), ("obs_window", 2)]), window_steps());
    assert_eq!(victims(&log), vec![vec![], vec![2]]);
    assert_eq!(kept_counts(&log), vec![4, 4]);
    assert_eq!(log.steps[1].cut, vec![(2, 0.25), (1, 0.875 / 3.0), (3, 0.375)]);
    // obs_window 0: counts 3, 2, 1 after step 0 and 4, 3, 2, 1 after
    // step 1: position 1 (0.21875) goes.
    let every = run(&example(&[("budget", 4), ("obs_window", 0)]), window_steps());
    assert_eq!(victims(&every), vec![vec![], vec![1]]);
    assert_eq!(every.steps[1].cut, vec![(1, 0.21875), (2, 0.25), (3, 0.375)]);
}

/// A prefill of 0 to 5 with the row of query 5, then one step.
fn deferred_steps(then: ScenarioStep) -> Vec<ScenarioStep> {
    vec![ScenarioStep::prefill(6, vec![vec![0.0, 0.5, 0.25, 0.125, 0.0625, 0.0625]]), then]
}

#[test]
fn example_prompt_waits_for_the_first_decode_step() {
    // Vector openvino/prefill/deferred: budget 4. Step 0 admits 0 to 5:
    // 6 kept, nothing goes. Step 1 admits 6 with a row: 7 kept, floor(7 /
    // 1) - 4 = 3 blocks go at once, among the candidates 1 .. 5.
    // Hand-worked scores (obs_window 0, max_pool 1): the prompt gives
    // acc 0.5, 0.25, 0.125, 0.0625, 0.0625 and counts 5, 4, 3, 2, 1 to
    // positions 1 to 5; a zero row adds nothing to acc and 1 to each
    // count: 0.5 / 6, 0.25 / 5, 0.125 / 4, 0.0625 / 3, 0.0625 / 2. The
    // lowest three are 4, then the tie 0.03125 of 3 and 5 (the older
    // first).
    let log = run(&example(&[("budget", 4)]), deferred_steps(row(&[0.0; 6])));
    assert_eq!(victims(&log), vec![vec![], vec![3, 4, 5]]);
    assert_eq!(kept_counts(&log), vec![6, 4]);
    assert!(log.steps[0].cut.is_empty());
    assert_eq!(log.steps[1].cut, vec![(4, 0.0625 / 3.0), (3, 0.03125), (5, 0.03125), (2, 0.05), (1, 0.5 / 6.0)]);
}

#[test]
fn null_attention_registers_nothing_and_evicts_nothing() {
    // The deferred prompt, then a null step: 7 kept, nothing goes (a
    // decode step with a row would have evicted 3).
    let log = run(&example(&[("budget", 4)]), deferred_steps(ScenarioStep::single(1, None)));
    assert_eq!(victims(&log), vec![vec![], vec![]]);
    assert_eq!(kept_counts(&log), vec![6, 7]);
    // Then a row over 0 .. 6: positions 6 and 7 join at +0.0 (d = 2), the
    // old counts grow by 2 (7, 6, 5, 4, 3) and the new ones are 2, 1. 8
    // kept: 4 go among the candidates 1 .. 6: 0.5 / 7, 0.25 / 6,
    // 0.125 / 5, 0.0625 / 4, 0.0625 / 3, 0 / 2.
    let mut steps = deferred_steps(ScenarioStep::single(1, None));
    steps.push(row(&[0.0; 7]));
    let log = run(&example(&[("budget", 4)]), steps);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![3, 4, 5, 6]]);
    assert_eq!(kept_counts(&log), vec![6, 7, 4]);
    assert_eq!(
        log.steps[2].cut,
        vec![(6, 0.0), (4, 0.015625), (5, 0.0625 / 3.0), (3, 0.025), (2, 0.25 / 6.0), (1, 0.5 / 7.0)]
    );
}

#[test]
fn a_direct_call_takes_the_same_path() {
    // The first example through `Engine` (a single-head trace's path).
    let mut e = Engine::new(registry::build("openvino", &params(&example(&[])), 0).unwrap());
    let rows: [&[f32]; 4] = [&[], &[1.0], &[0.5, 0.5], &[0.25, 0.125, 0.5]];
    let log: Vec<StepRecord> = rows.iter().enumerate().map(|(t, r)| e.step(t as u64, 1, Some(r)).unwrap()).collect();
    assert_eq!(log[3].victims, vec![1]);
    assert_eq!(log[3].cut, vec![(1, 0.625 / 3.0), (2, 0.25)]);
    assert_eq!(e.kept(), &[0, 2, 3]);
}

/// GenAI's `four_zeroed_two_to_evict`, layer 0, as a kvspec scenario:
/// `sinks` 32, `recent_window` 32, `budget` 192, `block` 4, NORM_SUM,
/// `obs_window` 0, `max_pool` 1; a null step admitting all but the last of
/// `n` positions, then a decode step admitting it with a row of 1.0 but
/// for the zeroed blocks 10, 13, 15 and 36.
fn upstream_four_zeroed(n: u32) -> EvictionLog {
    let p = [
        ("budget", 192),
        ("sinks", 32),
        ("recent_window", 32),
        ("block", 4),
        ("norm_sum", 1),
        ("max_pool", 1),
        ("obs_window", 0),
    ];
    let zeroed = [10u32, 13, 15, 36];
    let weights: Vec<f32> = (0..n - 1).map(|p| if zeroed.contains(&(p / 4)) { 0.0 } else { 1.0 }).collect();
    run(&p, vec![ScenarioStep::single(n - 1, None), row(&weights)])
}

#[test]
fn example_four_zeroed_two_to_evict() {
    // Vector openvino/upstream/four-zeroed-two-to-evict-0 (the table's own
    // length is not in the card: 201 positions here, so that the open
    // block holds 200). floor(201 / 4) - 192 / 4 = 2 blocks go, among the
    // candidate blocks 8 .. 41; the zeroed blocks score exactly 0 and the
    // two older go: positions 40 to 43 and 52 to 55.
    let log = upstream_four_zeroed(201);
    let expected: Vec<u32> = (40..44).chain(52..56).collect();
    assert_eq!(victims(&log), vec![vec![], expected]);
    // budget + (n mod B) kept.
    assert_eq!(kept_counts(&log), vec![200, 193]);
    // The cut: the two victims and 4 more, 15 and 36 (0), then the
    // lowest blocks of 1.0s, the oldest candidates, blocks 8 and 9: the
    // first registration gives position p the count 201 - p, so a block's
    // score grows with its position.
    let block = |first: u32| {
        let mut s = 0.0f64;
        for p in first..first + 4 {
            s += 1.0 / (201 - p) as f64;
        }
        s
    };
    assert_eq!(log.steps[1].cut, vec![(40, 0.0), (52, 0.0), (60, 0.0), (144, 0.0), (32, block(32)), (36, block(36))]);
    // 200 positions: the same victims, no open block.
    assert_eq!(kept_counts(&upstream_four_zeroed(200)), vec![199, 192]);
    assert_eq!(victims(&upstream_four_zeroed(200))[1], victims(&log)[1]);
    // 199: floor(199 / 4) = 49, one block.
    assert_eq!(victims(&upstream_four_zeroed(199))[1], (40..44).collect::<Vec<u32>>());
}

#[test]
fn heads_are_summed_into_one_set() {
    // Two query heads, one kept set (openvino takes no granularity), SUM.
    // Step 2's rows (0.5, 0.5) and (0.5, 0.0) sum to (1.0, 0.5); step 3's
    // (0.25, 0.125, 0.5) and (0, 0, 1.0) to (0.25, 0.125, 1.5). acc:
    // position 1 0.5 + 0.125, position 2 0 + 1.5: 1 goes, where head 0
    // alone makes 2 go.
    let heads = |h1: [Vec<f32>; 4]| {
        let h0: [Vec<f32>; 4] = [vec![], vec![1.0], vec![0.5, 0.5], vec![0.25, 0.125, 0.5]];
        h0.into_iter().zip(h1).map(|(a, b)| ScenarioStep::per_head(1, vec![a, b])).collect::<Vec<_>>()
    };
    let p = params(&example(&[("norm_sum", 0)]));
    for kv in [1, 2] {
        let hc = HeadCounts { query: 2, kv };
        let steps = heads([vec![], vec![1.0], vec![0.5, 0.0], vec![0.0, 0.0, 1.0]]);
        let log = run_scenario_with_heads("openvino", &p, 0, hc, &Scenario::Steps(steps));
        let steps = ok(&log);
        // One set: the step's own fields, no `sets`.
        assert!(steps.iter().all(|s| s.sets.is_empty()));
        assert_eq!(steps[3].victims, vec![1]);
        assert_eq!(steps[3].cut, vec![(1, 0.625), (2, 1.5)]);
    }
    let zero = heads([vec![], vec![0.0], vec![0.0, 0.0], vec![0.0, 0.0, 0.0]]);
    let log = run_scenario_with_heads("openvino", &p, 0, HeadCounts { query: 2, kv: 1 }, &Scenario::Steps(zero));
    assert_eq!(ok(&log)[3].victims, vec![2]);
    assert_eq!(subject(&[("granularity", 0)]).as_deref(), Some("unknown granularity"));
}

#[test]
fn heads_query_rows_are_summed_head_by_head() {
    // The SnapKV example with two query heads carrying the same rows: x
    // and acc double exactly, so the victims stay and the cut's scores
    // double.
    let p = params(&example(&[("budget", 4), ("obs_window", 2)]));
    let q = [vec![0.25f32, 0.5, 0.25], vec![0.25, 0.125, 0.125, 0.5]];
    let r = vec![0.125f32, 0.25, 0.375, 0.25];
    let steps = vec![
        ScenarioStep::prefill(4, vec![q[0].clone(), q[1].clone(), q[0].clone(), q[1].clone()]),
        ScenarioStep::per_head(1, vec![r.clone(), r]),
    ];
    let log = run_scenario_with_heads("openvino", &p, 0, HeadCounts { query: 2, kv: 2 }, &Scenario::Steps(steps));
    assert_eq!(victims(&log), vec![vec![], vec![2]]);
    assert_eq!(log.steps[1].cut, vec![(2, 0.5), (1, 1.75 / 3.0), (3, 0.75)]);
}

#[test]
fn column_totals_replace_the_rows() {
    // The SnapKV example's totals over its 2 queries, T = (0.5, 0.625,
    // 0.375, 0.5), give the rows' log bit for bit.
    let totals = vec![vec![0.5, 0.625, 0.375, 0.5]];
    let mut steps = window_steps();
    steps[0] = steps[0].clone().with_totals(totals, 2);
    let p = example(&[("budget", 4), ("obs_window", 2)]);
    assert_eq!(run(&p, steps), run(&p, window_steps()));
    // k is total_rows, and the rows are not read: totals (0, 0.5, 1.0,
    // 0.5) over R = 1 beside two zero rows. seen 1, counts 1, 1, 1; then
    // a row (0, 0.25, 1.0, 0.125): seen 2 = W, counts 2, 2, 2, 1; acc
    // 0.75, 2.0, 0.625: position 3 (0.3125) goes. With k = m = 2 the
    // counts would be 3, 3, 2, 1 and position 1 (0.25) would go.
    let steps = vec![
        ScenarioStep::prefill(4, vec![vec![0.0; 3], vec![0.0; 4]]).with_totals(vec![vec![0.0, 0.5, 1.0, 0.5]], 1),
        row(&[0.0, 0.25, 1.0, 0.125]),
    ];
    let log = run(&p, steps);
    assert_eq!(victims(&log), vec![vec![], vec![3]]);
    assert_eq!(log.steps[1].cut, vec![(3, 0.3125), (1, 0.375), (2, 1.0)]);
}

#[test]
fn counts_while_the_window_is_incomplete() {
    // obs_window 3, budget 6, NORM_SUM. Step 0, a prefill of 0 to 3 with
    // the row of query 3 (0.5, 0.25, 0.5, 0.125): seen 1, acc 0.25, 0.5,
    // 0.125, counts 1, 1, 1. Step 1, null, admits 4 and 5. Step 2 admits
    // 6 with the row (0, 0.25, 0, 0.25, 0.3125, 0.5): seen 2 < 3, so
    // every tracked slot's count is min(2, m - j), m = 6: 2, 2, 2, 2, 2,
    // 1 (not 4, 4, 4, 3, 2, 1). acc 0.5, 0.5, 0.375, 0.3125, 0.5, 0: 4
    // goes (0.15625; with the other counts 3 would, 0.09375).
    let steps = vec![
        ScenarioStep::prefill(4, vec![vec![0.5, 0.25, 0.5, 0.125]]),
        ScenarioStep::single(2, None),
        row(&[0.0, 0.25, 0.0, 0.25, 0.3125, 0.5]),
    ];
    let log = run(&example(&[("budget", 6), ("obs_window", 3)]), steps);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![4]]);
    assert_eq!(log.steps[2].cut, vec![(4, 0.15625), (3, 0.1875), (1, 0.25), (2, 0.25), (5, 0.25)]);
}

#[test]
fn the_window_fills_from_an_empty_row() {
    // obs_window 2, decode steps only. Step 0's row is present and empty:
    // it registers (seen 1) though nothing is tracked. Step 1: seen 2, the
    // first registration gives position 1 count min(k = 1, 1) = 1; from
    // then on the window is complete: the first example's counts, 3, 2,
    // 1 at step 3, and its victims.
    let log = run(&example(&[("obs_window", 2)]), first_rows());
    assert_eq!(victims(&log)[3], vec![1]);
    assert_eq!(log.steps[3].cut, vec![(1, 0.625 / 3.0), (2, 0.25)]);
    // With a null step 0 instead, step 1 only brings seen to 1 and the
    // first registration still gives count 1; step 2 brings seen to 2 =
    // W: counts + 1; the same log.
    let mut steps = first_rows();
    steps[0] = ScenarioStep::single(1, None);
    assert_eq!(run(&example(&[("obs_window", 2)]), steps).steps[3].victims, vec![1]);
    // obs_window 5 and the same rows: seen 1, 2, 3, 4 never reaches W.
    // Step 3: counts min(4, m - j), m = 3: 3, 2, 1, the same as complete.
    assert_eq!(run(&example(&[("obs_window", 5)]), first_rows()).steps[3].victims, vec![1]);
}

#[test]
fn blocks_between_the_start_and_recent_areas() {
    // sinks 2, recent_window 2, budget 6, block 2, SUM, max_pool 1: one
    // position a step from 0, each row giving position p the weight p /
    // 16 (so older positions gather less). Nothing goes until 8 are
    // kept (budget + B): after step 7, closed blocks 0 (start area), 1,
    // 2, 3 (recent area); candidates 1 and 2. acc: position p has been
    // seen by the rows of steps p + 1 .. 7, each p / 16: (7 - p) p / 16.
    // Block of 2: 2 * 5/16 + 3 * 4/16 = 1.375; block of 4: 4 * 3/16 + 5 *
    // 2/16 = 1.375: equal, the older (2, 3) goes.
    let p = [("sinks", 2), ("recent_window", 2), ("budget", 6), ("block", 2), ("norm_sum", 0), ("max_pool", 1)];
    let steps: Vec<ScenarioStep> = (0..10u32).map(|t| row(&(0..t).map(|q| q as f32 / 16.0).collect::<Vec<_>>())).collect();
    let log = run(&p, steps);
    let v = victims(&log);
    assert!(v[..7].iter().all(Vec::is_empty));
    assert_eq!(v[7], vec![2, 3]);
    assert_eq!(log.steps[7].cut, vec![(2, 1.375), (4, 1.375)]);
    assert_eq!(kept_counts(&log)[7], 6);
    // Step 8: 7 kept (the open block holds 8), nothing goes. Step 9: 8
    // kept again; candidates the blocks of 4 and 6. acc of p after step
    // 9: (9 - p) p / 16: 4 -> 20/16, 5 -> 20/16, 6 -> 18/16, 7 -> 14/16:
    // 2.5 against 2.0, the block of 6 goes.
    assert_eq!(kept_counts(&log)[8], 7);
    assert_eq!(v[9], vec![6, 7]);
    assert_eq!(log.steps[9].cut, vec![(6, 2.0), (4, 2.5)]);
}

#[test]
fn the_start_area_is_never_scored_nor_evicted() {
    // sinks 0: every slot is tracked; the first example's rows with
    // budget 3, recent_window 1: after step 3 acc 0.25 + 0.5 + 1.0 = 1.75
    // (position 0), 0.625, 0.5, 0 and counts 4, 3, 2, 1 (SUM: 2 goes).
    // With sinks 1 position 0's 1.75 is never a candidate; here it is, and
    // loses to 2 only on score.
    let log = run(&example(&[("sinks", 0), ("norm_sum", 0)]), first_rows());
    assert_eq!(log.steps[3].victims, vec![2]);
    assert_eq!(log.steps[3].cut, vec![(2, 0.5), (1, 0.625), (0, 1.75)]);
    // NORM_SUM: 1.75 / 4 = 0.4375, 0.625 / 3, 0.25: 1 goes.
    let log = run(&example(&[("sinks", 0)]), first_rows());
    assert_eq!(log.steps[3].cut, vec![(1, 0.625 / 3.0), (2, 0.25), (0, 0.4375)]);
    // sinks 1 with a huge weight on position 0 in every row: never a
    // victim, never in a cut.
    let rows = vec![row(&[]), row(&[9.0]), row(&[9.0, 0.5]), row(&[9.0, 0.125, 0.5])];
    let log = run(&example(&[]), rows);
    assert!(log.steps[3].cut.iter().all(|&(p, _)| p != 0));
}

#[test]
fn forward_pool_is_cut_at_the_last_slot_and_skips_the_start_area() {
    let x = [9.0, 1.0, 3.0, 2.0, 5.0, 0.0];
    assert_eq!(forward_max_pool(&x, 1, 3), vec![3.0, 5.0, 5.0, 5.0, 0.0]);
    assert_eq!(forward_max_pool(&x, 0, 1), x.to_vec());
    assert_eq!(forward_max_pool(&x, 2, 65536), vec![5.0, 5.0, 5.0, 0.0]);
    assert_eq!(forward_max_pool(&x, 6, 2), Vec::<f64>::new());
    // Against the definition, every start and width.
    let y = [0.5, 0.0, 0.25, 0.25, 1.0, 0.125, 0.0, 0.75];
    for from in 0..y.len() {
        for w in 1..10 {
            let naive: Vec<f64> =
                (from..y.len()).map(|i| y[i..(i + w).min(y.len())].iter().copied().fold(0.0, f64::max)).collect();
            assert_eq!(forward_max_pool(&y, from, w), naive, "from {from}, w {w}");
        }
    }
}

#[test]
fn parameters_ranges_and_defaults() {
    // The card's table: names, defaults, ranges, in order.
    assert_eq!(subject(&[]), None);
    for (name, low, high) in [
        ("budget", 1, 4294967295),
        ("sinks", 0, 4294967294),
        ("recent_window", 0, 4294967294),
        ("block", 1, 65536),
        ("norm_sum", 0, 1),
        ("max_pool", 1, 65536),
        ("obs_window", 0, 4294967295),
    ] {
        let range = Some(format!("range {name}"));
        assert_eq!(subject(&[(name, low - 1)]), range, "{name} below");
        assert_eq!(subject(&[(name, high + 1)]), range, "{name} above");
    }
    // Limits accepted where the rules allow them.
    assert_eq!(subject(&[("block", 1), ("budget", 4294967295), ("sinks", 0), ("recent_window", 0)]), None);
    assert_eq!(subject(&[("block", 1), ("budget", 4294967295), ("sinks", 4294967294), ("recent_window", 0)]), None);
    assert_eq!(subject(&[("block", 1), ("budget", 4294967295), ("sinks", 0), ("recent_window", 4294967294)]), None);
    assert_eq!(subject(&[("block", 65536), ("budget", 65536), ("sinks", 0), ("recent_window", 0)]), None);
    assert_eq!(subject(&[("norm_sum", 0), ("max_pool", 65536), ("obs_window", 4294967295)]), None);
    assert_eq!(subject(&[("max_pool", 1), ("obs_window", 0)]), None);
    // Ranges in table order: budget's before obs_window's.
    assert_eq!(subject(&[("obs_window", -1), ("budget", 0)]).as_deref(), Some("range budget"));
    // Other cards' parameters are unknown to openvino, and openvino's own
    // to the others.
    for foreign in ["granularity", "aggregation", "adaptive", "prefill_only", "ratio_ppm", "slack", "interval", "block_score", "pool_kernel"] {
        assert_eq!(subject(&[(foreign, 0)]), Some(format!("unknown {foreign}")));
    }
    for name in ["h2o", "snapkv", "window", "random"] {
        for own in ["norm_sum", "max_pool"] {
            let r = registry::build(name, &params(&[(own, 1)]), 0).err().unwrap();
            assert_eq!(r.subject.names, vec![own.to_string()], "{name} {own}");
        }
    }
}

#[test]
fn rules_in_order() {
    // Rule 1, strictly: the card's message.
    let r = registry::build("openvino", &params(&[("budget", 160)]), 0).err().unwrap();
    assert_eq!(r.message, "openvino: sinks + recent_window must be below budget, got sinks 32, recent_window 128, budget 160");
    assert_eq!(subject(&[("budget", 160)]).as_deref(), Some("rule sinks recent_window budget"));
    assert_eq!(subject(&[("budget", 192)]), None);
    assert_eq!(subject(&[("block", 1), ("budget", 161)]), None);
    assert_eq!(subject(&[("block", 1), ("budget", 1), ("sinks", 0), ("recent_window", 0)]), None);
    assert_eq!(subject(&[("block", 1), ("budget", 1), ("sinks", 1), ("recent_window", 0)]).as_deref(), Some("rule sinks recent_window budget"));
    assert_eq!(subject(&[("block", 1), ("budget", 1), ("sinks", 0), ("recent_window", 1)]).as_deref(), Some("rule sinks recent_window budget"));
    // At the top of the ranges: no overflow.
    assert_eq!(
        subject(&[("block", 1), ("budget", 4294967295), ("sinks", 4294967294), ("recent_window", 4294967294)]).as_deref(),
        Some("rule sinks recent_window budget")
    );
    // Rule 1 before rule 2: 100 is not a multiple of 32 either.
    assert_eq!(subject(&[("budget", 100)]).as_deref(), Some("rule sinks recent_window budget"));
    // Rule 2: multiples of block (default 32), budget first.
    assert_eq!(subject(&[("budget", 700)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject(&[("budget", 700), ("sinks", 16), ("recent_window", 16)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject(&[("recent_window", 100)]).as_deref(), Some("rule block recent_window"));
    assert_eq!(subject(&[("sinks", 16)]).as_deref(), Some("rule block sinks"));
    // Both areas off the block: recent_window is named (spec/blocks.md#rules'
    // order, budget, then recent_window and sinks; see the README).
    assert_eq!(subject(&[("sinks", 16), ("recent_window", 100)]).as_deref(), Some("rule block recent_window"));
    // Block 1: every value is a multiple; block 16 (GPU) accepts 16s.
    assert_eq!(subject(&[("block", 16), ("sinks", 16), ("recent_window", 16), ("budget", 48)]), None);
    assert_eq!(subject(&[("block", 65536)]).as_deref(), Some("rule block budget"));
}
