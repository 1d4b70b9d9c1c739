#!/usr/bin/env python3
"""Saves one layer's attention from a Hugging Face causal LM for kvspec.

Runs the model in the directory --model (as written by save_pretrained; nothing
is downloaded) over the text of --text, on CPU in float32 with eager attention
and output_attentions=True, and writes layer --layer's attention to --output
as a .safetensors file holding one tensor:

    layer.<n>   F32 [heads, L, L]   A[h, q, k]: what query q pays to key k

with __metadata__ giving the model path, the layer, num_attention_heads,
num_key_value_heads, the token count and how the text was tokenized. Then
tools/import_attention turns the file into a kvspec scenario; the command to
run is printed at the end:

    tools/.venv-torch/bin/python tools/capture_attention.py \\
        --model ~/models/my-model --text prompt.txt --layer 12 \\
        --output /tmp/attn.safetensors
    bazel run //tools:import_attention -- --input=/tmp/attn.safetensors \\
        --output=/tmp/attn.pb --kv_heads=8

If the model directory has no tokenizer, each UTF-8 byte of the text is a
token, its id taken modulo the vocabulary size (said on stderr).

Exit status: 0 on success, 2 for a bad argument (a missing model directory or
text, an empty text, a layer out of range), 1 for any other failure.
"""

import argparse
import os
import sys
import tempfile

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


class UsageError(Exception):
    """A bad argument: exit status 2."""


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Save one layer's attention of a Hugging Face causal LM "
        "as layer.<n> F32 [heads, L, L] in a .safetensors file, for "
        "tools/import_attention.")
    parser.add_argument("--model", required=True,
                        help="a local model directory (save_pretrained)")
    parser.add_argument("--text", required=True,
                        help="a UTF-8 text file: the tokens to run")
    parser.add_argument("--layer", required=True, type=int,
                        help="the layer whose attention to save, 0-based")
    parser.add_argument("--output", required=True,
                        help="the .safetensors file to write")
    parser.add_argument("--max_tokens", type=int, default=512,
                        help="keep at most this many tokens of the text "
                        "(default 512)")
    return parser.parse_args(argv)


def read_text(path):
    if not os.path.isfile(path):
        raise UsageError(f"--text: '{path}' is not a file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"--text: '{path}' is not UTF-8: {e}") from None
    if not text:
        raise UsageError(f"--text: '{path}' is empty: there is nothing to run")
    return text


def tokenize(model_dir, text, vocab_size, max_tokens):
    """The token ids of `text` (at most max_tokens) and how they were made."""
    has_tokenizer = any(
        os.path.exists(os.path.join(model_dir, name))
        for name in TOKENIZER_FILES)
    if has_tokenizer:
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(model_dir,
                                                  local_files_only=True)
        ids = tokenizer(text)["input_ids"]
        how = "the model's tokenizer"
    else:
        print(f"capture_attention: {model_dir} has no tokenizer; using the "
              f"UTF-8 bytes of the text as tokens, each byte id modulo the "
              f"vocabulary size {vocab_size}", file=sys.stderr)
        ids = [byte % vocab_size for byte in text.encode("utf-8")]
        how = f"utf-8 bytes modulo {vocab_size}"
    if len(ids) > max_tokens:
        print(f"capture_attention: keeping the first {max_tokens} of "
              f"{len(ids)} tokens", file=sys.stderr)
        ids = ids[:max_tokens]
    return ids, how


def capture(args):
    if not os.path.isdir(args.model):
        raise UsageError(f"--model: '{args.model}' is not a directory")
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        raise UsageError(f"--model: '{args.model}' has no config.json (save "
                         f"the model with save_pretrained)")
    if args.max_tokens < 1:
        raise UsageError("--max_tokens must be at least 1")
    text = read_text(args.text)

    try:
        import torch
        import transformers
        from safetensors.torch import save_file
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as e:
        raise RuntimeError(
            f"{e}: this Python lacks torch, transformers or safetensors; run "
            f"tools/setup.sh and use tools/.venv-torch/bin/python") from None
    transformers.utils.logging.disable_progress_bar()

    config = AutoConfig.from_pretrained(args.model, local_files_only=True)
    layers = config.num_hidden_layers
    if not 0 <= args.layer < layers:
        raise UsageError(f"--layer {args.layer} is out of range: the model "
                         f"has {layers} layers (0..{layers - 1})")
    query_heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or query_heads

    ids, how = tokenize(args.model, text, config.vocab_size, args.max_tokens)
    if not ids:
        raise UsageError(f"--text: '{args.text}' gives no tokens")

    model = AutoModelForCausalLM.from_pretrained(
        args.model, local_files_only=True, attn_implementation="eager")
    model = model.to(device="cpu", dtype=torch.float32).eval()
    with torch.no_grad():
        output = model(input_ids=torch.tensor([ids]), output_attentions=True,
                       use_cache=False)
    attentions = output.attentions
    if attentions is None or attentions[args.layer] is None:
        raise RuntimeError("the model returned no attention weights (does it "
                           "support attn_implementation='eager'?)")
    attention = attentions[args.layer][0].to(torch.float32).contiguous()
    if tuple(attention.shape) != (query_heads, len(ids), len(ids)):
        raise RuntimeError(f"layer {args.layer}'s attention has shape "
                           f"{tuple(attention.shape)}, expected "
                           f"({query_heads}, {len(ids)}, {len(ids)})")

    metadata = {
        "model": os.path.abspath(args.model),
        "layer": str(args.layer),
        "num_attention_heads": str(query_heads),
        "num_key_value_heads": str(kv_heads),
        "tokens": str(len(ids)),
        "tokenizer": how,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    # Written beside the output, then renamed: never a half-written file.
    output_dir = os.path.dirname(os.path.abspath(args.output))
    fd, temp = tempfile.mkstemp(dir=output_dir, suffix=".tmp")
    os.close(fd)
    try:
        save_file({f"layer.{args.layer}": attention}, temp, metadata=metadata)
        os.replace(temp, args.output)
    except BaseException:
        os.unlink(temp)
        raise

    output = os.path.abspath(args.output)
    scenario = os.path.splitext(output)[0] + ".pb"
    print(f"capture_attention: wrote layer.{args.layer} [{query_heads}, "
          f"{len(ids)}, {len(ids)}] to {output}")
    print("next:")
    print(f"  bazel run //tools:import_attention -- --input={output} "
          f"--output={scenario} --kv_heads={kv_heads}")
    budget = max(2, len(ids) // 4)
    print(f"  bazel run //tools:simulate -- --scenario={scenario} "
          f"--policy=h2o --params=budget={budget},recent_window={budget // 4}")


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
