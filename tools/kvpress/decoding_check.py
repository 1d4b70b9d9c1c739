#!/usr/bin/env python3
"""Runs NVIDIA kvpress 0.5.5's own DecodingPress on the vectors that use its preset.

    tools/.venv-torch/bin/python tools/kvpress/decoding_check.py [--check]   # the default
    tools/.venv-torch/bin/python tools/kvpress/decoding_check.py --write
    tools/.venv-torch/bin/python tools/kvpress/decoding_check.py --selftest

(tools/kvpress/check.sh runs --selftest and --check.)

Every case of vectors/*.pb whose flags contain "preset.kvpress-0.5.5-decoding"
is `tova` with `interval` N and `budget` T (spec/triggers.md#interval): a
prefill step that evicts nothing, then decode steps, each with one
attention row per query head. For each such case this tool drives
`DecodingPress(TOVAPress(), compression_interval=N, target_size=T,
hidden_states_buffer_size=0)` as transformers drives it inside a model
(kvpress/presses/decoding_press.py, DecodingPress.forward_hook): the prompt's
keys go into a DynamicCache and the hook sees the prefill forward (which it
ignores, `is_prefilling`); then, per decode step, the step's key is appended
to the cache (as the attention layer's `DynamicCache.update` does) and the
hook is called with the step's float32 attention row laid out in the cache's
order (which kvpress's `topk` gathering permutes) and the row's own key at 0
(TOVAPress drops it, `attentions[..., -1:, :-1]`). Keys carry their
position in channel 0, so the kept positions are read back from the cache
after every step and compared with the kept set the vector's log implies.

A case agrees when every step's kept set is the vector's. At the first step
that differs (after it the two caches hold different positions, so later
steps are not comparable) the disagreement is classified as
tools/kvpress/vectors_check.py classifies prefill ones (tie, rounding, rule),
from the vector's cut at that step (binary64) and the scores TOVAPress
computed there (float32, recorded from its own `score`). The disagreements
are committed in tools/kvpress/decoding_disagreements.txt:

  <case-id> step=<t> set=<s> <class> positions=<D> spec=<values> kvpress=<values>[ cause: <text>]

--check (the default) fails on a computed line missing from the file, a
file line no longer produced, or a rule line without a cause, and ends with
"kvpress-decoding: N passed, M failed". A malformed vector or an exception
from kvpress fails its case only.
"""

import argparse
import math
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectors_check as base  # noqa: E402  (same folder: its helpers)

FLAG = "preset.kvpress-0.5.5-decoding"
DEFAULT_FILE = os.path.join(base.REPO, "tools", "kvpress", "decoding_disagreements.txt")
TOVA_DEFAULTS = dict(base.DEFAULTS["tova"], slack=0, interval=0)
# spec/policies/tova.md, the kvpress-0.5.5-decoding preset: what
# DecodingPress(TOVAPress) does that a case could set otherwise.
FIXED = {"recent_window": 1, "granularity": 0, "aggregation": 0, "adaptive": 0,
         "prefill_only": 0, "ratio_ppm": 0, "slack": 0}
HEADER = """\
# kvpress 0.5.5's DecodingPress(TOVAPress) against the vectors that use the
# preset tova:preset=kvpress-0.5.5-decoding: the first step of each case at
# which the positions kvpress keeps differ from the vector's, one line per
# (case, set). Written by `tools/.venv-torch/bin/python
# tools/kvpress/decoding_check.py --write` (which keeps the causes of lines
# that reappear); checked by tools/kvpress/check.sh.
#
#   <case-id> step=<t> set=<s> <class> positions=<D> spec=<binary64> kvpress=<float32>
#
# Classes as in tools/kvpress/vectors_check.py. A rule line ends with
# " cause: <what kvpress does differently, and where>".
"""


