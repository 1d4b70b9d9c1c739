"""kvspec engine adapter for Hugging Face transformers 5.2.0 (spec/protocol.md).

A port that answers each case by driving transformers' OWN cache objects and
mask functions, never kvspec's rules. The pattern, for an engine porter:

  1. map the case's configuration to the engine's constructor arguments, or
     answer `skipped` naming what the engine lacks            (plan());
  2. per step, do what the model's forward does, in its order: read the
     position ids from the cache's own count, build the mask, then update
     the cache with keys whose values ARE the positions        (run());
  3. report what came back: the returned keys (held set and ids), the mask's
     allowed columns (spans), the stored keys before/after (victims, kept).

Objects driven (transformers/cache_utils.py, masking_utils.py, 5.2.0):
  DynamicCache(config) -> DynamicSlidingWindowLayer(sliding_window=W)
  StaticCache(config, max_cache_len) -> StaticSlidingWindowLayer
  DynamicCache()  (no config) -> DynamicLayer, which keeps everything
  create_causal_mask / create_sliding_window_causal_mask /
  create_chunked_causal_mask, attn_implementation "eager" (a materialised mask).

The protocol (frames, hello, the request loop, the UNKNOWN_POLICY answer)
is ../common/engine_port.py, shared by every engine adapter; it imports the
Python port's generated protobuf modules (protoc 3.21.12), which the venv's
protobuf 4.21.12 runtime loads. Logs go to stderr; stdout carries frames only.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from engine_port import NO_VALIDATION, U32, Port, Skip, cpb, kpb, position_runs, read_card  # noqa: E402,F401

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import DynamicCache, MistralConfig, StaticCache  # noqa: E402
from transformers.masking_utils import (  # noqa: E402
    create_causal_mask,
    create_chunked_causal_mask,
    create_sliding_window_causal_mask,
)
from transformers.models.llama4.configuration_llama4 import Llama4TextConfig  # noqa: E402

torch.set_num_threads(1)

SPEC_VERSION = "0.8.0"
NAME = "transformers-adapter"
POLICIES = ["full", "window"]
FEATURES = ["decode", "spans"]

# kvspec's parameter cards (spec/policies/window.md, full.md,
# spans.md#parameters): name, default, min, max. Used only to decide that a
# case is a refusal case, which the engine has no notion of.
CARDS = {
    "window": [("budget", 512, 1, U32), ("spans", 0, 0, 1), ("span_window", 0, 0, U32),
               ("span_chunk", 0, 0, U32), ("evict_at", 0, 0, 2), ("position_ids", 0, 0, 1)],
    "full": [("spans", 0, 0, 1), ("span_window", 0, 0, U32), ("span_chunk", 0, 0, U32)],
}
# StaticCache preallocates its window: refuse to allocate absurd windows.
MAX_STATIC_SLOTS = 1 << 20


def log(msg):
    print(f"{NAME}: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- configuration

def model_config(sliding_window=None, chunk=None):
    """The config a model would carry: Mistral for sliding windows and full
    causal attention, Llama 4 (text) for chunked attention. Only the mask
    functions and the caches read it; eager attention materialises the mask."""
    if chunk is not None:
        c = Llama4TextConfig(vocab_size=8, hidden_size=4, intermediate_size=4, intermediate_size_mlp=4,
                             num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                             head_dim=2, attention_chunk_size=chunk,
                             layer_types=["chunked_attention"], no_rope_layers=[1])
    else:
        c = MistralConfig(vocab_size=8, hidden_size=4, intermediate_size=4, num_hidden_layers=1,
                          num_attention_heads=1, num_key_value_heads=1, head_dim=2,
                          sliding_window=sliding_window)
    c._attn_implementation = "eager"
    return c


class Plan:
    def __init__(self, what, make_cache, config, mask_fn, spans):
        self.what = what              # for the log
        self.make_cache = make_cache  # () -> a fresh transformers Cache
        self.config = config
        self.mask_fn = mask_fn        # the masking_utils function the model calls
        self.spans = spans            # report spans and held set


def check_parameters(policy, params):
    """Refusal cases: the engine has no notion of them, so they are skipped."""
    p = read_card(CARDS[policy], params)
    if p["span_window"] > 0 and p["span_chunk"] > 0:
        raise Skip(NO_VALIDATION)
    return p


def check_scenario(sc):
    if sc.HasField("trace"):
        raise Skip("the engine's cache sees keys, not a generated attention trace")
    if sc.HasField("query_heads") or sc.HasField("kv_heads") or any(len(s.heads) for s in sc.steps):
        raise Skip("the engine's cache sees keys, not per-head attention rows")
    if any(len(s.queries) for s in sc.steps):
        raise Skip("the engine's cache sees keys, not query rows")
    if any(s.HasField("attention") for s in sc.steps):
        raise Skip("the engine's cache sees keys, not attention rows")
    admits = [s.admit for s in sc.steps]
    if any(a == 0 for a in admits) or sum(admits) > U32 + 1:
        raise Skip("the engine does not validate kvspec scenarios")
    return admits


def plan(policy, p, admits):
    """Map a kvspec configuration to transformers constructor arguments."""
    W, C, spans = p["span_window"], p["span_chunk"], p["spans"] == 1
    if W:
        rule, size, cfg, mask_fn = "span_window", W, model_config(sliding_window=W), create_sliding_window_causal_mask
    elif C:
        rule, size, cfg, mask_fn = "span_chunk", C, model_config(chunk=C), create_chunked_causal_mask
    else:
        rule, size, cfg, mask_fn = None, None, model_config(), create_causal_mask

    if policy == "full":
        # A model given `past_key_values=DynamicCache()` (no config): plain
        # DynamicLayers, nothing evicted; the model's mask still applies its
        # sliding window or chunks (cache_utils.py DynamicCache.__init__).
        return Plan(f"DynamicCache() + {mask_fn.__name__}", lambda: DynamicCache(), cfg, mask_fn, spans)

    # window
    if p["evict_at"]:
        raise Skip(f"transformers has no cache that evicts before admission (evict_at {p['evict_at']})")
    if p["position_ids"]:
        raise Skip("transformers gives keys absolute position ids (cache_position); "
                   "it has no cache-relative ids (position_ids 1)")
    B = p["budget"]
    if rule is None:
        if spans:
            raise Skip("transformers bounds a cache only for sliding or chunked layers, whose mask applies "
                       "the window; a window cache under full causal attention is not a configuration it has")
        # The older window vectors: DynamicSlidingWindowLayer(sliding_window=B+1)
        # keeps exactly B (its last W - 1); no mask is read (spans 0).
        cfg = model_config(sliding_window=B + 1)
        return Plan(f"DynamicSlidingWindowLayer(sliding_window={B + 1})",
                    lambda: DynamicCache(config=cfg), cfg, None, False)
    if size >= 2 and B == size - 1:
        # preset hf-dynamic-5.2.0: keeps W - 1, returns them with the whole chunk.
        return Plan(f"DynamicSlidingWindowLayer({size}) + {mask_fn.__name__}",
                    lambda: DynamicCache(config=cfg), cfg, mask_fn, spans)
    if B == size:
        # preset hf-static-5.2.0: keeps W; max_cache_len >= W so the window is
        # not shrunk (StaticSlidingWindowLayer uses min(W, max_cache_len)).
        if size > MAX_STATIC_SLOTS:
            raise Skip(f"StaticCache preallocates its window of {size} slots; the adapter caps it at {MAX_STATIC_SLOTS}")
        total = max(sum(admits), size)
        max_len = -(-total // size) * size  # the scenario's positions, rounded up to a multiple of W
        return Plan(f"StaticSlidingWindowLayer({size}, max_cache_len={max_len}) + {mask_fn.__name__}",
                    lambda: StaticCache(config=cfg, max_cache_len=max_len), cfg, mask_fn, spans)
    raise Skip(f"no transformers cache keeps budget {B} under {rule} {size}: "
               f"DynamicSlidingWindowLayer keeps {size} - 1, StaticSlidingWindowLayer keeps {size}")


# ---------------------------------------------------------------- driving the engine

def stored(keys, values):
    """(position, position id) of each written slot, in slot order. A value of
    0 marks a StaticCache slot never written (values carry position + 1)."""
    k = keys[0, 0].tolist()
    v = values[0, 0, :, 0].tolist()
    return [(int(kk[0]), int(kk[1])) for kk, vv in zip(k, v) if vv != 0]


def runs(sorted_positions):
    """Maximal runs of consecutive ints as [first, last, first, last, ...]."""
    out = []
    for p in sorted_positions:
        if out and out[-1] == p - 1:
            out[-1] = p
        else:
            out += [p, p]
    return out


def run(pl, admits, sr_add):
    cache = pl.make_cache()
    nxt = 0  # kvspec position of the next admitted token
    for c in admits:
        layer = cache.layers[0] if cache.layers else None  # DynamicCache() creates its layer lazily
        before = {p for p, _ in stored(layer.keys, layer.values)} if layer is not None and layer.is_initialized else set()

        # As MistralModel.forward / Llama4TextModel.forward: ids from the cache's
        # own count, the mask built before any layer updates the cache.
        past = int(cache.get_seq_length())
        cache_position = torch.arange(past, past + c)
        position_ids = cache_position.unsqueeze(0)
        if pl.spans:
            # Only when reported: a 65537-query chunk over 131073 keys would be 34 GB.
            kv_length, kv_offset = cache.get_mask_sizes(cache_position, 0)  # one layer: the one the mask fn picks
            mask = pl.mask_fn(config=pl.config, inputs_embeds=torch.zeros(1, c, 1), attention_mask=None,
                              cache_position=cache_position, past_key_values=cache, position_ids=position_ids)

        admitted = torch.arange(nxt, nxt + c, dtype=torch.float32)
        keys = torch.stack([admitted, cache_position.float()], dim=-1).view(1, 1, c, 2)  # (position, position id)
        values = (admitted + 1).view(1, 1, c, 1)  # position + 1: 0 marks a slot never written
        k_out, v_out = cache.update(keys, values, 0, {"cache_position": cache_position})

        layer = cache.layers[0]
        after = {p for p, _ in stored(layer.keys, layer.values)}
        admitted_set = set(range(nxt, nxt + c))
        sr = sr_add()
        sr.victims.extend(sorted((before | admitted_set) - after))
        sr.kept_count = len(after)
        sr.query_cache_position = len(before)

        if pl.spans:
            returned = stored(k_out, v_out)  # what attention receives: the held set
            for first, last, pid in position_runs(returned):
                h = sr.held.add()
                h.first, h.last, h.id = first, last, pid
            allowed = mask[0, 0] == 0  # eager mask: 0 attend, dtype min masked
            if allowed.shape[-1] != k_out.shape[-2]:
                raise RuntimeError(f"mask has {allowed.shape[-1]} columns for {k_out.shape[-2]} keys")
            col_pos = k_out[0, 0, :, 0].tolist()
            col_tag = v_out[0, 0, :, 0].tolist()
            for r in range(c):
                cols = torch.nonzero(allowed[r]).flatten().tolist()
                # The library reads column i as position kv_offset + i (sdpa_mask's kv_arange).
                attended = [kv_offset + i for i in cols]
                bad = [(kv_offset + i, col_pos[i]) for i in cols if col_tag[i] == 0 or col_pos[i] != kv_offset + i]
                if bad:
                    raise RuntimeError(f"query {nxt + r}: mask columns name other positions than the keys "
                                       f"they hold (column position, key position): {bad}")
                sr.spans.add().ranges.extend(runs(attended))
        nxt += c


# ---------------------------------------------------------------- the port (../common/engine_port.py)

def run_case(req):
    p = check_parameters(req.policy.name, req.policy.parameters)
    admits = check_scenario(req.scenario)
    pl = plan(req.policy.name, p, admits)
    log(f"#{req.seq} {req.case_id}: {pl.what}")
    elog = kpb.EvictionLog()
    run(pl, admits, elog.steps.add)
    return elog


PORT = Port(NAME, SPEC_VERSION, transformers.__version__, POLICIES, FEATURES, run_case,
            unknown_message=lambda name: f"unknown policy {name!r}", log_errors=True, timings=True)
answer = PORT.respond  # one request -> its reply (classify.py calls it outside the runner)


if __name__ == "__main__":
    sys.exit(PORT.serve())
