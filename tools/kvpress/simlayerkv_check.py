#!/usr/bin/env python3
"""kvpress 0.5.5's SimLayerKVPress against kvspec's simlayerkv.

    tools/.venv-torch/bin/python tools/kvpress/simlayerkv_check.py --vectors
    tools/.venv-torch/bin/python tools/kvpress/simlayerkv_check.py [--model smollm2]

(tools/kvpress/check.sh runs both, and the model run on SmolLM2 too.)

SimLayerKVPress (kvpress/presses/simlayerkv_press.py) is not a ScorerPress:
it decides per layer whether the layer is lazy, from the attention of the
prompt's last n_last queries, which it computes itself
(SnapKVPress.compute_window_attention: from the hidden states, with RoPE,
on the first L - n_last keys); a lazy layer keeps its first n_initial and
last n_recent - n_last positions (spec/policies/simlayerkv.md).

--vectors: every simlayerkv vector case whose first step is a prefill
carrying at least n_last rows per head. SimLayerKVPress.compress runs on it
with compute_window_attention replaced by the case's query rows on the
first L - n_last keys, as that function returns them; the decision, the
threshold and the slices are the press's own. The kept positions are read
back from the gathered values' channel 0 (vectors_check.build_inputs) and
compared with the case's expected kept set at step 0, every KV head.
Ends with "kvpress-simlayerkv-vectors: N passed, M failed".

Without --vectors: the press inside a model's forward pass
(model_check.py's subjects: the tiny random Llama, or SmolLM2-135M-Instruct
with --model smollm2), sdpa attention, at the PARAMETERS below (n_recent
fitted to the prompt: a quarter of it), each layer checked. kvspec's side
is tools/attention/capture_attention.py's sdpa capture (the last 64
queries' rows as compute_window_attention recomputes them, of which
simlayerkv reads the last n_last) imported as a prefill scenario and run by
tools/simulate with preset=kvpress-0.5.5 and the case's parameters. The
kept positions are read back by matching key rows with the run without a
press (model_check.kept_positions). A case agrees when every KV head keeps
kvspec's set. A disagreement is "rounding" when the layer's score (the
card's binary64 sum over the captured float32 rows, computed here) is
within 2^-12 relative of the threshold, where kvpress's float32 mean may
fall on the other side; that is reported and passes. Anything else fails.
Ends with "kvpress-simlayerkv-<subject>: N passed, M failed".

--selftest: the tiny model with kvspec fed the other layer's rows, whose
scores differ (0.32 against 0.06 at n_last 1): some case must fail, or the
comparison could not tell layers apart. Ends with
"kvpress-simlayerkv-selftest: 1 passed, 0 failed" when one does.
"""
import argparse
import math
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import model_check as mc  # noqa: E402  (tools/kvpress/model_check.py)
import vectors_check as kc  # noqa: E402  (tools/kvpress/vectors_check.py)

# spec/policies/simlayerkv.md#parameters: kvpress's defaults.
DEFAULTS = {"n_initial": 4, "n_recent": 1024, "n_last": 1,
            "lazy_threshold_ppm": 1000000}
# The model cases: (n_last, threshold ppm), n_recent a quarter of the prompt.
PARAMETERS = [(n_last, threshold) for n_last in (1, 4)
              for threshold in (100000, 300000, 500000, 700000, 900000)]
ROUNDING_REL = 2.0 ** -12


def window_attention_from(attentions):
    """A stand-in for SnapKVPress.compute_window_attention returning the
    carried rows of the last `window_size` queries on the first
    L - window_size keys."""
    def window_attention(module, hidden_states, keys, window_size, position_embeddings):
        return attentions[..., -window_size:, :-window_size]
    return window_attention


