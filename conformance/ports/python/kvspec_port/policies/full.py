"""full: keeps every position (spec/policies/full.md).

Takes only the parameters of spec/spans.md#parameters (all but `evict_at`
and `position_ids`: it evicts nothing); attention is validated and ignored.
"""

from ..spans import SPAN_CHUNK, SPAN_WINDOW, SPANS, check_span_relations
from .base import Policy


class FullPolicy(Policy):
    NAME = "full"
    PARAMS = (SPANS, SPAN_WINDOW, SPAN_CHUNK)

    @classmethod
    def check_relations(cls, values):
        check_span_relations(cls.NAME, values)
