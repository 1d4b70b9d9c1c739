#include "cc/errors.h"

#include <string>

#include "absl/strings/cord.h"

namespace kvspec {
namespace {

constexpr absl::string_view kCategoryPayloadUrl =
    "type.kvspec.dev/kvspec.v1.ErrorCategory";

absl::StatusCode DefaultCode(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::kUnknownPolicy:
      return absl::StatusCode::kNotFound;
    case ErrorCategory::kPosition:
      return absl::StatusCode::kFailedPrecondition;
    case ErrorCategory::kInvalidParameter:
    case ErrorCategory::kAttentionLength:
    case ErrorCategory::kAttentionValue:
    case ErrorCategory::kInvalidTrace:
    case ErrorCategory::kInvalidHeads:
    case ErrorCategory::kUnspecified:
      break;
  }
  return absl::StatusCode::kInvalidArgument;
}

}  // namespace

absl::string_view CategoryName(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::kUnknownPolicy:
      return "UNKNOWN_POLICY";
    case ErrorCategory::kInvalidParameter:
      return "INVALID_PARAMETER";
    case ErrorCategory::kAttentionLength:
      return "ATTENTION_LENGTH";
    case ErrorCategory::kAttentionValue:
      return "ATTENTION_VALUE";
    case ErrorCategory::kPosition:
      return "POSITION";
    case ErrorCategory::kInvalidTrace:
      return "INVALID_TRACE";
    case ErrorCategory::kInvalidHeads:
      return "INVALID_HEADS";
    case ErrorCategory::kUnspecified:
      break;
  }
  return "ERROR_CATEGORY_UNSPECIFIED";
}

absl::Status Refuse(ErrorCategory category, absl::string_view message) {
  return Refuse(category, DefaultCode(category), message);
}

absl::Status Refuse(ErrorCategory category, absl::StatusCode code,
                    absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kCategoryPayloadUrl,
                    absl::Cord(std::to_string(static_cast<int>(category))));
  return status;
}

ErrorCategory CategoryOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kCategoryPayloadUrl);
  if (!payload.has_value()) return ErrorCategory::kUnspecified;
  const std::string text(*payload);
  for (int c = 1; c <= static_cast<int>(ErrorCategory::kInvalidHeads); ++c) {
    if (text == std::to_string(c)) return static_cast<ErrorCategory>(c);
  }
  return ErrorCategory::kUnspecified;
}

}  // namespace kvspec
