// Hand-worked cases from spec/policies/knorm.md and spec/tensors.md.
#include <cmath>
#include <cstdint>
#include <limits>
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
using Keys = std::vector<float>;

PolicyConfig Knorm(int64_t budget, int64_t recent_window = 0) {
  return {"knorm", {{"budget", budget}, {"recent_window", recent_window}}};
}

// One head, d = 2, one position a step, null attention: the card's shape.
Scenario OneHeadSteps(const std::vector<Keys>& keys) {
  Scenario scenario;
  scenario.id = "knorm";
  scenario.head_dim = 2;
  for (const Keys& key : keys) {
    ScenarioStep step;
    step.admit = 1;
    step.keys = {key};
    scenario.steps.push_back(step);
  }
  return scenario;
}

TEST(KnormPolicy, TheLargestNormGoes) {
  // knorm.md#how-it-works: (3, 4), (1, 0), (0, 2) score -5, -1, -2;
  // admitting 2 puts three over the budget of 2: 0 (-5) goes.
  const RunResult result =
      RunScenario(Knorm(2), OneHeadSteps({{3, 4}, {1, 0}, {0, 2}}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {0}}));
}

TEST(KnormPolicy, TheRecentWindowIsProtected) {
  // With recent_window 1 and (6, 8) third (-10): 2 is protected, 0 goes;
  // without the window 2 would.
  const Scenario scenario = OneHeadSteps({{3, 4}, {1, 0}, {6, 8}});
  EXPECT_EQ(VictimsPerStep(RunScenario(Knorm(2, 1), scenario)),
            (Victims{{}, {}, {0}}));
  EXPECT_EQ(VictimsPerStep(RunScenario(Knorm(2, 0), scenario)),
            (Victims{{}, {}, {2}}));
}

TEST(KnormPolicy, EqualNormsEvictTheLowerPosition) {
  // knorm.md#tie-breaking: (0, 1) and (1, 0) both -1; (0, 0.5) is -0.5.
  const RunResult result =
      RunScenario(Knorm(2), OneHeadSteps({{0, 1}, {1, 0}, {0, 0.5f}}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {0}}));
}

TEST(KnormPolicy, SignedEntriesAndAZeroKey) {
  // (-3, 4) has norm 5 like (3, 4); a zero key scores +0.0 (not -0.0), the
  // highest possible score: with budget 1 after (0, 0) and (-3, 4), 1 goes.
  EXPECT_EQ(VictimsPerStep(
                RunScenario(Knorm(1), OneHeadSteps({{0, 0}, {-3, 4}}))),
            (Victims{{}, {1}}));
  // The cut reports the scores: -5 for the victim, +0.0 (sign bit clear)
  // for the survivor.
  RunOptions options;
  options.record_cut = true;
  const RunResult cut =
      RunScenario(Knorm(1), OneHeadSteps({{0, 0}, {-0.0f, -0.0f}, {-3, 4}}),
                  options);
  ASSERT_EQ(cut.steps.size(), 3u);
  ASSERT_EQ(cut.steps[1].cut.size(), 2u);
  // Step 1: (0, 0) and (-0, -0) both score +0.0: the lower, 0, goes.
  EXPECT_EQ(cut.steps[1].victims, (std::vector<Position>{0}));
  EXPECT_FALSE(std::signbit(cut.steps[1].cut[0].score));
  EXPECT_EQ(cut.steps[2].cut[0].position, 2u);
  EXPECT_EQ(cut.steps[2].cut[0].score, -5.0);
}

TEST(KnormPolicy, NormIsBinary64FromWidenedEntries) {
  // (1, 1): sqrt(2) = 1.4142135623730951 in binary64; the cut's score is
  // its negation exactly.
  RunOptions options;
  options.record_cut = true;
  const RunResult result =
      RunScenario(Knorm(1), OneHeadSteps({{1, 1}, {0, 0}}), options);
  ASSERT_EQ(result.steps[1].cut.size(), 2u);
  EXPECT_EQ(result.steps[1].cut[0].score, -std::sqrt(2.0));
}

