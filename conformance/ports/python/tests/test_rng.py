"""Golden outputs of spec/rng.md#golden-outputs."""

import pytest

from kvspec_port.rng import Rng, SplitMix64


def test_splitmix64_from_zero():
    sm = SplitMix64(0)
    assert [sm.next() for _ in range(3)] == [
        0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F,
    ]


def test_state_after_seeding_with_42():
    assert Rng(42).s == [
        0xBDD732262FEB6E95, 0x28EFE333B266F103, 0x47526757130F9F52, 0x581CE1FF0E4AE394,
    ]


@pytest.mark.parametrize(
    "seed, outputs",
    [
        (0, [0x99EC5F36CB75F2B4, 0xBF6E1F784956452A, 0x1A5F849D4933E6E0, 0x6AA594F1262D2D2C, 0xBBA5AD4A1F842E59]),
        (42, [0x15780B2E0C2EC716, 0x6104D9866D113A7E, 0xAE17533239E499A1, 0xECB8AD4703B360A1, 0xFDE6DC7FE2EC5E64]),
        (0xFFFFFFFFFFFFFFFF, [0x8F5520D52A7EAD08, 0xC476A018CAA1802D, 0x81DE31C0D260469E, 0xBF658D7E065F3C2F, 0x913593FDA1BCA32A]),
    ],
)
def test_first_five_outputs(seed, outputs):
    rng = Rng(seed)
    assert [rng.next() for _ in range(5)] == outputs


def test_uniform_10():
    rng = Rng(42)
    assert [rng.uniform(10) for _ in range(10)] == [1, 6, 9, 4, 5, 9, 1, 2, 6, 9]


def test_uniform_1000():
    rng = Rng(42)
    assert [rng.uniform(1000) for _ in range(5)] == [85, 388, 696, 946, 788]


def test_uniform_one_consumes_nothing():
    a, b = Rng(42), Rng(42)
    assert a.uniform(1) == 0
    assert a.next() == b.next()


def test_uniform_double():
    rng = Rng(42)
    assert [rng.uniform_double().hex() for _ in range(3)] == [
        "0x1.5780b2e0c2ec0p-4", "0x1.84136619b444ep-2", "0x1.5c2ea66473c93p-1",
    ]


def test_uniform_float():
    rng = Rng(42)
    assert [rng.uniform_float() * 2 ** 24 for _ in range(3)] == [1406987, 6358233, 11409235]


def test_uniform_large_n():
    rng = Rng(7)
    assert [rng.uniform(2 ** 63 + 1) for _ in range(3)] == [
        0x475C3D964F482CD2, 0x0F8D72C295EC5854, 0x1ABC4DCB546F61DC,
    ]


def test_uniform_zero_is_a_caller_error():
    with pytest.raises(ValueError):
        Rng(1).uniform(0)