def check_vector(case, scenarios):
    """One vector case: (passed, text)."""
    import torch
    from kvpress import SimLayerKVPress, SnapKVPress
    params = dict(DEFAULTS)
    for p in case.policy.parameters:
        if p.name not in params:
            raise kc.CaseError(f"unknown parameter {p.name!r} for simlayerkv")
        params[p.name] = p.value
    scenario = scenarios[case.scenario_id]
    hq = scenario.query_heads if scenario.HasField("query_heads") else 1
    hkv = scenario.kv_heads if scenario.HasField("kv_heads") else 1
    step = scenario.steps[0]
    length = step.admit
    attentions, keys, values, hidden_states, _ = kc.build_inputs(step, length, hq, hkv)
    record = case.expected.steps[0]
    spec_kept = sorted(set(range(length)) - set(record.victims))
    press = SimLayerKVPress(lazy_threshold=params["lazy_threshold_ppm"] / 1e6,
                            n_last=params["n_last"], n_recent=params["n_recent"],
                            n_initial=params["n_initial"])
    original = SnapKVPress.compute_window_attention
    SnapKVPress.compute_window_attention = staticmethod(window_attention_from(attentions))
    try:
        with torch.no_grad():
            _, new_values = press.compress(kc.make_module(hq, hkv), hidden_states, keys,
                                           values, None, {"position_embeddings": None})
    finally:
        SnapKVPress.compute_window_attention = original
    for g in range(hkv):
        kv_kept = [int(v) for v in new_values[0, g, :, 0].tolist()]
        if kv_kept != spec_kept:
            return False, (f"KV head {g}: kvpress keeps {len(kv_kept)}, the vector "
                           f"{len(spec_kept)}; vector only "
                           f"{sorted(set(spec_kept) - set(kv_kept))[:8]}, kvpress only "
                           f"{sorted(set(kv_kept) - set(spec_kept))[:8]}")
    return True, f"agreed ({len(spec_kept)} of {length} kept)"


