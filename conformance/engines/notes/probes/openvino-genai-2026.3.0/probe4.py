"""Probe 4: random runs of GenAI's own CacheEvictionAlgorithm (probe4.cpp)
against the note's proposed card (probe4_proposed.py), eviction by eviction.

    python3 probe4.py COUNT BINARY     (build.sh: 3000 build/probe4)

Each seed draws a configuration (block 1-4; start, recent and the evictable
area 1-3, 1-3 and 1-4 blocks; SUM or NORM_SUM; max pool 1, 2, 3 or 7; SnapKV
window 0, 1, 3 or 8), scores that are either three levels (ties) or
float32 values on a 2^-20 grid, a prefill in random chunks whose window
queries are spread over the last chunks (sometimes fewer than the window),
evictions after prefill chunks in 30% of the runs (the pipeline does not),
then decode steps of one token each, each registered over the whole cache
and followed by an eviction. A run agrees when every eviction returns the
same blocks, or when both refuse the same registration."""
import os, random, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe4_proposed import Proposed

STATS = {"evict calls": 0, "evicting calls": 0, "blocks evicted": 0}

def hexf(v):
    return float(v).hex()

def one(seed):
    rng = random.Random(seed)
    B = rng.choice([1, 2, 3, 4])
    S = B * rng.randint(1, 3); R = B * rng.randint(1, 3)
    M = S + R + B * rng.randint(1, 4)
    mode = rng.randint(0, 1); pool = rng.choice([1, 2, 3, 7]); W = rng.choice([0, 0, 1, 3, 8])
    evict_in_prefill = rng.random() < 0.3
    levels = rng.choice([[0.0, 0.25, 0.5], None])  # ties, or float32 uniform
    def score():
        if levels: return rng.choice(levels)
        return float.fromhex(hexf(rng.randint(0, 2**20) / 2**20))
    P = rng.randint(1, 3 * M)
    # the prefill in chunks; window queries spread over the last chunks
    chunks = []
    n = 0
    while n < P:
        c = min(P - n, rng.randint(1, P)); n += c; chunks.append(n)
    ks = [0] * len(chunks)
    if W:
        left = W if rng.random() < 0.8 else rng.randint(0, W)
        for i in reversed(range(len(chunks))):
            take = min(left, rng.randint(0, left)) if i else left
            ks[i] = take; left -= take
    lines, calls = [], []
    cache = 0
    for end, k in zip(chunks, ks):
        cache = cache + (end - (chunks[chunks.index(end) - 1] if chunks.index(end) else 0))
        x = [score() for _ in range(cache)]
        calls.append(("R", k, x)); 
        if evict_in_prefill: calls.append(("E",))
    for _ in range(rng.randint(1, 6 * M)):
        calls.append(("D",))
    ov = subprocess.Popen([BINARY, str(B), str(S), str(R), str(M), str(mode), str(pool), str(W)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    model = Proposed(B, S, R, M, mode == 1, pool, W)
    size = 0  # tokens in the cache
    for call in calls:
        if call[0] == "R":
            _, k, x = call
            size = len(x)
        elif call[0] == "D":
            size += 1
            x, k = [score() for _ in range(size)], 0
        if call[0] in ("R", "D"):
            ov.stdin.write(f"R {k} {len(x)} " + " ".join(hexf(v) for v in x) + "\n")
            try:
                model.register(x, k)
            except AssertionError as e:
                ov.stdin.write("E\n"); ov.stdin.flush()
                got = ov.stdout.readline().split()
                ov.stdin.close(); ov.wait()
                if got and got[0] == "X":
                    return "refused-both"
                return f"seed {seed}: proposed refused ({e}), GenAI said {' '.join(got)}"
        if call[0] in ("E", "D"):
            ov.stdin.write("E\n"); ov.stdin.flush()
            got = ov.stdout.readline().split()
            if not got or got[0] != "V":
                return f"seed {seed}: GenAI said {' '.join(got)}"
            theirs = [int(b) for b in got[1:]]
            ours = model.evict()
            if theirs != ours:
                return f"seed {seed}: B{B} S{S} R{R} M{M} mode{mode} pool{pool} W{W}: GenAI {theirs}, proposed {ours}"
            size -= B * len(ours)
            STATS["evict calls"] += 1
            STATS["evicting calls"] += bool(ours)
            STATS["blocks evicted"] += len(ours)
    ov.stdin.close(); ov.wait()
    return None

if __name__ == "__main__":
    count = int(sys.argv[1])
    BINARY = sys.argv[2]
    results = [one(s) for s in range(count)]
    refused = results.count("refused-both")
    bad = [r for r in results if r and r != "refused-both"]
    print(f"both refused: {refused}; {STATS}")
    for b in bad[:10]: print(b)
    print(f"differential: {count - len(bad)} agree, {len(bad)} differ")
