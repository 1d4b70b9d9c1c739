//! spec/policies/pyramidkv.md (spec 0.19.0) through whole scenarios: the
//! card's six worked examples as `snapkv` prefills of one layer each,
//! `w` as the parameter `obs_window` rather than the step's window, the
//! pyramid at decode steps and with `pyramid` 0 (nothing changes), the
//! four parameters' ranges and the rules' subjects in the order of
//! spec/harness.md#refusals, and only `snapkv` taking them. Every expected
//! value is worked by hand from the card.

use crate::harness::{run_scenario, EvictionLog, Scenario, ScenarioStep, StepRecord};
use crate::registry::build;

fn params(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, x)| (n.to_string(), *x)).collect()
}

fn run(p: &[(&str, i64)], steps: Vec<ScenarioStep>) -> EvictionLog {
    run_scenario("snapkv", &params(p), 0, &Scenario::Steps(steps))
}

fn ok(log: &EvictionLog) -> &[StepRecord] {
    assert!(log.rejection.is_none(), "{:?}", log.rejection);
    &log.steps
}

/// A prefill step admitting `n` positions from `first`, carrying the rows
/// of its last `m` queries; position `p` weighs `(p + 1) / 1024` in every
/// row, so the window sums rise with the position and the lowest
/// positions rank first.
fn chunk(first: u32, n: u32, m: u32) -> ScenarioStep {
    let end = first + n;
    let rows = (end - m..end).map(|q| (0..=q).map(|p| (p + 1) as f32 / 1024.0).collect()).collect();
    ScenarioStep::prefill(n, rows)
}

/// A prompt of `n` positions as one prefill step carrying its last `m`
/// query rows.
fn prompt(n: u32, m: u32) -> ScenarioStep {
    chunk(0, n, m)
}

