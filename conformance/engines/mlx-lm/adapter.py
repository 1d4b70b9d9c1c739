"""kvspec engine adapter for mlx-lm 0.32.2 (mlx 0.32.4): a conformance port
(spec/protocol.md) that answers each case by driving mlx-lm's own
`RotatingKVCache` (mlx_lm/models/cache.py) step by step, the way a model
forward does (mlx_lm/models/llama.py), and reporting what the cache did.

Nothing here computes an answer from kvspec's rules: kvspec's parameter
ranges are read only to decide which cases to skip, and every reported
number comes from the engine's objects (the keys `update_and_fetch` returns,
the keys the cache holds, its `offset`, and mlx's own attention run with the
mask mlx-lm builds).

The pattern, for porting to another engine:
  1. decide whether the case is one the engine can express; if not, reply
     `skipped` with what is missing (never a guess);
  2. build the engine's cache from the case's parameters;
  3. per step: read what the cache holds, build the mask the model code
     builds (at the same moment), feed keys whose values are the positions,
     read the keys it returns, read the mask by running the engine's own
     attention with uniform scores, read what it holds afterwards;
  4. report victims / kept / query position (and spans / held with `spans` 1).

The protocol (frames, hello, the request loop, the UNKNOWN_POLICY answer)
is ../common/engine_port.py, shared by every engine adapter.
"""

import os
import sys

# The shared protocol code, and through it the Python port's generated
# protobuf modules (protoc 3.21.12), which the protobuf 7.36.2 runtime mlx-lm
# pulls loads unchanged (README.md).
sys.dont_write_bytecode = True  # write no __pycache__ into the Python port's folder
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "common"))
from engine_port import NO_VALIDATION, U32, Port, Skip, kpb, position_runs, read_card  # noqa: E402

import mlx.core as mx  # noqa: E402
import mlx_lm  # noqa: E402
from mlx_lm.models.base import create_attention_mask, scaled_dot_product_attention  # noqa: E402
from mlx_lm.models.cache import RotatingKVCache  # noqa: E402

SPEC_VERSION = "0.8.0"
NAME = "mlx-lm-adapter"
POLICIES = ["window", "streamingllm"]
FEATURES = ["decode", "spans"]

# kvspec's parameter cards (spec/policies/window.md, streamingllm.md,
# spans.md#parameters): name, default, min, max. Used only to refuse to
# answer: the engine validates none of them.
_SPANS = [("spans", 0, 0, 1), ("span_window", 0, 0, U32), ("span_chunk", 0, 0, U32),
          ("evict_at", 0, 0, 2), ("position_ids", 0, 0, 1)]
CARDS = {
    "window": [("budget", 512, 1, U32)] + _SPANS,
    "streamingllm": [("budget", 512, 1, U32), ("sinks", 4, 0, U32 - 1),
                     ("prefill_only", 0, 0, 1), ("ratio_ppm", 0, 0, 999999)] + _SPANS,
}


def configure(policy):
    """The case's parameters -> RotatingKVCache arguments, or Skip."""
    v = read_card(CARDS[policy.name], policy.parameters)
    sinks = v.get("sinks", 0)
    if sinks >= v["budget"] or (v["span_window"] and v["span_chunk"]) or (
            v["evict_at"] and (v.get("prefill_only") or v.get("ratio_ppm"))):
        raise Skip(NO_VALIDATION)  # a rule between parameters fails
    # The one shape the engine has (spec/spans.md#presets, mlx-lm-0.32.2):
    # RotatingKVCache(max_size=budget, keep=sinks) makes room before
    # admission down to max_size - 1 (evict_at 2), masks a window of
    # max_size (span_window budget - sinks, the preset's) and ropes with
    # absolute positions (position_ids 0). With spans 0 only evict_at can
    # change the log (spec/spans.md#parameters), so only it must match.
    if v["evict_at"] != 2:
        raise Skip(f"mlx-lm's RotatingKVCache makes room before admission, down to "
                   f"max_size - 1 (evict_at 2); it has no cache for evict_at {v['evict_at']}")
    if v["spans"]:
        if v["position_ids"] != 0:
            raise Skip("mlx-lm ropes with absolute positions (cache.offset); "
                       "it has no cache-relative position ids (position_ids 1)")
        if v["span_chunk"]:
            raise Skip("RotatingKVCache.make_mask has no chunked span rule (span_chunk)")
        if v["span_window"] != v["budget"] - sinks:
            raise Skip(f"RotatingKVCache(max_size=budget, keep=sinks) is the preset with "
                       f"span_window budget - sinks = {v['budget'] - sinks}; "
                       f"this case asks span_window {v['span_window']}")
    return v["budget"], sinks, bool(v["spans"])


