#include "cc/errors.h"

#include "gtest/gtest.h"

namespace kvspec {
namespace {

TEST(Refuse, CarriesItsCategoryAndCanonicalCode) {
  struct Case {
    ErrorCategory category;
    absl::StatusCode code;
    const char* name;
  };
  const Case cases[] = {
      {ErrorCategory::kUnknownPolicy, absl::StatusCode::kNotFound,
       "UNKNOWN_POLICY"},
      {ErrorCategory::kInvalidParameter, absl::StatusCode::kInvalidArgument,
       "INVALID_PARAMETER"},
      {ErrorCategory::kAttentionLength, absl::StatusCode::kInvalidArgument,
       "ATTENTION_LENGTH"},
      {ErrorCategory::kAttentionValue, absl::StatusCode::kInvalidArgument,
       "ATTENTION_VALUE"},
      {ErrorCategory::kPosition, absl::StatusCode::kFailedPrecondition,
       "POSITION"},
      {ErrorCategory::kInvalidTrace, absl::StatusCode::kInvalidArgument,
       "INVALID_TRACE"},
      {ErrorCategory::kInvalidHeads, absl::StatusCode::kInvalidArgument,
       "INVALID_HEADS"},
  };
  for (const Case& c : cases) {
    const absl::Status status = Refuse(c.category, {"range", {"x"}}, "message");
    EXPECT_EQ(status.code(), c.code) << c.name;
    EXPECT_EQ(CategoryOf(status), c.category) << c.name;
    EXPECT_EQ(CategoryName(c.category), c.name);
    EXPECT_EQ(status.message(), "message");
  }
}

TEST(Refuse, CodeCanBeOverriddenWithoutLosingTheCategory) {
  const absl::Status status =
      Refuse(ErrorCategory::kPosition, absl::StatusCode::kOutOfRange,
             {"rule", {"admit"}}, "past end");
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CategoryOf(status), ErrorCategory::kPosition);
}

// spec/harness.md#subjects: the subject travels with the status, names in
// order, and survives a new message.
TEST(Refuse, CarriesItsSubject) {
  const Subject subject{"rule", {"recent_window", "budget"}};
  const absl::Status status =
      Refuse(ErrorCategory::kInvalidParameter, subject, "h2o: ...");
  EXPECT_EQ(SubjectOf(status), subject);
  EXPECT_EQ(SubjectText(SubjectOf(status)), "rule recent_window budget");
  const absl::Status rephrased = Rephrase(status, "head 1: h2o: ...");
  EXPECT_EQ(SubjectOf(rephrased), subject);
  EXPECT_EQ(CategoryOf(rephrased), ErrorCategory::kInvalidParameter);
  EXPECT_EQ(rephrased.code(), status.code());
  EXPECT_EQ(rephrased.message(), "head 1: h2o: ...");
  EXPECT_NE(SubjectOf(status), (Subject{"rule", {"budget", "recent_window"}}));
  EXPECT_EQ(SubjectOf(absl::OkStatus()), Subject{});
}

TEST(CategoryOf, IsUnspecifiedForOkAndForeignStatuses) {
  EXPECT_EQ(CategoryOf(absl::OkStatus()), ErrorCategory::kUnspecified);
  EXPECT_EQ(CategoryOf(absl::InvalidArgumentError("x")),
            ErrorCategory::kUnspecified);
}

TEST(ReturnIfError, ReturnsTheFirstError) {
  int reached = 0;
  auto f = [&]() -> absl::Status {
    KVSPEC_RETURN_IF_ERROR(absl::OkStatus());
    ++reached;
    KVSPEC_RETURN_IF_ERROR(
        Refuse(ErrorCategory::kPosition, {"range", {"admit"}}, "stop"));
    ++reached;
    return absl::OkStatus();
  };
  EXPECT_EQ(CategoryOf(f()), ErrorCategory::kPosition);
  EXPECT_EQ(reached, 1);
}

}  // namespace
}  // namespace kvspec
