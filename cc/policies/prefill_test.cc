// Hand-worked cases from spec/prefill.md and the cards' "At prefill"
// sections. Every expected value below is worked from the spec's text.
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

// One step admitting `admit` positions with these query rows.
ScenarioStep Prefill(uint32_t admit, std::vector<Row> queries) {
  ScenarioStep step;
  step.admit = admit;
  step.queries = std::move(queries);
  return step;
}

RunResult RunSteps(const PolicyConfig& config, std::vector<ScenarioStep> steps) {
  return RunScenario(config, Scenario{"s", std::move(steps)});
}

// prefill.md#budgets-from-a-ratio: n = 20, ratio 0.9: 1 - 0.9 rounds to
// 0.09999999999999998, times 20 is 1.9999999999999996, so B = 1 (exact
// arithmetic would give 2). streamingllm with no sinks keeps the newest.
TEST(PrefillRatio, Binary64RoundingDecidesTheBudget) {
  const RunResult result =
      RunSteps({"streamingllm", {{"budget", 4}, {"sinks", 0}, {"ratio_ppm", 900000},
                            {"prefill_only", 1}}},
          {Prefill(20, {Row(20, 0.0f)})});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 1u);
  EXPECT_EQ(result.steps[0].kept_count, 1u);
  EXPECT_EQ(result.steps[0].victims.size(), 19u);
}

TEST(PrefillRatio, HalfOfTwentyIsTen) {
  const RunResult result =
      RunSteps({"streamingllm", {{"budget", 4}, {"sinks", 2}, {"ratio_ppm", 500000},
                            {"prefill_only", 1}}},
          {Prefill(20, {Row(20, 0.0f)})});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  // Sinks 0, 1 and the latest 8: 12..19.
  EXPECT_EQ(result.steps[0].victims,
            (std::vector<Position>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

// streamingllm.md#at-prefill: n = 10, ratio 0.8: 10 x 0.19999999999999996
// floors to 1, below the 4 sinks: every non-sink goes and the lowest sinks,
// keeping sink 3.
TEST(PrefillRatio, BudgetBelowTheSinksKeepsTheHighestSinks) {
  const RunResult result =
      RunSteps({"streamingllm", {{"budget", 5}, {"sinks", 4}, {"ratio_ppm", 800000},
                            {"prefill_only", 1}}},
          {Prefill(10, {Row(10, 0.0f)})});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(result.steps[0].victims,
            (std::vector<Position>{0, 1, 2, 4, 5, 6, 7, 8, 9}));
}

// streamingllm.md#how-it-works: after a ratio budget kept sink 3 alone, 3
// is still a sink at later steps and no later position becomes one. Budget
// 5: decode steps admit 10..13 (kept 3, 10..13), then 14: the lowest
// non-sink, 10, goes.
TEST(PrefillRatio, SinksStaySinksAfterARatioEvictedSome) {
  std::vector<ScenarioStep> steps = {Prefill(10, {Row(10, 0.0f)})};
  for (int i = 0; i < 5; ++i) steps.push_back({1, std::nullopt});
  const RunResult result = RunSteps(
      {"streamingllm", {{"budget", 5}, {"sinks", 4}, {"ratio_ppm", 800000}}},
      steps);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{0, 1, 2, 4, 5, 6, 7, 8, 9}, {}, {}, {}, {}, {10}}));
}

// prefill.md#when-a-policy-evicts: with prefill_only 1 a decode step never
// evicts; the prefill step evicts by budget.
TEST(PrefillOnly, DecodeStepsNeverEvict) {
  const RunResult h2o =
      RunSteps({"h2o", {{"budget", 2}, {"recent_window", 0}, {"prefill_only", 1}}},
          {Prefill(3, {Row{0.5f}, Row{0.25f, 0.75f},
                       Row{0.5f, 0.25f, 0.25f}}),
           {1, Row{0.25f, 0.5f, 0.25f}},
           {1, Row{0.25f, 0.5f, 0.25f, 0.0f}}});
  ASSERT_TRUE(h2o.refusal.ok()) << h2o.refusal;
  EXPECT_EQ(VictimsPerStep(h2o), (Victims{{2}, {}, {}}));
  EXPECT_EQ(h2o.steps[2].kept_count, 4u);
}

