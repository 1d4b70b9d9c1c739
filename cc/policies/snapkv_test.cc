// Hand-worked cases from spec/policies/snapkv.md: the ring and its
// wrap-around, null attention, pooling and its clamped ends, the tie rule,
// and every refusal.
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

PolicyConfig SnapKv(int64_t budget, int64_t recent_window, int64_t obs_window,
                    int64_t pool_kernel) {
  return {"snapkv",
          {{"budget", budget},
           {"recent_window", recent_window},
           {"obs_window", obs_window},
           {"pool_kernel", pool_kernel}}};
}

// obs_window 2, so the ring wraps at step 3. Step 0 is null (the ring stays
// at index 0). Ring contents after step 3's record, index 0 then 1:
//   position 0: step 3's 0.125 (overwrote step 1's 0.5), step 2's 0.25
//   position 1: step 3's 0.25, step 2's 0.75
//   position 2: step 3's 0.5, 0
// Window sums: 0.375, 1.0, 0.5; position 3 (just admitted): 0.
Scenario WrapScenario() {
  return {"wrap", {{1, std::nullopt},
                   {1, Row{0.5f}},
                   {1, Row{0.25f, 0.75f}},
                   {1, Row{0.125f, 0.25f, 0.5f}}}};
}

TEST(SnapKvPolicy, RingWrapAroundForgetsTheOldestStep) {
  // pool_kernel 1: the lowest window sum, position 0's 0.375, goes. With
  // the overwritten 0.5 it would have had 0.875 and 2 (0.5) would go.
  const RunResult result = RunScenario(SnapKv(3, 1, 2, 1), WrapScenario());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {0}}));
}

TEST(SnapKvPolicy, EqualPooledScoresEvictLowerPosition) {
  // pool_kernel 3 over sums 0.375, 1.0, 0.5, 0: pooled 1.0, 1.0, 1.0, 0.5.
  // Candidates 0, 1, 2 all pool to 1.0: the lowest position, 0, goes.
  const RunResult result = RunScenario(SnapKv(3, 1, 2, 3), WrapScenario());
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {0}}));
}

TEST(SnapKvPolicy, NullAttentionDoesNotAdvanceTheRing) {
  // obs_window 2, budget 4, recent window 2, pool_kernel 1. A chunk of two
  // (null), a row (0.5, 0.0) written at ring index 0, a null step, then a
  // row (0.125, 0.25, 1.0, 0.0) written at index 1, because the null step
  // left the cursor alone. Step 3 evicts one of 0, 1, 2:
  //   position 0: (0.5, 0.125) = 0.625
  //   position 1: (0.0, 0.25)  = 0.25   <- goes
  //   position 2: (0.0, 1.0)   = 1.0
  // A port whose null step advanced the ring would write step 3 at index 0,
  // over step 1's weights: sums 0.125, 0.25, 1.0, and 0 would go instead.
  const Scenario scenario{"s", {{2, std::nullopt},
                                {1, Row{0.5f, 0.0f}},
                                {1, std::nullopt},
                                {1, Row{0.125f, 0.25f, 1.0f, 0.0f}}}};
  const RunResult result = RunScenario(SnapKv(4, 2, 2, 1), scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1}}));
}

// obs_window 3, budget 5, recent window 4, pool_kernel 1: only step 4
// evicts, one of positions 0 and 1. Position 0 receives 0.5, t, 1.0, t over
// steps 1..4 and position 1 receives 0, 0, 0, 1.0, where t = 2^-53. The
// first step is given null or an empty row.
Scenario RoundingScenario(bool empty_first_row) {
  const float t = 0x1.0p-53f;
  Scenario scenario{"rounding", {{2, std::nullopt},
                                 {1, Row{0.5f, 0.0f}},
                                 {1, Row{t, 0.0f, 0.0f}},
                                 {1, Row{1.0f, 0.0f, 0.0f, 0.0f}},
                                 {1, Row{t, 1.0f, 0.0f, 0.0f, 0.0f}}}};
  if (empty_first_row) scenario.steps[0].attention = Row{};
  return scenario;
}

TEST(SnapKvPolicy, WindowSumsRunInRingIndexOrder) {
  // Null first step: steps 1, 2, 3, 4 write ring indices 0, 1, 2, 0. At
  // step 4 position 0's ring is (t, t, 1.0): summed from index 0 upward,
  // t + t = 2^-52, then + 1.0 = 1 + 2^-52 exactly. Position 1's is
  // (1.0, 0, 0) = 1.0. So 1 goes. Summed chronologically (t, 1.0, t), each
  // + t would round back to 1.0, tie with position 1, and 0 would go.
  const RunResult result =
      RunScenario(SnapKv(5, 4, 3, 1), RoundingScenario(false));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {}, {1}}));
}

TEST(SnapKvPolicy, EmptyFirstRowAdvancesTheRing) {
  // A present empty row is recorded (harness.md#null-attention): it writes
  // no weight but moves the cursor to 1, so steps 1..4 write indices 1, 2,
  // 0, 1. Position 0's ring is (1.0, t, t): 1.0 + t rounds to 1.0 (a tie,
  // to even), + t again 1.0. Position 1's is (0, 1.0, 0) = 1.0. The tie
  // evicts the lower position, 0 -- where null attention evicted 1.
  const RunResult result =
      RunScenario(SnapKv(5, 4, 3, 1), RoundingScenario(true));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {}, {0}}));
}

