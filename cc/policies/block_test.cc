// Hand-worked cases from spec/blocks.md: evicting whole blocks.
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

std::vector<uint64_t> KeptCounts(const RunResult& result) {
  std::vector<uint64_t> counts;
  for (const StepRecord& step : result.steps) counts.push_back(step.kept_count);
  return counts;
}

TEST(Blocks, WindowEvictsPairsOnceABlockPastBudgetCloses) {
  // blocks.md#how-many-blocks-go, the first example: window, budget 4,
  // block 2. Step 4 keeps 5 (the open block holds 4): floor(5/2) - 2 = 0.
  // Step 5 keeps 6: one block, 0 and 1. Steps 7 and 9: 2, 3 and 4, 5.
  const RunResult result =
      RunScenario({"window", {{"budget", 4}, {"block", 2}}},
                  ChunkScenario(std::vector<uint32_t>(10, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {}, {0, 1}, {}, {2, 3}, {}, {4, 5}}));
  EXPECT_EQ(KeptCounts(result),
            (std::vector<uint64_t>{1, 2, 3, 4, 5, 4, 5, 4, 5, 4}));
}

TEST(Blocks, AChunkKeepsBudgetPlusTheOpenBlock) {
  // blocks.md#how-many-blocks-go, the second example: window, budget 32,
  // block 4, a chunk of 61: floor(61/4) - 8 = 7 blocks (0..27) go; 33 kept.
  const RunResult result =
      RunScenario({"window", {{"budget", 32}, {"block", 4}}}, ChunkScenario({61}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  std::vector<Position> victims;
  for (Position p = 0; p < 28; ++p) victims.push_back(p);
  EXPECT_EQ(VictimsPerStep(result), (Victims{victims}));
  EXPECT_EQ(KeptCounts(result), (std::vector<uint64_t>{33}));
}

// blocks.md#ranking-blocks, the h2o example: null step admitting 0..3, then
// two rows; sums 0.75, 0, 0.5, 0.5, 0.25, 0 for positions 0..5.
Scenario H2oExample() {
  Scenario scenario;
  scenario.steps = {{4, std::nullopt},
                    {1, std::vector<float>{0.5f, 0.0f, 0.25f, 0.25f}},
                    {1, std::vector<float>{0.25f, 0.0f, 0.25f, 0.25f, 0.25f}}};
  return scenario;
}

PolicyConfig H2oBlocks(int64_t block_score) {
  return {"h2o",
          {{"budget", 4}, {"recent_window", 2}, {"block", 2},
           {"block_score", block_score}}};
}

TEST(Blocks, H2oBlockScoresSumMeanMax) {
  // Candidates: the blocks of 0 (0.75 + 0) and of 2 (0.5 + 0.5); 4 and 5 are
  // the recent window. sum: 0.75 < 1.0, 0 and 1 go. mean: 0.375 < 0.5, the
  // same. max: 0.75 > 0.5, 2 and 3 go.
  for (const auto& [score, victims] :
       std::vector<std::pair<int64_t, std::vector<Position>>>{
           {0, {0, 1}}, {1, {0, 1}}, {2, {2, 3}}}) {
    const RunResult result = RunScenario(H2oBlocks(score), H2oExample());
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, victims}))
        << "block_score " << score;
  }
  // Without blocks step 1 already evicts 1 (sum 0 among 0, 1, 2).
  Scenario first_two = H2oExample();
  first_two.steps.pop_back();
  const RunResult single = RunScenario(
      {"h2o", {{"budget", 4}, {"recent_window", 2}}}, first_two);
  ASSERT_TRUE(single.refusal.ok()) << single.refusal;
  EXPECT_EQ(VictimsPerStep(single), (Victims{{}, {1}}));
}

