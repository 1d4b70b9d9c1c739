//! The harness (spec/harness.md): the decode loop every policy runs in, over
//! one kept set or several (spec/heads.md), with prefill steps
//! (spec/prefill.md), spans (spec/spans.md) and keys and values
//! (spec/tensors.md).
//! This file only declares the files below, which hold the rules by job, and
//! re-exports their public items (`crate::harness::X`). Each file imports
//! only files listed before it, and none imports this one:
//!
//! - `log.rs`: the eviction log's records (spec/harness.md#eviction-log,
//!   spec/heads.md#the-eviction-log, spec/spans.md#the-log);
//! - `scenario.rs`: a scenario as given, steps or a trace
//!   (spec/harness.md#scenarios);
//! - `refusals.rs`: a scenario step's checks, in order
//!   (spec/harness.md#refusals), and what a checked step carries;
//! - `one_set.rs`: one kept set's decode step (`KeptSet`,
//!   spec/harness.md#the-decode-step), and one set stepped directly
//!   (`Engine`, `Policy::Step`);
//! - `several_sets.rs`: every kept set of a run over several heads (`Layer`,
//!   spec/heads.md#kept-sets) and their shared budget
//!   (spec/heads.md#head-adaptive-budgets);
//! - `run.rs`: a whole scenario (`RunScenario`).
//!
//! Unit tests: `tests.rs` (one head), `heads_tests.rs` (several heads).

mod log;
mod one_set;
mod refusals;
mod run;
mod scenario;
mod several_sets;

pub use log::{EvictionLog, Rejection, StepRecord};
pub use one_set::{Engine, KeptSet};
pub use refusals::{total_accepted, weight_accepted, MAX_POSITION};
pub use run::{run_scenario, run_scenario_with_heads, run_scenario_with_keys, run_scenario_with_tensors};
pub use scenario::{Scenario, ScenarioStep};
pub use several_sets::Layer;

#[cfg(test)]
mod heads_tests;
#[cfg(test)]
mod tests;
