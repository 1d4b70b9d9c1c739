#!/usr/bin/env python3
"""Long prompts end to end: capture, import, simulate, with time and memory.

For a model with Llama-3.2-1B's attention shapes (32 query heads, 8 KV heads,
head_dim 64, hidden 2048, MLP 8192, vocabulary 128,256; random weights, two
layers, built from a config: nothing is downloaded), at each prompt length of
--lengths:

  capture    tools/capture_attention.py, layer 0's observation window (the
             last --window queries' rows), eager attention;
  import     tools/import_attention: one prefill step carrying those rows;
  simulate   tools/simulate --json for snapkv, tova and streamingllm with
             their kvpress-0.5.5 presets at ratio 0.5 (kvpress's setting:
             compression once, at prefill).

Each stage is its own process; the table gives its wall time and its peak
resident memory (the child's ru_maxrss from wait4), against the floor: the
bytes of the rows the policies need (Hq x window x L x 4). Then the deeper
layer: capturing layer 1 needs layer 0's whole attention (quadratic in the
length), timed at --deep_lengths; and the sdpa path at the first length: the
rows kvpress recomputes under sdpa against eager's, and how many kept
positions SnapKV's choice changes.

H2O at --h2o_lengths: capture_attention.py --totals (every row of layer 0
computed, the window's kept, each key's column total over all L queries
summed as spec/prefill.md#column-totals pins), import_attention --totals
(one row per head beside the totals), simulate h2o with its kvpress-0.5.5
preset at ratio 0.5; the floor is the totals (Hq x L x 8 bytes).

    tools/.venv-torch/bin/python tools/bench/long_context.py \\
        --lengths 8192,32768,131072 --deep_lengths 2048,4096,8192

Needs the torch environment (tools/setup.sh --tests makes tools/.venv-torch)
and builds //tools:import_attention and //tools:simulate with bazel -c opt.
Work files go to --work (default /tmp/kvspec-long-context); the largest is
the 131,072-token scenario, about 1.1 GB. Prints a Markdown table; figures
are in tools/bench/RESULTS.md with the date they were run.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
GIB = 1024 ** 3
POLICIES = (
    ("snapkv", "preset=kvpress-0.5.5,ratio_ppm=500000"),
    ("tova", "preset=kvpress-0.5.5,ratio_ppm=500000"),
    ("streamingllm", "preset=kvpress-0.5.5,ratio_ppm=500000"),
)

MODEL_SCRIPT = """
import sys, torch, transformers
from transformers import LlamaConfig, LlamaForCausalLM
transformers.utils.logging.disable_progress_bar()
torch.manual_seed(1)
# meta-llama/Llama-3.2-1B's config.json shapes, two layers, random weights.
config = LlamaConfig(vocab_size=128256, hidden_size=2048,
    intermediate_size=8192, num_hidden_layers=2, num_attention_heads=32,
    num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
    rope_theta=500000.0, tie_word_embeddings=True,
    rope_scaling={"factor": 32.0, "high_freq_factor": 4.0,
                  "low_freq_factor": 1.0,
                  "original_max_position_embeddings": 8192,
                  "rope_type": "llama3"})
