//! spec/triggers.md through whole scenarios: its two examples
//! (spec/triggers.md#slack, spec/triggers.md#interval), the firing rule
//! worked by hand (a chunk firing out of turn, a prefill step restarting the
//! count, scores accumulating between firings, `random` drawing only when
//! it evicts, several kept sets counting alike) and the rules' subjects
//! (spec/triggers.md#combinations, spec/harness.md#configuration).

use crate::harness::{run_scenario, run_scenario_with_heads, Engine, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::registry;
use crate::spans::HeldRun;

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

/// The subject as spec/harness.md#subjects writes it ("rule slack
/// interval"); `None` when the configuration is accepted.
fn subject(name: &str, p: &[(&str, i64)]) -> Option<String> {
    registry::build(name, &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

#[test]
fn slack_example_window_bulk() {
    // spec/triggers.md#slack: window, budget 3, slack 2, one position a
    // step from 0. Step 5 keeps six (6 > 5) and evicts 0, 1, 2; steps 6
    // and 7 keep four and five; step 8 keeps six and evicts 3, 4, 5.
    let log = run("window", &[("budget", 3), ("slack", 2)], chunks(&[1; 9]));
    let none = Vec::<u32>::new;
    assert_eq!(
        victims(&log),
        vec![none(), none(), none(), none(), none(), vec![0, 1, 2], none(), none(), vec![3, 4, 5]]
    );
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 3, 4, 5, 3]);
    // The record as always: the number kept when the step starts, above
    // the budget between firings.
    let before: Vec<u32> = log.steps.iter().map(|s| s.query_cache_position).collect();
    assert_eq!(before, vec![0, 1, 2, 3, 4, 5, 3, 4, 5]);
    // Without slack, step 3 evicts 0, step 4 position 1, and so on.
    let plain = run("window", &[("budget", 3), ("slack", 0)], chunks(&[1; 6]));
    assert_eq!(victims(&plain), vec![none(), none(), none(), vec![0], vec![1], vec![2]]);
}

#[test]
fn slack_example_through_a_direct_call() {
    // The same example through `Engine` (the path of a single-head trace).
    let mut e = Engine::new(registry::build("window", &params(&[("budget", 3), ("slack", 2)]), 0).unwrap());
    let victims: Vec<Vec<u32>> = (0..9).map(|t| e.step(t, 1, None).unwrap().victims).collect();
    assert_eq!(victims[5], vec![0, 1, 2]);
    assert_eq!(victims[8], vec![3, 4, 5]);
    assert_eq!(victims.iter().filter(|v| !v.is_empty()).count(), 2);
    assert_eq!(e.kept(), &[6, 7, 8]);
}

#[test]
fn interval_example_restart_empty() {
    // spec/triggers.md#interval, vector triggers/interval/restart-empty:
    // window, budget 4, interval 3, one position a step from 0. Step 2
    // fires with three kept (count 3) and evicts nothing; steps 3 and 4
    // count 1 and 2; step 5 fires with six kept and evicts 0 and 1. Then
    // steps 6, 7 count 1, 2, and step 8 fires with seven kept.
    let log = run("window", &[("budget", 4), ("interval", 3)], chunks(&[1; 9]));
    let none = Vec::<u32>::new;
    assert_eq!(
        victims(&log),
        vec![none(), none(), none(), none(), none(), vec![0, 1], none(), none(), vec![2, 3, 4]]
    );
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 4, 5, 4, 5, 6, 4]);
}

#[test]
fn a_chunk_of_budget_fires_out_of_turn() {
    // window, budget 4, interval 3. Step 0 admits 1 (count 1); step 1
    // admits 4 >= budget and fires at count 2: five kept, 0 goes, and the
    // count returns to 0. Steps 2, 3 count 1, 2; step 4 fires at count 3
    // with seven kept (1..7) and evicts 1, 2, 3.
    let log = run("window", &[("budget", 4), ("interval", 3)], chunks(&[1, 4, 1, 1, 1]));
    assert_eq!(victims(&log), vec![vec![], vec![0], vec![], vec![], vec![1, 2, 3]]);
    assert_eq!(kept_counts(&log), vec![1, 4, 5, 6, 4]);
    // A first chunk of exactly budget fires and evicts nothing, yet
    // restarts the count: the next firing is the third step after it.
    let log = run("window", &[("budget", 4), ("interval", 3)], chunks(&[4, 1, 1, 1]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![0, 1, 2]]);
    // A chunk of budget - 1 counts as one step and fires only in turn:
    // steps 0, 1 count 1, 2 (six kept after step 1, nothing goes); step 2
    // fires at count 3 with seven kept.
    let log = run("window", &[("budget", 4), ("interval", 3)], chunks(&[3, 3, 1, 1]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0, 1, 2], vec![]]);
    assert_eq!(kept_counts(&log), vec![3, 6, 4, 5]);
    // With slack a chunk fires only by the kept count: budget 4, slack 3
    // keeps seven after a chunk of 4 + 3, and a chunk of 8 fires.
    let log = run("window", &[("budget", 4), ("slack", 3)], chunks(&[4, 3, 1]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0, 1, 2, 3]]);
    let log = run("window", &[("budget", 4), ("slack", 3)], chunks(&[8]));
    assert_eq!(victims(&log), vec![vec![0, 1, 2, 3]]);
}

