//! Runs every case of every `vectors/*.pb` (kvspec.v1.VectorFile,
//! spec/vectors.md) in-process through the port's request handler, the same
//! code path the testee takes for a Request with `want_cut = true`, and
//! compares the port's EvictionLog with the case's `expected`: victims,
//! kept_count, query_cache_position, the cut (positions and score bits),
//! the same per kept set when a step has `sets` (spec/heads.md#the-eviction-log),
//! the spans and held set with position ids (spec/spans.md#the-log), and the
//! rejection's category, subject (spec/harness.md#subjects: its check and
//! names) and step, as the runner does for a port of spec 0.11.0 or later.
//! Messages are never compared (spec/harness.md#configuration).
//!
//! Vectors: `$KVSPEC_VECTORS` if set, else the repository's `vectors/`.
//! Stops at the first divergence and names the file, the case and the step.
//! `$KVSPEC_SKIP_CASES`, a comma-separated list of case ids, skips those
//! cases (for a known divergence while the spec and the vectors are in
//! flux); the summary line on stderr says how many were skipped.

use std::collections::HashMap;
use std::path::PathBuf;

use kvspec_port::pb::kvspec::conformance::v1 as conf;
use kvspec_port::pb::kvspec::v1 as kv;
use kvspec_port::protocol::handle_request;
use prost::Message;

const SCHEMA: &str = "kvspec.vectors.v1";

fn vectors_dir() -> PathBuf {
    match std::env::var_os("KVSPEC_VECTORS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../vectors"),
    }
}

fn category_name(c: i32) -> String {
    match kv::ErrorCategory::try_from(c) {
        Ok(e) => e.as_str_name().to_string(),
        Err(_) => format!("category {c}"),
    }
}

fn rejection_str(r: &Option<kv::Rejection>) -> String {
    match r {
        None => "no rejection".to_string(),
        Some(r) => format!("{} ({}) at step {}", category_name(r.category), subject_str(&r.subject), r.step),
    }
}

/// "range budget"; "no subject" when absent.
fn subject_str(s: &Option<kv::Subject>) -> String {
    match s {
        None => "no subject".to_string(),
        Some(s) => std::iter::once(s.check.as_str()).chain(s.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" "),
    }
}

fn cut_str(cut: &[kv::RankedPosition]) -> String {
    let items: Vec<String> =
        cut.iter().map(|r| format!("{}:{:?}({:#018x})", r.position, r.score, r.score.to_bits())).collect();
    format!("[{}]", items.join(", "))
}

fn step_str(s: &kv::StepResult) -> String {
    let mut out = format!(
        "victims {:?}, kept_count {}, query_cache_position {}, cut {}",
        s.victims,
        s.kept_count,
        s.query_cache_position,
        cut_str(&s.cut)
    );
    if !s.spans.is_empty() || !s.held.is_empty() {
        let spans: Vec<String> = s.spans.iter().map(|q| format!("{:?}", q.ranges)).collect();
        let held: Vec<String> = s.held.iter().map(|r| format!("{}..{}@{}", r.first, r.last, r.id)).collect();
        out.push_str(&format!(", spans [{}], held [{}]", spans.join(", "), held.join(", ")));
    }
    if !s.sets.is_empty() {
        let sets: Vec<String> = s.sets.iter().enumerate().map(|(i, set)| format!("\n    set {i}: {}", step_str(set))).collect();
        out.push_str(&format!(", {} sets:{}", s.sets.len(), sets.concat()));
    }
    out
}

fn same_step(a: &kv::StepResult, b: &kv::StepResult) -> bool {
    a.victims == b.victims
        && a.kept_count == b.kept_count
        && a.query_cache_position == b.query_cache_position
        && a.cut.len() == b.cut.len()
        && a.cut.iter().zip(&b.cut).all(|(x, y)| x.position == y.position && x.score.to_bits() == y.score.to_bits())
        && a.spans == b.spans
        && a.held == b.held
        && a.sets.len() == b.sets.len()
        && a.sets.iter().zip(&b.sets).all(|(x, y)| same_step(x, y))
}

