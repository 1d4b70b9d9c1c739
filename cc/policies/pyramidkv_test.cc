// Hand-worked cases from spec/policies/pyramidkv.md: the layer budgets of
// the card's worked examples (worked from the card's formulas, not from
// this code), the kept sets they give, and the mode's rules.
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

PolicyConfig Snap(std::vector<Parameter> parameters) {
  return {"snapkv", std::move(parameters)};
}

// kvpress's formula: snapkv inside, prefill only, no recent window.
PolicyConfig Kvpress(int64_t ratio_ppm, int64_t obs_window, int64_t beta,
                     int64_t layer, int64_t layers) {
  return Snap({{"recent_window", 0}, {"prefill_only", 1},
               {"ratio_ppm", ratio_ppm}, {"obs_window", obs_window},
               {"pyramid", 1}, {"pyramid_beta", beta}, {"layer", layer},
               {"layers", layers}});
}

// KVCache-Factory's: window outside, budget the prefix positions kept.
PolicyConfig Factory(int64_t budget, int64_t obs_window, int64_t beta,
                     int64_t layer, int64_t layers) {
  return Snap({{"budget", budget}, {"recent_window", 0}, {"prefill_only", 1},
               {"window_budget", 1}, {"obs_window", obs_window},
               {"pyramid", 2}, {"pyramid_beta", beta}, {"layer", layer},
               {"layers", layers}});
}

std::vector<size_t> LayerBudgets(PolicyConfig (*make)(int64_t, int64_t,
                                                      int64_t, int64_t,
                                                      int64_t),
                                 int64_t first, int64_t obs_window,
                                 int64_t beta, int64_t layers, size_t kept) {
  std::vector<size_t> budgets;
  for (int64_t layer = 0; layer < layers; ++layer) {
    const PolicyConfig config = make(first, obs_window, beta, layer, layers);
    EXPECT_TRUE(MakePolicy(config).ok()) << MakePolicy(config).status();
    budgets.push_back(
        StepBudget(config, /*prefill_step=*/true, kept).value_or(0));
  }
  return budgets;
}

// Example 1: u = 20, lo = 10, hi = 30, steps 10.
TEST(PyramidKvpress, StepsDownFromHiToLo) {
  EXPECT_EQ(LayerBudgets(Kvpress, 500000, 4, 2, 3, 40),
            (std::vector<size_t>{30, 20, 10}));
}

// Example 2: hi 7.5 and lo 2.5 round half to even: 8 and 2.
TEST(PyramidKvpress, RoundsHalvesToEven) {
  EXPECT_EQ(LayerBudgets(Kvpress, 500000, 1, 2, 2, 10),
            (std::vector<size_t>{8, 2}));
}

// Example 3: hi 29.25 clipped to n - w = 18, lo = 30 - 18 = 12, steps 2.
TEST(PyramidKvpress, ClipsHiToThePrefix) {
  EXPECT_EQ(LayerBudgets(Kvpress, 250000, 2, 20, 4, 20),
            (std::vector<size_t>{18, 16, 14, 12}));
}

// Example 4: hi clipped to 3 below lo 4: the fallback round(3.5) = 4 at
// every layer, where the plain ratio floors to 3.
TEST(PyramidKvpress, FallsBackToTheRoundedRatio) {
  EXPECT_EQ(LayerBudgets(Kvpress, 500000, 4, 20, 3, 7),
            (std::vector<size_t>{4, 4, 4}));
  const PolicyConfig plain = Snap({{"recent_window", 0}, {"prefill_only", 1},
                                   {"ratio_ppm", 500000}, {"obs_window", 4}});
  EXPECT_EQ(StepBudget(plain, true, 7).value_or(0), 3u);
}

// One layer: steps 0, the layer keeps hi (example 1's 30).
TEST(PyramidKvpress, OneLayerKeepsHi) {
  EXPECT_EQ(LayerBudgets(Kvpress, 500000, 4, 2, 1, 40),
            (std::vector<size_t>{30}));
}

// Example 5: lo 2, hi 18, steps 16 // 3 = 5: 18, 13, 8, 3; then the two
// shorter prompts: below 2 x budget every layer keeps budget.
TEST(PyramidFactory, FloorDivisionSteps) {
  EXPECT_EQ(LayerBudgets(Factory, 10, 2, 4, 4, 30),
            (std::vector<size_t>{18, 13, 8, 3}));
  EXPECT_EQ(LayerBudgets(Factory, 10, 2, 4, 4, 15),
            (std::vector<size_t>{10, 10, 10, 10}));
}

