#!/usr/bin/env python3
"""From a model directory and a prompt to a table of policies x ratios.

    tools/.venv-torch/bin/python tools/attention/attention_report.py \\
        --model ~/models/Llama-3.2-1B --text prompt.txt --layers 0,8 \\
        --out /tmp/report

One command over the three tools: tools/attention/capture_attention.py captures each
layer's rows of the prompt's last --window + --decode queries;
tools/attention/import_attention makes, per layer, a prefill of the first L - D
positions (carrying the last --window queries' rows before them) followed by
D = --decode decode steps; tools/simulate --json runs each policy of
--policies with its kvpress-0.5.5 preset (compression once at prefill,
prefill_only 1: nothing evicted while decoding) at each ratio of --ratios.

For each layer, policy, ratio and query head it reports the **retained
attention mass** of the D decode queries: for decode query q, the share of
its row (over positions 0..q-1, from the capture) on the positions its
head's kept set holds when q reads them (the prefill's kept positions, then
every decoded position before q), averaged over the D queries; then the
mean over heads and the worst head (spec/measures.md#prefill defines the
same figure on the canonical trace; here the sums are numpy's float64
sums, not that section's order, so the last digits are not pinned).

Writes to --out: report.md (the table), report.json (every figure, per
head), retained.svg (mean retained mass against the kept fraction, one line
per policy, one panel per layer), and the kept sets (simulate's JSON files).
H2O's observed attention needs every prefill query's row. With --window 0
the capture holds them all (the whole causal matrix: a few thousand tokens
at most); otherwise, when --policies names h2o, the capture also sums them
into column totals (capture_attention.py --totals --totals_decode D: every
prefill query's row computed, a block at a time, and added to the totals of
its P = L - D positions, spec/prefill.md#column-totals) and the import
carries them on the prefill step (import_attention --totals): h2o at any
length, for the whole prefill's attention arithmetic (eager only; the other
policies ignore the totals).

Needs tools/.venv-torch (tools/setup.sh --tests) and bazel (builds
//tools:import_attention and //tools:simulate, -c opt).
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CAPTURE = os.path.join(REPO, "tools", "attention", "capture_attention.py")
COLORS = {"snapkv": "#1f77b4", "tova": "#d62728", "streamingllm": "#2ca02c",
          "h2o": "#9467bd"}


class ReportError(Exception):
    pass


def write_whole(path, text):
    """Writes `text` to `path` whole or not at all, as tools/files/files.h
    does: only over a regular file or a new path (a symlink, FIFO, device
    or directory there is refused, never replaced), through a temporary
    file beside it, synced, then renamed over it."""
    import stat
    import tempfile
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise ReportError(f"{path} exists and is not a regular file: "
                              f"refusing to replace it")
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path) or "."
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=os.path.basename(path) + ".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise ReportError(f"cannot write {path}: {error.strerror}") from None


def run(command, what, cwd=None):
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        raise ReportError(f"{what} exited {done.returncode}:\n"
                          f"{(done.stderr or done.stdout).strip()[-1500:]}")
    return done.stdout


def binaries():
    run(["bazel", "build", "-c", "opt", "//tools:import_attention",
         "//tools:simulate"], "bazel build", cwd=REPO)
    out = subprocess.run(["bazel", "info", "-c", "opt", "bazel-bin"], cwd=REPO,
                         check=True, capture_output=True, text=True).stdout
    out = out.strip()
    return (os.path.join(out, "tools", "attention", "import_attention"),
            os.path.join(out, "tools", "simulate", "simulate"))


def retained(rows, first_decode, kept_sets, heads_of_set):
    """Per query head, the mean over decode queries of the share of the row
    on the kept positions. rows: float32 [Hq, R, L] for queries L-R..L-1."""
    import numpy as np
    hq, count, length = rows.shape
    result = [None] * hq
    for s, kept in enumerate(kept_sets):
        prefill_kept = np.array([p for p in kept if p < first_decode],
                                dtype=np.int64)
        for h in heads_of_set[s]:
            shares = []
            for q in range(first_decode, length):
                row = rows[h, q - (length - count), :q].astype(np.float64)
                total = row.sum()
                held = row[prefill_kept].sum() + row[first_decode:q].sum()
                shares.append(held / total if total > 0 else 1.0)
            result[h] = float(np.mean(shares))
    return result


def svg(results, layers, policies, path):
    """Mean retained mass (y) against the kept fraction (x): a panel per
    layer, a line per policy."""
    width, height, pad = 320, 240, 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * len(layers)}" '
             f'height="{height + 30}" font-family="sans-serif" font-size="11">']
    for i, layer in enumerate(layers):
        x0 = i * width
        parts.append(f'<text x="{x0 + width / 2}" y="14" text-anchor="middle">layer {layer}</text>')
        parts.append(f'<rect x="{x0 + pad}" y="{pad - 10}" width="{width - 2 * pad}" '
                     f'height="{height - 2 * pad + 10}" fill="none" stroke="#999"/>')
        for tick in (0.0, 0.5, 1.0):
            y = pad - 10 + (1 - tick) * (height - 2 * pad + 10)
            parts.append(f'<text x="{x0 + pad - 4}" y="{y + 4}" text-anchor="end">{tick:.1f}</text>')
            x = x0 + pad + tick * (width - 2 * pad)
            parts.append(f'<text x="{x}" y="{height - pad + 14}" text-anchor="middle">{tick:.1f}</text>')
        parts.append(f'<text x="{x0 + width / 2}" y="{height - pad + 28}" '
                     f'text-anchor="middle">kept fraction of the prompt</text>')
        for j, policy in enumerate(policies):
            points = sorted((1 - r["ratio"], r["mean"]) for r in results
                            if r["layer"] == layer and r["policy"] == policy)
            if not points:
                continue
            coords = " ".join(
                f"{x0 + pad + x * (width - 2 * pad):.1f},"
                f"{pad - 10 + (1 - y) * (height - 2 * pad + 10):.1f}"
                for x, y in points)
            color = COLORS.get(policy, "#333")
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
            parts.append(f'<text x="{x0 + pad + 6}" y="{pad + 6 + 13 * j}" fill="{color}">{policy}</text>')
    parts.append("</svg>")
    write_whole(path, "\n".join(parts) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--text")
    prompt.add_argument("--token_ids")
    parser.add_argument("--layers", default="0")
    parser.add_argument("--window", type=int, default=64,
                        help="query rows the prefill step carries (0: every "
                        "prompt position's, which H2O needs)")
    parser.add_argument("--decode", type=int, default=64,
                        help="the prompt's last positions decoded after the "
                        "prefill, whose rows measure the retained mass")
    parser.add_argument("--ratios", default="0.25,0.5,0.75,0.9")
    parser.add_argument("--policies", default="snapkv,tova,streamingllm")
    parser.add_argument("--attention", default="eager", choices=("eager", "sdpa"))
    parser.add_argument("--max_tokens", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--import_attention", default=None,
                        help="the import_attention binary (default: bazel "
                        "build -c opt)")
    parser.add_argument("--simulate", default=None,
                        help="the simulate binary (default: bazel build -c opt)")
    args = parser.parse_args()
    try:
        return report(args)
    except ReportError as error:
        print(f"attention_report: {error}", file=sys.stderr)
        return 1


def report(args):
    import numpy as np
    from safetensors import safe_open
    if args.decode < 1:
        raise ReportError("--decode must be at least 1: the decode queries "
                          "measure the retained mass")
    ratios = [float(r) for r in args.ratios.split(",")]
    for r in ratios:
        if not 0 < r < 1 or round(r * 1e6) != r * 1e6:
            raise ReportError(f"--ratios: {r} is not a ratio in (0, 1) with "
                              f"at most six decimals")
    policies = args.policies.split(",")
    # h2o beside a window: column totals of the prefill's queries.
    totals = "h2o" in policies and args.window != 0
    if totals and args.attention == "sdpa":
        raise ReportError("h2o reads column totals, which capture_attention "
                          "sums from eager attention weights: give "
                          "--attention eager (or leave h2o out of "
                          "--policies)")
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise ReportError(f"--out={args.out} exists and is not a folder")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        raise ReportError(f"--out={args.out}: cannot create it: "
                          f"{error.strerror}") from None
    if args.import_attention and args.simulate:
        importer, simulate = args.import_attention, args.simulate
    else:
        importer, simulate = binaries()
    capture = os.path.join(args.out, "capture.safetensors")
    prompt = ["--text", args.text] if args.text else ["--token_ids", args.token_ids]
    # --window 0: every position's row (the capture clamps to the prompt).
    rows_wanted = 2 ** 31 - 1 if args.window == 0 else args.window + args.decode
    window_arg = ["--window", str(rows_wanted)]
    totals_args = (["--totals", "--totals_decode", str(args.decode)]
                   if totals else [])
    out = run([sys.executable, CAPTURE, "--model", args.model, *prompt,
               "--layers", args.layers, *window_arg, *totals_args,
               "--attention", args.attention,
               "--max_tokens", str(args.max_tokens), "--output", capture],
              "capture_attention")
    print(out.splitlines()[0])
    results = []
    with safe_open(capture, "np") as f:
        meta = f.metadata()
        layers = [int(n) for n in meta["layers"].split(",")]
        kv_heads = int(meta["num_key_value_heads"])
        length = int(meta["tokens"])
        if args.decode >= length:
            raise ReportError(f"--decode {args.decode} leaves no prompt to "
                              f"prefill ({length} tokens)")
        first_decode = length - args.decode
        for layer in layers:
            rows = f.get_tensor(f"window.{layer}")
            window_rows = rows.shape[1] - args.decode
            scenario = os.path.join(args.out, f"layer{layer}.pb")
            run([importer, f"--input={capture}", f"--layer={layer}",
                 f"--kv_heads={kv_heads}", f"--window_rows={window_rows}",
                 f"--decode={args.decode}", *(["--totals"] if totals else []),
                 f"--output={scenario}"],
                f"import_attention layer {layer}")
            for policy in policies:
                for ratio in ratios:
                    ppm = round(ratio * 1e6)
                    path = os.path.join(args.out, f"layer{layer}-{policy}-{ppm}.json")
                    run([simulate, f"--scenario={scenario}", f"--policy={policy}",
                         f"--params=preset=kvpress-0.5.5,ratio_ppm={ppm}",
                         f"--json={path}", "--quiet"], f"simulate {policy}")
                    with open(path, encoding="utf-8") as g:
                        data = json.load(g)
                    if data.get("refusal"):
                        raise ReportError(f"simulate {policy} refused: {data['refusal']}")
                    for step in data["steps"][1:]:
                        if any(s["victims"] for s in step["sets"]):
                            raise ReportError(f"{policy} evicted during decoding: "
                                              f"the preset should not")
                    kept = [s["kept"] for s in data["kept_at_end"]]
                    heads = [s["query_heads"] for s in data["kept_sets"]]
                    per_head = retained(rows, first_decode, kept, heads)
                    prefill_kept = [len([p for p in k if p < first_decode]) for k in kept]
                    results.append({
                        "layer": layer, "policy": policy, "ratio": ratio,
                        "kept_after_prefill": prefill_kept,
                        "per_head": per_head,
                        "mean": float(np.mean(per_head)),
                        "worst": float(np.min(per_head)),
                        "worst_head": int(np.argmin(per_head)),
                    })
    write_whole(os.path.join(args.out, "report.json"), json.dumps(
        {"model": os.path.abspath(args.model), "tokens": length,
         "prefill": first_decode, "decode": args.decode,
         "window": (first_decode if args.window == 0 else args.window),
         "attention": args.attention, "totals": totals,
         "results": results}, indent=1))
    lines = [f"Prompt of {length} tokens: a prefill of {first_decode} with "
             f"{'every query' if args.window == 0 else f'the last {args.window} queries'}' rows"
             f"{f' (h2o: the column totals of all {first_decode} queries)' if totals else ''}, "
             f"then {args.decode} decode queries measuring the retained mass "
             f"({args.attention} attention, kvpress-0.5.5 presets).",
             "",
             "| layer | policy | ratio | kept after prefill (per set) | mean retained mass | worst head |",
             "| ---: | --- | ---: | --- | ---: | ---: |"]
    for r in results:
        kept = sorted(set(r["kept_after_prefill"]))
        lines.append(f"| {r['layer']} | {r['policy']} | {r['ratio']} | "
                     f"{'/'.join(map(str, kept))} of {first_decode} | "
                     f"{r['mean']:.4f} | {r['worst']:.4f} (head {r['worst_head']}) |")
    text = "\n".join(lines) + "\n"
    write_whole(os.path.join(args.out, "report.md"), text)
    svg(results, layers, policies, os.path.join(args.out, "retained.svg"))
    print(text)
    print(f"wrote {args.out}/report.md, report.json, retained.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
