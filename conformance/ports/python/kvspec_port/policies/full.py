"""full: keeps every position (spec/policies/full.md).

Takes no parameters; attention is validated and ignored.
"""

from .base import Policy


class FullPolicy(Policy):
    NAME = "full"
    PARAMS = ()
