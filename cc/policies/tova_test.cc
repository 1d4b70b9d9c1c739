// Hand-worked cases from spec/policies/tova.md.
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;
using Row = std::vector<float>;

PolicyConfig Tova(int64_t budget, int64_t recent_window) {
  return {"tova", {{"budget", budget}, {"recent_window", recent_window}}};
}

Scenario FourSteps(Row third_row) {
  return {"four", {{1, std::nullopt},
                   {1, Row{1.0f}},
                   {1, Row{0.25f, 0.5f}},
                   {1, std::move(third_row)}}};
}

TEST(TovaPolicy, EvictsTheLowestLatestWeight) {
  // Latest weights at step 3: 0.25, 0.125, 0.5; position 1 goes. (H2O's
  // sums, 1.5, 0.625, 0.5, would evict 2: the two differ here.)
  const RunResult result =
      RunScenario(Tova(3, 1), FourSteps(Row{0.25f, 0.125f, 0.5f}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1}}));
}

TEST(TovaPolicy, EqualLatestWeightsEvictTheLowerPosition) {
  // harness.md#victims' example: 0.5, 0.25, 0.25 -> 1 and 2 tie, 1 goes.
  const RunResult result =
      RunScenario(Tova(3, 1), FourSteps(Row{0.5f, 0.25f, 0.25f}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1}}));
}

TEST(TovaPolicy, OnlyTheLatestWeightCounts) {
  // Position 0 had 1.0 then 0.25 and 0.0; position 1 had 0.5, then 0.125:
  // latest 0.0 < 0.125, so 0 goes although its history is heavier.
  const RunResult result =
      RunScenario(Tova(3, 1), FourSteps(Row{0.0f, 0.125f, 0.5f}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {0}}));
}

TEST(TovaPolicy, NullAttentionKeepsTheLatestObservedWeights) {
  // Step 3 is null: latest weights stay those of step 2 (0.25, 0.5) and
  // position 2 is unobserved (0.0): 2 goes.
  const Scenario scenario{"s", {{1, std::nullopt},
                                {1, Row{1.0f}},
                                {1, Row{0.25f, 0.5f}},
                                {1, std::nullopt}}};
  const RunResult result = RunScenario(Tova(3, 1), scenario);
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {2}}));
}

TEST(TovaPolicy, NoRecentWindowEvictsTheNewPositionAtOnce) {
  // recent_window 0: the newly admitted position scores +0.0 and is the
  // lowest unless an observed position also has 0.0 at a lower position.
  const Scenario scenario{"s", {{2, std::nullopt},
                                {1, Row{0.5f, 0.25f}},
                                {1, Row{0.5f, 0.0f, 0.75f}}}};
  const RunResult result = RunScenario(Tova(2, 0), scenario);
  // Step 1: 0 (0.5), 1 (0.25), 2 (new, 0.0) -> 2 goes.
  // Step 2: the row covers 0, 1, 2; 2 is gone, so 0 sees 0.5 and 1 sees
  // 0.0; with 3 (new, 0.0) that is a tie at 0.0, and 1 goes.
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {2}, {1}}));
}

TEST(TovaPolicy, RefusesRecentWindowNotBelowBudget) {
  const auto policy = MakePolicy(Tova(2, 2));
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(policy.status().message().find("recent_window 2, budget 2"),
            absl::string_view::npos)
      << policy.status();
}

TEST(TovaPolicy, HoldsEightBytesPerKeptPosition) {
  auto policy = MakePolicy(Tova(8, 2));
  ASSERT_TRUE(policy.ok());
  RunScenario(**policy, {"s", {{20, std::nullopt}}});
  EXPECT_EQ((*policy)->MemoryBytes(), 8u * (4 + 4));
}

}  // namespace
}  // namespace kvspec
