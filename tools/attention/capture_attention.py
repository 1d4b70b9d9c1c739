#!/usr/bin/env python3
"""Captures what kvspec's prefill steps need from a Hugging Face causal LM.

Runs the model in --model (a save_pretrained directory; nothing is downloaded)
over a prompt (--text, tokenized by the model's own tokenizer when the
directory has one, or --token_ids), and writes, for each layer of --layers,
one tensor (one per chunk with --prefill_chunk) to the .safetensors file
--output:

    window.<n>   F32 [Hq, m, L]   (the default, --window m, 64 unless given)
        the attention rows of the prompt's last m queries, positions
        L-m .. L-1: row r is what query q = L-m+r pays to keys 0..L-1
        (0 beyond q: the causal mask). This is an observation window
        (spec/prefill.md#query-rows): tools/attention/import_attention makes it a
        prefill step carrying those rows as query rows.
    layer.<n>    F32 [Hq, L, L]   (--matrix)
        the whole causal matrix, every query's row. It grows as L^2: for a
        few thousand tokens at most.
    chunk.<n>.<e>  F32 [Hq, m_e, e]   (--prefill_chunk C, instead of window.<n>)
        a chunked prefill of C tokens a chunk: for each chunk end e = C, 2C,
        ... and finally L (the last chunk may be shorter), the rows of the
        chunk's last m_e = min(m, e - previous end) queries over keys
        0..e-1 (m = --window, 64 unless given): what a policy that
        compresses at prefill sees at that chunk. tools/attention/import_attention
        makes them one prefill step per chunk. In a causal model the row of
        query q depends on nothing after q, so these are the rows of the
        same queries in the one forward pass, cut at e, computed as the
        window's are (a block of rows at a time, a new block at each
        chunk's first row). capture_attention_test checks on its model
        that each chunk's rows are transformers' output_attentions rows
        cut at e, bit for bit, and that the last chunk's are window.<n>'s.

    totals.<n>   F64 [Hq, P]      (--totals, beside window.<n>)
        the column totals of spec/prefill.md#column-totals over the first
        P = L - D queries (D = --totals_decode, 0 unless given): for each
        head and key p < P, the float64 sum of the float32 weights every
        query p <= q < P pays to p, added row by row in ascending q from
        +0.0 (so the totals are bit for bit what h2o's prefill rule sums
        from the whole matrix of a prefill of P positions). Every row
        before P is computed, a block at a time, but only the window's
        rows are kept: H2O's observed attention at any length, for the
        cost of the whole matrix's arithmetic and none of its storage.
        With D > 0 the totals are those of the prefill step that
        tools/attention/import_attention --totals --decode=D makes, its last D
        positions being decode steps. Eager attention only.

    keys.<n>     F32 [Hkv, L, d]  (--keys, beside any layout, eager or sdpa)
        the layer's key states as its attention function receives them:
        after k_proj, any k_norm and the rotary embedding, exactly what
        transformers' DynamicCache holds for the layer after the forward
        pass. KV head by KV head, position-major: keys.<n>[g, p, :] is KV
        head g's key of position p (Hkv = num_key_value_heads, L the
        prompt's tokens, d = head_dim). Float32, as the capture runs the
        model (its weights converted to float32).
        tools/attention/import_attention --keys reads them into the
        scenario's keys (spec/tensors.md). capture_attention_test checks
        on its model (a window, eager and sdpa, and a chunked prefill)
        that they are the cache's keys of transformers' own forward pass
        with the same attention, bit for bit.

    values.<n>   F32 [Hkv, L, e]  (--values, beside any layout, eager or sdpa,
                                   with or without --keys)
        the layer's value states as its attention function receives them:
        after v_proj (and any v_norm), exactly what transformers'
        DynamicCache holds for the layer after the forward pass. Laid out
        as keys.<n>: values.<n>[g, p, :] is KV head g's value of position p
        (e = head_dim, the width transformers' attention projects values
        to; a model whose values are another width is refused naming
        both). tools/attention/import_attention --values reads them into
        the scenario's values (spec/tensors.md), which lagkv reads with the
        keys. capture_attention_test checks them against the cache as it
        checks the keys, bit for bit.

Nothing of size L x L is ever held: rows are computed from the layer's queries
and keys a block of rows at a time (--block_rows), with the arithmetic of the
attention the rows stand for (--attention):

    eager  (default) transformers' eager_attention_forward: the scores
           matmul(query, key^T) * scaling, plus the causal mask as eager adds
           it (0 on and below the diagonal, float32's lowest value above),
           softmax in float32. The model's own hidden states are computed the
           same way, a block of rows at a time, for every layer before the
           last one captured.
    sdpa   the model runs with transformers' sdpa attention (its default), and
           the window's rows are recomputed as kvpress 0.5.5 does
           (SnapKVPress.compute_window_attention: the last m queries projected
           again from the layer's input, RoPE applied, matmul with the keys
           divided by sqrt(head_dim), -inf above the diagonal, softmax in
           float32), the full rows kept. The difference between the two is
           what a user of kvpress under sdpa sees. With --prefill_chunk, each
           chunk's rows are that recomputation at the chunk's end e: its
           last m_e queries from the layer's input at their positions, keys
           0..e-1, the mask's diagonal at e - m_e + 1 (as kvpress computes
           it when e keys are in the cache); the hidden states and keys are
           the one forward pass's, which a chunked engine computes with
           other kernel shapes.

The forward pass stops after the last captured layer's attention: no later
layer, no LM head. The MLP of earlier layers and every rotary embedding run
--chunk_rows tokens at a time (elementwise or row by row: the same bits). The
file is written as it is computed (its header first, each layer's rows as
soon as they exist), to a temporary file beside --output that is renamed at
the end: never a half-written output. --output is written only over a regular
file or a new path: an existing symlink, FIFO, device (/dev/null) or
directory is refused, and so is any file the capture reads (--text,
--token_ids, a file of the --model directory) under any name, before torch is
imported and again before the rename.

Before anything large is allocated, the run's memory (model weights,
activations, row blocks) is estimated and compared with what the machine has
(MemAvailable, or --memory_limit_gib), and the output's size with the free
disk space; a run that would not fit is refused with the figures and the way
out. __metadata__ records the model, layers, token count, window, attention
path, versions and the SHA-256 of the token ids (and, with --prefill_chunk,
"layout": "chunks", "prefill_chunk": C and "chunks": their count per layer;
with --keys, "keys": "1"; with --values, "values": "1").

    tools/.venv-torch/bin/python tools/attention/capture_attention.py \\
        --model ~/models/Llama-3.2-1B --text prompt.txt --layers 0,8 \\
        --window 64 --output /tmp/window.safetensors
    bazel run -c opt //tools:import_attention -- --input=/tmp/window.safetensors \\
        --layer=8 --output=/tmp/prompt.pb --kv_heads=8

A chunked prefill of 512 tokens a chunk, the last 64 queries of each:

    tools/.venv-torch/bin/python tools/attention/capture_attention.py \\
        --model ~/models/Llama-3.2-1B --text prompt.txt --layers 8 \\
        --window 64 --prefill_chunk 512 --output /tmp/chunks.safetensors
    bazel run -c opt //tools:import_attention -- --input=/tmp/chunks.safetensors \\
        --output=/tmp/chunked.pb --kv_heads=8

If the model directory has no tokenizer and --text is given, each UTF-8 byte
of the text is a token, its id taken modulo the vocabulary size (said on
stderr).

Exit status: 0 on success, 2 for a bad argument or a run refused before it
started (too large for the memory or the disk), 1 for any other failure.
"""

