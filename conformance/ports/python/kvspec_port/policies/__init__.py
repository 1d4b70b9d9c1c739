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
    )
}
