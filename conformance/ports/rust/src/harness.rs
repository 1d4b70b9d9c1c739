//! The decode loop every policy runs in: steps, validation and refusals,
//! gathering, admission, eviction and the eviction log.
//! Spec: spec/harness.md.

use crate::error::{Category, Refusal, Result};
use crate::policies::{self, Policy};
use crate::trace::{TraceGenerator, TraceParams};

/// The highest position (spec/harness.md#positions).
pub const MAX_POSITION: u64 = u32::MAX as u64;

/// What one step did (spec/harness.md#eviction-log).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepRecord {
    /// Evicted positions, ascending.
    pub victims: Vec<u32>,
    pub kept_count: u32,
    pub query_cache_position: u32,
    /// Score-based policies: (position, score) in rank order
    /// (spec/vectors.md#the-cut). Empty otherwise.
    pub cut: Vec<(u32, f64)>,
}

/// A refusal and where it happened: `step` is -1 for the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    pub refusal: Refusal,
    pub step: i32,
}

/// The eviction log of a scenario run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvictionLog {
    pub steps: Vec<StepRecord>,
    pub rejection: Option<Rejection>,
}

/// Is a weight accepted? Finite with its sign bit clear
/// (spec/harness.md#attention-weights).
#[inline]
pub fn weight_accepted(w: f32) -> bool {
    w.is_finite() && !w.is_sign_negative()
}

fn check_weights(weights: &[f32]) -> Result<()> {
    for (i, &w) in weights.iter().enumerate() {
        if !weight_accepted(w) {
            return Err(Refusal::new(
                Category::AttentionValue,
                format!("attention weight {i} is {w} ({:#010x}); weights must be finite and non-negative", w.to_bits()),
            ));
        }
    }
    Ok(())
}

/// One policy and the positions it keeps (`Policy::Step` in the spec).
pub struct Engine {
    policy: Box<dyn Policy>,
    kept: Vec<u32>,
    /// The lowest position the next step may admit.
    next: u64,
}

impl Engine {
    pub fn new(policy: Box<dyn Policy>) -> Self {
        Engine { policy, kept: Vec::new(), next: 0 }
    }

    pub fn kept(&self) -> &[u32] {
        &self.kept
    }

    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// One step admitting `count` positions from `first`, with `attention`
    /// over the kept positions in kept order (or null). Validated first, in
    /// the order of spec/harness.md#refusals (called directly); a refused
    /// step changes nothing.
    pub fn step(&mut self, first: u64, count: u64, attention: Option<&[f32]>) -> Result<StepRecord> {
        if count == 0 {
            return Err(Refusal::new(Category::Position, "a step must admit at least one position"));
        }
        if first < self.next {
            return Err(Refusal::new(
                Category::Position,
                format!("position {first} is not above every position admitted before"),
            ));
        }
        if first + (count - 1) > MAX_POSITION {
            return Err(Refusal::new(Category::Position, "positions run past 2^32 - 1"));
        }
        if let Some(a) = attention {
            if a.len() != self.kept.len() {
                return Err(Refusal::new(
                    Category::AttentionLength,
                    format!("attention has {} weights, {} positions are kept", a.len(), self.kept.len()),
                ));
            }
            check_weights(a)?;
        }
        let query_cache_position = self.kept.len() as u32;
        // 1. Record.
        if let Some(a) = attention {
            self.policy.record(a);
        }
        // 2. Admit.
        for p in first..first + count {
            self.kept.push(p as u32);
        }
        self.policy.admit(count as usize);
        self.next = first + count;
        // 3. Evict.
        let mut record = StepRecord { query_cache_position, ..Default::default() };
        if let Some(budget) = self.policy.budget() {
            let n = self.kept.len() as u64;
            if n > budget {
                let k = (n - budget) as usize;
                let sel = self.policy.choose_victims(&self.kept, k);
                assert_eq!(sel.victims.len(), k, "{} chose the wrong number of victims", self.policy.name());
                record.cut = sel.cut.iter().map(|&(slot, s)| (self.kept[slot], s)).collect();
                let mut evicted = vec![false; self.kept.len()];
                for &slot in &sel.victims {
                    evicted[slot] = true;
                }
                self.policy.remove(&evicted);
                let mut w = 0;
                for slot in 0..self.kept.len() {
                    if evicted[slot] {
                        record.victims.push(self.kept[slot]);
                    } else {
                        self.kept[w] = self.kept[slot];
                        w += 1;
                    }
                }
                self.kept.truncate(w);
            }
        }
        record.kept_count = self.kept.len() as u32;
        Ok(record)
    }
}

