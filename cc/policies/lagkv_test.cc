// Hand-worked cases from spec/policies/lagkv.md and spec/tensors.md#checks.
#include <cmath>
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

using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;
using Vectors = std::vector<float>;

PolicyConfig LagKv(std::vector<Parameter> parameters) {
  return {"lagkv", std::move(parameters)};
}

// One step admitting every position at once, d = e = 2, one KV head per
// entry of `keys` and `values` (one query head per KV head), null
// attention: the card's shape.
Scenario OneStep(const std::vector<Vectors>& keys,
                 const std::vector<Vectors>& values) {
  Scenario scenario;
  scenario.id = "lagkv";
  scenario.head_dim = 2;
  scenario.value_dim = 2;
  if (keys.size() > 1) {
    scenario.query_heads = static_cast<uint32_t>(keys.size());
    scenario.kv_heads = static_cast<uint32_t>(keys.size());
  }
  ScenarioStep step;
  step.admit = static_cast<uint32_t>(keys[0].size() / 2);
  step.keys = keys;
  step.values = values;
  scenario.steps.push_back(step);
  return scenario;
}

// lagkv.md#how-it-works, the worked example's keys (sink first).
const Vectors kKeys = {9, 9, 0, 1, 0.5f, 0.5f, 0, 0, 1, 1};
const Vectors kFlatValues = {9, 9, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 1, 1};
const Vectors kEqualValues = {9, 9, 1, 1, 0, 2, 0, 0, 2, 2};

RunResult RunCut(const PolicyConfig& config, const Scenario& scenario) {
  RunOptions options;
  options.record_cut = true;
  return RunScenario(config, scenario, options);
}

TEST(LagKvPolicy, TheFlatKeyGoes) {
  // lagkv.md#how-it-works: m = 5 = sinks + 2 lag; partition 0 (positions 1,
  // 2) against partition 1 (3, 4). Keys scale to (0, 1) and (0.5, 0.5):
  // spreads sqrt(1/2) and 0, softmax e^0.707/(e^0.707 + 1) = 0.6697.. and
  // 0.3302..; values both (0.5, 0.5): 0.5 each. Judgements 0.5848.. and
  // 0.4151..: position 2 ranks 0 (score 0), 1 ranks 1 (0.5); 2 goes.
  const RunResult result = RunCut(
      LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}), OneStep({kKeys}, {kFlatValues}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{2}}));
  // The cut: 2 at 0, then 1 at 0.5 (rank 1 of lag 2).
  ASSERT_GE(result.steps[0].cut.size(), 2u);
  EXPECT_EQ(result.steps[0].cut[0].position, 2u);
  EXPECT_EQ(result.steps[0].cut[0].score, 0.0);
  EXPECT_EQ(result.steps[0].cut[1].position, 1u);
  EXPECT_EQ(result.steps[0].cut[1].score, 0.5);
}

TEST(LagKvPolicy, CrossScoringReportsTheJudgement) {
  // The same with cross_scoring 1: the scores are the judgements
  // (0.6697.. + 0.5) / 2 and (0.3302.. + 0.5) / 2.
  const RunResult result =
      RunCut(LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}, {"cross_scoring", 1}}),
          OneStep({kKeys}, {kFlatValues}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{2}}));
  const double high = std::exp(std::sqrt(0.5)) / (std::exp(std::sqrt(0.5)) + 1);
  EXPECT_NEAR(result.steps[0].cut[0].score, (1 - high + 0.5) / 2, 1e-15);
  EXPECT_NEAR(result.steps[0].cut[1].score, (high + 0.5) / 2, 1e-15);
}

TEST(LagKvPolicy, EqualJudgementsRankTheOlderSlotLower) {
  // Values (1, 1), (0, 2) against (0, 0), (2, 2) scale to (0.5, 0.5) and
  // (0, 1): the values' softmax is the keys' the other way round, so both
  // judgements are the same sum; position 1, the older, ranks 0 and goes.
  const RunResult result = RunCut(LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}),
                               OneStep({kKeys}, {kEqualValues}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1}}));
}

