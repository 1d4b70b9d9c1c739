// Hand-worked cases from spec/policies/window.md.
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
using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;

TEST(WindowPolicy, EvictsTheOldestOncePastBudget) {
  // budget 3: positions 0, 1, 2 fit; each later step evicts the oldest.
  const RunResult result = RunScenario({"window", {{"budget", 3}}},
                                       ChunkScenario({1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {0}, {1}, {2}}));
  EXPECT_EQ(result.steps.back().kept_count, 3u);
}

TEST(WindowPolicy, ChunkEvictsDownToBudgetInOneStep) {
  // budget 3, a prefill chunk of 5 (positions 0..4): 0 and 1 go at once,
  // then a chunk of 2 (5, 6) pushes out 2 and 3.
  const RunResult result =
      RunScenario({"window", {{"budget", 3}}}, ChunkScenario({5, 2}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{0, 1}, {2, 3}}));
}

TEST(WindowPolicy, ChunkLongerThanBudgetEvictsPartOfItself) {
  // budget 2, chunks 1 then 4: kept {0}, then {0,1,2,3,4} -> keep {3,4}.
  const RunResult result =
      RunScenario({"window", {{"budget", 2}}}, ChunkScenario({1, 4}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {0, 1, 2}}));
  EXPECT_EQ(KeptAfter({"window", {{"budget", 2}}}, ChunkScenario({1, 4})),
            (std::vector<Position>{3, 4}));
}

TEST(WindowPolicy, DefaultBudgetIs512) {
  const RunResult result = RunScenario({"window", {}}, ChunkScenario({513}));
  ASSERT_EQ(result.steps.size(), 1u);
  EXPECT_EQ(result.steps[0].victims, (std::vector<Position>{0}));
  EXPECT_EQ(result.steps[0].kept_count, 512u);
}

TEST(WindowPolicy, RefusesBudgetOutOfRange) {
  for (int64_t budget : {int64_t{0}, int64_t{-1}, int64_t{4294967296}}) {
    const auto policy = MakePolicy({"window", {{"budget", budget}}});
    ASSERT_FALSE(policy.ok()) << budget;
    EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
    EXPECT_NE(policy.status().message().find("budget"),
              absl::string_view::npos);
    EXPECT_NE(policy.status().message().find(std::to_string(budget)),
              absl::string_view::npos)
        << policy.status();
  }
}

TEST(WindowPolicy, AcceptsBudgetAtItsLimits) {
  EXPECT_TRUE(MakePolicy({"window", {{"budget", 1}}}).ok());
  EXPECT_TRUE(MakePolicy({"window", {{"budget", 4294967295}}}).ok());
}

}  // namespace
}  // namespace kvspec
