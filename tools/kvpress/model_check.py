#!/usr/bin/env python3
"""kvpress 0.5.5's presses inside a model's forward pass, against kvspec.

    tools/.venv-torch/bin/python tools/kvpress/model_check.py [--check]
    tools/.venv-torch/bin/python tools/kvpress/model_check.py --write
    tools/.venv-torch/bin/python tools/kvpress/model_check.py --table

tools/kvpress/vectors_check.py hands each press the tensors a vector describes; this
tool lets kvpress run the way its users run it, end to end:

kvpress's side. A tiny Llama with random weights is built from a config
(MODEL below: 8 query heads in 2 KV groups, 2 layers; nothing downloaded) and
a prompt of PROMPT_TOKENS seeded random token ids is prefilled through the
press, as KVPressTextGenerationPipeline._forward does it (kvpress/
pipeline.py): `with press(model): model.model(input_ids, past_key_values=
DynamicCache())`, BasePress.forward_hook compressing each layer's cache in
the forward pass. The positions the press kept are read back from the
compressed cache, each kept key row matched bit for bit to the key rows of
the same run without a press; the press's own float32 scores are recorded
by wrapping its `score`.

kvspec's side, from the same model and prompt: tools/attention/capture_attention.py
captures each layer's rows (eager: every query's row, the layer's own eager
attention, which is what kvpress reads from `output[1]`; sdpa: the last
SNAPKV_WINDOW queries' rows as kvpress recomputes them,
SnapKVPress.compute_window_attention), tools/attention/import_attention makes the
prefill scenario of each layer, and tools/simulate --json runs the policy
with its `preset=kvpress-0.5.5` and the press's ratio; the press is built
from simulate's effective parameters, so both sides run one configuration.

Runs: every press (SnapKVPress, TOVAPress, StreamingLLMPress and, eager
only, ObservedAttentionPress, which asserts eager attention) at RATIOS, under
eager and sdpa attention, each layer; per layer one case
`model/<attention>/layer<n>/<policy>-ratio-<percent>`, each KV head one set.
Under sdpa each case is checked twice: against kvspec fed kvpress's
recomputed rows (the prediction), and, as
`model/sdpa-on-eager-rows/...`, against kvspec fed the eager rows (what a
user who captured eager attention would predict).

Classes, per set (tools/kvpress/vectors_check.py defines tie, rounding and rule):
  tie       the positions kept by one side only (D) all have equal kvpress
            scores and equal spec scores: torch.topk broke a tie its way;
  rounding  float32 reductions in another order, within 2^-12 relative;
  sdpa      (sdpa-on-eager-rows only) kvspec fed kvpress's recomputed rows
            keeps kvpress's positions on D: the difference is the sdpa
            recomputation's, not a rule's;
  rule      anything else; the committed line must say why (" cause: ").

The disagreements are committed in tools/kvpress/model_disagreements.txt, in
the format of tools/kvpress/disagreements.txt; --check fails on a line
computed and not in the file, a file line no longer computed, or a rule line
without a cause, and ends with "kvpress-model: N passed, M failed";
--table prints press x attention x classes. A press that raises, a capture
or a simulate run that fails is a recorded failure of its case, never a
crash of the tool.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import vectors_check as kc  # noqa: E402  (tools/kvpress/vectors_check.py)

DEFAULT_FILE = os.path.join(HERE, "model_disagreements.txt")
CAPTURE = os.path.join(REPO, "tools", "attention", "capture_attention.py")
MODEL = dict(vocab_size=512, hidden_size=64, intermediate_size=128,
             num_hidden_layers=2, num_attention_heads=8,
             num_key_value_heads=2, initializer_range=0.3)
MODEL_SEED = 20261202
PROMPT_TOKENS = 256
PROMPT_SEED = 11
SNAPKV_WINDOW = 64      # kvpress SnapKVPress's default window_size
RATIOS = (250000, 500000, 750000)
POLICIES = ("snapkv", "tova", "streamingllm", "h2o")
kc.SEVERITY["sdpa"] = kc.SEVERITY["rounding"]
CLASSES = ("agreed", "tie", "rounding", "sdpa", "rule")

HEADER = """\
# kvpress 0.5.5's presses inside a model's forward pass (a tiny random GQA
# Llama, eager and sdpa attention) against kvspec's reference fed the same
# model's attention: every disagreement between the positions the press kept
# and the ones kvspec keeps, one line per (case, KV head). Written by
# `tools/.venv-torch/bin/python tools/kvpress/model_check.py --write`, which
# keeps the causes of lines that reappear; checked by tools/kvpress/check.sh.
#
#   <case-id> set=<kv head> <class> positions=<D> spec=<binary64 scores> kvpress=<float32 scores>
#
# Classes tie, rounding, sdpa, rule: see tools/kvpress/model_check.py.
"""


class ToolError(Exception):
    """A stage (capture, import, simulate) failed: the cases it feeds fail."""


def run(command, what):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolError(f"{what} exited {done.returncode}: "
                        f"{(done.stderr or done.stdout).strip()[-800:]}")
    return done.stdout


def bazel_binaries():
    subprocess.run(["bazel", "build", "//tools:import_attention",
                    "//tools:simulate"], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run(["bazel", "info", "bazel-bin"], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.strip()
    return (os.path.join(out, "tools", "attention", "import_attention"),
            os.path.join(out, "tools", "simulate", "simulate"))


def build_model(work):
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(MODEL_SEED)
    path = os.path.join(work, "model")
    LlamaForCausalLM(LlamaConfig(**MODEL)).save_pretrained(path)
    rng = random.Random(PROMPT_SEED)
    ids = [rng.randrange(MODEL["vocab_size"]) for _ in range(PROMPT_TOKENS)]
    with open(os.path.join(work, "ids.txt"), "w", encoding="ascii") as f:
        f.write(" ".join(map(str, ids)))
    return path, ids


def load(path, attention):
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(
        path, attn_implementation=attention)
    return model.to(dtype=torch.float32).eval()


def press_run(model, ids, press):
    """Prefills `ids` through `press` (None: no press) as kvpress's pipeline
    does; returns (the cache's keys per layer, the press's scores per
    layer [Hkv, L] as float lists)."""
    import torch
    from transformers import DynamicCache
    scores = {}
    if press is not None:
        original = press.score

        def score(module, *args, **kwargs):
            result = original(module, *args, **kwargs)
            scores[module.layer_idx] = result[0].to(torch.float32).tolist()
            return result
        press.score = score
    cache = DynamicCache()
    with torch.no_grad():
        if press is None:
            model.model(input_ids=torch.tensor([ids]), past_key_values=cache)
        else:
            with press(model):
                model.model(input_ids=torch.tensor([ids]),
                            past_key_values=cache)
    return [layer.keys[0].clone() for layer in cache.layers], scores


def kept_positions(full_keys, kept_keys):
    """Per KV head, the positions whose key rows the compressed cache holds,
    matched bit for bit with the uncompressed run's key rows."""
    kept = []
    for g in range(full_keys.shape[0]):
        index = {}
        for p in range(full_keys.shape[1]):
            index.setdefault(full_keys[g, p].numpy().tobytes(), []).append(p)
        positions = []
        for row in kept_keys[g]:
            matches = index.get(row.numpy().tobytes())
            if matches is None or len(matches) != 1:
                raise ToolError(f"KV head {g}: a kept key row matches "
                                f"{'no' if matches is None else len(matches)} "
                                f"key row(s) of the run without a press")
            positions.append(matches[0])
        if len(set(positions)) != len(positions):
            raise ToolError(f"KV head {g}: a position is kept twice")
        kept.append(sorted(positions))
    return kept


