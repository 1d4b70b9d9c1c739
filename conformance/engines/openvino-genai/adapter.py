"""kvspec engine adapter for OpenVINO GenAI 2026.3.0.0's cache eviction: a
conformance port (spec/protocol.md) that answers each `h2o` case by driving
GenAI's own `CacheEvictionAlgorithm` (compiled into ov_evict by setup.sh
from a GenAI checkout of that release, against the openvino 2026.3.0
wheel) the way GenAI's pipeline does each step: register the step's
per-token scores, then evict (pipeline_impl.cpp, _maybe_evict_cache_blocks;
notes/openvino-genai-2026.3.0.md, section 9).

Nothing here decides what is evicted: kvspec's parameter ranges are read
only to decide which cases to skip, the rows are only gathered at the
positions the engine still keeps, and every victim is a block index the
engine returned, turned into the positions its slots hold.

How a case maps (README.md has the reasons):
  - `h2o` with `block` B, `budget` M, `recent_window` R, `block_score` 0
    -> CacheEvictionConfig(start_size B, recent_size R, max_cache_size M,
    SUM, no rotation, snapkv_window_size 0), block size B, one layer,
    max_pool_window_size 1 (the algorithm's own tests use 1; the pipeline
    uses 7: a difference of rule, listed in README.md). GenAI has a start
    area of one block at least, kvspec's h2o none: cases where kvspec evicts
    the first block differ by that rule (openvino-genai.expectations).
  - each step's scores: the row at the positions kept before the step,
    then 0.0 for each admitted position (GenAI records after admission; a
    scenario gives no weight of a token on itself); several query heads
    (one kept set, `granularity` 0, `aggregation` 2 `sum`) summed in float32
    in head order, as GenAI's kernel sums them.
  - a first step admitting several positions is a prompt: GenAI's pipeline
    registers it and evicts nothing; every later step admits one (a decode
    step) and evicts.
  - `openvino` (spec/policies/openvino.md, the card written from this
    code) -> CacheEvictionConfig(start_size `sinks`, recent_size
    `recent_window`, max_cache_size `budget`, NORM_SUM or SUM by
    `norm_sum`, no rotation, snapkv_window_size `obs_window`), block size
    `block`, one layer, max_pool_window_size `max_pool`. Each step as the
    card maps it: a prefill step registers its query rows (or column
    totals) summed over rows and heads, with its rows per head (or
    total_rows) as the SnapKV count, and evicts nothing; a decode step
    registers its row, heads summed, 0.0 for the admitted positions and a
    SnapKV count of 1 (0 with obs_window 0, as the pipeline passes), then
    evicts; a step with null attention does neither (GenAI's pipeline
    always has scores: the card's rule for an input GenAI never sees).
    Sums are formed in binary64 and rounded once to float32, the type
    GenAI's register takes (its kernel sums in float32: a rounding
    difference where a sum is not exact).
The cut is not reported: GenAI ranks nothing it returns (run the runner
with --nocut, as check.sh does).
"""

import os
import struct
import subprocess
import sys

sys.dont_write_bytecode = True
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "common"))
# The Python port's trace generator (spec/trace.md) makes a trace scenario's
# rows: the scenario's input, not an answer.
sys.path.insert(0, os.path.join(_HERE, "..", "..", "ports", "python"))
from engine_port import NO_VALIDATION, U32, Port, Skip, kpb, read_card  # noqa: E402
import numpy as np  # noqa: E402
from kvspec_port import trace as trace_mod  # noqa: E402
from kvspec_port.errors import Refusal  # noqa: E402

SPEC_VERSION = "0.14.0"
NAME = "openvino-genai-adapter"
ENGINE_VERSION = "2026.3.0.0"
POLICIES = ["h2o", "openvino"]
FEATURES = ["decode", "trace", "heads", "trace-heads", "prefill", "totals", "blocks"]
OV_EVICT = os.path.join(_HERE, "build", "ov_evict")

