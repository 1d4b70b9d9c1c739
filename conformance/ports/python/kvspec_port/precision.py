"""A build option of this port: scores in a precision below binary64.

spec/arithmetic.md#ports-of-lower-precision and spec/protocol.md#precision.
The environment variable KVSPEC_PORT_PRECISION selects it when the port
starts: unset or "binary64" is the port as the spec pins it; "binary32",
"bfloat16" or "float16" reads weights in that precision and keeps scores in
it; "<score>/<accumulate>" (for example "bfloat16/binary32", a bfloat16
model's weights summed into binary32, as GPU kernels keep them) reads
weights in the first and keeps scores in the second.

Only `h2o` and `tova` round this way: `rounded` below wraps their classes in
the registry (kvspec_port/policies/__init__.py), so the policies' own code,
and its mutation tests, stay the binary64 port's. Such a build reads every
weight and column total in the score precision and keeps its running scores
in the accumulate precision: after each step's recording its scores are
rounded once (a step's own sums and quotients are carried in binary64:
fewer roundings than spec/arithmetic.md#the-bound allows for). A port built
with a precision below binary64 declares it in its hello and lists only
those two and the policies that rank by no score, so the runner judges it
within the bound the spec gives (the other policies would still compute in
binary64). KVSPEC_PORT_PRECISION_UNDECLARED=1 leaves the precision out of
the hello, to show what a port that does not declare it gets: judged bit
for bit. Each rounding is from binary64, to nearest, ties to even.
"""

from __future__ import annotations

import os

import numpy as np

NAMES = ("binary64", "binary32", "bfloat16", "float16")
# The scored policies whose code rounds, and those that rank by no score.
ROUNDED_POLICIES = ("h2o", "tova")
UNSCORED_POLICIES = ("full", "window", "streamingllm", "random")


def _round(precision: str, values):
    a = np.asarray(values, dtype=np.float64)
    if precision == "binary64":
        return a
    if precision == "binary32":
        return a.astype(np.float32).astype(np.float64)
    if precision == "float16":
        with np.errstate(over="ignore"):  # beyond 65504 rounds to infinity, as float16 does
            return a.astype(np.float16).astype(np.float64)
    # bfloat16: 8 significant bits, binary32's exponent range.
    m, e = np.frexp(a)
    return np.ldexp(np.round(m * 256.0), e - 8)


def parse(text: str | None):
    """(score, accumulate) from KVSPEC_PORT_PRECISION's value."""
    if not text:
        return ("binary64", "binary64")
    parts = text.split("/")
    if len(parts) > 2 or any(p not in NAMES for p in parts):
        raise ValueError(
            f"KVSPEC_PORT_PRECISION={text!r}: expected <score>[/<accumulate>], each one of "
            + ", ".join(NAMES))
    return (parts[0], parts[-1])


SCORE, ACCUMULATE = parse(os.environ.get("KVSPEC_PORT_PRECISION"))
LOWER = (SCORE, ACCUMULATE) != ("binary64", "binary64")
# KVSPEC_PORT_PRECISION_UNDECLARED=1: the build computes in its precision
# but its hello declares none (conformance/README.md shows what that costs).
DECLARED = os.environ.get("KVSPEC_PORT_PRECISION_UNDECLARED", "") != "1"


def rounded(cls, state: str):
    """`cls` reading its weights in SCORE and keeping its attribute `state`
    (its scores, one per kept slot) in ACCUMULATE after each recording."""

    class Rounded(cls):
        def _keep(self):
            setattr(self, state, op(getattr(self, state)))

        def record(self, attention):
            super().record(weights(attention))
            self._keep()

        def record_queries(self, m, rows):
            super().record_queries(m, [weights(row) for row in rows])
            self._keep()

        def record_totals(self, total_rows, totals):
            super().record_totals(total_rows, weights(totals))
            self._keep()

    Rounded.__name__ = Rounded.__qualname__ = cls.__name__
    return Rounded


def weights(values):
    """Weights (or column totals) as read in the score precision."""
    return _round(SCORE, values)


def op(values):
    """The result of an operation, rounded to the accumulate precision."""
    return _round(ACCUMULATE, values)