// Two KV heads in one layer set, one step admitting positions 0 and 1:
// knorm.md#several-kv-heads.
Scenario TwoKvHeads() {
  Scenario scenario;
  scenario.id = "layer";
  scenario.query_heads = 2;
  scenario.kv_heads = 2;
  scenario.head_dim = 2;
  ScenarioStep step;
  step.admit = 2;
  step.keys = {Keys{3, 4, 0, 1}, Keys{0, 1, 6, 8}};
  scenario.steps.push_back(step);
  return scenario;
}

TEST(KnormPolicy, LayerSetCombinesItsKvHeads) {
  // Position 0 scores -5 and -1, position 1 -1 and -10. mean: -3 and -5.5,
  // 1 goes; max: -1 and -1, a tie, 0 goes; sum: -6 and -11, 1 goes.
  const auto run = [](int64_t aggregation) {
    return VictimsPerStep(RunScenario(
        {"knorm", {{"budget", 1}, {"granularity", 0},
                   {"aggregation", aggregation}}},
        TwoKvHeads()));
  };
  EXPECT_EQ(run(0), (Victims{{1}}));
  EXPECT_EQ(run(1), (Victims{{0}}));
  EXPECT_EQ(run(2), (Victims{{1}}));
}

TEST(KnormPolicy, KvHeadSetsRankByTheirOwnKvHead) {
  // granularity kv_head: set 0 (KV head 0) evicts 0 (-5 < -1), set 1 (KV
  // head 1) evicts 1 (-10 < -1).
  const RunResult result =
      RunScenario({"knorm", {{"budget", 1}}}, TwoKvHeads());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 1u);
  ASSERT_EQ(result.steps[0].sets.size(), 2u);
  EXPECT_EQ(result.steps[0].sets[0].victims, (std::vector<Position>{0}));
  EXPECT_EQ(result.steps[0].sets[1].victims, (std::vector<Position>{1}));
}

TEST(KnormPolicy, PrefillRatio) {
  // knorm.md#at-prefill: a prefill of 4 positions with keys (1, 0), (0, 3),
  // (2, 0), (0, 0), ratio_ppm 500000: budget max(1, floor(4 x 0.5)) = 2;
  // 1 (-3) and 2 (-2) go. A decode step after it (prefill_only 1) evicts
  // nothing.
  Scenario scenario = OneHeadSteps({});
  ScenarioStep prefill;
  prefill.admit = 4;
  prefill.queries = {std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}};
  prefill.keys = {Keys{1, 0, 0, 3, 2, 0, 0, 0}};
  scenario.steps.push_back(prefill);
  ScenarioStep decode;
  decode.admit = 1;
  decode.keys = {Keys{9, 9}};
  scenario.steps.push_back(decode);
  const RunResult result = RunScenario(
      {"knorm", {{"budget", 1}, {"prefill_only", 1}, {"ratio_ppm", 500000}}},
      scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1, 2}, {}}));
}

TEST(KnormPolicy, ParameterRules) {
  const RunResult window = RunScenario(Knorm(2, 2), OneHeadSteps({{1, 0}}));
  EXPECT_EQ(CategoryOf(window.refusal), ErrorCategory::kInvalidParameter);
  const RunResult ratio = RunScenario(
      {"knorm", {{"budget", 4}, {"recent_window", 1}, {"ratio_ppm", 1}}},
      OneHeadSteps({{1, 0}}));
  EXPECT_EQ(CategoryOf(ratio.refusal), ErrorCategory::kInvalidParameter);
  for (const char* foreign : {"adaptive", "interval", "block", "sinks"}) {
    const RunResult unknown = RunScenario(
        {"knorm", {{"budget", 4}, {foreign, 1}}}, OneHeadSteps({{1, 0}}));
    EXPECT_EQ(CategoryOf(unknown.refusal), ErrorCategory::kInvalidParameter)
        << foreign;
  }
}

