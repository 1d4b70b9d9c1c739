"""The spec's scores of the presses scored from tensors, written from the
cards for classifying kvpress's disagreements (tools/kvpress/vectors_check.py
and model_check.py): knorm.md's and keydiff.md's from a KV head's keys,
lagkv.md's from its keys and values. In binary64 with the cards' order of
sums; lagkv's exp is Python's math.exp, not spec/elementary.md's, which
only the classification reads (the cut's scores come from the vectors or
simulate, and are checked equal to these where both exist)."""

import math


def _norm(v):
    total = 0.0  # a loop: sum() is compensated from Python 3.12
    for x in v:
        total += x * x
    return math.sqrt(total)


def _unit(v):
    n = _norm(v)
    return [0.0] * len(v) if n == 0.0 else [x / n for x in v]


def key_scores(policy, keys):
    """The spec's score of every position under one KV head, from `keys` (a
    list per position of its binary32 entries, as Python floats), in
    binary64 as the cards give them: knorm.md#how-it-works, +0.0 -
    norm(key); keydiff.md#how-it-works, +0.0 - dot(unit key, anchor), the
    anchor the unit of the mean of every position's unit key (the sums in
    index order from +0.0, one division). {position: score}."""
    if policy == "knorm":
        return {p: 0.0 - _norm(key) for p, key in enumerate(keys)}
    units = [_unit(key) for key in keys]
    d = len(units[0]) if units else 0
    mean = []
    for c in range(d):
        total = 0.0
        for u in units:
            total += u[c]
        mean.append(total / len(units))
    anchor = _unit(mean)
    scores = {}
    for p, u in enumerate(units):
        dot = 0.0
        for c in range(d):
            dot += u[c] * anchor[c]
        scores[p] = 0.0 - dot
    return scores


def _std1(y):
    """elementary.md's std(y, 1): the mean, the squared deviations summed in
    index order from +0.0, divided by n - 1, sqrt."""
    total = 0.0
    for x in y:
        total += x
    mu = total / len(y)
    squares = 0.0
    for x in y:
        squares += (x - mu) * (x - mu)
    return math.sqrt(squares / (len(y) - 1))


def _softmax(s):
    top = max(s)
    t = [math.exp(x - top) for x in s]
    z = 0.0
    for x in t:
        z += x
    return [x / z for x in t]


def _spreads(part, reference):
    """lagkv.md#how-it-works, step 3."""
    dim = len(reference[0])
    lo = [min(r[c] for r in reference) for c in range(dim)]
    hi = [max(r[c] for r in reference) for c in range(dim)]
    return [_std1([0.0 if hi[c] == lo[c] else (x[c] - lo[c]) / (hi[c] - lo[c])
                   for c in range(dim)]) for x in part]


def lagkv_scores(keys, values, sinks, lag, cross_scoring):
    """lagkv.md#how-it-works's score of every position of one KV head, from
    the prompt's keys and values (lists per position), in binary64 with
    Python's math.exp for the card's exp (for classifying disagreements:
    the cut's scores, which the vectors hold, are the spec's own).
    {position: score}."""
    m = len(keys)
    if m < sinks + 2 * lag:
        return {i: 1.0 if i < sinks else (i - sinks) / (m - sinks) for i in range(m)}
    scores = {i: 1.0 for i in range(m)}
    for j in range((m - sinks) // lag - 1):
        a, b = sinks + j * lag, sinks + (j + 1) * lag
        wk = _softmax(_spreads(keys[a:b], keys[b:b + lag]))
        wv = _softmax(_spreads(values[a:b], values[b:b + lag]))
        judged = [(x + y) / 2 for x, y in zip(wk, wv)]
        if cross_scoring:
            for i in range(lag):
                scores[a + i] = judged[i]
            continue
        for rank, i in enumerate(sorted(range(lag), key=lambda i: (judged[i], i))):
            scores[a + i] = rank / lag
    return scores
