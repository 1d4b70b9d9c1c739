"""Golden values of spec/elementary.md: its table and its spot checks.

Computed with the Python port's copy of the algorithms
(conformance/ports/python/kvspec_port/elementary.py, written from the spec),
the same bits that cc/elementary.cc and Java's StrictMath give
(tools/recipes/check.sh compares all of them).

  python3 tools/goldens/elementary_goldens.py           # table and digests
  python3 tools/goldens/elementary_goldens.py --ulps    # error against mpmath

--ulps needs mpmath (in tools/.venv-torch, or pip install mpmath): it
evaluates exp and log at 100 decimal digits on 100,000 inputs of each spot
check family and prints the largest error in units in the last place.
"""

import argparse
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "conformance/ports/python"))

from kvspec_port import elementary  # noqa: E402
from kvspec_port.rng import Rng  # noqa: E402

TABLE = [
    ("exp", 1.0), ("exp", -1.0), ("exp", 0.5), ("exp", 1e-10), ("exp", 1e-30),
    ("exp", 10.0), ("exp", -20.5), ("exp", 709.78), ("exp", 710.0),
    ("exp", -708.5), ("exp", -745.0), ("exp", -746.0),
    ("log", 2.0), ("log", 10.0), ("log", 0.5), ("log", 1.0000001), ("log", 1.4),
    ("log", 0.7), ("log", 5e-324), ("log", 1.7976931348623157e308), ("log", 0.0),
    ("log", float("inf")),
]

SEED = 2026
TWO52 = 1 << 52


def families():
    """spec/elementary.md#spot-checks: (name, function, input from u)."""
    return [
        ("exp wide", elementary.exp, lambda u: float((u >> 11) - TWO52) * 2.0**-42),
        ("exp near 0", elementary.exp, lambda u: float((u >> 11) - TWO52) * 2.0**-51),
        ("exp tiny", elementary.exp, lambda u: float((u >> 11) - TWO52) * 2.0**-80),
        ("log wide", elementary.log, lambda u: elementary.from_bits(u % 0x7FF0000000000000)),
        ("log near 1", elementary.log, lambda u: 1.0 + float((u >> 11) - TWO52) * 2.0**-75),
        ("log small", elementary.log, lambda u: float(u >> 11) * 2.0**-50),
    ]


def spot_inputs(count):
    """Yields (family name, function, [inputs]) drawn in the spec's order."""
    rng = Rng(SEED)
    for name, fn, make in families():
        yield name, fn, [make(rng.next()) for _ in range(count)]


def digest(values):
    d = 0xCBF29CE484222325
    for v in values:
        d = ((d ^ elementary.bits(v)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return d


def print_table():
    print("| function | x | bits of x | result | bits of result |")
    print("| --- | --- | --- | --- | --- |")
    for name, x in TABLE:
        y = getattr(elementary, name)(x)
        print(f"| {name} | {x!r} | `0x{elementary.bits(x):016x}` | {y!r} | "
              f"`0x{elementary.bits(y):016x}` |")
    print()
    for name, fn, xs in spot_inputs(1000):
        print(f"spot {name}: 1000 digest 0x{digest(fn(x) for x in xs):016x}")


def ulps(count):
    import mpmath
    mpmath.mp.dps = 100
    worst = {}
    for name, fn, xs in spot_inputs(count):
        key = name.split()[0]
        for x in xs:
            y = fn(x)
            if y == 0.0 or y != y or y in (float("inf"), float("-inf")):
                continue
            exact = (mpmath.exp if key == "exp" else mpmath.log)(mpmath.mpf(x))
            ulp = math.ulp(y)
            err = abs(float((mpmath.mpf(y) - exact) / ulp))
            if err > worst.get(key, (0.0, 0.0))[0]:
                worst[key] = (err, x)
    for key, (err, x) in sorted(worst.items()):
        print(f"{key}: largest error {err:.3f} ulp, at x = {x!r} "
              f"({3 * count} inputs, 3 families)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ulps", action="store_true", help="error against mpmath instead")
    parser.add_argument("--count", type=int, default=100000, help="inputs per family for --ulps")
    args = parser.parse_args()
    if args.ulps:
        ulps(args.count)
    else:
        print_table()


if __name__ == "__main__":
    main()