TEST(SnapKvPolicy, PoolingClampsAtTheHighEnd) {
  // budget 3, no recent window, pool_kernel 3, obs_window 4. A chunk of 3
  // (null), then one row (1.0, 0.5, 0.25) and position 3 admitted.
  // Sums 1.0, 0.5, 0.25, 0. Clamped pooling: 1.0, 1.0, 0.5, 0.25 -> the new
  // position 3 goes. (Wrapping around to slot 0 would pool it to 1.0 and
  // evict 2 instead.)
  const Scenario scenario{"s", {{3, std::nullopt},
                                {1, Row{1.0f, 0.5f, 0.25f}}}};
  const RunResult result = RunScenario(SnapKv(3, 0, 4, 3), scenario);
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {3}}));
}

TEST(SnapKvPolicy, PoolingClampsAtTheLowEnd) {
  // budget 4, recent window 1, pool_kernel 3. Sums 0.25, 0.5, 1.0, 0.75, 0:
  // pooled 0.5, 1.0, 1.0, 1.0, 0.75. Slot 0 pools over slots 0 and 1 only;
  // candidates 0..3, and 0 (0.5) goes.
  const Scenario scenario{"s", {{4, std::nullopt},
                                {1, Row{0.25f, 0.5f, 1.0f, 0.75f}}}};
  const RunResult result = RunScenario(SnapKv(4, 1, 4, 3), scenario);
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {0}}));
}

TEST(SnapKvPolicy, PoolingLetsAHighScorerDefendItsNeighbours) {
  // budget 4, recent window 1. Sums 0.5, 0.125, 1.0, 0.25, 0 (new).
  // pool_kernel 1: 1 (0.125) goes. pool_kernel 3: pooled 0.5, 1.0, 1.0,
  // 1.0, 0.25, so 1 is defended by its neighbour 2 and 0 (0.5) goes.
  const Scenario scenario{"s", {{4, std::nullopt},
                                {1, Row{0.5f, 0.125f, 1.0f, 0.25f}}}};
  EXPECT_EQ(VictimsPerStep(RunScenario(SnapKv(4, 1, 4, 1), scenario)),
            (Victims{{}, {1}}));
  EXPECT_EQ(VictimsPerStep(RunScenario(SnapKv(4, 1, 4, 3), scenario)),
            (Victims{{}, {0}}));
}

TEST(SnapKvPolicy, ProtectedPositionsDefendTheirNeighbours) {
  // budget 3, recent window 2: candidates are 0 and 1; 2 and 3 are
  // protected. Sums 0.5, 0.25, 1.0, 0 (new). pool_kernel 1: 1 goes.
  // pool_kernel 3: pooled 0.5 and 1.0 (from protected 2), so 0 goes.
  const Scenario scenario{"s", {{3, std::nullopt},
                                {1, Row{0.5f, 0.25f, 1.0f}}}};
  EXPECT_EQ(VictimsPerStep(RunScenario(SnapKv(3, 2, 4, 1), scenario)),
            (Victims{{}, {1}}));
  EXPECT_EQ(VictimsPerStep(RunScenario(SnapKv(3, 2, 4, 3), scenario)),
            (Victims{{}, {0}}));
}

TEST(SnapKvPolicy, RefusesEachInvalidParameter) {
  struct Case {
    PolicyConfig config;
    const char* message;
  };
  const Case cases[] = {
      {SnapKv(4, 1, 0, 1), "snapkv: obs_window must be in [1, 65536], got 0"},
      {SnapKv(4, 1, 65537, 1), "obs_window must be in [1, 65536], got 65537"},
      {SnapKv(4, 1, 4, 2), "snapkv: pool_kernel must be odd, got 2"},
      {SnapKv(4, 1, 4, 4), "pool_kernel must be odd, got 4"},
      {SnapKv(4, 1, 4, 0), "pool_kernel must be in [1, 65535], got 0"},
      {SnapKv(4, 1, 4, -3), "pool_kernel must be in [1, 65535], got -3"},
      {SnapKv(4, 4, 4, 1), "recent_window must be below budget"},
      {SnapKv(0, 0, 4, 1), "budget must be in [1, 4294967295], got 0"},
  };
  for (const Case& c : cases) {
    const auto policy = MakePolicy(c.config);
    ASSERT_FALSE(policy.ok()) << c.message;
    EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
    EXPECT_NE(policy.status().message().find(c.message),
              absl::string_view::npos)
        << policy.status();
  }
}

TEST(SnapKvPolicy, DefaultsBuild) {
  auto policy = MakePolicy({"snapkv", {}});
  ASSERT_TRUE(policy.ok()) << policy.status();
}

TEST(SnapKvPolicy, HoldsItsRingAndTwoScoresPerKeptPosition) {
  // Per slot: 4 (position) + 4 x obs_window (ring) + 8 + 8 (window sum and
  // pooled score).
  auto policy = MakePolicy(SnapKv(8, 2, 3, 1));
  ASSERT_TRUE(policy.ok());
  RunScenario(**policy, {"s", {{20, std::nullopt}}});
  EXPECT_EQ((*policy)->MemoryBytes(), 8u * (4 + 4 * 3 + 8 + 8));
}

}  // namespace
}  // namespace kvspec
