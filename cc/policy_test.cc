// Policy::Step's validation (spec/harness.md#refusals): each refusal, its
// category, and that a refused step leaves the policy unchanged.
#include "cc/policy.h"

#include <cmath>
#include <limits>
#include <vector>

#include "cc/errors.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

std::unique_ptr<Policy> Window(int64_t budget) {
  auto policy = MakePolicy({"window", {{"budget", budget}}});
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *std::move(policy);
}

// Three positions kept: 0, 1, 2.
std::unique_ptr<Policy> WindowHoldingThree() {
  std::unique_ptr<Policy> policy = Window(8);
  EXPECT_TRUE(policy->Step({0, 3, std::nullopt}).ok());
  return policy;
}

void ExpectUnchanged(const Policy& policy) {
  EXPECT_EQ(std::vector<Position>(policy.kept().begin(), policy.kept().end()),
            (std::vector<Position>{0, 1, 2}));
  EXPECT_EQ(policy.steps_done(), 1);
}

TEST(Policy, RefusesAnEmptyChunk) {
  auto policy = WindowHoldingThree();
  const auto victims = policy->Step({3, 0, std::nullopt});
  ASSERT_FALSE(victims.ok());
  EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kPosition);
  EXPECT_EQ(victims.status().code(), absl::StatusCode::kInvalidArgument);
  ExpectUnchanged(*policy);
}

TEST(Policy, RefusesAPositionNotAboveTheLastAdmitted) {
  auto policy = WindowHoldingThree();
  for (Position first : {0u, 2u}) {
    const auto victims = policy->Step({first, 1, std::nullopt});
    ASSERT_FALSE(victims.ok());
    EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kPosition);
    EXPECT_EQ(victims.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(victims.status().message().find("step 1"),
              absl::string_view::npos)
        << victims.status();
    ExpectUnchanged(*policy);
  }
}

TEST(Policy, AcceptsAGapInPositions) {
  auto policy = WindowHoldingThree();
  EXPECT_TRUE(policy->Step({10, 1, std::nullopt}).ok());
  EXPECT_EQ(policy->kept().back(), 10u);
}

TEST(Policy, RefusesPositionsPastTheLargest) {
  auto policy = Window(8);
  const Position last = std::numeric_limits<Position>::max();
  const auto victims = policy->Step({last, 2, std::nullopt});
  ASSERT_FALSE(victims.ok());
  EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kPosition);
  EXPECT_EQ(victims.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(policy->kept().empty());
  // The largest position itself is fine.
  EXPECT_TRUE(policy->Step({last, 1, std::nullopt}).ok());
}

TEST(Policy, RefusesAttentionOfTheWrongLength) {
  auto policy = WindowHoldingThree();
  const std::vector<float> too_short = {0.5f, 0.5f};
  const auto victims =
      policy->Step({3, 1, absl::MakeConstSpan(too_short)});
  ASSERT_FALSE(victims.ok());
  EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kAttentionLength);
  EXPECT_NE(victims.status().message().find("3 positions are kept"),
            absl::string_view::npos)
      << victims.status();
  ExpectUnchanged(*policy);
}

TEST(Policy, RefusesEachKindOfBadWeight) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(), -0.25f,
                       -0.0f};
  for (float weight : bad) {
    auto policy = WindowHoldingThree();
    const std::vector<float> attention = {0.25f, weight, 0.5f};
    const auto victims = policy->Step({3, 1, absl::MakeConstSpan(attention)});
    ASSERT_FALSE(victims.ok()) << weight;
    EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kAttentionValue);
    // The message names the step, the index and the position.
    EXPECT_NE(victims.status().message().find(
                  "step 1: attention weight 1 (position 1)"),
              absl::string_view::npos)
        << victims.status();
    ExpectUnchanged(*policy);
  }
}

TEST(Policy, AcceptsZeroAndLargeFiniteWeights) {
  auto policy = WindowHoldingThree();
  const std::vector<float> attention = {0.0f, std::numeric_limits<float>::max(),
                                        std::numeric_limits<float>::denorm_min()};
  EXPECT_TRUE(policy->Step({3, 1, absl::MakeConstSpan(attention)}).ok());
}

TEST(Policy, ChecksLengthBeforeValues) {
  // spec/harness.md#refusals: the first failing check in the listed order
  // is the one reported.
  auto policy = WindowHoldingThree();
  const std::vector<float> attention = {std::nanf("")};
  const auto victims = policy->Step({3, 1, absl::MakeConstSpan(attention)});
  EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kAttentionLength);
}

TEST(Policy, ChecksPositionsBeforeAttention) {
  auto policy = WindowHoldingThree();
  const std::vector<float> attention = {std::nanf("")};
  const auto victims = policy->Step({1, 1, absl::MakeConstSpan(attention)});
  EXPECT_EQ(CategoryOf(victims.status()), ErrorCategory::kPosition);
}

TEST(EraseSlots, RemovesListedSlotsAndKeepsOrder) {
  std::vector<int> values = {10, 11, 12, 13, 14, 15};
  EraseSlots(values, std::vector<size_t>{0, 2, 3});
  EXPECT_EQ(values, (std::vector<int>{11, 14, 15}));
  EraseSlots(values, std::vector<size_t>{});
  EXPECT_EQ(values, (std::vector<int>{11, 14, 15}));
  EraseSlots(values, std::vector<size_t>{2});
  EXPECT_EQ(values, (std::vector<int>{11, 14}));
  EraseSlots(values, std::vector<size_t>{0, 1});
  EXPECT_TRUE(values.empty());
}

TEST(AllWeightsValid, FlagsEveryKindOfBadWeight) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(AllWeightsValid({}));
  EXPECT_TRUE(AllWeightsValid(std::vector<float>{0.0f, 1.0f, 3.4e38f, 1e-45f}));
  EXPECT_FALSE(AllWeightsValid(std::vector<float>{1.0f, std::nanf("")}));
  EXPECT_FALSE(AllWeightsValid(std::vector<float>{inf, 1.0f}));
  EXPECT_FALSE(AllWeightsValid(std::vector<float>{1.0f, -0.0f}));
  EXPECT_FALSE(AllWeightsValid(std::vector<float>{-1e-45f}));
}

}  // namespace
}  // namespace kvspec