def check_scenario(sc):
    if sc.HasField("trace"):
        raise Skip("the engine's cache sees keys, not a generated attention trace")
    if sc.HasField("query_heads") or sc.HasField("kv_heads"):
        raise Skip("the engine's cache sees keys, not several heads' attention rows")
    for st in sc.steps:
        if st.HasField("attention") or len(st.heads) or len(st.queries):
            raise Skip("the engine's cache sees keys, not attention rows")
        if st.admit == 0:
            raise Skip("the engine does not validate kvspec scenarios (a step admitting 0)")


def held(cache):
    """(position, id) of every key the cache holds, as the library returns
    them (`keys_and_values`, physical ring order)."""
    if cache.keys is None:
        return []
    keys, _ = cache.keys_and_values()
    return [(int(p), int(i)) for p, i in keys[0, 0].tolist()]


def run_case(req):
    budget, sinks, spans = configure(req.policy)
    check_scenario(req.scenario)
    cache = RotatingKVCache(max_size=budget, keep=sinks)
    log = kpb.EvictionLog()
    next_pos = 0  # kvspec's label of the next admitted token
    for st in req.scenario.steps:
        S = st.admit
        before = held(cache)
        # llama.py LlamaModel.__call__: the mask is made once, before any
        # layer, so before this step's update_and_fetch (N = the step's admit).
        mask = create_attention_mask(mx.zeros((1, S, 1)), cache)
        # llama.py Attention.__call__: rope(keys, offset=cache.offset), then
        # update_and_fetch. Each key is [kvspec position, rope position]:
        # channel 1 is the position rotary embedding gives the key (offset + i)
        # and travels with the key as a rotated key's angle would.
        admitted = list(range(next_pos, next_pos + S))
        rope = [cache.offset + i for i in range(S)]
        keys = mx.array([[p, r] for p, r in zip(admitted, rope)], dtype=mx.float32)
        keys = keys.reshape(1, 1, S, 2)
        k, _ = cache.update_and_fetch(keys, keys)
        returned = [(int(p), int(i)) for p, i in k[0, 0].tolist()]
        after = held(cache)
        next_pos += S

        sr = log.steps.add()
        kept = {p for p, _ in after}
        sr.victims.extend(sorted(({p for p, _ in before} | set(admitted)) - kept))
        sr.kept_count = len(kept)
        sr.query_cache_position = len(before)
        if spans:
            # Read the mask as mlx reads it: run the model's own attention
            # (base.scaled_dot_product_attention -> mx.fast.sdpa) with zero
            # queries (uniform scores) and one-hot values per returned key;
            # a key is in query i's span iff it gets a non-zero weight.
            T = len(returned)
            q = mx.zeros((1, 1, S, 2), dtype=mx.float32)
            eye = mx.eye(T, dtype=mx.float32).reshape(1, 1, T, T)
            w = scaled_dot_product_attention(q, k, eye, cache=cache, scale=1.0, mask=mask)
            for row in w[0, 0].tolist():
                seen = [returned[j] for j in range(T) if row[j] > 0]
                r = sr.spans.add()
                for first, last, _ in position_runs(seen):
                    r.ranges.extend([first, last])
            for first, last, pid in position_runs(returned):
                h = sr.held.add()
                h.first, h.last, h.id = first, last, pid
    return log


PORT = Port(NAME, SPEC_VERSION, mlx_lm.__version__,  # 0.32.2, pinned in requirements.txt
            POLICIES, FEATURES, run_case)


if __name__ == "__main__":
    sys.exit(PORT.serve())