TEST(LagKvPolicy, AConstantReferenceChannelScalesToZero) {
  // Values (7, 2), (-3, 0) against (1, 0), (1, 2): channel 0 is constant
  // (1) in the reference, so it scales to +0.0 in both; channel 1 to 1 and
  // 0. Spreads sqrt(1/2) and 0, as the keys': position 2 goes.
  const RunResult result =
      RunCut(LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}),
          OneStep({kKeys}, {Vectors{9, 9, 7, 2, -3, 0, 1, 0, 1, 2}}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{2}}));
}

TEST(LagKvPolicy, AShortCacheIsAWindowWithSinks) {
  // m = 4 < sinks + 2 lag = 5: scores 1, 0/3, 1/3, 2/3: position 1 goes.
  const RunResult result = RunCut(
      LagKv({{"budget", 3}, {"sinks", 1}, {"lag", 2}}),
      OneStep({Vectors{9, 9, 0, 1, 0.5f, 0.5f, 0, 0}},
              {Vectors{9, 9, 7, 2, -3, 0, 1, 0}}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{1}}));
  ASSERT_GE(result.steps[0].cut.size(), 3u);
  EXPECT_EQ(result.steps[0].cut[0].score, 0.0);
  EXPECT_EQ(result.steps[0].cut[1].score, 1.0 / 3.0);
  EXPECT_EQ(result.steps[0].cut[2].score, 2.0 / 3.0);
}

// lagkv.md, ranks or judgements: sinks 0, lag 3, nine positions, every
// value (0, 0) (constant, so the values' softmax is 1/3 throughout).
Scenario NinePositions() {
  return OneStep({Vectors{0, 0, 0, 0, 0, 4, 0, 0, 1, 1, 0.5f, 0.5f, 0, 0, 1, 1, 0, 0}},
                 {Vectors(18, 0.0f)});
}

TEST(LagKvPolicy, RanksArePerPartition) {
  // Partition 0's spreads 0, 0, 2.828..; partition 1's all 0. Ranks give
  // 0, 1/3, 2/3 in each partition: the two lowest are 0 and 3.
  const RunResult result =
      RunCut(LagKv({{"budget", 7}, {"sinks", 0}, {"lag", 3}}), NinePositions());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{0, 3}}));
}

TEST(LagKvPolicy, CrossScoringComparesAcrossPartitions) {
  // The judgements: 0.1930.., 0.1930.., 0.6138.. | 1/3 x 3: 0 and 1 go.
  const RunResult result = RunCut(
      LagKv({{"budget", 7}, {"sinks", 0}, {"lag", 3}, {"cross_scoring", 1}}),
      NinePositions());
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{0, 1}}));
}

TEST(LagKvPolicy, SeveralKvHeadsCombine) {
  // lagkv.md#several-kv-heads: KV head 0 as the worked example (scores 1,
  // 0.5, 0, 1, 1), KV head 1 as the equal judgements (1, 0, 0.5, 1, 1).
  // layer mean: 1, 0.25, 0.25, 1, 1: 1 and 2 tie, 1 goes; layer max: 1,
  // 0.5, 0.5, 1, 1: 1 goes; one set per KV head: set 0 evicts 2, set 1
  // evicts 1.
  const Scenario scenario = OneStep({kKeys, kKeys}, {kFlatValues, kEqualValues});
  for (int64_t aggregation : {0, 1, 2}) {
    const RunResult layer =
        RunCut(LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}, {"granularity", 0},
                   {"aggregation", aggregation}}),
            scenario);
    ASSERT_TRUE(layer.refusal.ok()) << layer.refusal;
    EXPECT_EQ(VictimsPerStep(layer), (Victims{{1}})) << aggregation;
  }
  const RunResult sets =
      RunCut(LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}, {"granularity", 1}}),
          scenario);
  ASSERT_TRUE(sets.refusal.ok()) << sets.refusal;
  ASSERT_EQ(sets.steps[0].sets.size(), 2u);
  EXPECT_EQ(sets.steps[0].sets[0].victims, (std::vector<Position>{2}));
  EXPECT_EQ(sets.steps[0].sets[1].victims, (std::vector<Position>{1}));
}