import argparse
import bisect
import hashlib
import math
import os
import struct
import sys
import time

from capture_files import (MAX_HEADER_BYTES, SafetensorsWriter, UsageError,
                           capture_inputs, check_output, encode_header,
                           read_text, read_token_ids)

# Nothing may be downloaded: set before transformers is imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# The files any of transformers' tokenizers is loaded from. A model directory
# with none of them has no tokenizer.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
)

# The name under which the capture's attention function is registered with
# transformers (AttentionInterface); a name transformers' masking code does
# not know, so it builds no [L, L] mask (masking_utils,
# _preprocess_mask_arguments: early exit for an unknown implementation).
ATTENTION_NAME = "kvspec_capture"
GIB = 1024 ** 3


class StopForward(Exception):
    """Raised after the last captured layer: nothing later is computed."""


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Capture the attention rows kvspec's prefill steps need "
        "(an observation window's rows, or the whole causal matrix) from a "
        "Hugging Face causal LM, as .safetensors for tools/attention/import_attention.")
    parser.add_argument("--model", required=True,
                        help="a local model directory (save_pretrained)")
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--text", help="a UTF-8 text file: the prompt")
    prompt.add_argument("--token_ids",
                        help="a file of token ids: a JSON list, or integers "
                        "separated by spaces, commas or newlines")
    parser.add_argument("--output", required=True,
                        help="the .safetensors file to write (a new path or "
                        "a regular file; never an input of the capture)")
    parser.add_argument("--layers", default=None,
                        help="the layers to capture, 0-based: '3', '0,8,15' "
                        "or 'all' (default 0)")
    parser.add_argument("--layer", type=int, default=None,
                        help="one layer (the same as --layers N)")
    parser.add_argument("--window", type=int, default=None,
                        help="capture the rows of the prompt's last m "
                        "queries: window.<n> [Hq, m, L] (default 64, or L "
                        "when the prompt is shorter)")
    parser.add_argument("--matrix", action="store_true",
                        help="capture the whole causal matrix instead: "
                        "layer.<n> [Hq, L, L] (grows as L^2)")
    parser.add_argument("--prefill_chunk", type=int, default=None,
                        help="a chunked prefill of C tokens a chunk instead "
                        "of one window: chunk.<n>.<e> [Hq, m_e, e] for each "
                        "chunk end e = C, 2C, ..., L, the rows of the "
                        "chunk's last m_e = min(--window, chunk length) "
                        "queries over keys 0..e-1")
    parser.add_argument("--totals", action="store_true",
                        help="also write totals.<n> F64 [heads, L]: each "
                        "key's column total over every query "
                        "(spec/prefill.md#column-totals), for h2o; eager "
                        "attention, window layout only")
    parser.add_argument("--totals_decode", type=int, default=0,
                        help="with --totals: leave the prompt's last D "
                        "queries (and keys) out of the totals, which then "
                        "are a prefill of L - D positions' (totals.<n> "
                        "[heads, L - D]) for import_attention --totals "
                        "--decode=D; default 0")
    parser.add_argument("--keys", action="store_true",
                        help="also write keys.<n> F32 [kv_heads, L, "
                        "head_dim]: each captured layer's key states as the "
                        "cache holds them (after any k_norm and the rotary "
                        "embedding), KV head by KV head, position-major, "
                        "for import_attention --keys (spec/tensors.md); "
                        "any layout, eager or sdpa")
    parser.add_argument("--values", action="store_true",
                        help="also write values.<n> F32 [kv_heads, L, "
                        "head_dim]: each captured layer's value states as "
                        "the cache holds them, KV head by KV head, "
                        "position-major, for import_attention --values "
                        "(spec/tensors.md; lagkv reads them with the "
                        "keys); any layout, eager or sdpa")
    parser.add_argument("--attention", choices=("eager", "sdpa"),
                        default="eager",
                        help="the attention whose rows to capture (default "
                        "eager; sdpa: the rows kvpress recomputes under sdpa)")
    parser.add_argument("--device", default="cpu",
                        help="torch device to run on (default cpu; e.g. cuda)")
    parser.add_argument("--max_tokens", type=int, default=0,
                        help="keep at most this many tokens of the prompt "
                        "(default 0: all)")
    parser.add_argument("--block_rows", type=int, default=0,
                        help="query rows computed at a time (default 0: as "
                        "many as fit in about 256 MiB per block)")
    parser.add_argument("--chunk_rows", type=int, default=4096,
                        help="tokens an earlier layer's MLP, and each "
                        "layer's rotary embedding, run at a time (default "
                        "4096)")
    parser.add_argument("--memory_limit_gib", type=float, default=0.0,
                        help="refuse a run whose estimate exceeds this "
                        "(default 0: the machine's MemAvailable)")
    return parser.parse_args(argv)


