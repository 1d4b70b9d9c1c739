// Hand-worked cases from spec/policies/openvino.md: OpenVINO GenAI's cache
// eviction. Every expected value below is worked out in the card (or in
// the comment beside it) from the card's rules, not read from the code.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using testing_util::ChunkScenario;
using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;
using Row = std::vector<float>;

ScenarioStep Decode(Row row) {
  ScenarioStep step;
  step.attention = std::move(row);
  return step;
}

ScenarioStep Prefill(uint32_t admit, std::vector<Row> queries) {
  ScenarioStep step;
  step.admit = admit;
  step.queries = std::move(queries);
  return step;
}

// openvino.md#worked-examples: sinks 1, recent_window 1, budget 3, block 1,
// obs_window 0, and the given norm_sum and max_pool.
PolicyConfig Small(int64_t norm_sum, int64_t max_pool, int64_t budget = 3,
                   int64_t obs_window = 0) {
  return {"openvino",
          {{"budget", budget}, {"sinks", 1}, {"recent_window", 1}, {"block", 1},
           {"norm_sum", norm_sum}, {"max_pool", max_pool},
           {"obs_window", obs_window}}};
}

Scenario FourRows() {
  Scenario s;
  s.steps = {Decode({}), Decode({1.0f}), Decode({0.5f, 0.5f}),
             Decode({0.25f, 0.125f, 0.5f})};
  return s;
}

TEST(OpenVino, NormSumDividesEachSumByItsCount) {
  // Step 3: acc 0.625, 0.5 and counts 3, 2 for positions 1, 2:
  // 0.2083... against 0.25, so 1 goes.
  RunOptions options;
  options.record_cut = true;
  const RunResult result = RunScenario(Small(1, 1), FourRows(), options);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1}}));
  ASSERT_EQ(result.steps[3].cut.size(), 2u);
  EXPECT_EQ(result.steps[3].cut[0].position, 1u);
  EXPECT_EQ(result.steps[3].cut[0].score, 0.625 / 3.0);
  EXPECT_EQ(result.steps[3].cut[1].position, 2u);
  EXPECT_EQ(result.steps[3].cut[1].score, 0.25);
}

TEST(OpenVino, SumRanksTheSumsThemselves) {
  // The same sums, 0.625 against 0.5: 2 goes.
  const RunResult result = RunScenario(Small(0, 1), FourRows());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {2}}));
}

TEST(OpenVino, ThePoolLooksForward) {
  // max_pool 2: step 3's u is (max(0.125, 0.5), max(0.5, 0), 0), acc 1.0,
  // 0.5 (counts 3, 2): 1/3 against 0.25, 2 goes, where max_pool 1 evicts 1.
  const RunResult pooled = RunScenario(Small(1, 2), FourRows());
  ASSERT_TRUE(pooled.refusal.ok()) << pooled.refusal;
  EXPECT_EQ(VictimsPerStep(pooled), (Victims{{}, {}, {}, {2}}));
}

Scenario WindowScenario() {
  Scenario s;
  s.steps = {Prefill(4, {{0.25f, 0.5f, 0.25f}, {0.25f, 0.125f, 0.125f, 0.5f}}),
             Decode({0.125f, 0.25f, 0.375f, 0.25f})};
  return s;
}

TEST(OpenVino, TheWindowSeedsCountsOfAtMostItsQueries) {
  // budget 4, obs_window 2: counts 2, 2, 1 after the prefill, 3, 3, 2, 1
  // after step 1; 0.875/3, 0.75/3, 0.75/2: position 2 goes.
  const RunResult result = RunScenario(Small(1, 1, 4, 2), WindowScenario());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {2}}));
}

TEST(OpenVino, WithoutAWindowEveryQueryCounts) {
  // obs_window 0: counts 4, 3, 2, 1 after step 1; 0.21875 is lowest: 1.
  const RunResult result = RunScenario(Small(1, 1, 4, 0), WindowScenario());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {1}}));
}

TEST(OpenVino, APromptWaitsForTheFirstDecodeStep) {
  // budget 4: a prefill of 6 evicts nothing; the decode step keeps 7 and
  // floor(7/1) - 4 = 3 go at once. All sums are 0 but position 1's... every
  // score is 0 (null-free rows of zeros), so the 3 lowest positions among
  // the candidates 1..5 go: 1, 2, 3.
  Scenario s;
  s.steps = {Prefill(6, {Row(6, 0.0f)}), Decode(Row(6, 0.0f))};
  const RunResult result = RunScenario(Small(1, 1, 4), s);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {1, 2, 3}}));
  EXPECT_EQ(result.steps[0].kept_count, 6u);
  EXPECT_EQ(result.steps[1].kept_count, 4u);
}