# spec/policies/h2o.md's card with triggers.md and blocks.md: name,
# default, min, max. Used only to refuse to answer.
CARD = [("budget", 512, 1, U32), ("recent_window", 16, 0, U32 - 1),
        ("granularity", 1, 0, 2), ("aggregation", 0, 0, 2), ("adaptive", 0, 0, 1),
        ("safeguard_permille", 200, 0, 1000), ("prefill_only", 0, 0, 1),
        ("ratio_ppm", 0, 0, 999999), ("normalize", 0, 0, 1),
        ("slack", 0, 0, U32), ("interval", 0, 0, U32),
        ("block", 1, 1, 65536), ("block_score", 0, 0, 2)]


# spec/policies/openvino.md's card.
OV_CARD = [("budget", 672, 1, U32), ("sinks", 32, 0, U32 - 1),
           ("recent_window", 128, 0, U32 - 1), ("block", 32, 1, 65536),
           ("norm_sum", 1, 0, 1), ("max_pool", 7, 1, 65536), ("obs_window", 8, 0, U32)]


def configure_openvino(policy):
    """An `openvino` case's parameters -> ov_evict's arguments, or Skip."""
    v = read_card(OV_CARD, policy.parameters)
    B, S, R, M = v["block"], v["sinks"], v["recent_window"], v["budget"]
    if S + R >= M or M % B or S % B or R % B:
        raise Skip(NO_VALIDATION)  # a rule of the card: kvspec refuses
    if S == 0 or R == 0:
        raise Skip("GenAI's start and recent areas are one block at least "
                   "(CacheEvictionConfig asserts start_size and recent_size non-zero)")
    return [B, S, R, M, v["norm_sum"], v["max_pool"], v["obs_window"]]


def configure(policy, heads):
    """The case's parameters -> (B, M, R), or Skip."""
    v = read_card(CARD, policy.parameters)
    B, M, R = v["block"], v["budget"], v["recent_window"]
    if R >= M or M % B or R % B:
        raise Skip(NO_VALIDATION)  # a rule of the card or of blocks.md fails
    if v["slack"] or v["interval"]:
        raise Skip("GenAI evicts at every decode step once a block past max_cache_size "
                   "is full; it has no slack or interval (cache_eviction.cpp, "
                   "evict_logical_blocks)")
    if v["block_score"] != 0:
        raise Skip("GenAI scores a block by the sum of its tokens' scores only "
                   "(get_scores_for_all_evictable_blocks); block_score "
                   f"{v['block_score']} is not sum")
    if v["adaptive"] or v["ratio_ppm"] or v["prefill_only"]:
        raise Skip("GenAI's pipeline has no head-adaptive budget, prefill ratio or "
                   "prefill-only eviction (pipeline_impl.cpp, _maybe_evict_cache_blocks)")
    if R == 0:
        raise Skip("GenAI's recent area is one block at least (CacheEvictionConfig "
                   "asserts recent_size non-zero); recent_window is 0")
    if M <= B + R:
        raise Skip(f"GenAI's max_cache_size must exceed start_size + recent_size "
                   f"(CacheEvictionConfig); with a start area of one block {B}, "
                   f"budget {M} is not above {B + R}")
    if heads > 1 and (v["granularity"] != 0 or v["aggregation"] != 2):
        raise Skip("GenAI keeps one set per layer and sums every query head's weights "
                   "(its kernel); only granularity 0 with aggregation 2 (sum) is that")
    return B, M, R


