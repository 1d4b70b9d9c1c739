#include "cc/errors.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kvspec {
namespace {

constexpr absl::string_view kCategoryPayloadUrl =
    "type.kvspec.dev/kvspec.v1.ErrorCategory";
// The subject's check and names, one per line (no name holds a newline).
constexpr absl::string_view kSubjectPayloadUrl =
    "type.kvspec.dev/kvspec.v1.Subject";

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

std::string SubjectText(const Subject& subject) {
  std::vector<std::string> parts = {subject.check};
  parts.insert(parts.end(), subject.names.begin(), subject.names.end());
  return absl::StrJoin(parts, " ");
}

absl::Status Refuse(ErrorCategory category, const Subject& subject,
                    absl::string_view message) {
  return Refuse(category, DefaultCode(category), subject, message);
}

absl::Status Refuse(ErrorCategory category, absl::StatusCode code,
                    const Subject& subject, absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kCategoryPayloadUrl,
                    absl::Cord(std::to_string(static_cast<int>(category))));
  std::vector<std::string> lines = {subject.check};
  lines.insert(lines.end(), subject.names.begin(), subject.names.end());
  status.SetPayload(kSubjectPayloadUrl, absl::Cord(absl::StrJoin(lines, "\n")));
  return status;
}

Subject SubjectOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kSubjectPayloadUrl);
  if (!payload.has_value()) return {};
  std::vector<std::string> lines = absl::StrSplit(std::string(*payload), '\n');
  Subject subject;
  subject.check = lines.front();
  subject.names.assign(lines.begin() + 1, lines.end());
  return subject;
}

absl::Status Rephrase(const absl::Status& status, absl::string_view message) {
  return Refuse(CategoryOf(status), status.code(), SubjectOf(status), message);
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
