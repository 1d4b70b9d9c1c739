"""kvspec engine adapter for llama.cpp 0c1e570 (as vendored by llama-cpp-python
0.3.36): a conformance port (spec/protocol.md) that answers each case by
driving a real llama.cpp context (the tiny random-weight llama GGUF that
setup.sh writes) through the KV-cache calls llama.cpp's server makes for its
context shift, and reporting what llama.cpp's cache holds.

What is llama.cpp's and what is transcribed:
  - the shift arithmetic (when, n_keep, n_discard, the clamp) is transcribed
    from the server (tools/server/server-context.cpp, pre_decode, lines
    2892-2946 of the vendored tree) and, for a chunk of c > 1 tokens, from
    llama-completion (tools/completion/completion.cpp, main, line 567: the
    trigger n_past + embd.size() >= n_ctx, the same as the server's for c 1);
    that is the engine's own code, copied, and the only rule the adapter
    computes;
  - the calls are llama.cpp's: llama_memory_seq_rm, llama_memory_seq_add,
    llama_decode on a real context;
  - the held set is read back from llama.cpp: after each step the adapter
    parses the sequence-state blob (llama_state_seq_get_data_ext) for every
    cell's pos and its layer-0 value row, and names the token in the cell by
    that row (V is not roped and depends only on the token: a table made
    once from a fresh context). Position p is fed as token p % 4096, so the
    cell's token is its kvspec position, and its pos is the position id
    llama.cpp gives it. Victims are what the previous step's cells and the
    step's tokens held and this step's cells no longer hold. The adapter's
    own token list (compacted as the server compacts prompt.tokens) is only a
    cross-check: any disagreement, or cells whose pos are not 0 .. n-1, is an
    `error` reply, never papered over;
  - spans: full causal over cell pos, the mask llama.cpp builds for a
    non-SWA cache (src/llama-kv-cache.cpp, set_input_kq_mask_impl: a key is
    masked when p0 > p1, and SWA masking is off for this model): a query
    attends to every held cell whose pos is at most its own.

The protocol (frames, hello, the request loop, the UNKNOWN_POLICY answer)
is ../common/engine_port.py, shared by every engine adapter.
"""

import ctypes
import os
import struct
import sys

# Frames go to a private copy of fd 1; fd 1 itself is pointed at stderr, so
# nothing llama.cpp's C code might print can land between frames.
_FRAMES = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)

# The shared protocol code, and through it the Python port's generated
# protobuf modules (protoc 3.21.12), which the protobuf 7.36.2 runtime loads
# unchanged (as the mlx-lm adapter does).
sys.dont_write_bytecode = True
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "common"))
from engine_port import NO_VALIDATION, U32, Port, Skip, kpb, position_runs, read_card  # noqa: E402

import numpy as np  # noqa: E402
import llama_cpp as L  # noqa: E402

SPEC_VERSION = "0.9.0"
NAME = "llama.cpp-adapter"
POLICIES = ["streamingllm"]
FEATURES = ["decode", "spans", "contextshift"]
MODEL = os.environ.get("KVSPEC_LLAMA_CPP_MODEL",
                       os.path.join(_HERE, ".venv", "kvspec-models", "tiny-llama-v4096.gguf"))
VOCAB = 4096          # make_tiny.py: position p is fed as token p % VOCAB
MAX_BUDGET = 16383    # the adapter's contexts: n_ctx up to 16384 cells

# kvspec's parameter card for streamingllm with spans.md's parameters
# (spec/policies/streamingllm.md, spec/spans.md#parameters): name, default,
# min, max. Used only to refuse to answer: the engine validates none of them.
CARD = [("budget", 512, 1, U32), ("sinks", 4, 0, U32 - 1), ("prefill_only", 0, 0, 1),
        ("ratio_ppm", 0, 0, 999999), ("spans", 0, 0, 1), ("span_window", 0, 0, U32),
        ("span_chunk", 0, 0, U32), ("evict_at", 0, 0, 2), ("position_ids", 0, 0, 1),
        ("context_shift", 0, 0, 1), ("discard", 0, 0, U32)]
