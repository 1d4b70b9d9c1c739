"""kvspec-port: a Python port of the kvspec specification (spec/README.md).

Written from spec/ alone: harness (spec/harness.md), arithmetic
(spec/arithmetic.md), Rng (spec/rng.md), trace generator (spec/trace.md),
policies (spec/policies/*.md; `openvino`, spec 0.14.0; `knorm`, 0.16.0;
`keydiff`, 0.17.0; `lagkv`, 0.18.0; snapkv's PyramidKV mode, 0.19.0;
`simlayerkv`, 0.20.0), heads (spec/heads.md), prefill and its column totals
(spec/prefill.md), spans, position ids and the context shift (spec/spans.md),
triggers (spec/triggers.md), blocks (spec/blocks.md), keys and values in a
scenario (spec/tensors.md) and the conformance testee (spec/protocol.md).
"""

SPEC_VERSION = "0.20.0"
# The features this port implements: all of spec/features.md#the-list, and
# `triggers` (spec/triggers.md, 0.12.0) and `blocks` (spec/blocks.md, 0.13.0).
# Spec 0.14.0 adds a policy (`openvino`) and no feature; 0.15.0 the hello's
# precision (kvspec_port/precision.py), and no feature; 0.16.0 `tensors`
# (spec/tensors.md: keys in a scenario) and the policy `knorm`; 0.17.0 the
# policy `keydiff`, and no feature; 0.18.0 `values` (spec/tensors.md: values
# in a scenario, and lagkv's parameters `lag` and `cross_scoring`) and the
# policy `lagkv`; 0.19.0 `pyramid` (spec/policies/pyramidkv.md: snapkv's
# `pyramid`, `pyramid_beta`, `layer`, `layers`); 0.20.0 the policy
# `simlayerkv`, and no feature.
FEATURES = ("decode", "trace", "heads", "trace-heads", "adaptive", "prefill", "spans",
            "contextshift", "totals", "triggers", "blocks", "tensors", "values", "pyramid")
PROTOCOL_VERSION = 1
PORT_VERSION = "0.1.0"
