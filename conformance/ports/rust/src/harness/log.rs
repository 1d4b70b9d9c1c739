//! The eviction log (spec/harness.md#eviction-log): what each step of a run
//! did (`StepRecord`), with one record per kept set in `sets` when there are
//! several (spec/heads.md#the-eviction-log) and, with `spans` 1, each query's
//! span and the held set (spec/spans.md#the-log); the refusal that ends a run,
//! with its step (`Rejection`, spec/harness.md#refusals); a run's log
//! (`EvictionLog`).

use crate::error::Refusal;
use crate::spans::HeldRun;

/// What one step did (spec/harness.md#eviction-log).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepRecord {
    /// Evicted positions, ascending.
    pub victims: Vec<u32>,
    pub kept_count: u32,
    pub query_cache_position: u32,
    /// Score-based policies: (position, score) in rank order
    /// (spec/vectors.md#the-cut; a set's combined scores). Empty otherwise.
    pub cut: Vec<(u32, f64)>,
    /// With more than one kept set: one record per set, in set order, and
    /// the fields above empty (spec/heads.md#the-eviction-log).
    pub sets: Vec<StepRecord>,
    /// With `spans` 1 (spec/spans.md#the-log): each query's span, in
    /// ascending query position, as `first, last` pairs of its maximal
    /// runs. Empty otherwise.
    pub spans: Vec<Vec<u32>>,
    /// With `spans` 1: the held set's maximal runs with their position ids.
    pub held: Vec<HeldRun>,
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