class Kvspec:
    """kvspec's side: captures, scenarios and simulate runs, cached."""

    def __init__(self, work, model_path, importer, simulate):
        self.work, self.model_path = work, model_path
        self.importer, self.simulate = importer, simulate
        self.scenarios = {}
        self.errors = {}

    def scenario(self, rows, layer):
        """rows: 'eager' (every query's row) or 'sdpa' (kvpress's window)."""
        key = (rows, layer)
        if key in self.errors:
            raise ToolError(self.errors[key])
        if key in self.scenarios:
            return self.scenarios[key]
        try:
            capture = os.path.join(self.work, f"{rows}.safetensors")
            if not os.path.exists(capture):
                window = PROMPT_TOKENS if rows == "eager" else SNAPKV_WINDOW
                run([sys.executable, CAPTURE, "--model", self.model_path,
                     "--token_ids", os.path.join(self.work, "ids.txt"),
                     "--layers", ",".join(str(n) for n in
                                          range(MODEL["num_hidden_layers"])),
                     "--window", str(window), "--attention", rows,
                     "--output", capture], f"capture_attention ({rows})")
            path = os.path.join(self.work, f"{rows}-layer{layer}.pb")
            run([self.importer, f"--input={capture}", f"--layer={layer}",
                 f"--kv_heads={MODEL['num_key_value_heads']}",
                 f"--output={path}"], f"import_attention ({rows}, {layer})")
        except ToolError as error:
            self.errors[key] = str(error)
            raise
        self.scenarios[key] = path
        return path

    def run(self, rows, layer, policy, ratio_ppm):
        """simulate --json's result: (effective parameters, kept per set,
        spec scores per set {position: binary64})."""
        scenario = self.scenario(rows, layer)
        out = os.path.join(self.work, f"{rows}-{layer}-{policy}-{ratio_ppm}.json")
        run([self.simulate, f"--scenario={scenario}", f"--policy={policy}",
             f"--params=preset=kvpress-0.5.5,ratio_ppm={ratio_ppm}",
             f"--json={out}", "--quiet"], f"simulate {policy}")
        with open(out, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("refusal"):
            raise ToolError(f"simulate refused: {data['refusal']}")
        params = dict(data["effective_parameters"])
        kept = [s["kept"] for s in data["kept_at_end"]]
        (step,) = data["steps"]
        scores, cuts = [], []
        for s in step["sets"]:
            known = kc.rule_scores(policy, params, PROMPT_TOKENS,
                                   len_rows(rows))
            cut = {entry["position"]: float(entry["score"])  # "inf" too
                   for entry in s.get("cut") or []}
            known.update(cut)
            scores.append(known)
            cuts.append(cut)
        return params, kept, scores, cuts


def len_rows(rows):
    return PROMPT_TOKENS if rows == "eager" else SNAPKV_WINDOW


def compare(case_id, policy, spec, kv_kept, kv_scores, explain=None):
    """A kc.CaseResult: spec = (params, kept per set, scores per set)."""
    result = kc.CaseResult(case_id, policy)
    _, spec_kept, spec_scores, cuts = spec
    for g, kept in enumerate(kv_kept):
        s = g if len(spec_kept) == len(kv_kept) else 0
        for position, score in cuts[s].items():
            if math.isfinite(score):
                diff = abs(kv_scores[g][position] - score)
                rel = diff / abs(score) if score else diff
                result.cut_rel_diff = max(result.cut_rel_diff or 0.0, rel)
        spec_set, kv_set = set(spec_kept[s]), set(kept)
        if spec_set == kv_set:
            result.sets.append(kc.SetResult(g, "agreed"))
            continue
        spec_only, kv_only = sorted(spec_set - kv_set), sorted(kv_set - spec_set)
        row = dict(enumerate(kv_scores[g]))
        cls, d, spec_values, kv_values = kc.classify(spec_only, kv_only,
                                                     spec_scores[s], row)
        if explain is not None and cls == "rule" and explain(g, d):
            cls = "sdpa"
        result.sets.append(kc.SetResult(g, cls, d, spec_values, kv_values,
                                        spec_only, kv_only))
    return result


def compute(work, attentions=("eager", "sdpa"), policies=POLICIES,
            ratios=RATIOS, swap_layers=False):
    """Every case's result. swap_layers (the self-test): kvspec is fed the
    other layer's rows, so every score-based case must disagree."""
    import torch
    torch.set_num_threads(1)
    importer, simulate = bazel_binaries()
    model_path, ids = build_model(work)
    kvspec = Kvspec(work, model_path, importer, simulate)
    results = []
    for attention in attentions:
        model = load(model_path, attention)
        full_keys, _ = press_run(model, ids, None)
        for policy in policies:
            if policy == "h2o" and attention == "sdpa":
                continue  # ObservedAttentionPress asserts eager attention
            for ratio in ratios:
                tag = f"{policy}-ratio-{ratio // 10000}"
                layers = range(MODEL["num_hidden_layers"])
                ids_of = {n: f"model/{attention}/layer{n}/{tag}" for n in layers}
                try:
                    spec = {n: kvspec.run(attention, (1 - n) if swap_layers else n,
                                          policy, ratio) for n in layers}
                    press = kc.make_press(policy, spec[0][0])
                    kept_keys, scores = press_run(model, ids, press)
                except Exception as error:  # pylint: disable=broad-except
                    for n in layers:
                        failed = kc.CaseResult(ids_of[n], policy)
                        failed.failure = (f"{type(error).__name__}: {error}"
                                          if isinstance(error, ToolError) else
                                          f"{type(error).__name__}: {error}\n"
                                          f"{traceback.format_exc()}")
                        results.append(failed)
                    continue
                for n in layers:
                    try:
                        kv_kept = kept_positions(full_keys[n], kept_keys[n])
                        if n not in scores:
                            raise ToolError(f"the press never scored layer {n}")
                        results.append(compare(ids_of[n], policy, spec[n],
                                               kv_kept, scores[n]))
                        if attention == "sdpa":
                            predicted = spec[n][1]

                            def explain(g, d, predicted=predicted, kv_kept=kv_kept):
                                s = g if len(predicted) == len(kv_kept) else 0
                                return all((p in predicted[s]) == (p in kv_kept[g])
                                           for p in d)
                            eager_spec = kvspec.run("eager", n, policy, ratio)
                            results.append(compare(
                                f"model/sdpa-on-eager-rows/layer{n}/{tag}", policy,
                                eager_spec, kv_kept, scores[n], explain))
                    except Exception as error:  # pylint: disable=broad-except
                        failed = kc.CaseResult(ids_of[n], policy)
                        failed.failure = f"{type(error).__name__}: {error}"
                        results.append(failed)
    return results


def table(results):
    rows = ["| press | attention | cases | " + " | ".join(CLASSES)
            + " | failed | scores at the cuts |",
            "| --- | --- | ---: | " + " | ".join("---:" for _ in CLASSES)
            + " | ---: | --- |"]
    for policy in POLICIES:
        for attention in ("eager", "sdpa", "sdpa-on-eager-rows"):
            mine = [r for r in results if r.policy == policy
                    and r.id.split("/")[1] == attention]
            if not mine:
                continue
            counts = {c: 0 for c in CLASSES}
            failed = 0
            for r in mine:
                if r.failure:
                    failed += 1
                else:
                    counts[r.cls] += 1
            diffs = [r.cut_rel_diff for r in mine if r.cut_rel_diff is not None]
            scores = (f"within {max(diffs):.1e} (relative)" if diffs
                      else "no cut (positional)")
            rows.append(f"| `{kc.PRESS_NAMES[policy]}` | {attention} | {len(mine)} | "
                        + " | ".join(str(counts[c]) for c in CLASSES)
                        + f" | {failed} | {scores} |")
    rows.append("")
    rows.append("A case is one layer at one ratio; it counts under its worst KV "
                "head (rule > sdpa = rounding > tie > agreed). Scores at the "
                "cuts: the largest relative difference between the press's "
                "float32 score and kvspec's binary64 score of a position in "
                "a cut.")
    return "\n".join(rows)


def selftest(work):
    """The check can fail: fed the other layer's rows, kvspec must disagree
    with every score-based press on some KV head, classified rule; and a
    compressed key row that matches no position is refused."""
    import torch
    failures = 0
    results = compute(work, attentions=("eager",),
                      policies=("snapkv", "tova", "h2o"), ratios=(500000,),
                      swap_layers=True)
    for result in results:
        if result.failure or result.cls != "rule":
            print(f"FAIL selftest: {result.id} with the other layer's rows: "
                  f"{result.failure or result.cls}, expected rule")
            failures += 1
    full = torch.arange(12, dtype=torch.float32).reshape(1, 3, 4)
    if kept_positions(full, full[:, [2, 0]]) != [[0, 2]]:
        print("FAIL selftest: kept_positions does not read back positions 0, 2")
        failures += 1
    try:
        kept_positions(full, torch.full((1, 1, 4), 99.0))
        print("FAIL selftest: a key row matching no position was accepted")
        failures += 1
    except ToolError:
        pass
    passed = len(results) + 2 - failures
    print(f"kvpress-model-selftest: {passed} passed, {failures} failed")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="the default")
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--table", action="store_true")
    mode.add_argument("--selftest", action="store_true")
    parser.add_argument("--file", default=DEFAULT_FILE)
    parser.add_argument("--work", default=None,
                        help="keep the work files here (default: a "
                        "temporary folder, removed)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="kvpress_model_") as temp:
        work = args.work or temp
        os.makedirs(work, exist_ok=True)
        if args.selftest:
            return selftest(work)
        try:
            results = compute(work)
        except Exception as error:  # pylint: disable=broad-except
            print(f"FAIL the model check could not run: {type(error).__name__}: "
                  f"{error}\n{traceback.format_exc()}")
            print("kvpress-model: 0 passed, 1 failed")
            return 1
    kc.print_results(results, [])
    if args.table:
        print()
        print(table(results))
        return 1 if any(r.failure for r in results) else 0
    if args.write:
        lines = kc.write_file(args.file, results, HEADER)
        missing = sum(1 for line in lines if " rule " in line and " cause: " not in line)
        print(f"wrote {len(lines)} lines to {os.path.relpath(args.file, REPO)}"
              + (f"; {missing} rule lines need a cause" if missing else ""))
        return 1 if any(r.failure for r in results) else 0
    passed, failed = kc.check(args.file, results, [])
    print(f"kvpress-model: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
