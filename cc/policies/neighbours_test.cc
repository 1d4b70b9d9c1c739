// The neighbour equalities the cards pin (spec/policies/snapkv.md#neighbours):
//   - snapkv with pool_kernel 1 evicts exactly what tova evicts on a
//     stationary scenario, once every candidate's ring is full;
//   - snapkv with pool_kernel 1 and obs_window longer than the scenario
//     evicts exactly what h2o evicts, on any scenario.
// Both compare whole eviction logs, step by step.
#include <vector>

#include "cc/harness.h"
#include "cc/registry.h"
#include "cc/rng.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

// A stationary scenario: position p has one weight w[p], the same at every
// step; weights are multiples of 1/8 in [0, 1), so ties are frequent and the
// tie rule decides many victims. Single-position steps, all with attention.
Scenario StationaryScenario(uint32_t steps, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> weight;
  Scenario scenario{"stationary", {}};
  for (uint32_t step = 0; step < steps; ++step) {
    scenario.steps.push_back({1, weight});
    weight.push_back(static_cast<float>(rng.Uniform(8)) / 8.0f);
  }
  return scenario;
}

// A scenario with nothing stationary about it: chunks, null steps, and
// fresh random weights at every step.
Scenario WanderingScenario(uint32_t steps, uint64_t seed) {
  Rng rng(seed);
  Scenario scenario{"wandering", {}};
  uint32_t admitted = 0;
  for (uint32_t step = 0; step < steps; ++step) {
    ScenarioStep s;
    s.admit = rng.Uniform(5) == 0 ? 1 + static_cast<uint32_t>(rng.Uniform(6)) : 1;
    if (rng.Uniform(7) != 0) {
      std::vector<float> row(admitted);
      for (float& w : row) w = rng.UniformFloat();
      s.attention = std::move(row);
    }
    admitted += s.admit;
    scenario.steps.push_back(std::move(s));
  }
  return scenario;
}

PolicyConfig Named(const char* name, std::vector<Parameter> parameters) {
  return {name, std::move(parameters)};
}

TEST(Neighbours, SnapKvWithoutPoolingIsTovaOnAStationaryScenario) {
  // recent_window >= obs_window: a position leaves the recent window only
  // after at least recent_window recorded steps, so its ring is full and
  // its window sum is obs_window x w[p], exactly (a binary32 times a small
  // integer fits in binary64), which ranks as w[p] does.
  for (uint64_t seed : {1, 2, 3}) {
    const Scenario scenario = StationaryScenario(400, seed);
    for (int64_t obs_window : {1, 4, 16}) {
      for (int64_t budget : {24, 64}) {
        const int64_t recent_window = 16;
        const RunResult tova = RunScenario(
            Named("tova", {{"budget", budget}, {"recent_window", recent_window}}),
            scenario);
        const RunResult snapkv = RunScenario(
            Named("snapkv", {{"budget", budget},
                             {"recent_window", recent_window},
                             {"obs_window", obs_window},
                             {"pool_kernel", 1}}),
            scenario);
        ASSERT_TRUE(tova.refusal.ok()) << tova.refusal;
        ASSERT_TRUE(snapkv.refusal.ok()) << snapkv.refusal;
        EXPECT_EQ(snapkv.steps, tova.steps)
            << "seed " << seed << " obs_window " << obs_window << " budget "
            << budget;
      }
    }
  }
}

TEST(Neighbours, SnapKvWithALongWindowAndNoPoolingIsH2o) {
  // The ring never wraps, so each slot's ring holds +0.0 before its first
  // observation and then its weights in step order: summed from index 0 up
  // it is h2o's binary64 sum in step order, bit for bit.
  for (uint64_t seed : {1, 2, 3}) {
    const Scenario scenario = WanderingScenario(300, seed);
    for (int64_t budget : {8, 40}) {
      for (int64_t recent_window : {0, 3}) {
        const RunResult h2o = RunScenario(
            Named("h2o", {{"budget", budget}, {"recent_window", recent_window}}),
            scenario);
        const RunResult snapkv = RunScenario(
            Named("snapkv", {{"budget", budget},
                             {"recent_window", recent_window},
                             {"obs_window", 301},
                             {"pool_kernel", 1}}),
            scenario);
        ASSERT_TRUE(h2o.refusal.ok()) << h2o.refusal;
        ASSERT_TRUE(snapkv.refusal.ok()) << snapkv.refusal;
        EXPECT_EQ(snapkv.steps, h2o.steps)
            << "seed " << seed << " budget " << budget << " recent_window "
            << recent_window;
      }
    }
  }
}

TEST(Neighbours, TheEqualitiesAreNotVacuous) {
  // The scenarios do make the policies evict, and differently from each
  // other where the equalities do not claim anything.
  // (With recent_window 0, h2o and tova both evict each newly admitted,
  // unobserved position at once and agree; recent_window 3 avoids that.)
  const Scenario wandering = WanderingScenario(300, 1);
  const RunResult h2o =
      RunScenario(Named("h2o", {{"budget", 8}, {"recent_window", 3}}), wandering);
  const RunResult tova =
      RunScenario(Named("tova", {{"budget", 8}, {"recent_window", 3}}), wandering);
  const RunResult pooled = RunScenario(
      Named("snapkv", {{"budget", 8}, {"recent_window", 3}, {"obs_window", 301},
                       {"pool_kernel", 3}}),
      wandering);
  size_t evicted = 0;
  for (const StepRecord& step : h2o.steps) evicted += step.victims.size();
  EXPECT_GT(evicted, 100u);
  EXPECT_NE(h2o.steps, tova.steps);
  EXPECT_NE(h2o.steps, pooled.steps);
}

}  // namespace
}  // namespace kvspec
