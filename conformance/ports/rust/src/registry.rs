//! The registry (spec/README.md#policies): each policy's name, in registry
//! order, and check 1 of spec/harness.md#configuration, a name the registry
//! has. Above `policies`, so that `policies/mod.rs` holds only what its
//! policies share and imports none of them.
use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::policies::{full, h2o, keydiff, knorm, lagkv, openvino, random, simlayerkv, snapkv, streamingllm, tova, window, Policy};

/// Registry order (spec/README.md#policies).
pub const REGISTRY: [&str; 12] = [
    "full", "window", "streamingllm", "h2o", "tova", "snapkv", "random", "openvino", "knorm", "keydiff", "lagkv", "simlayerkv",
];

/// Build a policy from its registry name, parameters and Rng seed
/// (spec/harness.md#configuration). Check 1: the name is registered.
pub fn build(name: &str, params: &[(String, i64)], seed: u64) -> Result<Box<dyn Policy>> {
    match name {
        "full" => Ok(Box::new(full::Full::configure(params)?)),
        "window" => Ok(Box::new(window::Window::configure(params)?)),
        "streamingllm" => Ok(Box::new(streamingllm::StreamingLlm::configure(params)?)),
        "h2o" => Ok(Box::new(h2o::H2o::configure(params)?)),
        "tova" => Ok(Box::new(tova::Tova::configure(params)?)),
        "snapkv" => Ok(Box::new(snapkv::SnapKv::configure(params)?)),
        "random" => Ok(Box::new(random::Random::configure(params, seed)?)),
        "openvino" => Ok(Box::new(openvino::OpenVino::configure(params)?)),
        "knorm" => Ok(Box::new(knorm::Knorm::configure(params)?)),
        "keydiff" => Ok(Box::new(keydiff::KeyDiff::configure(params)?)),
        "lagkv" => Ok(Box::new(lagkv::LagKv::configure(params)?)),
        "simlayerkv" => Ok(Box::new(simlayerkv::SimLayerKv::configure(params)?)),
        _ => Err(Refusal::new(
            Category::UnknownPolicy,
            Subject::new(Check::Unknown, &["name"]),
            format!("unknown policy '{name}'"),
        )),
    }
}
