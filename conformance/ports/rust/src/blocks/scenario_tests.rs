//! spec/blocks.md through whole scenarios: its examples (window's pairs
//! and chunk of 61, h2o's sum and max, streamingllm's sinks block, window
//! with slack), hand-worked cases of each policy (a block partly in the
//! recent window, `random`'s draws over blocks from seed 42's golden bits,
//! `mean` rounding two sums to one quotient, `tova`'s newest at prefill,
//! `snapkv`'s pooling and its window at +infinity, `interval`,
//! `prefill_only`, several kept sets, a direct call), `block` 1 changing
//! nothing, and the parameters' ranges and rules with their subjects
//! (spec/blocks.md#parameters, spec/blocks.md#rules,
//! spec/harness.md#subjects). Every expected value is worked by hand from
//! the spec.

use crate::harness::{run_scenario, run_scenario_with_heads, Engine, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::registry;

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

fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
    ok(log).iter().map(|s| s.victims.clone()).collect()
}

fn kept_counts(log: &EvictionLog) -> Vec<u32> {
    ok(log).iter().map(|s| s.kept_count).collect()
}

/// Null-attention steps admitting `sizes[i]` each.
fn chunks(sizes: &[u32]) -> Vec<ScenarioStep> {
    sizes.iter().map(|&a| ScenarioStep::single(a, None)).collect()
}

fn row(w: &[f32]) -> ScenarioStep {
    ScenarioStep::single(1, Some(w.to_vec()))
}

/// `(step, victims)` for every step that evicts.
fn evictions(log: &EvictionLog) -> Vec<(usize, Vec<u32>)> {
    victims(log).into_iter().enumerate().filter(|(_, v)| !v.is_empty()).collect()
}

/// The subject as spec/harness.md#subjects writes it ("rule block
/// budget"); `None` when the configuration is accepted.
fn subject(name: &str, p: &[(&str, i64)]) -> Option<String> {
    registry::build(name, &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

#[test]
fn window_pairs() {
    // spec/blocks.md#how-many-blocks-go, vector blocks/window/pairs:
    // window, budget 4, block 2, one position a step from 0. Steps 0 to 4
    // evict nothing (five kept after step 4, the open block holding 4);
    // step 5 closes the block of 4 and 5, three blocks are closed, and 0
    // and 1 go; then 2 and 3 at step 7, 4 and 5 at step 9.
    let log = run("window", &[("budget", 4), ("block", 2)], chunks(&[1; 11]));
    assert_eq!(evictions(&log), vec![(5, vec![0, 1]), (7, vec![2, 3]), (9, vec![4, 5])]);
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5]);
    let before: Vec<u32> = log.steps.iter().map(|s| s.query_cache_position).collect();
    assert_eq!(before, vec![0, 1, 2, 3, 4, 5, 4, 5, 4, 5, 4]);
    // Positional policies log no cut.
    assert!(log.steps.iter().all(|s| s.cut.is_empty()));
}

#[test]
fn window_pairs_through_a_direct_call() {
    // The same example through `Engine` (a single-head trace's path).
    let mut e = Engine::new(registry::build("window", &params(&[("budget", 4), ("block", 2)]), 0).unwrap());
    let victims: Vec<Vec<u32>> = (0..10).map(|t| e.step(t, 1, None).unwrap().victims).collect();
    assert_eq!(victims[5], vec![0, 1]);
    assert_eq!(victims[7], vec![2, 3]);
    assert_eq!(victims[9], vec![4, 5]);
    assert_eq!(victims.iter().filter(|v| !v.is_empty()).count(), 3);
    assert_eq!(e.kept(), &[6, 7, 8, 9]);
}