#[test]
fn null_attention_counts() {
    // h2o, budget 2, recent_window 0, interval 2: the null steps 0 and 2
    // count as any other, so steps 1 and 3 fire.
    let log = run("h2o", &[("budget", 2), ("recent_window", 0), ("interval", 2)], chunks(&[1, 1, 1, 1]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![0, 1]]);
}

#[test]
fn a_prefill_step_restarts_the_count() {
    // window, budget 4, interval 3. Decode steps 0, 1 count 1, 2; step 2
    // is a prefill step admitting 2, 3, 4 with one query row: it evicts
    // by the budget (five kept: 0 goes) and sets the count to 0. Steps 3,
    // 4 count 1, 2 (without the reset step 3 would have fired); step 5
    // fires with seven kept (1..7) and evicts 1, 2, 3.
    let mut steps = chunks(&[1, 1]);
    steps.push(ScenarioStep::prefill(3, vec![vec![0.25; 5]]));
    steps.extend(chunks(&[1, 1, 1]));
    let log = run("window", &[("budget", 4), ("interval", 3)], steps);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![0], vec![], vec![], vec![1, 2, 3]]);
    assert_eq!(kept_counts(&log), vec![1, 2, 4, 5, 6, 4]);
    // Slack leaves a prefill step alone too: budget 3, slack 2, a prompt
    // of 5 (not above 5) is cut to 3 at once.
    let log = run("window", &[("budget", 3), ("slack", 2)], vec![ScenarioStep::prefill(5, vec![vec![0.25; 5]])]);
    assert_eq!(victims(&log), vec![vec![0, 1]]);
}

#[test]
fn h2o_sums_accumulate_between_firings() {
    // h2o, budget 2, recent_window 1, interval 2. Step 0 (null) counts 1;
    // step 1 records 1.0 at 0, fires with two kept and evicts nothing;
    // step 2 records (0.25, 0.5), counts 1, keeps three; step 3 records
    // (0.125, 0.25, 0.5) and fires with four kept: sums 0: 1.375, 1: 0.75,
    // 2: 0.5, and 3 (the recent window) is protected: 2 and 1 go. Had only
    // the firing step's row counted, 0 (0.125) and 1 (0.25) would go.
    let steps = vec![ScenarioStep::single(1, None), row(&[1.0]), row(&[0.25, 0.5]), row(&[0.125, 0.25, 0.5])];
    let log = run("h2o", &[("budget", 2), ("recent_window", 1), ("interval", 2)], steps.clone());
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![1, 2]]);
    assert_eq!(log.steps[3].cut, vec![(2, 0.5), (1, 0.75), (0, 1.375)]);
    assert_eq!(kept_counts(&log), vec![1, 2, 3, 2]);
    // A step that does not fire logs no cut.
    assert!(log.steps[2].cut.is_empty());
    // The same with slack 1: step 2 keeps three (not above 3), step 3
    // keeps four and fires.
    let log = run("h2o", &[("budget", 2), ("recent_window", 1), ("slack", 1)], steps);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![1, 2]]);
}

#[test]
fn tova_ranks_by_the_firing_steps_row() {
    // tova, budget 2, recent_window 0, slack 1. Step 3 fires with four
    // kept: latest weights (0.5, 0.0, 0.25) from its own row and 0.0 for
    // the new 3: 1 and 3 tie at 0.0 and go (lowest score, then position).
    let steps = vec![row(&[]), row(&[1.0]), row(&[0.0, 1.0]), row(&[0.5, 0.0, 0.25])];
    let log = run("tova", &[("budget", 2), ("recent_window", 0), ("slack", 1)], steps);
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![1, 3]]);
    assert_eq!(log.steps[3].cut, vec![(1, 0.0), (3, 0.0), (2, 0.25), (0, 0.5)]);
}

