"""kvspec from Python: the C++ reference's eviction policies, bit for bit.

    import numpy as np
    import kvspec

    rows = np.random.default_rng(0).random((4, 8, 64), dtype=np.float32)
    rows /= rows.sum(axis=-1, keepdims=True)       # 4 heads, the last 8 queries of 64
    run = kvspec.run("snapkv", rows=rows, kv_heads=2, preset="kvpress-0.5.5",
                     compression_ratio=0.5)
    run.kept            # per kept set, the positions kept at the end
    run.steps[0].sets[0].victims, run.steps[0].sets[0].cut

Every result is computed by kvspec's C++ reference (cc/, compiled into
kvspec._reference by setup.py), never by Python: this module builds the
spec's messages (spec/kvspec.proto) from arrays or files, hands them to the
reference, and reads its eviction log back. tests/test_vectors.py runs
every vector case through `run` and compares the log with the case's
expected one.

A refused configuration or step is not an exception: `run(...).refusal`
says its category, step and message, as the reference refuses it (an
unknown parameter, a NaN weight). Arguments this module cannot turn into a
scenario (a ratio outside (0, 1), rows of the wrong shape) raise
ValueError naming the argument.
"""
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from kvspec import _reference
from kvspec._gen.spec import kvspec_pb2 as pb

__all__ = ["spec_version", "Parameter", "Policy", "policies", "presets",
           "SetStep", "Step", "Refusal", "Run", "run", "run_case", "pb"]

#: The spec version the reference implements (spec/README.md).
spec_version: str = _reference.spec_version


@dataclass(frozen=True)
class Parameter:
    """One parameter of a policy's card: its default (None: required),
    range and meaning."""
    name: str
    default: Optional[int]
    min: int
    max: int
    meaning: str


@dataclass(frozen=True)
class Policy:
    """A registered policy: its one-line rule, its card and parameters."""
    name: str
    summary: str
    card: str
    parameters: Tuple[Parameter, ...]


def policies() -> List[Policy]:
    """Every policy of the registry, in registry order."""
    return [Policy(name, summary, card, tuple(Parameter(*p) for p in params))
            for name, summary, card, params in _reference.policies()]


def presets(policy: Optional[str] = None) -> List[str]:
    """The presets' names (spec/prefill.md#presets), of `policy` or as
    "policy:name" for all."""
    rows = _reference.presets()
    if policy is None:
        return [f"{p}:{name}" for p, name, _ in rows]
    return [name for p, name, _ in rows if p == policy]


@dataclass
class SetStep:
    """One kept set at one step: its victims (ascending), its kept count
    after the step, and, at an evicting step of a score-based policy, the
    cut: the victims then up to four survivors, as (position, score).
    `ratio_budget`: at a prefill step whose budget a ratio gave, that budget
    (spec/prefill.md#budgets-from-a-ratio, computed by the reference from
    the set's count after admission), else None."""
    victims: List[int]
    kept_count: int
    cut: List[Tuple[int, float]] = field(default_factory=list)
    ratio_budget: Optional[int] = None

    @property
    def tie(self) -> List[int]:
        """The positions of the cut whose score equals the last victim's,
        when a survivor has it too: equal scores on both sides of the cut,
        which the rank broke by position (spec/harness.md#victims), victims
        first. Empty when the cut was not a tie. The cut lists at most four
        survivors, so a longer tie shows only its first four survivors."""
        victims = len(self.victims)
        if victims == 0 or victims >= len(self.cut):
            return []
        boundary = self.cut[victims - 1][1]
        if self.cut[victims][1] != boundary:
            return []
        return [p for p, score in self.cut if score == boundary]


@dataclass
class Step:
    """One step of the run: its query position (the number kept before
    it, spec/harness.md#eviction-log) and one SetStep per kept set."""
    index: int
    query_position: int
    sets: List[SetStep]


@dataclass
class Refusal:
    """The reference's refusal: its category (ATTENTION_VALUE, ...), the
    step (-1: the configuration or scenario) and its message."""
    category: str
    step: int
    message: str


@dataclass
class Run:
    """A policy's run over a scenario. `kept` holds each kept set's
    positions at the end (every admitted position not evicted); `log` is
    the reference's kvspec.v1.EvictionLog itself; `config` the
    configuration run, after the preset's expansion."""
    config: Dict[str, int]
    steps: List[Step]
    kept: List[List[int]]
    refusal: Optional[Refusal]
    log: "pb.EvictionLog"

    @property
    def evicted(self) -> List[List[int]]:
        """Each kept set's victims over the whole run, in eviction order."""
        out: List[List[int]] = [[] for _ in self.kept]
        for step in self.steps:
            for s, record in enumerate(step.sets):
                out[s].extend(record.victims)
        return out


