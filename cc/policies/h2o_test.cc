// Hand-worked cases from spec/policies/h2o.md.
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using testing_util::KeptAfter;
using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;
using Row = std::vector<float>;

PolicyConfig H2o(int64_t budget, int64_t recent_window) {
  return {"h2o", {{"budget", budget}, {"recent_window", recent_window}}};
}

// Four single steps; budget 3 and recent window 1 make step 3 evict one of
// positions 0, 1, 2.
Scenario FourSteps(Row third_row) {
  return {"four", {{1, std::nullopt},
                   {1, Row{1.0f}},
                   {1, Row{0.25f, 0.5f}},
                   {1, std::move(third_row)}}};
}

TEST(H2oPolicy, EvictsTheLowestCumulativeAttention) {
  // Sums at step 3: position 0: 1 + 0.25 + 0.25 = 1.5; position 1:
  // 0.5 + 0.125 = 0.625; position 2: 0.5. Position 3 is protected.
  const RunResult result =
      RunScenario(H2o(3, 1), FourSteps(Row{0.25f, 0.125f, 0.5f}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {2}}));
}

TEST(H2oPolicy, EqualSumsEvictTheLowerPosition) {
  // Position 1: 0.5 + 0.25 = 0.75; position 2: 0.75. Tie: 1 goes.
  const RunResult result =
      RunScenario(H2o(3, 1), FourSteps(Row{0.25f, 0.25f, 0.75f}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1}}));
}

TEST(H2oPolicy, UnobservedPositionScoresZero) {
  // budget 2, no recent window: at step 2 the new position 2 has no
  // observation (+0.0) and goes before 0 (1.0) and 1 (0.25).
  const Scenario scenario{"s", {{1, std::nullopt},
                                {1, Row{0.5f}},
                                {1, Row{0.5f, 0.25f}}}};
  const RunResult result = RunScenario(H2o(2, 0), scenario);
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {2}}));
}

TEST(H2oPolicy, NullAttentionAddsNothingButStillEvicts) {
  // budget 2, recent window 1. Step 2 is null: the sums stay 0.5
  // (position 0) and 0.0 (1, never observed); admitting 2 (protected)
  // still evicts, and the lower sum, position 1, goes.
  const Scenario scenario{"s", {{1, std::nullopt},
                                {1, Row{0.5f}},
                                {1, std::nullopt},
                                {1, Row{0.0f, 0.5f, 0.0f}}}};
  const RunResult result = RunScenario(H2o(2, 1), scenario);
  // Step 1 fills the budget; step 2 evicts: 0 has 0.5, 1 has 0.0 -> 1 goes.
  // Step 3: kept 0, 2, 3; candidates 0 (0.5 + 0.0) and 2 (0.0) -> 2 goes.
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {1}, {2}}));
}

TEST(H2oPolicy, ChunkEvictsInOneRanking) {
  // budget 3, recent window 1: a chunk of 2 (0, 1), then a row (0.5, 0.25)
  // and a chunk of 3 (2, 3, 4). Five kept, two go; candidates 0 (0.5),
  // 1 (0.25), 2 (0) and 3 (0): the two zeros, 2 and 3, go.
  const Scenario scenario{"s", {{2, Row{}}, {3, Row{0.5f, 0.25f}}}};
  const RunResult result = RunScenario(H2o(3, 1), scenario);
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {2, 3}}));
  EXPECT_EQ(KeptAfter(H2o(3, 1), scenario), (std::vector<Position>{0, 1, 4}));
}

TEST(H2oPolicy, RecentWindowIsNeverEvicted) {
  // budget 3, recent window 2: even with zero attention the latest two stay.
  const Scenario scenario{"s", {{3, Row{}},
                                {1, Row{1.0f, 0.0f, 0.0f}},
                                {1, Row{1.0f, 0.0f, 0.0f, 0.0f}}}};
  const RunResult result = RunScenario(H2o(3, 2), scenario);
  // Step 1: kept 0..3, candidates 0 (1.0), 1 (0.0) -> 1 goes.
  // Step 2: kept 0, 2, 3, 4, candidates 0 (2.0), 2 (0.0) -> 2 goes.
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {1}, {2}}));
}

TEST(H2oPolicy, SumsInBinary64) {
  // Position 0 receives 2^24, 1, 1; position 1 receives 2^24, 1, 0. In
  // binary64 the sums are 2^24 + 2 and 2^24 + 1, so 1 goes. Summed in
  // binary32 both would stick at 2^24 (each + 1 rounds back to even), tie,
  // and 0 would go instead. Position 2 receives 2^25 twice and is safe.
  const float big = 16777216.0f;  // 2^24
  const Scenario scenario{"s", {{2, Row{}},
                                {1, Row{big, big}},
                                {1, Row{1.0f, 1.0f, 2 * big}},
                                {1, Row{1.0f, 0.0f, 2 * big, 0.0f}}}};
  // budget 4, recent window 2: only step 3 evicts, one of 0, 1, 2.
  const RunResult result = RunScenario(H2o(4, 2), scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1}}));
}

TEST(H2oPolicy, RefusesRecentWindowNotBelowBudget) {
  for (int64_t recent_window : {4, 9}) {
    const auto policy = MakePolicy(H2o(4, recent_window));
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
    EXPECT_NE(policy.status().message().find(
                  "h2o: recent_window must be below budget"),
              absl::string_view::npos)
        << policy.status();
  }
}

TEST(H2oPolicy, RefusesOutOfRangeParameters) {
  for (const PolicyConfig& config :
       {H2o(0, 0), H2o(4, -1), H2o(4294967296, 1)}) {
    const auto policy = MakePolicy(config);
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  }
}

TEST(H2oPolicy, DefaultsAreBudget512AndRecentWindow16) {
  // 600 positions in one chunk with no attention: every candidate scores 0,
  // so the lowest positions go: 0..87, keeping 88..599.
  const std::vector<Position> kept =
      KeptAfter({"h2o", {}}, {"s", {{600, std::nullopt}}});
  ASSERT_EQ(kept.size(), 512u);
  EXPECT_EQ(kept.front(), 88u);
  // recent_window 16 is the default: 16 is below 17 but not below 16.
  EXPECT_TRUE(MakePolicy({"h2o", {{"budget", 17}}}).ok());
  EXPECT_FALSE(MakePolicy({"h2o", {{"budget", 16}}}).ok());
}

TEST(H2oPolicy, HoldsTwelveBytesPerKeptPosition) {
  auto policy = MakePolicy(H2o(8, 2));
  ASSERT_TRUE(policy.ok());
  RunScenario(**policy, {"s", {{20, std::nullopt}}});
  EXPECT_EQ((*policy)->MemoryBytes(), 8u * (4 + 8));
}

}  // namespace
}  // namespace kvspec
