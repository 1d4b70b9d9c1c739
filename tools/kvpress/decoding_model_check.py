#!/usr/bin/env python3
"""kvpress 0.5.5's DecodingPress(TOVAPress) inside a model's generation loop, against kvspec.

    tools/.venv-torch/bin/python tools/kvpress/decoding_model_check.py [--check]
    tools/.venv-torch/bin/python tools/kvpress/decoding_model_check.py --write
    tools/.venv-torch/bin/python tools/kvpress/decoding_model_check.py --selftest

(tools/kvpress/check.sh runs --selftest and --check.)

tools/kvpress/decoding_check.py hands DecodingPress the keys and rows a vector
describes; this tool lets it run inside a model's decoding, the way
kvpress's pipeline runs it (kvpress/pipeline.py, KVPressTextGenerationPipeline:
the prefill outside the press, since a DecodingPress never compresses a
prefill; then `with press(model):` one `model(...)` forward per new token over
a DynamicCache, with explicit position ids, as `generate_answer` does).

kvpress's side. The tiny random-weight Llama of tools/kvpress/model_check.py
(its MODEL and build_model, imported: 8 query heads in 2 KV groups, 2 layers,
eager attention) prefills PROMPT_TOKENS seeded random token ids without a
press, then decodes DECODE_STEPS fixed seeded token ids (teacher forcing, so
every configuration sees the same tokens) under `DecodingPress(TOVAPress(),
compression_interval=N, target_size=T)`. A forward hook registered on each
layer's attention before the press's own (so it runs first, before any
compression at that step) records the step's new key row per KV head (the
cache's last slot) and the step's eager attention row per query head
(`output[1]`, over the cache's slots in cache order). After every step the
cache's key rows are matched bit for bit to the rows recorded when each
position was appended: that reads back which original position every slot
holds, per layer and KV head (the slots are in torch.topk order after a
compression, kvpress notes 5.1). The rows are matched against this run's own
appends, not an uncompressed run's: after the first compression, layer 1's
keys of later positions differ from an uncompressed run's (layer 0 attended
to fewer positions), while layer 0's are the same bit for bit (checked). The
press's own float32 scores are recorded by wrapping TOVAPress.score.

kvspec's side, from the same run: per layer a scenario (spec/kvspec.proto)
with query_heads 8 and kv_heads 2: the prefill step with its query rows
(the prefill's eager rows), then one decode step per token whose `heads` rows
are the captured rows laid out by original position (0 for a position the
cache does not hold: the model attended only to kept positions; the row's
own weight is left out, as TOVAPress drops it). tools/simulate --json runs
`tova` with `preset=kvpress-0.5.5-decoding,budget=T,interval=N` (granularity
0: one kept set per layer, the mean over the query heads, as TOVAPress
repeats one score for every KV head), and the kept set after every step is
compared with each KV head's.

Runs: CONFIGS (interval x target, prompts within the target, as the preset's
card row asks: kvspec cuts a prefill over `budget`, DecodingPress never
does), each layer one case `decoding-model/eager/layer<n>/tova-interval-<N>-target-<T>`.
At the first step where a KV head's kept set differs from kvspec's, the
difference is classified as tools/kvpress/vectors_check.py classifies
(tie, rounding, rule; kvspec's scores from its cut, binary64, kvpress's from
TOVAPress.score, float32); later steps are not compared (the caches differ
from there on). Lines, committed in tools/kvpress/decoding_model_disagreements.txt:

  <case-id> step=<t> set=<kv head> <class> positions=<D> spec=<binary64> kvpress=<float32>[ cause: <text>]

--check (the default) fails on a computed line missing from the file, a
file line no longer produced, or a rule line without a cause, and ends with
"kvpress-decoding-model: N passed, M failed"; --write rewrites the file,
keeping the causes of lines that reappear; --selftest ends with
"kvpress-decoding-model-selftest: N passed, M failed". A press, capture or
simulate run that raises is a recorded failure of its case, never a crash.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vectors_check as kc  # noqa: E402  (tools/kvpress/vectors_check.py)
import model_check as mc  # noqa: E402  (the tiny model, bazel binaries)
import decoding_check as dc  # noqa: E402  (StepSetResult: lines with step=)

REPO = kc.REPO
DEFAULT_FILE = os.path.join(HERE, "decoding_model_disagreements.txt")
PROMPT_TOKENS = 32
DECODE_STEPS = 24
DECODE_SEED = 12
# (interval, target): every target at or above the prompt (the preset's card
# row); target 40 has firings that remove nothing (at 36 and 40 kept) and
# still restart the count (spec/triggers.md#interval).
CONFIGS = ((4, 32), (8, 32), (4, 40), (8, 40))
ATTENTION = "eager"     # TOVAPress reads output[1]: only eager returns it
PRESET = "kvpress-0.5.5-decoding"

HEADER = """\
# kvpress 0.5.5's DecodingPress(TOVAPress) inside a tiny random GQA Llama's
# generation loop (eager attention) against kvspec's reference
# (tova:preset=kvpress-0.5.5-decoding) fed the same run's attention rows: the
# first decode step of each case at which a KV head's kept positions differ
# from kvspec's, one line per (case, KV head). Written by
# `tools/.venv-torch/bin/python tools/kvpress/decoding_model_check.py --write`
# (which keeps the causes of lines that reappear); checked by
# tools/kvpress/check.sh.
#
#   <case-id> step=<t> set=<kv head> <class> positions=<D> spec=<binary64> kvpress=<float32>
#
# Classes tie, rounding, rule as in tools/kvpress/vectors_check.py. A rule
# line ends with " cause: <what kvpress does differently, and where>".
"""


def token_ids(prompt=PROMPT_TOKENS, steps=DECODE_STEPS):
    """The prompt (model_check's seed) and the decode tokens (DECODE_SEED)."""
    rng = random.Random(mc.PROMPT_SEED)
    prompt_ids = [rng.randrange(mc.MODEL["vocab_size"]) for _ in range(prompt)]
    rng = random.Random(DECODE_SEED)
    return prompt_ids, [rng.randrange(mc.MODEL["vocab_size"]) for _ in range(steps)]


class Recorder:
    """Forward hooks on every layer's attention, registered before the
    press's: per layer the key rows appended at each position, the slots'
    positions in cache order, and each forward's attention rows."""

    def __init__(self, model):
        self.layers = [layer.self_attn for layer in model.model.layers]
        self.hkv = mc.MODEL["num_key_value_heads"]
        self.hq = mc.MODEL["num_attention_heads"]
        n = len(self.layers)
        self.rows_of = [{} for _ in range(n)]     # (layer, g): {key bytes: position}
        self.slots = [[[] for _ in range(self.hkv)] for _ in range(n)]
        self.before = [None] * n     # per layer: slots at the hook (with the new ones)
        self.prefill_rows = [None] * n   # [Hq][q][0..q]
        self.step_rows = [None] * n      # per query head {position: weight}, own left out
        self.next_position = 0
        self.handles = []

    def __enter__(self):
        for module in self.layers:
            self.handles.append(module.register_forward_hook(self.hook, with_kwargs=True))
        return self

    def __exit__(self, *exc):
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def hook(self, module, args, kwargs, output):
        n = module.layer_idx
        keys = kwargs["past_key_values"].layers[n].keys[0]
        q_len = kwargs["hidden_states"].shape[1]
        first = self.next_position
        attn = output[1] if len(output) > 1 else None
        if attn is None:
            raise mc.ToolError(f"layer {n}: no attention weights in output[1] (not eager?)")
        slots = []
        for g in range(self.hkv):
            held = self.slots[n][g]
            if keys.shape[1] != len(held) + q_len:
                raise mc.ToolError(f"layer {n}: the cache holds {keys.shape[1]} slots, "
                                   f"expected {len(held)} + {q_len}")
            for i in range(q_len):
                row = keys[g, len(held) + i].numpy().tobytes()
                if row in self.rows_of[n].get(g, {}):
                    raise mc.ToolError(f"layer {n} KV head {g}: position {first + i}'s key "
                                       f"row equals an earlier position's")
                self.rows_of[n].setdefault(g, {})[row] = first + i
            slots.append(held + list(range(first, first + q_len)))
        self.before[n] = slots
        weights = attn[0].to("cpu").float()
        group = self.hq // self.hkv
        if q_len > 1:
            self.prefill_rows[n] = [[weights[h, q, :q + 1].tolist() for q in range(q_len)]
                                    for h in range(self.hq)]
        else:
            self.step_rows[n] = [dict(zip(slots[h // group][:-1], weights[h, 0, :-1].tolist()))
                                 for h in range(self.hq)]
        return None

    def read_back(self, cache, q_len):
        """After a forward: the slots' positions per layer and KV head."""
        self.next_position += q_len
        for n in range(len(self.layers)):
            keys = cache.layers[n].keys[0]
            for g in range(self.hkv):
                positions = []
                for row in keys[g]:
                    p = self.rows_of[n][g].get(row.numpy().tobytes())
                    if p is None:
                        raise mc.ToolError(f"layer {n} KV head {g}: a cached key row matches "
                                           f"no appended row")
                    positions.append(p)
                if len(set(positions)) != len(positions):
                    raise mc.ToolError(f"layer {n} KV head {g}: a position is cached twice")
                self.slots[n][g] = positions


def kvpress_run(model, prompt_ids, decode_ids, press, record_scores=True):
    """Prefills without the press, decodes under it (press None: no press).
    Returns dict: prefill_rows[layer], steps[t-1] = {"rows": [layer][Hq]
    {pos: w}, "slots_in": [layer][g] slots at the hook, "kept": [layer][g]
    sorted, "scores": {layer: [g] {pos: f32}}}, layer0_keys: {position: bytes}
    per KV head."""
    import torch
    from transformers import DynamicCache
    cache = DynamicCache()
    recorder = Recorder(model)
    scored = {}
    if press is not None and record_scores:
        original = press.base_press.score

        def score(module, hidden_states, keys, values, attentions, kwargs):
            result = original(module, hidden_states, keys, values, attentions, kwargs)
            scored[module.layer_idx] = result[0].to(torch.float32).tolist()
            return result
        press.base_press.score = score
    steps = []
    with torch.no_grad(), recorder:
        model.model(input_ids=torch.tensor([prompt_ids]), past_key_values=cache)
        recorder.read_back(cache, len(prompt_ids))
        prefill_rows = list(recorder.prefill_rows)
        context = press(model) if press is not None else _null()
        with context:
            for i, token in enumerate(decode_ids):
                position = len(prompt_ids) + i
                scored.clear()
                model(input_ids=torch.tensor([[token]]), past_key_values=cache,
                      position_ids=torch.tensor([[position]]))
                slots_in = [list(s) for s in recorder.before]
                recorder.read_back(cache, 1)
                scores = {n: [dict(zip(slots_in[n][g], s[g])) for g in range(len(s))]
                          for n, s in scored.items()}
                steps.append({"rows": list(recorder.step_rows), "slots_in": slots_in,
                              "kept": [[sorted(s) for s in layer] for layer in recorder.slots],
                              "lengths": [len(layer[0]) for layer in recorder.slots],
                              "scores": scores})
    layer0 = [{p: row for row, p in recorder.rows_of[0][g].items()}
              for g in range(recorder.hkv)]
    return {"prefill_rows": prefill_rows, "steps": steps, "layer0_keys": layer0}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def write_scenario(path, run, layer, prompt):
    kvspec_pb2 = kc.load_proto_modules()
    hq, hkv = mc.MODEL["num_attention_heads"], mc.MODEL["num_key_value_heads"]
    scenario = kvspec_pb2.Scenario(id=os.path.basename(path), query_heads=hq, kv_heads=hkv)
    step = scenario.steps.add(admit=prompt)
    for h in range(hq):
        for q in range(prompt):
            step.queries.add(weights=run["prefill_rows"][layer][h][q])
    for t, record in enumerate(run["steps"]):
        position = prompt + t
        step = scenario.steps.add(admit=1)
        for h in range(hq):
            row = record["rows"][layer][h]
            step.heads.add(weights=[row.get(p, 0.0) for p in range(position)])
    with open(path, "wb") as f:
        f.write(scenario.SerializeToString())


def simulate(simulate_bin, scenario, out, interval, target):
    """Per step (decode steps 1..), kvspec's kept set and cut scores
    {position: binary64}; refusals raise."""
    mc.run([simulate_bin, f"--scenario={scenario}", "--policy=tova",
            f"--params=preset={PRESET},budget={target},interval={interval}",
            f"--json={out}", "--json_kept=every", "--quiet"], "simulate tova")
    with open(out, encoding="utf-8") as f:
        data = json.load(f)
    if data.get("refusal"):
        raise mc.ToolError(f"simulate refused: {data['refusal']}")
    if len(data["kept_sets"]) != 1:
        raise mc.ToolError(f"{len(data['kept_sets'])} kept sets: the preset's granularity "
                           f"is the layer (one set)")
    out_steps = []
    for step in data["steps"]:
        (s,) = step["sets"]
        out_steps.append((sorted(s["kept"]), {c["position"]: float(c["score"])
                                              for c in s.get("cut") or []},
                          list(s["victims"])))
    return out_steps


def compare_case(case_id, run, layer, spec_steps, prompt):
    """A kc.CaseResult: every decode step's kept set per KV head against
    kvspec's, up to the first step that differs."""
    result = kc.CaseResult(case_id, "tova")
    result.stats = {"steps": 0, "firings": 0, "evicted": 0}
    if spec_steps[0][0] != list(range(prompt)):
        raise mc.ToolError(f"kvspec's prefill step keeps {len(spec_steps[0][0])} of {prompt}")
    for t, record in enumerate(run["steps"], start=1):
        spec_kept, spec_scores, victims = spec_steps[t]
        kv_kept = record["kept"][layer]
        differ = False
        for g, kept in enumerate(kv_kept):
            if kept == spec_kept:
                continue
            differ = True
            kv_scores = record["scores"].get(layer, [{}] * len(kv_kept))[g]
            spec_set, kv_set = set(spec_kept), set(kept)
            spec_only, kv_only = sorted(spec_set - kv_set), sorted(kv_set - spec_set)
            if not kv_scores:   # kvpress did not fire: nothing to rank by
                d = sorted(spec_set ^ kv_set)
                result.sets.append(dc.StepSetResult(t, g, "rule", d,
                                                    [spec_scores.get(p) for p in d],
                                                    [float("nan")] * len(d),
                                                    spec_only, kv_only))
                continue
            cls, d, sv, kv = kc.classify(spec_only, kv_only, spec_scores, kv_scores)
            result.sets.append(dc.StepSetResult(t, g, cls, d, sv, kv, spec_only, kv_only))
        result.stats["steps"] += 1
        fired = record["scores"].get(layer)
        if fired and victims and not differ:
            ranked = sorted(spec_scores.items(), key=lambda item: (item[1], item[0]))
            if len(ranked) > len(victims) and ranked[len(victims) - 1][1] > 0:
                last, after = ranked[len(victims) - 1][1], ranked[len(victims)][1]
                gap = (after - last) / last
                result.stats["gap"] = min(result.stats.get("gap", gap), gap)
            for p, value in spec_scores.items():
                for g_scores in fired:
                    if p in g_scores and value:
                        rel = abs(g_scores[p] - value) / abs(value)
                        result.cut_rel_diff = max(result.cut_rel_diff or 0.0, rel)
        if victims:
            result.stats["firings"] += 1
            result.stats["evicted"] += len(victims)
        if differ:
            result.notes.append(f"first difference at decode step {t} of "
                                f"{len(run['steps'])}; later steps not compared")
            return result
    result.sets.append(dc.StepSetResult(len(run["steps"]), 0, "agreed"))
    return result


def compute(work, configs=CONFIGS, prompt=PROMPT_TOKENS, steps=DECODE_STEPS,
            spec_interval=None):
    """Every case's result. spec_interval (the self-test): kvspec runs with
    that interval instead of the press's, so every case must disagree."""
    import torch
    from kvpress import DecodingPress, TOVAPress
    torch.set_num_threads(1)
    _, simulate_bin = mc.bazel_binaries()
    model_path, _ = mc.build_model(work)
    model = mc.load(model_path, ATTENTION)
    prompt_ids, decode_ids = token_ids(prompt, steps)
    layers = range(mc.MODEL["num_hidden_layers"])
    results = []
    reference = kvpress_run(model, prompt_ids, decode_ids, None)
    for interval, target in configs:
        ids_of = {n: f"decoding-model/{ATTENTION}/layer{n}/tova-interval-{interval}-target-{target}"
                  for n in layers}
        try:
            press = DecodingPress(TOVAPress(), compression_interval=interval,
                                  target_size=target)
            run = kvpress_run(model, prompt_ids, decode_ids, press)
            if run["layer0_keys"] != reference["layer0_keys"]:
                raise mc.ToolError("layer 0's key rows differ from the run without a press")
        except Exception as error:  # pylint: disable=broad-except
            for n in layers:
                failed = kc.CaseResult(ids_of[n], "tova")
                failed.failure = (f"{type(error).__name__}: {error}"
                                  if isinstance(error, mc.ToolError) else
                                  f"{type(error).__name__}: {error}\n{traceback.format_exc()}")
                results.append(failed)
            continue
        for n in layers:
            try:
                name = f"layer{n}-i{interval}-t{target}"
                scenario = os.path.join(work, name + ".pb")
                write_scenario(scenario, run, n, prompt)
                spec_steps = simulate(simulate_bin, scenario, os.path.join(work, name + ".json"),
                                      spec_interval or interval, target)
                result = compare_case(ids_of[n], run, n, spec_steps, prompt)
                result.lengths = [s["lengths"][n] for s in run["steps"]]
                results.append(result)
            except Exception as error:  # pylint: disable=broad-except
                failed = kc.CaseResult(ids_of[n], "tova")
                failed.failure = f"{type(error).__name__}: {error}"
                results.append(failed)
    return results


def schedule(prompt, interval, target, steps):
    """spec/triggers.md#interval counted by hand: the kept count after each
    decode step, one position a step, the prefill within the target."""
    kept, count, out = prompt, 0, []
    for _ in range(steps):
        kept += 1
        count += 1
        if count >= interval or 1 >= target:
            count = 0
            kept = min(kept, target)
        out.append(kept)
    return out


def selftest(work):
    """DecodingPress alone on the tiny model, against spec/triggers.md's
    counting: prompt 4, interval 2, target 6 (hand-worked: 5, 6 fires with
    six kept and removes nothing, 7, 8 fires and cuts to 6, 7, 6), the
    prefill run inside the press left whole; then every configuration's cache
    lengths against the counting; then the check can fail: kvspec run with
    interval + 1 must disagree with every case, classified rule."""
    import torch
    from kvpress import DecodingPress, TOVAPress
    torch.set_num_threads(1)
    passes, failures = [], []

    def expect(what, ok):
        print(("ok   " if ok else "FAIL ") + what)
        (passes if ok else failures).append(what)

    try:
        model_path, _ = mc.build_model(work)
        model = mc.load(model_path, ATTENTION)
        prompt_ids, decode_ids = token_ids(4, 6)
        press = DecodingPress(TOVAPress(), compression_interval=2, target_size=6)
        from transformers import DynamicCache
        cache = DynamicCache()
        with torch.no_grad(), press(model):
            model.model(input_ids=torch.tensor([prompt_ids]), past_key_values=cache)
            prefill = [layer.keys.shape[2] for layer in cache.layers]
            lengths = []
            for i, token in enumerate(decode_ids):
                model(input_ids=torch.tensor([[token]]), past_key_values=cache,
                      position_ids=torch.tensor([[4 + i]]))
                lengths.append([layer.keys.shape[2] for layer in cache.layers])
        expect(f"a prefill of 4 inside the press is left whole ({prefill})", prefill == [4, 4])
        hand = [5, 6, 7, 6, 7, 6]
        expect(f"interval 2, target 6, prompt 4: cache lengths {lengths} are {hand} in "
               f"every layer", lengths == [[n, n] for n in hand]
               and schedule(4, 2, 6, 6) == hand)
    except Exception as error:  # pylint: disable=broad-except
        expect(f"the hand-worked case runs ({type(error).__name__}: {error})", False)

    results = compute(work)
    for r in results:
        want = schedule(PROMPT_TOKENS, int(r.id.split("-interval-")[1].split("-")[0]),
                        int(r.id.split("-target-")[1]), DECODE_STEPS)
        got = getattr(r, "lengths", None)
        expect(f"{r.id}: cache lengths follow spec/triggers.md's counting"
               + (f" ({r.failure})" if r.failure else f" ({got})"),
               not r.failure and got == want)
    swapped = compute(work, configs=CONFIGS[:1], spec_interval=CONFIGS[0][0] + 1)
    for r in swapped:
        expect(f"{r.id} against kvspec with interval {CONFIGS[0][0] + 1}: "
               f"{r.failure or r.cls}, expected rule", not r.failure and r.cls == "rule")
    print(f"kvpress-decoding-model-selftest: {len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


def summary(results, seconds):
    done = [r for r in results if not r.failure]
    steps = sum(r.stats["steps"] for r in done)
    firings = sum(r.stats["firings"] for r in done)
    evicted = sum(r.stats["evicted"] for r in done)
    agreed = sum(1 for r in done if r.cls == "agreed")
    by_class = {}
    for r in done:
        for s in r.sets:
            if s.cls != "agreed":
                by_class[s.cls] = by_class.get(s.cls, 0) + 1
    print(f"{len(results)} cases ({len(results) - len(done)} failed), {steps} decode steps "
          f"compared (x {mc.MODEL['num_key_value_heads']} KV heads), {firings} evicting "
          f"firings, {evicted} positions evicted per layer set; {agreed} of {len(done)} "
          f"agree at every step; disagreements by class: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(by_class.items())) or 'none'}; "
          f"{seconds:.1f} s")
    diffs = [r.cut_rel_diff for r in done if r.cut_rel_diff is not None]
    gaps = [r.stats["gap"] for r in done if "gap" in r.stats]
    if diffs and gaps:
        print(f"kvpress's float32 scores within {max(diffs):.1e} (relative) of kvspec's "
              f"binary64 ones at the cuts; the closest cut: the first survivor "
              f"{min(gaps):.1e} (relative) above the last victim")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="the default")
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--selftest", action="store_true")
    parser.add_argument("--file", default=DEFAULT_FILE)
    parser.add_argument("--work", default=None,
                        help="keep the work files here (default: a temporary folder, removed)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kvpress_decoding_model_") as temp:
        work = args.work or temp
        os.makedirs(work, exist_ok=True)
        if args.selftest:
            try:
                return selftest(work)
            except Exception as error:  # pylint: disable=broad-except
                print(f"FAIL the self-test could not run: {type(error).__name__}: {error}\n"
                      f"{traceback.format_exc()}")
                print("kvpress-decoding-model-selftest: 0 passed, 1 failed")
                return 1
        try:
            results = compute(work)
        except Exception as error:  # pylint: disable=broad-except
            print(f"FAIL the decoding model check could not run: {type(error).__name__}: "
                  f"{error}\n{traceback.format_exc()}")
            print("kvpress-decoding-model: 0 passed, 1 failed")
            return 1
    kc.print_results(results, [])
    summary(results, time.monotonic() - start)
    if args.write:
        lines = kc.write_file(args.file, results, HEADER)
        missing = sum(1 for line in lines if " rule " in line and " cause: " not in line)
        print(f"wrote {len(lines)} lines to {os.path.relpath(args.file, REPO)}"
              + (f"; {missing} rule lines need a cause" if missing else ""))
        return 1 if any(r.failure for r in results) else 0
    passed, failed = kc.check(args.file, results, [], "decoding-model")
    print(f"kvpress-decoding-model: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
