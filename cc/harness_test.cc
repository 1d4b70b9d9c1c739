// The harness (spec/harness.md): gathering attention for kept positions,
// the scenario-level refusals, and the eviction log.
#include "cc/harness.h"

#include <cmath>
#include <vector>

#include "cc/errors.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

// A policy that records what it is shown; it keeps everything.
class RecordingPolicy final : public Policy {
 public:
  absl::string_view name() const override { return "recording"; }
  std::vector<std::optional<std::vector<float>>> seen;

 protected:
  void Record(absl::Span<const float> attention) override {
    seen.emplace_back(std::vector<float>(attention.begin(), attention.end()));
  }
  void Admit(Position) override {}
  std::vector<size_t> ChooseVictims() override {
    // Evict position 1 once it is kept, to make the gather non-trivial.
    for (size_t slot = 0; slot < kept().size(); ++slot) {
      if (kept()[slot] == 1) return {slot};
    }
    return {};
  }
  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }
};

TEST(Harness, PolicySeesTheKeptWeightsInKeptOrderUnrenormalized) {
  // spec/harness.md#what-a-policy-sees. Step 0 admits 0, 1, 2; position 1
  // is evicted at once, so step 1's full-cache row (0.5, 0.25, 0.125) is
  // gathered to (0.5, 0.125) for kept positions 0 and 2 -- not rescaled to
  // sum to 1.
  RecordingPolicy policy;
  Scenario scenario;
  scenario.steps.push_back({3, std::nullopt});
  scenario.steps.push_back({1, std::vector<float>{0.5f, 0.25f, 0.125f}});
  const RunResult result = RunScenario(policy, scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(policy.seen.size(), 1u);
  EXPECT_EQ(*policy.seen[0], (std::vector<float>{0.5f, 0.125f}));
}

TEST(Harness, NullAttentionReachesNoPolicyHook) {
  RecordingPolicy policy;
  Scenario scenario;
  scenario.steps.push_back({1, std::nullopt});
  scenario.steps.push_back({1, std::nullopt});
  ASSERT_TRUE(RunScenario(policy, scenario).refusal.ok());
  EXPECT_TRUE(policy.seen.empty());
}

TEST(Harness, EmptyRowAtTheFirstStepIsRecorded) {
  // Present-but-empty is not null: the policy is called with no weights.
  RecordingPolicy policy;
  Scenario scenario;
  scenario.steps.push_back({1, std::vector<float>{}});
  ASSERT_TRUE(RunScenario(policy, scenario).refusal.ok());
  ASSERT_EQ(policy.seen.size(), 1u);
  EXPECT_TRUE(policy.seen[0]->empty());
}

TEST(Harness, LogsVictimsKeptCountAndQueryPosition) {
  const Scenario scenario{"s", {{2, std::nullopt}, {3, std::nullopt}}};
  const RunResult result = RunScenario({"window", {{"budget", 3}}}, scenario);
  ASSERT_TRUE(result.refusal.ok());
  ASSERT_EQ(result.steps.size(), 2u);
  EXPECT_EQ(result.steps[0], (StepRecord{{}, 2, 0}));
  EXPECT_EQ(result.steps[1], (StepRecord{{0, 1}, 3, 2}));
}

TEST(Harness, RefusesARowOfTheWrongLengthAndKeepsEarlierSteps) {
  // The row must cover every position admitted before the step (3 here),
  // not just the kept ones (2, with budget 2).
  Scenario scenario;
  scenario.steps.push_back({3, std::nullopt});
  scenario.steps.push_back({1, std::vector<float>{0.5f, 0.5f}});
  const RunResult result = RunScenario({"window", {{"budget", 2}}}, scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kAttentionLength);
  EXPECT_EQ(result.refused_step, 1);
  EXPECT_NE(result.refusal.message().find("step 1"), absl::string_view::npos);
  ASSERT_EQ(result.steps.size(), 1u);
  EXPECT_EQ(result.steps[0].victims, (std::vector<Position>{0}));
}

TEST(Harness, RefusesABadWeightAtAnEvictedPosition) {
  // Row values are checked for every position, kept or not: a scenario with
  // a NaN is malformed whichever policy reads it.
  Scenario scenario;
  scenario.steps.push_back({3, std::nullopt});
  scenario.steps.push_back({1, std::vector<float>{std::nanf(""), 0.5f, 0.5f}});
  const RunResult result = RunScenario({"window", {{"budget", 2}}}, scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kAttentionValue);
  EXPECT_NE(result.refusal.message().find(
                "step 1: attention weight 0 (position 0) is NaN"),
            absl::string_view::npos)
      << result.refusal;
}

TEST(Harness, RefusesAStepAdmittingNothing) {
  const Scenario scenario{"s", {{1, std::nullopt}, {0, std::nullopt}}};
  const RunResult result = RunScenario({"full", {}}, scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kPosition);
  EXPECT_EQ(result.refused_step, 1);
  EXPECT_EQ(result.steps.size(), 1u);
}

TEST(Harness, ChecksAdmitBeforeTheRow) {
  const Scenario scenario{"s", {{0, std::vector<float>{1.0f}}}};
  const RunResult result = RunScenario({"full", {}}, scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kPosition);
}

TEST(Harness, ARefusedConfigurationGivesAnEmptyLog) {
  const Scenario scenario{"s", {{1, std::nullopt}}};
  const RunResult result = RunScenario({"window", {{"budget", 0}}}, scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kInvalidParameter);
  EXPECT_EQ(result.refused_step, -1);
  EXPECT_TRUE(result.steps.empty());
}

TEST(Harness, RecordsTheCutOfScoreBasedEvictions) {
  // h2o, budget 3, recent window 1 (spec/policies/h2o.md's example): sums
  // 1.5, 0.625, 0.5 for candidates 0, 1, 2. The cut lists the victim, then
  // the survivors in rank order, with the scores they were ranked by.
  const Scenario scenario{"s", {{1, std::nullopt},
                                {1, std::vector<float>{1.0f}},
                                {1, std::vector<float>{0.25f, 0.5f}},
                                {1, std::vector<float>{0.25f, 0.125f, 0.5f}}}};
  const RunResult result =
      RunScenario({"h2o", {{"budget", 3}, {"recent_window", 1}}}, scenario,
                  RunOptions{/*record_cut=*/true});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 4u);
  EXPECT_TRUE(result.steps[2].cut.empty());  // no eviction, no cut
  EXPECT_EQ(result.steps[3].cut,
            (std::vector<RankedCandidate>{{2, 0.5}, {1, 0.625}, {0, 1.5}}));
}

