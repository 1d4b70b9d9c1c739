//! `random`: evicts uniformly at random outside the recent window, drawing
//! from the seeded Rng in the card's order, and only at a step that
//! evicts. Card: spec/policies/random.md; `slack` and `interval` after
//! `recent_window` (spec/triggers.md#parameters).
use super::{check_recent_below_budget, resolve_params, Policy, Selection, BUDGET, RECENT_WINDOW};
use crate::error::Result;
use crate::rng::Rng;
use crate::triggers::{TriggerOptions, INTERVAL, SLACK};

#[derive(Debug)]
pub struct Random {
    budget: u64,
    recent_window: u64,
    triggers: TriggerOptions,
    rng: Rng,
}

impl Random {
    pub fn configure(params: &[(String, i64)], seed: u64) -> Result<Self> {
        let v = resolve_params("random", &[BUDGET, RECENT_WINDOW, SLACK, INTERVAL], params)?;
        check_recent_below_budget("random", v[0], v[1])?;
        let triggers = TriggerOptions::from_params(&v[2..4]);
        triggers.check("random", None, None, None)?;
        Ok(Random { budget: v[0] as u64, recent_window: v[1] as u64, triggers, rng: Rng::new(seed) })
    }
}

impl Policy for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn budget(&self) -> Option<u64> {
        Some(self.budget)
    }
    fn record(&mut self, _attention: &[f32]) {}
    fn admit(&mut self, _count: usize) {}
    /// `Uniform(m)`, `Uniform(m - 1)`, ..., each indexing the candidates not
    /// drawn yet in ascending position order (spec/policies/random.md#draws).
    fn choose_victims(&mut self, kept: &[u32], k: usize) -> Selection {
        let m = kept.len() - self.recent_window as usize;
        let mut remaining: Vec<usize> = (0..m).collect();
        let mut victims = Vec::with_capacity(k);
        for _ in 0..k {
            let i = self.rng.uniform(remaining.len() as u64) as usize;
            victims.push(remaining.remove(i));
        }
        Selection { victims, cut: Vec::new() }
    }
    fn remove(&mut self, _evicted: &[bool]) {}
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
}