// Example 6: hi 18 clipped to n - w = 16, lo = 20 - 16 = 4, steps 6.
TEST(PyramidFactory, ClipsHiToThePrefix) {
  EXPECT_EQ(LayerBudgets(Factory, 10, 6, 4, 3, 22),
            (std::vector<size_t>{16, 10, 4}));
}

// A prefill of `n` positions whose one head's window rows (the last
// `w` queries, weights over every position) pay position i the weight
// (i + 1) / 1024 over the prefix: the prefix ranks by position, so the
// lowest positions go first.
ScenarioStep RisingPrefill(uint32_t n, uint32_t w) {
  ScenarioStep step;
  step.admit = n;
  for (uint32_t q = n - w; q < n; ++q) {
    Row row(q + 1, 0.0f);
    for (uint32_t i = 0; i <= q; ++i) row[i] = static_cast<float>(i + 1) / 1024;
    step.queries.push_back(row);
  }
  return step;
}

// Example 5 as runs, no pooling: at n 30 layer 1 keeps 13 prefix
// positions (15..27) and the window 28, 29; layer 3 keeps 3 (25..27).
TEST(PyramidFactory, KeepsTheLayersPrefixAndTheWindow) {
  for (const auto& [layer, first_kept] :
       std::vector<std::pair<int64_t, Position>>{{1, 15}, {3, 25}}) {
    PolicyConfig config = Factory(10, 2, 4, layer, 4);
    config.parameters.push_back({"pool_kernel", 1});
    const RunResult result =
        RunScenario(config, Scenario{"s", {RisingPrefill(30, 2)}});
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    std::vector<Position> victims;
    for (Position p = 0; p < first_kept; ++p) victims.push_back(p);
    EXPECT_EQ(result.steps[0].victims, victims) << "layer " << layer;
  }
}

// Example 1 as a run, inside: layer 2 keeps 10 in all, the window's 4
// (36..39) among them, so prefix 30..35.
TEST(PyramidKvpress, KeepsTheLayersBudgetWindowIncluded) {
  PolicyConfig config = Kvpress(500000, 4, 2, 2, 3);
  config.parameters.push_back({"pool_kernel", 1});
  const RunResult result =
      RunScenario(config, Scenario{"s", {RisingPrefill(40, 4)}});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(result.steps[0].kept_count, 10u);
  std::vector<Position> victims;
  for (Position p = 0; p < 30; ++p) victims.push_back(p);
  EXPECT_EQ(result.steps[0].victims, victims);
}

std::string Subject(const absl::StatusOr<std::unique_ptr<Policy>>& made) {
  return made.ok() ? "accepted" : SubjectText(SubjectOf(made.status()));
}

// pyramidkv.md#parameters: the three rules, in order.
TEST(PyramidRules, RefusedWithTheirSubjects) {
  EXPECT_EQ(Subject(MakePolicy(Snap({{"layer", 3}, {"layers", 3}}))),
            "rule layer layers");
  // layer is checked whatever pyramid is, before the ratio rule.
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 1}, {"layer", 1}}))),
            "rule layer layers");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 1}}))),
            "rule pyramid ratio_ppm");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 2}, {"recent_window", 0},
                                     {"ratio_ppm", 500000},
                                     {"window_budget", 1}}))),
            "rule pyramid ratio_ppm");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 2}}))),
            "rule pyramid window_budget");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 1}, {"recent_window", 0},
                                     {"ratio_ppm", 500000},
                                     {"window_budget", 1}}))),
            "rule pyramid window_budget");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 2}, {"window_budget", 1}}))),
            "rule pyramid recent_window");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 3}}))), "range pyramid");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid_beta", 0}}))),
            "range pyramid_beta");
  EXPECT_EQ(Subject(MakePolicy(Snap({{"pyramid", 2}, {"window_budget", 1},
                                     {"recent_window", 0}}))),
            "accepted");
  // The mode is snapkv's alone.
  EXPECT_EQ(Subject(MakePolicy({"h2o", {{"pyramid", 1}}})), "unknown pyramid");
}

// pyramid 0: beta, layer and layers change nothing.
TEST(PyramidRules, OffChangesNothing) {
  PolicyConfig config = Snap({{"recent_window", 0}, {"prefill_only", 1},
                              {"ratio_ppm", 500000}, {"layer", 2},
                              {"layers", 3}, {"pyramid_beta", 2}});
  EXPECT_EQ(StepBudget(config, true, 7).value_or(0), 3u);
}

}  // namespace
}  // namespace kvspec