NO_SCENARIO_VALIDATION = "the engine does not validate kvspec scenarios"
NO_SHIFT = ("llama.cpp makes room only by its context shift (context_shift 1, evict_at 0: "
            "server-context.cpp pre_decode); it has no cache for context_shift 0")


class AdapterError(Exception):
    """llama.cpp's cache and the adapter's bookkeeping disagree."""


def configure(policy):
    """The case's parameters -> (n_ctx, n_keep, n_discard) of a server slot
    (spec/spans.md#presets, streamingllm:preset=llama.cpp-0c1e570), or Skip."""
    v = read_card(CARD, policy.parameters)
    if v["sinks"] >= v["budget"] or (v["span_window"] and v["span_chunk"]) or (
            v["evict_at"] and (v["prefill_only"] or v["ratio_ppm"])):
        raise Skip(NO_VALIDATION)  # a rule between parameters fails
    if v["context_shift"] and (v["evict_at"] or v["prefill_only"] or v["ratio_ppm"]
                               or v["budget"] - v["sinks"] < 2):
        raise Skip(NO_VALIDATION)  # a rule of the context shift fails
    if v["discard"] and not v["context_shift"]:
        raise Skip(NO_VALIDATION)
    # The one shape the engine has: the preset's expansion. With spans 0 the
    # log shows no spans or ids, so only context_shift (with evict_at 0) and
    # discard can change it (spec/spans.md#parameters), and only they must
    # match, as the mlx-lm adapter does for evict_at.
    if not v["context_shift"]:
        raise Skip(NO_SHIFT)
    if v["spans"]:
        if v["position_ids"] != 1:
            raise Skip("llama.cpp renumbers the kept positions after a shift (seq_add): its ids "
                       "are cache-relative (position_ids 1), never absolute")
        if v["span_window"] or v["span_chunk"]:
            raise Skip("llama.cpp shifts only a non-SWA cache here (full causal mask, "
                       "set_input_kq_mask_impl); span_window/span_chunk are its SWA cache, "
                       "which cannot shift unless --swa-full")
    budget, sinks = v["budget"], v["sinks"]
    if sinks > budget - 3:
        raise Skip(f"the server caps n_keep at n_ctx - 4 = budget - 3 = {budget - 3} "
                   f"(server-context.cpp pre_decode:2920); sinks {sinks} is not a slot it can have")
    if v["discard"] > 2**31 - 1:
        raise Skip(f"discard {v['discard']}: the server's n_discard is an int32 with hard limits "
                   f"[0, INT32_MAX] (server-task.h:60, server-schema.cpp:58-60)")
    if budget > MAX_BUDGET:
        raise Skip(f"budget {budget}: the adapter's llama.cpp contexts go up to n_ctx "
                   f"{MAX_BUDGET + 1}")
    return budget + 1, sinks, v["discard"], bool(v["spans"])


def check_scenario(sc):
    """kvspec's scenario checks (spec/harness.md#refusals) decide only what to
    skip: a case kvspec refuses is not the engine's to answer."""
    if sc.HasField("trace"):
        raise Skip("the engine's cache sees tokens, not a generated attention trace")
    if sc.HasField("query_heads") or sc.HasField("kv_heads"):
        raise Skip("the engine's cache sees tokens, not several heads' attention rows")
    first = 0
    for st in sc.steps:
        if st.admit == 0 or first + st.admit > U32 + 1 or len(st.heads) or len(st.queries):
            raise Skip(NO_SCENARIO_VALIDATION)
        if st.HasField("attention"):
            # Rows are ignored (the policy is positional), once kvspec would
            # accept them: one weight per position before the step, each
            # finite, non-negative, not -0.0.
            w = np.asarray(st.attention.weights, dtype=np.float32)
            if len(w) != first or not np.all(np.isfinite(w)) or np.any(np.signbit(w)):
                raise Skip(f"refusal case (kvspec rejects the scenario's rows): {NO_SCENARIO_VALIDATION}")
        first += st.admit
    if first > VOCAB:
        raise Skip(f"{first} positions: the adapter names a cell's position by its token, "
                   f"and the test model has {VOCAB}")