TEST(Harness, PositionalPoliciesHaveNoCut) {
  const Scenario scenario{"s", {{5, std::nullopt}}};
  const RunResult result = RunScenario({"window", {{"budget", 2}}}, scenario,
                                       RunOptions{/*record_cut=*/true});
  ASSERT_EQ(result.steps.size(), 1u);
  EXPECT_EQ(result.steps[0].victims.size(), 3u);
  EXPECT_TRUE(result.steps[0].cut.empty());
}

TEST(CacheRelativePosition, IsTheIndexInKeptOrder) {
  const std::vector<Position> kept = {0, 1, 7, 9};
  EXPECT_EQ(CacheRelativePosition(kept, 0), 0u);
  EXPECT_EQ(CacheRelativePosition(kept, 7), 2u);
  EXPECT_EQ(CacheRelativePosition(kept, 9), 3u);
  EXPECT_EQ(CacheRelativePosition(kept, 8), std::nullopt);
  EXPECT_EQ(CacheRelativePosition(kept, 10), std::nullopt);
}

// spec/heads.md, worked by hand. Two query heads; positions 0 and 1 are
// admitted by a null chunk, then step 1 records head 0's row [0.5, 0.25]
// and head 1's [0.0, 0.375], admits 2, and must evict one of 0 and 1
// (budget 2, recent window 1 protects 2).
Scenario TwoHeads(uint32_t kv_heads) {
  Scenario scenario;
  scenario.id = "two-heads";
  scenario.query_heads = 2;
  scenario.kv_heads = kv_heads;
  scenario.steps.push_back({2, std::nullopt, {}});
  scenario.steps.push_back({1, std::nullopt, {{0.5f, 0.25f}, {0.0f, 0.375f}}});
  return scenario;
}