TEST(LagKvPolicy, PartitionsFollowTheCacheNotThePositions) {
  // lagkv.md#how-it-works: the partitions are counted from the oldest kept
  // slot. sinks 0, lag 1, budget 2, one position a step, keys and values
  // (0, 0), (1, 1), (2, 2), ...: every reference holds one vector, so every
  // channel is constant and every judged slot ranks 0. At each step that
  // evicts (m = 3 = sinks + 2 lag), slot 0 is judged (score 0) and slots 1
  // and 2 score 1.0: the oldest kept position goes each time.
  Scenario scenario;
  scenario.id = "lagkv-steps";
  scenario.head_dim = 2;
  scenario.value_dim = 2;
  for (int i = 0; i < 5; ++i) {
    ScenarioStep step;
    step.admit = 1;
    const float x = static_cast<float>(i);
    step.keys = {Vectors{x, x}};
    step.values = {Vectors{x, -x}};
    scenario.steps.push_back(step);
  }
  const RunResult result =
      RunCut(LagKv({{"budget", 2}, {"sinks", 0}, {"lag", 1}}), scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {0}, {1}, {2}}));
}

std::string Subject(const RunResult& result) {
  return SubjectText(SubjectOf(result.refusal));
}

std::string Subject(const absl::Status& status) {
  return SubjectText(SubjectOf(status));
}

TEST(LagKvPolicy, NeedsKeysAndValuesOfTwoChannels) {
  // tensors.md#checks, the scenario's shape, checks 5 and 6.
  Scenario no_values = OneStep({kKeys}, {kFlatValues});
  no_values.value_dim.reset();
  no_values.steps[0].values.clear();
  const PolicyConfig config = LagKv({{"budget", 4}});
  RunResult result = RunCut(config, no_values);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kInvalidHeads);
  EXPECT_EQ(Subject(result), "range value_dim");
  Scenario no_keys = OneStep({kKeys}, {kFlatValues});
  no_keys.head_dim.reset();
  no_keys.steps[0].keys.clear();
  EXPECT_EQ(Subject(RunCut(config, no_keys)), "range head_dim");
  // d = 1 and e = 1: one channel has no standard deviation with
  // correction 1.
  Scenario narrow_keys = OneStep({Vectors{1, 2, 3}}, {Vectors{1, 2, 1, 2, 1, 2}});
  narrow_keys.head_dim = 1;
  EXPECT_EQ(Subject(RunCut(config, narrow_keys)), "range head_dim");
  Scenario narrow_values = OneStep({kKeys}, {Vectors{1, 2, 3, 4, 5}});
  narrow_values.value_dim = 1;
  EXPECT_EQ(Subject(RunCut(config, narrow_values)), "range value_dim");
}

TEST(LagKvPolicy, RefusesWhatItDoesNotTake) {
  // lagkv.md#parameters: ranges, and parameters of other policies.
  EXPECT_EQ(Subject(MakePolicy(LagKv({{"lag", 0}})).status()), "range lag");
  EXPECT_EQ(Subject(MakePolicy(LagKv({{"lag", (int64_t{1} << 20) + 1}})).status()),
            "range lag");
  EXPECT_EQ(Subject(MakePolicy(LagKv({{"cross_scoring", 2}})).status()),
            "range cross_scoring");
  EXPECT_EQ(Subject(MakePolicy(LagKv({{"sinks", -1}})).status()), "range sinks");
  EXPECT_TRUE(MakePolicy(LagKv({{"lag", int64_t{1} << 20}, {"sinks", 0}})).ok());
  for (const char* foreign : {"recent_window", "adaptive", "interval", "block"}) {
    const absl::Status status = MakePolicy(LagKv({{foreign, 1}})).status();
    EXPECT_EQ(CategoryOf(status), ErrorCategory::kInvalidParameter) << foreign;
  }
}

}  // namespace
}  // namespace kvspec