TEST(Blocks, TheCutRanksBlocksByFirstPosition) {
  // blocks.md#the-cut: the h2o example's step 2, sum: block 0 (0.75), then
  // block 2 (1.0); one victim block.
  auto policy = MakePolicy(H2oBlocks(0));
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<float> row1 = {0.5f, 0.0f, 0.25f, 0.25f};
  const std::vector<float> row2 = {0.25f, 0.0f, 0.25f, 0.25f, 0.25f};
  ASSERT_TRUE((*policy)->Step({0, 4, std::nullopt}).ok());
  ASSERT_TRUE((*policy)->Step({4, 1, absl::MakeConstSpan(row1)}).ok());
  EvictionDetail detail;
  const auto victims =
      (*policy)->Step({5, 1, absl::MakeConstSpan(row2)}, &detail);
  ASSERT_TRUE(victims.ok()) << victims.status();
  EXPECT_EQ(*victims, (std::vector<Position>{0, 1}));
  EXPECT_EQ(detail.victims, 1u);
  EXPECT_EQ(detail.ranked,
            (std::vector<RankedCandidate>{{0, 0.75}, {2, 1.0}}));
}

TEST(Blocks, EqualBlockScoresEvictTheOlderBlock) {
  // blocks.md#ranking-blocks, ties: h2o, budget 4, recent_window 2, block 2.
  // Step 0 admits 0..3 (null); step 1 records (0.5, 0, 0.25, 0.25) and
  // admits 4 (5 kept, none goes); step 2 records zeros and admits 5: 6 kept,
  // one block goes. Candidates: the blocks of 0 (0.5 + 0) and 2
  // (0.25 + 0.25). sum and mean tie (0.5, 0.25 each): the older, 0 and 1,
  // goes. max: 0.5 against 0.25: 2 and 3 go.
  Scenario scenario;
  scenario.steps = {{4, std::nullopt},
                    {1, std::vector<float>{0.5f, 0.0f, 0.25f, 0.25f}},
                    {1, std::vector<float>(5, 0.0f)}};
  for (const auto& [score, victims] :
       std::vector<std::pair<int64_t, std::vector<Position>>>{
           {0, {0, 1}}, {1, {0, 1}}, {2, {2, 3}}}) {
    const RunResult result = RunScenario(H2oBlocks(score), scenario);
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, victims}))
        << "block_score " << score;
  }
}

TEST(Blocks, StreamingLlmKeepsTheSinksBlock) {
  // blocks.md#ranking-blocks, the streamingllm example: budget 8, sinks 2,
  // block 2. Step 9 closes a fifth block: the block of 2 and 3 goes.
  const RunResult result = RunScenario(
      {"streamingllm", {{"budget", 8}, {"sinks", 2}, {"block", 2}}},
      ChunkScenario(std::vector<uint32_t>(12, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {}, {}, {}, {}, {}, {2, 3}, {}, {4, 5}}));
}

TEST(Blocks, SlackThenWholeBlocks) {
  // blocks.md#triggers, the example: window, budget 4, block 2, slack 2.
  // Step 6 keeps 7 > 6: floor(7/2) - 2 = 1 block (0, 1). Step 7 keeps 6
  // (no firing); step 8 keeps 7 and evicts 2, 3.
  const RunResult result =
      RunScenario({"window", {{"budget", 4}, {"block", 2}, {"slack", 2}}},
                  ChunkScenario(std::vector<uint32_t>(9, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {}, {}, {0, 1}, {}, {2, 3}}));
}

TEST(Blocks, RandomDrawsBlocks) {
  // random, seed 42, budget 2, recent_window 0, block 2, one position a
  // step. rng.md#golden-outputs: seed 42's first three outputs start with
  // the bits 00, 01, 10, so Uniform(2) draws 0, 0, 1. Step 3 keeps 4: one
  // block of two candidates, index 0: 0 and 1 go. Step 5: blocks of 2 and
  // 4, index 0: 2 and 3. Step 7: blocks of 4 and 6, index 1: 6 and 7.
  PolicyConfig config{"random",
                      {{"budget", 2}, {"recent_window", 0}, {"block", 2}}};
  config.seed = 42;
  const RunResult result =
      RunScenario(config, ChunkScenario(std::vector<uint32_t>(8, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {0, 1}, {}, {2, 3}, {}, {6, 7}}));
}

