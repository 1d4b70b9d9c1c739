// The census's feature check (spec/features.md) is not vacuous: a case that
// declares fewer features than it uses, or a `since` earlier than its
// rules, fails it; the case as generated passes it.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/census/census.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace {

// A suite of one case (a copy of `id` from vectors/), changed by `edit`.
std::vector<std::string> FeatureFailures(
    const std::string& id, const std::function<void(v1::Case&)>& edit) {
  const auto set = vectors::LoadVectorSet("vectors");
  EXPECT_TRUE(set.ok()) << set.status();
  const vectors::LoadedCase* loaded = vectors::FindCase(*set, id);
  EXPECT_NE(loaded, nullptr) << id;
  vectors::VectorSet one;
  v1::VectorFile& file = one.files.emplace_back();
  *file.add_scenarios() = *loaded->scenario;
  v1::Case& vector = *file.add_cases();
  vector = *loaded->vector;
  edit(vector);
  one.cases.push_back({&vector, &file.scenarios(0), loaded->file});
  std::vector<std::string> failures;
  for (const std::string& failure : audit::RunCensus(one).failures) {
    if (failure.find("feature") != std::string::npos ||
        failure.find("since") != std::string::npos) {
      failures.push_back(failure);
    }
  }
  return failures;
}

bool Has(const std::vector<std::string>& failures, const std::string& text) {
  for (const std::string& failure : failures) {
    if (failure.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(CensusFeatures, TheGeneratedCasesPass) {
  for (const char* id : {"h2o/heads/sum-no-tie", "prefill/snapkv/window-outside",
                         "harness/trace-bounds/heavy-mass-above-max"}) {
    EXPECT_TRUE(FeatureFailures(id, [](v1::Case&) {}).empty()) << id;
  }
}

TEST(CensusFeatures, AHeadsCaseWithoutHeadsFails) {
  const auto failures = FeatureFailures("h2o/heads/sum-no-tie", [](v1::Case& c) {
    c.clear_features();
    c.add_features("decode");
  });
  EXPECT_TRUE(Has(failures, "uses feature heads but does not declare it"));
  // The port without heads sees one row of null attention: another log.
  EXPECT_TRUE(Has(failures, "gets another log"));
}

TEST(CensusFeatures, APrefillCaseWithoutPrefillFails) {
  const auto failures = FeatureFailures("prefill/snapkv/window-outside", [](v1::Case& c) {
    c.clear_features();
    c.add_features("decode");
  });
  EXPECT_TRUE(Has(failures, "uses feature prefill but does not declare it"));
  EXPECT_TRUE(Has(failures, "gets another log"));
}

TEST(CensusFeatures, ASinceBeforeTheCaseRulesFails) {
  // Masses above 1 are refused since 0.4.0 (bounds.trace).
  const auto failures =
      FeatureFailures("harness/trace-bounds/heavy-mass-above-max",
                      [](v1::Case& c) { c.set_since("0.3.0"); });
  EXPECT_TRUE(Has(failures, "since '0.3.0'"));
  // A prefill case claimed for 0.5.0: its parameters are of 0.6.0, and a
  // 0.5.0 port refuses them.
  const auto prefill = FeatureFailures("prefill/snapkv/window-outside",
                                       [](v1::Case& c) { c.set_since("0.5.0"); });
  EXPECT_TRUE(Has(prefill, "since '0.5.0'"));
  EXPECT_TRUE(Has(prefill, "gets another log"));
}

TEST(CensusFeatures, AnUnknownFeatureFails) {
  const auto failures = FeatureFailures("h2o/heads/sum-no-tie",
                                        [](v1::Case& c) { c.add_features("telepathy"); });
  EXPECT_TRUE(Has(failures, "unknown feature telepathy"));
}

}  // namespace
}  // namespace kvspec
