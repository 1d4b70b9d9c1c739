// The census cannot be fooled by a pair of cases with one log (issue 19):
// h2o/adakv/floor-raised-to-one and h2o/adakv/safeguard-zero-empties, as
// generated before 0.7.0's fix, both claimed heads.safeguard with
// byte-identical logs, and the old decider accepted both because safeguard
// 1000 changes either log through another rule (a high floor binding). The
// new census fails that pair, fails either case claiming the floor rule it
// was named for, and passes the cases that pin those rules.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tools/census/census.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace {

using Edit = std::function<void(v1::Case&)>;

// The census failures of a suite holding only the given cases (copies from
// vectors/, each changed by its edit) that name one of them: the flags the
// whole suite must decide are left out.
std::vector<std::string> Failures(const std::vector<std::pair<std::string, Edit>>& cases) {
  const auto set = vectors::LoadVectorSet("vectors");
  EXPECT_TRUE(set.ok()) << set.status();
  vectors::VectorSet suite;
  std::vector<std::string> file_names;
  suite.files.reserve(cases.size());
  for (const auto& [id, edit] : cases) {
    const vectors::LoadedCase* loaded = vectors::FindCase(*set, id);
    EXPECT_NE(loaded, nullptr) << id;
    if (loaded == nullptr) continue;
    v1::VectorFile& file = suite.files.emplace_back();
    *file.add_scenarios() = *loaded->scenario;
    *file.add_cases() = *loaded->vector;
    edit(*file.mutable_cases(0));
    file_names.push_back(loaded->file);
  }
  for (size_t i = 0; i < suite.files.size(); ++i) {
    suite.cases.push_back(
        {&suite.files[i].cases(0), &suite.files[i].scenarios(0), file_names[i]});
  }
  std::vector<std::string> failures;
  for (const std::string& failure : audit::RunCensus(suite).failures) {
    if (failure.rfind("case ", 0) == 0 || failure.rfind("cases ", 0) == 0) {
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

Edit Flags(std::vector<std::string> flags) {
  return [flags](v1::Case& c) {
    c.clear_flags();
    for (const std::string& flag : flags) c.add_flags(flag);
  };
}

const Edit kAsGenerated = [](v1::Case&) {};

TEST(CensusIdenticalLogs, TheOldPairFails) {
  // Both as generated before the fix: heads.safeguard on each.
  const auto failures =
      Failures({{"h2o/adakv/floor-raised-to-one", Flags({"heads.safeguard"})},
                {"h2o/adakv/safeguard-zero-empties", Flags({"heads.safeguard"})}});
  EXPECT_TRUE(Has(failures,
                  "cases h2o/adakv/floor-raised-to-one and "
                  "h2o/adakv/safeguard-zero-empties: both claim heads.safeguard"))
      << ::testing::PrintToString(failures);
  // Floor 0's neighbour, floor 1, evicts the same: heads.safeguard did not
  // decide it (the old decider took safeguard 1000's change instead).
  EXPECT_TRUE(Has(failures,
                  "case h2o/adakv/safeguard-zero-empties: flag heads.safeguard "
                  "did not decide it"));
}

TEST(CensusIdenticalLogs, TheOldPairCannotClaimTheFloorRules) {
  const auto failures = Failures(
      {{"h2o/adakv/floor-raised-to-one", Flags({"heads.floor-at-least-one"})},
       {"h2o/adakv/safeguard-zero-empties",
        Flags({"heads.floor-zero-when-safeguard-zero"})}});
  EXPECT_TRUE(Has(failures,
                  "case h2o/adakv/floor-raised-to-one: flag "
                  "heads.floor-at-least-one did not decide it"));
  EXPECT_TRUE(Has(failures,
                  "case h2o/adakv/safeguard-zero-empties: flag "
                  "heads.floor-zero-when-safeguard-zero did not decide it"));
}

TEST(CensusIdenticalLogs, TheFixedCasesPass) {
  const auto failures = Failures({{"h2o/adakv/floor-raised-to-one", kAsGenerated},
                                  {"h2o/adakv/safeguard-zero-empties", kAsGenerated},
                                  {"h2o/adakv/floor-one-binds", kAsGenerated},
                                  {"h2o/adakv/safeguard-zero-empties-head-0", kAsGenerated},
                                  {"h2o/adakv/floor-rounds-down", kAsGenerated}});
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
}

TEST(CensusIdenticalLogs, RoundingUpIsTheRoundingFlagsCounterfactual) {
  // floor-rounds-down claims heads.floor-rounds-down (floor 4 changes it);
  // the raise to one cannot be claimed there (7 * 500 / 1000 is not 0).
  const auto failures = Failures(
      {{"h2o/adakv/floor-rounds-down", Flags({"heads.floor-at-least-one"})}});
  EXPECT_TRUE(Has(failures, "flag heads.floor-at-least-one did not decide it"));
}

}  // namespace
}  // namespace kvspec
