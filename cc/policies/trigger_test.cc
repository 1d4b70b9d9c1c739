// Hand-worked cases from spec/triggers.md: when a decode step evicts.
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

TEST(Triggers, SlackExampleEvictsInBulk) {
  // triggers.md#slack, the example: window, budget 3, slack 2. Step 5
  // keeps 6 > 5 and evicts 0, 1, 2; step 8 keeps 6 again and evicts 3, 4, 5.
  const RunResult result =
      RunScenario({"window", {{"budget", 3}, {"slack", 2}}},
                  ChunkScenario({1, 1, 1, 1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {}, {0, 1, 2}, {}, {}, {3, 4, 5}}));
  EXPECT_EQ(KeptCounts(result),
            (std::vector<uint64_t>{1, 2, 3, 4, 5, 3, 4, 5, 3}));
}

TEST(Triggers, SlackKeepsStreamingLlmSinks) {
  // streamingllm, budget 4, sinks 1, slack 1: step 5 keeps 6 > 5 and goes
  // back to the sink 0 and the latest 3 (3, 4, 5): victims 1 and 2.
  const RunResult result = RunScenario(
      {"streamingllm", {{"budget", 4}, {"sinks", 1}, {"slack", 1}}},
      ChunkScenario({1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {}, {}, {1, 2}}));
}

TEST(Triggers, IntervalRestartsAtAnEmptyFiring) {
  // triggers.md#interval, the example: window, budget 4, interval 3. Step 2
  // fires with three kept and evicts nothing (count back to 0); step 5
  // fires with six kept (0, 1 go); step 8 with seven (2, 3, 4 go).
  const RunResult result =
      RunScenario({"window", {{"budget", 4}, {"interval", 3}}},
                  ChunkScenario({1, 1, 1, 1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {}, {0, 1}, {}, {}, {2, 3, 4}}));
  EXPECT_EQ(KeptCounts(result),
            (std::vector<uint64_t>{1, 2, 3, 4, 5, 4, 5, 6, 4}));
}

TEST(Triggers, IntervalFiresOutOfTurnOnAChunkOfBudget) {
  // triggers.md#interval, 2: window, budget 4, interval 10. A chunk of 4
  // (>= budget) fires at once: kept 6, 0 and 1 go. The next step counts 1
  // (the count restarted) and does not fire.
  const RunResult result =
      RunScenario({"window", {{"budget", 4}, {"interval", 10}}},
                  ChunkScenario({2, 4, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {0, 1}, {}}));
  // A chunk of 3 (< budget) does not fire.
  const RunResult shorter =
      RunScenario({"window", {{"budget", 4}, {"interval", 10}}},
                  ChunkScenario({2, 3}));
  ASSERT_TRUE(shorter.refusal.ok()) << shorter.refusal;
  EXPECT_EQ(VictimsPerStep(shorter), (Victims{{}, {}}));
}

TEST(Triggers, PrefillStepResetsTheCount) {
  // window, budget 3, interval 2. Step 0 counts 1; step 1 is a prefill
  // step (query rows) admitting 1, 2: the count goes to 0, kept 3, nothing
  // evicted; step 2 counts 1 (kept 4, no firing); step 3 counts 2 and
  // fires: kept 5, 0 and 1 go. Had the prefill step not reset the count,
  // step 2 would fire and evict 0.
  Scenario scenario = ChunkScenario({1, 2, 1, 1});
  // One query row (position 2's): q + 1 = 3 weights.
  scenario.steps[1].queries = {{0.25f, 0.25f, 0.5f}};
  const RunResult result =
      RunScenario({"window", {{"budget", 3}, {"interval", 2}}}, scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {0, 1}}));
}

TEST(Triggers, H2oScoresAccumulateBetweenFirings) {
  // triggers.md#firing: h2o, budget 2, recent_window 0, interval 2.
  // Step 0 (null) counts 1; step 1 records [1.0] for 0 and fires with two
  // kept (nothing goes). Step 2 records [0, 0.5] (not a firing); step 3
  // records [0, 0.25, 0.75] and fires with four kept: sums 0: 1.0,
  // 1: 0.75, 2: 0.75, 3: 0 (unobserved). Victims: 3, then 1 (ties with 2,
  // the lower position goes). Summing only the rows of firing steps would
  // give 0: 0 and evict 0 and 3.
  Scenario scenario;
  scenario.steps = {{1, std::nullopt},
                    {1, std::vector<float>{1.0f}},
                    {1, std::vector<float>{0.0f, 0.5f}},
                    {1, std::vector<float>{0.0f, 0.25f, 0.75f}}};
  const RunResult result = RunScenario(
      {"h2o", {{"budget", 2}, {"recent_window", 0}, {"interval", 2}}},
      scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {}, {1, 3}}));
}

// The subject of the refusal of `config`, or "" when it is built.
std::string RefusalSubject(const PolicyConfig& config) {
  const auto policy = MakePolicy(config);
  if (policy.ok()) return "";
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  return SubjectText(SubjectOf(policy.status()));
}

TEST(Triggers, RefusalsNameTheirRules) {
  // triggers.md#combinations, rule 1.
  EXPECT_EQ(RefusalSubject({"window", {{"slack", 1}, {"interval", 1}}}),
            "rule slack interval");
  // Rule 2: the first of prefill_only, adaptive, evict_at, context_shift
  // not 0.
  EXPECT_EQ(RefusalSubject({"h2o",
                            {{"budget", 4}, {"recent_window", 0},
                             {"interval", 2}, {"prefill_only", 1}}}),
            "rule interval prefill_only");
  EXPECT_EQ(RefusalSubject({"tova", {{"slack", 1}, {"adaptive", 1}}}),
            "rule slack adaptive");
  EXPECT_EQ(RefusalSubject({"window", {{"slack", 1}, {"evict_at", 1}}}),
            "rule slack evict_at");
  EXPECT_EQ(RefusalSubject({"streamingllm",
                            {{"interval", 1}, {"context_shift", 1}}}),
            "rule interval context_shift");
  // Checked after every other rule: adaptive 1 with prefill_only 1 is the
  // prefill rule's refusal first.
  EXPECT_EQ(RefusalSubject({"snapkv",
                            {{"slack", 1}, {"adaptive", 1},
                             {"prefill_only", 1}}}),
            "rule adaptive prefill_only");
  // Ranges, and listed last: an earlier parameter's range is checked first.
  EXPECT_EQ(RefusalSubject({"random", {{"slack", -1}}}), "range slack");
  EXPECT_EQ(RefusalSubject({"window", {{"interval", int64_t{4294967296}}}}),
            "range interval");
  EXPECT_EQ(RefusalSubject({"window", {{"interval", -1}, {"evict_at", 3}}}),
            "range evict_at");
  // full evicts nothing and takes neither.
  EXPECT_EQ(RefusalSubject({"full", {{"slack", 1}}}), "unknown slack");
  // Both at most 2^32 - 1, one at a time: accepted.
  EXPECT_EQ(RefusalSubject({"h2o", {{"slack", int64_t{4294967295}}}}), "");
}

}  // namespace
}  // namespace kvspec
