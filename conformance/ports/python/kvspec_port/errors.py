"""Refusal categories (spec/harness.md#refusals, spec/kvspec.proto ErrorCategory)."""

UNKNOWN_POLICY = "UNKNOWN_POLICY"
INVALID_PARAMETER = "INVALID_PARAMETER"
ATTENTION_LENGTH = "ATTENTION_LENGTH"
ATTENTION_VALUE = "ATTENTION_VALUE"
POSITION = "POSITION"
INVALID_TRACE = "INVALID_TRACE"
INVALID_HEADS = "INVALID_HEADS"


class Refusal(Exception):
    """A spec refusal: a category (compared) and a message (for people)."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(f"{category}: {message}")
        self.category = category
        self.message = message