Array = object  # numpy.ndarray, torch.Tensor, or nested sequences


def _numpy(value, name):
    import numpy as np
    if hasattr(value, "detach"):  # a torch tensor, on any device
        value = value.detach().to("cpu").float().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: not an array of numbers ({error})") from None


def _head_vectors(array, name, dim, letter, kv_heads, length):
    """`array` (keys or values, `name`) as [kv_heads, L, dim]
    (spec/tensors.md#the-fields), or a ValueError naming the argument; its
    width is the reference's to check (a refusal, range head_dim or
    value_dim)."""
    array = _numpy(array, name)
    if array.ndim != 3 or array.shape[:2] != (kv_heads, length):
        raise ValueError(f"{name}: expected [kv_heads, L, {dim}] = "
                         f"[{kv_heads}, {length}, {letter}], got "
                         f"{tuple(array.shape)}")
    return array


def _prefill_scenario(rows, totals, query_heads, kv_heads, keys=None,
                      values=None) -> "pb.Scenario":
    """A one-step prefill (spec/prefill.md#query-rows) from rows
    [query_heads, R, L]: the causal rows of the prompt's last R queries,
    query L - R + r's row read as its first L - R + r + 1 weights (the rest
    of the array row, beyond the query, is ignored)."""
    import numpy as np
    array = _numpy(rows, "rows")
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3 or 0 in array.shape:
        raise ValueError(f"rows: expected [query_heads, R, L] (or [R, L] for one "
                         f"head), got shape {tuple(array.shape)}")
    heads, count, length = array.shape
    if count > length:
        raise ValueError(f"rows: {count} query rows of a {length}-position prompt")
    if query_heads is not None and query_heads != heads:
        raise ValueError(f"query_heads {query_heads} is not the rows' {heads} heads")
    scenario = pb.Scenario(id="python")
    scenario.query_heads = heads
    scenario.kv_heads = heads if kv_heads is None else kv_heads
    step = scenario.steps.add(admit=length)
    first = length - count
    for h in range(heads):
        for r in range(count):
            # float32, as AttentionRow carries weights (spec/kvspec.proto).
            step.queries.add(weights=array[h, r, :first + r + 1].astype(np.float32).tolist())
    if totals is not None:
        sums = _numpy(totals, "totals")
        if sums.shape != (heads, length):
            raise ValueError(f"totals: expected [{heads}, {length}], got "
                             f"{tuple(sums.shape)}")
        for h in range(heads):
            step.totals.add(sums=sums[h].tolist())
        step.total_rows = length
    # spec/tensors.md#the-fields: head_dim d (value_dim e), and per KV head
    # the keys (values) of the admitted positions, position-major, as
    # float32.
    if keys is not None:
        array = _head_vectors(keys, "keys", "head_dim", "d", scenario.kv_heads, length)
        scenario.head_dim = array.shape[2]
        for g in range(scenario.kv_heads):
            step.keys.add(values=array[g].astype(np.float32).reshape(-1).tolist())
    if values is not None:
        array = _head_vectors(values, "values", "value_dim", "e", scenario.kv_heads,
                              length)
        scenario.value_dim = array.shape[2]
        for g in range(scenario.kv_heads):
            step.values.add(values=array[g].astype(np.float32).reshape(-1).tolist())
    return scenario


def _scenario(scenario) -> "pb.Scenario":
    if isinstance(scenario, pb.Scenario):
        return scenario
    data = scenario
    if isinstance(scenario, (str, os.PathLike)):
        with open(scenario, "rb") as f:
            data = f.read()
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError("scenario: a path to a kvspec.v1.Scenario file, its bytes, "
                         "or a kvspec.pb.Scenario")
    message = pb.Scenario()
    try:
        message.ParseFromString(bytes(data))
    except Exception as error:  # protobuf's DecodeError
        raise ValueError(f"scenario: not a kvspec.v1.Scenario ({error})") from None
    return message