PolicyConfig H2o(int64_t granularity, int64_t aggregation) {
  return {"h2o",
          {{"budget", 2},
           {"recent_window", 1},
           {"granularity", granularity},
           {"aggregation", aggregation}}};
}

TEST(Heads, OneSetRanksByTheCombinedScore) {
  // One set of both heads (kv_heads 1): mean 0.25 vs 0.3125 -> 0 goes;
  // sum 0.5 vs 0.625 -> 0 goes; max 0.5 vs 0.375 -> 1 goes.
  const struct {
    int64_t aggregation;
    Position victim;
  } cases[] = {{0, 0}, {2, 0}, {1, 1}};
  for (const auto& c : cases) {
    const RunResult result = RunScenario(H2o(1, c.aggregation), TwoHeads(1));
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    ASSERT_EQ(result.steps.size(), 2u);
    EXPECT_TRUE(result.steps[1].sets.empty());  // one set: the step's fields
    EXPECT_EQ(result.steps[1].victims, std::vector<Position>{c.victim})
        << "aggregation " << c.aggregation;
    EXPECT_EQ(result.steps[1].kept_count, 2u);
  }
}

TEST(Heads, QueryHeadSetsEachFollowTheirHead) {
  // granularity query_head: set 0 (head 0) evicts 1 (0.25 < 0.5), set 1
  // (head 1) evicts 0 (0.0 < 0.375); the log holds one record per set.
  const RunResult result = RunScenario(H2o(2, 0), TwoHeads(1));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 2u);
  ASSERT_EQ(result.steps[1].sets.size(), 2u);
  EXPECT_TRUE(result.steps[1].victims.empty());
  EXPECT_EQ(result.steps[1].kept_count, 0u);
  StepRecord set0, set1;
  set0.victims = {1};
  set0.kept_count = 2;
  set0.query_cache_position = 2;
  set1 = set0;
  set1.victims = {0};
  EXPECT_EQ(result.steps[1].sets[0], set0);
  EXPECT_EQ(result.steps[1].sets[1], set1);
  // Step 0 evicted nothing, and still logs both sets.
  ASSERT_EQ(result.steps[0].sets.size(), 2u);
  EXPECT_TRUE(result.steps[0].sets[0].victims.empty());
  // kv_head with kv_heads 2 is the same two sets.
  EXPECT_EQ(RunScenario(H2o(1, 0), TwoHeads(2)).steps, result.steps);
}

TEST(Heads, APolicyThatDoesNotReadAttentionKeepsOneSet) {
  const RunResult result =
      RunScenario(PolicyConfig{"window", {{"budget", 2}}}, TwoHeads(2));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_TRUE(result.steps[1].sets.empty());
  EXPECT_EQ(result.steps[1].victims, std::vector<Position>{0});
  EXPECT_EQ(CategoryOf(RunScenario(PolicyConfig{"window", {{"granularity", 1}}},
                                   TwoHeads(2))
                           .refusal),
            ErrorCategory::kInvalidParameter);
}

TEST(Heads, EveryRowLengthIsCheckedBeforeAnyWeight) {
  // Head 0 holds a NaN, head 1 is one weight short: ATTENTION_LENGTH.
  Scenario scenario = TwoHeads(1);
  scenario.steps[1].heads = {{std::nanf(""), 0.5f}, {0.5f}};
  RunResult result = RunScenario(H2o(1, 0), scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kAttentionLength);
  EXPECT_EQ(result.refused_step, 1);
  // Lengths repaired: the NaN in head 0 is reported, naming the head.
  scenario.steps[1].heads[1] = {0.5f, 0.5f};
  result = RunScenario(H2o(1, 0), scenario);
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kAttentionValue);
  EXPECT_NE(result.refusal.message().find("head 0"), absl::string_view::npos)
      << result.refusal;
}

