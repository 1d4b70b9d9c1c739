"""kvspec engine adapter for NVIDIA kvpress 0.5.5's presses at prefill, in
float32, bfloat16 or float16 (spec/protocol.md#precision).

    tools/.venv-torch/bin/python adapter.py float32|bfloat16|float16 [--plant=NAME] [--device=cuda]

A port that answers each case of the kvpress-0.5.5 presets by running the
library's OWN press on the case's prefill, never kvspec's rules, in the
torch dtype given, and declares that dtype in its hello, so the runner
judges it as a port of that precision: decisions the dtype cannot resolve
are `within precision`, anything else must match the vector
(conformance/README.md#ports-of-lower-precision).

What is driven is what tools/kvpress/vectors_check.py drives (and documents,
with the files and functions of kvpress it read): its build_inputs (the
attention tensor a model's eager attention layer hands the press, the
case's binary64 weights rounded to float32 and then to the dtype, keys
whose channel 0 is the position), make_press (ObservedAttentionPress,
TOVAPress, SnapKVPress, StreamingLLMPress with the case's ratio, window and
kernel) and run_press (ScorerPress.compress, as BasePress.forward_hook
calls it at prefill; the kept positions read back from the gathered keys).
This file maps a request to them and their result to a kvspec EvictionLog:

  - the case must be the press's rule: every parameter a press cannot be
    told otherwise (vectors_check.FIXED_BY_PRESS: recent_window 0, the
    granularity, aggregation, normalize, protect_newest, window_reduce,
    pooling, window_budget 0), prefill_only 1 and a ratio above 0; one
    explicit prefill step carrying the query rows. Anything else is
    `skipped`, naming what kvpress has no knob for;
  - the log: one step, victims ascending, kept_count; one set per KV head
    (granularity 1, more than one KV head), or one record (one KV head, or
    a layer-wide set: tova's preset, and streamingllm, which has no
    granularity; every KV head must then keep alike);
  - no cut: a press returns its kept keys, not a ranking kvspec could
    compare (snapkv's window scores max + 1 where the spec's are +inf), so
    check.sh runs the runner with --nocut and a request that wants a cut is
    answered `skipped`.

--plant=NAME runs a press with a rule error planted, for check.sh's proof
that the runner's precision verdicts still fail a wrong rule at every dtype
(PLANTS: h2o-raw-sums, ObservedAttentionPress without its division by the
number of queries that saw each position; snapkv-kernel-3, SnapKVPress
pooling over 3 positions instead of 5).

--device=cuda (or cuda:N) runs the presses on a CUDA device: the tensors
are built on the CPU and moved there before the press sees them; the
precision declared and the verdicts do not change.

The protocol is ../common/engine_port.py. Logs go to stderr; stdout
carries frames only.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(ROOT, "tools", "kvpress"))
from engine_port import NO_VALIDATION, Port, Skip, cpb, kpb  # noqa: E402

import torch  # noqa: E402
import vectors_check as vc  # noqa: E402

torch.set_num_threads(1)  # one reduction order, whatever the machine's load

SPEC_VERSION = "0.15.0"
POLICIES = ["h2o", "tova", "snapkv", "streamingllm"]
FEATURES = ["decode", "heads", "prefill"]
# dtype name -> (torch dtype, the hello's score and accumulate precision).
# Every torch operation of a press returns a tensor of the input's dtype, so
# each intermediate score is rounded to it: the accumulate precision is the
# dtype too, even where a CPU kernel sums internally in float32.
DTYPES = {
    "float32": (torch.float32, cpb.BINARY32),
    "bfloat16": (torch.bfloat16, cpb.BFLOAT16),
    "float16": (torch.float16, cpb.FLOAT16),
}


def plant_raw_sums(press):
    """ObservedAttentionPress.score without `scores / n_tokens_in_sum`
    (kvpress/presses/observed_attention_press.py): kvspec's normalize 0."""
    def score(module, hidden_states, keys, values, attentions, kwargs):
        bsz, num_key_value_heads, n_tokens, _ = keys.shape
        scores = attentions.sum(2)
        return scores.view(bsz, num_key_value_heads, -1, n_tokens).mean(2)
    press.score = score
    return press


def plant_kernel_3(press):
    press.kernel_size = 3
    return press


PLANTS = {"h2o-raw-sums": ("h2o", plant_raw_sums), "snapkv-kernel-3": ("snapkv", plant_kernel_3)}


def read_parameters(policy, parameters):
    """The press's parameters, the card's defaults where not given
    (vectors_check.DEFAULTS); an unknown or repeated one is a refusal case,
    which kvpress has no notion of."""
    values = dict(vc.DEFAULTS[policy])
    seen = set()
    for p in parameters:
        if p.name not in values or p.name in seen:
            raise Skip(NO_VALIDATION)
        seen.add(p.name)
        values[p.name] = p.value
    return values