// h2o.md#at-prefill, the card's example.
TEST(H2oPrefill, RawAndNormalizedObservedAttention) {
  const std::vector<Row> first = {Row{0.5f}, Row{0.25f, 0.75f},
                                  Row{0.5f, 0.25f, 0.25f}};
  const std::vector<Row> second = {Row{0.5f}, Row{0.25f, 0.75f},
                                   Row{0.125f, 0.25f, 0.625f}};
  const auto run = [](std::vector<Row> rows, int64_t normalize) {
    return RunSteps({"h2o", {{"budget", 2}, {"recent_window", 0},
                        {"normalize", normalize}}},
               {Prefill(3, std::move(rows))});
  };
  EXPECT_EQ(VictimsPerStep(run(first, 0)), (Victims{{2}}));
  EXPECT_EQ(VictimsPerStep(run(first, 1)), (Victims{{2}}));
  // Raw 0.875, 1.0, 0.625: 2 goes. Normalized 0.875/3, 0.5, 0.625: 0 goes.
  EXPECT_EQ(VictimsPerStep(run(second, 0)), (Victims{{2}}));
  EXPECT_EQ(VictimsPerStep(run(second, 1)), (Victims{{0}}));
}

// h2o.md#at-prefill: decoding continues from the prefill sums.
TEST(H2oPrefill, DecodeAccumulatesOntoThePrefillSums) {
  const RunResult result = RunSteps(
      {"h2o", {{"budget", 2}, {"recent_window", 1}}},
      {Prefill(3, {Row{0.5f}, Row{0.25f, 0.75f}, Row{0.5f, 0.25f, 0.25f}}),
       {1, Row{0.0f, 0.5f, 0.0f}}});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  // Prefill, recent window 1 (position 2 protected): sums 1.25, 1.0: 1 goes.
  // Decode: kept 0, 2 and the new 3 (protected); 0: 1.25 + 0.0 = 1.25,
  // 2: 0.25 + 0.0 = 0.25: 2 goes. Had decoding restarted the sums, 0 and 2
  // would both be 0.0 and the lower, 0, would go.
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1}, {2}}));
}

// tova.md#at-prefill, the card's example.
TEST(TovaPrefill, LastQueryRowWithAndWithoutProtectingTheNewest) {
  const auto run = [](int64_t protect) {
    return RunSteps({"tova", {{"budget", 2}, {"recent_window", 0},
                         {"protect_newest", protect}}},
               {Prefill(3, {Row{0.25f, 0.5f, 0.125f}})});
  };
  EXPECT_EQ(VictimsPerStep(run(0)), (Victims{{2}}));
  EXPECT_EQ(VictimsPerStep(run(1)), (Victims{{0}}));
}

// snapkv.md#at-prefill, the card's example: window 3, 4; prefix sums 0.75,
// 0.25, 0.75.
std::vector<ScenarioStep> SnapScenario() {
  return {Prefill(5, {Row{0.25f, 0.125f, 0.5f, 0.125f},
                      Row{0.5f, 0.125f, 0.25f, 0.0625f, 0.0625f}})};
}
PolicyConfig Snap(int64_t budget, int64_t outside, int64_t kernel = 1,
                  int64_t pooling = 0) {
  return {"snapkv", {{"budget", budget}, {"recent_window", 0},
                     {"obs_window", 2}, {"pool_kernel", kernel},
                     {"pooling", pooling}, {"window_budget", outside}}};
}

TEST(SnapKvPrefill, WindowInsideTheBudget) {
  EXPECT_EQ(VictimsPerStep(RunSteps(Snap(3, 0), SnapScenario())), (Victims{{0, 1}}));
  // Budget 1: the prefix, then the lower window position.
  EXPECT_EQ(VictimsPerStep(RunSteps(Snap(1, 0), SnapScenario())),
            (Victims{{0, 1, 2, 3}}));
}

TEST(SnapKvPrefill, WindowOutsideTheBudget) {
  const RunResult result = RunSteps(Snap(2, 1), SnapScenario());
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1}}));
  EXPECT_EQ(result.steps[0].kept_count, 4u);
}

// snapkv.md#pooling, avg: prefix sums 0.75, 0.25, 0.75 with kernel 3 pool
// to 1.0/3, 1.75/3, 1.0/3 (the ends divided by 3, not 2): 0 and 2 tie and
// both go at budget 3. Max pooling gives 0.75 everywhere: 0 and 1 go.
TEST(SnapKvPrefill, AveragePoolingCountsThePadding) {
  EXPECT_EQ(VictimsPerStep(RunSteps(Snap(3, 0, 3, 1), SnapScenario())),
            (Victims{{0, 2}}));
  EXPECT_EQ(VictimsPerStep(RunSteps(Snap(3, 0, 3, 0), SnapScenario())),
            (Victims{{0, 1}}));
}

