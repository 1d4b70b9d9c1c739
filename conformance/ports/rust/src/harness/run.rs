//! A whole scenario (`RunScenario`; spec/harness.md#scenarios): the
//! configuration first (spec/harness.md#configuration, step -1), then each
//! step, checked (`refusals.rs`) and run, in step order; a refusal ends the log
//! (spec/harness.md#refusals). Explicit steps run through `Layer`
//! (`several_sets.rs`), a trace of one head through `Engine` (`one_set.rs`),
//! a trace of several heads with one generator per query head
//! (spec/trace.md#several-heads).

use super::log::{EvictionLog, Rejection};
use super::one_set::Engine;
use super::refusals::{check_explicit_step, StepShape};
use super::scenario::Scenario;
use super::several_sets::Layer;
use crate::error::Refusal;
use crate::heads::HeadCounts;
use crate::registry;
use crate::tensors::check_needs;
use crate::trace::{TraceGenerator, TraceParams};

/// Run a policy configuration over a single-head scenario (`RunScenario`).
/// Never fails: a refusal ends the log.
pub fn run_scenario(name: &str, params: &[(String, i64)], seed: u64, scenario: &Scenario) -> EvictionLog {
    run_scenario_with_heads(name, params, seed, HeadCounts::ONE, scenario)
}

/// Run a policy configuration over a scenario with validated head counts
/// (spec/heads.md#head-counts; the caller checked them after the
/// scenario's shape) and without keys. Never fails: a refusal ends the log.
pub fn run_scenario_with_heads(
    name: &str,
    params: &[(String, i64)],
    seed: u64,
    heads: HeadCounts,
    scenario: &Scenario,
) -> EvictionLog {
    run_scenario_with_keys(name, params, seed, heads, None, scenario)
}

/// Run a policy configuration over a scenario with validated head counts
/// and `head_dim` (`None`: a scenario without keys) and without values.
/// Never fails: a refusal ends the log.
pub fn run_scenario_with_keys(
    name: &str,
    params: &[(String, i64)],
    seed: u64,
    heads: HeadCounts,
    head_dim: Option<u32>,
    scenario: &Scenario,
) -> EvictionLog {
    run_scenario_with_tensors(name, params, seed, heads, head_dim, None, scenario)
}

/// Run a policy configuration over a scenario with validated head counts,
/// `head_dim` and `value_dim` (`None`: a scenario without keys, values;
/// the caller checked spec/tensors.md#checks' scenario checks after the
/// head counts, as `protocol.rs` does, so a trace comes with `None`). A
/// policy whose keys or values are missing or too short (over steps or a
/// trace) is refused here all the same (`INVALID_HEADS` `range head_dim`
/// or `range value_dim`, step -1), for a caller that did not check. Never
/// fails: a refusal ends the log.
pub fn run_scenario_with_tensors(
    name: &str,
    params: &[(String, i64)],
    seed: u64,
    heads: HeadCounts,
    head_dim: Option<u32>,
    value_dim: Option<u32>,
    scenario: &Scenario,
) -> EvictionLog {
    let mut log = EvictionLog::default();
    let refuse = |log: &mut EvictionLog, refusal: Refusal, step: i32| {
        log.rejection = Some(Rejection { refusal, step });
    };
    // spec/tensors.md#checks, 1.5 and 1.6: a policy that reads keys
    // (values) needs head_dim (value_dim), which a trace never has.
    if let Ok(policy) = registry::build(name, params, seed) {
        if let Err(refusal) = check_needs(head_dim, value_dim, policy.tensor_needs()) {
            refuse(&mut log, refusal, -1);
            return log;
        }
    }
    match scenario {
        Scenario::Steps(steps) => {
            let mut layer = match Layer::build(name, params, seed, heads) {
                Ok(l) => l,
                Err(refusal) => {
                    refuse(&mut log, refusal, -1);
                    return log;
                }
            };
            let shape = StepShape { hq: heads.query as usize, hkv: heads.kv, head_dim, value_dim };
            let mut next: u64 = 0;
            for (index, step) in steps.iter().enumerate() {
                match check_explicit_step(next, step, shape) {
                    Ok(checked) => log.steps.push(layer.step(next, step.admit as u64, &checked)),
                    Err(refusal) => {
                        refuse(&mut log, refusal, index as i32);
                        return log;
                    }
                }
                next += step.admit as u64;
            }
        }
        Scenario::Trace(params_t) if heads != HeadCounts::ONE => {
            let mut layer = match Layer::build(name, params, seed, heads) {
                Ok(l) => l,
                Err(refusal) => {
                    refuse(&mut log, refusal, -1);
                    return log;
                }
            };
            run_multi_head_trace(&mut layer, params_t, heads, &mut log);
        }
        Scenario::Trace(params_t) => {
            // One head: the single-head trace, exactly as before heads
            // existed (spec/trace.md#several-heads, head 0).
            let policy = match registry::build(name, params, seed) {
                Ok(p) => p,
                Err(refusal) => {
                    refuse(&mut log, refusal, -1);
                    return log;
                }
            };
            let mut engine = Engine::new(policy);
            let mut gen = TraceGenerator::new(params_t.clone());
            let mut gathered: Vec<f32> = Vec::new();
            for t in 0..params_t.steps as u64 {
                gen.begin_step(t);
                gathered.clear();
                gathered.extend(engine.kept().iter().map(|&p| gen.weight(p as u64)));
                match engine.step(t, 1, Some(&gathered)) {
                    Ok(rec) => log.steps.push(rec),
                    Err(refusal) => {
                        refuse(&mut log, refusal, t as i32);
                        return log;
                    }
                }
            }
        }
    }
    log
}

/// A generated trace of several heads (spec/trace.md#several-heads): query
/// head `h` has its own generator, of `params.for_head(h)` (head 0 is the
/// trace itself), streamed as one head's is (spec/trace.md#streaming). Step
/// `t` admits position `t`, and each set records each of its heads' weights
/// at the set's own kept positions. Generated weights are valid by
/// construction and positions stay below 2^31, so no step is refused.
/// A policy that reads no attention builds no generator: its one set
/// records nothing.
fn run_multi_head_trace(layer: &mut Layer, params: &TraceParams, heads: HeadCounts, log: &mut EvictionLog) {
    let mut gens: Vec<TraceGenerator> = if layer.reads_attention() {
        (0..heads.query).map(|h| TraceGenerator::new(params.for_head(h))).collect()
    } else {
        Vec::new()
    };
    for t in 0..params.steps as u64 {
        let record = if gens.is_empty() {
            layer.step_with(t, 1, None::<&fn(usize, u32) -> f32>, (None, None))
        } else {
            for g in &mut gens {
                g.begin_step(t);
            }
            let gens = &gens;
            layer.step_with(t, 1, Some(&|h: usize, p: u32| gens[h].weight(p as u64)), (None, None))
        };
        log.steps.push(record);
    }
}
