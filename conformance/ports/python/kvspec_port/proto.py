"""Imports the generated protobuf modules (spec/kvspec.proto, spec/conformance.proto).

protoc generates them as `spec.kvspec_pb2` and `spec.conformance_pb2` (the
proto files import each other as "spec/..."), so the `_gen` folder is put on
sys.path.
"""

import os
import sys

_GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_gen")
if _GEN not in sys.path:
    sys.path.insert(0, _GEN)

from spec import kvspec_pb2  # noqa: E402
from spec import conformance_pb2  # noqa: E402

__all__ = ["kvspec_pb2", "conformance_pb2"]