// snapkv.md#at-prefill: window_reduce 1 divides each sum by w. Sums 0.75,
// 0.25, 0.75 over a window of 2 become 0.375, 0.125, 0.375: same victims.
TEST(SnapKvPrefill, WindowMeanRanksAsTheSumHere) {
  PolicyConfig config = Snap(3, 0);
  config.parameters.push_back({"window_reduce", 1});
  EXPECT_EQ(VictimsPerStep(RunSteps(config, SnapScenario())), (Victims{{0, 1}}));
}

// prefill.md#checks.
TEST(PrefillChecks, QueryRowsAreRefusedByShapeThenWeight) {
  const PolicyConfig h2o = {"h2o", {{"budget", 2}, {"recent_window", 0}}};
  const auto category = [&](std::vector<ScenarioStep> steps) {
    return CategoryOf(RunSteps(h2o, std::move(steps)).refusal);
  };
  // A row of q + 2 weights (a non-causal row).
  EXPECT_EQ(category({Prefill(2, {Row{0.5f, 0.5f, 0.5f}})}),
            ErrorCategory::kAttentionLength);
  // Three rows for a step admitting two.
  EXPECT_EQ(category({Prefill(2, {Row{0.5f}, Row{0.5f}, Row{0.5f}})}),
            ErrorCategory::kAttentionLength);
  // A row beside the query rows.
  ScenarioStep both = Prefill(1, {Row{0.5f, 0.5f}});
  both.attention = Row{0.5f};
  EXPECT_EQ(category({{1, std::nullopt}, both}), ErrorCategory::kAttentionLength);
  // A NaN in the first row and a short second row: the length first.
  EXPECT_EQ(category({Prefill(2, {Row{std::nanf("")}, Row{0.5f}})}),
            ErrorCategory::kAttentionLength);
  EXPECT_EQ(category({Prefill(2, {Row{std::nanf("")}, Row{0.5f, 0.5f}})}),
            ErrorCategory::kAttentionValue);
  EXPECT_EQ(category({Prefill(2, {Row{0.5f}, Row{0.5f, -0.0f}})}),
            ErrorCategory::kAttentionValue);
}

// prefill.md#when-a-policy-evicts, the rules relating parameters.
TEST(PrefillRules, RatioNeedsNoRecentWindowAndAdaptiveNoPrefill) {
  EXPECT_EQ(CategoryOf(MakePolicy({"h2o", {{"ratio_ppm", 500000}}}).status()),
            ErrorCategory::kInvalidParameter);
  EXPECT_TRUE(
      MakePolicy({"h2o", {{"ratio_ppm", 500000}, {"recent_window", 0}}}).ok());
  EXPECT_EQ(CategoryOf(MakePolicy({"tova", {{"adaptive", 1},
                                            {"prefill_only", 1}}})
                           .status()),
            ErrorCategory::kInvalidParameter);
  EXPECT_EQ(CategoryOf(MakePolicy({"snapkv", {{"adaptive", 1},
                                              {"window_budget", 1}}})
                           .status()),
            ErrorCategory::kInvalidParameter);
}

// heads.md with prefill.md#what-a-policy-sees: two query heads in one KV
// group; each head's raw sums, then the mean. Head 0 rows as the card's
// first example (sums 1.25, 1.0, 0.25), head 1 rows (1.0), (0.0, 0.25),
// (0.0, 0.0, 1.0) (sums 1.0, 0.25, 1.0): means 1.125, 0.625, 0.625; 1 and
// 2 tie and the lower, 1, goes.
TEST(H2oPrefill, HeadsCombineAfterEachHeadSums) {
  Scenario scenario{"s", {Prefill(3, {Row{0.5f}, Row{0.25f, 0.75f},
                                      Row{0.5f, 0.25f, 0.25f}, Row{1.0f},
                                      Row{0.0f, 0.25f}, Row{0.0f, 0.0f, 1.0f}})}};
  scenario.query_heads = 2;
  scenario.kv_heads = 1;
  const RunResult result = RunScenario(
      {"h2o", {{"budget", 2}, {"recent_window", 0}}}, scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1}}));
}

}  // namespace
}  // namespace kvspec
