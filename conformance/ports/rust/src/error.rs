//! Refusals, their categories and their subjects. Spec:
//! spec/harness.md#refusals, spec/harness.md#subjects,
//! spec/trace.md#parameters (`INVALID_TRACE`), spec/heads.md#head-counts
//! (`INVALID_HEADS`).
use std::fmt;

/// The spec's error categories (kvspec.v1.ErrorCategory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    UnknownPolicy,
    InvalidParameter,
    AttentionLength,
    AttentionValue,
    Position,
    InvalidTrace,
    InvalidHeads,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::UnknownPolicy => "UNKNOWN_POLICY",
            Category::InvalidParameter => "INVALID_PARAMETER",
            Category::AttentionLength => "ATTENTION_LENGTH",
            Category::AttentionValue => "ATTENTION_VALUE",
            Category::Position => "POSITION",
            Category::InvalidTrace => "INVALID_TRACE",
            Category::InvalidHeads => "INVALID_HEADS",
        }
    }
}

/// A spec refusal: a category and a subject (compared) and a message (for
/// people only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub category: Category,
    pub subject: Subject,
    pub message: String,
}

impl Refusal {
    pub fn new(category: Category, subject: Subject, message: impl Into<String>) -> Self {
        Refusal { category, subject, message: message.into() }
    }

    /// `POSITION`, whose subject names `admit`: `range admit` for a step
    /// that admits nothing, `rule admit` for positions past 2^32 - 1 (or, in
    /// a direct call, not above those admitted).
    pub fn position(check: Check, message: impl Into<String>) -> Self {
        Refusal::new(Category::Position, Subject::new(check, &["admit"]), message)
    }

    /// `ATTENTION_LENGTH`, whose subject is `length` and the field whose
    /// shape is wrong (`attention`, `heads`, `queries`, `totals` or
    /// `total_rows`).
    pub fn length(field: &str, message: impl Into<String>) -> Self {
        Refusal::new(Category::AttentionLength, Subject::new(Check::Length, &[field]), message)
    }

    /// The same refusal (category and subject) with `context` before its
    /// message: where a shared check failed ("head 1: ...").
    pub fn in_context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category.name(), self.message)
    }
}

/// The check a refusal failed (spec/harness.md#subjects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// A policy name not in the registry, or a parameter the policy does
    /// not take.
    Unknown,
    /// A parameter given twice.
    Repeated,
    /// A parameter, trace parameter, head count or `admit` out of range.
    Range,
    /// A rule between parameters or fields.
    Rule,
    /// `ATTENTION_LENGTH`: a row, query rows or totals of the wrong shape.
    Length,
    /// `ATTENTION_VALUE`: a weight or total not accepted.
    Value,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Unknown => "unknown",
            Check::Repeated => "repeated",
            Check::Range => "range",
            Check::Rule => "rule",
            Check::Length => "length",
            Check::Value => "value",
        }
    }
}

/// What a refusal refused (`kvspec.v1.Subject`, spec/harness.md#subjects):
/// the check and the parameters or wire fields it names, in the order of
/// the spec's tables ("rule recent_window budget"). A trace parameter is
/// named `trace.` and its field ("trace.noise").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    pub check: Check,
    pub names: Vec<String>,
}

impl Subject {
    pub fn new(check: Check, names: &[&str]) -> Self {
        Subject { check, names: names.iter().map(|n| n.to_string()).collect() }
    }
}

impl std::error::Error for Refusal {}

pub type Result<T> = std::result::Result<T, Refusal>;