# ---------------------------------------------------------------- llama.cpp

_LOG_CB = L.llama_log_callback(lambda level, text, data: None)  # keep a reference
L.llama_log_set(_LOG_CB, ctypes.c_void_p())
L.llama_backend_init()
_model = None
_contexts = {}   # n_ctx (padded) -> llama_context, reused after llama_memory_clear
_vtable = None   # VOCAB x n_embd_v: layer-0 value row of each token


def model():
    global _model
    if _model is None:
        if not os.path.exists(MODEL):
            raise AdapterError(f"no model {MODEL}: run conformance/engines/llama.cpp/setup.sh")
        mp = L.llama_model_default_params()
        _model = L.llama_model_load_from_file(MODEL.encode(), mp)
        if not _model:
            raise AdapterError(f"llama_model_load_from_file({MODEL}) failed")
    return _model


def context(n_ctx):
    """A context of n_ctx cells (llama.cpp pads n_ctx to 256:
    llama-context.cpp llama_context::llama_context:290), one sequence,
    n_batch = n_ubatch = min(n_ctx, 512), its cache cleared."""
    n_ctx = max(256, -(-n_ctx // 256) * 256)
    if n_ctx not in _contexts:
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = cp.n_ubatch = min(n_ctx, 512)
        cp.n_seq_max = 1
        cp.n_threads = cp.n_threads_batch = 1
        c = L.llama_init_from_model(model(), cp)
        if not c:
            raise AdapterError(f"llama_init_from_model(n_ctx {n_ctx}) failed")
        if not L.llama_memory_can_shift(L.llama_get_memory(c)):
            raise AdapterError("llama_memory_can_shift is false for the test model")
        _contexts[n_ctx] = c
    c = _contexts[n_ctx]
    L.llama_memory_clear(L.llama_get_memory(c), True)
    return c


def decode(c, tokens, pos0):
    """llama_decode the tokens at pos0, pos0 + 1, ..., sequence 0, in batches
    of at most n_batch (more aborts the process: llama-context.cpp
    llama_context::decode:1785)."""
    n_batch = L.llama_n_batch(c)
    for s in range(0, len(tokens), n_batch):
        part = tokens[s:s + n_batch]
        b = L.llama_batch_init(len(part), 0, 1)
        try:
            b.n_tokens = len(part)
            for i, t in enumerate(part):
                b.token[i] = t
                b.pos[i] = pos0 + s + i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
                b.logits[i] = i == len(part) - 1
            rc = L.llama_decode(c, b)
        finally:
            L.llama_batch_free(b)
        if rc != 0:
            raise AdapterError(f"llama_decode returned {rc} (positions {pos0 + s}..{pos0 + s + len(part) - 1})")


_F = {0: np.dtype("<f4"), 1: np.dtype("<f2")}  # GGML_TYPE_F32, GGML_TYPE_F16


def cells(c):
    """Sequence 0's cells in cell order, as llama.cpp serializes them
    (llama_state_seq_get_data_ext; llama-context.cpp state_seq_get_data:3213:
    u32 magic, i32 seq_id; llama-kv-cache.cpp state_write: u32 n_stream, per
    stream u32 cell_count, state_write_meta: per cell i32 pos, u32 n_seq_id,
    i32 seq_id[n]; state_write_data: u32 v_trans, u32 n_layer, each layer's
    K rows, then each layer's V rows (or, v_trans, V by element)).
    Returns (pos array, layer-0 V rows as float32, n_cells x n_embd_v)."""
    n = L.llama_state_seq_get_size_ext(c, 0, 0)
    buf = (ctypes.c_uint8 * n)()
    got = L.llama_state_seq_get_data_ext(c, buf, n, 0, 0)
    b = bytes(buf)[:got]
    o = 8
    n_stream, = struct.unpack_from("<I", b, o); o += 4
    if n_stream != 1:
        raise AdapterError(f"seq state has {n_stream} streams")
    cc, = struct.unpack_from("<I", b, o); o += 4
    if cc == 0:
        return np.zeros(0, dtype=np.int64), None
    pos = []
    for _ in range(cc):
        p, ns = struct.unpack_from("<iI", b, o); o += 8
        ids = struct.unpack_from(f"<{ns}i", b, o); o += 4 * ns
        if list(ids) != [0]:
            raise AdapterError(f"cell at pos {p} has sequences {list(ids)}")
        pos.append(p)
    v_trans, n_layer = struct.unpack_from("<II", b, o); o += 8
    for _ in range(n_layer):  # K rows, every layer
        k_type, k_row = struct.unpack_from("<iQ", b, o); o += 12
        o += cc * k_row
    if not v_trans:
        v_type, v_row = struct.unpack_from("<iQ", b, o); o += 12
        dt = _F[v_type]
        v = np.frombuffer(b, dtype=dt, count=cc * v_row // dt.itemsize, offset=o)
        v = v.reshape(cc, v_row // dt.itemsize)
    else:
        v_type, v_el, n_embd = struct.unpack_from("<iII", b, o); o += 12
        dt = _F[v_type]
        v = np.frombuffer(b, dtype=dt, count=cc * n_embd, offset=o).reshape(n_embd, cc).T
    return np.array(pos, dtype=np.int64), v.astype(np.float32)


def vtable():
    """Each token's layer-0 value row, from a fresh context that decodes
    tokens 0 .. VOCAB-1 once (cell pos p holds token p)."""
    global _vtable
    if _vtable is None:
        c = context(VOCAB)
        decode(c, list(range(VOCAB)), 0)
        pos, v = cells(c)
        if sorted(pos.tolist()) != list(range(VOCAB)):
            raise AdapterError("the token table's cells are not 0 .. VOCAB-1")
        t = np.empty_like(v)
        t[pos] = v
        t2 = (t * t).sum(1)
        # A cell matches a row within tol (1e-4 of a row's mean squared
        # norm; measured: at most 1e-6); two rows are at least 4 tol apart
        # in distance, so no cell is within tol of two of them.
        tol = 1e-4 * float(t2.mean())
        pair = t2[:, None] + t2[None, :] - 2.0 * (t @ t.T)
        np.fill_diagonal(pair, np.inf)
        if pair.min() < 16 * tol:
            raise AdapterError(f"two tokens' value rows are {pair.min()} apart: "
                               f"cannot name cells by their rows")
        _vtable = (t, t2, tol)
        L.llama_memory_clear(L.llama_get_memory(c), True)
    return _vtable


def tokens_of(v, guess):
    """The token in each cell, named by its layer-0 value row: the row of the
    table within rounding of it (tol). The table's rows are far apart
    (vtable() checks it), so a row within tol is the only one (triangle
    inequality): a cell is first tried against its guess (the server's
    token list), and searched against the whole table when that fails."""
    t, t2, tol = vtable()
    guess = np.asarray(guess, dtype=np.int64)
    ok = ((v - t[guess]) ** 2).sum(1) <= tol
    if ok.all():
        return guess
    best = guess.copy()
    w = v[~ok]
    d = t2[None, :] - 2.0 * (w @ t.T)
    best[~ok] = d.argmin(1)
    dist = ((v - t[best]) ** 2).sum(1)
    bad = np.nonzero(dist > tol)[0]
    if len(bad):
        raise AdapterError(f"cells {bad.tolist()} match no token's value row "
                           f"(squared distances {dist[bad].tolist()}, tolerance {tol})")
    return best


def held_cells(c, tokens):
    """(kvspec position, llama.cpp pos) of every cell sequence 0 holds, by
    pos; a cell's kvspec position is its token (positions < VOCAB)."""
    pos, v = cells(c)
    if len(pos) == 0:
        return []
    guess = [tokens[p] % VOCAB if 0 <= p < len(tokens) else 0 for p in pos.tolist()]
    return sorted(zip(tokens_of(v, guess).tolist(), pos.tolist()), key=lambda x: x[1])


def run_case(req):
    n_ctx, n_keep_param, n_discard_param, spans = configure(req.policy)
    check_scenario(req.scenario)
    c = context(n_ctx)
    mem = L.llama_get_memory(c)
    log = kpb.EvictionLog()
    tokens = []       # the server's slot.prompt.tokens: kvspec positions, by pos
    held = []         # what llama.cpp held after the previous step
    next_p = 0        # kvspec position of the next token
    for k, st in enumerate(req.scenario.steps):
        nt = st.admit
        n = len(tokens)  # slot.prompt.n_tokens()
        # Trigger: server-context.cpp pre_decode:2892 (n + 1 >= n_ctx, a
        # decode step); completion.cpp main:567 (n_past + embd.size() >=
        # n_ctx, the same rule for a chunk).
        if n + nt >= n_ctx:
            # pre_decode:2914-2926. The slot's n_keep is the preset's sinks
            # (the request's n_keep plus BOS, capped at n_ctx - 4: configure()).
            n_keep = n_keep_param
            n_left = n - n_keep
            n_discard = n_discard_param if n_discard_param else n_left // 2
            n_discard = min(max(n_discard, 0), max(0, n_left - 1))  # std::clamp
            # pre_decode:2930-2931; pos_next() is tokens.size() for text
            # (server-common.cpp server_tokens::pos_next:389-394).
            L.llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard)
            L.llama_memory_seq_add(mem, 0, n_keep + n_discard, n, -n_discard)
            # pre_decode:2933-2946: compact the token list.
            new_tokens = list(tokens)
            for i in range(n_keep + n_discard, len(new_tokens)):
                new_tokens[i - n_discard] = new_tokens[i]
            del new_tokens[len(tokens) - n_discard:]
            tokens = new_tokens
        if len(tokens) + nt > n_ctx - 1:
            # The server refuses a prompt that does not fit
            # (pre_decode:3186-3194, "exceeds the available context size"),
            # and shifts only one token at a time.
            raise Skip(f"step {k} (chunk of {nt} with {len(tokens)} kept after the shift, "
                       f"n_ctx {n_ctx}) does not fit: llama.cpp's server refuses a prompt "
                       f"that exceeds the context (server-context.cpp pre_decode:3186-3194)")
        pos0 = len(tokens)  # pos_next(): handle_last_sampled_token:484
        admitted = list(range(next_p, next_p + nt))
        decode(c, [p % VOCAB for p in admitted], pos0)
        tokens.extend(admitted)
        next_p += nt

        now = held_cells(c, tokens)
        # Cross-checks: the cells are numbered 0 .. n-1, and hold what the
        # server's token list says, in that order.
        if [i for _, i in now] != list(range(len(now))):
            raise AdapterError(f"step {k}: cell pos {[i for _, i in now]} are not 0 .. {len(now) - 1}")
        if [p for p, _ in now] != tokens:
            raise AdapterError(f"step {k}: cells hold {now}, the server's token list {tokens}")
        pmin, pmax = L.llama_memory_seq_pos_min(mem, 0), L.llama_memory_seq_pos_max(mem, 0)
        if (pmin, pmax) != (0, len(now) - 1):
            raise AdapterError(f"step {k}: seq_pos_min/max {pmin}/{pmax} with {len(now)} cells")

        kept = {p for p, _ in now}
        sr = log.steps.add()
        sr.victims.extend(sorted(({p for p, _ in held} | set(admitted)) - kept))
        sr.kept_count = len(now)
        sr.query_cache_position = len(held)
        if spans:
            # Spans: full causal over cell pos (llama-kv-cache.cpp
            # set_input_kq_mask_impl: masked when p0 > p1; no SWA).
            where = dict(now)
            for q in admitted:
                r = sr.spans.add()
                for first, last, _ in position_runs([(p, i) for p, i in now if i <= where[q]]):
                    r.ranges.extend([first, last])
            for first, last, pid in position_runs(now):
                h = sr.held.add()
                h.first, h.last, h.id = first, last, pid
        held = now
    return log


PORT = Port(NAME, SPEC_VERSION, "llama-cpp-python " + L.__version__ + " (llama.cpp 0c1e570)",
            POLICIES, FEATURES, run_case)


if __name__ == "__main__":
    sys.exit(PORT.serve(frames=_FRAMES))
