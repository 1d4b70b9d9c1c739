// Errors as values: every refusal in kvspec is an absl::Status that carries
// one of the spec's error categories (spec/harness.md#refusals).
//
// The category travels as a status payload, so that vectors and the
// conformance runner compare categories and never message text. Each category
// also maps to the most specific canonical absl code:
//
//   UNKNOWN_POLICY     -> NotFound
//   INVALID_PARAMETER  -> InvalidArgument
//   ATTENTION_LENGTH   -> InvalidArgument
//   ATTENTION_VALUE    -> InvalidArgument
//   POSITION           -> FailedPrecondition (out of order) or OutOfRange
//                         (past 2^32 - 1), InvalidArgument (empty chunk)
//   INVALID_TRACE      -> InvalidArgument
//
// Example:
//   return Refuse(ErrorCategory::kInvalidParameter,
//                 absl::StrFormat("budget must be at least 1, got %d", v));
#ifndef KVSPEC_CC_ERRORS_H_
#define KVSPEC_CC_ERRORS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kvspec {

// The values are those of kvspec.v1.ErrorCategory in spec/kvspec.proto.
enum class ErrorCategory {
  kUnspecified = 0,
  kUnknownPolicy = 1,
  kInvalidParameter = 2,
  kAttentionLength = 3,
  kAttentionValue = 4,
  kPosition = 5,
  kInvalidTrace = 6,
  kInvalidHeads = 7,
};

// The spec's name of a category, e.g. "INVALID_PARAMETER".
absl::string_view CategoryName(ErrorCategory category);

// A refusal of the given category with the canonical code from the table
// above. `code` overrides the default code (used for POSITION's variants).
absl::Status Refuse(ErrorCategory category, absl::string_view message);
absl::Status Refuse(ErrorCategory category, absl::StatusCode code,
                    absl::string_view message);

// The category a status carries; kUnspecified for OK or a status that was not
// made by Refuse.
ErrorCategory CategoryOf(const absl::Status& status);

}  // namespace kvspec

// Returns early from the enclosing function when `expr` is not OK. Debian 12's
// Abseil has no such macro; this is the usual small one.
#define KVSPEC_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    const ::absl::Status kvspec_status_ = (expr);     \
    if (!kvspec_status_.ok()) return kvspec_status_;  \
  } while (false)

#endif  // KVSPEC_CC_ERRORS_H_