#[test]
fn window_chunk_of_61() {
    // spec/blocks.md#how-many-blocks-go, vector blocks/window/chunk-61:
    // window, budget 32, block 4, one chunk of 61: floor(61 / 4) - 8 = 7
    // blocks go, positions 0 to 27, and 33 are kept (32 and the open
    // block's 60). Then a chunk of 3 (61..63) keeps 36, nine blocks
    // closed: one goes, 28 to 31, leaving 32.
    let log = run("window", &[("budget", 32), ("block", 4)], chunks(&[61, 3]));
    assert_eq!(victims(&log), vec![(0..28).collect::<Vec<u32>>(), vec![28, 29, 30, 31]]);
    assert_eq!(kept_counts(&log), vec![33, 32]);
    // Without blocks the chunk keeps 32.
    let plain = run("window", &[("budget", 32)], chunks(&[61]));
    assert_eq!(kept_counts(&plain), vec![32]);
}

/// spec/blocks.md#ranking-blocks' h2o example: step 0 admits 0 to 3 with
/// null attention, step 1 records (0.5, 0, 0.25, 0.25) and admits 4, step
/// 2 records (0.25, 0, 0.25, 0.25, 0.25) and admits 5.
fn h2o_example(block_score: i64) -> EvictionLog {
    let steps = vec![ScenarioStep::single(4, None), row(&[0.5, 0.0, 0.25, 0.25]), row(&[0.25, 0.0, 0.25, 0.25, 0.25])];
    run("h2o", &[("budget", 4), ("recent_window", 2), ("block", 2), ("block_score", block_score)], steps)
}

#[test]
fn h2o_sum_and_max() {
    // Six kept after step 2, three blocks closed: one goes. The sums are
    // 0.75, 0, 0.5, 0.5, 0.25, 0 for 0 to 5; 4 and 5 are the recent
    // window, so the candidates are the blocks of 0 and 2. Sum: 0.75 and
    // 1.0, 0 and 1 go (vector blocks/h2o/sum); max: 0.75 and 0.5, 2 and
    // 3 go (vector blocks/h2o/max); mean: 0.375 and 0.5, 0 and 1 go.
    let sum = h2o_example(0);
    assert_eq!(victims(&sum), vec![vec![], vec![], vec![0, 1]]);
    assert_eq!(sum.steps[2].cut, vec![(0, 0.75), (2, 1.0)]);
    assert_eq!(kept_counts(&sum), vec![4, 5, 4]);
    let max = h2o_example(2);
    assert_eq!(victims(&max), vec![vec![], vec![], vec![2, 3]]);
    assert_eq!(max.steps[2].cut, vec![(2, 0.5), (0, 0.75)]);
    let mean = h2o_example(1);
    assert_eq!(victims(&mean), vec![vec![], vec![], vec![0, 1]]);
    assert_eq!(mean.steps[2].cut, vec![(0, 0.375), (2, 0.5)]);
    // Without blocks step 1 would already have evicted position 1.
    let steps = vec![ScenarioStep::single(4, None), row(&[0.5, 0.0, 0.25, 0.25])];
    let plain = run("h2o", &[("budget", 4), ("recent_window", 2)], steps);
    assert_eq!(victims(&plain), vec![vec![], vec![1]]);
}

#[test]
fn a_block_partly_in_the_recent_window_is_protected() {
    // h2o, budget 4, recent_window 2, block 2. Step 0 admits 0..4 (two
    // blocks closed: nothing goes); step 1 records (0.5, 0.5, 0.5, 0.5,
    // 0) and admits 5 and 6: seven kept, three blocks closed, one goes.
    // The recent window is 5 and 6, so the block of 4 and 5 (sum 0, the
    // lowest) is not a candidate, nor is the open block of 6; the blocks
    // of 0 and 2 tie at 1.0 and the older goes.
    let steps = vec![ScenarioStep::single(5, None), ScenarioStep::single(2, Some(vec![0.5, 0.5, 0.5, 0.5, 0.0]))];
    let log = run("h2o", &[("budget", 4), ("recent_window", 2), ("block", 2)], steps);
    assert_eq!(victims(&log), vec![vec![], vec![0, 1]]);
    assert_eq!(log.steps[1].cut, vec![(0, 1.0), (2, 1.0)]);
    assert_eq!(kept_counts(&log), vec![5, 5]);
}