def plan(req):
    """(params, step, query heads, KV heads) of a case a press can run, or
    Skip naming what kvpress lacks."""
    policy = req.policy.name
    press = vc.PRESS_NAMES[policy]
    params = read_parameters(policy, req.policy.parameters)
    for name, value in vc.FIXED_BY_PRESS[policy].items():
        if params[name] != value:
            raise Skip(f"{press} has no knob for {name} {params[name]} (it does {name} {value})")
    if params["prefill_only"] != 1:
        raise Skip(f"{press} compresses once, at prefill: prefill_only 0 has no press")
    if params["ratio_ppm"] == 0:
        raise Skip(f"{press} is told a compression ratio: ratio_ppm 0 has no press")
    if req.want_cut:
        raise Skip(f"{press} returns its kept keys, not a ranking: run the runner with --nocut")
    scenario = req.scenario
    if scenario.HasField("trace") or len(scenario.steps) != 1:
        raise Skip(f"{press} compresses one prefill: the scenario is not one explicit step")
    step = scenario.steps[0]
    if not step.queries or step.HasField("attention") or step.heads:
        raise Skip(f"{press} reads a prefill's attention matrix: step 0 carries no query rows")
    if len(step.totals) or step.total_rows:
        raise Skip(f"{press} reads the whole attention matrix, not column totals")
    hq = scenario.query_heads if scenario.HasField("query_heads") else 1
    hkv = scenario.kv_heads if scenario.HasField("kv_heads") else 1
    if hq < 1 or hkv < 1 or hq % hkv:
        raise Skip(NO_VALIDATION)  # the heads' refusal cases
    return params, step, hq, hkv


def record(kept, length):
    r = kpb.StepResult()
    r.victims.extend(sorted(set(range(length)) - set(kept)))
    r.kept_count = len(kept)
    return r


def make_run_case(dtype, plant=None, device=None):
    def run_case(req):
        params, step, hq, hkv = plan(req)
        policy = req.policy.name
        length = step.admit
        try:
            attentions, keys, values, hidden, _ = vc.build_inputs(step, length, hq, hkv, dtype)
        except vc.CaseError as e:
            raise Skip(f"{NO_VALIDATION}: {e}")  # a malformed row: a refusal case
        if device is not None and device.type != "cpu":
            attentions, keys, values, hidden = (t.to(device) for t in
                                                (attentions, keys, values, hidden))
        press = vc.make_press(policy, params)
        if plant is not None and PLANTS[plant][0] == policy:
            press = PLANTS[plant][1](press)
        module = vc.make_module(hq, hkv)
        kept, _ = vc.run_press(press, module, hidden, keys, values, attentions)
        log = kpb.EvictionLog()
        out = log.steps.add()
        if params.get("granularity", 0) == 0 or hkv == 1:
            # One kept set: the layer's (tova's preset; streamingllm, which
            # has no granularity) or the one KV head's.
            if any(k != kept[0] for k in kept):
                raise RuntimeError(f"{vc.PRESS_NAMES[policy]} kept different positions per "
                                   f"KV head where the preset keeps one set: {kept}")
            out.CopyFrom(record(kept[0], length))
        else:
            for k in kept:
                out.sets.append(record(k, length))
        return log
    return run_case


def main(argv):
    usage = (f"usage: adapter.py {'|'.join(DTYPES)} [--plant={'|'.join(PLANTS)}] "
             f"[--device=cpu|cuda|cuda:N]")
    args = argv[1:]
    options = {"--plant": None, "--device": "cpu"}
    for a in [a for a in args if a.startswith("--")]:
        name, _, value = a.partition("=")
        if name not in options or not value:
            print(f"adapter.py: unknown option {a!r}\n{usage}", file=sys.stderr)
            return 2
        options[name] = value
        args.remove(a)
    plant, device = options["--plant"], options["--device"]
    if len(args) != 1 or args[0] not in DTYPES or (plant is not None and plant not in PLANTS):
        print(usage, file=sys.stderr)
        return 2
    if device != "cpu" and not torch.cuda.is_available():
        print(f"adapter.py: --device={device}, but torch {torch.__version__} sees no CUDA "
              f"device", file=sys.stderr)
        return 2
    dtype, precision = DTYPES[args[0]]
    from importlib.metadata import version
    port = Port(f"kvpress-{args[0]}-adapter", SPEC_VERSION,
                f"kvpress {version('kvpress')}, torch {torch.__version__}, {args[0]} on {device}"
                + (f", planted {plant}" if plant else ""),
                POLICIES, FEATURES, make_run_case(dtype, plant, torch.device(device)),
                log_errors=True, score_precision=precision, accumulate_precision=precision)
    return port.serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
