"""Probe 5: what NORM_SUM buys on a real model's attention, by GenAI's own code.

    tools/.venv-torch/bin/python probe5.py [--no-self] CAPTURE BINARY LAYER...

CAPTURE: a .safetensors of whole causal matrices `layer.<n>` [Hq, L, L]
(tools/bench/captured_blocks.py writes one as capture.safetensors; the
figures in the note used SmolLM2-135M-Instruct, tools/attention/smollm2.py,
over the first 2,048 tokens of spec/harness.md). BINARY: probe4's driver
(build/probe4), GenAI 2026.3.0.0's CacheEvictionAlgorithm for one layer.
--no-self registers each decode token's weight on itself as 0.0, as
kvspec's `openvino` card does (a kvspec row has no such weight), so that
what the self weight changes can be read against the default run.

Each configuration is driven as GenAI's pipeline drives it (the note's
sections 2.1 and 9, item 3 of the proposed card): a prefill of the first
512 tokens registered once, as the sum over query heads and over all 512
queries of their causal rows; then one decode step per later token t:
admit t, register the sum over query heads of row t over the kept
positions (t's weight on itself included), then evict. Retained mass as
captured_blocks.py measures it: at each decode step, per query head, the
share of row t (positions 0..t-1) on the positions kept before t is
admitted; the mean over steps, then over heads. Prints one line per layer
and configuration.
"""
import subprocess
import sys

import numpy as np
from safetensors import safe_open

PREFILL = 512


def run(rows, binary, block, start, recent, max_size, mode, pool, self_weight=True):
    heads, length, _ = rows.shape
    summed = rows.astype(np.float64).sum(axis=0)  # [L, L], heads summed
    ov = subprocess.Popen([binary, str(block), str(start), str(recent), str(max_size),
                           str(mode), str(pool), "0"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    kept = list(range(PREFILL))
    first = summed[:PREFILL, :PREFILL].sum(axis=0).astype(np.float32)
    ov.stdin.write(f"R 0 {PREFILL} " + " ".join(float(v).hex() for v in first) + "\n")
    shares = []
    evictions = 0
    for t in range(PREFILL, length):
        held = np.array(kept)
        row = rows[:, t, :t].astype(np.float64)
        shares.append(row[:, held].sum(axis=1) / row.sum(axis=1))
        kept.append(t)
        x = summed[t, kept].astype(np.float32)
        if not self_weight:
            x[-1] = 0.0  # t's weight on itself, as the card takes it
        ov.stdin.write(f"R 0 {len(kept)} " + " ".join(float(v).hex() for v in x) + "\nE\n")
        ov.stdin.flush()
        got = ov.stdout.readline().split()
        if not got or got[0] != "V":
            raise SystemExit(f"GenAI said {' '.join(got)}")
        gone = set()
        for b in map(int, got[1:]):
            gone.update(kept[b * block:(b + 1) * block])
        if gone:
            evictions += 1
            kept = [p for p in kept if p not in gone]
    ov.stdin.close()
    ov.wait()
    per_head = np.mean(np.array(shares), axis=0)
    return float(per_head.mean()), float(per_head.min()), evictions, len(kept)


def main():
    args = sys.argv[1:]
    self_weight = "--no-self" not in args
    args = [a for a in args if a != "--no-self"]
    capture, binary, layers = args[0], args[1], [int(n) for n in args[2:]]
    with safe_open(capture, "np") as f:
        for layer in layers:
            rows = f.get_tensor(f"layer.{layer}")
            for block in (1, 16, 32):
                for mode, name in ((0, "SUM"), (1, "NORM_SUM")):
                    for pool in (1, 7):
                        # OpenVINO's documented areas (start 32, recent 128)
                        # rounded to the block; max_cache_size 512 + 32 + 128.
                        start = max(block, 32 // block * block)
                        recent = max(block, 128 // block * block)
                        size = start + recent + 512
                        mean, worst, evictions, kept = run(rows, binary, block, start, recent,
                                                           size, mode, pool, self_weight)
                        print(f"layer {layer} block {block} {name} pool {pool}: start {start} "
                              f"recent {recent} max {size}: mean {mean:.4f} worst head "
                              f"{worst:.4f}, {evictions} evicting steps, {kept} kept at the end",
                              flush=True)


if __name__ == "__main__":
    main()
