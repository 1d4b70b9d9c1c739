//! The conformance protocol, version 1 (spec/protocol.md): frames of a
//! 4-byte little-endian length and one serialized message, and the mapping
//! between the wire schemas and the harness.

use std::io::{self, Read, Write};

use prost::Message;

use crate::error::Category;
use crate::harness::{self, EvictionLog, Scenario, ScenarioStep};
use crate::pb::kvspec::conformance::v1 as conf;
use crate::pb::kvspec::v1 as kv;
use crate::policies::REGISTRY;
use crate::trace::TraceParams;

/// Largest frame this port accepts (the runner's default cap).
pub const MAX_FRAME_BYTES: usize = 64 << 20;

/// Read one frame; `Ok(None)` at a clean end of input.
pub fn read_frame<R: Read>(r: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut len[got..])?;
        if n == 0 {
            if got == 0 {
                return Ok(None);
            }
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated frame length"));
        }
        got += n;
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_FRAME_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {n} bytes is over the cap")));
    }
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

/// Write one frame and flush it.
pub fn write_frame<W: Write, M: Message>(w: &mut W, msg: &M) -> io::Result<()> {
    let bytes = msg.encode_to_vec();
    w.write_all(&(bytes.len() as u32).to_le_bytes())?;
    w.write_all(&bytes)?;
    w.flush()
}

pub fn hello_reply() -> conf::HelloReply {
    conf::HelloReply {
        protocol_version: crate::PROTOCOL_VERSION,
        spec_version: crate::SPEC_VERSION.to_string(),
        port_name: "kvspec-rust".to_string(),
        language: "rust".to_string(),
        port_version: env!("CARGO_PKG_VERSION").to_string(),
        policies: REGISTRY.iter().map(|s| s.to_string()).collect(),
    }
}

pub fn category_to_pb(c: Category) -> kv::ErrorCategory {
    match c {
        Category::UnknownPolicy => kv::ErrorCategory::UnknownPolicy,
        Category::InvalidParameter => kv::ErrorCategory::InvalidParameter,
        Category::AttentionLength => kv::ErrorCategory::AttentionLength,
        Category::AttentionValue => kv::ErrorCategory::AttentionValue,
        Category::Position => kv::ErrorCategory::Position,
        Category::InvalidTrace => kv::ErrorCategory::InvalidTrace,
    }
}

/// Convert a harness log to the wire's; cuts only with `want_cut`.
pub fn log_to_pb(log: &EvictionLog, want_cut: bool) -> kv::EvictionLog {
    kv::EvictionLog {
        steps: log
            .steps
            .iter()
            .map(|s| kv::StepResult {
                victims: s.victims.clone(),
                kept_count: s.kept_count,
                query_cache_position: s.query_cache_position,
                cut: if want_cut {
                    s.cut.iter().map(|&(position, score)| kv::RankedPosition { position, score }).collect()
                } else {
                    Vec::new()
                },
            })
            .collect(),
        rejection: log.rejection.as_ref().map(|r| kv::Rejection {
            category: category_to_pb(r.refusal.category) as i32,
            step: r.step,
            message: r.refusal.message.clone(),
        }),
    }
}

fn config_rejection(category: Category, message: String) -> kv::EvictionLog {
    kv::EvictionLog {
        steps: Vec::new(),
        rejection: Some(kv::Rejection { category: category_to_pb(category) as i32, step: -1, message }),
    }
}

/// Run one request. The policy configuration is checked before the
/// scenario's trace configuration (both refusals are at step -1).
pub fn handle_request(req: &conf::Request) -> conf::Response {
    let seq = req.seq;
    let result = run_request(req);
    conf::Response { seq, result: Some(result) }
}

fn run_request(req: &conf::Request) -> conf::response::Result {
    use conf::response::Result as R;
    let Some(policy) = &req.policy else {
        return R::Error(conf::RuntimeError { message: "request has no policy".into() });
    };
    let params: Vec<(String, i64)> = policy.parameters.iter().map(|p| (p.name.clone(), p.value)).collect();
    let empty = kv::Scenario::default();
    let sc = req.scenario.as_ref().unwrap_or(&empty);
    // The configuration first: a refused configuration is step -1 whatever
    // the scenario holds.
    if let Err(refusal) = crate::policies::build(&policy.name, &params, policy.seed) {
        return R::Log(config_rejection(refusal.category, refusal.message));
    }
    let scenario = match &sc.trace {
        Some(tc) => {
            if !sc.steps.is_empty() {
                return R::Log(config_rejection(
                    Category::InvalidTrace,
                    "a scenario has either steps or a trace, not both".into(),
                ));
            }
            match TraceParams::from_config(tc) {
                Ok(p) => Scenario::Trace(p),
                Err(r) => return R::Log(config_rejection(r.category, r.message)),
            }
        }
        None => Scenario::Steps(
            sc.steps
                .iter()
                .map(|s| ScenarioStep { admit: s.admit, row: s.attention.as_ref().map(|a| a.weights.clone()) })
                .collect(),
        ),
    };
    let log = harness::run_scenario(&policy.name, &params, policy.seed, &scenario);
    R::Log(log_to_pb(&log, req.want_cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let msg = conf::PortMessage { message: Some(conf::port_message::Message::Hello(hello_reply())) };
        let mut buf = Vec::new();
        write_frame(&mut buf, &msg).unwrap();
        assert_eq!(u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize, buf.len() - 4);
        let mut r = &buf[..];
        let frame = read_frame(&mut r).unwrap().unwrap();
        assert_eq!(conf::PortMessage::decode(&frame[..]).unwrap(), msg);
        assert!(read_frame(&mut r).unwrap().is_none());
    }

    #[test]
    fn trace_and_steps_is_invalid_trace() {
        let req = conf::Request {
            seq: 3,
            case_id: "x".into(),
            policy: Some(kv::PolicyConfig { name: "window".into(), parameters: vec![], seed: 0 }),
            scenario: Some(kv::Scenario {
                id: "s".into(),
                steps: vec![kv::Step { admit: 1, attention: None }],
                trace: Some(kv::TraceConfig { steps: Some(4), ..Default::default() }),
            }),
            want_cut: false,
        };
        let resp = handle_request(&req);
        assert_eq!(resp.seq, 3);
        let Some(conf::response::Result::Log(log)) = resp.result else { panic!() };
        let r = log.rejection.unwrap();
        assert_eq!((r.category, r.step), (kv::ErrorCategory::InvalidTrace as i32, -1));
    }
}