class StepSetResult(base.SetResult):
    def __init__(self, step, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.step = step

    def line(self, case_id):
        text = super().line(case_id)
        return text.replace(f"{case_id} set=", f"{case_id} step={self.step} set=", 1)


def parameters(case):
    values = dict(TOVA_DEFAULTS)
    seen = set()
    if case.policy.name != "tova":
        raise base.CaseError(f"policy {case.policy.name!r}: the preset is tova's")
    for p in case.policy.parameters:
        if p.name not in values:
            raise base.CaseError(f"unknown parameter {p.name!r} for tova")
        if p.name in seen:
            raise base.CaseError(f"parameter {p.name!r} given twice")
        seen.add(p.name)
        values[p.name] = p.value
    if values["interval"] < 1:
        raise base.CaseError("interval 0: DecodingPress needs compression_interval >= 1")
    return values


def make_cache():
    from transformers import DynamicCache
    return DynamicCache()


def key_rows(positions, hkv):
    """Keys and values [1, Hkv, len, HEAD_DIM] with channel 0 the position."""
    import torch
    keys = torch.zeros((1, hkv, len(positions), base.HEAD_DIM), dtype=torch.float32)
    keys[0, :, :, 0] = torch.tensor([float(p) for p in positions], dtype=torch.float32)
    return keys, torch.zeros_like(keys)


def cache_positions(cache, hkv):
    """Per KV head, the positions in the cache, in cache order."""
    keys = cache.layers[0].keys
    out = []
    for g in range(hkv):
        channel = keys[0, g, :, 0].tolist()
        positions = [int(v) for v in channel]
        if any(float(p) != v for p, v in zip(positions, channel)):
            raise base.CaseError(f"KV head {g}: cache keys are not positions: {channel}")
        if len(set(positions)) != len(positions):
            raise base.CaseError(f"KV head {g}: a position is cached twice")
        out.append(positions)
    return out


def rows_of(step, hq):
    """The step's attention rows, one per query head (full-cache rows)."""
    if hq == 1 and step.HasField("attention"):
        return [list(step.attention.weights)]
    if len(step.heads) == hq:
        return [list(row.weights) for row in step.heads]
    raise base.CaseError("a decode step without one attention row per query head: "
                         "DecodingPress always has the layer's attention")


def check_case(case, scenarios):
    import torch
    from kvpress import DecodingPress, TOVAPress
    result = base.CaseResult(case.id, "tova")
    try:
        params = parameters(case)
        for name, value in FIXED.items():
            if params[name] != value:
                result.notes.append(f"{name} {params[name]} is not what DecodingPress(TOVAPress) "
                                    f"does ({name} {value}); run all the same")
        scenario = scenarios.get(case.scenario_id)
        if scenario is None:
            raise base.CaseError(f"scenario {case.scenario_id!r} is not in the file")
        if scenario.HasField("trace") or len(scenario.steps) < 2:
            raise base.CaseError("the scenario needs explicit steps: a prefill, then decoding")
        hq = scenario.query_heads if scenario.HasField("query_heads") else 1
        hkv = scenario.kv_heads if scenario.HasField("kv_heads") else 1
        if hq < 1 or hkv < 1 or hq % hkv:
            raise base.CaseError(f"query_heads {hq} and kv_heads {hkv}")
        if case.expected.HasField("rejection") and case.expected.rejection.category != 0:
            raise base.CaseError("the case expects a rejection: no kept set to compare")
        if len(case.expected.steps) != len(scenario.steps):
            raise base.CaseError("the log does not have one record per step")
        prefill = scenario.steps[0]
        if not prefill.queries:
            raise base.CaseError("step 0 is not a prefill step (no query rows)")
        if case.expected.steps[0].victims or case.expected.steps[0].sets:
            raise base.CaseError("the prefill step evicts or has several sets: DecodingPress "
                                 "never compresses the prefill (keep the prompt within budget)")

        press = DecodingPress(TOVAPress(), compression_interval=params["interval"],
                              target_size=params["budget"], hidden_states_buffer_size=0)
        scored = {}
        original_score = press.base_press.score

        def recording_score(module, hidden_states, keys, values, attentions, kwargs):
            scores = original_score(module, hidden_states, keys, values, attentions, kwargs)
            scored["positions"] = [[int(v) for v in keys[0, g, :, 0].tolist()]
                                   for g in range(keys.shape[1])]
            scored["scores"] = scores[0].to(torch.float32).tolist()
            return scores

        press.base_press.score = recording_score
        module = base.make_module(hq, hkv)
        cache = make_cache()
        # The prefill forward: the prompt's keys enter the cache, and the hook
        # sees a forward from an empty cache (is_prefilling) and returns.
        length = prefill.admit
        keys, values = key_rows(range(length), hkv)
        cache.update(keys, values, 0)
        hidden = torch.zeros((1, length, base.HIDDEN), dtype=torch.float32)
        attn = torch.zeros((1, hq, length, length), dtype=torch.float32)
        press.forward_hook(module, [], {"hidden_states": hidden, "past_key_values": cache,
                                        "cache_position": torch.arange(length)},
                           (hidden, attn))
        spec_kept = set(range(length))
        next_position = length
        for t in range(1, len(scenario.steps)):
            step, record = scenario.steps[t], case.expected.steps[t]
            if step.admit != 1:
                raise base.CaseError(f"step {t} admits {step.admit}: one token per forward here")
            rows = rows_of(step, hq)
            before = cache_positions(cache, hkv)
            position = next_position
            next_position += 1
            keys, values = key_rows([position], hkv)
            cache.update(keys, values, 0)
            k_len = len(before[0]) + 1
            attn = torch.zeros((1, hq, 1, k_len), dtype=torch.float32)
            for h in range(hq):
                g = h // (hq // hkv)
                for i, p in enumerate(before[g]):
                    if p >= len(rows[h]):
                        raise base.CaseError(f"step {t}: row of head {h} has no weight for "
                                             f"position {p}")
                    attn[0, h, 0, i] = rows[h][p]
            hidden = torch.zeros((1, 1, base.HIDDEN), dtype=torch.float32)
            scored.clear()
            try:
                press.forward_hook(module, [], {"hidden_states": hidden, "past_key_values": cache,
                                                "cache_position": torch.tensor([k_len - 1])},
                                   (hidden, attn))
            except Exception as error:
                raise base.CaseError(f"step {t}: DecodingPress raised "
                                     f"{type(error).__name__}: {error}")
            spec_kept = (spec_kept | {position}) - set(record.victims)
            if record.kept_count != len(spec_kept):
                raise base.CaseError(f"step {t}: kept_count {record.kept_count}, but the log's "
                                     f"victims leave {len(spec_kept)}")
            after = cache_positions(cache, hkv)
            spec_scores = {r.position: r.score for r in record.cut}
            differ = False
            for g in range(hkv):
                kv_set = set(after[g])
                if kv_set == spec_kept:
                    continue
                differ = True
                kv_scores = {}
                if scored:
                    kv_scores = dict(zip(scored["positions"][g], scored["scores"][g]))
                spec_only, kv_only = sorted(spec_kept - kv_set), sorted(kv_set - spec_kept)
                if not kv_scores:
                    cls, d = "rule", sorted(set(spec_only) | set(kv_only))
                    result.sets.append(StepSetResult(t, g, cls, d, [spec_scores.get(p) for p in d],
                                                     [math.nan for _ in d], spec_only, kv_only))
                    continue
                cls, d, sv, kv = base.classify(spec_only, kv_only, spec_scores, kv_scores)
                result.sets.append(StepSetResult(t, g, cls, d, sv, kv, spec_only, kv_only))
            if differ:
                result.notes.append(f"first difference at step {t} of {len(scenario.steps) - 1} "
                                    f"decode steps; later steps not compared")
                break
        else:
            result.sets.append(StepSetResult(len(scenario.steps) - 1, 0, "agreed"))
    except base.CaseError as error:
        result.failure = str(error)
    except Exception as error:  # a bug of this tool or a vector it cannot read
        result.failure = f"{type(error).__name__}: {error}\n{traceback.format_exc()}"
    return result


def compute(vectors_dir):
    kvspec_pb2 = base.load_proto_modules()
    selected, errors = base.load_cases(vectors_dir, kvspec_pb2, FLAG)
    return [check_case(case, scenarios) for case, scenarios in selected], errors


def selftest():
    """DecodingPress's schedule, as spec/triggers.md#interval states it,
    checked on kvpress itself: interval 3, target 4, a prompt of 1, then one
    token a step with uniform rows. The firings are at decode steps 3 and 6:
    the first with four cached removes nothing and still restarts the count
    (had it not, step 4 would fire and cut 5 to 4), so the cache holds 2, 3,
    4, 5, 6, 4 after steps 1..6."""
    import torch
    from kvpress import DecodingPress, TOVAPress
    press = DecodingPress(TOVAPress(), compression_interval=3, target_size=4,
                          hidden_states_buffer_size=0)
    module = base.make_module(1, 1)
    cache = make_cache()
    keys, values = key_rows(range(1), 1)
    cache.update(keys, values, 0)
    hidden = torch.zeros((1, 1, base.HIDDEN))
    press.forward_hook(module, [], {"hidden_states": hidden, "past_key_values": cache,
                                    "cache_position": torch.arange(1)},
                       (hidden, torch.zeros((1, 1, 1, 1))))
    lengths = []
    for position in range(1, 7):
        keys, values = key_rows([position], 1)
        cache.update(keys, values, 0)
        k_len = cache.layers[0].keys.shape[2]
        attn = torch.full((1, 1, 1, k_len), 1.0 / k_len)
        hidden = torch.zeros((1, 1, base.HIDDEN))
        press.forward_hook(module, [], {"hidden_states": hidden, "past_key_values": cache,
                                        "cache_position": torch.tensor([k_len - 1])},
                           (hidden, attn))
        lengths.append(cache.layers[0].keys.shape[2])
    expected = [2, 3, 4, 5, 6, 4]
    ok = lengths == expected
    print(f"{'ok' if ok else 'FAIL'}: DecodingPress interval 3, target 4, prompt 1: cache "
          f"lengths {lengths} (expected {expected})")
    print(f"kvpress-decoding-selftest: {1 if ok else 0} passed, {0 if ok else 1} failed")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="the default")
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--selftest", action="store_true")
    parser.add_argument("--vectors", default=os.path.join(base.REPO, "vectors"))
    parser.add_argument("--file", default=DEFAULT_FILE)
    args = parser.parse_args()
    if args.selftest:
        return selftest()
    results, errors = compute(args.vectors)
    base.print_results(results, errors)
    agreed = sum(1 for r in results if not r.failure and r.cls == "agreed")
    print(f"{agreed} of {len(results)} cases agree at every decode step")
    if args.write:
        lines = base.write_file(args.file, results, HEADER)
        missing = sum(1 for line in lines if " rule " in line and " cause: " not in line)
        print(f"wrote {len(lines)} lines to {os.path.relpath(args.file, base.REPO)}"
              + (f"; {missing} rule lines need a cause" if missing else ""))
        return 1 if errors or any(r.failure for r in results) else 0
    passed, failed = base.check(args.file, results, errors, FLAG)
    print(f"kvpress-decoding: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