TEST(Blocks, BlockOneChangesNothing) {
  // blocks.md#parameters: with block 1, every block_score ranks as the
  // position's own score.
  for (int64_t score : {0, 1, 2}) {
    const RunResult with = RunScenario(
        {"h2o", {{"budget", 4}, {"recent_window", 2}, {"block", 1},
                 {"block_score", score}}},
        H2oExample());
    const RunResult without = RunScenario(
        {"h2o", {{"budget", 4}, {"recent_window", 2}}}, H2oExample());
    EXPECT_EQ(VictimsPerStep(with), VictimsPerStep(without));
  }
}

// The subject of the refusal of `config`, or "" when it is built.
std::string RefusalSubject(const PolicyConfig& config) {
  const auto policy = MakePolicy(config);
  if (policy.ok()) return "";
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  return SubjectText(SubjectOf(policy.status()));
}

TEST(Blocks, RefusalsNameTheirRules) {
  // blocks.md#rules, 1: budget, then recent_window, then sinks.
  EXPECT_EQ(RefusalSubject({"window", {{"budget", 6}, {"block", 4}}}),
            "rule block budget");
  EXPECT_EQ(RefusalSubject({"window", {{"budget", 2}, {"block", 4}}}),
            "rule block budget");
  EXPECT_EQ(RefusalSubject({"h2o", {{"budget", 8}, {"recent_window", 2},
                                    {"block", 4}}}),
            "rule block recent_window");
  EXPECT_EQ(RefusalSubject({"h2o", {{"budget", 6}, {"recent_window", 2},
                                    {"block", 4}}}),
            "rule block budget");
  EXPECT_EQ(RefusalSubject({"streamingllm", {{"budget", 8}, {"sinks", 1},
                                             {"block", 2}}}),
            "rule block sinks");
  // 2: the first of ratio_ppm, adaptive, evict_at, context_shift,
  // window_budget not 0.
  EXPECT_EQ(RefusalSubject({"tova", {{"budget", 8}, {"recent_window", 0},
                                     {"ratio_ppm", 500000}, {"block", 2}}}),
            "rule block ratio_ppm");
  EXPECT_EQ(RefusalSubject({"h2o", {{"budget", 8}, {"recent_window", 0},
                                    {"adaptive", 1}, {"block", 2}}}),
            "rule block adaptive");
  EXPECT_EQ(RefusalSubject({"window", {{"budget", 8}, {"evict_at", 1},
                                       {"block", 2}}}),
            "rule block evict_at");
  EXPECT_EQ(RefusalSubject({"streamingllm", {{"budget", 8}, {"sinks", 2},
                                             {"context_shift", 1},
                                             {"block", 2}}}),
            "rule block context_shift");
  EXPECT_EQ(RefusalSubject({"snapkv", {{"budget", 8}, {"recent_window", 0},
                                       {"window_budget", 1}, {"block", 2}}}),
            "rule block window_budget");
  // Checked after every other rule: a trigger rule first.
  EXPECT_EQ(RefusalSubject({"window", {{"budget", 6}, {"slack", 1},
                                       {"evict_at", 1}, {"block", 4}}}),
            "rule slack evict_at");
  // Ranges; block_score only on the score-based policies; full takes none.
  EXPECT_EQ(RefusalSubject({"window", {{"block", 0}}}), "range block");
  EXPECT_EQ(RefusalSubject({"window", {{"block", 65537}}}), "range block");
  EXPECT_EQ(RefusalSubject({"tova", {{"block_score", 3}}}), "range block_score");
  EXPECT_EQ(RefusalSubject({"window", {{"block_score", 1}}}),
            "unknown block_score");
  EXPECT_EQ(RefusalSubject({"full", {{"block", 2}}}), "unknown block");
  // Accepted: multiples, and block 1 whatever the rest.
  EXPECT_EQ(RefusalSubject({"h2o", {{"budget", 8}, {"recent_window", 4},
                                    {"block", 4}}}),
            "");
  EXPECT_EQ(RefusalSubject({"h2o", {{"budget", 7}, {"recent_window", 3},
                                    {"ratio_ppm", 0}, {"block", 1}}}),
            "");
}

}  // namespace
}  // namespace kvspec
