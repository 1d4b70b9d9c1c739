"""The precision build option (kvspec_port/precision.py; spec/protocol.md#precision,
spec 0.15.0), worked by hand: each rounding's tie and carry, the option's
parsing, and the hello a build with a precision sends."""

import importlib

import numpy as np
import pytest

from kvspec_port import precision
from kvspec_port.proto import conformance_pb2 as cpb


def test_bfloat16_keeps_eight_significant_bits_ties_to_even():
    r = precision._round("bfloat16", [1 + 2**-8, 1 + 3 * 2**-9, 1 + 2**-7 + 2**-8, 0.0, 3.0])
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even, 1. 1 + 3 * 2^-9
    # is above halfway: up. 1 + 2^-7 + 2^-8 is halfway, 1 + 2^-7 is odd:
    # to 1 + 2^-6. Zero and 3 are exact.
    assert list(r) == [1.0, 1 + 2**-7, 1 + 2**-6, 0.0, 3.0]


def test_binary32_and_float16_round_to_nearest():
    assert precision._round("binary32", [0.1])[0] == 0.10000000149011612
    assert precision._round("binary32", [2**24 + 1])[0] == 2**24  # halfway: to even
    # float16's largest finite is 65504; 65520 is halfway to 65536 (2^16,
    # beyond its range): to even, infinity.
    r = precision._round("float16", [65504.0, 65519.0, 65520.0, 1 + 2**-11])
    assert r[0] == 65504.0 and r[1] == 65504.0 and np.isinf(r[2]) and r[3] == 1.0
    assert precision._round("binary64", [0.1])[0] == 0.1


def test_parse():
    assert precision.parse(None) == ("binary64", "binary64")
    assert precision.parse("") == ("binary64", "binary64")
    assert precision.parse("bfloat16") == ("bfloat16", "bfloat16")
    assert precision.parse("bfloat16/binary32") == ("bfloat16", "binary32")
    for bad in ("float32", "bfloat16/", "binary32/binary32/binary32", "BFLOAT16"):
        with pytest.raises(ValueError, match="KVSPEC_PORT_PRECISION"):
            precision.parse(bad)


def test_hello_declares_the_build(monkeypatch):
    import kvspec_port.testee as testee
    try:
        monkeypatch.setenv("KVSPEC_PORT_PRECISION", "bfloat16/binary32")
        importlib.reload(precision)
        h = testee.hello_reply().hello
        assert h.score_precision == cpb.BFLOAT16
        assert h.accumulate_precision == cpb.BINARY32
        assert list(h.policies) == ["full", "window", "streamingllm", "h2o", "tova", "random"]
        assert h.port_name == "kvspec-port-python (bfloat16/binary32)"
    finally:
        monkeypatch.delenv("KVSPEC_PORT_PRECISION")
        importlib.reload(precision)
    h = testee.hello_reply().hello
    assert h.score_precision == cpb.PRECISION_UNSPECIFIED
    assert "snapkv" in h.policies and "openvino" in h.policies


def test_h2o_and_tova_keep_their_scores_in_the_precision(monkeypatch):
    import kvspec_port.policies as policies
    try:
        monkeypatch.setenv("KVSPEC_PORT_PRECISION", "bfloat16")
        importlib.reload(precision)
        importlib.reload(policies)
        cls = policies.REGISTRY["h2o"]
        assert cls.__name__ == "H2oPolicy" and cls is not policies.H2oPolicy
        # 1 + 2^-8 is read as 1 (a tie to even); 1 + 1 is 2 exactly; 2 + 2^-7
        # is halfway between 2 and 2 + 2^-6: to even, 2.
        p = cls({"budget": 4, "recent_window": 0, "normalize": 0,
                 "interval": 1, "block": 1, "block_score": 0}, None)
        p.cumulative = [0.0]
        p.record([1 + 2**-8])
        p.record([1.0])
        p.record([2**-7])
        assert list(p.scores()) == [2.0]
        # tova keeps the latest weight as read: 1 + 3 * 2^-9 rounds up.
        t = policies.REGISTRY["tova"]({"budget": 4, "recent_window": 0, "protect_newest": 0,
                                       "interval": 1, "block": 1, "block_score": 0}, None)
        t.record([1 + 3 * 2**-9])
        assert list(t.scores()) == [1 + 2**-7]
    finally:
        monkeypatch.delenv("KVSPEC_PORT_PRECISION")
        importlib.reload(precision)
        importlib.reload(policies)
    assert policies.REGISTRY["h2o"] is policies.H2oPolicy
