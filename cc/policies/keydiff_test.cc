// Hand-worked cases from spec/policies/keydiff.md.
#include <cmath>
#include <cstdint>
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
using Keys = std::vector<float>;

PolicyConfig KeyDiff(int64_t budget, int64_t recent_window = 0) {
  return {"keydiff", {{"budget", budget}, {"recent_window", recent_window}}};
}

// One head, d = 2, one position a step, null attention: the card's shape.
Scenario OneHeadSteps(const std::vector<Keys>& keys) {
  Scenario scenario;
  scenario.id = "keydiff";
  scenario.head_dim = 2;
  for (const Keys& key : keys) {
    ScenarioStep step;
    step.admit = 1;
    step.keys = {key};
    scenario.steps.push_back(step);
  }
  return scenario;
}

TEST(KeyDiffPolicy, TheKeyNearestTheAnchorGoes) {
  // keydiff.md#how-it-works: (1, 0), (0, 2), (3, 0): unit keys (1, 0),
  // (0, 1), (1, 0), mean (2/3, 1/3), anchor (2, 1) / sqrt(5). Scores
  // -2/sqrt(5), -1/sqrt(5), -2/sqrt(5): 0 and 2 tie lowest, 0 goes.
  RunOptions options;
  options.record_cut = true;
  const RunResult result =
      RunScenario(KeyDiff(2), OneHeadSteps({{1, 0}, {0, 2}, {3, 0}}), options);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {0}}));
  // The cut: 0, then 2 at the same score, then 1.
  ASSERT_EQ(result.steps[2].cut.size(), 3u);
  const double two = 2.0 / std::sqrt(5.0), one = 1.0 / std::sqrt(5.0);
  EXPECT_EQ(result.steps[2].cut[0].position, 0u);
  EXPECT_NEAR(result.steps[2].cut[0].score, -two, 1e-15);
  EXPECT_EQ(result.steps[2].cut[1].position, 2u);
  EXPECT_EQ(result.steps[2].cut[1].score, result.steps[2].cut[0].score);
  EXPECT_NEAR(result.steps[2].cut[2].score, -one, 1e-15);
}

TEST(KeyDiffPolicy, TheRecentWindowCountsInTheAnchor) {
  // recent_window 1: 2 is protected; the candidates 0 (-2/sqrt(5)) and 1
  // (-1/sqrt(5)) rank by the anchor position 2's key still shapes: 0 goes.
  // Without position 2's key in the anchor (kept (1, 0), (0, 1) alone, the
  // anchor (1, 1)/sqrt(2)) 0 and 1 would tie and 0 go too; with keys
  // (0, 1), (1, 0), (3, 0) the anchor leans to (1, 0) and 1 goes.
  EXPECT_EQ(VictimsPerStep(RunScenario(
                KeyDiff(2, 1), OneHeadSteps({{1, 0}, {0, 2}, {3, 0}}))),
            (Victims{{}, {}, {0}}));
  EXPECT_EQ(VictimsPerStep(RunScenario(
                KeyDiff(2, 1), OneHeadSteps({{0, 1}, {1, 0}, {3, 0}}))),
            (Victims{{}, {}, {1}}));
}

TEST(KeyDiffPolicy, ScoresMoveWithTheCache) {
  // keydiff.md, a second step: (1, 0), (0, 1), (0, 1) with budget 2: the
  // anchor (1, 2)/sqrt(5); 1 and 2 tie lowest, 1 goes. Then (1, 0): kept
  // keys (1, 0), (0, 1), (1, 0), the anchor (2, 1)/sqrt(5): 0 and 3 tie
  // lowest, 0 goes (its score was the highest at the step before).
  EXPECT_EQ(VictimsPerStep(RunScenario(
                KeyDiff(2), OneHeadSteps({{1, 0}, {0, 1}, {0, 1}, {1, 0}}))),
            (Victims{{}, {}, {1}, {0}}));
}

TEST(KeyDiffPolicy, AZeroKeyHasAZeroUnitAndScoresPlusZero) {
  // A zero key's unit is zeros: its dot product with any anchor is +0.0,
  // and its score +0.0 (sign bit clear). Keys (0, 0), (1, 0), (1, 0) with
  // budget 2: unit keys 0, (1, 0), (1, 0), mean (2/3, 0), anchor (1, 0):
  // scores +0.0, -1, -1: 1 goes.
  RunOptions options;
  options.record_cut = true;
  const RunResult result =
      RunScenario(KeyDiff(2), OneHeadSteps({{0, 0}, {1, 0}, {1, 0}}), options);
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {1}}));
  ASSERT_EQ(result.steps[2].cut.size(), 3u);
  EXPECT_EQ(result.steps[2].cut[0].score, -1.0);
  EXPECT_EQ(result.steps[2].cut[2].position, 0u);
  EXPECT_EQ(result.steps[2].cut[2].score, 0.0);
  EXPECT_FALSE(std::signbit(result.steps[2].cut[2].score));
  // Every key zero: the mean is zeros, the anchor zeros, every score +0.0:
  // a tie, the lowest position goes.
  EXPECT_EQ(VictimsPerStep(RunScenario(
                KeyDiff(1), OneHeadSteps({{0, 0}, {0, -0.0f}}))),
            (Victims{{}, {0}}));
}

