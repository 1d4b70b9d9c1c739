// Hand-worked cases from spec/prefill.md and the cards' "At prefill"
// sections. Every expected value below is worked from the spec's text.
#include <cmath>
#include <string>
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

// prefill.md#column-totals: a prefill step with query rows and totals
// over its last `rows` queries.
ScenarioStep WithTotals(ScenarioStep step, std::vector<std::vector<double>> totals,
                        uint32_t rows) {
  step.totals = std::move(totals);
  step.total_rows = rows;
  return step;
}

// h2o.md#at-prefill, with column totals: the card's two examples as
// totals over all 3 queries (1.25, 1.0, 0.25 and 0.875, 1.0, 0.625), beside
// one query row (0, 0, 1) that h2o must ignore (read alone, that row would
// make 0 go, raw or normalized, since 0 and 1 tie at 0.0).
TEST(H2oPrefill, TotalsReplaceTheRows) {
  const auto run = [](std::vector<double> totals, int64_t normalize) {
    return RunSteps({"h2o", {{"budget", 2}, {"recent_window", 0},
                             {"normalize", normalize}}},
                    {WithTotals(Prefill(3, {Row{0.0f, 0.0f, 1.0f}}),
                                {std::move(totals)}, 3)});
  };
  EXPECT_EQ(VictimsPerStep(run({1.25, 1.0, 0.25}, 0)), (Victims{{2}}));
  EXPECT_EQ(VictimsPerStep(run({1.25, 1.0, 0.25}, 1)), (Victims{{2}}));
  // Raw 0.875, 1.0, 0.625: 2 goes. Normalized by min(3, 3 - p) = 3, 2, 1:
  // 0.2916..., 0.5, 0.625: 0 goes.
  EXPECT_EQ(VictimsPerStep(run({0.875, 1.0, 0.625}, 0)), (Victims{{2}}));
  EXPECT_EQ(VictimsPerStep(run({0.875, 1.0, 0.625}, 1)), (Victims{{0}}));
  // The same rows carried whole give the same victims (the rows' example
  // above).
}

// prefill.md#column-totals: normalize divides by min(R, a + c - p), R the
// totals' queries, not c. A prefill of 4, R = 2, totals 0.5, 0.4, 0.75,
// 0.3: divisors 2, 2, 2, 1 give 0.25, 0.2, 0.375, 0.3 and 1 goes; divisors
// from c (4, 3, 2, 1) would give 0.125, 0.1333..., 0.375, 0.3 and 0 would.
TEST(H2oPrefill, TotalsNormalizeByTheirOwnRows) {
  const RunResult result = RunSteps(
      {"h2o", {{"budget", 3}, {"recent_window", 0}, {"normalize", 1}}},
      {WithTotals(Prefill(4, {Row{0.25f, 0.25f, 0.25f, 0.25f}}),
                  {{0.5, 0.4, 0.75, 0.3}}, 2)});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1}}));
}

// prefill.md#column-totals: totals gathered at the kept positions after
// admission. Budget 2, no recent window: step 0 admits 0..2 with null
// attention and evicts 0 (all 0.0, lowest position). Step 1 admits 3 and 4
// with totals over R = 2 queries, 9.0 (position 0, no longer kept),
// 0.3, 0.25, 0.75, 0.2; kept 1..4. Raw: 4 (0.2) and 2 (0.25) go.
// Normalized, divisors min(2, 5 - p) = 2, 2, 2, 1: 0.15, 0.125, 0.375, 0.2:
// 2 and 1 go.
TEST(H2oPrefill, TotalsAreGatheredAtTheKeptPositions) {
  const auto run = [](int64_t normalize) {
    return RunSteps({"h2o", {{"budget", 2}, {"recent_window", 0},
                             {"normalize", normalize}}},
                    {{3, std::nullopt},
                     WithTotals(Prefill(2, {Row(5, 0.25f)}),
                                {{9.0, 0.3, 0.25, 0.75, 0.2}}, 2)});
  };
  EXPECT_EQ(VictimsPerStep(run(0)), (Victims{{0}, {2, 4}}));
  EXPECT_EQ(VictimsPerStep(run(1)), (Victims{{0}, {1, 2}}));
}