def vectors_main(vectors_dir):
    import torch
    torch.set_num_threads(1)
    kvspec_pb2 = kc.load_proto_modules()
    path = os.path.join(vectors_dir, "simlayerkv.pb")
    with open(path, "rb") as f:
        vf = kvspec_pb2.VectorFile.FromString(f.read())
    scenarios = {s.id: s for s in vf.scenarios}
    passed = failed = skipped = 0
    for case in vf.cases:
        if case.expected.HasField("rejection") and case.expected.rejection.category != 0:
            continue
        scenario = scenarios.get(case.scenario_id)
        params = dict(DEFAULTS, **{p.name: p.value for p in case.policy.parameters})
        hq = scenario.query_heads if scenario.HasField("query_heads") else 1
        if (scenario.HasField("trace") or not scenario.steps[0].queries
                or len(scenario.steps[0].queries) // hq < params["n_last"]):
            skipped += 1  # kvpress always has n_last queries of a prefill
            continue
        try:
            ok, text = check_vector(case, scenarios)
        except Exception as error:  # pylint: disable=broad-except
            ok, text = False, f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
        print(f"{case.id}: {text}" if ok else f"FAIL {case.id}: {text}")
        passed, failed = passed + ok, failed + (not ok)
    print(f"({skipped} cases kvpress cannot take: a trace, no prefill first, "
          f"or fewer rows than n_last)")
    if passed + failed == 0:
        failed = 1
        print("FAIL no simlayerkv case to run")
    print(f"kvpress-simlayerkv-vectors: {passed} passed, {failed} failed")
    return 1 if failed else 0


def spec_score(rows, n_initial, n_recent, n_last):
    """The card's score (simlayerkv.md#how-it-works) over the captured rows
    [Hq, m, L] (float32, m >= n_last), in binary64 in the card's order."""
    hq, m, length = rows.shape
    prefix = length - n_last
    mean = []
    for i in range(prefix):
        s = 0.0
        for h in range(hq):
            for j in range(m - n_last, m):
                s += float(rows[h, j, i])
        mean.append(s / (hq * n_last))
    initial = 0.0
    for i in range(n_initial):
        initial += mean[i]
    recent = 0.0
    for i in range(prefix - n_recent, prefix):
        recent += mean[i]
    return initial + recent


def model_main(work, subject_name, swap_layers=False):
    import json
    import torch
    from kvpress import SimLayerKVPress
    from safetensors import safe_open
    torch.set_num_threads(1)
    importer, simulate = mc.bazel_binaries()
    if subject_name == "smollm2":
        subject = mc.real_subject(work, "smollm2", mc.SMOLLM2_TEXT, mc.SMOLLM2_TOKENS, None)
    else:
        subject = mc.tiny_subject(work)
    kvspec = mc.Kvspec(work, subject, importer, simulate)
    length = len(subject.ids)
    n_recent = length // 4
    model = mc.load(subject.path, "sdpa")
    if subject.truncate:
        model.model.layers = model.model.layers[:max(subject.layers) + 1]
        model.config.num_hidden_layers = max(subject.layers) + 1
    full_keys, _ = mc.press_run(model, subject.ids, None)
    layers = subject.layers
    # The self-test: kvspec fed the next checked layer's rows.
    fed = {n: layers[(i + 1) % len(layers)] if swap_layers else n
           for i, n in enumerate(layers)}
    passed = failed = 0
    lazy_count = 0
    for n_last, threshold in PARAMETERS:
        press = SimLayerKVPress(lazy_threshold=threshold / 1e6, n_last=n_last,
                                n_recent=n_recent, n_initial=4)
        # model_check.press_run records press.score by wrapping it;
        # SimLayerKVPress has none (nothing calls this stand-in).
        press.score = None
        try:
            kept_keys, _ = mc.press_run(model, subject.ids, press)
        except Exception as error:  # pylint: disable=broad-except
            for n in subject.layers:
                print(f"FAIL {subject.label}/sdpa/layer{n}/simlayerkv: "
                      f"SimLayerKVPress raised {type(error).__name__}: {error}")
                failed += 1
            continue
        for n in subject.layers:
            case_id = (f"{subject.label}/sdpa/layer{n}/simlayerkv-last-{n_last}-"
                       f"threshold-{threshold // 10000}")
            try:
                scenario = kvspec.scenario("sdpa", fed[n])
                out = os.path.join(work, f"slk-{n}-{n_last}-{threshold}.json")
                mc.run([simulate, f"--scenario={scenario}", "--policy=simlayerkv",
                        f"--params=preset=kvpress-0.5.5,n_recent={n_recent},"
                        f"n_last={n_last},lazy_threshold_ppm={threshold}",
                        f"--json={out}", "--quiet"], "simulate simlayerkv")
                with open(out, encoding="utf-8") as f:
                    data = json.load(f)
                if data.get("refusal"):
                    raise mc.ToolError(f"simulate refused: {data['refusal']}")
                (spec_set,) = [s["kept"] for s in data["kept_at_end"]]
                kv_kept = mc.kept_positions(full_keys[n], kept_keys[n])
                with safe_open(os.path.join(work, "sdpa.safetensors"), "np") as f:
                    rows = f.get_tensor(f"window.{fed[n]}")
                score = spec_score(rows, 4, n_recent, n_last)
                lazy = len(spec_set) < length
                lazy_count += lazy
                what = (f"score {score:.6f}, threshold {threshold / 1e6}: "
                        f"{'lazy' if lazy else 'not lazy'}")
                if all(k == spec_set for k in kv_kept):
                    print(f"{case_id}: agreed ({what})")
                    passed += 1
                elif abs(score - threshold / 1e6) <= ROUNDING_REL * threshold / 1e6:
                    print(f"{case_id}: rounding ({what}; kvpress's float32 score "
                          f"falls on the other side)")
                    passed += 1
                else:
                    print(f"FAIL {case_id}: rule ({what}; kvpress keeps "
                          f"{[len(k) for k in kv_kept]}, kvspec {len(spec_set)})")
                    failed += 1
            except Exception as error:  # pylint: disable=broad-except
                print(f"FAIL {case_id}: {type(error).__name__}: {error}")
                failed += 1
    print(f"({lazy_count} of {passed + failed} cases lazy in kvspec)")
    if swap_layers:
        print(f"(the swapped run: {passed} agreed, {failed} differed)")
    else:
        print(f"kvpress-simlayerkv-{subject.label}: {passed} passed, {failed} failed")
    return failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", action="store_true",
                        help="the vector cases (model-free) instead of a model")
    parser.add_argument("--vectors_dir", default=os.path.join(REPO, "vectors"))
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--selftest", action="store_true",
                        help="kvspec fed the other layer's rows (tiny model): some "
                             "case must fail")
    args = parser.parse_args()
    try:
        if args.vectors:
            return vectors_main(args.vectors_dir)
        with tempfile.TemporaryDirectory() as work:
            if args.selftest:
                failed = model_main(work, "tiny", swap_layers=True)
                print("(the self-test: kvspec fed the other layer's rows; some case must fail)")
                print(f"kvpress-simlayerkv-selftest: {int(failed > 0)} passed, "
                      f"{int(failed == 0)} failed")
                return 0 if failed else 1
            return 1 if model_main(work, args.model) else 0
    except mc.UsageError as error:
        print(f"simlayerkv_check: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
