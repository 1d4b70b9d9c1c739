// Hand-worked cases from spec/policies/simlayerkv.md: each worked example's
// score and decision, worked from the card's rule (not from this code), the
// short-cache and threshold rules, and the parameter rule.
#include <cstdint>
#include <string>
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using Row = std::vector<float>;
using testing_util::VictimsPerStep;

PolicyConfig Sim(int64_t n_initial, int64_t n_recent, int64_t n_last,
                 int64_t threshold_ppm) {
  return {"simlayerkv",
          {{"n_initial", n_initial},
           {"n_recent", n_recent},
           {"n_last", n_last},
           {"lazy_threshold_ppm", threshold_ppm}}};
}

// A prefill step admitting `admit` positions, with the given query rows
// (head-major; each head's last rows, ascending).
ScenarioStep Prefill(uint32_t admit, std::vector<Row> rows) {
  ScenarioStep step;
  step.admit = admit;
  step.queries = std::move(rows);
  return step;
}

std::vector<std::vector<Position>> Victims(const PolicyConfig& config,
                                       Scenario scenario) {
  const RunResult result = RunScenario(config, scenario);
  EXPECT_TRUE(result.refusal.ok()) << result.refusal;
  return VictimsPerStep(result);
}

// Worked example 1: score 0.25 + (0.125 + 0.25) = 0.625.
const Row kExampleRow = {0.25f, 0.0625f, 0.0625f, 0.125f, 0.25f, 0.25f};

TEST(SimLayerKv, LazyLayerKeepsFirstAndLastNRecentMinusNLast) {
  EXPECT_EQ(Victims(Sim(1, 2, 1, 500000), {"s", {Prefill(6, {kExampleRow})}}),
            (std::vector<std::vector<Position>>{{1, 2, 3, 4}}));
}

TEST(SimLayerKv, ScoreEqualToThresholdIsNotLazy) {
  EXPECT_EQ(Victims(Sim(1, 2, 1, 625000), {"s", {Prefill(6, {kExampleRow})}}),
            (std::vector<std::vector<Position>>{{}}));
  // Just below the score: lazy.
  EXPECT_EQ(Victims(Sim(1, 2, 1, 624999), {"s", {Prefill(6, {kExampleRow})}}),
            (std::vector<std::vector<Position>>{{1, 2, 3, 4}}));
}

TEST(SimLayerKv, ThresholdOneNeverCompresses) {
  // A row summing to 4: the score 3 is above 1.0, and still nothing goes.
  const Row heavy = {1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f};
  EXPECT_EQ(Victims(Sim(1, 2, 1, 1000000), {"s", {Prefill(6, {heavy})}}),
            (std::vector<std::vector<Position>>{{}}));
  EXPECT_EQ(Victims(Sim(1, 2, 1, 999999), {"s", {Prefill(6, {heavy})}}),
            (std::vector<std::vector<Position>>{{1, 2, 3, 4}}));
}

// Worked example 2: two heads, two rows each, a = (0.1875, 0.03125,
// 0.15625, 0.0625, 0, 0.0625); score 0.1875 + 0.125 = 0.3125.
Scenario TwoHeads() {
  Scenario scenario{"s",
                    {Prefill(8, {
                                    // head 0, queries 6 and 7
                                    {0.5f, 0, 0, 0, 0, 0, 0.5f},
                                    {0.25f, 0, 0, 0, 0, 0.25f, 0.25f, 0.25f},
                                    // head 1
                                    {0, 0.125f, 0.125f, 0.25f, 0, 0, 0.5f},
                                    {0, 0, 0.5f, 0, 0, 0, 0, 0.5f},
                                })}};
  scenario.query_heads = 2;
  scenario.kv_heads = 1;
  return scenario;
}

