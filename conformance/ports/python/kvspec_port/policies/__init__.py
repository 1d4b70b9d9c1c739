"""The kvspec policy registry (spec/README.md#policies), in registry order."""

from .base import Policy, ScorePolicy, StepOutcome  # noqa: F401
from .full import FullPolicy
from .window import WindowPolicy
from .streamingllm import StreamingLlmPolicy
from .h2o import H2oPolicy
from .tova import TovaPolicy
from .snapkv import SnapKvPolicy
from .random import RandomPolicy
from .openvino import OpenVinoPolicy
from .knorm import KnormPolicy
from .keydiff import KeyDiffPolicy
from .lagkv import LagKvPolicy
from .simlayerkv import SimLayerKvPolicy

REGISTRY = {
    cls.NAME: cls
    for cls in (
        FullPolicy,
        WindowPolicy,
        StreamingLlmPolicy,
        H2oPolicy,
        TovaPolicy,
        SnapKvPolicy,
        RandomPolicy,
        OpenVinoPolicy,
        KnormPolicy,
        KeyDiffPolicy,
        LagKvPolicy,
        SimLayerKvPolicy,
    )
}

# A build of lower precision (KVSPEC_PORT_PRECISION, ../precision.py):
# h2o and tova read their weights in it and keep their scores in it. knorm's,
# keydiff's and lagkv's scores come from keys (and values), never from
# weights: none is wrapped, each computes in binary64 in every build (a build
# of lower precision lists none of them). Nor is simlayerkv (spec 0.20.0): it
# reads weights but ranks nothing, and its one score, summed in binary64,
# decides the whole layer; a build of lower precision does not list it.
from .. import precision as _precision  # noqa: E402

if _precision.LOWER:
    REGISTRY["h2o"] = _precision.rounded(H2oPolicy, "cumulative")
    REGISTRY["tova"] = _precision.rounded(TovaPolicy, "latest")
