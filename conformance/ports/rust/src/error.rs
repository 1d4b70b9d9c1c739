//! Refusals and their categories. Spec: spec/harness.md#refusals,
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

/// A spec refusal: a category (compared) and a message (for people only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub category: Category,
    pub message: String,
}

impl Refusal {
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        Refusal { category, message: message.into() }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category.name(), self.message)
    }
}

impl std::error::Error for Refusal {}

pub type Result<T> = std::result::Result<T, Refusal>;