#[test]
fn random_draws_only_when_it_evicts() {
    // random, budget 2, recent_window 0, slack 2: steps 0..3 keep 1..4
    // and draw nothing; step 4 keeps five and evicts three, drawing
    // Uniform(5), Uniform(4), Uniform(3) from a fresh Rng: the draws of a
    // first chunk of 5 without slack. Steps 5, 6 keep three, four; step 7
    // keeps five (the same kept set as the chunk run's second step) and
    // draws the next three.
    for seed in [0u64, 1, 7, 12345] {
        let trig = run_scenario("random", &params(&[("budget", 2), ("recent_window", 0), ("slack", 2)]), seed, &Scenario::Steps(chunks(&[1; 8])));
        let bulk = run_scenario("random", &params(&[("budget", 2), ("recent_window", 0)]), seed, &Scenario::Steps(chunks(&[5, 3])));
        let t = victims(&trig);
        let b = victims(&bulk);
        assert!(t[..4].iter().chain(&t[5..7]).all(Vec::is_empty), "seed {seed}");
        assert_eq!(t[4], b[0], "seed {seed}");
        assert_eq!(t[7], b[1], "seed {seed}");
        assert_eq!(t[4].len(), 3);
    }
}

#[test]
fn streamingllm_keeps_its_sinks_at_a_firing() {
    // streamingllm, budget 4, sinks 1, interval 2: steps 1 and 3 fire
    // with two and four kept (nothing goes); step 5 fires with six: 1 and
    // 2 go, the sink stays.
    let log = run("streamingllm", &[("budget", 4), ("sinks", 1), ("interval", 2)], chunks(&[1; 6]));
    assert_eq!(victims(&log), vec![vec![], vec![], vec![], vec![], vec![], vec![1, 2]]);
}

#[test]
fn spans_see_the_larger_held_set() {
    // window, budget 2, slack 1, spans 1, position_ids 1: step 2 keeps
    // three and does not fire; its held set 0..2 has cache-relative ids up
    // to its size.
    let log = run("window", &[("budget", 2), ("spans", 1), ("position_ids", 1), ("slack", 1)], chunks(&[1; 4]));
    assert_eq!(ok(&log)[2].held, vec![HeldRun { first: 0, last: 2, id: 0 }]);
    assert_eq!(log.steps[3].held, vec![HeldRun { first: 0, last: 3, id: 0 }]);
    assert_eq!(victims(&log)[3], vec![0, 1]);
}

#[test]
fn several_kept_sets_count_alike() {
    // h2o, budget 2, recent_window 0, interval 2, two query heads with a
    // set each (granularity 2, query_head). Both sets fire at steps 1
    // (two kept: nothing) and 3 (four kept), each ranking its own sums:
    // head 0: 1.375, 0.75, 0.5, 0.0 -> 2, 3; head 1: 1.0, 0.25, 1.0, 0.0
    // -> 3, then 1.
    let steps = vec![
        ScenarioStep::per_head(1, vec![]),
        ScenarioStep::per_head(1, vec![vec![1.0], vec![0.5]]),
        ScenarioStep::per_head(1, vec![vec![0.25, 0.5], vec![0.5, 0.25]]),
        ScenarioStep::per_head(1, vec![vec![0.125, 0.25, 0.5], vec![0.0, 0.0, 1.0]]),
    ];
    let p = params(&[("budget", 2), ("recent_window", 0), ("granularity", 2), ("interval", 2)]);
    let log = run_scenario_with_heads("h2o", &p, 0, HeadCounts { query: 2, kv: 1 }, &Scenario::Steps(steps));
    let sets: Vec<Vec<Vec<u32>>> = ok(&log).iter().map(|s| s.sets.iter().map(|r| r.victims.clone()).collect()).collect();
    let none = Vec::<u32>::new;
    assert_eq!(sets, vec![vec![none(), none()], vec![none(), none()], vec![none(), none()], vec![vec![2, 3], vec![1, 3]]]);
    assert!(log.steps[2].sets.iter().all(|s| s.kept_count == 3));
}

