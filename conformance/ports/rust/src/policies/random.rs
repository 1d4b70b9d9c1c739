//! `random`: evicts uniformly at random outside the recent window, drawing
//! from the seeded Rng in the card's order, and only at a step that
//! evicts. Card: spec/policies/random.md; `slack` and `interval` after
//! `recent_window` (spec/triggers.md#parameters), then `block`
//! (spec/blocks.md#parameters): by blocks it draws candidate blocks in the
//! same order as candidate positions (spec/blocks.md#ranking-blocks).
use super::{check_recent_below_budget, resolve_params, Policy, Selection, BUDGET, RECENT_WINDOW};
use crate::blocks::{BlockOptions, BLOCK};
use crate::error::Result;
use crate::rng::Rng;
use crate::triggers::{TriggerOptions, INTERVAL, SLACK};

#[derive(Debug)]
pub struct Random {
    budget: u64,
    recent_window: u64,
    triggers: TriggerOptions,
    blocks: BlockOptions,
    rng: Rng,
}

impl Random {
    pub fn configure(params: &[(String, i64)], seed: u64) -> Result<Self> {
        let v = resolve_params("random", &[BUDGET, RECENT_WINDOW, SLACK, INTERVAL, BLOCK], params)?;
        check_recent_below_budget("random", v[0], v[1])?;
        let triggers = TriggerOptions::from_params(&v[2..4]);
        triggers.check("random", None, None, None)?;
        let blocks = BlockOptions::from_params(&v[4..5]);
        blocks.check("random", &[("budget", v[0] as u64), ("recent_window", v[1] as u64)], &[])?;
        Ok(Random { budget: v[0] as u64, recent_window: v[1] as u64, triggers, blocks, rng: Rng::new(seed) })
    }

    /// `k` draws over `m` candidates (spec/policies/random.md#draws):
    /// `Uniform(m)`, `Uniform(m - 1)`, ..., each indexing the candidates
    /// not drawn yet in ascending order; the indices drawn, in draw order.
    fn draw(&mut self, m: usize, k: usize) -> Vec<usize> {
        let mut remaining: Vec<usize> = (0..m).collect();
        let mut drawn = Vec::with_capacity(k);
        for _ in 0..k {
            let i = self.rng.uniform(remaining.len() as u64) as usize;
            drawn.push(remaining.remove(i));
        }
        drawn
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
        Selection { victims: self.draw(m, k), cut: Vec::new() }
    }
    /// The same draws over the candidate blocks in ascending order
    /// (spec/blocks.md#ranking-blocks): `Uniform(c)`, `c` the candidate
    /// blocks not drawn yet.
    fn choose_blocks(&mut self, candidates: usize, k: usize) -> Vec<usize> {
        self.draw(candidates, k)
    }
    fn recent_window(&self) -> usize {
        self.recent_window as usize
    }
    fn remove(&mut self, _evicted: &[bool]) {}
    fn trigger_options(&self) -> TriggerOptions {
        self.triggers
    }
    fn block_options(&self) -> BlockOptions {
        self.blocks
    }
}
