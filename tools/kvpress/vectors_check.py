#!/usr/bin/env python3
"""Runs NVIDIA kvpress 0.5.5's own presses on the vectors that use a kvpress preset.

    tools/.venv-torch/bin/python tools/kvpress/vectors_check.py [--table]   # the default
    tools/.venv-torch/bin/python tools/kvpress/vectors_check.py --selftest

(tools/kvpress/check.sh runs --selftest with the right interpreter;
tools/setup.sh --tests makes tools/.venv-torch from
tools/requirements-torch.txt.)

The check of these cases is the conformance runner's since spec 0.15.0:
conformance/engines/kvpress drives the same presses through the functions
below, in float32, bfloat16 and float16, and the runner judges them at the
precision declared (spec/protocol.md#precision); what it cannot decide and
no precision explains is listed in conformance/engines/kvpress/
kvpress.expectations. This file keeps the functions that drive kvpress
(build_inputs, make_press, run_press, shared with that adapter and with
model_check.py), the classification into tie, rounding and rule that the
model checks still use, and a float32 table per press.

Every case of vectors/*.pb whose flags contain "preset.kvpress-0.5.5" has an
explicit-steps scenario whose first step is a prefill step
(spec/prefill.md#query-rows). For each such case this tool builds the float32
tensors a model's eager attention layer would hand kvpress at prefill (the
query rows in a [1, Hq, L, L] attention tensor, keys whose channel 0 is the
position), runs the press's own `compress` (kvpress chooses, with its own
`score`, `compute_n_kept` and `torch.topk`), reads the kept positions back
from the gathered keys, and compares them with the case's expected kept set
per kept set. Each disagreement is classified:

  tie       every position kept by one side and not the other (D) has the
            same kvpress float32 score and the same spec binary64 score:
            torch.topk broke a tie its own way, kvspec by position;
  rounding  every position of D has a known spec score (from the cut, or
            from the card's rule, below), each kvpress float32 score is
            within float32 rounding (relative 2^-12) of its spec score, and
            the two orders differ only there: float32 reductions in another
            order (equal kvpress scores for different spec ones, or the
            reverse, or the two in opposite orders);
  rule      anything else: kvpress computes something else than the spec;
            the committed line must say why (" cause: ..."). Also rule: the
            two sides keep different numbers of positions, or a side's
            choice does not follow from its own scores over D.

Spec scores come from the expected record's cut (victims, then up to 4 lowest
survivors, binary64). Two more are known from the cards' rules without a cut:
snapkv's window positions score +infinity with window_budget 0
(spec/policies/snapkv.md#at-prefill), and streamingllm, a positional policy
with no cut, ranks by the implicit scores of its card ("non-sinks by ascending
position, then sinks by ascending position": every non-sink 0, every sink 1,
ties to the lower position).

--table prints every disagreement at float32 as a line

  <case-id> set=<s> <class> positions=<D ascending> spec=<values> kvpress=<values>

and then press x cases agreed / tie / rounding / rule (a case's class is its
worst set's: rule > rounding > tie > agreed). A malformed vector or an
exception from a press is a failure naming the case; the other cases still
run. (The model checks write such lines to their disagreement files with
write_file and check them with check.)

What kvpress does at prefill, verified in the installed package
(site-packages/kvpress, 0.5.5):

- kvpress/pipeline.py, KVPressTextGenerationPipeline._forward: the context
  is prefilled in one forward pass (`self.model.model(input_ids=context_ids,
  past_key_values=cache)`) inside `with press(self.model)`, which registers
  BasePress.forward_hook on every attention layer (kvpress/presses/
  base_press.py, BasePress.__call__).
- kvpress/presses/base_press.py, BasePress.forward_hook: only when
  is_prefilling (cache_position[-1] + 1 == q_len), it takes the layer's keys
  and values from the cache (kvpress/utils.py, extract_keys_and_values) and
  calls `self.compress(module, hidden_states, keys, values, output[1],
  kwargs)`, where output[1] is the layer's attention weights [bsz, Hq, L, L]
  (eager attention, transformers' eager_attention_forward: softmax rows,
  exactly 0 above the diagonal), then stores the returned keys and values
  in the cache. That call is what this tool makes (--selftest also runs
  forward_hook itself on a DynamicCache and checks it keeps the same keys).
- kvpress/presses/scorer_press.py, ScorerPress.compress: scores =
  self.score(...); n_kept = compute_n_kept(k_len, compression_ratio)
  (kvpress/utils.py: max(1, int(k_len * (1 - compression_ratio))));
  indices = scores.topk(n_kept, dim=-1).indices; keys.gather(2, indices).
  It returns the inputs unchanged when compression_ratio == 0.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensor_scores  # noqa: E402  (tools/kvpress/tensor_scores.py)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
FLAG = "preset.kvpress-0.5.5"
GEN_DIR = os.path.join(REPO, "conformance", "ports", "python", "kvspec_port", "_gen")
HEAD_DIM = 8
HIDDEN = 8
# "rounding": a kvpress float32 score within this relative distance of its
# spec binary64 score. Summing n float32 terms in another order moves the
# result by at most about n * 2^-24 relative (n = 96 rows: 2^-17.4); a rule
# difference (another divisor, another window) moves it by far more.
ROUNDING_REL = 2.0 ** -12

PRESS_NAMES = {"h2o": "ObservedAttentionPress", "tova": "TOVAPress",
               "snapkv": "SnapKVPress", "streamingllm": "StreamingLLMPress",
               "knorm": "KnormPress", "keydiff": "KeyDiffPress",
               "lagkv": "LagKVPress", "pyramidkv": "PyramidKVPress",
               "pyramidkv-w8": "PyramidKVPress(window_size=8, beta=4)",
               "perlayer-snapkv": "PerLayerCompressionPress(SnapKVPress)",
               "perlayer-knorm": "PerLayerCompressionPress(KnormPress)"}
# Cases run: the kvpress preset of each policy, and PyramidKVPress's
# (snapkv with pyramid 1, spec/policies/pyramidkv.md, since 0.19.0).
PYRAMID_FLAG = "preset.kvpress-0.5.5-pyramidkv"
# The policies scored from the scenario's keys (spec/tensors.md), and those
# from its keys and values (since 0.18.0).
KEY_POLICIES = ("knorm", "keydiff")
VALUE_POLICIES = ("lagkv",)
TENSOR_POLICIES = KEY_POLICIES + VALUE_POLICIES
CLASSES = ("agreed", "tie", "rounding", "rule")
SEVERITY = {name: rank for rank, name in enumerate(CLASSES)}

# Each policy's parameters and defaults (the cards' Parameters tables,
# spec/policies/<policy>.md), and the values of the kvpress-0.5.5 preset
# (the cards' "At prefill" preset tables) that a press cannot be told
# otherwise: a case that sets another value is run all the same, with a note.
DEFAULTS = {
    "snapkv": {"budget": 512, "recent_window": 16, "obs_window": 16, "pool_kernel": 5,
               "granularity": 1, "aggregation": 0, "adaptive": 0, "safeguard_permille": 200,
               "prefill_only": 0, "ratio_ppm": 0, "window_reduce": 0, "pooling": 0,
               "window_budget": 0, "pyramid": 0, "pyramid_beta": 20, "layer": 0, "layers": 1},
    "h2o": {"budget": 512, "recent_window": 16, "granularity": 1, "aggregation": 0,
            "adaptive": 0, "safeguard_permille": 200, "prefill_only": 0, "ratio_ppm": 0,
            "normalize": 0},
    "tova": {"budget": 512, "recent_window": 16, "granularity": 1, "aggregation": 0,
             "adaptive": 0, "safeguard_permille": 200, "prefill_only": 0, "ratio_ppm": 0,
             "protect_newest": 0},
    "streamingllm": {"budget": 512, "sinks": 4, "prefill_only": 0, "ratio_ppm": 0},
    "knorm": {"budget": 512, "recent_window": 0, "granularity": 1, "aggregation": 0,
              "prefill_only": 0, "ratio_ppm": 0},
    "keydiff": {"budget": 512, "recent_window": 0, "granularity": 1, "aggregation": 0,
                "prefill_only": 0, "ratio_ppm": 0},
    "lagkv": {"budget": 512, "sinks": 4, "lag": 128, "cross_scoring": 0, "granularity": 1,
              "aggregation": 0, "prefill_only": 0, "ratio_ppm": 0},
}
FIXED_BY_PRESS = {
    "snapkv": {"recent_window": 0, "granularity": 1, "aggregation": 0, "adaptive": 0,
               "window_reduce": 1, "pooling": 1, "window_budget": 0},
    "h2o": {"recent_window": 0, "granularity": 1, "aggregation": 0, "adaptive": 0,
            "normalize": 1},
    "tova": {"recent_window": 0, "granularity": 0, "aggregation": 0, "adaptive": 0,
             "protect_newest": 1},
    "streamingllm": {},
    "knorm": {"recent_window": 0, "granularity": 1},
    "keydiff": {"recent_window": 0, "granularity": 1},
    "lagkv": {"granularity": 1},
}


class CaseError(Exception):
    """A malformed vector or a failed run: a failure of this case only."""


def load_proto_modules():
    """kvspec_pb2 of the Python port (conformance/ports/python/kvspec_port/_gen).

    If those generated modules predate Scenario.value_dim (spec 0.18.0), they are
    regenerated into a temporary folder with the port's generate_protos.sh
    (Debian's protoc 3.21.12, which tools/setup.sh installs)."""
    # Read, not imported: a module once imported cannot be replaced in
    # protobuf's descriptor pool.
    generated = os.path.join(GEN_DIR, "spec", "kvspec_pb2.py")
    current = os.path.exists(generated) and b"value_dim" in open(generated, "rb").read()
    folder = GEN_DIR
    if not current:
        folder = tempfile.mkdtemp(prefix="kvpress_vectors_check_gen_")
        script = os.path.join(REPO, "conformance", "ports", "python", "generate_protos.sh")
        subprocess.run(["sh", script, folder], check=True)
        print(f"note: {GEN_DIR} has no Scenario.value_dim; using modules generated in {folder}")
    sys.path.insert(0, folder)
    from spec import kvspec_pb2  # noqa: E402
    return kvspec_pb2


# ---------------------------------------------------------------- formatting

def fmt_spec(value):
    if value is None:
        return "?"
    return repr(float(value))


def fmt_f32(value):
    import numpy as np
    return str(np.float32(value))


def fmt_list(values):
    return ",".join(values)


# ---------------------------------------------------------------- one case

class SetResult:
    def __init__(self, index, cls, positions=(), spec=(), kv=(), spec_only=(), kv_only=()):
        self.index, self.cls = index, cls
        self.positions, self.spec, self.kv = list(positions), list(spec), list(kv)
        self.spec_only, self.kv_only = list(spec_only), list(kv_only)

    def line(self, case_id):
        return (f"{case_id} set={self.index} {self.cls} "
                f"positions={fmt_list(str(p) for p in self.positions)} "
                f"spec={fmt_list(fmt_spec(v) for v in self.spec)} "
                f"kvpress={fmt_list(fmt_f32(v) for v in self.kv)}")


class CaseResult:
    def __init__(self, case_id, policy):
        self.id, self.policy = case_id, policy
        self.sets = []          # SetResult, one per compared (case, set)
        self.notes = []
        self.failure = None     # text: the case could not be checked
        # Largest |kvpress - spec| / |spec| over the finite scores of the cuts:
        # kvpress's float32 scores against the vector's binary64 ones, on the
        # positions the vector recorded (None: no cut, as for streamingllm).
        self.cut_rel_diff = None

    @property
    def cls(self):
        worst = "agreed"
        for s in self.sets:
            if SEVERITY[s.cls] > SEVERITY[worst]:
                worst = s.cls
        return worst


def close_enough(spec, kv):
    if math.isinf(spec) or math.isinf(kv):
        return False
    if spec == kv:
        return True
    return abs(spec - kv) <= ROUNDING_REL * max(abs(spec), abs(kv))


def classify(spec_only, kv_only, spec_scores, kv_scores):
    """The class of a disagreement: spec_only are the positions the vector
    keeps and kvpress does not, kv_only the reverse; spec_scores may lack a
    position (not in the cut). Returns (class, D, spec values, kvpress values)."""
    d = sorted(set(spec_only) | set(kv_only))
    spec = [spec_scores.get(p) for p in d]
    kv = [kv_scores[p] for p in d]
    if any(v is None for v in spec):
        return "rule", d, spec, kv
    if not spec_only or not kv_only or len(spec_only) != len(kv_only):
        return "rule", d, spec, kv  # not the same number kept
    # Each side's choice must follow from its own scores (the vector keeps
    # spec_only over kv_only; torch.topk keeps kv_only over spec_only):
    # otherwise no rounding or tie explains the difference.
    if min(spec_scores[p] for p in spec_only) < max(spec_scores[p] for p in kv_only):
        return "rule", d, spec, kv
    if min(kv_scores[p] for p in kv_only) < max(kv_scores[p] for p in spec_only):
        return "rule", d, spec, kv
    if len(set(spec)) == 1 and len(set(kv)) == 1:
        return "tie", d, spec, kv
    if all(close_enough(s, k) for s, k in zip(spec, kv)):
        return "rounding", d, spec, kv
    return "rule", d, spec, kv


def parameters(case):
    policy = case.policy.name
    if policy not in DEFAULTS:
        raise CaseError(f"policy {policy!r} has no kvpress press here "
                        f"(known: {', '.join(sorted(PRESS_NAMES))})")
    values = dict(DEFAULTS[policy])
    seen = set()
    for p in case.policy.parameters:
        if p.name not in values:
            raise CaseError(f"unknown parameter {p.name!r} for {policy}")
        if p.name in seen:
            raise CaseError(f"parameter {p.name!r} given twice")
        seen.add(p.name)
        values[p.name] = p.value
    return values


def make_press(policy, params):
    from kvpress import ObservedAttentionPress, SnapKVPress, StreamingLLMPress, TOVAPress
    # spec/prefill.md#budgets-from-a-ratio: r is the binary64 nearest
    # ratio_ppm / 10^6, as Python computes ratio_ppm / 1e6.
    ratio = params["ratio_ppm"] / 1e6
    if policy == "h2o":
        return ObservedAttentionPress(compression_ratio=ratio)
    if policy == "tova":
        return TOVAPress(compression_ratio=ratio)
    if policy == "snapkv" and params["pyramid"] == 1:
        from kvpress import PyramidKVPress
        return PyramidKVPress(compression_ratio=ratio, window_size=params["obs_window"],
                              kernel_size=params["pool_kernel"], beta=params["pyramid_beta"])
    if policy == "snapkv" and params["pyramid"] == 2:
        raise CaseError("pyramid 2 is KVCache-Factory's formula, not a kvpress press")
    if policy == "snapkv":
        return SnapKVPress(compression_ratio=ratio, window_size=params["obs_window"],
                           kernel_size=params["pool_kernel"])
    if policy == "knorm":
        from kvpress import KnormPress
        return KnormPress(compression_ratio=ratio)
    if policy == "keydiff":
        from kvpress import KeyDiffPress
        return KeyDiffPress(compression_ratio=ratio)
    if policy == "lagkv":
        from kvpress import LagKVPress
        return LagKVPress(compression_ratio=ratio, n_sink=params["sinks"],
                          lag_size=params["lag"], cross_scoring=params["cross_scoring"] == 1)
    return StreamingLLMPress(compression_ratio=ratio, n_sink=params["sinks"])


def make_module(hq, hkv, head_dim=HEAD_DIM, layer=0, layers=1):
    """A stand-in attention layer: what ScorerPress.compress and the
    presses read from `module` (config.num_attention_heads,
    config.num_key_value_heads, head_dim; layer_idx for forward_hook;
    PyramidKVPress's layer_idx and config.num_hidden_layers)."""
    import torch
    module = torch.nn.Module()
    module.config = types.SimpleNamespace(num_attention_heads=hq, num_key_value_heads=hkv,
                                          head_dim=head_dim, hidden_size=HIDDEN,
                                          num_hidden_layers=layers)
    module.head_dim = head_dim
    module.layer_idx = layer
    return module


def build_inputs(step, length, hq, hkv, dtype=None):
    """CPU tensors of `dtype` (default float32, what this check runs; the
    runner's kvpress adapter, conformance/engines/kvpress, also passes
    bfloat16 and float16): attentions [1, Hq, L, L] with the carried query
    rows (zeros elsewhere), each binary64 weight rounded to float32 and then
    to `dtype`, as torch converts a Python float and as a model's eager
    attention casts its float32 softmax to the model's dtype,
    keys/values [1, Hkv, L, HEAD_DIM] with keys[0, g, i, 0] = i,
    hidden_states [1, L, HIDDEN] zeros."""
    import torch
    dtype = torch.float32 if dtype is None else dtype
    rows = list(step.queries)
    if len(rows) % hq:
        raise CaseError(f"step 0 has {len(rows)} query rows, not a multiple of query_heads {hq}")
    m = len(rows) // hq
    if not 1 <= m <= length:
        raise CaseError(f"step 0 has {m} query rows per head for admit {length}")
    attentions = torch.zeros((1, hq, length, length), dtype=dtype)
    for h in range(hq):
        for j in range(m):
            q = length - m + j
            weights = rows[h * m + j].weights
            if len(weights) != q + 1:
                raise CaseError(f"query row of head {h}, query {q} has {len(weights)} "
                                f"weights, not {q + 1}")
            attentions[0, h, q, : q + 1] = torch.tensor(list(weights), dtype=dtype)
    keys = torch.zeros((1, hkv, length, HEAD_DIM), dtype=dtype)
    keys[0, :, :, 0] = torch.arange(length, dtype=dtype)
    values = torch.zeros_like(keys)
    values[0, :, :, 0] = torch.arange(length, dtype=dtype)
    hidden_states = torch.zeros((1, length, HIDDEN), dtype=dtype)
    return attentions, keys, values, hidden_states, m


def scenario_keys(scenario, step, length, hkv, dtype=None):
    """spec/tensors.md#the-fields: step 0's keys as [1, Hkv, L, head_dim]
    (each binary32 exactly), and values of that width whose channel 0 is the
    position (what run_press reads the kept positions from)."""
    import torch
    dtype = torch.float32 if dtype is None else dtype
    if not scenario.HasField("head_dim"):
        raise CaseError("the scenario has no keys (head_dim)")
    d = scenario.head_dim
    if len(step.keys) != hkv or any(len(k.values) != length * d for k in step.keys):
        raise CaseError(f"step 0's keys are not {hkv} lists of {length} x {d}")
    keys = torch.tensor([list(k.values) for k in step.keys], dtype=dtype).reshape(1, hkv, length, d)
    values = torch.zeros((1, hkv, length, d), dtype=dtype)
    values[0, :, :, 0] = torch.arange(length, dtype=dtype)
    return keys, values


def scenario_values(scenario, step, length, hkv, dtype=None):
    """spec/tensors.md#the-fields: step 0's values as [1, Hkv, L, value_dim]
    (each binary32 exactly), for a policy that reads them."""
    import torch
    dtype = torch.float32 if dtype is None else dtype
    if not scenario.HasField("value_dim"):
        raise CaseError("the scenario has no values (value_dim)")
    e = scenario.value_dim
    if len(step.values) != hkv or any(len(v.values) != length * e for v in step.values):
        raise CaseError(f"step 0's values are not {hkv} lists of {length} x {e}")
    return torch.tensor([list(v.values) for v in step.values],
                        dtype=dtype).reshape(1, hkv, length, e)


def _kept_by_rows(keys, values, new_keys, new_values, g):
    """The positions of KV head g's gathered (key, value) rows, found by
    matching each with the one input position holding the same pair (for a
    press that reads the values, whose channel 0 cannot carry the
    position). A pair held by two positions cannot be told apart: refused."""
    where = {}
    for p, pair in enumerate(zip(keys[0, g].tolist(), values[0, g].tolist())):
        row = (tuple(pair[0]), tuple(pair[1]))
        if row in where:
            raise CaseError(f"KV head {g}: positions {where[row]} and {p} hold the same "
                            "key and value: the kept positions cannot be read back")
        where[row] = p
    positions = []
    for pair in zip(new_keys[0, g].tolist(), new_values[0, g].tolist()):
        row = (tuple(pair[0]), tuple(pair[1]))
        if row not in where:
            raise CaseError(f"KV head {g}: a gathered row is no input row: {row}")
        positions.append(where[row])
    return positions


def run_press(press, module, hidden_states, keys, values, attentions, by_rows=False):
    """kvpress's own selection: ScorerPress.compress, as BasePress.forward_hook
    calls it at prefill (kvpress/presses/base_press.py). Returns the kept
    positions per KV head, read from the gathered values' channel 0 (with
    `by_rows`: matched with the input rows), and the press's float32 scores
    [Hkv, L] (press.score on the same inputs)."""
    import torch
    length = keys.shape[2]
    with torch.no_grad():
        new_keys, new_values = press.compress(module, hidden_states, keys, values, attentions, {})
        scores = press.score(module, hidden_states, keys, values, attentions, {})
    kept = []
    for g in range(keys.shape[1]):
        if by_rows:
            positions = _kept_by_rows(keys, values, new_keys, new_values, g)
        else:
            channel = new_values[0, g, :, 0].tolist()
            positions = [int(v) for v in channel]
            if any(float(p) != v or not 0 <= p < length for p, v in zip(positions, channel)):
                raise CaseError(f"KV head {g}: gathered keys are not positions: {channel}")
        if len(set(positions)) != len(positions):
            raise CaseError(f"KV head {g}: a position was kept twice: {sorted(positions)}")
        kept.append(sorted(positions))
    if tuple(scores.shape) != (1, keys.shape[1], length):
        raise CaseError(f"press.score returned shape {tuple(scores.shape)}, "
                        f"expected (1, {keys.shape[1]}, {length})")
    return kept, scores[0].to(torch.float32).tolist()


# The tensor presses' scores (knorm.md, keydiff.md, lagkv.md), for the
# classification: tools/kvpress/tensor_scores.py.
key_scores = tensor_scores.key_scores
lagkv_scores = tensor_scores.lagkv_scores


def rule_scores(policy, params, length, m):
    """Spec scores known from a card's rule, not from a cut."""
    known = {}
    if policy == "snapkv" and params["window_budget"] == 0:
        w = min(params["obs_window"], m)
        for p in range(length - w, length):
            known[p] = math.inf
    if policy == "streamingllm":
        for p in range(length):
            known[p] = 1.0 if p < params["sinks"] else 0.0
    return known


def check_case(case, scenarios):
    result = CaseResult(case.id, case.policy.name)
    try:
        params = parameters(case)
        policy = case.policy.name
        if policy == "snapkv" and params["pyramid"] != 0:
            result.policy = "pyramidkv"
        for name, value in FIXED_BY_PRESS[policy].items():
            if params[name] != value:
                result.notes.append(f"{name} {params[name]} is not what {PRESS_NAMES[policy]} "
                                    f"does ({name} {value}); run all the same")
        if params["ratio_ppm"] == 0:
            result.notes.append("ratio_ppm 0: kvpress compresses nothing (compression_ratio 0)")
        scenario = scenarios.get(case.scenario_id)
        if scenario is None:
            raise CaseError(f"scenario {case.scenario_id!r} is not in the file")
        if scenario.HasField("trace") or not scenario.steps:
            raise CaseError(f"scenario {case.scenario_id!r} has no explicit steps")
        hq = scenario.query_heads if scenario.HasField("query_heads") else 1
        hkv = scenario.kv_heads if scenario.HasField("kv_heads") else 1
        if hq < 1 or hkv < 1 or hq % hkv:
            raise CaseError(f"query_heads {hq} and kv_heads {hkv}")
        step = scenario.steps[0]
        if not step.queries:
            raise CaseError("step 0 carries no query rows: not a prefill step")
        if step.HasField("attention") or step.heads:
            raise CaseError("step 0 carries query rows and an attention row")
        if "totals" not in step.DESCRIPTOR.fields_by_name:
            raise CaseError("the protobuf module predates spec 0.10.0 (no Step.totals)")
        if len(step.totals) or step.total_rows:
            # spec/prefill.md#column-totals: kvpress's press reads the whole
            # attention matrix, which a step with totals does not carry.
            raise CaseError("step 0 carries column totals, not the whole causal "
                            "matrix a press needs")
        if len(scenario.steps) > 1:
            result.notes.append(f"{len(scenario.steps)} steps: step 0 (the prefill) checked only")
        if case.expected.HasField("rejection") and case.expected.rejection.category != 0:
            raise CaseError("the case expects a rejection: no kept set to compare")
        if not case.expected.steps:
            raise CaseError("the expected log has no step")
        length = step.admit
        attentions, keys, values, hidden_states, m = build_inputs(step, length, hq, hkv)
        head_dim = HEAD_DIM
        if policy in TENSOR_POLICIES:  # scored from the keys (spec/tensors.md)
            keys, values = scenario_keys(scenario, step, length, hkv)
            head_dim = keys.shape[3]
        if policy in VALUE_POLICIES:  # and values
            values = scenario_values(scenario, step, length, hkv)

        record = case.expected.steps[0]
        records = list(record.sets) if record.sets else [record]
        if len(records) not in (1, hkv):
            raise CaseError(f"{len(records)} kept sets: kvpress keeps one per KV head ({hkv})")
        spec = []
        for s, rec in enumerate(records):
            victims = list(rec.victims)
            if len(set(victims)) != len(victims) or any(not 0 <= v < length for v in victims):
                raise CaseError(f"set {s}: victims {victims} are not distinct positions "
                                f"below {length}")
            kept = sorted(set(range(length)) - set(victims))
            if rec.kept_count != len(kept):
                raise CaseError(f"set {s}: kept_count {rec.kept_count}, but {length} "
                                f"admitted less {len(victims)} victims is {len(kept)}")
            scores = rule_scores(policy, params, length, m)
            if policy in KEY_POLICIES:  # every position's score, per set's KV head
                scores.update(key_scores(
                    policy, keys[0, s if len(records) == hkv else 0].tolist()))
            if policy in VALUE_POLICIES:
                g = s if len(records) == hkv else 0
                scores.update(lagkv_scores(keys[0, g].tolist(), values[0, g].tolist(),
                                           params["sinks"], params["lag"],
                                           params["cross_scoring"] == 1))
            for ranked in rec.cut:
                scores[ranked.position] = ranked.score
            spec.append((kept, scores, list(rec.cut)))

        module = make_module(hq, hkv, head_dim,
                             params.get("layer", 0), params.get("layers", 1))
        try:
            press = make_press(policy, params)
            kv_kept, kv_scores = run_press(press, module, hidden_states, keys, values, attentions,
                                           by_rows=policy in VALUE_POLICIES)
        except CaseError:
            raise
        except Exception as error:  # kvpress refused or crashed: this case fails
            raise CaseError(f"{PRESS_NAMES[result.policy]} raised {type(error).__name__}: {error}")

        for g in range(hkv):
            # One spec set per KV head, or one for the layer (tova's preset):
            # then every KV head's kept set is compared with it.
            spec_kept, spec_scores, cut = spec[g if len(records) == hkv else 0]
            for ranked in cut:
                if math.isfinite(ranked.score):
                    diff = abs(kv_scores[g][ranked.position] - ranked.score)
                    rel = diff / abs(ranked.score) if ranked.score else diff
                    result.cut_rel_diff = max(result.cut_rel_diff or 0.0, rel)
            spec_set, kv_set = set(spec_kept), set(kv_kept[g])
            if spec_set == kv_set:
                result.sets.append(SetResult(g, "agreed"))
                continue
            kv_row = {p: kv_scores[g][p] for p in range(length)}
            spec_only, kv_only = sorted(spec_set - kv_set), sorted(kv_set - spec_set)
            cls, d, spec_values, kv_values = classify(spec_only, kv_only, spec_scores, kv_row)
            result.sets.append(SetResult(g, cls, d, spec_values, kv_values, spec_only, kv_only))
    except CaseError as error:
        result.failure = str(error)
    except Exception as error:  # a bug of this tool or a vector it cannot read
        result.failure = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
    return result


# ---------------------------------------------------------------- the suite

def load_cases(vectors_dir, kvspec_pb2, flag=FLAG):
    """[(case, scenarios)] of every case with FLAG, in file and case order,
    and a list of (file, error) for files that cannot be read."""
    selected, errors = [], []
    names = sorted(n for n in os.listdir(vectors_dir) if n.endswith(".pb"))
    for name in names:
        path = os.path.join(vectors_dir, name)
        try:
            with open(path, "rb") as f:
                vf = kvspec_pb2.VectorFile.FromString(f.read())
            if vf.schema != "kvspec.vectors.v1":
                raise ValueError(f"schema {vf.schema!r}, not 'kvspec.vectors.v1'")
        except Exception as error:
            errors.append((name, f"{type(error).__name__}: {error}"))
            continue
        scenarios = {s.id: s for s in vf.scenarios}
        for case in vf.cases:
            flags = (flag,) if isinstance(flag, str) else flag
            if any(f in case.flags for f in flags):
                selected.append((case, scenarios))
    return selected, errors


def compute(vectors_dir):
    import torch
    torch.set_num_threads(1)  # one reduction order, whatever the machine's load
    kvspec_pb2 = load_proto_modules()
    selected, errors = load_cases(vectors_dir, kvspec_pb2, (FLAG, PYRAMID_FLAG))
    # SimLayerKVPress is not a ScorerPress: tools/kvpress/simlayerkv_check.py.
    selected = [(c, s) for c, s in selected if c.policy.name != "simlayerkv"]
    results = [check_case(case, scenarios) for case, scenarios in selected]
    return results, errors


def split_cause(line):
    text, sep, cause = line.partition(" cause: ")
    return text.rstrip(), (cause.strip() if sep else None)


def read_file(path):
    """[(text, cause)] of the disagreement file's lines ('#' lines and blank
    lines are comments)."""
    if not os.path.exists(path):
        return []
    entries = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            entries.append(split_cause(line))
    return entries


def prefix_key(text):
    return text.split(" spec=", 1)[0]


def write_file(path, results, header):
    """Rewrites a disagreement file (header, then one line per disagreement),
    keeping the cause of each line that reappears."""
    old = read_file(path)
    exact = {text: cause for text, cause in old if cause}
    by_prefix = {prefix_key(text): cause for text, cause in old if cause}
    lines = []
    for result in results:
        for s in result.sets:
            if s.cls == "agreed":
                continue
            text = s.line(result.id)
            cause = exact.get(text) or by_prefix.get(prefix_key(text))
            lines.append(f"{text} cause: {cause}" if cause else text)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(header)
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)
    return lines


