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

Protobuf: the Python port's generated modules (protoc 3.21.12), imported from
conformance/ports/python/kvspec_port/_gen; the venv's runtime is protobuf
4.21.12. Logs go to stderr; stdout carries frames only.
"""

import os
import struct
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "conformance", "ports", "python", "kvspec_port", "_gen"))
from spec import conformance_pb2 as cpb  # noqa: E402
from spec import kvspec_pb2 as kpb  # noqa: E402

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

PROTOCOL_VERSION = 1
SPEC_VERSION = "0.8.0"
NAME = "transformers-adapter"
POLICIES = ["full", "window"]
FEATURES = ["decode", "spans"]

U32 = 2**32 - 1
# The parameters kvspec gives each policy: (low, high, default). Used only to
# decide that a case is a refusal case, which the engine has no notion of.
PARAMS = {
    "window": {"budget": (1, U32, 512), "spans": (0, 1, 0), "span_window": (0, U32, 0),
               "span_chunk": (0, U32, 0), "evict_at": (0, 2, 0), "position_ids": (0, 1, 0)},
    "full": {"spans": (0, 1, 0), "span_window": (0, U32, 0), "span_chunk": (0, U32, 0)},
}
# StaticCache preallocates its window: refuse to allocate absurd windows.
MAX_STATIC_SLOTS = 1 << 20

NO_VALIDATION = "the engine does not validate kvspec configurations"


class Skip(Exception):
    """The engine cannot express this case; the message says what it lacks."""


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
    table = PARAMS[policy]
    seen = {}
    for name, value in params:
        if name not in table or name in seen:
            raise Skip(NO_VALIDATION)
        lo, hi, _ = table[name]
        if not lo <= value <= hi:
            raise Skip(NO_VALIDATION)
        seen[name] = value
    if seen.get("span_window", 0) > 0 and seen.get("span_chunk", 0) > 0:
        raise Skip(NO_VALIDATION)
    return {name: seen.get(name, d) for name, (_, _, d) in table.items()}


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


def held_runs(pairs):
    """Maximal runs over which both the position and its id count up by one."""
    out = []
    for pos, pid in sorted(pairs):
        if out and out[-1][1] == pos - 1 and out[-1][3] == pid - 1:
            out[-1][1], out[-1][3] = pos, pid
        else:
            out.append([pos, pos, pid, pid])  # first, last, id of first, id of last
    return [(f, l, i) for f, l, i, _ in out]


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
            for first, last, pid in held_runs(returned):
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


# ---------------------------------------------------------------- protocol

def answer(req):
    out = cpb.PortMessage()
    resp = out.response
    resp.seq = req.seq
    name = req.policy.name
    if name not in POLICIES:  # protocol.md: a name we do not implement
        resp.log.rejection.category = kpb.UNKNOWN_POLICY
        resp.log.rejection.step = -1
        resp.log.rejection.message = f"unknown policy {name!r}"
        return out
    try:
        p = check_parameters(name, [(x.name, x.value) for x in req.policy.parameters])
        admits = check_scenario(req.scenario)
        pl = plan(name, p, admits)
        log(f"#{req.seq} {req.case_id}: {pl.what}")
        elog = kpb.EvictionLog()
        run(pl, admits, elog.steps.add)
        resp.log.CopyFrom(elog)
    except Skip as e:
        resp.skipped.reason = str(e)
    except Exception:  # inside the engine (or the adapter): an error reply, never a crash
        resp.error.message = traceback.format_exc()
        log(f"error in {req.case_id}:\n{resp.error.message}")
    return out


def read_frame(f):
    head = f.read(4)
    if not head:
        return None
    if len(head) < 4:
        raise EOFError("truncated frame header")
    (n,) = struct.unpack("<I", head)
    body = f.read(n)
    if len(body) < n:
        raise EOFError("truncated frame")
    return body


def write_frame(f, msg):
    body = msg.SerializeToString()
    f.write(struct.pack("<I", len(body)) + body)
    f.flush()


def main():
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on stdout
    while True:
        body = read_frame(stdin)
        if body is None:
            return 0
        msg = cpb.RunnerMessage()
        msg.ParseFromString(body)
        kind = msg.WhichOneof("message")
        if kind == "hello":
            out = cpb.PortMessage()
            h = out.hello
            h.protocol_version = PROTOCOL_VERSION
            h.spec_version = SPEC_VERSION
            h.port_name = NAME
            h.language = "python"
            h.port_version = transformers.__version__
            h.policies.extend(POLICIES)
            h.features.extend(FEATURES)
            write_frame(stdout, out)
        elif kind == "request":
            t = time.monotonic()
            write_frame(stdout, answer(msg.request))
            log(f"#{msg.request.seq} {msg.request.case_id}: {time.monotonic() - t:.2f}s")
        else:
            log(f"unknown runner message {kind!r}")
            return 1


if __name__ == "__main__":
    sys.exit(main())