def f32(x):
    """x rounded to float32 (as the kernel's float32 sums)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


class Engine:
    """One ov_evict process: GenAI's algorithm for one layer."""

    def __init__(self, args):
        if not os.access(OV_EVICT, os.X_OK):
            raise RuntimeError(f"{OV_EVICT} is not built: run {_HERE}/setup.sh")
        self.proc = subprocess.Popen([OV_EVICT] + [str(a) for a in args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def register(self, scores, window=None):
        head = "R" if window is None else "W %d" % window
        line = "%s %d %s\n" % (head, len(scores), " ".join(float(s).hex() for s in scores))
        self.proc.stdin.write(line)

    def evict(self):
        self.proc.stdin.write("E\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline().split()
        if not out or out[0] != "V":
            self.close()
            raise RuntimeError("ov_evict: " + " ".join(out) if out else "ov_evict ended")
        return [int(b) for b in out[1:]]

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=30)


def evict_blocks(engine, kept, B):
    """GenAI's eviction of this step: the positions of the logical blocks it
    returns (each B slots of `kept`), and `kept` without them."""
    victims = []
    for b in engine.evict():
        victims.extend(kept[b * B:(b + 1) * B])
    gone = set(victims)
    return victims, [p for p in kept if p not in gone]


def log_step(log, victims, kept, before):
    sr = log.steps.add()
    sr.victims.extend(sorted(victims))
    sr.kept_count = len(kept)
    sr.query_cache_position = before


def rows_of(sc):
    """Each step's (admit, rows): rows one list of weights over the admitted
    positions per query head, or None (null attention). Skip what GenAI's
    pipeline cannot be fed."""
    heads = sc.query_heads if sc.HasField("query_heads") else 1
    if sc.HasField("trace"):
        try:
            tp = trace_mod.params_from_proto(sc.trace)
            gen = trace_mod.HeadsTrace(tp, heads) if heads > 1 else trace_mod.TraceGenerator(tp)
        except Refusal:
            raise Skip(NO_VALIDATION)  # a trace kvspec refuses
        return [("trace", t, gen) for t in range(tp.steps)], heads
    out = []
    admitted = 0
    for i, st in enumerate(sc.steps):
        if st.admit == 0 or len(st.totals) or st.total_rows:
            raise Skip(NO_VALIDATION)
        if len(st.queries):
            raise Skip("prefill query rows: GenAI scores a prompt by its SnapKV window "
                       "(snapkv_window_size) and evicts nothing at prefill; not driven here")
        if i > 0 and st.admit > 1:
            raise Skip("a chunk after the first step: GenAI's pipeline admits one token "
                       "per decode step")
        if (heads == 1 and len(st.heads)) or (heads > 1 and st.HasField("attention")):
            raise Skip(NO_VALIDATION)  # rows in the wrong field: kvspec refuses
        if st.HasField("attention"):
            rows = [list(st.attention.weights)]
        elif len(st.heads):
            rows = [list(h.weights) for h in st.heads]
        else:
            rows = None
        if rows is not None and (len(rows) != heads or any(
                len(r) != admitted or any(not (w >= 0.0 and w != float("inf")) for w in r)
                for r in rows)):
            raise Skip(NO_VALIDATION)  # a row kvspec refuses
        out.append(("rows", st.admit, rows))
        admitted += st.admit
    return out, heads


def openvino_steps(sc, heads):
    """Each step of an explicit `openvino` scenario as (admit, kind, data):
    kind "rows" (data: one full-cache row per head, or None: null
    attention), "queries" (data: (rows, m), head-major, m per head) or
    "totals" (data: (totals per head, total_rows)). Skip what kvspec
    refuses."""
    out = []
    admitted = 0
    for st in sc.steps:
        if st.admit == 0:
            raise Skip(NO_VALIDATION)
        if len(st.queries):
            if st.HasField("attention") or len(st.heads) or len(st.queries) % heads:
                raise Skip(NO_VALIDATION)
            m = len(st.queries) // heads
            first = admitted + st.admit - m
            rows = [list(r.weights) for r in st.queries]
            if m > st.admit or any(len(rows[h * m + j]) != first + j + 1
                                   for h in range(heads) for j in range(m)):
                raise Skip(NO_VALIDATION)
            if len(st.totals) or st.total_rows:
                totals = [list(t.sums) for t in st.totals]
                if len(totals) != heads or not 1 <= st.total_rows <= st.admit or any(
                        len(t) != admitted + st.admit for t in totals):
                    raise Skip(NO_VALIDATION)
                out.append((st.admit, "totals", (totals, st.total_rows)))
            else:
                out.append((st.admit, "queries", (rows, m)))
        else:
            if len(st.totals) or st.total_rows:
                raise Skip(NO_VALIDATION)
            if (heads == 1 and len(st.heads)) or (heads > 1 and st.HasField("attention")):
                raise Skip(NO_VALIDATION)
            if st.HasField("attention"):
                rows = [list(st.attention.weights)]
            elif len(st.heads):
                rows = [list(h.weights) for h in st.heads]
            else:
                rows = None
            if rows is not None and (len(rows) != heads or any(len(r) != admitted for r in rows)):
                raise Skip(NO_VALIDATION)
            out.append((st.admit, "rows", rows))
        admitted += st.admit
    return out


def run_openvino(req, heads):
    """An `openvino` case through GenAI's algorithm, each step as
    spec/policies/openvino.md maps it (the module's docstring)."""
    args = configure_openvino(req.policy)
    B, W = args[0], args[6]
    sc = req.scenario
    if sc.HasField("trace"):
        steps, heads = rows_of(sc)
    else:
        steps = openvino_steps(sc, heads)
    engine = Engine(args)
    log = kpb.EvictionLog()
    kept = []
    try:
        next_pos = 0
        for step in steps:
            if step[0] == "trace":
                _, t, gen = step
                gen.begin_step(t)
                if heads > 1:
                    m = gen.weights_matrix(np.array([kept] * heads, dtype=np.int64)) if kept else None
                    rows = [[] for _ in range(heads)] if m is None else [list(map(float, r)) for r in m]
                else:
                    rows = [list(map(float, gen.weights_array(kept)))] if kept else [[]]
                admit, kind, data = 1, "gathered", rows
            else:
                admit, kind, data = step
            before = len(kept)
            kept.extend(range(next_pos, next_pos + admit))
            next_pos += admit
            victims = []
            if kind == "queries":
                rows, m = data
                x = [0.0] * len(kept)
                for h in range(heads):
                    t = [0.0] * len(kept)
                    for j in range(m):
                        r = rows[h * m + j]
                        for i, p in enumerate(kept):
                            if p < len(r):
                                t[i] += r[p]
                    x = [a + b for a, b in zip(x, t)]
                engine.register([f32(v) for v in x], m)
            elif kind == "totals":
                totals, total_rows = data
                x = [0.0] * len(kept)
                for h in range(heads):
                    x = [a + totals[h][p] for a, p in zip(x, kept)]
                engine.register([f32(v) for v in x], total_rows)
            elif data is not None:
                gathered = data if kind == "gathered" else [[r[p] for p in kept[:before]] for r in data]
                x = [0.0] * before
                for r in gathered:
                    x = [a + w for a, w in zip(x, r)]
                engine.register([f32(v) for v in x] + [0.0] * admit, 1 if W else 0)
                victims, kept = evict_blocks(engine, kept, B)
            log_step(log, victims, kept, before)
    finally:
        engine.close()
    return log


def run_case(req):
    sc = req.scenario
    heads = sc.query_heads if sc.HasField("query_heads") else 1
    kv = sc.kv_heads if sc.HasField("kv_heads") else 1
    if heads < 1 or kv < 1 or heads % kv:
        raise Skip(NO_VALIDATION)
    if req.policy.name == "openvino":
        return run_openvino(req, heads)
    B, M, R = configure(req.policy, heads)
    steps, heads = rows_of(sc)
    engine = Engine([B, B, R, M])
    log = kpb.EvictionLog()
    kept = []  # positions GenAI's cache holds, ascending
    try:
        next_pos = 0
        for index, step in enumerate(steps):
            if step[0] == "trace":
                _, t, gen = step
                gen.begin_step(t)
                if heads > 1:
                    m = gen.weights_matrix(np.array([kept] * heads, dtype=np.int64)) if kept else None
                    rows = None if m is None else [list(map(float, r)) for r in m]
                else:
                    rows = [list(map(float, gen.weights_array(kept)))] if kept else None
                admit, gathered = 1, rows
            else:
                _, admit, rows = step
                gathered = None if rows is None else [[r[p] for p in kept] for r in rows]
            # One score per kept position: the heads' weights summed in
            # float32, head 0 first; 0.0 for a null row.
            if gathered is None:
                scores = [0.0] * len(kept)
            else:
                scores = []
                for j in range(len(kept)):
                    s = 0.0
                    for r in gathered:
                        s = f32(s + r[j])
                    scores.append(s)
            before = len(kept)
            admitted = list(range(next_pos, next_pos + admit))
            next_pos += admit
            kept.extend(admitted)
            engine.register(scores + [0.0] * admit)
            victims = []
            if index > 0 or admit == 1:
                # A decode step (a first step of one is a prompt of one:
                # nothing to evict either way).
                victims, kept = evict_blocks(engine, kept, B)
            log_step(log, victims, kept, before)
    finally:
        engine.close()
    return log


PORT = Port(NAME, SPEC_VERSION, ENGINE_VERSION, POLICIES, FEATURES, run_case)


if __name__ == "__main__":
    sys.exit(PORT.serve())