TEST(OpenVino, NullAttentionNeitherRegistersNorEvicts) {
  // Ten positions with null attention under budget 3: nothing goes.
  const RunResult result =
      RunScenario(Small(1, 1), ChunkScenario(std::vector<uint32_t>(10, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(result.steps.back().kept_count, 10u);
}

TEST(OpenVino, BlocksPastTheStartAreaGoWhenABlockPastBudgetCloses) {
  // sinks 8, recent_window 8, budget 32, block 4 (the notes' probe 1), rows
  // of zeros one position a step: step 35 keeps 36 = budget + block, one
  // block goes; all scores are 0, so the first candidate block, 8..11.
  // Then every 4 steps the next: 12..15 at step 39.
  Scenario s;
  s.steps.push_back(Decode({}));
  for (uint32_t t = 1; t < 40; ++t) s.steps.push_back(Decode(Row(t, 0.0f)));
  const RunResult result = RunScenario(
      {"openvino",
       {{"budget", 32}, {"sinks", 8}, {"recent_window", 8}, {"block", 4},
        {"norm_sum", 1}, {"max_pool", 7}, {"obs_window", 0}}},
      s);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  for (uint32_t t = 0; t < 40; ++t) {
    if (t == 35) {
      EXPECT_EQ(result.steps[t].victims, (std::vector<Position>{8, 9, 10, 11}));
    } else if (t == 39) {
      EXPECT_EQ(result.steps[t].victims, (std::vector<Position>{12, 13, 14, 15}));
    } else {
      EXPECT_TRUE(result.steps[t].victims.empty()) << "step " << t;
    }
  }
  EXPECT_EQ(result.steps[35].kept_count, 32u);
}

// OpenVINO GenAI 2026.3.0.0's own table, tests/cpp/cache_eviction.cpp,
// LOW_SCORE_BLOCK_EVICTION_TEST_CASES (T:844-894): each layer's zeroed
// blocks and the blocks GenAI's authors expect evicted, with start 32,
// recent 32, max 192 (72 for the last), block 4, NORM_SUM, max pool 1. The
// expected blocks are theirs, not the reference's.
struct UpstreamCase {
  uint32_t over;
  uint32_t budget;
  std::vector<uint32_t> zeroed;
  std::vector<uint32_t> evicted;
};

TEST(OpenVino, GenAiLowScoreTableEvictsTheBlocksItsAuthorsExpect) {
  const std::vector<UpstreamCase> table = {
      {1, 192, {17}, {17}},
      {1, 192, {9}, {9}},
      {10, 192, {28, 10, 11}, {10, 11, 28}},
      {10, 192, {18, 8, 31}, {8, 18, 31}},
      {6, 192, {15, 36, 13, 10}, {10, 13}},
      {6, 192, {9, 39, 31, 11}, {9, 11}},
      {22, 192, {}, {8, 9, 10, 11, 12, 13}},
      {22, 192, {30, 22}, {8, 9, 10, 11, 22, 30}},
      {22, 192, {0, 2, 7, 24, 31, 49}, {8, 9, 10, 11, 24, 31}},
      {22, 192, {5, 19, 27, 39, 50, 52}, {8, 9, 10, 19, 27, 39}},
      {17, 72, {0, 9, 10, 11, 13}, {8, 9, 10, 11, 13}},
      {17, 72, {12, 11, 8, 9, 17}, {8, 9, 10, 11, 12}},
  };
  for (const UpstreamCase& row : table) {
    // One registration of budget + 4 - 1 + over scores: all but the last
    // position with null attention, then a decode step with the table's row.
    const uint32_t length = row.budget + 3 + row.over;
    Row weights(length - 1, 1.0f);
    for (uint32_t block : row.zeroed) {
      for (uint32_t p = 4 * block; p < 4 * block + 4 && p + 1 < length; ++p) {
        weights[p] = 0.0f;
      }
    }
    Scenario s;
    s.steps = {ScenarioStep{length - 1, std::nullopt}, Decode(weights)};
    const RunResult result = RunScenario(
        {"openvino",
         {{"budget", row.budget}, {"sinks", 32}, {"recent_window", 32},
          {"block", 4}, {"norm_sum", 1}, {"max_pool", 1}, {"obs_window", 0}}},
        s);
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    std::vector<Position> expected;
    for (uint32_t block : row.evicted) {
      for (uint32_t i = 0; i < 4; ++i) expected.push_back(4 * block + i);
    }
    EXPECT_TRUE(result.steps[0].victims.empty());
    EXPECT_EQ(result.steps[1].victims, expected) << "over " << row.over;
  }
}

TEST(OpenVino, RefusesAreasThatLeaveNoEvictableBlock) {
  // openvino.md#parameters, rule 1, then rule 2.
  auto policy = MakePolicy({"openvino", {{"budget", 160}}});
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(policy.status().message().find("sinks + recent_window must be below budget"),
            std::string::npos)
      << policy.status();
  auto unaligned = MakePolicy({"openvino", {{"budget", 680}}});
  ASSERT_FALSE(unaligned.ok());
  EXPECT_NE(unaligned.status().message().find("budget 680 is not a multiple of block 32"),
            std::string::npos)
      << unaligned.status();
  EXPECT_TRUE(MakePolicy({"openvino", {}}).ok());
}

}  // namespace
}  // namespace kvspec