TEST(KeyDiffPolicy, LayerSetCombinesItsKvHeads) {
  // keydiff.md#several-kv-heads: KV head 0's keys (1, 0), (0, 1), (2, 1):
  // unit keys (1, 0), (0, 1), (2, 1)/sqrt(5), mean about (0.632, 0.482),
  // scores about -0.794, -0.607, -0.982. KV head 1's (2, 1), (1, 2),
  // (-1, 1): scores about -0.691, -0.986, -0.466. mean: -0.743, -0.796,
  // -0.724, 1 goes; max: -0.691, -0.607, -0.466, 0 goes; sum as mean.
  // kv_head sets: set 0 evicts 2, set 1 evicts 1.
  Scenario scenario;
  scenario.id = "layer";
  scenario.query_heads = 2;
  scenario.kv_heads = 2;
  scenario.head_dim = 2;
  ScenarioStep step;
  step.admit = 3;
  step.keys = {Keys{1, 0, 0, 1, 2, 1}, Keys{2, 1, 1, 2, -1, 1}};
  scenario.steps.push_back(step);
  const auto run = [&scenario](int64_t aggregation) {
    return VictimsPerStep(RunScenario(
        {"keydiff", {{"budget", 2}, {"granularity", 0},
                     {"aggregation", aggregation}}},
        scenario));
  };
  EXPECT_EQ(run(0), (Victims{{1}}));
  EXPECT_EQ(run(1), (Victims{{0}}));
  EXPECT_EQ(run(2), (Victims{{1}}));
  const RunResult sets = RunScenario({"keydiff", {{"budget", 2}}}, scenario);
  ASSERT_TRUE(sets.refusal.ok()) << sets.refusal;
  ASSERT_EQ(sets.steps[0].sets.size(), 2u);
  EXPECT_EQ(sets.steps[0].sets[0].victims, (std::vector<Position>{2}));
  EXPECT_EQ(sets.steps[0].sets[1].victims, (std::vector<Position>{1}));
}

TEST(KeyDiffPolicy, PrefillRatio) {
  // keydiff.md#at-prefill: keys (1, 0), (2, 0), (0, 1), (1, 1), ratio_ppm
  // 500000: budget 2. Unit keys (1, 0), (1, 0), (0, 1), (1, 1)/sqrt(2);
  // scores about -0.845, -0.845, -0.533, -0.975: 3 and 0 go. A decode step
  // after it (prefill_only 1) evicts nothing.
  Scenario scenario = OneHeadSteps({});
  ScenarioStep prefill;
  prefill.admit = 4;
  prefill.queries = {std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}};
  prefill.keys = {Keys{1, 0, 2, 0, 0, 1, 1, 1}};
  scenario.steps.push_back(prefill);
  ScenarioStep decode;
  decode.admit = 1;
  decode.keys = {Keys{9, 9}};
  scenario.steps.push_back(decode);
  const RunResult result = RunScenario(
      {"keydiff", {{"budget", 1}, {"prefill_only", 1}, {"ratio_ppm", 500000}}},
      scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{0, 3}, {}}));
}

TEST(KeyDiffPolicy, ParameterRulesAndKeys) {
  const RunResult window = RunScenario(KeyDiff(2, 2), OneHeadSteps({{1, 0}}));
  EXPECT_EQ(CategoryOf(window.refusal), ErrorCategory::kInvalidParameter);
  const RunResult ratio = RunScenario(
      {"keydiff", {{"budget", 4}, {"recent_window", 1}, {"ratio_ppm", 1}}},
      OneHeadSteps({{1, 0}}));
  EXPECT_EQ(CategoryOf(ratio.refusal), ErrorCategory::kInvalidParameter);
  for (const char* foreign : {"adaptive", "interval", "block", "sinks"}) {
    const RunResult unknown = RunScenario(
        {"keydiff", {{"budget", 4}, {foreign, 1}}}, OneHeadSteps({{1, 0}}));
    EXPECT_EQ(CategoryOf(unknown.refusal), ErrorCategory::kInvalidParameter)
        << foreign;
  }
  // keydiff.md#parameters: a scenario without keys is refused.
  Scenario plain;
  plain.id = "plain";
  ScenarioStep step;
  step.admit = 1;
  plain.steps.push_back(step);
  const RunResult no_keys = RunScenario(KeyDiff(1), plain);
  EXPECT_EQ(CategoryOf(no_keys.refusal), ErrorCategory::kInvalidHeads);
}

}  // namespace
}  // namespace kvspec