#[test]
fn mean_rounds_two_sums_to_one_quotient() {
    // h2o, budget 3, recent_window 0, block 3. Step 0 admits 0..4 (one
    // block closed: nothing goes); step 1 records (2^-50, 3, 0, 2^-51, 3)
    // and admits 5: two blocks closed, one goes. The sums, in slot order
    // from +0.0: 3 + 2^-50 (block of 0) and 3 + 2^-51 (block of 3; 5 is
    // unobserved), both exact (ulp 2^-51 at 3). Sum: the block of 3 goes.
    // Mean: (3 + 2^-51) / 3 = 1 + (2/3) 2^-52 and (3 + 2^-50) / 3 = 1 +
    // (4/3) 2^-52 both round to 1 + 2^-52 (ulp 2^-52 at 1): a tie, and
    // the older block, of 0, goes. Max: 3 and 3, a tie too.
    let w50 = 2f32.powi(-50);
    let w51 = 2f32.powi(-51);
    let steps = || vec![ScenarioStep::single(5, None), row(&[w50, 3.0, 0.0, w51, 3.0])];
    let p = |block_score| [("budget", 3), ("recent_window", 0), ("block", 3), ("block_score", block_score)];
    let sum = run("h2o", &p(0), steps());
    assert_eq!(victims(&sum), vec![vec![], vec![3, 4, 5]]);
    assert_eq!(sum.steps[1].cut, vec![(3, 3.0 + 2f64.powi(-51)), (0, 3.0 + 2f64.powi(-50))]);
    let mean = run("h2o", &p(1), steps());
    assert_eq!(victims(&mean), vec![vec![], vec![0, 1, 2]]);
    let q = 1.0 + 2f64.powi(-52);
    assert_eq!(mean.steps[1].cut, vec![(0, q), (3, q)]);
    let max = run("h2o", &p(2), steps());
    assert_eq!(victims(&max), vec![vec![], vec![0, 1, 2]]);
    assert_eq!(max.steps[1].cut, vec![(0, 3.0), (3, 3.0)]);
    assert_eq!(kept_counts(&max), vec![5, 3]);
}

#[test]
fn streamingllm_sinks_block() {
    // spec/blocks.md#ranking-blocks, vector blocks/streamingllm/sinks-block:
    // budget 8, sinks 2, block 2, one position a step from 0. Step 9
    // closes a fifth block and one goes: the block of 0 and 1 holds the
    // sinks, so 2 and 3 go; step 11 evicts 4 and 5.
    let log = run("streamingllm", &[("budget", 8), ("sinks", 2), ("block", 2)], chunks(&[1; 12]));
    assert_eq!(evictions(&log), vec![(9, vec![2, 3]), (11, vec![4, 5])]);
    assert_eq!(kept_counts(&log)[8..], [9, 8, 9, 8]);
    // Sinks 4 (two blocks), budget 8, block 2: a chunk of 12 closes six
    // blocks, two go, the first two after the sinks: 4 to 7.
    let log = run("streamingllm", &[("budget", 8), ("sinks", 4), ("block", 2)], chunks(&[12]));
    assert_eq!(victims(&log), vec![vec![4, 5, 6, 7]]);
}

#[test]
fn window_with_slack() {
    // spec/blocks.md#triggers, vector blocks/slack/window: window, budget
    // 4, block 2, slack 2. Step 6 keeps seven, fires and evicts one block
    // (0 and 1), leaving five; step 7 keeps six and does not fire; step 8
    // keeps seven and evicts 2 and 3.
    let log = run("window", &[("budget", 4), ("slack", 2), ("block", 2)], chunks(&[1; 9]));
    assert_eq!(evictions(&log), vec![(6, vec![0, 1]), (8, vec![2, 3])]);
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 6, 5, 6, 5]);
}