/// One step of an explicit scenario: how many it admits and its full-cache
/// row (`None` is null attention).
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioStep {
    pub admit: u32,
    pub row: Option<Vec<f32>>,
}

/// A scenario: explicit steps or a generated trace (spec/harness.md#scenarios).
#[derive(Clone, Debug, PartialEq)]
pub enum Scenario {
    Steps(Vec<ScenarioStep>),
    Trace(TraceParams),
}

/// Run a policy configuration over a scenario (`RunScenario`). Never fails:
/// a refusal ends the log.
pub fn run_scenario(name: &str, params: &[(String, i64)], seed: u64, scenario: &Scenario) -> EvictionLog {
    let mut log = EvictionLog::default();
    let policy = match policies::build(name, params, seed) {
        Ok(p) => p,
        Err(refusal) => {
            log.rejection = Some(Rejection { refusal, step: -1 });
            return log;
        }
    };
    let mut engine = Engine::new(policy);
    match scenario {
        Scenario::Steps(steps) => {
            let mut next: u64 = 0;
            let mut gathered: Vec<f32> = Vec::new();
            for (index, step) in steps.iter().enumerate() {
                match run_explicit_step(&mut engine, next, step, &mut gathered) {
                    Ok(rec) => log.steps.push(rec),
                    Err(refusal) => {
                        log.rejection = Some(Rejection { refusal, step: index as i32 });
                        return log;
                    }
                }
                next += step.admit as u64;
            }
        }
        Scenario::Trace(params) => {
            let mut gen = TraceGenerator::new(params.clone());
            let mut gathered: Vec<f32> = Vec::new();
            for t in 0..params.steps as u64 {
                gen.begin_step(t);
                gathered.clear();
                gathered.extend(engine.kept().iter().map(|&p| gen.weight(p as u64)));
                match engine.step(t, 1, Some(&gathered)) {
                    Ok(rec) => log.steps.push(rec),
                    Err(refusal) => {
                        log.rejection = Some(Rejection { refusal, step: t as i32 });
                        return log;
                    }
                }
            }
        }
    }
    log
}