TEST(SimLayerKv, MeanOverHeadsAndRows) {
  EXPECT_EQ(Victims(Sim(1, 3, 2, 500000), TwoHeads()),
            (std::vector<std::vector<Position>>{{}}));
  EXPECT_EQ(Victims(Sim(1, 3, 2, 300000), TwoHeads()),
            (std::vector<std::vector<Position>>{{1, 2, 3, 4, 5, 6}}));
  EXPECT_EQ(Victims(Sim(1, 3, 2, 312500), TwoHeads()),
            (std::vector<std::vector<Position>>{{}}));
  EXPECT_EQ(Victims(Sim(1, 3, 2, 312499), TwoHeads()),
            (std::vector<std::vector<Position>>{{1, 2, 3, 4, 5, 6}}));
}

TEST(SimLayerKv, ShortCacheIsNotJudged) {
  // n = 4 = 1 + 2 + 1: nothing, even at threshold 0.
  EXPECT_EQ(Victims(Sim(1, 2, 1, 0),
                {"s", {Prefill(4, {{0.25f, 0.25f, 0.25f, 0.25f}})}}),
            (std::vector<std::vector<Position>>{{}}));
  // n = 5: judged; score 0.2 + (0.2 + 0.2) > 0, slots 1 .. 3 go.
  EXPECT_EQ(Victims(Sim(1, 2, 1, 0),
                {"s", {Prefill(5, {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}})}}),
            (std::vector<std::vector<Position>>{{1, 2, 3}}));
}

TEST(SimLayerKv, FewerRowsThanNLastReadsTheRowsThereAre) {
  // n_last 2, n_recent 3, one row (query 6) of 7 positions: the prefix is
  // slots 0 .. 4 (n - n_last), a[i] the row's weight (Hq * w = 1 * 1).
  // initial a[0] = 0.5, recent slots 2 .. 4: 0.125 + 0.125 + 0.25; score
  // 1.0, lazy at 0.75 (divided by n_last it would be 0.5, not lazy): slots
  // 1 .. 7 - (3 - 2) - 1 go.
  const Row row = {0.5f, 0.0f, 0.125f, 0.125f, 0.25f, 0.5f, 0.5f};
  EXPECT_EQ(Victims(Sim(1, 3, 2, 750000), {"s", {Prefill(7, {row})}}),
            (std::vector<std::vector<Position>>{{1, 2, 3, 4, 5}}));
}

TEST(SimLayerKv, DecodeStepsNeverEvictAndEachPrefillIsJudged) {
  // A decode step of 6 positions, then a prefill step of 1 whose row
  // (query 6) scores a[0] + a[3] + a[4] = 0.5 + 0 + 0.25 = 0.75 > 0.5 with
  // n_initial 1, n_recent 2, n_last 1: slots 1 .. 7 - 1 - 1, positions 1 .. 5.
  Scenario scenario{"s", {}};
  ScenarioStep decode;
  decode.admit = 6;
  scenario.steps.push_back(decode);
  scenario.steps.push_back(
      Prefill(1, {{0.5f, 0.0f, 0.0f, 0.0f, 0.25f, 0.0f, 0.25f}}));
  ScenarioStep later;
  later.admit = 3;
  scenario.steps.push_back(later);
  EXPECT_EQ(Victims(Sim(1, 2, 1, 500000), scenario),
            (std::vector<std::vector<Position>>{{}, {1, 2, 3, 4, 5}, {}}));
}

TEST(SimLayerKv, NLastMustBeBelowNRecent) {
  for (const auto& [n_last, n_recent] :
       std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {3, 2}}) {
    const auto policy = MakePolicy(Sim(1, n_recent, n_last, 500000));
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
    EXPECT_EQ(SubjectText(SubjectOf(policy.status())), "rule n_last n_recent");
  }
  EXPECT_TRUE(MakePolicy(Sim(1, 2, 1, 500000)).ok());
}

TEST(SimLayerKv, TakesNoBudget) {
  const auto policy = MakePolicy({"simlayerkv", {{"budget", 4}}});
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
}

}  // namespace
}  // namespace kvspec