#[test]
fn window_with_interval() {
    // window, budget 4, block 2, interval 3, one position a step: step 2
    // fires with three kept (one block closed: nothing goes); step 5
    // fires with six (0..5): three closed, 0 and 1 go; step 8 fires with
    // seven (2..8): 2 and 3 go, five left; step 11 fires with eight
    // (4..11): four closed, two go, 4 to 7.
    let log = run("window", &[("budget", 4), ("interval", 3), ("block", 2)], chunks(&[1; 12]));
    assert_eq!(evictions(&log), vec![(5, vec![0, 1]), (8, vec![2, 3]), (11, vec![4, 5, 6, 7])]);
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 4, 5, 6, 5, 6, 7, 4]);
    // A chunk of at least budget fires out of turn, yet five kept close
    // only two blocks: nothing goes, and the count restarts (the next
    // firing is the third step after).
    let log = run("window", &[("budget", 4), ("interval", 3), ("block", 2)], chunks(&[5, 1, 1, 1]));
    assert_eq!(evictions(&log), vec![(3, vec![0, 1, 2, 3])]);
    assert_eq!(kept_counts(&log), vec![5, 6, 7, 4]);
}

#[test]
fn random_draws_blocks_from_seed_42() {
    // spec/policies/random.md#draws: the first three outputs of seed 42
    // start with the bits 00, 01, 10. random, budget 4, recent_window 0,
    // block 2, one position a step: steps 5, 7 and 9 each close a third
    // block and draw Uniform(3) over the three candidate blocks (two
    // bits: 0, 1, 2): step 5 the block of 0 (of 0, 2, 4); step 7 the
    // block of 4 (of 2, 4, 6); step 9 the block of 8 (of 2, 6, 8).
    let p = params(&[("budget", 4), ("recent_window", 0), ("block", 2)]);
    let log = run_scenario("random", &p, 42, &Scenario::Steps(chunks(&[1; 10])));
    assert_eq!(evictions(&log), vec![(5, vec![0, 1]), (7, vec![4, 5]), (9, vec![8, 9])]);
    // recent_window 2: the last closed block is protected, two candidate
    // blocks, Uniform(2) (the top bit: 0, 0, 1): step 5 the block of 0 (of
    // 0, 2); step 7 the block of 2 (of 2, 4); step 9 the block of 6 (of 4,
    // 6).
    let p = params(&[("budget", 4), ("recent_window", 2), ("block", 2)]);
    let log = run_scenario("random", &p, 42, &Scenario::Steps(chunks(&[1; 10])));
    assert_eq!(evictions(&log), vec![(5, vec![0, 1]), (7, vec![2, 3]), (9, vec![6, 7])]);
    // A chunk of 8 closes four blocks, two go: Uniform(4) draws 0 (block
    // of 0 of 0, 2, 4, 6), then Uniform(3) draws 1 among the rest (2, 4,
    // 6): the block of 4.
    let p = params(&[("budget", 4), ("recent_window", 0), ("block", 2)]);
    let log = run_scenario("random", &p, 42, &Scenario::Steps(chunks(&[8])));
    assert_eq!(victims(&log), vec![vec![0, 1, 4, 5]]);
    // A step that evicts nothing draws nothing: five kept (two blocks
    // closed) before the first eviction, which still draws Uniform(3) = 0
    // first.
    let log = run_scenario("random", &p, 42, &Scenario::Steps(chunks(&[5, 1])));
    assert_eq!(victims(&log), vec![vec![], vec![0, 1]]);
}

#[test]
fn tova_protect_newest_at_prefill() {
    // tova, budget 4, recent_window 0, block 2: a prefill step admitting
    // 0..5 with the row of query 5, (0.5, 0.5, 0.25, 0.25, 0, 0). Three
    // blocks closed, one goes; block sums 1.0, 0.5, 0.0. Without
    // protect_newest the block of 4 goes; with it, 5 is not a candidate,
    // so neither is its block, and the block of 2 goes.
    let prompt = |n: u32, w: &[f32]| ScenarioStep::prefill(n, vec![w.to_vec()]);
    let w6 = [0.5, 0.5, 0.25, 0.25, 0.0, 0.0];
    let p = |protect| [("budget", 4), ("recent_window", 0), ("block", 2), ("protect_newest", protect)];
    let plain = run("tova", &p(0), vec![prompt(6, &w6)]);
    assert_eq!(victims(&plain), vec![vec![4, 5]]);
    assert_eq!(plain.steps[0].cut, vec![(4, 0.0), (2, 0.5), (0, 1.0)]);
    let newest = run("tova", &p(1), vec![prompt(6, &w6)]);
    assert_eq!(victims(&newest), vec![vec![2, 3]]);
    assert_eq!(newest.steps[0].cut, vec![(2, 0.5), (0, 1.0)]);
    // A prompt of 7: the newest, 6, is in the open block, and the block
    // of 4 is a candidate again.
    let newest = run("tova", &p(1), vec![prompt(7, &[0.5, 0.5, 0.25, 0.25, 0.0, 0.0, 1.0])]);
    assert_eq!(victims(&newest), vec![vec![4, 5]]);
    assert_eq!(kept_counts(&newest), vec![5]);
}

