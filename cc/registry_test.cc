// The registry's refusals (spec/harness.md#configuration); each policy's own
// parameter rules are tested beside the policy.
#include "cc/registry.h"

#include <string>
#include <vector>

#include "cc/errors.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

void ExpectRefused(const PolicyConfig& config, ErrorCategory category,
                   const std::string& fragment) {
  const auto policy = MakePolicy(config);
  ASSERT_FALSE(policy.ok()) << config.name;
  EXPECT_EQ(CategoryOf(policy.status()), category) << policy.status();
  EXPECT_NE(policy.status().message().find(fragment), absl::string_view::npos)
      << policy.status();
}

TEST(Registry, RefusesAnUnknownPolicyAndListsTheKnownOnes) {
  ExpectRefused({"lru", {}}, ErrorCategory::kUnknownPolicy,
                "unknown policy 'lru'; the registry has full, window, "
                "streamingllm, h2o, tova, snapkv, random");
  EXPECT_EQ(MakePolicy({"lru", {}}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(Registry, NamesAreCaseSensitive) {
  ExpectRefused({"Window", {}}, ErrorCategory::kUnknownPolicy, "'Window'");
}

TEST(Registry, RefusesAnUnknownParameter) {
  ExpectRefused({"window", {{"budgett", 4}}}, ErrorCategory::kInvalidParameter,
                "window: unknown parameter 'budgett'; window takes budget");
}

TEST(Registry, RefusesARepeatedParameter) {
  ExpectRefused({"window", {{"budget", 4}, {"budget", 4}}},
                ErrorCategory::kInvalidParameter,
                "parameter 'budget' is given twice");
}

TEST(Registry, RangeMessageNamesParameterRangeAndValue) {
  ExpectRefused({"streamingllm", {{"budget", 0}}},
                ErrorCategory::kInvalidParameter,
                "streamingllm: budget must be in [1, 4294967295], got 0");
}

TEST(Registry, ParameterOrderDoesNotMatter) {
  EXPECT_TRUE(MakePolicy({"streamingllm", {{"sinks", 1}, {"budget", 4}}}).ok());
  EXPECT_TRUE(MakePolicy({"streamingllm", {{"budget", 4}, {"sinks", 1}}}).ok());
}

TEST(Registry, ListsEveryPolicyWithItsCard) {
  const auto& policies = RegisteredPolicies();
  std::vector<std::string> names;
  for (const PolicyInfo& info : policies) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"full", "window", "streamingllm",
                                             "h2o", "tova", "snapkv",
                                             "random", "openvino", "knorm",
                                             "keydiff", "lagkv",
                                             "simlayerkv"}));
  for (const PolicyInfo& info : policies) {
    EXPECT_EQ(info.card, "spec/policies/" + info.name + ".md");
    // Every registered policy builds with its defaults.
    EXPECT_TRUE(MakePolicy({info.name, {}}).ok()) << info.name;
  }
}

// spec/tensors.md#policies-that-read-keys: knorm and keydiff read keys,
// lagkv keys and values, every other policy neither.
TEST(Registry, KnowsWhichPoliciesReadTensors) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    const bool keys = info.name == "knorm" || info.name == "keydiff" ||
                      info.name == "lagkv";
    EXPECT_EQ(ReadsKeys(info.name), keys) << info.name;
    EXPECT_EQ(ReadsValues(info.name), info.name == "lagkv") << info.name;
  }
  EXPECT_FALSE(ReadsValues("no-such-policy"));
}

TEST(Registry, PolicyReportsItsName) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    auto policy = MakePolicy({info.name, {}});
    ASSERT_TRUE(policy.ok());
    EXPECT_EQ((*policy)->name(), info.name);
  }
}

// spec/prefill.md#when-a-policy-evicts and #budgets-from-a-ratio, worked by
// hand from the spec's text.
TEST(Registry, StepBudgetFollowsTheStepBudgetRule) {
  const PolicyConfig tova{"tova", {{"recent_window", 0}, {"ratio_ppm", 900000}}};
  const PolicyConfig h2o{"h2o", {{"recent_window", 0}, {"ratio_ppm", 750000}}};
  const PolicyConfig plain{"streamingllm", {{"budget", 6}, {"sinks", 2}}};
  const PolicyConfig ratio{
      "snapkv",
      {{"recent_window", 0}, {"prefill_only", 1}, {"ratio_ppm", 500000}}};
  for (const PolicyConfig& config : {tova, h2o, plain, ratio}) {
    ASSERT_TRUE(MakePolicy(config).ok()) << MakePolicy(config).status();
  }
  // 1024 x (1 - 0.5) = 512 exactly.
  EXPECT_EQ(StepBudget(ratio, /*prefill_step=*/true, 1024), 512u);
  // A decode step under prefill_only evicts nothing.
  EXPECT_EQ(StepBudget(ratio, /*prefill_step=*/false, 1024), std::nullopt);
  // The spec's example: n = 20, ratio_ppm = 900000: 1 - 0.9 is
  // 0.09999999999999998 in binary64, u = 1.9999999999999996, B = 1.
  EXPECT_EQ(StepBudget(tova, true, 20), 1u);
  // max(1, ...): 3 x (1 - 0.75) = 0.75 floors to 0, the budget is 1.
  EXPECT_EQ(StepBudget(h2o, true, 3), 1u);
  // Without a ratio every step's budget is `budget`; prefill steps too.
  EXPECT_EQ(StepBudget(plain, true, 100), 6u);
  EXPECT_EQ(StepBudget(plain, false, 100), 6u);
  // Policies without the prefill parameters have no step budget rule here.
  EXPECT_EQ(StepBudget({"window", {{"budget", 6}}}, true, 100), std::nullopt);
  EXPECT_EQ(StepBudget({"full", {}}, true, 100), std::nullopt);
  // A ratio's budget only where a ratio sets it.
  EXPECT_EQ(PrefillRatioBudget(ratio, 1024), 512u);
  EXPECT_EQ(PrefillRatioBudget(tova, 20), 1u);
  EXPECT_EQ(PrefillRatioBudget(plain, 100), std::nullopt);  // ratio_ppm 0
  EXPECT_EQ(PrefillRatioBudget({"window", {{"budget", 6}}}, 100), std::nullopt);
  EXPECT_EQ(PrefillRatioBudget({"tova", {{"ratio_ppm", 500000}}}, 100),
            std::nullopt);  // refused: ratio_ppm needs recent_window 0
  EXPECT_EQ(PrefillRatioBudget({"nope", {}}, 100), std::nullopt);
}

}  // namespace
}  // namespace kvspec
