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
// Every refusal also carries its subject (spec/harness.md#subjects): the check
// that failed and the parameters or fields it names, compared by the runner
// for ports of spec 0.11.0 or later. Example:
//   return Refuse(ErrorCategory::kInvalidParameter, {"range", {"budget"}},
//                 absl::StrFormat("budget must be at least 1, got %d", v));
#ifndef KVSPEC_CC_ERRORS_H_
#define KVSPEC_CC_ERRORS_H_

#include <string>
#include <vector>

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

// What a refusal refused (spec/harness.md#subjects): the check, one of
// "unknown", "repeated", "range", "rule", "length", "value", and the
// parameters or wire fields it names, in the order the spec's table gives.
struct Subject {
  std::string check;
  std::vector<std::string> names;

  bool operator==(const Subject& other) const {
    return check == other.check && names == other.names;
  }
  bool operator!=(const Subject& other) const { return !(*this == other); }
};

// "range budget", "rule recent_window budget": the check, then the names.
std::string SubjectText(const Subject& subject);

// A refusal of the given category and subject with the canonical code from
// the table above. `code` overrides the default code (used for POSITION's
// variants).
absl::Status Refuse(ErrorCategory category, const Subject& subject,
                    absl::string_view message);
absl::Status Refuse(ErrorCategory category, absl::StatusCode code,
                    const Subject& subject, absl::string_view message);

// The category a status carries; kUnspecified for OK or a status that was not
// made by Refuse.
ErrorCategory CategoryOf(const absl::Status& status);

// The subject a status carries; empty for OK or a status not made by Refuse.
Subject SubjectOf(const absl::Status& status);

// The same refusal (category, code, subject) with another message: for a
// check that adds where it happened ("head 1: ...").
absl::Status Rephrase(const absl::Status& status, absl::string_view message);

}  // namespace kvspec

// Returns early from the enclosing function when `expr` is not OK. Debian 12's
// Abseil has no such macro; this is the usual small one.
#define KVSPEC_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    const ::absl::Status kvspec_status_ = (expr);     \
    if (!kvspec_status_.ok()) return kvspec_status_;  \
  } while (false)

#endif  // KVSPEC_CC_ERRORS_H_