/// Checks of spec/harness.md#refusals through a scenario, then gathers
/// `row[kept[i]]` (spec/harness.md#what-a-policy-sees) and steps.
fn run_explicit_step(engine: &mut Engine, first: u64, step: &ScenarioStep, gathered: &mut Vec<f32>) -> Result<StepRecord> {
    if step.admit == 0 {
        return Err(Refusal::new(Category::Position, "a step must admit at least one position"));
    }
    if first + (step.admit as u64 - 1) > MAX_POSITION {
        return Err(Refusal::new(Category::Position, "positions run past 2^32 - 1"));
    }
    match &step.row {
        None => engine.step(first, step.admit as u64, None),
        Some(row) => {
            if row.len() as u64 != first {
                return Err(Refusal::new(
                    Category::AttentionLength,
                    format!("the row has {} weights, {} positions were admitted before the step", row.len(), first),
                ));
            }
            check_weights(row)?;
            gathered.clear();
            gathered.extend(engine.kept().iter().map(|&p| row[p as usize]));
            engine.step(first, step.admit as u64, Some(gathered))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
        v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
    }

    fn singles(rows: &[&[f32]]) -> Scenario {
        Scenario::Steps(rows.iter().map(|r| ScenarioStep { admit: 1, row: Some(r.to_vec()) }).collect())
    }

    fn victims(log: &EvictionLog) -> Vec<Vec<u32>> {
        assert!(log.rejection.is_none(), "{:?}", log.rejection);
        log.steps.iter().map(|s| s.victims.clone()).collect()
    }

    fn chunks(sizes: &[u32]) -> Scenario {
        Scenario::Steps(sizes.iter().map(|&a| ScenarioStep { admit: a, row: None }).collect())
    }

    fn kept_after(name: &str, p: &[(&str, i64)], scenario: &Scenario) -> Vec<u32> {
        let policy = policies::build(name, &params(p), 0).unwrap();
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
            ScenarioStep { admit: 1, row: None },
            ScenarioStep { admit: 1, row: Some(vec![0.5]) },
            ScenarioStep { admit: 1, row: Some(vec![0.25, 0.75]) },
            ScenarioStep { admit: 1, row: Some(vec![0.125, 0.25, 0.5]) },
        ]);
        let p = params(&[("budget", 3), ("recent_window", 1), ("obs_window", 2), ("pool_kernel", 1)]);
        let log = run_scenario("snapkv", &p, 0, &sc);
        assert_eq!(log.steps[3].victims, vec![0]);
        assert_eq!(log.steps[3].cut[0], (0, 0.375));
    }

    /// A null chunk of `n`, then one step admitting 1 with the given row.
    fn one_row(n: u32, row: &[f32]) -> Scenario {
        Scenario::Steps(vec![
            ScenarioStep { admit: n, row: None },
            ScenarioStep { admit: 1, row: Some(row.to_vec()) },
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
            ScenarioStep { admit: 1, row: None },
            ScenarioStep { admit: 1, row: Some(vec![0.5]) },
            ScenarioStep { admit: 1, row: Some(vec![t, 0.0]) },
            ScenarioStep { admit: 1, row: Some(vec![t, 0.0, 2.0]) },
            ScenarioStep { admit: 1, row: Some(vec![1.0, 1.0, 2.0, 2.0]) },
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
            ScenarioStep { admit: 2, row: Some(vec![]) },
            ScenarioStep { admit: 1, row: Some(vec![0.5]) },
        ]);
        assert_eq!(cat(bad_len), Some((Category::AttentionLength, 1)));
        for w in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -1.0, -0.0] {
            let sc = Scenario::Steps(vec![
                ScenarioStep { admit: 2, row: Some(vec![]) },
                ScenarioStep { admit: 1, row: Some(vec![0.5, w]) },
            ]);
            assert_eq!(cat(sc), Some((Category::AttentionValue, 1)), "{w}");
        }
        let sub = f32::from_bits(1);
        let sc = Scenario::Steps(vec![
            ScenarioStep { admit: 2, row: Some(vec![]) },
            ScenarioStep { admit: 1, row: Some(vec![0.0, sub]) },
        ]);
        assert_eq!(cat(sc), None);
        let log = run_scenario("window", &params(&[("budget", 0)]), 0, &chunks(&[1]));
        let r = log.rejection.unwrap();
        assert_eq!((r.refusal.category, r.step), (Category::InvalidParameter, -1));
    }

    #[test]
    fn direct_step_refusals_leave_the_policy_unchanged() {
        let mut e = Engine::new(policies::build("h2o", &params(&[("budget", 3), ("recent_window", 1)]), 0).unwrap());
        e.step(0, 2, None).unwrap();
        assert_eq!(e.step(1, 1, None).unwrap_err().category, Category::Position);
        assert_eq!(e.step(5, 0, None).unwrap_err().category, Category::Position);
        assert_eq!(e.step(5, 1, Some(&[0.5])).unwrap_err().category, Category::AttentionLength);
        assert_eq!(e.step(5, 1, Some(&[0.5, f32::NAN])).unwrap_err().category, Category::AttentionValue);
        assert_eq!(e.kept(), &[0, 1]);
        // gaps are allowed; the chunk's unobserved 5 scores +0.0 and goes
        let r = e.step(5, 2, Some(&[0.5, 0.25])).unwrap();
        assert_eq!(r.victims, vec![5]);
        assert_eq!(r.cut, vec![(5, 0.0), (1, 0.25), (0, 0.5)]);
        assert_eq!(e.kept(), &[0, 1, 6]);
        // position 2^32 - 1 is admitted, 2^32 is not
        assert!(e.step(MAX_POSITION, 1, None).is_ok());
        assert_eq!(e.step(MAX_POSITION + 1, 1, None).unwrap_err().category, Category::Position);
        let mut e = Engine::new(policies::build("window", &params(&[("budget", 3)]), 0).unwrap());
        assert_eq!(e.step(MAX_POSITION - 1, 3, None).unwrap_err().category, Category::Position);
    }
}