LlamaForCausalLM(config).save_pretrained(sys.argv[1])
"""


def run_measured(command, what):
    """Runs `command` and measures it alone: wall time and its own peak RSS."""
    began = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    # Read the pipes fully, then reap with wait4 for the child's own rusage.
    out = child.stdout.read()
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - began
    if child.returncode != 0:
        sys.exit(f"long_context: {what} failed (exit {child.returncode}):\n"
                 f"{err.decode(errors='replace')[-2000:]}")
    return seconds, usage.ru_maxrss * 1024, out.decode(), err.decode()


def gib(count):
    return f"{count / GIB:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="8192,32768,131072")
    parser.add_argument("--deep_lengths", default="2048,4096,8192")
    parser.add_argument("--h2o_lengths", default="8192,32768")
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--work", default="/tmp/kvspec-long-context")
    parser.add_argument("--skip_build", action="store_true",
                        help="use bazel-bin's import_attention and simulate "
                        "as they are")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",") if x]
    deep = [int(x) for x in args.deep_lengths.split(",") if x]
    h2o_lengths = [int(x) for x in args.h2o_lengths.split(",") if x]
    os.makedirs(args.work, exist_ok=True)
    python = sys.executable
    capture = os.path.join(REPO, "tools", "capture_attention.py")

    if not args.skip_build:
        subprocess.run(["bazel", "build", "-c", "opt", "//tools:import_attention",
                        "//tools:simulate"], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bazel_bin = subprocess.run(["bazel", "info", "-c", "opt", "bazel-bin"],
                               cwd=REPO, check=True, capture_output=True,
                               text=True).stdout.strip()
    importer = os.path.join(bazel_bin, "tools", "import_attention")
    simulate = os.path.join(bazel_bin, "tools", "simulate")

    model = os.path.join(args.work, "model")
    if not os.path.isfile(os.path.join(model, "config.json")):
        subprocess.run([python, "-c", MODEL_SCRIPT, model], check=True)
    ids_path = os.path.join(args.work, "ids.txt")
    longest = max(lengths + deep + h2o_lengths)
    rng = random.Random(7)
    with open(ids_path, "w", encoding="ascii") as f:
        f.write(" ".join(str(rng.randrange(128256)) for _ in range(longest)))

    print(f"# long_context: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"window {args.window}, {os.cpu_count()} CPUs")
    print()
    print("| tokens | stage | wall s | peak GiB | floor GiB | output |")
    print("| ---: | --- | ---: | ---: | ---: | --- |")
    for length in lengths:
        floor = 32 * min(args.window, length) * length * 4
        window = os.path.join(args.work, f"window-{length}.safetensors")
        scenario = os.path.join(args.work, f"prompt-{length}.pb")
        seconds, peak, out, _ = run_measured(
            [python, capture, "--model", model, "--token_ids", ids_path,
             "--max_tokens", str(length), "--layers", "0", "--window",
             str(args.window), "--output", window], f"capture at {length}")
        print(f"| {length} | capture layer 0 | {seconds:.1f} | {gib(peak)} | "
              f"{gib(floor)} | {os.path.getsize(window) / GIB:.2f} GiB file |",
              flush=True)
        seconds, peak, out, _ = run_measured(
            [importer, f"--input={window}", f"--output={scenario}",
             "--kv_heads=8"], f"import at {length}")
        print(f"| {length} | import | {seconds:.1f} | {gib(peak)} | "
              f"{gib(floor)} | {os.path.getsize(scenario) / GIB:.2f} GiB "
              f"scenario |", flush=True)
        os.unlink(window)
        for policy, params in POLICIES:
            result = os.path.join(args.work, f"{policy}-{length}.json")
            seconds, peak, out, err = run_measured(
                [simulate, f"--scenario={scenario}", f"--policy={policy}",
                 f"--params={params}", f"--json={result}", "--quiet"],
                f"simulate {policy} at {length}")
            with open(result, encoding="utf-8") as f:
                data = json.load(f)
            kept = summarize_kept(data)
            print(f"| {length} | simulate {policy} | {seconds:.1f} | "
                  f"{gib(peak)} | {gib(floor)} | {kept} |", flush=True)
        os.unlink(scenario)

    for length in h2o_lengths:
        floor = 32 * length * 8  # the totals
        window = os.path.join(args.work, f"totals-{length}.safetensors")
        scenario = os.path.join(args.work, f"totals-{length}.pb")
        seconds, peak, out, _ = run_measured(
            [python, capture, "--model", model, "--token_ids", ids_path,
             "--max_tokens", str(length), "--layers", "0", "--window",
             str(args.window), "--totals", "--output", window],
            f"capture --totals at {length}")
        print(f"| {length} | capture layer 0 --totals | {seconds:.1f} | "
              f"{gib(peak)} | {gib(floor)} | "
              f"{os.path.getsize(window) / GIB:.2f} GiB file |", flush=True)
        seconds, peak, out, _ = run_measured(
            [importer, f"--input={window}", f"--output={scenario}",
             "--kv_heads=8", "--totals", "--window_rows=1"],
            f"import --totals at {length}")
        print(f"| {length} | import --totals | {seconds:.1f} | {gib(peak)} | "
              f"{gib(floor)} | {os.path.getsize(scenario) / GIB:.3f} GiB "
              f"scenario |", flush=True)
        os.unlink(window)
        result = os.path.join(args.work, f"h2o-{length}.json")
        seconds, peak, out, err = run_measured(
            [simulate, f"--scenario={scenario}", "--policy=h2o",
             "--params=preset=kvpress-0.5.5,ratio_ppm=500000",
             f"--json={result}", "--quiet"], f"simulate h2o at {length}")
        with open(result, encoding="utf-8") as f:
            data = json.load(f)
        print(f"| {length} | simulate h2o | {seconds:.1f} | {gib(peak)} | "
              f"{gib(floor)} | {summarize_kept(data)} |", flush=True)
        os.unlink(scenario)

    print()
    print("| tokens | capture layer 1 (layer 0's whole attention first) | wall s | peak GiB | layer 0 s | layer 1 s |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    previous = None
    for length in deep:
        window = os.path.join(args.work, f"deep-{length}.safetensors")
        seconds, peak, out, _ = run_measured(
            [python, capture, "--model", model, "--token_ids", ids_path,
             "--max_tokens", str(length), "--layers", "1", "--window",
             str(args.window), "--output", window], f"layer 1 at {length}")
        layer_seconds = {int(line.split()[1].rstrip(":")): float(line.split()[2])
                         for line in out.splitlines()
                         if line.startswith("  layer ")}
        growth = f" ({seconds / previous:.1f}x)" if previous else ""
        previous = seconds
        print(f"| {length} | eager{growth} | {seconds:.1f} | {gib(peak)} | "
              f"{layer_seconds.get(0, float('nan')):.1f} | "
              f"{layer_seconds.get(1, float('nan')):.1f} |", flush=True)
        os.unlink(window)


def summarize_kept(data):
    """'kept 4096 of 8192 per set, 8 sets' from simulate's JSON."""
    try:
        sets = data["kept_at_end"]
        counts = sorted({len(s["kept"]) for s in sets})
        admitted = sum(step["admitted"]["count"] for step in data["steps"])
        return (f"kept {'/'.join(str(c) for c in counts)} of {admitted} in "
                f"each of {len(sets)} sets")
    except (KeyError, IndexError, TypeError) as e:
        return f"(JSON not as expected: {e})"


if __name__ == "__main__":
    main()
