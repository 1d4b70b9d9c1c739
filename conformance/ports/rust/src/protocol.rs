//! The conformance protocol, version 1 (spec/protocol.md): frames of a
//! 4-byte little-endian length and one serialized message, and the mapping
//! between the wire schemas and the harness.

use std::io::{self, Read, Write};

use prost::Message;

use crate::error::{Category, Check, Refusal, Subject};
use crate::harness::{self, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::heads::HeadCounts;
use crate::pb::kvspec::conformance::v1 as conf;
use crate::pb::kvspec::v1 as kv;
use crate::registry::REGISTRY;
use crate::tensors;
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
        features: crate::FEATURES.iter().map(|s| s.to_string()).collect(),
        // spec/protocol.md#precision (0.15.0): the precisions left unset,
        // binary64, which is what this port computes in.
        ..Default::default()
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
        Category::InvalidHeads => kv::ErrorCategory::InvalidHeads,
    }
}

/// The wire's subject of a refusal (spec/harness.md#subjects).
pub fn subject_to_pb(s: &Subject) -> kv::Subject {
    kv::Subject { check: s.check.name().to_string(), names: s.names.clone() }
}

fn rejection_to_pb(r: &Refusal, step: i32) -> kv::Rejection {
    kv::Rejection {
        category: category_to_pb(r.category) as i32,
        step,
        message: r.message.clone(),
        subject: Some(subject_to_pb(&r.subject)),
    }
}

/// Convert one step's record to the wire's, its sets included; cuts only
/// with `want_cut`. Spans and the held set are there with `spans` 1
/// (spec/spans.md#the-log), whatever `want_cut`.
pub fn step_to_pb(s: &StepRecord, want_cut: bool) -> kv::StepResult {
    kv::StepResult {
        victims: s.victims.clone(),
        kept_count: s.kept_count,
        query_cache_position: s.query_cache_position,
        cut: if want_cut {
            s.cut.iter().map(|&(position, score)| kv::RankedPosition { position, score }).collect()
        } else {
            Vec::new()
        },
        sets: s.sets.iter().map(|set| step_to_pb(set, want_cut)).collect(),
        spans: s.spans.iter().map(|r| kv::QuerySpan { ranges: r.clone() }).collect(),
        held: s.held.iter().map(|r| kv::HeldRun { first: r.first, last: r.last, id: r.id }).collect(),
    }
}

/// Convert a harness log to the wire's; cuts only with `want_cut`.
pub fn log_to_pb(log: &EvictionLog, want_cut: bool) -> kv::EvictionLog {
    kv::EvictionLog {
        steps: log.steps.iter().map(|s| step_to_pb(s, want_cut)).collect(),
        rejection: log.rejection.as_ref().map(|r| rejection_to_pb(&r.refusal, r.step)),
    }
}

fn config_rejection(refusal: &Refusal) -> kv::EvictionLog {
    kv::EvictionLog { steps: Vec::new(), rejection: Some(rejection_to_pb(refusal, -1)) }
}

