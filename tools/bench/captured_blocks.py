#!/usr/bin/env python3
"""Whole blocks against one position at a time on a model's real attention.

    tools/.venv-torch/bin/python tools/bench/captured_blocks.py \\
        --model ~/models/SmolLM2-135M-Instruct --text prompt.txt \\
        --max_tokens 2048 --layers 0,8,16 --out /tmp/captured-blocks

The bench's blocks section (tools/bench/blocks.cc, RESULTS.md "Blocks")
on a captured prompt instead of the canonical trace. For each layer of
--layers: tools/attention/capture_attention.py --matrix captures the whole
causal matrix of the prompt (every query head); tools/attention/import_attention
makes it a scenario of one decode step per position, each carrying its
full-cache rows (spec/harness.md); tools/simulate --json runs each policy
with its defaults at each block size of --sizes, at the peak --peak, as the
bench does: with block B the budget is the largest multiple of B with
budget + B - 1 <= peak; streamingllm's sinks (4) and the score-based
policies' recent_window (16) are rounded up to multiples of B; the
score-based policies (h2o, tova, snapkv) once with block_score sum and once
with max; openvino (spec/policies/openvino.md) with a start area of 4 and a
recent area of 16 rounded up likewise, its pool of 7, once with NORM_SUM
and once with SUM, at every block size, 1 included. Where that rounding changes an area (sinks or recent_window 32
at blocks of 32), a control row runs one position at a time with the
rounded area, so what the area buys is not read as the block's. Each kept
set is rebuilt from simulate's victims.

Measured per query head (spec/measures.md#retained-attention-mass on rows
of the capture): at each step t from --from on, r(t) = the share of step
t's row (weights on positions 0 .. t-1) on the positions its head's kept
set holds before step t evicts; the mean over the measured steps; then the
mean over heads and the worst head. Sums are numpy's float64 sums, so the
last digits are not pinned. Also the evicting steps per 1,000 measured steps
and the positions an evicting step removes (set 0's), as the bench counts
them.

Writes to --out: blocks.md (the table, then the means again one row per
layer and policy: block 1, each larger block as sum / max, the controls),
blocks.json (every figure, per
head), the capture and scenarios. Needs tools/.venv-torch
(tools/setup.sh --tests) and bazel (builds //tools:import_attention and
//tools:simulate, -c opt) unless both binaries are given.
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CAPTURE = os.path.join(REPO, "tools", "attention", "capture_attention.py")
SCORED = ("h2o", "tova", "snapkv")
POLICIES = ("window", "streamingllm", "h2o", "tova", "snapkv", "openvino")


class BenchError(Exception):
    pass


def run(command, what, cwd=None):
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if result.returncode != 0:
        raise BenchError(f"{what} exited {result.returncode}: "
                         f"{(result.stderr or result.stdout).strip()[-2000:]}")
    return result.stdout


def binaries():
    run(["bazel", "build", "-c", "opt", "//tools:import_attention",
         "//tools:simulate"], "bazel build", cwd=REPO)
    out = run(["bazel", "info", "-c", "opt", "bazel-bin"], "bazel info", cwd=REPO).strip()
    return (os.path.join(out, "tools", "attention", "import_attention"),
            os.path.join(out, "tools", "simulate", "simulate"))


def round_up(value, block):
    return (value + block - 1) // block * block


def configurations(policies, sizes, peak):
    """(policy, block, score, params, note) in the bench's order and
    rounding. Where rounding an area up to a block changes it (sinks 4 or
    recent_window 16 at blocks of 32), a control row follows: one position
    at a time with the rounded area and the budget of block 1, so the
    area's effect is not read as the block's."""
    result = []
    for policy in policies:
        if policy == "openvino":
            # spec/policies/openvino.md: a start area of sinks 4 and a recent
            # area of 16, rounded up to the block, as the others' areas; its
            # pool of 7; no window (the scenario has no prompt); NORM_SUM
            # and SUM in place of block_score's sum and max.
            for block in sizes:
                if block > peak:
                    continue
                budget = (peak - block + 1) // block * block
                params = [f"budget={budget}", f"sinks={round_up(4, block)}",
                          f"recent_window={round_up(16, block)}", f"block={block}",
                          "max_pool=7", "obs_window=0"]
                for score, norm in (("norm_sum", 1), ("sum", 0)):
                    result.append((policy, block, score, params + [f"norm_sum={norm}"], ""))
            continue
        area = ("sinks", 4) if policy == "streamingllm" else (
            ("recent_window", 16) if policy in SCORED else None)
        for block in sizes:
            if block > peak:
                continue
            budget = (peak - block + 1) // block * block
            params = [f"budget={budget}"]
            if area:
                params.append(f"{area[0]}={round_up(area[1], block)}")
            if block > 1:
                params.append(f"block={block}")
            scores = ("sum", "max") if policy in SCORED and block > 1 else ("",)
            for score in scores:
                with_score = params + (
                    [f"block_score={0 if score == 'sum' else 2}"] if score else [])
                result.append((policy, block, score, with_score, ""))
            if area and round_up(area[1], block) != area[1]:
                result.append((policy, 1, "", [
                    f"budget={peak}", f"{area[0]}={round_up(area[1], block)}"],
                    f"control: {area[0]} {round_up(area[1], block)} as at block {block}"))
    return result


def measure(rows, data, first):
    """Per query head, mean r(t) over steps first..L-1; with set 0's
    evicting steps and victims over the same steps, and the peak kept."""
    import numpy as np
    heads, length, _ = rows.shape
    sets = data["kept_sets"]
    if len(data["steps"]) != length or data.get("refusal"):
        raise BenchError(f"{data['policy']} {data['parameters']}: "
                         f"refused or short: {data.get('refusal')}")
    kept = [np.zeros(length, dtype=bool) for _ in sets]
    shares = [[] for _ in range(heads)]
    evictions = victims = peak = 0
    for t, step in enumerate(data["steps"]):
        if step["admitted"] != {"first": t, "count": 1}:
            raise BenchError(f"step {t} admits {step['admitted']}: the "
                             f"scenario should admit one position a step")
        if t >= first:
            for s, kept_set in enumerate(sets):
                for h in kept_set["query_heads"]:
                    row = rows[h, t, :t].astype(np.float64)
                    total = row.sum()
                    shares[h].append(row[kept[s][:t]].sum() / total
                                     if total > 0 else 1.0)
        for s, kept_set in enumerate(sets):
            kept[s][t] = True
            gone = step["sets"][s]["victims"]
            kept[s][gone] = False
            if s == 0 and t >= first and gone:
                evictions += 1
                victims += len(gone)
        peak = max(peak, max(int(k.sum()) for k in kept))
    per_head = [float(np.mean(s)) for s in shares]
    measured = length - first
    return {"per_head": per_head, "mean": float(np.mean(per_head)),
            "worst": float(np.min(per_head)),
            "worst_head": int(np.argmin(per_head)), "peak_kept": peak,
            "evictions_per_1000": 1000.0 * evictions / measured,
            "victims_per_eviction": victims / evictions if evictions else 0.0}


def summary(results, sizes):
    """The same mean retained masses, one row per layer and policy: block 1,
    then each larger block (sum / max for the score-based policies), then
    the controls."""
    blocks = [b for b in sizes if b > 1]
    head = ["layer", "policy", "block 1"] + [f"block {b}" for b in blocks] + ["controls"]
    lines = ["| " + " | ".join(head) + " |",
             "| ---: | --- | " + " | ".join(["---:"] * (1 + len(blocks))) + " | --- |"]
    keys = []
    for r in results:
        if (r["layer"], r["policy"]) not in keys:
            keys.append((r["layer"], r["policy"]))
    for layer, policy in keys:
        mine = [r for r in results if (r["layer"], r["policy"]) == (layer, policy)]
        one = [f"{r['mean']:.4f}" for r in mine if r["block"] == 1 and not r["note"]]
        cells = []
        for b in blocks:
            cells.append(" / ".join(f"{r['mean']:.4f}" for r in mine
                                    if r["block"] == b) or "-")
        controls = "; ".join(f"{r['note'].split(': ')[1]}: {r['mean']:.4f}"
                             for r in mine if r["note"])
        lines.append(f"| {layer} | {policy} | {' / '.join(one) or '-'} | "
                     f"{' | '.join(cells)} | {controls} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--text")
    prompt.add_argument("--token_ids")
    parser.add_argument("--max_tokens", type=int, default=2048)
    parser.add_argument("--layers", default="0")
    parser.add_argument("--peak", type=int, default=512)
    parser.add_argument("--sizes", default="1,16,32")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--from", dest="first", type=int, default=0,
                        help="first measured step (default: the peak, the "
                        "first step a policy may have evicted before)")
    parser.add_argument("--attention", default="eager", choices=("eager", "sdpa"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--import_attention", default=None)
    parser.add_argument("--simulate", default=None)
    args = parser.parse_args()
    try:
        return bench(args)
    except BenchError as error:
        print(f"captured_blocks: {error}", file=sys.stderr)
        return 1


def bench(args):
    from safetensors import safe_open
    policies = args.policies.split(",")
    for policy in policies:
        if policy not in POLICIES:
            raise BenchError(f"--policies: {policy!r} is not one of "
                             f"{', '.join(POLICIES)}")
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        raise BenchError(f"--sizes: {args.sizes!r} is not a list of integers") from None
    if any(s < 1 or s > 65536 for s in sizes):
        raise BenchError(f"--sizes: every block size must be in [1, 65536]: {sizes}")
    if args.peak < 1:
        raise BenchError(f"--peak must be at least 1, got {args.peak}")
    first = args.first or args.peak
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise BenchError(f"--out={args.out} exists and is not a folder")
    os.makedirs(args.out, exist_ok=True)
    if args.import_attention and args.simulate:
        importer, simulate = args.import_attention, args.simulate
    else:
        importer, simulate = binaries()
    capture = os.path.join(args.out, "capture.safetensors")
    prompt = ["--text", args.text] if args.text else ["--token_ids", args.token_ids]
    out = run([sys.executable, CAPTURE, "--model", args.model, *prompt,
               "--layers", args.layers, "--matrix", "--attention", args.attention,
               "--max_tokens", str(args.max_tokens), "--output", capture],
              "capture_attention")
    print(out.splitlines()[0] if out else "captured")
    results = []
    with safe_open(capture, "np") as f:
        meta = f.metadata()
        layers = [int(n) for n in meta["layers"].split(",")]
        kv_heads = int(meta["num_key_value_heads"])
        length = int(meta["tokens"])
        if first >= length:
            raise BenchError(f"the first measured step {first} is not below the "
                             f"prompt's {length} tokens: give a longer prompt, "
                             f"a lower --peak or --from")
        for layer in layers:
            rows = f.get_tensor(f"layer.{layer}")
            scenario = os.path.join(args.out, f"layer{layer}.pb")
            run([importer, f"--input={capture}", f"--layer={layer}",
                 "--layout=matrix", f"--kv_heads={kv_heads}",
                 f"--output={scenario}"], f"import_attention layer {layer}")
            for policy, block, score, params, note in configurations(
                    policies, sizes, args.peak):
                path = os.path.join(args.out, "run.json")
                run([simulate, f"--scenario={scenario}", f"--policy={policy}",
                     f"--params={','.join(params)}", f"--json={path}",
                     "--json_kept=none", "--quiet"], f"simulate {policy} {params}")
                with open(path, encoding="utf-8") as g:
                    data = json.load(g)
                figures = measure(rows, data, first)
                results.append({"layer": layer, "policy": policy, "block": block,
                                "block_score": score, "params": params, "note": note,
                                "kept_sets": len(data["kept_sets"]), **figures})
    header = {"model": os.path.abspath(args.model), "tokens": length,
              "peak": args.peak, "from": first, "attention": args.attention,
              "query_heads": int(rows.shape[0]), "kv_heads": kv_heads}
    with open(os.path.join(args.out, "blocks.json"), "w", encoding="utf-8") as g:
        json.dump({**header, "results": results}, g, indent=1)
    lines = [f"A prompt of {length} tokens, {header['query_heads']} query heads and "
             f"{kv_heads} KV heads ({args.attention} attention); one decode step "
             f"per position, measured from step {first}; peak {args.peak}; each "
             f"policy's defaults otherwise (h2o, tova and snapkv: one kept set "
             f"per KV head).",
             "",
             "| layer | policy | block | block score | budget | peak kept | "
             "mean retained mass | worst head | evicting steps per 1,000 | "
             "positions per eviction | row |",
             "| ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        budget = r["params"][0].split("=")[1]
        lines.append(f"| {r['layer']} | {r['policy']} | {r['block']} | "
                     f"{r['block_score'] or '-'} | {budget} | {r['peak_kept']} | "
                     f"{r['mean']:.4f} | {r['worst']:.4f} (head {r['worst_head']}) | "
                     f"{r['evictions_per_1000']:.1f} | {r['victims_per_eviction']:.1f} | "
                     f"{r['note']} |")
    lines += ["", *summary(results, sizes)]
    with open(os.path.join(args.out, "blocks.md"), "w", encoding="utf-8") as g:
        g.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