#[test]
fn snapkv_pools_before_blocks_and_its_window_is_infinite() {
    // snapkv, budget 2, recent_window 0, obs_window 1, pool_kernel 3,
    // block 2. Step 0 admits 0..2 (null; one block closed); step 1 records
    // (0.25, 0.5, 0.125) and admits 3: two blocks closed, one goes. The
    // window sums 0.25, 0.5, 0.125, 0 max-pool to 0.5, 0.5, 0.5, 0.125:
    // block sums 1.0 and 0.625, and the block of 2 goes.
    let steps = vec![ScenarioStep::single(3, None), row(&[0.25, 0.5, 0.125])];
    let p = [("budget", 2), ("recent_window", 0), ("obs_window", 1), ("pool_kernel", 3), ("block", 2)];
    let log = run("snapkv", &p, steps);
    assert_eq!(victims(&log), vec![vec![], vec![2, 3]]);
    assert_eq!(log.steps[1].cut, vec![(2, 0.625), (0, 1.0)]);
    // At prefill (window_budget 0) the window's slots score +infinity and
    // count: pool_kernel 1, a prompt of 4 with the row of query 3,
    // (0.5, 0.25, 0.125, 0): the window is 3, the blocks sum 0.75 and
    // 0.125 + inf; the block of 0 goes. Without blocks 2 and 1 would.
    let prompt = ScenarioStep::prefill(4, vec![vec![0.5, 0.25, 0.125, 0.0]]);
    let p = [("budget", 2), ("recent_window", 0), ("obs_window", 1), ("pool_kernel", 1), ("block", 2)];
    let log = run("snapkv", &p, vec![prompt.clone()]);
    assert_eq!(victims(&log), vec![vec![0, 1]]);
    assert_eq!(log.steps[0].cut, vec![(0, 0.75), (2, f64::INFINITY)]);
    let plain = run("snapkv", &p[..4], vec![prompt]);
    assert_eq!(victims(&plain), vec![vec![1, 2]]);
}

#[test]
fn prefill_only_evicts_blocks_at_prefill_steps() {
    // h2o, budget 2, recent_window 0, block 2, prefill_only 1. Five null
    // decode steps keep 0..4 (nothing goes); a prefill step admits 5 with
    // the row of query 5, (0.25, 0, 0.5, 0.5, 0, 0): three blocks closed,
    // two go. Block sums 0.25, 1.0, 0.0: the blocks of 4 and 0.
    let mut steps = chunks(&[1; 5]);
    steps.push(ScenarioStep::prefill(1, vec![vec![0.25, 0.0, 0.5, 0.5, 0.0, 0.0]]));
    let log = run("h2o", &[("budget", 2), ("recent_window", 0), ("block", 2), ("prefill_only", 1)], steps);
    assert_eq!(victims(&log)[5], vec![0, 1, 4, 5]);
    assert_eq!(log.steps[5].cut, vec![(4, 0.0), (0, 0.25), (2, 1.0)]);
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 2]);
}