#[test]
fn subjects_of_the_rules() {
    // spec/triggers.md#combinations, rule 1, on every policy that takes them.
    for name in ["window", "streamingllm", "h2o", "tova", "snapkv", "random"] {
        assert_eq!(subject(name, &[("slack", 1), ("interval", 1)]).as_deref(), Some("rule slack interval"), "{name}");
        assert_eq!(subject(name, &[("slack", 4294967295)]), None, "{name}");
        assert_eq!(subject(name, &[("interval", 4294967295)]), None, "{name}");
        assert_eq!(subject(name, &[("slack", 4294967296)]).as_deref(), Some("range slack"), "{name}");
        assert_eq!(subject(name, &[("interval", -1)]).as_deref(), Some("range interval"), "{name}");
    }
    // `full` does not take them.
    assert_eq!(subject("full", &[("slack", 1)]).as_deref(), Some("unknown slack"));
    assert_eq!(subject("full", &[("interval", 0)]).as_deref(), Some("unknown interval"));
    // Rule 2: slack, or else interval, and the first of prefill_only,
    // adaptive, evict_at, context_shift the policy takes that is not 0.
    assert_eq!(subject("streamingllm", &[("slack", 1), ("prefill_only", 1)]).as_deref(), Some("rule slack prefill_only"));
    assert_eq!(subject("h2o", &[("interval", 2), ("prefill_only", 1)]).as_deref(), Some("rule interval prefill_only"));
    assert_eq!(subject("h2o", &[("recent_window", 0), ("slack", 1), ("adaptive", 1)]).as_deref(), Some("rule slack adaptive"));
    assert_eq!(subject("tova", &[("interval", 2), ("adaptive", 1)]).as_deref(), Some("rule interval adaptive"));
    assert_eq!(subject("snapkv", &[("interval", 2), ("adaptive", 1)]).as_deref(), Some("rule interval adaptive"));
    assert_eq!(subject("window", &[("slack", 1), ("evict_at", 1)]).as_deref(), Some("rule slack evict_at"));
    assert_eq!(subject("streamingllm", &[("interval", 3), ("evict_at", 2)]).as_deref(), Some("rule interval evict_at"));
    assert_eq!(subject("window", &[("slack", 1), ("context_shift", 1)]).as_deref(), Some("rule slack context_shift"));
    assert_eq!(
        subject("streamingllm", &[("budget", 8), ("sinks", 2), ("interval", 1), ("context_shift", 1)]).as_deref(),
        Some("rule interval context_shift")
    );
    // Checked after every other rule of the card: its own, prefill.md's,
    // spans.md's (and the context shift's).
    assert_eq!(subject("h2o", &[("budget", 4), ("recent_window", 4), ("slack", 1), ("interval", 1)]).as_deref(), Some("rule recent_window budget"));
    assert_eq!(subject("streamingllm", &[("budget", 4), ("sinks", 4), ("slack", 1), ("interval", 1)]).as_deref(), Some("rule sinks budget"));
    assert_eq!(subject("snapkv", &[("pool_kernel", 4), ("slack", 1), ("interval", 1)]).as_deref(), Some("rule pool_kernel"));
    assert_eq!(subject("tova", &[("slack", 1), ("adaptive", 1), ("prefill_only", 1)]).as_deref(), Some("rule adaptive prefill_only"));
    assert_eq!(subject("streamingllm", &[("slack", 1), ("evict_at", 1), ("prefill_only", 1)]).as_deref(), Some("rule evict_at prefill_only"));
    assert_eq!(subject("window", &[("slack", 1), ("interval", 1), ("span_window", 2), ("span_chunk", 2)]).as_deref(), Some("rule span_window span_chunk"));
    assert_eq!(subject("window", &[("slack", 1), ("interval", 1), ("discard", 1)]).as_deref(), Some("rule discard context_shift"));
    assert_eq!(subject("tova", &[("recent_window", 1), ("slack", 1), ("ratio_ppm", 5)]).as_deref(), Some("rule ratio_ppm recent_window"));
    // Ranges in card order, before any rule: slack and interval come last.
    assert_eq!(subject("window", &[("slack", -1), ("budget", 0)]).as_deref(), Some("range budget"));
    assert_eq!(subject("h2o", &[("interval", -1), ("slack", -1)]).as_deref(), Some("range slack"));
    assert_eq!(subject("snapkv", &[("interval", -1), ("window_budget", 2)]).as_deref(), Some("range window_budget"));
    assert_eq!(subject("random", &[("interval", -1), ("recent_window", -1)]).as_deref(), Some("range recent_window"));
    assert_eq!(subject("window", &[("interval", 1), ("slack", 1), ("bogus", 1)]).as_deref(), Some("unknown bogus"));
    assert_eq!(subject("window", &[("slack", 1), ("slack", 1)]).as_deref(), Some("repeated slack"));
    // What combines as it is: ratio_ppm, window_budget, the span
    // parameters other than evict_at and context_shift.
    assert_eq!(subject("streamingllm", &[("slack", 1), ("ratio_ppm", 500000)]), None);
    assert_eq!(subject("h2o", &[("recent_window", 0), ("interval", 2), ("ratio_ppm", 500000)]), None);
    assert_eq!(subject("snapkv", &[("slack", 1), ("window_budget", 1)]), None);
    assert_eq!(subject("window", &[("interval", 2), ("spans", 1), ("span_window", 3), ("position_ids", 1)]), None);
    assert_eq!(subject("h2o", &[("slack", 1), ("granularity", 2), ("aggregation", 1)]), None);
}
