"""binary32 helpers (spec/arithmetic.md#widths).

Python floats are binary64. A binary64 value is rounded to binary32 (round to
nearest, ties to even) through struct/array, which cast with C's (float).
"""

import math
import struct
from array import array

_F = struct.Struct("<f")
_pack = _F.pack
_unpack = _F.unpack


def f32(x: float) -> float:
    """Round a binary64 to the nearest binary32 (returned widened, exactly)."""
    return _unpack(_pack(x))[0]


def f32_list(xs) -> list:
    """f32 of every element of a list of binary64, in bulk."""
    return array("f", xs).tolist()


def weight_ok(w: float) -> bool:
    """spec/harness.md#attention-weights: finite and sign bit clear."""
    return math.isfinite(w) and math.copysign(1.0, w) > 0.0