def print_results(results, errors):
    for name, error in errors:
        print(f"FAIL {name}: cannot read: {error}")
    for result in results:
        for note in result.notes:
            print(f"note: {result.id}: {note}")
        if result.failure:
            print(f"FAIL {result.id}: {result.failure}")
            continue
        for s in result.sets:
            if s.cls == "agreed":
                continue
            print(s.line(result.id))
            print(f"    vector keeps, kvpress not: {fmt_list(str(p) for p in s.spec_only) or '-'};"
                  f" kvpress keeps, vector not: {fmt_list(str(p) for p in s.kv_only) or '-'}")


# Classes whose lines depend on the machine's float32 kernels: which
# positions tie or round together follows the last bits of kvpress's
# float32 scores, and a model's keys and attention differ in those bits
# between CPUs (SmolLM2's layer-0 knorm lines, written on one machine,
# changed on an AVX-512 AMD EPYC, 2026-12-07). check() reports such a line
# that is new, or gone, as a note; a rule line, or a failure, still fails.
MACHINE_CLASSES = ("tie", "rounding")


def line_class(text):
    """The class of a disagreement line (its third field), or None."""
    fields = text.split(" ")
    return fields[2] if len(fields) > 2 else None


def check(path, results, errors, flag=FLAG):
    """Prints failures (and notes for MACHINE_CLASSES lines that are new or
    gone); returns (passed, failed)."""
    entries = read_file(path)
    in_file = {}
    for text, cause in entries:
        in_file.setdefault(text, []).append(cause)
    produced = set()
    failed_ids = set()
    extra_failures = len(errors)
    for result in results:
        if result.failure:
            failed_ids.add(result.id)
            continue
        for s in result.sets:
            if s.cls == "agreed":
                continue
            text = s.line(result.id)
            produced.add(text)
            if text not in in_file and s.cls in MACHINE_CLASSES:
                print(f"note: {result.id}: a float32 {s.cls} line not in "
                      f"{os.path.relpath(path, REPO)} (machine-dependent):\n    {text}")
            elif text not in in_file:
                print(f"FAIL {result.id}: computed line missing from {os.path.relpath(path, REPO)}:"
                      f"\n    {text}")
                failed_ids.add(result.id)
            elif s.cls == "rule" and not any(in_file[text]):
                print(f"FAIL {result.id}: rule line without a cause:\n    {text}")
                failed_ids.add(result.id)
    ids = {r.id for r in results}
    for text, _ in entries:
        if text in produced:
            continue
        case_id = text.split(" ", 1)[0]
        if line_class(text) in MACHINE_CLASSES:
            print(f"note: {case_id}: a float32 {line_class(text)} line of the file "
                  f"not produced on this machine:\n    {text}")
            continue
        print(f"FAIL {case_id}: file line no longer produced:\n    {text}")
        if case_id in ids:
            failed_ids.add(case_id)
        else:
            extra_failures += 1
    if not results and not errors:
        print(f"FAIL no vector case carries the flag {flag}")
        extra_failures += 1
    passed = sum(1 for r in results if r.id not in failed_ids)
    return passed, len(failed_ids) + extra_failures