#[test]
fn several_kept_sets_have_their_own_blocks() {
    // h2o, budget 2, recent_window 0, block 2, two query heads. Step 0
    // admits 0..2 (null); step 1 records head 0 (0.5, 0.25, 0.125), head
    // 1 (0, 0.25, 0.5) and admits 3: two blocks closed, one goes.
    let steps = vec![
        ScenarioStep::per_head(3, vec![]),
        ScenarioStep::per_head(1, vec![vec![0.5, 0.25, 0.125], vec![0.0, 0.25, 0.5]]),
    ];
    let heads = HeadCounts { query: 2, kv: 1 };
    let base = [("budget", 2), ("recent_window", 0), ("block", 2)];
    // granularity 2, a set per query head: head 0's blocks sum 0.75 and
    // 0.125 (2, 3 go), head 1's 0.25 and 0.5 (0, 1 go).
    let p = params(&[base.as_slice(), &[("granularity", 2)]].concat());
    let log = run_scenario_with_heads("h2o", &p, 0, heads, &Scenario::Steps(steps.clone()));
    let sets = &ok(&log)[1].sets;
    assert_eq!(sets.iter().map(|s| s.victims.clone()).collect::<Vec<_>>(), vec![vec![2, 3], vec![0, 1]]);
    assert_eq!(sets[0].cut, vec![(2, 0.125), (0, 0.75)]);
    assert_eq!(sets[1].cut, vec![(0, 0.25), (2, 0.5)]);
    // granularity 0, one set for the layer (vLLM's page): the heads'
    // mean per slot, 0.25, 0.25, 0.3125, 0, gives blocks 0.5 and 0.3125.
    let p = params(&[base.as_slice(), &[("granularity", 0)]].concat());
    let log = run_scenario_with_heads("h2o", &p, 0, heads, &Scenario::Steps(steps));
    assert_eq!(ok(&log)[1].victims, vec![2, 3]);
    assert_eq!(log.steps[1].cut, vec![(2, 0.3125), (0, 0.5)]);
}

#[test]
fn block_1_changes_nothing() {
    // spec/blocks.md#parameters: with block 1 a block is a position and
    // its score the position's, whatever block_score is.
    let steps = || vec![ScenarioStep::single(4, None), row(&[0.5, 0.0, 0.25, 0.25]), row(&[0.25, 0.0, 0.25, 0.25, 0.25])];
    let base = run("h2o", &[("budget", 3), ("recent_window", 1)], steps());
    assert_eq!(victims(&base), vec![vec![0], vec![1], vec![4]]);
    for block_score in 0..=2 {
        let p = [("budget", 3), ("recent_window", 1), ("block", 1), ("block_score", block_score)];
        assert_eq!(run("h2o", &p, steps()), base, "block_score {block_score}");
    }
    let base = run_scenario("random", &params(&[("budget", 2), ("recent_window", 0)]), 42, &Scenario::Steps(chunks(&[1; 5])));
    let one = run_scenario("random", &params(&[("budget", 2), ("recent_window", 0), ("block", 1)]), 42, &Scenario::Steps(chunks(&[1; 5])));
    assert_eq!(one, base);
    // spec/policies/random.md#draws: 0 (of 0, 1, 2), 2 (of 1, 2, 3), 4.
    assert_eq!(evictions(&one), vec![(2, vec![0]), (3, vec![2]), (4, vec![4])]);
}

#[test]
fn ranges_and_unknown_parameters() {
    for name in ["window", "streamingllm", "h2o", "tova", "snapkv", "random"] {
        assert_eq!(subject(name, &[("block", 0)]).as_deref(), Some("range block"), "{name}");
        assert_eq!(subject(name, &[("block", 65537)]).as_deref(), Some("range block"), "{name}");
        assert_eq!(subject(name, &[("block", 1)]), None, "{name}");
        // Listed after slack and interval: their ranges come first.
        assert_eq!(subject(name, &[("block", 0), ("interval", -1)]).as_deref(), Some("range interval"), "{name}");
        // The top of the range, with budget 65536 and the areas 0.
        let mut top = vec![("budget", 65536), ("block", 65536)];
        top.push(if name == "streamingllm" { ("sinks", 0) } else if name == "window" { ("spans", 0) } else { ("recent_window", 0) });
        assert_eq!(subject(name, &top), None, "{name}");
    }
    for name in ["h2o", "tova", "snapkv"] {
        assert_eq!(subject(name, &[("block_score", 3)]).as_deref(), Some("range block_score"), "{name}");
        assert_eq!(subject(name, &[("block_score", -1)]).as_deref(), Some("range block_score"), "{name}");
        assert_eq!(subject(name, &[("block_score", 2)]), None, "{name}");
        // block before block_score.
        assert_eq!(subject(name, &[("block_score", 3), ("block", 0)]).as_deref(), Some("range block"), "{name}");
    }
    for name in ["window", "streamingllm", "random"] {
        assert_eq!(subject(name, &[("block_score", 0)]).as_deref(), Some("unknown block_score"), "{name}");
    }
    assert_eq!(subject("full", &[("block", 1)]).as_deref(), Some("unknown block"));
    assert_eq!(subject("full", &[("block_score", 0)]).as_deref(), Some("unknown block_score"));
    assert_eq!(subject("window", &[("block", 2), ("block", 2)]).as_deref(), Some("repeated block"));
}

