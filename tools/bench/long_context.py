#!/usr/bin/env python3
"""Long prompts end to end: capture, import, simulate, with time and memory.

For a model with Llama-3.2-1B's attention shapes (32 query heads, 8 KV heads,
head_dim 64, hidden 2048, MLP 8192, vocabulary 128,256; random weights, two
layers, built from a config: nothing is downloaded), at each prompt length of
--lengths:

  capture    tools/attention/capture_attention.py, layer 0's observation window (the
             last --window queries' rows), eager attention;
  import     tools/attention/import_attention: one prefill step carrying those rows;
  simulate   tools/simulate --json for snapkv, tova and streamingllm with
             their kvpress-0.5.5 presets at ratio 0.5 (kvpress's setting:
             compression once, at prefill).

Each stage is its own process; the table gives its wall time and its peak
resident memory (the child's ru_maxrss from wait4), against the floor: the
bytes of the rows the policies need (Hq x window x L x 4). Then the deeper
layer: capturing layer 1 needs layer 0's whole attention (quadratic in the
length), timed at --deep_lengths.

The sdpa path at --sdpa_length (default 2048; 0 skips it): layers 0 and 1
captured with --attention eager and with --attention sdpa (the rows kvpress
recomputes under sdpa), each layer imported and run through snapkv; per
layer, the largest difference between the two captures' rows (absolute, and
relative to the eager weight where it is at least 1e-6) and how many of
SnapKV's kept positions differ. Layer 0's inputs are the embeddings under
both; layer 1's are layer 0's outputs, computed by eager or sdpa attention.

A chunked prefill at --chunked_lengths (default 32768) with --prefill_chunk
C (default 8192): capture_attention.py --prefill_chunk (each chunk's last
--window queries over the keys up to its end), import_attention
--layout=chunks (one prefill step per chunk), simulate snapkv with the same
preset (it compresses at each chunk's step).

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
PRESET = "preset=kvpress-0.5.5,ratio_ppm=500000"
POLICIES = (("snapkv", PRESET), ("tova", PRESET), ("streamingllm", PRESET))

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


# Each stage is started by this small launcher, itself started before the
# bench holds anything: a child's ru_maxrss counts the memory of the process
# it was forked from (Linux carries the old image's peak across exec), so a
# stage forked from the bench, which by then holds 131,072-token results,
# would report the bench's size as its own. The launcher stays near 10 MiB.
LAUNCHER = r"""
import json, os, subprocess, sys, threading, time
for line in sys.stdin:
    command = json.loads(line)
    began = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    streams = {}
    def drain(name, stream):
        streams[name] = stream.read()
    threads = [threading.Thread(target=drain, args=item)
               for item in (("out", child.stdout), ("err", child.stderr))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    print(json.dumps({"seconds": time.monotonic() - began,
                      "status": child.returncode,
                      "peak": usage.ru_maxrss * 1024,
                      "out": streams["out"].decode(errors="replace"),
                      "err": streams["err"].decode(errors="replace")}),
          flush=True)
"""
_launcher = None


def start_launcher():
    global _launcher
    _launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)


def run_measured(command, what):
    """Runs `command` and measures it alone: wall time and its own peak RSS
    (the child's ru_maxrss from wait4, in the launcher)."""
    _launcher.stdin.write(json.dumps(command) + "\n")
    _launcher.stdin.flush()
    line = _launcher.stdout.readline()
    if not line:
        sys.exit(f"long_context: the launcher died running {what}")
    result = json.loads(line)
    if result["status"] != 0:
        sys.exit(f"long_context: {what} failed (exit {result['status']}):\n"
                 f"{result['err'][-2000:]}")
    return result["seconds"], result["peak"], result["out"], result["err"]


def run_simulate(simulate, scenario, policy, params, result, what):
    """simulate --json on one scenario: wall time, peak RSS, the JSON."""
    seconds, peak, _, _ = run_measured(
        [simulate, f"--scenario={scenario}", f"--policy={policy}",
         f"--params={params}", f"--json={result}", "--quiet"], what)
    with open(result, encoding="utf-8") as f:
        return seconds, peak, json.load(f)


def gib(count):
    return f"{count / GIB:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="8192,32768,131072")
    parser.add_argument("--deep_lengths", default="2048,4096,8192")
    parser.add_argument("--h2o_lengths", default="8192,32768")
    parser.add_argument("--sdpa_length", type=int, default=2048)
    parser.add_argument("--chunked_lengths", default="32768")
    parser.add_argument("--prefill_chunk", type=int, default=8192)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--work", default="/tmp/kvspec-long-context")
    parser.add_argument("--skip_build", action="store_true",
                        help="use bazel-bin's import_attention and simulate "
                        "as they are")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",") if x]
    deep = [int(x) for x in args.deep_lengths.split(",") if x]
    h2o_lengths = [int(x) for x in args.h2o_lengths.split(",") if x]
    chunked = [int(x) for x in args.chunked_lengths.split(",") if x]
    if args.prefill_chunk < 1:
        sys.exit(f"long_context: --prefill_chunk must be at least 1, got "
                 f"{args.prefill_chunk}")
    if args.sdpa_length < 0:
        sys.exit(f"long_context: --sdpa_length must be 0 (skip) or a "
                 f"length, got {args.sdpa_length}")
    start_launcher()  # before the bench holds anything (see LAUNCHER)
    os.makedirs(args.work, exist_ok=True)
    python = sys.executable
    capture = os.path.join(REPO, "tools", "attention", "capture_attention.py")

    if not args.skip_build:
        subprocess.run(["bazel", "build", "-c", "opt", "//tools:import_attention",
                        "//tools:simulate"], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bazel_bin = subprocess.run(["bazel", "info", "-c", "opt", "bazel-bin"],
                               cwd=REPO, check=True, capture_output=True,
                               text=True).stdout.strip()
    importer = os.path.join(bazel_bin, "tools", "attention", "import_attention")
    simulate = os.path.join(bazel_bin, "tools", "simulate", "simulate")

    model = os.path.join(args.work, "model")
    if not os.path.isfile(os.path.join(model, "config.json")):
        subprocess.run([python, "-c", MODEL_SCRIPT, model], check=True)
    ids_path = os.path.join(args.work, "ids.txt")
    longest = max(lengths + deep + h2o_lengths + chunked + [args.sdpa_length])
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
            seconds, peak, data = run_simulate(
                simulate, scenario, policy, params,
                os.path.join(args.work, f"{policy}-{length}.json"),
                f"simulate {policy} at {length}")
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
        seconds, peak, data = run_simulate(
            simulate, scenario, "h2o", PRESET,
            os.path.join(args.work, f"h2o-{length}.json"),
            f"simulate h2o at {length}")
        print(f"| {length} | simulate h2o | {seconds:.1f} | {gib(peak)} | "
              f"{gib(floor)} | {summarize_kept(data)} |", flush=True)
        os.unlink(scenario)

    if args.sdpa_length:
        print()
        compare_sdpa(args, python, capture, importer, simulate, model,
                     ids_path)

    if chunked:
        print()
        print(f"Chunked prefill, chunks of {args.prefill_chunk} tokens:")
        print()
        print("| tokens | stage | wall s | peak GiB | output |")
        print("| ---: | --- | ---: | ---: | --- |")
    for length in chunked:
        chunks = os.path.join(args.work, f"chunks-{length}.safetensors")
        scenario = os.path.join(args.work, f"chunks-{length}.pb")
        seconds, peak, out, _ = run_measured(
            [python, capture, "--model", model, "--token_ids", ids_path,
             "--max_tokens", str(length), "--layers", "0", "--window",
             str(args.window), "--prefill_chunk", str(args.prefill_chunk),
             "--output", chunks], f"capture --prefill_chunk at {length}")
        print(f"| {length} | capture layer 0 --prefill_chunk "
              f"{args.prefill_chunk} | {seconds:.1f} | {gib(peak)} | "
              f"{os.path.getsize(chunks) / GIB:.3f} GiB file |", flush=True)
        seconds, peak, out, _ = run_measured(
            [importer, f"--input={chunks}", f"--output={scenario}",
             "--kv_heads=8", "--layout=chunks"],
            f"import --layout=chunks at {length}")
        print(f"| {length} | import --layout=chunks | {seconds:.1f} | "
              f"{gib(peak)} | {os.path.getsize(scenario) / GIB:.3f} GiB "
              f"scenario |", flush=True)
        os.unlink(chunks)
        seconds, peak, data = run_simulate(
            simulate, scenario, "snapkv", PRESET,
            os.path.join(args.work, f"chunks-snapkv-{length}.json"),
            f"simulate snapkv on chunks at {length}")
        print(f"| {length} | simulate snapkv ({len(data['steps'])} steps) | "
              f"{seconds:.1f} | {gib(peak)} | {summarize_kept(data)} |",
              flush=True)
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


def compare_sdpa(args, python, capture, importer, simulate, model,
                 ids_path):
    """Eager against sdpa at one length, layers 0 and 1: the rows and
    SnapKV's kept sets."""
    length = args.sdpa_length
    print(f"The sdpa path at {length} tokens, layers 0 and 1 (snapkv, "
          f"kvpress-0.5.5 preset, ratio 0.5):")
    print()
    print("| attention | capture wall s | peak GiB | layer | largest "
          "difference from eager (abs / rel) | snapkv kept positions not in "
          "eager's |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    files, kept = {}, {}
    for attention in ("eager", "sdpa"):
        window = os.path.join(args.work, f"{attention}-{length}.safetensors")
        seconds, peak, out, _ = run_measured(
            [python, capture, "--model", model, "--token_ids", ids_path,
             "--max_tokens", str(length), "--layers", "0,1", "--window",
             str(args.window), "--attention", attention, "--output", window],
            f"capture --attention {attention} at {length}")
        files[attention] = window
        for layer in (0, 1):
            scenario = os.path.join(args.work,
                                    f"{attention}-{length}-{layer}.pb")
            run_measured([importer, f"--input={window}",
                          f"--output={scenario}", f"--layer={layer}",
                          "--kv_heads=8"],
                         f"import {attention} layer {layer} at {length}")
            _, _, data = run_simulate(
                simulate, scenario, "snapkv", PRESET,
                os.path.join(args.work,
                             f"{attention}-snapkv-{length}-{layer}.json"),
                f"simulate snapkv {attention} layer {layer} at {length}")
            os.unlink(scenario)
            kept[attention, layer] = [set(s["kept"])
                                      for s in data["kept_at_end"]]
        if attention == "eager":
            print(f"| eager | {seconds:.1f} | {gib(peak)} | 0, 1 | | |",
                  flush=True)
            continue
        for layer in (0, 1):
            absolute, relative = row_differences(files["eager"], window,
                                                 f"window.{layer}")
            moved = sum(len(s - e) for s, e in zip(kept["sdpa", layer],
                                                    kept["eager", layer]))
            total = sum(len(e) for e in kept["eager", layer])
            print(f"| sdpa | {seconds:.1f} | {gib(peak)} | {layer} | "
                  f"{absolute:.3g} / {relative:.3g} | {moved} of {total} |",
                  flush=True)
    for window in files.values():
        os.unlink(window)


def row_differences(eager_path, sdpa_path, name):
    """The largest |sdpa - eager| over one layer's window rows (tensor
    `name`), and the largest relative to eager where eager >= 1e-6."""
    import numpy  # the torch environment has both
    from safetensors.numpy import load_file
    eager = load_file(eager_path)[name].astype(numpy.float64)
    sdpa = load_file(sdpa_path)[name].astype(numpy.float64)
    if eager.shape != sdpa.shape:
        sys.exit(f"long_context: eager {name} {eager.shape} and sdpa "
                 f"{name} {sdpa.shape} differ in shape")
    diff = numpy.abs(sdpa - eager)
    big = eager >= 1e-6
    relative = float((diff[big] / eager[big]).max()) if big.any() else 0.0
    return float(diff.max()), relative


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