/// `None` if the logs agree; otherwise where and how they first differ.
fn first_divergence(expected: &kv::EvictionLog, got: &kv::EvictionLog) -> Option<String> {
    for (i, (e, g)) in expected.steps.iter().zip(&got.steps).enumerate() {
        if !same_step(e, g) {
            return Some(format!("step {i}:\n  expected {}\n  got      {}", step_str(e), step_str(g)));
        }
    }
    let (ne, ng) = (expected.steps.len(), got.steps.len());
    if ne != ng {
        let i = ne.min(ng);
        let show = |log: &kv::EvictionLog| match log.steps.get(i) {
            Some(s) => step_str(s),
            None => format!("no step ({} steps, {})", log.steps.len(), rejection_str(&log.rejection)),
        };
        return Some(format!("step {i}:\n  expected {}\n  got      {}", show(expected), show(got)));
    }
    let same_rejection = match (&expected.rejection, &got.rejection) {
        (None, None) => true,
        (Some(e), Some(g)) => e.category == g.category && e.subject == g.subject && e.step == g.step,
        _ => false,
    };
    if !same_rejection {
        return Some(format!(
            "rejection (after {ne} agreeing steps):\n  expected {}\n  got      {}",
            rejection_str(&expected.rejection),
            rejection_str(&got.rejection)
        ));
    }
    None
}

#[test]
fn vectors() {
    let dir = vectors_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading the vectors directory {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pb"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.pb vector files in {}", dir.display());
    let skip: Vec<String> = std::env::var("KVSPEC_SKIP_CASES")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut total = 0usize;
    let mut skipped = 0usize;
    for path in &files {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let file = kv::VectorFile::decode(&bytes[..])
            .unwrap_or_else(|e| panic!("{}: not a kvspec.v1.VectorFile: {e}", path.display()));
        assert_eq!(
            file.schema,
            SCHEMA,
            "{}: unknown vector schema {:?} (this reader knows only {SCHEMA:?}); refusing the file",
            path.display(),
            file.schema
        );
        assert!(!file.cases.is_empty(), "{}: holds no cases", path.display());
        let scenarios: HashMap<&str, &kv::Scenario> = file.scenarios.iter().map(|s| (s.id.as_str(), s)).collect();
        for (n, case) in file.cases.iter().enumerate() {
            if skip.contains(&case.id) {
                skipped += 1;
                continue;
            }
            let scenario = *scenarios
                .get(case.scenario_id.as_str())
                .unwrap_or_else(|| panic!("{}: case {} names unknown scenario {:?}", path.display(), case.id, case.scenario_id));
            let expected = case
                .expected
                .as_ref()
                .unwrap_or_else(|| panic!("{}: case {} has no expected log", path.display(), case.id));
            let req = conf::Request {
                seq: n as u64,
                case_id: case.id.clone(),
                policy: case.policy.clone(),
                scenario: Some(scenario.clone()),
                want_cut: true,
            };
            // A panic in the port is a failure of this case: name it.
            let resp = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle_request(&req)))
                .unwrap_or_else(|_| {
                    panic!(
                        "{}: case {} (#{n} in the file, policy {:?}, scenario {:?}): the port panicked (message above)",
                        path.display(),
                        case.id,
                        case.policy.as_ref().map(|p| (&p.name, &p.parameters, p.seed)),
                        case.scenario_id
                    )
                });
            let got = match resp.result {
                Some(conf::response::Result::Log(log)) => log,
                other => panic!(
                    "{}: case {} (#{n}, policy {:?}): the port gave no log: {other:?}",
                    path.display(),
                    case.id,
                    case.policy.as_ref().map(|p| &p.name)
                ),
            };
            if let Some(d) = first_divergence(expected, &got) {
                panic!(
                    "{}: case {} (#{n} in the file, policy {:?}, scenario {:?}) diverges at {d}",
                    path.display(),
                    case.id,
                    case.policy.as_ref().map(|p| (&p.name, &p.parameters, p.seed)),
                    case.scenario_id
                );
            }
            total += 1;
        }
    }
    eprintln!(
        "vectors: {total} cases in {} files under {} agree ({skipped} skipped by KVSPEC_SKIP_CASES)",
        files.len(),
        dir.display()
    );
}
