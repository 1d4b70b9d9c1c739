"""spec/elementary.md: the golden table, the spot checks, hand-worked cases."""

import math

import pytest

from kvspec_port import elementary
from kvspec_port.elementary import bits, from_bits
from kvspec_port.rng import Rng

# spec/elementary.md#golden-values: (function, bits of x, bits of result)
GOLDEN = [
    ("exp", 0x3FF0000000000000, 0x4005BF0A8B14576A),
    ("exp", 0xBFF0000000000000, 0x3FD78B56362CEF38),
    ("exp", 0x3FE0000000000000, 0x3FFA61298E1E069C),
    ("exp", 0x3DDB7CDFD9D7BDBB, 0x3FF000000006DF38),
    ("exp", 0x39B4484BFEEBC2A0, 0x3FF0000000000000),
    ("exp", 0x4024000000000000, 0x40D5829DCF950560),
    ("exp", 0xC034800000000000, 0x3E157A3AFEED00AB),
    ("exp", 0x40862E3D70A3D70A, 0x7FEFE9CE5C4C52B4),
    ("exp", 0x4086300000000000, 0x7FF0000000000000),
    ("exp", 0xC086240000000000, 0x000E6CF6D08897AC),
    ("exp", 0xC087480000000000, 0x0000000000000001),
    ("exp", 0xC087500000000000, 0x0000000000000000),
    ("log", 0x4000000000000000, 0x3FE62E42FEFA39EF),
    ("log", 0x4024000000000000, 0x40026BB1BBB55516),
    ("log", 0x3FE0000000000000, 0xBFE62E42FEFA39EF),
    ("log", 0x3FF000001AD7F29B, 0x3E7AD7F2847B6492),
    ("log", 0x3FF6666666666666, 0x3FD588C2D913348E),
    ("log", 0x3FE6666666666666, 0xBFD6D3C324E13F50),
    ("log", 0x0000000000000001, 0xC0874385446D71C3),
    ("log", 0x7FEFFFFFFFFFFFFF, 0x40862E42FEFA39EF),
    ("log", 0x0000000000000000, 0xFFF0000000000000),
    ("log", 0x7FF0000000000000, 0x7FF0000000000000),
]


@pytest.mark.parametrize("name,x,want", GOLDEN)
def test_golden_table(name, x, want):
    assert bits(getattr(elementary, name)(from_bits(x))) == want


TWO52 = 1 << 52
# spec/elementary.md#spot-checks: (family, is exp, input from u, digest)
FAMILIES = [
    ("exp wide", True, lambda u: float((u >> 11) - TWO52) * 2.0**-42, 0x0A32EA2E7F43012C),
    ("exp near 0", True, lambda u: float((u >> 11) - TWO52) * 2.0**-51, 0xD2BD2CB5AA0ABFAD),
    ("exp tiny", True, lambda u: float((u >> 11) - TWO52) * 2.0**-80, 0xB58076FCE64CB01B),
    ("log wide", False, lambda u: from_bits(u % 0x7FF0000000000000), 0x11F7A20BEF104BA3),
    ("log near 1", False, lambda u: 1.0 + float((u >> 11) - TWO52) * 2.0**-75, 0x49DF08A6E71EB149),
    ("log small", False, lambda u: float(u >> 11) * 2.0**-50, 0x0AC327932AD8629A),
]


def test_spot_check_digests():
    rng = Rng(2026)
    for name, is_exp, make, want in FAMILIES:
        fn = elementary.exp if is_exp else elementary.log
        d = 0xCBF29CE484222325
        for _ in range(1000):
            d = ((d ^ bits(fn(make(rng.next())))) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        assert d == want, name


def test_special_values():
    assert math.isnan(elementary.exp(math.nan))
    assert bits(elementary.exp(-math.inf)) == 0
    assert elementary.exp(math.inf) == math.inf
    assert elementary.log(-0.0) == -math.inf
    assert math.isnan(elementary.log(-1.0))
    assert math.isnan(elementary.log(math.nan))


def test_reductions_hand_worked():
    assert elementary.dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == 32.0
    assert elementary.norm([3.0, 4.0]) == 5.0
    assert elementary.mean([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert elementary.variance([1.0, 2.0, 3.0, 4.0], 1) == 5.0 / 3.0
    assert elementary.variance([1.0, 2.0, 3.0, 4.0], 0) == 1.25
    # Index order: 1e16 + 1 - 1e16 is 0 left to right (math.fsum gives 1).
    assert elementary.dot([1e16, 1.0, -1e16], [1.0, 1.0, 1.0]) == 0.0
    with pytest.raises(ValueError, match="correction"):
        elementary.variance([1.0], 1)


def test_std():
    # spec/elementary.md: `std(a, c)` is `sqrt(variance(a, c))`; lagkv
    # (spec 0.18.0) reads `std(y, 1)`: (0, 1) spreads sqrt(1/2), as its card's
    # worked example says (0.7071..); (0.5, 0.5) spreads +0.0.
    assert elementary.std([0.0, 1.0], 1) == math.sqrt(0.5)
    assert elementary.std([1.0, 2.0, 3.0, 4.0], 1) == math.sqrt(5.0 / 3.0)
    assert elementary.std([0.5, 0.5], 1) == 0.0 and math.copysign(1.0, elementary.std([0.5, 0.5], 1)) == 1.0
    # Channels 0, 0, 4: mean 4/3, squared
    # deviations 16/9, 16/9, 64/9 summed in order, divided by 2: 2.3094..
    mu = 4.0 / 3.0
    s = 0.0 + (0.0 - mu) * (0.0 - mu)
    s = s + (0.0 - mu) * (0.0 - mu)
    s = s + (4.0 - mu) * (4.0 - mu)
    assert elementary.std([0.0, 0.0, 4.0], 1) == math.sqrt(s / 2)
    with pytest.raises(ValueError, match="correction"):
        elementary.std([1.0], 1)