#[test]
fn subjects_of_the_rules() {
    // Rule 1: budget, then recent_window and sinks, multiples of block.
    assert_eq!(subject("window", &[("budget", 5), ("block", 2)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject("window", &[("budget", 6), ("block", 3)]), None);
    assert_eq!(subject("h2o", &[("budget", 4), ("recent_window", 1), ("block", 2)]).as_deref(), Some("rule block recent_window"));
    assert_eq!(subject("tova", &[("budget", 6), ("recent_window", 3), ("block", 4)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject("random", &[("budget", 8), ("recent_window", 2), ("block", 4)]).as_deref(), Some("rule block recent_window"));
    assert_eq!(subject("snapkv", &[("budget", 8), ("recent_window", 4), ("block", 4)]), None);
    assert_eq!(subject("streamingllm", &[("budget", 8), ("sinks", 1), ("block", 2)]).as_deref(), Some("rule block sinks"));
    assert_eq!(subject("streamingllm", &[("budget", 7), ("sinks", 1), ("block", 2)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject("streamingllm", &[("budget", 8), ("sinks", 0), ("block", 8)]), None);
    // The defaults: budget 512, recent_window 16, sinks 4.
    assert_eq!(subject("h2o", &[("block", 16)]), None);
    assert_eq!(subject("h2o", &[("block", 32)]).as_deref(), Some("rule block recent_window"));
    assert_eq!(subject("random", &[("block", 1024)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject("streamingllm", &[("block", 4)]), None);
    assert_eq!(subject("streamingllm", &[("block", 8)]).as_deref(), Some("rule block sinks"));
    // Rule 2: ratio_ppm, adaptive, evict_at, context_shift, window_budget
    // 0, those the policy takes; the first not 0 is named.
    assert_eq!(subject("h2o", &[("budget", 4), ("recent_window", 0), ("ratio_ppm", 5), ("block", 2)]).as_deref(), Some("rule block ratio_ppm"));
    assert_eq!(subject("streamingllm", &[("budget", 8), ("sinks", 2), ("ratio_ppm", 5), ("block", 2)]).as_deref(), Some("rule block ratio_ppm"));
    assert_eq!(subject("tova", &[("budget", 4), ("recent_window", 0), ("adaptive", 1), ("block", 2)]).as_deref(), Some("rule block adaptive"));
    assert_eq!(subject("snapkv", &[("budget", 4), ("recent_window", 0), ("adaptive", 1), ("block", 2)]).as_deref(), Some("rule block adaptive"));
    assert_eq!(subject("window", &[("budget", 4), ("evict_at", 1), ("block", 2)]).as_deref(), Some("rule block evict_at"));
    assert_eq!(subject("streamingllm", &[("budget", 8), ("sinks", 2), ("evict_at", 2), ("block", 2)]).as_deref(), Some("rule block evict_at"));
    assert_eq!(subject("window", &[("budget", 4), ("context_shift", 1), ("block", 2)]).as_deref(), Some("rule block context_shift"));
    assert_eq!(subject("streamingllm", &[("budget", 8), ("sinks", 2), ("context_shift", 1), ("block", 2)]).as_deref(), Some("rule block context_shift"));
    assert_eq!(subject("snapkv", &[("budget", 4), ("recent_window", 0), ("window_budget", 1), ("block", 2)]).as_deref(), Some("rule block window_budget"));
    // Rule 2 in order: ratio_ppm before window_budget (the earlier rules
    // refuse every other pair).
    assert_eq!(
        subject("snapkv", &[("budget", 4), ("recent_window", 0), ("window_budget", 1), ("ratio_ppm", 5), ("block", 2)]).as_deref(),
        Some("rule block ratio_ppm")
    );
    // Rule 1 before rule 2.
    assert_eq!(subject("h2o", &[("budget", 5), ("recent_window", 0), ("ratio_ppm", 5), ("block", 2)]).as_deref(), Some("rule block budget"));
    assert_eq!(subject("window", &[("budget", 3), ("evict_at", 1), ("block", 2)]).as_deref(), Some("rule block budget"));
    // With block 1 none of them.
    assert_eq!(subject("h2o", &[("budget", 5), ("recent_window", 1), ("ratio_ppm", 5)]).as_deref(), Some("rule ratio_ppm recent_window"));
    assert_eq!(subject("window", &[("budget", 5), ("evict_at", 1), ("block", 1)]), None);
    assert_eq!(subject("snapkv", &[("budget", 5), ("recent_window", 0), ("window_budget", 1), ("block", 1)]), None);
    // After every other rule of the card: its own, prefill.md's,
    // spans.md's, the context shift's, triggers.md's.
    assert_eq!(subject("h2o", &[("budget", 4), ("recent_window", 4), ("block", 3)]).as_deref(), Some("rule recent_window budget"));
    assert_eq!(subject("streamingllm", &[("budget", 4), ("sinks", 4), ("block", 3)]).as_deref(), Some("rule sinks budget"));
    assert_eq!(subject("snapkv", &[("budget", 5), ("recent_window", 0), ("pool_kernel", 4), ("block", 2)]).as_deref(), Some("rule pool_kernel"));
    assert_eq!(subject("tova", &[("budget", 5), ("recent_window", 1), ("ratio_ppm", 5), ("block", 2)]).as_deref(), Some("rule ratio_ppm recent_window"));
    assert_eq!(subject("h2o", &[("budget", 5), ("recent_window", 0), ("adaptive", 1), ("prefill_only", 1), ("block", 2)]).as_deref(), Some("rule adaptive prefill_only"));
    assert_eq!(subject("window", &[("budget", 5), ("span_window", 2), ("span_chunk", 2), ("block", 2)]).as_deref(), Some("rule span_window span_chunk"));
    assert_eq!(subject("window", &[("budget", 5), ("discard", 1), ("block", 2)]).as_deref(), Some("rule discard context_shift"));
    assert_eq!(subject("window", &[("budget", 1), ("context_shift", 1), ("block", 2)]).as_deref(), Some("rule context_shift budget"));
    assert_eq!(subject("window", &[("budget", 5), ("slack", 1), ("interval", 1), ("block", 2)]).as_deref(), Some("rule slack interval"));
    assert_eq!(subject("window", &[("budget", 4), ("slack", 1), ("evict_at", 1), ("block", 2)]).as_deref(), Some("rule slack evict_at"));
    assert_eq!(subject("random", &[("budget", 5), ("recent_window", 5), ("block", 2)]).as_deref(), Some("rule recent_window budget"));
    // What combines: triggers, prefill_only, spans, heads, block_score.
    assert_eq!(subject("window", &[("budget", 4), ("slack", 3), ("block", 2)]), None);
    assert_eq!(subject("random", &[("budget", 4), ("recent_window", 2), ("interval", 3), ("block", 2)]), None);
    assert_eq!(subject("h2o", &[("budget", 4), ("recent_window", 0), ("prefill_only", 1), ("block", 2), ("block_score", 1)]), None);
    assert_eq!(subject("window", &[("budget", 4), ("spans", 1), ("span_window", 3), ("position_ids", 1), ("block", 2)]), None);
    assert_eq!(subject("snapkv", &[("budget", 8), ("recent_window", 4), ("pooling", 1), ("granularity", 0), ("block", 4), ("block_score", 2)]), None);
    assert_eq!(subject("tova", &[("budget", 4), ("recent_window", 0), ("protect_newest", 1), ("block", 2)]), None);
}