// prefill.md#column-totals: only h2o reads totals; tova and snapkv decide
// by the query rows as without them.
TEST(PrefillTotals, OtherPoliciesIgnoreThem) {
  for (const char* name : {"tova", "snapkv", "streamingllm"}) {
    PolicyConfig config = {name, {{"budget", 2}, {"recent_window", 0}}};
    if (std::string(name) == "streamingllm") config.parameters = {{"budget", 2}, {"sinks", 1}};
    const Row last = {0.25f, 0.5f, 0.125f};
    const RunResult plain = RunSteps(config, {Prefill(3, {last})});
    const RunResult with = RunSteps(
        config, {WithTotals(Prefill(3, {last}), {{0.0, 9.0, 9.0}}, 1)});
    ASSERT_TRUE(plain.refusal.ok()) << name << plain.refusal;
    ASSERT_TRUE(with.refusal.ok()) << name << with.refusal;
    EXPECT_EQ(VictimsPerStep(with), VictimsPerStep(plain)) << name;
  }
}

// prefill.md#their-checks: the totals' shape after the query rows' shape
// (check 3), their values after the rows' weights (check 4).
TEST(PrefillChecks, TotalsAreRefusedByShapeThenValue) {
  const PolicyConfig h2o = {"h2o", {{"budget", 2}, {"recent_window", 0}}};
  const auto category = [&](std::vector<ScenarioStep> steps) {
    return CategoryOf(RunSteps(h2o, std::move(steps)).refusal);
  };
  const ScenarioStep rows = Prefill(2, {Row{0.5f, 0.5f}});
  // Well formed: R 1 or 2, two values.
  EXPECT_TRUE(RunSteps(h2o, {WithTotals(rows, {{0.5, 0.5}}, 2)}).refusal.ok());
  EXPECT_TRUE(RunSteps(h2o, {WithTotals(rows, {{0.5, 0.5}}, 1)}).refusal.ok());
  // Totals without query rows, even beside an attention row.
  ScenarioStep bare;
  bare.admit = 2;
  EXPECT_EQ(category({WithTotals(bare, {{0.5, 0.5}}, 2)}),
            ErrorCategory::kAttentionLength);
  ScenarioStep with_row = {1, Row{0.5f}};
  EXPECT_EQ(category({{1, std::nullopt}, WithTotals(with_row, {{0.5, 0.5}}, 1)}),
            ErrorCategory::kAttentionLength);
  // total_rows 0 with totals, above admit, or set without totals.
  EXPECT_EQ(category({WithTotals(rows, {{0.5, 0.5}}, 0)}),
            ErrorCategory::kAttentionLength);
  EXPECT_EQ(category({WithTotals(rows, {{0.5, 0.5}}, 3)}),
            ErrorCategory::kAttentionLength);
  EXPECT_EQ(category({WithTotals(rows, {}, 1)}), ErrorCategory::kAttentionLength);
  // One value short, one too many, two lists for one head.
  EXPECT_EQ(category({WithTotals(rows, {{0.5}}, 2)}),
            ErrorCategory::kAttentionLength);
  EXPECT_EQ(category({WithTotals(rows, {{0.5, 0.5, 0.5}}, 2)}),
            ErrorCategory::kAttentionLength);
  EXPECT_EQ(category({WithTotals(rows, {{0.5, 0.5}, {0.5, 0.5}}, 2)}),
            ErrorCategory::kAttentionLength);
  // Values: NaN, infinity, -0.0, a negative.
  for (double bad : {std::nan(""), HUGE_VAL, -0.0, -0.5}) {
    EXPECT_EQ(category({WithTotals(rows, {{0.5, bad}}, 2)}),
              ErrorCategory::kAttentionValue)
        << bad;
  }
  // Order: a short totals list beside a NaN query weight is a length
  // fault (check 3 before 4); a short query row beside a NaN total too.
  EXPECT_EQ(category({WithTotals(Prefill(2, {Row{0.5f, std::nanf("")}}),
                                 {{0.5}}, 2)}),
            ErrorCategory::kAttentionLength);
  EXPECT_EQ(category({WithTotals(Prefill(2, {Row{0.5f}}),
                                 {{0.5, std::nan("")}}, 2)}),
            ErrorCategory::kAttentionLength);
}

}  // namespace
}  // namespace kvspec
