"""streamingllm: `sinks` first positions plus the latest `budget - sinks`.

spec/policies/streamingllm.md#how-it-works and #chunked-admission: the
first S kept positions are the sinks; victims = kept[S : len(kept) - W].
"""

from ..errors import INVALID_PARAMETER, Refusal
from .base import BUDGET, U32_MAX, BudgetPolicy


class StreamingLlmPolicy(BudgetPolicy):
    NAME = "streamingllm"
    PARAMS = (BUDGET, ("sinks", 4, 0, U32_MAX - 1))

    @classmethod
    def check_relations(cls, values):
        if not values["sinks"] < values["budget"]:
            raise Refusal(
                INVALID_PARAMETER,
                f"streamingllm: sinks must be below budget, got sinks {values['sinks']}, "
                f"budget {values['budget']}",
            )

    def evict(self):
        kept = self.kept
        s = self.params["sinks"]
        w = self.budget - s
        n = len(kept)
        if n <= s + w:
            return [], []
        victims = kept[s : n - w]
        del kept[s : n - w]
        return victims, []