def table(results):
    rows = ["| press | cases | agreed | tie | rounding | rule | failed | scores at the cuts |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for policy in ("snapkv", "h2o", "tova", "streamingllm", "knorm", "keydiff", "lagkv",
                   "pyramidkv"):
        mine = [r for r in results if r.policy == policy]
        counts = {c: 0 for c in CLASSES}
        failed = 0
        for r in mine:
            if r.failure:
                failed += 1
            else:
                counts[r.cls] += 1
        diffs = [r.cut_rel_diff for r in mine if r.cut_rel_diff is not None]
        scores = (f"within {max(diffs):.1e} (relative)" if diffs else "no cut (positional)")
        rows.append(f"| `{PRESS_NAMES[policy]}` ({policy}) | {len(mine)} | "
                    + " | ".join(str(counts[c]) for c in CLASSES) + f" | {failed} | {scores} |")
    rows.append("")
    rows.append("A case counts under its worst set (rule > rounding > tie > agreed). Scores at "
                "the cuts: the largest relative difference between kvpress's float32 score "
                "and the vector's binary64 score of a position in a cut.")
    return "\n".join(rows)


# ---------------------------------------------------------------- self-test

def selftest():
    """Synthetic cases, one scenario per press, built in memory as kvspec
    messages (4 query heads in 2 groups, 24 positions, every query row):

    - the kept positions read back from the gathered keys are the topk of
      press.score, and BasePress.forward_hook on a transformers DynamicCache
      (the pipeline's own path) keeps the same keys as compress;
    - an expected log built from kvpress's own choice agrees;
    - one that swaps a kept and an evicted position of equal scores is a tie;
    - one whose spec scores put the swapped pair a hair apart (far below
      float32 rounding) is rounding;
    - one that keeps a low scorer instead of a high one is rule;
    - a malformed case and a press exception are recorded failures.

    Every key's weight is the same in every query row (a dyadic value with a
    small numerator, so every sum is exact in float32 and binary64), so each
    press scores key i by that weight (averaged over heads), and keys 11 apart
    tie. The expected records' cuts list every survivor, not only four."""
    import torch
    torch.set_num_threads(1)
    kvspec_pb2 = load_proto_modules()
    failures, passes = [], []

    def expect(what, ok):
        print(("ok   " if ok else "FAIL ") + what)
        (passes if ok else failures).append(what)

    length, hq, hkv = 24, 4, 2

    def weight(h, i):
        return ((7 * i + 3 * h) % 11 + 1) / 64.0

    def scenario(sid, n, rows_of):
        sc = kvspec_pb2.Scenario(id=sid, query_heads=hq, kv_heads=hkv)
        step = sc.steps.add(admit=n)
        for h in range(hq):
            for q in range(n):
                step.queries.add(weights=rows_of(h, q))
        return sc

    def make_case(cid, policy, params, sid, kept_per_set, scores_per_set):
        case = kvspec_pb2.Case(id=cid, flags=[FLAG], scenario_id=sid)
        case.policy.name = policy
        for name, value in params.items():
            case.policy.parameters.add(name=name, value=value)
        step = case.expected.steps.add()
        recs = [step] if len(kept_per_set) == 1 else [step.sets.add() for _ in kept_per_set]
        for rec, kept, scores in zip(recs, kept_per_set, scores_per_set):
            victims = sorted(set(range(length)) - set(kept))
            rec.victims.extend(victims)
            rec.kept_count = len(kept)
            rank = lambda p: (scores[p], p)  # noqa: E731
            for p in sorted(victims, key=rank) + sorted(kept, key=rank):
                rec.cut.add(position=p, score=scores[p])
        return case

    base = {
        "h2o": {"recent_window": 0, "granularity": 1, "aggregation": 0, "prefill_only": 1,
                "normalize": 1},
        "tova": {"recent_window": 0, "granularity": 0, "aggregation": 0, "prefill_only": 1,
                 "protect_newest": 1},
        "snapkv": {"recent_window": 0, "obs_window": 4, "pool_kernel": 1, "granularity": 1,
                   "aggregation": 0, "prefill_only": 1, "window_reduce": 1, "pooling": 1,
                   "window_budget": 0},
        "streamingllm": {"sinks": 4, "prefill_only": 1},
    }
    # Ratios tried in turn until the cut splits a group of equal scores.
    ratios = {"streamingllm": [990000]}
    for policy, fixed in base.items():
        sid = f"selftest-{policy}"
        sc = scenario(sid, length, lambda h, q: [weight(h, i) for i in range(q + 1)])
        scenarios = {sid: sc}
        attentions, keys, values, hidden, m = build_inputs(sc.steps[0], length, hq, hkv)
        module = make_module(hq, hkv)
        for ratio_ppm in ratios.get(policy, [500000, 400000, 600000, 300000, 700000]):
            params = dict(fixed, ratio_ppm=ratio_ppm)
            full = dict(DEFAULTS[policy], **params)
            press = make_press(policy, full)
            kept, scores = run_press(press, module, hidden, keys, values, attentions)
            pair = next(((a, b) for a in kept[0] for b in range(length)
                         if b not in kept[0] and scores[0][a] == scores[0][b]), None)
            if pair:
                break
        n_kept = max(1, int(length * (1 - ratio_ppm / 1e6)))
        topk = [sorted(torch.tensor(scores[g]).topk(n_kept).indices.tolist()) for g in range(hkv)]
        expect(f"{policy}: kept positions read back = topk of press.score "
               f"({n_kept} of {length} at ratio_ppm {ratio_ppm})", kept == topk)
        from transformers import DynamicCache
        cache = DynamicCache()
        cache.update(keys.clone(), values.clone(), 0)
        kwargs = {"hidden_states": hidden, "past_key_values": cache,
                  "cache_position": torch.arange(length), "position_embeddings": None}
        press.forward_hook(module, [], kwargs, (None, attentions))
        hooked = [sorted(int(v) for v in cache.layers[0].keys[0, g, :, 0].tolist())
                  for g in range(hkv)]
        expect(f"{policy}: BasePress.forward_hook keeps the same keys as compress", hooked == kept)

        sets = 1 if policy in ("tova", "streamingllm") else hkv
        spec_scores = [[float(v) for v in scores[g]] for g in range(sets)]
        if policy == "snapkv":
            for g in range(sets):
                for p in range(length - fixed["obs_window"], length):
                    spec_scores[g][p] = math.inf
        if policy == "streamingllm":
            spec_scores = [[1.0 if p < fixed["sinks"] else 0.0 for p in range(length)]]
        r = check_case(make_case(f"selftest/{policy}/agree", policy, params, sid,
                                 kept[:sets], spec_scores), scenarios)
        expect(f"{policy}: an expected log from kvpress's own choice agrees "
               f"({r.failure or [x.cls for x in r.sets]})",
               not r.failure and r.cls == "agreed" and len(r.sets) == hkv)

        if pair is None:
            expect(f"{policy}: the synthetic scenario splits equal scores at the cut", False)
        else:
            a, b = pair
            swapped = sorted((set(kept[0]) - {a}) | {b})
            r = check_case(make_case(f"selftest/{policy}/tie", policy, params, sid,
                                     [swapped] + kept[1:sets], spec_scores), scenarios)
            expect(f"{policy}: keeping {b} instead of {a}, of equal scores, is a tie "
                   f"({r.failure or [x.cls for x in r.sets]})",
                   not r.failure and r.sets[0].cls == "tie"
                   and r.sets[0].positions == sorted(pair))
            if policy != "streamingllm":
                nudged = [list(x) for x in spec_scores]
                nudged[0][b] = scores[0][b] * (1 + 2.0 ** -30)
                r = check_case(make_case(f"selftest/{policy}/rounding", policy, params, sid,
                                         [swapped] + kept[1:sets], nudged), scenarios)
                expect(f"{policy}: the same with spec scores 2^-30 apart is rounding "
                       f"({r.failure or [x.cls for x in r.sets]})",
                       not r.failure and r.sets[0].cls == "rounding")

        row = scores[0]
        low = min((p for p in range(length) if p not in kept[0]), key=lambda p: (row[p], p))
        high = max((p for p in kept[0] if p < length - 1), key=lambda p: (row[p], -p))
        wrong = sorted((set(kept[0]) - {high}) | {low})
        r = check_case(make_case(f"selftest/{policy}/rule", policy, params, sid,
                                 [wrong] + kept[1:sets], spec_scores), scenarios)
        expect(f"{policy}: keeping {low} instead of {high} is a rule "
               f"({r.failure or [x.cls for x in r.sets]})",
               not r.failure and r.sets[0].cls == "rule")

    bad = kvspec_pb2.Case(id="selftest/bad/no-scenario", flags=[FLAG], scenario_id="nowhere")
    bad.policy.name = "h2o"
    r = check_case(bad, {})
    expect(f"a malformed case is a recorded failure ({r.failure})", r.failure is not None)
    short = scenario("short", 4, lambda h, q: [0.25] * (q + 1))
    snap = kvspec_pb2.Case(id="selftest/bad/snapkv-short", flags=[FLAG], scenario_id="short")
    snap.policy.name = "snapkv"
    snap.policy.parameters.add(name="ratio_ppm", value=500000)
    snap.expected.steps.add(kept_count=4)
    r = check_case(snap, {"short": short})
    expect(f"a press exception is a recorded failure ({r.failure})",
           r.failure is not None and "SnapKVPress raised" in r.failure)
    totals = scenario("totals", 4, lambda h, q: [0.25] * (q + 1))
    for _ in range(hq):
        totals.steps[0].totals.add().sums.extend([1.0] * 4)
    totals.steps[0].total_rows = 4
    h2o = kvspec_pb2.Case(id="selftest/bad/h2o-totals", flags=[FLAG], scenario_id="totals")
    h2o.policy.name = "h2o"
    h2o.policy.parameters.add(name="ratio_ppm", value=500000)
    h2o.expected.steps.add(kept_count=2)
    r = check_case(h2o, {"totals": totals})
    expect(f"a step with column totals is refused, not run ({r.failure})",
           r.failure is not None and "column totals" in r.failure)
    print(f"kvpress-selftest: {len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--table", action="store_true", help="the default")
    mode.add_argument("--selftest", action="store_true")
    parser.add_argument("--vectors", default=os.path.join(REPO, "vectors"))
    args = parser.parse_args()
    if args.selftest:
        return selftest()
    results, errors = compute(args.vectors)
    print_results(results, errors)
    print()
    print(table(results))
    return 1 if errors or any(r.failure for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
