// Hand-worked cases from spec/policies/full.md.
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using testing_util::ChunkScenario;
using testing_util::KeptAfter;

TEST(FullPolicy, NeverEvicts) {
  const Scenario scenario = ChunkScenario({5, 1, 1, 100});
  const RunResult result = RunScenario({"full", {}}, scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 4u);
  for (const StepRecord& step : result.steps) EXPECT_TRUE(step.victims.empty());
  EXPECT_EQ(result.steps.back().kept_count, 107u);
  EXPECT_EQ(result.steps.back().query_cache_position, 7u);
}

TEST(FullPolicy, KeepsEveryPositionInOrder) {
  const std::vector<Position> kept =
      KeptAfter({"full", {}}, ChunkScenario({2, 1, 3}));
  EXPECT_EQ(kept, (std::vector<Position>{0, 1, 2, 3, 4, 5}));
}

TEST(FullPolicy, RefusesABudget) {
  const auto policy = MakePolicy({"full", {{"budget", 8}}});
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(policy.status().message().find("budget"), absl::string_view::npos)
      << policy.status();
}

TEST(FullPolicy, HoldsFourBytesPerKeptPosition) {
  auto policy = MakePolicy({"full", {}});
  ASSERT_TRUE(policy.ok());
  RunScenario(**policy, ChunkScenario({10}));
  EXPECT_EQ((*policy)->MemoryBytes(), 40u);
}

}  // namespace
}  // namespace kvspec