TEST(Heads, RowsMustBeInTheFieldTheHeadCountSays) {
  Scenario scenario = TwoHeads(1);
  scenario.steps[1].heads.clear();
  scenario.steps[1].attention = std::vector<float>{0.5f, 0.25f};
  EXPECT_EQ(CategoryOf(RunScenario(H2o(1, 0), scenario).refusal),
            ErrorCategory::kAttentionLength);
  scenario.steps[1].attention.reset();
  scenario.steps[1].heads = {{0.5f, 0.25f}};  // one row for two heads
  EXPECT_EQ(CategoryOf(RunScenario(H2o(1, 0), scenario).refusal),
            ErrorCategory::kAttentionLength);
  scenario.query_heads.reset();  // one head: `heads` must be empty
  scenario.kv_heads.reset();
  EXPECT_EQ(CategoryOf(RunScenario(H2o(1, 0), scenario).refusal),
            ErrorCategory::kAttentionLength);
}

TEST(Heads, HeadCountsAreCheckedAfterTheConfigurationAndBothFields) {
  Scenario scenario = TwoHeads(3);  // 3 does not divide 2
  EXPECT_EQ(CategoryOf(RunScenario(H2o(1, 0), scenario).refusal),
            ErrorCategory::kInvalidHeads);
  EXPECT_EQ(CategoryOf(RunScenario(PolicyConfig{"h2o", {{"budget", 0}}},
                                   scenario)
                           .refusal),
            ErrorCategory::kInvalidParameter);
  scenario.trace = TraceConfig{};
  EXPECT_EQ(CategoryOf(RunScenario(H2o(1, 0), scenario).refusal),
            ErrorCategory::kInvalidTrace);  // steps and a trace, first
}

// spec/trace.md#several-heads: head 0 of a multi-head trace is the
// single-head trace, so with one set per query head, set 0 keeps exactly
// what the single-head run keeps; head 1 (a sink head with its own seed)
// keeps something else.
TEST(Heads, TraceHeadZeroIsTheSingleHeadTrace) {
  TraceConfig config;
  config.steps = 600;
  Scenario one;
  one.id = "one";
  one.trace = config;
  Scenario two = one;
  two.query_heads = 2;
  two.kv_heads = 2;
  const PolicyConfig policy{"h2o", {{"budget", 64}, {"granularity", 2}}};
  const RunResult single = RunScenario(policy, one);
  const RunResult both = RunScenario(policy, two);
  ASSERT_TRUE(single.refusal.ok()) << single.refusal;
  ASSERT_TRUE(both.refusal.ok()) << both.refusal;
  ASSERT_EQ(both.steps.size(), single.steps.size());
  bool head_one_differs = false;
  for (size_t t = 0; t < single.steps.size(); ++t) {
    ASSERT_EQ(both.steps[t].sets.size(), 2u);
    EXPECT_EQ(both.steps[t].sets[0], single.steps[t]) << "step " << t;
    head_one_differs = head_one_differs ||
                       both.steps[t].sets[1].victims != single.steps[t].victims;
  }
  EXPECT_TRUE(head_one_differs);
}

