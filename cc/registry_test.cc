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
                                             "random", "openvino"}));
  for (const PolicyInfo& info : policies) {
    EXPECT_EQ(info.card, "spec/policies/" + info.name + ".md");
    // Every registered policy builds with its defaults.
    EXPECT_TRUE(MakePolicy({info.name, {}}).ok()) << info.name;
  }
}

TEST(Registry, PolicyReportsItsName) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    auto policy = MakePolicy({info.name, {}});
    ASSERT_TRUE(policy.ok());
    EXPECT_EQ((*policy)->name(), info.name);
  }
}

}  // namespace
}  // namespace kvspec