def tokenize(model_dir, text, vocab_size):
    """The token ids of `text` and how they were made."""
    has_tokenizer = any(
        os.path.exists(os.path.join(model_dir, name))
        for name in TOKENIZER_FILES)
    if has_tokenizer:
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(model_dir,
                                                  local_files_only=True)
        return tokenizer(text)["input_ids"], "the model's tokenizer"
    print(f"capture_attention: {model_dir} has no tokenizer; using the "
          f"UTF-8 bytes of the text as tokens, each byte id modulo the "
          f"vocabulary size {vocab_size}", file=sys.stderr)
    ids = [byte % vocab_size for byte in text.encode("utf-8")]
    return ids, f"utf-8 bytes modulo {vocab_size}"


def parse_layers(args, layer_count):
    if args.layer is not None and args.layers is not None:
        raise UsageError("give --layer or --layers, not both")
    if args.layer is not None:
        wanted = [args.layer]
    elif args.layers is None:
        wanted = [0]
    elif args.layers == "all":
        wanted = list(range(layer_count))
    else:
        try:
            wanted = [int(part) for part in args.layers.split(",")]
        except ValueError:
            raise UsageError(f"--layers: '{args.layers}' is not a list of "
                             f"layer numbers or 'all'") from None
    for layer in wanted:
        if not 0 <= layer < layer_count:
            raise UsageError(f"--layer {layer} is out of range: the model "
                             f"has {layer_count} layers (0..{layer_count - 1})")
    if len(set(wanted)) != len(wanted):
        raise UsageError(f"--layers: '{args.layers}' names a layer twice")
    return sorted(wanted)


def size(count):
    """A byte count for people: '3.1 GiB', '12.0 MiB'."""
    if count >= GIB:
        return f"{count / GIB:.1f} GiB"
    return f"{count / 1024 ** 2:.1f} MiB"