// spec/heads.md#head-adaptive-budgets, worked by hand. Two heads, one set
// each (query_head), budget 2, recent window 1: the layer keeps 4.
// Step 1 (rows [0.5, 0.25] and [0.0625, 0.125], admits 2): 6 kept, 2 go.
// Joint order (0.0625, 0, set 1), (0.125, 1, set 1), (0.25, 1, set 0),
// (0.5, 0, set 0); the floor is max(1, 2 * 200 / 1000) = 1, so set 1 loses
// 0 and 1 and keeps 2 alone. Step 2 (rows [0.5, 0.25, 0.25] and
// [0, 0, 0.5], admits 3): set 0 keeps 0, 1, 2, 3 with sums 1.0, 0.5, 0.25
// (3 protected), set 1 keeps 2 (sum 0.5) and 3: order (0.25, 2, set 0),
// (0.5, 1, set 0), (0.5, 2, set 1), ...: set 0 loses 1 and 2.
TEST(Heads, AdaptiveBudgetEvictsByOneJointRanking) {
  Scenario scenario;
  scenario.id = "adakv";
  scenario.query_heads = 2;
  scenario.kv_heads = 2;
  scenario.steps.push_back({2, std::nullopt, {}});
  scenario.steps.push_back({1, std::nullopt, {{0.5f, 0.25f}, {0.0625f, 0.125f}}});
  scenario.steps.push_back(
      {1, std::nullopt, {{0.5f, 0.25f, 0.25f}, {0.0f, 0.0f, 0.5f}}});
  const PolicyConfig adaptive{"h2o",
                              {{"budget", 2},
                               {"recent_window", 1},
                               {"granularity", 2},
                               {"adaptive", 1}}};
  const RunResult result = RunScenario(adaptive, scenario);
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 3u);
  auto record = [](std::vector<Position> victims, uint32_t kept,
                   uint32_t query) {
    StepRecord r;
    r.victims = std::move(victims);
    r.kept_count = kept;
    r.query_cache_position = query;
    return r;
  };
  ASSERT_EQ(result.steps[1].sets.size(), 2u);
  EXPECT_EQ(result.steps[1].sets[0], record({}, 3, 2));
  EXPECT_EQ(result.steps[1].sets[1], record({0, 1}, 1, 2));
  EXPECT_EQ(result.steps[2].sets[0], record({1, 2}, 2, 3));
  EXPECT_EQ(result.steps[2].sets[1], record({}, 2, 1));

  // safeguard 1000: the floor is the budget, each set evicts its own lowest
  // (spec/heads.md: the non-adaptive layer).
  PolicyConfig fixed_floor = adaptive;
  fixed_floor.parameters.push_back({"safeguard_permille", 1000});
  PolicyConfig fixed = adaptive;
  fixed.parameters[3].value = 0;
  EXPECT_EQ(RunScenario(fixed_floor, scenario).steps,
            RunScenario(fixed, scenario).steps);
  EXPECT_EQ(RunScenario(fixed, scenario).steps[1].sets[0].victims,
            std::vector<Position>{1});
}

// The shared budget's walk ranks only the lowest pairs when no cut is
// recorded, and everything when a floor binds: both must evict alike. Head
// 1 pays nothing, so its set loses two positions a step down to its floor
// (budget 10, safeguard 200: floor 2).
TEST(Heads, AdaptiveVictimsDoNotDependOnRecordingTheCut) {
  Scenario scenario;
  scenario.id = "floor";
  scenario.query_heads = 2;
  scenario.kv_heads = 2;
  scenario.steps.push_back({10, std::nullopt, {}});
  for (uint32_t t = 1; t < 12; ++t) {
    const uint32_t admitted = 9 + t;
    scenario.steps.push_back({1, std::nullopt,
                              {std::vector<float>(admitted, 1.0f),
                               std::vector<float>(admitted, 0.0f)}});
  }
  const PolicyConfig config{"h2o",
                            {{"budget", 10},
                             {"recent_window", 1},
                             {"granularity", 2},
                             {"adaptive", 1}}};
  const RunResult fast = RunScenario(config, scenario, RunOptions{false});
  const RunResult ranked = RunScenario(config, scenario, RunOptions{true});
  ASSERT_TRUE(fast.refusal.ok()) << fast.refusal;
  ASSERT_EQ(fast.steps.size(), ranked.steps.size());
  for (size_t t = 0; t < fast.steps.size(); ++t) {
    for (size_t s = 0; s < 2; ++s) {
      EXPECT_EQ(fast.steps[t].sets[s].victims, ranked.steps[t].sets[s].victims)
          << "step " << t << " set " << s;
    }
  }
  // Head 1's set ends at its floor, 2 positions; head 0's holds the rest.
  EXPECT_EQ(fast.steps.back().sets[1].kept_count, 2u);
  EXPECT_EQ(fast.steps.back().sets[0].kept_count, 18u);
}

}  // namespace
}  // namespace kvspec
