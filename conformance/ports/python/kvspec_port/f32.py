"""binary32 helpers (spec/arithmetic.md#widths).

Python floats are binary64. A binary64 value is rounded to binary32 (round to
nearest, ties to even) through struct, which casts with C's (float). The
trace generator rounds whole arrays with NumPy (trace.f32_list).
"""

import math
import struct

_F = struct.Struct("<f")
_pack = _F.pack
_unpack = _F.unpack


def f32(x: float) -> float:
    """Round a binary64 to the nearest binary32 (returned widened, exactly)."""
    return _unpack(_pack(x))[0]


def weight_ok(w: float) -> bool:
    """spec/harness.md#attention-weights: finite and sign bit clear."""
    return math.isfinite(w) and math.copysign(1.0, w) > 0.0
