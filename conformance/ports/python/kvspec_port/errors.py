"""Refusal categories (spec/harness.md#refusals, spec/kvspec.proto ErrorCategory)
and subjects (spec/harness.md#subjects)."""

from typing import NamedTuple, Tuple

UNKNOWN_POLICY = "UNKNOWN_POLICY"
INVALID_PARAMETER = "INVALID_PARAMETER"
ATTENTION_LENGTH = "ATTENTION_LENGTH"
ATTENTION_VALUE = "ATTENTION_VALUE"
POSITION = "POSITION"
INVALID_TRACE = "INVALID_TRACE"
INVALID_HEADS = "INVALID_HEADS"


class Subject(NamedTuple):
    """What a refusal refused (spec/harness.md#subjects, kvspec.proto
    Subject): the check (`unknown`, `repeated`, `range`, `rule`, `length`,
    `value`) and the parameters or fields it names, in the spec's order."""

    check: str
    names: Tuple[str, ...]


class Refusal(Exception):
    """A spec refusal: a category and a subject (compared) and a message (for people)."""

    def __init__(self, category: str, subject: Subject, message: str) -> None:
        super().__init__(f"{category}: {message}")
        self.category = category
        self.subject = subject
        self.message = message