def mem_available():
    """MemAvailable from /proc/meminfo in bytes, or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def chunk_spans(length, chunk, window):
    """(end, rows) of each chunk of a prefill of `chunk` tokens a chunk over
    `length` tokens: ends chunk, 2 chunk, ... and length; each chunk's rows
    are those of its last min(window, its tokens) queries."""
    spans, start = [], 0
    while start < length:
        end = min(start + chunk, length)
        spans.append((end, min(window, end - start)))
        start = end
    return spans


class Capture:
    """The attention function the model runs, and what it records."""

    def __init__(self, torch, layers, spans, attention, block_rows, writer,
                 totals=None, keys=None, values=None):
        self.torch = torch
        # --keys: the shape (Hkv, L, d) of keys.<layer>, into which each
        # captured layer's key states are written; None: no keys.
        self.keys = keys
        # --values: the same for values.<layer>, (Hkv, L, e); None: none.
        self.values = values
        # --totals: P = totals, the rows 0 .. P-1 of a captured layer are
        # computed and added to its KV group's column totals over keys
        # 0 .. P-1 (spec/prefill.md#column-totals); None: no totals.
        self.totals = totals
        self.layers = set(layers)
        self.last_layer = max(layers)
        # The rows recorded, ascending and disjoint: (first, stop, width,
        # name) for the queries first .. stop-1, each row over keys
        # 0 .. width-1, into tensor name.format(layer).
        self.spans = spans
        self.attention = attention
        self.block_rows = block_rows
        self.writer = writer
        self.layer_inputs = {}  # layer -> (hidden_states, position_embeddings)
        self.seconds = {}
        self.began = None  # the first layer's start, for the progress lines

    # -- the pieces of arithmetic, each as the library computes it ---------

    def eager_weights(self, query, key, scaling, rows):
        """Eager attention rows `rows` (a range) of one KV group.

        query [1, G, L, d] (the group's query heads), key [1, G, L, d] (the
        group's key repeated to its heads, contiguous, as repeat_kv makes
        it): transformers' eager_attention_forward on those rows: matmul,
        times scaling, plus eager's additive causal mask, softmax in float32.
        """
        torch = self.torch
        q = query[:, :, rows.start:rows.stop, :]
        weights = torch.matmul(q, key.transpose(2, 3)) * scaling
        positions = torch.arange(key.shape[2], device=q.device)
        queries = torch.arange(rows.start, rows.stop, device=q.device)
        mask = torch.where(positions[None, :] > queries[:, None],
                           torch.finfo(torch.float32).min, 0.0)
        weights = weights + mask.to(weights.dtype)
        return torch.nn.functional.softmax(weights, dim=-1,
                                           dtype=torch.float32)

    def kvpress_window_weights(self, module, key_group, group, groups, end,
                               m):
        """kvpress's recomputed window rows for one KV group (sdpa path).

        SnapKVPress.compute_window_attention (kvpress 0.5.5,
        presses/snapkv_press.py), without its final slice, at a forward
        pass whose last position is end - 1 (end = L: the whole prompt; a
        chunk's end with --prefill_chunk): the m queries end-m .. end-1
        projected again from the layer's input
        (kvpress.utils.get_prerope_query_states), RoPE applied, matmul with
        the keys 0 .. end-1 / sqrt(head_dim), -inf above the diagonal,
        softmax in float32.
        """
        torch = self.torch
        from kvpress.utils import get_prerope_query_states
        from transformers.models.llama.modeling_llama import rotate_half
        hidden_states, (cos, sin) = self.layer_inputs[module.layer_idx]
        k_len = end
        query = get_prerope_query_states(module, hidden_states[:, end - m:end])
        cos, sin = cos[:, end - m:end], sin[:, end - m:end]
        query = (query * cos.unsqueeze(1)) + (rotate_half(query) * sin.unsqueeze(1))
        query = query[:, group * groups:(group + 1) * groups]
        keys = key_group[:, :, :end].expand(1, groups, k_len,
                                            key_group.shape[3])
        weights = torch.matmul(query, keys.transpose(2, 3)) / math.sqrt(
            module.head_dim)
        mask = torch.ones_like(weights) * float("-inf")
        mask = torch.triu(mask, diagonal=k_len - m + 1)
        weights += mask
        return torch.nn.functional.softmax(weights, dim=-1,
                                           dtype=torch.float32)

    # -- recording ----------------------------------------------------------

    def record(self, layer, group, groups, span, first_row, weights):
        """Writes rows first_row.. (inside `span`) of a group's heads into
        the span's tensor, each cut to the span's width."""
        import numpy
        weights = weights[0].to("cpu").contiguous().numpy()  # [G, B, K]
        heads = weights.shape[0]
        first, stop, width, name = span
        rows_per_head = stop - first
        for i in range(heads):
            head = group * groups + i
            offset = ((head * rows_per_head) + (first_row - first)) * width * 4
            rows = weights[i]
            if rows.shape[1] != width:
                rows = numpy.ascontiguousarray(rows[:, :width])
            self.writer.write(name.format(layer), offset, rows)

    def add_rows(self, sums, weights, first):
        """spec/prefill.md#column-totals: adds the rows of a block (its
        first query `first`) that come before P, the totals' width, to the
        group's float64 totals over keys 0..P-1, one query at a time, in
        ascending query order, so each key's total is ((0 + w_0) + w_1) +
        ...: the spec's order. A row's weights above its diagonal are
        exactly +0.0 (eager's mask makes their exponent underflow), and
        adding +0.0 changes no total."""
        block = weights[0]  # [G, B, K]
        width = sums.shape[1]
        for r in range(min(block.shape[1], width - first)):
            sums += block[:, r, :width].to(self.torch.float64)

    def record_totals(self, layer, group, sums):
        """Writes one KV group's heads' totals into totals.<layer>."""
        sums = sums.to("cpu").contiguous().numpy()
        groups, width = sums.shape
        for i in range(groups):
            head = group * groups + i
            self.writer.write(f"totals.{layer}", head * width * 8, sums[i])

    def record_vectors(self, name, layer, states, shape):
        """Writes states [1, Hkv, L, d], the layer's key or value states
        (name "keys" or "values") as its attention receives them, into
        <name>.<layer> of `shape` (Hkv, L, d), one KV head at a time."""
        if tuple(states.shape) != (1, *shape):
            raise RuntimeError(
                f"layer {layer}'s {name} are {list(states.shape)}, not the "
                f"[1, {', '.join(str(x) for x in shape)}] the config "
                f"gives (num_key_value_heads, tokens, head_dim)")
        _, kv_heads, length, width = states.shape
        for g in range(kv_heads):
            head = states[0, g].to(
                device="cpu", dtype=self.torch.float32).contiguous().numpy()
            self.writer.write(f"{name}.{layer}", g * length * width * 4, head)

    def blocks(self, length, everything):
        """Row ranges covering the spans' rows and every row 0..everything-1
        (everything: a row count, 0 for none), each with the span it lies
        in or None: a new block at each span's first and stop row and at
        `everything`, at most block_rows rows."""
        cuts = {length}
        if everything:
            cuts.update((0, everything))
        for first, stop, _, _ in self.spans:
            cuts.update((first, stop))
        cuts = sorted(cuts)
        firsts = [span[0] for span in self.spans]
        for lo, hi in zip(cuts, cuts[1:]):
            i = bisect.bisect_right(firsts, lo) - 1
            span = self.spans[i] if i >= 0 and lo < self.spans[i][1] else None
            if span is None and lo >= everything:
                continue
            for first in range(lo, hi, self.block_rows):
                yield range(first, min(hi, first + self.block_rows)), span

    def __call__(self, module, query, key, value, attention_mask,
                 dropout=0.0, scaling=None, **kwargs):
        torch = self.torch
        if attention_mask is not None:
            raise RuntimeError("the model passed an attention mask: the "
                               "capture runs one unpadded prompt and applies "
                               "the causal mask itself")
        layer = module.layer_idx
        began = time.monotonic()
        length = query.shape[2]
        groups = module.num_key_value_groups
        kv_heads = key.shape[1]
        captured = layer in self.layers
        need_output = layer < self.last_layer
        output = None
        if captured and self.keys is not None:
            self.record_vectors("keys", layer, key, self.keys)
        if captured and self.values is not None:
            self.record_vectors("values", layer, value, self.values)
        if self.attention == "sdpa":
            if captured:
                for g in range(kv_heads):
                    for span in self.spans:
                        first, stop = span[0], span[1]
                        weights = self.kvpress_window_weights(
                            module, key[:, g:g + 1], g, groups, stop,
                            stop - first)
                        self.record(layer, g, groups, span, first, weights)
            if need_output:
                from transformers.integrations.sdpa_attention import \
                    sdpa_attention_forward
                output, _ = sdpa_attention_forward(
                    module, query, key, value, None, dropout=0.0,
                    scaling=scaling)
        else:
            if need_output:
                output = torch.empty(query.shape, dtype=query.dtype,
                                     device=query.device)
            totals = self.totals if captured else None
            every = length if need_output else (totals or 0)
            for g in range(kv_heads):
                heads = slice(g * groups, (g + 1) * groups)
                keys = repeat_group(key, g, groups)
                values = repeat_group(value, g, groups) if need_output else None
                sums = (torch.zeros((groups, totals), dtype=torch.float64,
                                    device=query.device) if totals else None)
                for rows, span in self.blocks(length, every):
                    weights = self.eager_weights(query[:, heads], keys,
                                                 scaling, rows)
                    if captured and span is not None:
                        self.record(layer, g, groups, span, rows.start,
                                    weights)
                    if totals and rows.start < totals:
                        self.add_rows(sums, weights, rows.start)
                    if need_output:
                        output[:, heads, rows.start:rows.stop] = torch.matmul(
                            weights.to(value.dtype), values)
                if totals:
                    self.record_totals(layer, g, sums)
            if need_output:
                output = output.transpose(1, 2).contiguous()
        self.seconds[layer] = time.monotonic() - began
        self.progress(layer, captured)
        if not need_output:
            raise StopForward()
        return output, None

    def progress(self, layer, captured):
        """One line on stderr as each layer's attention is done: the run
        goes through layers 0 .. last, so the time so far per layer gives
        the rest."""
        now = time.monotonic()
        if self.began is None:
            self.began = now - self.seconds[layer]
        done, total = layer + 1, self.last_layer + 1
        elapsed = now - self.began
        left = elapsed / done * (total - done)
        print(f"capture_attention: layer {layer} ({done} of {total}"
              f"{', captured' if captured else ''}): {elapsed:.0f} s so far"
              f"{f', about {left:.0f} s left' if done < total else ''}",
              file=sys.stderr, flush=True)


def repeat_group(states, group, groups):
    """KV head `group` of states [1, Hkv, L, d] repeated to its `groups`
    query heads, contiguous: repeat_kv's result for those heads."""
    one = states[:, group:group + 1]
    return one.expand(1, groups, one.shape[2], one.shape[3]).reshape(
        1, groups, one.shape[2], one.shape[3])


def estimate_memory(config, params_bytes, length, layers, window, matrix,
                    block_rows, chunk_rows, attention, header_bytes=0,
                    keys=False, values=False):
    """Bytes the run needs at its peak, a deliberate over-estimate."""
    hidden = config.hidden_size
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    inter = getattr(config, "intermediate_size", 4 * hidden)
    groups = heads // kv_heads
    f32 = 4
    activations = length * hidden * f32 * 4          # embeddings, residual, norm, o_proj
    activations += length * (heads + 2 * kv_heads) * head_dim * f32 * 2  # q, k, v; RoPE copies
    activations += length * heads * head_dim * f32 * 2  # attention output
    if max(layers) > 0:
        activations += min(length, chunk_rows) * inter * f32 * 3 + \
            length * hidden * f32
    rows = block_rows if (matrix or max(layers) > 0 or attention == "sdpa") \
        else min(block_rows, window)
    block = groups * rows * length * f32 * 4          # scores, mask, softmax, copy
    if attention == "sdpa":
        block = max(block, groups * window * length * f32 * 4)
    rope = length * head_dim * f32 * 2
    # The header and the writer's table of tensors (a chunked prefill has
    # one tensor per chunk and layer): the JSON, its dict, their copies.
    tables = header_bytes * 8
    # --keys, --values: a layer's keys and values converted and copied for
    # the writer (one KV head at a time; counted whole).
    key_copies = kv_heads * length * head_dim * f32 * (int(keys) + int(values))
    return int(params_bytes + activations + block + rope + tables +
               key_copies + 0.5 * GIB)


def capture(args):
    if not os.path.isdir(args.model):
        raise UsageError(f"--model: '{args.model}' is not a directory")
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        raise UsageError(f"--model: '{args.model}' has no config.json (save "
                         f"the model with save_pretrained)")
    if args.max_tokens < 0:
        raise UsageError("--max_tokens must be at least 0 (0: all tokens)")
    if args.window is not None and args.window < 1:
        raise UsageError(f"--window must be at least 1, got {args.window}")
    if args.window is not None and args.matrix:
        raise UsageError("give --window or --matrix, not both")
    if args.prefill_chunk is not None and args.prefill_chunk < 1:
        raise UsageError(f"--prefill_chunk must be at least 1, got "
                         f"{args.prefill_chunk}")
    if args.prefill_chunk is not None and args.matrix:
        raise UsageError("give --prefill_chunk or --matrix, not both: the "
                         "matrix holds every query's row already (a chunked "
                         "prefill's rows among them)")
    if args.matrix and args.attention == "sdpa":
        raise UsageError("--matrix with --attention sdpa: kvpress recomputes "
                         "only the observation window under sdpa; capture "
                         "the matrix with --attention eager")
    if args.totals and args.attention == "sdpa":
        raise UsageError("--totals with --attention sdpa: the totals sum the "
                         "eager attention weights (ObservedAttentionPress "
                         "reads them too); capture with --attention eager")
    if args.totals and (args.matrix or args.prefill_chunk is not None):
        raise UsageError("--totals is for the window layout: the matrix "
                         "carries every row already, and a chunked "
                         "prefill's totals per chunk are not captured")
    if args.totals_decode and not args.totals:
        raise UsageError("--totals_decode leaves queries out of the totals: "
                         "give --totals too")
    if args.totals_decode < 0:
        raise UsageError(f"--totals_decode must be at least 0, got "
                         f"{args.totals_decode}")
    if args.block_rows < 0 or args.chunk_rows < 1:
        raise UsageError("--block_rows must be at least 0 and "
                         "--chunk_rows at least 1")
    text = read_text(args.text) if args.text is not None else None
    output_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(output_dir):
        raise UsageError(f"--output: the folder '{output_dir}' does not exist")
    # Before torch is imported: a refusal costs nothing.
    inputs = capture_inputs(args)
    check_output(args.output, inputs)

    try:
        import numpy  # noqa: F401  (the writer hands numpy buffers to pwrite)
        import torch
        import transformers
        from transformers import (AttentionInterface, AutoConfig,
                                  AutoModelForCausalLM)
    except ImportError as e:
        raise RuntimeError(
            f"{e}: this Python lacks torch, transformers or numpy; run "
            f"tools/setup.sh --research (or --tests) and use "
            f"tools/.venv-torch/bin/python") from None
    transformers.utils.logging.disable_progress_bar()
    if args.attention == "sdpa":
        try:
            import kvpress
        except ImportError:
            raise RuntimeError("--attention sdpa recomputes the window as "
                               "kvpress 0.5.5 does and needs kvpress "
                               "installed (tools/.venv-torch has it)") from None
    try:
        device = torch.device(args.device)
        torch.empty(1, device=device)
    except (RuntimeError, AssertionError) as e:
        raise UsageError(f"--device {args.device}: {e}") from None

    config = AutoConfig.from_pretrained(args.model, local_files_only=True)
    layers = parse_layers(args, config.num_hidden_layers)
    query_heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or query_heads

    if text is not None:
        ids, how = tokenize(args.model, text, config.vocab_size)
    else:
        ids = read_token_ids(args.token_ids, config.vocab_size)
        how = f"token ids from {os.path.basename(args.token_ids)}"
    if args.max_tokens and len(ids) > args.max_tokens:
        print(f"capture_attention: keeping the first {args.max_tokens} of "
              f"{len(ids)} tokens", file=sys.stderr)
        ids = ids[:args.max_tokens]
    if not ids:
        raise UsageError("the prompt gives no tokens")
    length = len(ids)
    window = length if args.matrix else min(args.window or 64, length)
    if args.totals_decode >= length:
        raise UsageError(f"--totals_decode {args.totals_decode} leaves no "
                         f"query in the totals: the prompt has {length} "
                         f"tokens; give at most {length - 1}")
    total_rows = length - args.totals_decode if args.totals else None
    if args.window is not None and args.window > length:
        print(f"capture_attention: --window {args.window} is longer than "
              f"the prompt's {length} tokens; capturing all {length} rows",
              file=sys.stderr)
    chunked = args.prefill_chunk is not None
    if chunked and args.prefill_chunk >= length:
        print(f"capture_attention: --prefill_chunk {args.prefill_chunk} is "
              f"not below the prompt's {length} tokens: one chunk, "
              f"chunk.<n>.{length}, the rows window.<n> would hold",
              file=sys.stderr)
    groups = query_heads // kv_heads
    block_rows = args.block_rows or max(1, min(
        length, (256 * 1024 * 1024) // max(1, groups * length * 4)))
    # What is recorded: (first, stop, width, name) per tensor and layer (the
    # name's {} is the layer), and the tensors' headers.
    if args.matrix:
        spans = [(0, length, length, "layer.{}")]
    elif chunked:
        spans = [(end - rows, end, end, f"chunk.{{}}.{end}")
                 for end, rows in chunk_spans(length, args.prefill_chunk,
                                              window)]
    else:
        spans = [(length - window, length, length, "window.{}")]
    tensors = [(name.format(n), "F32", (query_heads, stop - first, width), 4)
               for n in layers for first, stop, width, name in spans]
    if args.totals:
        tensors += [(f"totals.{n}", "F64", (query_heads, total_rows), 8)
                    for n in layers]
    head_dim = getattr(config, "head_dim", None) or \
        config.hidden_size // query_heads
    if args.keys:
        tensors += [(f"keys.{n}", "F32", (kv_heads, length, head_dim), 4)
                    for n in layers]
    # Values are head_dim wide in transformers' attention modules (v_proj
    # to num_key_value_heads x head_dim); Capture refuses any other width.
    value_dim = head_dim
    if args.values:
        tensors += [(f"values.{n}", "F32", (kv_heads, length, value_dim), 4)
                    for n in layers]

    # The model's weights without allocating them (meta device).
    with torch.device("meta"):
        shell = AutoModelForCausalLM.from_config(config)
    params_bytes = sum(p.numel() for p in shell.parameters()) * 4
    del shell
    rows = length if args.matrix else window
    metadata = {
        "kvspec_capture": "1",
        "model": os.path.abspath(args.model),
        "layers": ",".join(str(n) for n in layers),
        "layer": str(layers[0]) if len(layers) == 1 else "",
        "num_attention_heads": str(query_heads),
        "num_key_value_heads": str(kv_heads),
        "head_dim": str(head_dim),
        "tokens": str(length),
        "window_rows": str(rows),
        "layout": ("matrix" if args.matrix else
                   "chunks" if chunked else "window"),
        "attention": args.attention,
        "device": str(device),
        "block_rows": str(block_rows),
        "chunk_rows": str(args.chunk_rows),
        "tokenizer": how,
        "token_ids_sha256": hashlib.sha256(
            struct.pack(f"<{length}q", *ids)).hexdigest(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    if args.totals:
        metadata["total_rows"] = str(total_rows)
    if args.keys:
        metadata["keys"] = "1"
    if args.values:
        metadata["values"] = "1"
    if chunked:
        metadata["prefill_chunk"] = str(args.prefill_chunk)
        metadata["chunks"] = str(len(spans))
    if args.attention == "sdpa":
        import kvpress
        metadata["kvpress"] = getattr(kvpress, "__version__", "unknown")
    # The header, as it will be written: its size counts in the memory
    # estimate and the disk check, and safetensors reads none above
    # MAX_HEADER_BYTES.
    header, _, data_bytes = encode_header(tensors, metadata)
    if len(header) > MAX_HEADER_BYTES:
        raise UsageError(
            f"the file's header would be {len(header):,} bytes ({len(tensors):,} "
            f"tensors), over the {MAX_HEADER_BYTES:,} bytes the safetensors "
            f"library reads: capture fewer layers or larger chunks "
            f"(--prefill_chunk {args.prefill_chunk})")
    need = estimate_memory(config, params_bytes, length, layers, window,
                           args.matrix or args.totals, block_rows,
                           args.chunk_rows, args.attention, len(header),
                           args.keys, args.values)
    have = (int(args.memory_limit_gib * GIB) if args.memory_limit_gib
            else mem_available())
    if have is not None and need > have:
        raise UsageError(
            f"this run needs about {size(need)} (weights "
            f"{size(params_bytes)}, activations of {length} tokens, "
            f"blocks of {block_rows} rows"
            f"{f', {len(tensors):,} tensors' if chunked else ''}) and "
            f"{'--memory_limit_gib gives' if args.memory_limit_gib else 'the machine has'} "
            f"{size(have)} available: use fewer tokens "
            f"(--max_tokens), a smaller --block_rows, or capture earlier "
            f"layers only (each layer before the last captured one is run)")
    out_bytes = 8 + len(header) + data_bytes
    free = os.statvfs(output_dir)
    if out_bytes > free.f_bavail * free.f_frsize:
        raise UsageError(
            f"the output would be {size(out_bytes)} and "
            f"'{output_dir}' has {size(free.f_bavail * free.f_frsize)} "
            f"free: capture fewer layers or rows"
            f"{' (--window instead of --matrix)' if args.matrix else ''}"
            f"{' (a smaller --window, larger --prefill_chunk)' if chunked else ''}")

    writer = SafetensorsWriter(args.output, tensors, metadata, inputs)
    try:
        state = Capture(torch, layers, spans, args.attention, block_rows,
                        writer, totals=total_rows,
                        keys=((kv_heads, length, head_dim) if args.keys
                              else None),
                        values=((kv_heads, length, value_dim) if args.values
                                else None))
        AttentionInterface.register(ATTENTION_NAME, state)
        implementation = ATTENTION_NAME
        model = AutoModelForCausalLM.from_pretrained(
            args.model, local_files_only=True,
            attn_implementation=implementation)
        model = model.to(device=device, dtype=torch.float32).eval()
        decoder = model.get_decoder()
        hooks = []
        if args.attention == "sdpa":
            def keep_input(module, hook_args, hook_kwargs):
                hidden = hook_kwargs.get("hidden_states",
                                         hook_args[0] if hook_args else None)
                state.layer_inputs[module.layer_idx] = (
                    hidden, hook_kwargs["position_embeddings"])
            for n in layers:
                hooks.append(decoder.layers[n].self_attn.register_forward_pre_hook(
                    keep_input, with_kwargs=True))
        for n in range(max(layers)):
            mlp = decoder.layers[n].mlp
            hooks.append(chunk_mlp(torch, mlp, args.chunk_rows))
        hooks.append(chunk_rope(torch, model, args.chunk_rows))
        began = time.monotonic()
        with torch.no_grad():
            try:
                decoder(input_ids=torch.tensor([ids], device=device),
                        use_cache=False)
            except StopForward:
                pass
            else:
                raise RuntimeError("the forward pass ended without reaching "
                                   f"layer {max(layers)}'s attention")
        seconds = time.monotonic() - began
        writer.commit()
    except BaseException:
        writer.abort()
        raise

    output = os.path.abspath(args.output)
    scenario = os.path.splitext(output)[0] + ".pb"
    if chunked:
        ends = [stop for _, stop, _, _ in spans]
        shown = ", ".join(str(e) for e in ends) if len(ends) <= 6 else \
            f"{ends[0]}, {ends[1]}, ..., {ends[-1]}"
        print(f"capture_attention: wrote {len(spans)} chunk tensors per layer "
              f"for layers {', '.join(str(n) for n in layers)}: chunk.<n>.<e> "
              f"[{query_heads}, min({window}, chunk), e], e = {shown} (chunks "
              f"of {args.prefill_chunk} tokens) to {output} "
              f"({args.attention}, {seconds:.1f} s)")
    else:
        name = "layer" if args.matrix else "window"
        print(f"capture_attention: wrote "
              f"{', '.join(f'{name}.{n}' for n in layers)} "
              f"[{query_heads}, {rows}, {length}] to {output} "
              f"({args.attention}, {seconds:.1f} s)")
    for n in sorted(state.seconds):
        print(f"  layer {n}: {state.seconds[n]:.1f} s of attention"
              f"{'' if n in layers else ' (run for the next layer, not captured)'}")
    print("next:")
    print(f"  bazel run -c opt //tools:import_attention -- --input={output} "
          f"--layer={layers[-1]} --output={scenario} --kv_heads={kv_heads}")
    if args.matrix:
        budget = max(2, length // 4)
        print(f"  bazel run -c opt //tools:simulate -- --scenario={scenario} "
              f"--policy=h2o --params=budget={budget},recent_window="
              f"{budget // 4}")
    else:
        print(f"  bazel run -c opt //tools:simulate -- --scenario={scenario} "
              f"--policy=snapkv --params=preset=kvpress-0.5.5,"
              f"ratio_ppm=500000")


def chunk_mlp(torch, mlp, chunk_rows):
    """Runs `mlp` over chunk_rows tokens at a time; returns a removable."""
    original = mlp.forward

    def forward(hidden_states):
        length = hidden_states.shape[1]
        if length <= chunk_rows:
            return original(hidden_states)
        parts = [original(hidden_states[:, i:i + chunk_rows])
                 for i in range(0, length, chunk_rows)]
        return torch.cat(parts, dim=1)

    mlp.forward = forward

    class Undo:
        @staticmethod
        def remove():
            mlp.forward = original
    return Undo


def chunk_rope(torch, model, chunk_rows):
    """Runs the model's rotary embedding chunk_rows positions at a time.

    transformers' apply_rotary_pos_emb ((q * cos) + (rotate_half(q) * sin))
    makes four temporaries the size of the queries: 4 GiB at 131,072 tokens
    with 32 heads of 64. It is elementwise, so computing it a block of
    positions at a time gives the same bits with one block's temporaries.
    Patched only where the model's module defines it with Llama's signature
    (q, k, cos, sin, unsqueeze_dim); returns a removable.
    """
    import inspect
    module = sys.modules[type(model).__module__]
    original = getattr(module, "apply_rotary_pos_emb", None)
    if original is None or list(inspect.signature(original).parameters) != [
            "q", "k", "cos", "sin", "unsqueeze_dim"]:
        print("capture_attention: this model's rotary embedding is not "
              "Llama's; it runs unchunked", file=sys.stderr)
        return None

    def apply(q, k, cos, sin, unsqueeze_dim=1):
        length = q.shape[2]
        if unsqueeze_dim != 1 or length <= chunk_rows or cos.dim() != 3:
            return original(q, k, cos, sin, unsqueeze_dim)
        q_out, k_out = torch.empty_like(q), torch.empty_like(k)
        for i in range(0, length, chunk_rows):
            part = slice(i, i + chunk_rows)
            q_out[:, :, part], k_out[:, :, part] = original(
                q[:, :, part], k[:, :, part], cos[:, part], sin[:, part],
                unsqueeze_dim)
        return q_out, k_out

    module.apply_rotary_pos_emb = apply

    class Undo:
        @staticmethod
        def remove():
            module.apply_rotary_pos_emb = original
    return Undo


def main(argv=None):
    args = parse_args(argv)
    try:
        capture(args)
    except UsageError as e:
        print(f"capture_attention: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # pylint: disable=broad-except
        print(f"capture_attention: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