def _config(policy, params, preset, compression_ratio, seed) -> "pb.PolicyConfig":
    config = pb.PolicyConfig(name=policy, seed=seed)
    for name, value in (params or {}).items():
        if isinstance(value, str):
            word = _reference.head_parameter_value(name, value)
            if word is None:
                raise ValueError(f"params: {name}={value!r} is not a value "
                                 f"(granularity: layer, kv_head, query_head; "
                                 f"aggregation: mean, max, sum)")
            value = word
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"params: {name}={value!r} is not an integer")
        config.parameters.add(name=name, value=value)
    if compression_ratio is not None:
        ratio = float(compression_ratio)
        ppm = round(ratio * 1e6)
        if not 0 < ratio < 1 or not math.isclose(ppm, ratio * 1e6, abs_tol=1e-6):
            raise ValueError(f"compression_ratio: {compression_ratio} is not in (0, 1) "
                             f"with at most six decimals (kvpress's compression_ratio; "
                             f"spec/prefill.md#budgets-from-a-ratio)")
        if any(p.name == "ratio_ppm" for p in config.parameters):
            raise ValueError("give compression_ratio or params ratio_ppm, not both")
        config.parameters.add(name="ratio_ppm", value=ppm)
    if preset is not None:
        expanded = pb.PolicyConfig()
        expanded.ParseFromString(_reference.expand_preset(config.SerializeToString(), preset))
        config = expanded
    return config


def _admitted(scenario: "pb.Scenario") -> int:
    if scenario.HasField("trace"):
        return scenario.trace.steps  # spec/trace.md: one position a step
    return sum(step.admit for step in scenario.steps)


def _run(config: "pb.PolicyConfig", scenario: "pb.Scenario", cut: bool) -> Run:
    log = pb.EvictionLog()
    log.ParseFromString(_reference.run(config.SerializeToString(),
                                       scenario.SerializeToString(), cut))
    steps = []
    config_bytes = config.SerializeToString()
    for index, record in enumerate(log.steps):
        records = list(record.sets) or [record]
        prefill = index < len(scenario.steps) and len(scenario.steps[index].queries) > 0
        steps.append(Step(index, record.query_cache_position,
                          [SetStep(list(r.victims), r.kept_count,
                                   [(c.position, c.score) for c in r.cut],
                                   _reference.ratio_budget(
                                       config_bytes, r.kept_count + len(r.victims))
                                   if prefill else None)
                           for r in records]))
    refusal = None
    if log.HasField("rejection"):
        r = log.rejection
        refusal = Refusal(pb.ErrorCategory.Name(r.category), r.step, r.message)
    sets = len(steps[0].sets) if steps else 1
    evicted = [set() for _ in range(sets)]
    for step in steps:
        for s, record in enumerate(step.sets):
            evicted[s].update(record.victims)
    admitted = _admitted(scenario) if steps and refusal is None else 0
    kept = [[p for p in range(admitted) if p not in gone] for gone in evicted]
    return Run({p.name: p.value for p in config.parameters}, steps, kept, refusal, log)


def run(policy: str, scenario=None, *, rows: Array = None, totals: Array = None,
        keys: Array = None, values: Array = None,
        query_heads: Optional[int] = None, kv_heads: Optional[int] = None,
        params: Optional[Mapping[str, Union[int, str]]] = None,
        preset: Optional[str] = None, compression_ratio: Optional[float] = None,
        seed: int = 0, cut: bool = True) -> Run:
    """Runs `policy` (a registry name: "snapkv", "h2o", ...) with `params`
    (names as on its card; granularity and aggregation also by word), a
    `preset` ("kvpress-0.5.5", ...) and kvpress's `compression_ratio`
    (ratio_ppm = ratio x 10^6) over either `scenario` (a kvspec.v1.Scenario
    file's path, its bytes, or a kvspec.pb.Scenario) or `rows`, a
    [query_heads, R, L] array (numpy or torch) of the causal attention rows
    of a prompt's last R queries, run as one prefill step, with `totals`
    [query_heads, L] for h2o's column totals, `keys` [kv_heads, L, head_dim]
    for the presses that score from keys (knorm, keydiff, lagkv;
    spec/tensors.md; carried as float32), `values` [kv_heads, L, value_dim]
    for those that score from values too (lagkv; carried as float32) and
    `kv_heads` for grouped heads (default: as many as query heads)."""
    if (scenario is None) == (rows is None):
        raise ValueError("give a scenario or rows, not both and not neither")
    if rows is None and (totals is not None or query_heads is not None
                         or keys is not None or values is not None):
        raise ValueError("totals, keys, values and query_heads go with rows")
    message = (_scenario(scenario) if rows is None
               else _prefill_scenario(rows, totals, query_heads, kv_heads, keys,
                                      values))
    if rows is None and kv_heads is not None:
        message = pb.Scenario.FromString(message.SerializeToString())
        message.kv_heads = kv_heads
    return _run(_config(policy, params, preset, compression_ratio, seed), message, cut)


def run_case(case: "pb.Case", scenario: "pb.Scenario") -> Run:
    """A vector case (spec/vectors.md#cases) run as the generator runs it:
    its configuration over its scenario, cuts recorded."""
    return _run(case.policy, scenario, True)
