"""Writes the adapter's test model: a tiny random-weight llama GGUF with no
tokenizer (tokenizer.ggml.model "none": llama.cpp takes the ids as dummy
tokens, src/llama-vocab.cpp), so nothing is downloaded. Adapted from the
research probe (notes/llama.cpp-0c1e570.md, section D).

The vocabulary is large (4,096) so that token ids can name positions: the
adapter feeds position p as token p % 4096 and identifies the token in each
KV cell from its layer-0 value row (V is not roped and depends only on the
token), so the held set is read from llama.cpp's cells, not from the
adapter's own bookkeeping.

usage: python make_tiny.py OUT_DIR   (writes OUT_DIR/tiny-llama-v4096.gguf)
"""
import os
import sys

import gguf
import numpy as np

VOCAB = 4096


def write(path, arch="llama"):
    rng = np.random.default_rng(0)
    V, E, L, H, HKV, D, FF = VOCAB, 32, 2, 2, 1, 16, 64
    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(8192); w.add_embedding_length(E); w.add_block_count(L)
    w.add_feed_forward_length(FF); w.add_head_count(H); w.add_head_count_kv(HKV)
    w.add_rope_dimension_count(D); w.add_layer_norm_rms_eps(1e-5)
    w.add_key_length(D); w.add_value_length(D)
    w.add_uint32(f"{arch}.vocab_size", V)
    w.add_tokenizer_model("none")
    f = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    one = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    w.add_tensor("token_embd.weight", f(V, E)); w.add_tensor("output_norm.weight", one(E))
    w.add_tensor("output.weight", f(V, E))
    for i in range(L):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", one(E))
        w.add_tensor(p + "attn_q.weight", f(H * D, E)); w.add_tensor(p + "attn_k.weight", f(HKV * D, E))
        w.add_tensor(p + "attn_v.weight", f(HKV * D, E)); w.add_tensor(p + "attn_output.weight", f(E, H * D))
        w.add_tensor(p + "ffn_norm.weight", one(E))
        w.add_tensor(p + "ffn_gate.weight", f(FF, E)); w.add_tensor(p + "ffn_up.weight", f(FF, E))
        w.add_tensor(p + "ffn_down.weight", f(E, FF))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, "tiny-llama-v4096.gguf.tmp")
    write(tmp)
    os.replace(tmp, os.path.join(out, "tiny-llama-v4096.gguf"))
