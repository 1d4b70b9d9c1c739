// Hand-worked cases from spec/policies/random.md. The draws are worked from
// the golden outputs of spec/rng.md (seed 42: 0x1578..., 0x6104...,
// 0xae17..., ...).
#include <set>
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

PolicyConfig Random(int64_t budget, int64_t recent_window, uint64_t seed) {
  return {"random", {{"budget", budget}, {"recent_window", recent_window}},
          seed};
}

TEST(RandomPolicy, DrawsFollowTheRng) {
  // budget 2, no recent window, seed 42, single steps. Each eviction draws
  // Uniform(3) from the top 2 bits of one output:
  //   step 2: 0x1578... -> 0 -> slot 0 of (0, 1, 2): position 0
  //   step 3: 0x6104... -> 1 -> slot 1 of (1, 2, 3): position 2
  //   step 4: 0xae17... -> 2 -> slot 2 of (1, 3, 4): position 4
  const RunResult result =
      RunScenario(Random(2, 0, 42), ChunkScenario({1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {0}, {2}, {4}}));
}

TEST(RandomPolicy, SeveralVictimsAreDrawnWithoutReplacement) {
  // budget 2, seed 42, one chunk of 4: two draws over the candidates in
  // ascending order. Uniform(4): 0x1578... top 2 bits 0 -> position 0,
  // leaving (1, 2, 3). Uniform(3): 0x6104... -> 1 -> position 2.
  const RunResult result = RunScenario(Random(2, 0, 42), ChunkScenario({4}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{0, 2}}));
  EXPECT_EQ(KeptAfter(Random(2, 0, 42), ChunkScenario({4})),
            (std::vector<Position>{1, 3}));
}

TEST(RandomPolicy, DrawsContinueAcrossStepsAndChunks) {
  // budget 2, recent window 1, seed 42; chunks of 2, 1, 1, 2, 1. The Rng
  // lives as long as the policy, so each eviction takes the next outputs.
  //   step 1: kept 0, 1, 2; candidates 0, 1: Uniform(2) takes the top bit
  //           of 0x1578... = 0 -> position 0.
  //   step 2: kept 1, 2, 3; candidates 1, 2: top bit of 0x6104... = 0 ->
  //           position 1.
  //   step 3: a chunk of 2 leaves kept 2, 3, 4, 5 and needs two victims
  //           among 2, 3, 4 (5 is protected): Uniform(3) on 0xae17...
  //           (top 2 bits 2) -> position 4; then Uniform(2) on 0xecb8...
  //           (top bit 1) -> index 1 of (2, 3), position 3.
  //   step 4: kept 2, 5, 6; candidates 2, 5: Uniform(2) on 0xfde6...
  //           (top bit 1) -> position 5.
  const RunResult result =
      RunScenario(Random(2, 1, 42), ChunkScenario({2, 1, 1, 2, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {0}, {1}, {3, 4}, {5}}));
}

TEST(RandomPolicy, TheSameSeedGivesTheSameVictims) {
  const auto scenario = ChunkScenario({5, 1, 1, 3, 1, 1, 1, 7, 1});
  const RunResult a = RunScenario(Random(4, 1, 7), scenario);
  const RunResult b = RunScenario(Random(4, 1, 7), scenario);
  ASSERT_TRUE(a.refusal.ok());
  EXPECT_EQ(a.steps, b.steps);
}

TEST(RandomPolicy, SeedsChangeTheVictims) {
  const auto scenario = ChunkScenario({5, 1, 1, 3, 1, 1, 1, 7, 1});
  std::set<std::vector<std::vector<Position>>> outcomes;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    outcomes.insert(VictimsPerStep(RunScenario(Random(4, 1, seed), scenario)));
  }
  EXPECT_GT(outcomes.size(), 10u);
}

TEST(RandomPolicy, EveryCandidateCanBeDrawnAndTheRecentWindowNever) {
  // budget 3, recent window 1, a chunk of 4: candidates 0, 1, 2; 3 is
  // protected. Over seeds 0..99 each candidate is drawn at least once.
  std::set<Position> drawn;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const RunResult result = RunScenario(Random(3, 1, seed), ChunkScenario({4}));
    ASSERT_EQ(result.steps[0].victims.size(), 1u);
    drawn.insert(result.steps[0].victims[0]);
  }
  EXPECT_EQ(drawn, (std::set<Position>{0, 1, 2}));
}

TEST(RandomPolicy, IgnoresAttention) {
  Scenario with_attention = ChunkScenario({3, 1, 1});
  with_attention.steps[1].attention = std::vector<float>{1.0f, 0.0f, 0.0f};
  with_attention.steps[2].attention = std::vector<float>{1.0f, 0.0f, 0.0f, 0.5f};
  const RunResult a = RunScenario(Random(2, 0, 5), with_attention);
  const RunResult b = RunScenario(Random(2, 0, 5), ChunkScenario({3, 1, 1}));
  ASSERT_TRUE(a.refusal.ok()) << a.refusal;
  EXPECT_EQ(a.steps, b.steps);
}

TEST(RandomPolicy, RefusesRecentWindowNotBelowBudget) {
  const auto policy = MakePolicy(Random(3, 3, 0));
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(policy.status().message().find("random: recent_window must be below"),
            absl::string_view::npos);
}

TEST(RandomPolicy, HoldsItsRngStateBesideThePositions) {
  auto policy = MakePolicy(Random(8, 2, 1));
  ASSERT_TRUE(policy.ok());
  RunScenario(**policy, ChunkScenario({20}));
  EXPECT_EQ((*policy)->MemoryBytes(), 8u * 4 + 32);
}

}  // namespace
}  // namespace kvspec