/// Run one request, in the order of spec/harness.md#refusals: the policy
/// configuration, then the scenario's shape (steps and a trace), its head
/// counts, its `head_dim` and `value_dim` (spec/tensors.md#checks), then the trace's
/// parameters (all refusals at step -1), then the steps.
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
    let needs = match crate::registry::build(&policy.name, &params, policy.seed) {
        Ok(built) => built.tensor_needs(),
        Err(refusal) => return R::Log(config_rejection(&refusal)),
    };
    if sc.trace.is_some() && !sc.steps.is_empty() {
        return R::Log(config_rejection(&Refusal::new(
            Category::InvalidTrace,
            Subject::new(Check::Rule, &["steps", "trace"]),
            "a scenario has either steps or a trace, not both",
        )));
    }
    let heads = match HeadCounts::check(sc.query_heads, sc.kv_heads) {
        Ok(h) => h,
        Err(r) => return R::Log(config_rejection(&r)),
    };
    // spec/tensors.md#checks (1): head_dim's and value_dim's ranges, beside
    // a trace, and missing or too short for a policy that reads them.
    if let Err(r) = tensors::check_scenario(sc.head_dim, sc.value_dim, sc.trace.is_some(), needs) {
        return R::Log(config_rejection(&r));
    }
    let scenario = match &sc.trace {
        Some(tc) => match TraceParams::from_config(tc) {
            Ok(p) => Scenario::Trace(p),
            Err(r) => return R::Log(config_rejection(&r)),
        },
        None => Scenario::Steps(
            sc.steps
                .iter()
                .map(|s| ScenarioStep {
                    admit: s.admit,
                    row: s.attention.as_ref().map(|a| a.weights.clone()),
                    heads: s.heads.iter().map(|a| a.weights.clone()).collect(),
                    queries: s.queries.iter().map(|a| a.weights.clone()).collect(),
                    // spec/prefill.md#column-totals: fields 5 and 6.
                    totals: s.totals.iter().map(|t| t.sums.clone()).collect(),
                    total_rows: s.total_rows,
                    // spec/tensors.md#the-fields: field 7.
                    keys: s.keys.iter().map(|k| k.values.clone()).collect(),
                    // Field 8 (spec 0.18.0).
                    values: s.values.iter().map(|v| v.values.clone()).collect(),
                })
                .collect(),
        ),
    };
    let log = harness::run_scenario_with_tensors(&policy.name, &params, policy.seed, heads, sc.head_dim, sc.value_dim, &scenario);
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
                steps: vec![kv::Step { admit: 1, ..Default::default() }],
                trace: Some(kv::TraceConfig { steps: Some(4), ..Default::default() }),
                query_heads: None,
                kv_heads: None,
                head_dim: None,
            value_dim: None,
            }),
            want_cut: false,
        };
        let resp = handle_request(&req);
        assert_eq!(resp.seq, 3);
        let Some(conf::response::Result::Log(log)) = resp.result else { panic!() };
        let r = log.rejection.unwrap();
        assert_eq!((r.category, r.step), (kv::ErrorCategory::InvalidTrace as i32, -1));
    }

    fn rejection_of(policy: kv::PolicyConfig, scenario: kv::Scenario) -> Option<(i32, i32)> {
        let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(scenario), want_cut: true };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        log.rejection.map(|r| (r.category, r.step))
    }

    fn window(budget: i64) -> kv::PolicyConfig {
        kv::PolicyConfig {
            name: "window".into(),
            parameters: vec![kv::Parameter { name: "budget".into(), value: budget }],
            seed: 0,
        }
    }

    fn steps_scenario(q: Option<u32>, kv: Option<u32>) -> kv::Scenario {
        kv::Scenario {
            id: "s".into(),
            steps: vec![kv::Step { admit: 1, ..Default::default() }],
            trace: None,
            query_heads: q,
            kv_heads: kv,
            head_dim: None,
            value_dim: None,
        }
    }

    #[test]
    fn head_count_refusals_in_order() {
        let heads = kv::ErrorCategory::InvalidHeads as i32;
        let trace = kv::ErrorCategory::InvalidTrace as i32;
        let param = kv::ErrorCategory::InvalidParameter as i32;
        assert_eq!(rejection_of(window(2), steps_scenario(Some(0), None)), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), steps_scenario(Some(1025), None)), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), steps_scenario(Some(4), Some(0))), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), steps_scenario(Some(4), Some(3))), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), steps_scenario(None, Some(2))), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), steps_scenario(Some(1024), Some(8))), None);
        assert_eq!(rejection_of(window(2), steps_scenario(Some(1), Some(1))), None);
        // The configuration before the head counts.
        assert_eq!(rejection_of(window(0), steps_scenario(Some(0), None)), Some((param, -1)));
        // Steps and a trace before the head counts.
        let mut both = steps_scenario(Some(0), None);
        both.trace = Some(kv::TraceConfig { steps: Some(4), ..Default::default() });
        assert_eq!(rejection_of(window(2), both), Some((trace, -1)));
        // The head counts before the trace's parameters; a trace may have
        // several heads (spec/trace.md#several-heads).
        let traced = |q: Option<u32>, kv: Option<u32>, tc: kv::TraceConfig| kv::Scenario {
            id: "t".into(),
            steps: vec![],
            trace: Some(tc),
            query_heads: q,
            kv_heads: kv,
            head_dim: None,
            value_dim: None,
        };
        let no_steps = kv::TraceConfig::default();
        assert_eq!(rejection_of(window(2), traced(Some(0), None, no_steps)), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), traced(Some(4), Some(3), no_steps)), Some((heads, -1)));
        assert_eq!(rejection_of(window(2), traced(Some(2), Some(2), no_steps)), Some((trace, -1)));
        assert_eq!(rejection_of(window(2), traced(Some(1), Some(1), no_steps)), Some((trace, -1)));
        let four = kv::TraceConfig { steps: Some(4), ..Default::default() };
        assert_eq!(rejection_of(window(2), traced(Some(2), None, four)), None);
        assert_eq!(rejection_of(window(2), traced(Some(4), Some(2), four)), None);
        assert_eq!(rejection_of(window(2), traced(Some(1), None, four)), None);
        // The base configuration is validated, never a head's: a mass of 1
        // is in range, and head 1's sink_mass of 4 is not checked.
        let heavy = kv::TraceConfig { steps: Some(8), sink_mass: Some(1.0), ..Default::default() };
        let h2o = kv::PolicyConfig {
            name: "h2o".into(),
            parameters: vec![
                kv::Parameter { name: "budget".into(), value: 4 },
                kv::Parameter { name: "recent_window".into(), value: 1 },
            ],
            seed: 0,
        };
        assert_eq!(rejection_of(h2o, traced(Some(4), Some(2), heavy)), None);
    }

    /// The rejection's subject as spec/harness.md#subjects writes it
    /// ("range budget"), and its step.
    fn subject_of(policy: kv::PolicyConfig, scenario: kv::Scenario) -> Option<(String, i32)> {
        let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(scenario), want_cut: false };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        log.rejection.map(|r| {
            let s = r.subject.expect("every refusal has a subject");
            (std::iter::once(s.check).chain(s.names).collect::<Vec<_>>().join(" "), r.step)
        })
    }

    #[test]
    fn scenario_subjects() {
        // spec/harness.md#subjects: the scenario's shape, head counts and
        // trace parameters, all at step -1.
        let at = |s: &str, step| Some((s.to_string(), step));
        let mut both = steps_scenario(None, None);
        both.trace = Some(kv::TraceConfig { steps: Some(4), ..Default::default() });
        assert_eq!(subject_of(window(2), both), at("rule steps trace", -1));
        assert_eq!(subject_of(window(2), steps_scenario(Some(1025), None)), at("range query_heads", -1));
        assert_eq!(subject_of(window(2), steps_scenario(Some(4), Some(0))), at("range kv_heads", -1));
        assert_eq!(subject_of(window(2), steps_scenario(Some(4), Some(3))), at("rule kv_heads query_heads", -1));
        let traced = |tc: kv::TraceConfig| kv::Scenario { id: "t".into(), trace: Some(tc), ..Default::default() };
        assert_eq!(subject_of(window(2), traced(kv::TraceConfig::default())), at("range trace.steps", -1));
        let tc = kv::TraceConfig { steps: Some(0), ..Default::default() };
        assert_eq!(subject_of(window(2), traced(tc)), at("range trace.steps", -1));
        let tc = kv::TraceConfig { steps: Some(4), noise: Some(f64::NAN), ..Default::default() };
        assert_eq!(subject_of(window(2), traced(tc)), at("range trace.noise", -1));
        let tc = kv::TraceConfig { steps: Some(4), sink_mass: Some(-0.0), ..Default::default() };
        assert_eq!(subject_of(window(2), traced(tc)), at("range trace.sink_mass", -1));
    }

    #[test]
    fn step_subjects() {
        // spec/harness.md#subjects, the last paragraph: which field a length
        // or value refusal names, and admit's.
        let at1 = |s: &str| Some((s.to_string(), 1));
        let row = |w: Vec<f32>| kv::AttentionRow { weights: w };
        let run = |q: u32, policy: kv::PolicyConfig, second: kv::Step| {
            let first = kv::Step { admit: 2, ..Default::default() };
            let scenario = kv::Scenario { id: "s".into(), steps: vec![first, second], query_heads: Some(q), ..Default::default() };
            subject_of(policy, scenario)
        };
        let w = || window(4);
        assert_eq!(run(1, w(), kv::Step { admit: 0, ..Default::default() }), at1("range admit"));
        assert_eq!(run(1, w(), kv::Step { admit: u32::MAX, ..Default::default() }), at1("rule admit"));
        // One head: the row is `attention`; a row in `heads` is the wrong
        // field.
        let one = |attention: Option<Vec<f32>>, heads: Vec<Vec<f32>>| kv::Step {
            admit: 1,
            attention: attention.map(row),
            heads: heads.into_iter().map(row).collect(),
            ..Default::default()
        };
        assert_eq!(run(1, w(), one(Some(vec![0.5]), vec![])), at1("length attention"));
        assert_eq!(run(1, w(), one(Some(vec![0.5, f32::NAN]), vec![])), at1("value attention"));
        assert_eq!(run(1, w(), one(None, vec![vec![0.5, 0.5]])), at1("length heads"));
        // Two heads: the rows are `heads`; `attention` is the wrong field.
        assert_eq!(run(2, w(), one(Some(vec![0.5, 0.5]), vec![])), at1("length attention"));
        assert_eq!(run(2, w(), one(None, vec![vec![0.5, 0.5]])), at1("length heads"));
        assert_eq!(run(2, w(), one(None, vec![vec![0.5, 0.5], vec![0.5]])), at1("length heads"));
        assert_eq!(run(2, w(), one(None, vec![vec![0.5, 0.5], vec![0.5, -1.0]])), at1("value heads"));
        // Query rows and column totals: a step admitting 2 (positions 2, 3)
        // with one query row, for position 3 (4 weights).
        let prefill = |query: Vec<f32>, totals: Vec<Vec<f64>>, total_rows| kv::Step {
            admit: 2,
            queries: vec![row(query)],
            totals: totals.into_iter().map(|sums| kv::ColumnTotals { sums }).collect(),
            total_rows,
            ..Default::default()
        };
        let q = || vec![0.25; 4];
        assert_eq!(run(1, w(), prefill(vec![0.25; 3], vec![], 0)), at1("length queries"));
        assert_eq!(run(1, w(), prefill(vec![0.25, 0.25, f32::INFINITY, 0.25], vec![], 0)), at1("value queries"));
        assert_eq!(run(1, w(), prefill(q(), vec![], 0)), None);
        let mut beside = prefill(q(), vec![], 0);
        beside.attention = Some(row(vec![0.5, 0.5]));
        assert_eq!(run(1, w(), beside), at1("length queries"));
        // Totals: without query rows, a list per query head, total_rows in
        // 1..admit, then each list's length (one per position 0..3).
        let mut alone = prefill(q(), vec![vec![0.5; 4]], 1);
        alone.queries.clear();
        assert_eq!(run(1, w(), alone), at1("length totals"));
        assert_eq!(run(1, w(), prefill(q(), vec![vec![0.5; 4]; 2], 1)), at1("length totals"));
        assert_eq!(run(1, w(), prefill(q(), vec![vec![0.5; 4]], 0)), at1("length total_rows"));
        assert_eq!(run(1, w(), prefill(q(), vec![vec![0.5; 4]], 3)), at1("length total_rows"));
        assert_eq!(run(1, w(), prefill(q(), vec![vec![0.5; 3]], 2)), at1("length totals"));
        assert_eq!(run(1, w(), prefill(q(), vec![vec![0.5, 0.5, f64::NAN, 0.5]], 2)), at1("value totals"));
        assert_eq!(run(1, w(), prefill(q(), vec![vec![0.5; 4]], 2)), None);
    }

    #[test]
    fn several_sets_travel_in_sets() {
        let h2o = kv::PolicyConfig {
            name: "h2o".into(),
            parameters: vec![
                kv::Parameter { name: "budget".into(), value: 1 },
                kv::Parameter { name: "recent_window".into(), value: 0 },
                kv::Parameter { name: "granularity".into(), value: 2 },
            ],
            seed: 0,
        };
        let row = |w: Vec<f32>| kv::AttentionRow { weights: w };
        let scenario = kv::Scenario {
            id: "s".into(),
            steps: vec![
                kv::Step { admit: 1, ..Default::default() },
                kv::Step { admit: 1, heads: vec![row(vec![0.5]), row(vec![0.0])], ..Default::default() },
            ],
            trace: None,
            query_heads: Some(2),
            kv_heads: None,
            head_dim: None,
            value_dim: None,
        };
        let mut req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(h2o), scenario: Some(scenario), want_cut: true };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        assert!(log.rejection.is_none());
        let step = &log.steps[1];
        assert_eq!((step.victims.len(), step.kept_count, step.query_cache_position, step.cut.len()), (0, 0, 0, 0));
        assert_eq!(step.sets.len(), 2);
        // Head 0 kept 0 (0.5 against the new 1's 0.0); head 1 ties and keeps 1.
        assert_eq!(step.sets[0].victims, vec![1]);
        assert_eq!(step.sets[1].victims, vec![0]);
        assert_eq!(step.sets[0].cut.len(), 2);
        assert!(step.sets.iter().all(|s| s.kept_count == 1 && s.query_cache_position == 1 && s.sets.is_empty()));
        req.want_cut = false;
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        assert!(log.steps[1].sets.iter().all(|s| s.cut.is_empty()));
    }

    #[test]
    fn hello_lists_every_policy_in_registry_order() {
        // spec/README.md#policies; spec 0.14.0 adds `openvino`, after
        // `random`; spec 0.16.0 `knorm`, after `openvino`; spec 0.17.0
        // `keydiff`, after `knorm`; spec 0.18.0 `lagkv`, after `keydiff`;
        // spec 0.20.0 `simlayerkv`, after `lagkv`.
        let hello = hello_reply();
        assert_eq!(hello.spec_version, "0.20.0");
        assert_eq!(
            hello.policies,
            [
                "full",
                "window",
                "streamingllm",
                "h2o",
                "tova",
                "snapkv",
                "random",
                "openvino",
                "knorm",
                "keydiff",
                "lagkv",
                "simlayerkv"
            ]
            .map(String::from)
        );
    }

    #[test]
    fn spans_travel_in_the_step_record() {
        // spec/spans.md#the-log: with spans 1 each step carries its spans
        // and held set whatever want_cut; the hello declares the feature.
        assert!(hello_reply().features.iter().any(|f| f == "spans"));
        assert_eq!(hello_reply().spec_version, "0.20.0");
        // spec 0.9.0: "contextshift" right after "spans"; spec 0.10.0:
        // "totals" after it; spec 0.12.0: "triggers"; spec 0.13.0:
        // "blocks"; spec 0.16.0: "tensors"; spec 0.18.0: "values"; spec
        // 0.19.0: "pyramid", last (spec/features.md#the-list).
        let features = hello_reply().features;
        let at = features.iter().position(|f| f == "spans").unwrap();
        assert_eq!(features.get(at + 1).map(String::as_str), Some("contextshift"));
        assert_eq!(features[at + 2..], ["totals", "triggers", "blocks", "tensors", "values", "pyramid"].map(String::from));
        let param = |name: &str, value| kv::Parameter { name: name.into(), value };
        let policy = kv::PolicyConfig {
            name: "streamingllm".into(),
            parameters: vec![param("budget", 6), param("sinks", 2), param("spans", 1), param("evict_at", 2), param("position_ids", 1)],
            seed: 0,
        };
        let step = |admit| kv::Step { admit, ..Default::default() };
        let scenario = kv::Scenario {
            id: "s".into(),
            steps: vec![step(4), step(3), step(1)],
            trace: None,
            query_heads: None,
            kv_heads: None,
            head_dim: None,
            value_dim: None,
        };
        let req = conf::Request { seq: 1, case_id: "x".into(), policy: Some(policy), scenario: Some(scenario), want_cut: false };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        assert!(log.rejection.is_none());
        let last = &log.steps[2];
        assert_eq!((last.victims.clone(), last.kept_count, last.query_cache_position), (vec![2, 3], 6, 7));
        assert_eq!(last.spans, vec![kv::QuerySpan { ranges: vec![0, 1, 4, 7] }]);
        assert_eq!(
            last.held,
            vec![kv::HeldRun { first: 0, last: 1, id: 0 }, kv::HeldRun { first: 4, last: 7, id: 2 }]
        );
        assert_eq!(log.steps[0].spans.len(), 4);
    }

    #[test]
    fn totals_travel_from_the_wire() {
        // spec/prefill.md#column-totals: Step fields 5 (`totals`, one
        // ColumnTotals per query head) and 6 (`total_rows`) reach h2o. Raw
        // totals (0.875, 1.0, 0.625) over R = 3 make 2 go; the row (0, 0,
        // 1) beside them, read alone, would make 0 go.
        let h2o = kv::PolicyConfig {
            name: "h2o".into(),
            parameters: vec![
                kv::Parameter { name: "budget".into(), value: 2 },
                kv::Parameter { name: "recent_window".into(), value: 0 },
            ],
            seed: 0,
        };
        let step = |sums: Vec<f64>, total_rows| kv::Step {
            admit: 3,
            queries: vec![kv::AttentionRow { weights: vec![0.0, 0.0, 1.0] }],
            totals: vec![kv::ColumnTotals { sums }],
            total_rows,
            ..Default::default()
        };
        let scenario = |s: kv::Step| kv::Scenario { id: "s".into(), steps: vec![s], ..Default::default() };
        let req = conf::Request {
            seq: 1,
            case_id: "x".into(),
            policy: Some(h2o.clone()),
            scenario: Some(scenario(step(vec![0.875, 1.0, 0.625], 3))),
            want_cut: true,
        };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        assert!(log.rejection.is_none());
        assert_eq!(log.steps[0].victims, vec![2]);
        assert_eq!(log.steps[0].cut.iter().map(|r| (r.position, r.score)).collect::<Vec<_>>(), vec![(2, 0.625), (0, 0.875), (1, 1.0)]);
        let mut without = step(vec![], 0);
        without.totals.clear();
        let req = conf::Request { scenario: Some(scenario(without)), ..req };
        let Some(conf::response::Result::Log(log)) = handle_request(&req).result else { panic!() };
        assert_eq!(log.steps[0].victims, vec![0]);
        // total_rows 0 beside totals: ATTENTION_LENGTH at step 0; a -0.0
        // total: ATTENTION_VALUE.
        let length = kv::ErrorCategory::AttentionLength as i32;
        let value = kv::ErrorCategory::AttentionValue as i32;
        assert_eq!(rejection_of(h2o.clone(), scenario(step(vec![0.875, 1.0, 0.625], 0))), Some((length, 0)));
        assert_eq!(rejection_of(h2o, scenario(step(vec![0.875, -0.0, 0.625], 3))), Some((value, 0)));
    }
}