// spec/tensors.md#checks.
struct Refused {
  ErrorCategory category;
  int64_t step;
  std::string subject;  // spec/harness.md#subjects
};
Refused RefusalOf(const PolicyConfig& config, const Scenario& scenario) {
  const RunResult result = RunScenario(config, scenario);
  EXPECT_FALSE(result.refusal.ok());
  return {CategoryOf(result.refusal), result.refused_step,
          SubjectText(SubjectOf(result.refusal))};
}

TEST(TensorChecks, ScenarioShape) {
  Scenario scenario = OneHeadSteps({{1, 0}});
  scenario.head_dim = 0;
  Refused r = RefusalOf(Knorm(2), scenario);
  EXPECT_EQ(r.category, ErrorCategory::kInvalidHeads);
  EXPECT_EQ(r.step, -1);
  EXPECT_EQ(r.subject, "range head_dim");
  scenario.head_dim = 1025;
  EXPECT_EQ(RefusalOf(Knorm(2), scenario).category,
            ErrorCategory::kInvalidHeads);
  // A policy that does not read keys is refused the same way.
  EXPECT_EQ(RefusalOf({"window", {{"budget", 2}}}, scenario).category,
            ErrorCategory::kInvalidHeads);
  // head_dim beside a trace.
  Scenario trace;
  trace.trace = TraceConfig{};
  trace.trace->steps = 4;
  trace.head_dim = 2;
  r = RefusalOf({"window", {{"budget", 2}}}, trace);
  EXPECT_EQ(r.category, ErrorCategory::kInvalidTrace);
  EXPECT_EQ(r.subject, "rule head_dim trace");
  // knorm without keys.
  Scenario plain;
  plain.steps.push_back({1, std::nullopt});
  r = RefusalOf(Knorm(2), plain);
  EXPECT_EQ(r.category, ErrorCategory::kInvalidHeads);
  EXPECT_EQ(r.step, -1);
  EXPECT_EQ(r.subject, "range head_dim");
  // Another policy runs a scenario with keys as without.
  const RunResult window = RunScenario({"window", {{"budget", 1}}},
                                       OneHeadSteps({{1, 0}, {0, 1}}));
  ASSERT_TRUE(window.refusal.ok()) << window.refusal;
  EXPECT_EQ(VictimsPerStep(window), (Victims{{}, {0}}));
}

TEST(TensorChecks, StepShapeAndValues) {
  // Keys in a scenario without head_dim, at step 1.
  Scenario no_dim = OneHeadSteps({{1, 0}, {1, 0}});
  no_dim.head_dim.reset();
  no_dim.steps[0].keys.clear();
  Refused r = RefusalOf({"window", {{"budget", 2}}}, no_dim);
  EXPECT_EQ(r.category, ErrorCategory::kAttentionLength);
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.subject, "length keys");
  // Two lists for one KV head; then a list of the wrong length.
  Scenario lists = OneHeadSteps({{1, 0}});
  lists.steps[0].keys.push_back({1, 0});
  EXPECT_EQ(RefusalOf(Knorm(2), lists).category,
            ErrorCategory::kAttentionLength);
  Scenario length = OneHeadSteps({{1, 0, 0}});
  EXPECT_EQ(RefusalOf(Knorm(2), length).category,
            ErrorCategory::kAttentionLength);
  // A NaN, then an infinite entry; negative entries and -0.0 pass.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::infinity()}) {
    r = RefusalOf(Knorm(2), OneHeadSteps({{-1, -0.0f}, {0, bad}}));
    EXPECT_EQ(r.category, ErrorCategory::kAttentionValue);
    EXPECT_EQ(r.step, 1);
    EXPECT_EQ(r.subject, "value keys");
  }
  // The shape is checked before any value: a wrong length at step 0 with a
  // NaN in the same step is a length refusal.
  Scenario both = OneHeadSteps({{1, 0}});
  both.steps[0].keys[0] = {std::numeric_limits<float>::quiet_NaN(), 0, 0};
  EXPECT_EQ(RefusalOf(Knorm(2), both).category,
            ErrorCategory::kAttentionLength);
}

}  // namespace
}  // namespace kvspec