/// `snapkv` at a prefill, `recent_window` 0, `pool_kernel` 1, with
/// `more` appended.
fn snap(obs_window: i64, more: &[(&'static str, i64)]) -> Vec<(&'static str, i64)> {
    let mut p = vec![("recent_window", 0), ("obs_window", obs_window), ("pool_kernel", 1)];
    p.extend_from_slice(more);
    p
}

/// Victims `0 .. k - 1`.
fn lowest(k: u32) -> Vec<u32> {
    (0..k).collect()
}

#[test]
fn example_1_kvpress() {
    // n 40, ratio 0.5, obs_window 4, beta 2, layers 3: layers keep 30, 20,
    // 10 (window inside), so 10, 20, 30 go, the lowest prefix positions.
    for (layer, kept) in [(0, 30), (1, 20), (2, 10)] {
        let p = snap(4, &[("ratio_ppm", 500_000), ("pyramid", 1), ("pyramid_beta", 2), ("layer", layer), ("layers", 3)]);
        let log = run(&p, vec![prompt(40, 4)]);
        assert_eq!(ok(&log)[0].victims, lowest(40 - kept), "layer {layer}");
        assert_eq!(log.steps[0].kept_count, kept);
    }
    // Without the pyramid the ratio keeps 20 at every layer.
    let p = snap(4, &[("ratio_ppm", 500_000), ("layer", 2), ("layers", 3)]);
    assert_eq!(ok(&run(&p, vec![prompt(40, 4)]))[0].kept_count, 20);
}

#[test]
fn example_2_kvpress_halves() {
    // n 10, ratio 0.5, obs_window 1, beta 2, layers 2: layer 0 keeps
    // round_half_even(7.5) = 8, layer 1 round_half_even(2.5) = 2. One row
    // (query 9), the window 9 alone; the prefix weighs 0.5, 0.0625, 0.25,
    // 0.125, 0.03125, 0.375, 0.1875, 0.015625, 0.4375.
    let row = vec![0.5, 0.0625, 0.25, 0.125, 0.03125, 0.375, 0.1875, 0.015625, 0.4375, 0.0];
    let step = || ScenarioStep::prefill(10, vec![row.clone()]);
    let p = |layer| snap(1, &[("ratio_ppm", 500_000), ("pyramid", 1), ("pyramid_beta", 2), ("layer", layer), ("layers", 2)]);
    // Layer 0: 2 go, 7 (0.015625) then 4 (0.03125).
    let log = run(&p(0), vec![step()]);
    assert_eq!(ok(&log)[0].victims, vec![4, 7]);
    assert_eq!(log.steps[0].cut, vec![(7, 0.015625), (4, 0.03125), (1, 0.0625), (3, 0.125), (6, 0.1875), (2, 0.25)]);
    assert_eq!(log.steps[0].kept_count, 8);
    // Layer 1: 8 go; 0 (0.5) and the window 9 stay.
    let log = run(&p(1), vec![step()]);
    assert_eq!(ok(&log)[0].victims, vec![1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(log.steps[0].kept_count, 2);
    // pyramid 0: the ratio's 5, floor(10 * 0.5).
    let log = run(&snap(1, &[("ratio_ppm", 500_000), ("layers", 2)]), vec![step()]);
    assert_eq!(ok(&log)[0].victims, vec![1, 3, 4, 6, 7]);
}

#[test]
fn example_3_kvpress_clip() {
    // n 20, ratio 0.25, obs_window 2, beta 20, layers 4: 18, 16, 14, 12.
    for (layer, kept) in [(0, 18), (1, 16), (2, 14), (3, 12)] {
        let p = snap(2, &[("ratio_ppm", 250_000), ("pyramid", 1), ("pyramid_beta", 20), ("layer", layer), ("layers", 4)]);
        let log = run(&p, vec![prompt(20, 2)]);
        assert_eq!(ok(&log)[0].victims, lowest(20 - kept), "layer {layer}");
        assert_eq!(log.steps[0].kept_count, kept);
    }
}

#[test]
fn example_4_kvpress_fallback() {
    // n 7, ratio 0.5, obs_window 4, beta 20: the fallback keeps
    // round_half_even(3.5) = 4 at every layer: the prefix 0, 1, 2 goes and
    // the window 3..6 stays. Without the pyramid the ratio keeps 3: the
    // lower window position 3 goes too.
    for (layer, layers) in [(0, 1), (0, 3), (2, 3)] {
        let p = snap(4, &[("ratio_ppm", 500_000), ("pyramid", 1), ("layer", layer), ("layers", layers)]);
        let log = run(&p, vec![prompt(7, 4)]);
        assert_eq!(ok(&log)[0].victims, vec![0, 1, 2], "layer {layer} of {layers}");
        assert_eq!(log.steps[0].kept_count, 4);
    }
    let log = run(&snap(4, &[("ratio_ppm", 500_000)]), vec![prompt(7, 4)]);
    assert_eq!(ok(&log)[0].victims, vec![0, 1, 2, 3]);
}

#[test]
fn example_5_factory() {
    // budget 10, obs_window 2, beta 4, layers 4, window outside. n 30:
    // 18, 13, 8, 3 prefix positions and the window's 2, so (30 - 2) - B
    // go: 10, 15, 20, 25.
    let p = |layer| {
        snap(2, &[("budget", 10), ("window_budget", 1), ("pyramid", 2), ("pyramid_beta", 4), ("layer", layer), ("layers", 4)])
    };
    for (layer, kept) in [(0, 18), (1, 13), (2, 8), (3, 3)] {
        let log = run(&p(layer), vec![prompt(30, 2)]);
        assert_eq!(ok(&log)[0].victims, lowest(28 - kept), "layer {layer}");
        assert_eq!(log.steps[0].kept_count, kept + 2);
    }
    // n 15, below 2 * budget: every layer keeps 10 prefix positions, 3 go.
    // n 11, below budget + w: nothing goes.
    for layer in 0..4 {
        assert_eq!(ok(&run(&p(layer), vec![prompt(15, 2)]))[0].victims, vec![0, 1, 2]);
        let log = run(&p(layer), vec![prompt(11, 2)]);
        assert_eq!((ok(&log)[0].victims.len(), log.steps[0].cut.len(), log.steps[0].kept_count), (0, 0, 11));
    }
}

#[test]
fn example_6_factory_clip() {
    // budget 10, obs_window 6, beta 4, layers 3, n 22: 16, 10, 4 prefix
    // positions, so (22 - 6) - B go: 0, 6, 12.
    for (layer, kept) in [(0, 16), (1, 10), (2, 4)] {
        let p =
            snap(6, &[("budget", 10), ("window_budget", 1), ("pyramid", 2), ("pyramid_beta", 4), ("layer", layer), ("layers", 3)]);
        let log = run(&p, vec![prompt(22, 6)]);
        assert_eq!(ok(&log)[0].victims, lowest(16 - kept), "layer {layer}");
        assert_eq!(log.steps[0].kept_count, kept + 6);
    }
}

#[test]
fn factory_layer_budget_zero_keeps_the_window_alone() {
    // budget 4, obs_window 1, beta 8, layers 2, n 12: lo 0, hi 8 (< 11),
    // steps 8; layer 1 keeps 0 prefix positions: all 11 go.
    let p = snap(1, &[("budget", 4), ("window_budget", 1), ("pyramid", 2), ("pyramid_beta", 8), ("layer", 1), ("layers", 2)]);
    let log = run(&p, vec![prompt(12, 1)]);
    assert_eq!(ok(&log)[0].victims, lowest(11));
    assert_eq!(log.steps[0].kept_count, 1);
}

#[test]
fn w_is_the_parameter_obs_window() {
    // Example 4's prompt of 7 carrying one query row (query 6): the step's
    // window is 6 alone, but the formula reads obs_window 4 and falls back
    // to 4, so 3 go. With w = 1 it would keep 6 (u 3.5, hi 6.825 >= 6, so
    // hi 6, lo 1; 7 >= 6 >= 1 >= 1, one layer: 6), and only 0 would go.
    let p = snap(4, &[("ratio_ppm", 500_000), ("pyramid", 1)]);
    let log = run(&p, vec![prompt(7, 1)]);
    assert_eq!(ok(&log)[0].victims, vec![0, 1, 2]);
    let p = snap(1, &[("ratio_ppm", 500_000), ("pyramid", 1)]);
    assert_eq!(ok(&run(&p, vec![prompt(7, 1)]))[0].victims, vec![0]);
}

#[test]
fn decode_steps_evict_down_to_budget() {
    // A prefill of 10 (example 2's layer 1: 2 kept), then decode steps of
    // one position each, their rows over every position admitted before:
    // with budget 3 the second decode step evicts 1. The pyramid decides
    // the prefill step's budget only.
    let row = |n: usize| Some((0..n).map(|p| (p + 1) as f32 / 64.0).collect::<Vec<_>>());
    let steps = || vec![prompt(10, 1), ScenarioStep::single(1, row(10)), ScenarioStep::single(1, row(11))];
    let base = [("budget", 3), ("ratio_ppm", 500_000), ("pyramid_beta", 2), ("layer", 1), ("layers", 2)];
    let p = snap(1, &[base.as_slice(), &[("pyramid", 1)]].concat());
    let log = run(&p, steps());
    assert_eq!(ok(&log).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![2, 3, 3]);
    assert_eq!(log.steps.iter().map(|s| s.victims.len()).collect::<Vec<_>>(), vec![8, 0, 1]);
    // pyramid 0: the ratio keeps 5, the first decode step evicts 3.
    let log0 = run(&snap(1, &[base.as_slice(), &[("pyramid", 0)]].concat()), steps());
    assert_eq!(ok(&log0).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![5, 3, 3]);
    assert_eq!(log0.steps.iter().map(|s| s.victims.len()).collect::<Vec<_>>(), vec![5, 3, 1]);
    // Decode steps alone: pyramid 1 is pyramid 0.
    let decode_only: Vec<ScenarioStep> = (0..6).map(|n| ScenarioStep::single(1, if n == 0 { None } else { row(n) })).collect();
    assert_eq!(run(&p, decode_only.clone()), run(&snap(1, &base), decode_only.clone()));
    assert_eq!(ok(&run(&p, decode_only)).iter().map(|s| s.kept_count).collect::<Vec<_>>(), vec![1, 2, 3, 3, 3, 3]);
}

#[test]
fn pyramid_0_changes_nothing() {
    // pyramid_beta, layer and layers are inert with pyramid 0, at prefill
    // and decode steps, whatever the other prefill parameters.
    let steps = || vec![prompt(12, 3), ScenarioStep::single(1, None), chunk(13, 6, 2), ScenarioStep::single(2, None)];
    for base in [
        snap(2, &[("budget", 5)]),
        snap(2, &[("budget", 5), ("window_budget", 1)]),
        snap(2, &[("ratio_ppm", 400_000)]),
        snap(3, &[("budget", 4), ("prefill_only", 1), ("window_reduce", 1), ("pooling", 1)]),
    ] {
        let want = run(&base, steps());
        ok(&want);
        for more in [[("pyramid_beta", 1), ("layer", 0), ("layers", 2)], [("pyramid_beta", 7), ("layer", 4), ("layers", 5)]] {
            let p = [base.as_slice(), &more, &[("pyramid", 0)]].concat();
            assert_eq!(run(&p, steps()), want, "{p:?}");
        }
    }
}

#[test]
fn recent_window_above_a_factory_layer_budget() {
    // Rule 4: a layer's budget may fall below recent_window - w (budget 10,
    // recent_window 9, obs_window 2, beta 4, layer 3 of 4, n 30: B 3), so
    // the pyramid needs recent_window 0.
    let p = [
        ("budget", 10),
        ("recent_window", 9),
        ("obs_window", 2),
        ("pool_kernel", 1),
        ("window_budget", 1),
        ("pyramid", 2),
        ("pyramid_beta", 4),
        ("layer", 3),
        ("layers", 4),
    ];
    assert_eq!(subject("snapkv", &p).as_deref(), Some("rule pyramid recent_window"));
}

/// The subject as spec/harness.md#subjects writes it: "rule layer layers".
fn subject(name: &str, p: &[(&str, i64)]) -> Option<String> {
    build(name, &params(p), 0).err().map(|r| {
        std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    })
}

#[test]
fn ranges() {
    // spec/policies/pyramidkv.md#parameters: [0, 2], [1, 2^20], [0, 65535], [1, 65536].
    let s = |p: &[(&str, i64)]| subject("snapkv", p);
    for (name, bad, good) in [
        ("pyramid", [-1, 3], [0, 2]),
        ("pyramid_beta", [0, (1 << 20) + 1], [1, 1 << 20]),
        ("layer", [-1, 65536], [0, 0]),
        ("layers", [0, 65537], [1, 65536]),
    ] {
        for v in bad {
            assert_eq!(s(&[(name, v)]), Some(format!("range {name}")), "{name} {v}");
        }
        for v in good {
            assert!(!s(&[(name, v)]).is_some_and(|r| r.starts_with("range")), "{name} {v}");
        }
    }
    // layer 65535 with layers 65536.
    assert_eq!(s(&[("layer", 65535), ("layers", 65536)]), None);
    // Table order: after window_budget, before slack.
    assert_eq!(s(&[("window_budget", 2), ("pyramid", 3)]).as_deref(), Some("range window_budget"));
    assert_eq!(s(&[("pyramid", 3), ("pyramid_beta", 0), ("layer", -1), ("layers", 0)]).as_deref(), Some("range pyramid"));
    assert_eq!(s(&[("pyramid_beta", 0), ("layer", -1), ("layers", 0)]).as_deref(), Some("range pyramid_beta"));
    assert_eq!(s(&[("layer", -1), ("layers", 0)]).as_deref(), Some("range layer"));
    assert_eq!(s(&[("layers", 0), ("slack", -1)]).as_deref(), Some("range layers"));
    // Ranges before every rule.
    assert_eq!(s(&[("recent_window", 600), ("layers", 0)]).as_deref(), Some("range layers"));
}

#[test]
fn rules_in_order() {
    let s = |p: &[(&str, i64)]| subject("snapkv", p);
    // 1. layer < layers, whatever pyramid is.
    assert_eq!(s(&[("layer", 1)]).as_deref(), Some("rule layer layers"));
    assert_eq!(s(&[("layer", 5), ("layers", 5)]).as_deref(), Some("rule layer layers"));
    assert_eq!(s(&[("layer", 4), ("layers", 5)]), None);
    // 2. pyramid 1 needs ratio_ppm above 0; pyramid 2 needs it 0.
    assert_eq!(s(&[("pyramid", 1)]).as_deref(), Some("rule pyramid ratio_ppm"));
    assert_eq!(s(&[("pyramid", 1), ("recent_window", 0), ("ratio_ppm", 1)]), None);
    let factory = [("recent_window", 0), ("pyramid", 2), ("window_budget", 1)];
    assert_eq!(s(&factory), None);
    assert_eq!(s(&[factory.as_slice(), &[("ratio_ppm", 1)]].concat()).as_deref(), Some("rule pyramid ratio_ppm"));
    // 3. pyramid 2 needs window_budget 1, pyramid 1 needs 0.
    assert_eq!(s(&[("pyramid", 2)]).as_deref(), Some("rule pyramid window_budget"));
    assert_eq!(
        s(&[("pyramid", 1), ("recent_window", 0), ("ratio_ppm", 1), ("window_budget", 1)]).as_deref(),
        Some("rule pyramid window_budget")
    );
    // 4. a recent window with pyramid 2 (pyramid 1's ratio refused it first).
    assert_eq!(s(&[("pyramid", 2), ("window_budget", 1)]).as_deref(), Some("rule pyramid recent_window"));
    // Rule 1 before 2, 2 before 3.
    assert_eq!(s(&[("pyramid", 1), ("layer", 1)]).as_deref(), Some("rule layer layers"));
    assert_eq!(s(&[("pyramid", 2), ("recent_window", 0), ("ratio_ppm", 1)]).as_deref(), Some("rule pyramid ratio_ppm"));
    // After snapkv's own rules and spec/prefill.md's.
    assert_eq!(s(&[("pool_kernel", 4), ("layer", 1)]).as_deref(), Some("rule pool_kernel"));
    assert_eq!(s(&[("budget", 4), ("recent_window", 4), ("layer", 1)]).as_deref(), Some("rule recent_window budget"));
    assert_eq!(s(&[("pyramid", 1), ("ratio_ppm", 1)]).as_deref(), Some("rule ratio_ppm recent_window"));
    // pyramid 1 with adaptive 1: the adaptive rule (ratio_ppm is above
    // 0); pyramid 2 with it: the adaptive rule too (window_budget is 1).
    let ada = [("recent_window", 0), ("adaptive", 1)];
    assert_eq!(s(&[ada.as_slice(), &[("pyramid", 1), ("ratio_ppm", 1)]].concat()).as_deref(), Some("rule adaptive ratio_ppm"));
    assert_eq!(s(&[ada.as_slice(), &[("pyramid", 2), ("window_budget", 1)]].concat()).as_deref(), Some("rule adaptive window_budget"));
    // Before the triggers' and blocks' rules.
    assert_eq!(s(&[("layer", 1), ("slack", 1), ("interval", 1)]).as_deref(), Some("rule layer layers"));
    assert_eq!(s(&[("pyramid", 2), ("block", 3)]).as_deref(), Some("rule pyramid window_budget"));
    // pyramid 2 with block above 1: the block rule (window_budget is 1).
    let blocks = [("budget", 8), ("recent_window", 0), ("pyramid", 2), ("window_budget", 1), ("block", 2)];
    assert_eq!(s(&blocks).as_deref(), Some("rule block window_budget"));
}

#[test]
fn only_snapkv_takes_them() {
    for name in ["full", "window", "streamingllm", "h2o", "tova", "random", "openvino", "knorm", "keydiff", "lagkv"] {
        for param in ["pyramid", "pyramid_beta", "layer", "layers"] {
            assert_eq!(subject(name, &[(param, 1)]), Some(format!("unknown {param}")), "{name} {param}");
        }
    }
    // snapkv at its defaults takes them at theirs.
    assert_eq!(subject("snapkv", &[("pyramid", 0), ("pyramid_beta", 20), ("layer", 0), ("layers", 1)]), None);
}
