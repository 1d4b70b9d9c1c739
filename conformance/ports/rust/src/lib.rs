//! kvspec-port: a Rust port of kvspec (spec version 0.20.0), written from the
//! documents in `spec/` alone.
//!
//! - [`rng`]: xoshiro256** seeded by SplitMix64 (spec/rng.md)
//! - [`elementary`]: exp, log and reductions over vectors (spec/elementary.md)
//! - [`trace`]: the trace generator (spec/trace.md)
//! - [`harness`]: the decode loop, refusals and eviction log (spec/harness.md)
//! - [`heads`]: head counts, kept sets and combining heads (spec/heads.md)
//! - [`prefill`]: query rows, column totals, step budgets and ratio budgets
//!   (spec/prefill.md)
//! - [`spans`]: spans, position ids, eviction before admission and the
//!   context shift (spec/spans.md)
//! - [`triggers`]: when a decode step evicts, `slack` and `interval`
//!   (spec/triggers.md)
//! - [`blocks`]: evicting whole blocks of positions, `block` and
//!   `block_score` (spec/blocks.md)
//! - [`tensors`]: keys and values in a scenario, `head_dim`, `value_dim`,
//!   `Step.keys` and `Step.values`, their checks and what a policy that
//!   reads them sees (spec/tensors.md)
//! - [`policies`]: one module per policy card (spec/policies/*.md)
//! - [`protocol`]: the conformance protocol (spec/protocol.md)

pub mod blocks;
pub mod elementary;
pub mod error;
pub mod harness;
pub mod heads;
pub mod params;
pub mod policies;
pub mod prefill;
pub mod protocol;
pub mod registry;
pub mod rng;
pub mod spans;
pub mod tensors;
pub mod trace;
pub mod triggers;

/// Generated from spec/kvspec.proto and spec/conformance.proto.
pub mod pb {
    pub mod kvspec {
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/kvspec.v1.rs"));
        }
        pub mod conformance {
            pub mod v1 {
                include!(concat!(env!("OUT_DIR"), "/kvspec.conformance.v1.rs"));
            }
        }
    }
}

/// The spec version this port implements (spec/README.md).
pub const SPEC_VERSION: &str = "0.20.0";
/// The features this port implements: all of spec/features.md#the-list.
pub const FEATURES: &[&str] = &["decode", "trace", "heads", "trace-heads", "adaptive", "prefill", "spans", "contextshift", "totals", "triggers", "blocks", "tensors", "values", "pyramid"];
/// The conformance protocol version (spec/protocol.md#versions).
pub const PROTOCOL_VERSION: u32 = 1;
