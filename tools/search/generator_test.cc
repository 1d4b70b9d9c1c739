// The search's generator: reproducible, valid enough to search the rules
// (not only the refusals), covering every part of the input space its
// header promises, and shrink moves that keep a scenario well-formed.
#include "tools/search/generator.h"

#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "gtest/gtest.h"
#include "tools/vectors/features.h"

namespace kvspec {
namespace search {
namespace {

constexpr int kCases = 3000;

TEST(GeneratorTest, CaseIsAFunctionOfSeedAndIndex) {
  for (uint64_t index : {0, 1, 17, 2999}) {
    EXPECT_EQ(CaseText(GenerateCase(7, index)), CaseText(GenerateCase(7, index)));
  }
  int same = 0;
  for (uint64_t index = 0; index < 100; ++index) {
    same += CaseText(GenerateCase(7, index)) == CaseText(GenerateCase(8, index));
  }
  EXPECT_LT(same, 5) << "seeds 7 and 8 should give different cases";
}

TEST(GeneratorTest, CoversTheInputSpace) {
  std::map<std::string, int> tags;
  std::set<std::string> features;
  for (int i = 0; i < kCases; ++i) {
    const SearchCase c = GenerateCase(1, i);
    for (const std::string& tag : Tags(c)) ++tags[tag];
    for (const std::string& f : vectors::CaseFeatures(ToProto(c.policy), ToProto(c.scenario))) {
      features.insert(f);
    }
  }
  std::vector<std::string> wanted = {
      "heads:none", "keys", "values", "prefill", "prefill-after-decode", "decode-after-prefill",
      "queries<obs_window", "queries=obs_window", "queries>obs_window", "null",
      "chunk", "chunk=budget", "chunk>budget", "trace", "trace-heads",
      "weight:subnormal", "weight:flt-min", "weight:large", "weight:tie",
      "weight:near-tie", "weight:refused", "protect_newest+recent_window",
      "param-out-of-range", "param-unknown"};
  for (int h = 1; h <= 8; ++h) {
    wanted.push_back("heads:" + std::to_string(h));
    wanted.push_back("group:" + std::to_string(h));
  }
  for (const PolicyInfo& policy : RegisteredPolicies()) {
    wanted.push_back("policy:" + policy.name);
    for (const ParameterInfo& p : policy.parameters) wanted.push_back("param:" + p.name);
  }
  for (const std::string& tag : wanted) {
    EXPECT_GE(tags[tag], 5) << "tag " << tag << " in " << kCases << " cases";
  }
  for (const vectors::FeatureInfo& f : vectors::Features()) {
    EXPECT_EQ(features.count(f.name), 1u) << "no generated case needs feature " << f.name;
  }
}

TEST(GeneratorTest, MostCasesAreAcceptedAndSomeRefused) {
  int refused = 0;
  std::map<std::string, int> evicting;
  for (int i = 0; i < kCases; ++i) {
    const SearchCase c = GenerateCase(1, i);
    const RunResult result = RunScenario(c.policy, c.scenario);
    if (!result.refusal.ok()) {
      ++refused;
      continue;
    }
    for (const StepRecord& step : result.steps) {
      bool evicts = !step.victims.empty();
      for (const StepRecord& set : step.sets) evicts = evicts || !set.victims.empty();
      if (evicts) {
        ++evicting[c.policy.name];
        for (const Parameter& p : c.policy.parameters) {
          if (p.name == "block" && p.value > 1) ++evicting["blocks"];
        }
        break;
      }
    }
  }
  EXPECT_GT(refused, kCases / 100) << "refusals are searched too";
  EXPECT_LT(refused, kCases / 10) << "the search would mostly test refusals";
  for (const PolicyInfo& policy : RegisteredPolicies()) {
    if (policy.name == "full") continue;
    EXPECT_GE(evicting[policy.name], 50) << policy.name << " cases that evict something";
  }
  // spec/blocks.md: blocks above 1 are drawn, accepted and evict.
  EXPECT_GE(evicting["blocks"], 100) << "cases with block above 1 that evict";
  std::printf("%d of %d cases refused; %d evict with block above 1\n", refused, kCases,
              evicting["blocks"]);
}

// A move changes the scenario's shape only as the spec allows: on a case
// the reference accepts, no move that keeps the policy makes the rows the
// wrong length or the heads malformed.
TEST(GeneratorTest, ShrinkMovesKeepScenariosWellFormed) {
  int checked = 0;
  for (int i = 0; i < 600; ++i) {
    const SearchCase c = GenerateCase(3, i);
    if (!RunScenario(c.policy, c.scenario).refusal.ok()) continue;
    for (const SearchCase& move : ShrinkMoves(c)) {
      if (!(move.policy.parameters.size() == c.policy.parameters.size() &&
            move.policy.seed == c.policy.seed)) {
        continue;
      }
      const absl::Status refusal = RunScenario(move.policy, move.scenario).refusal;
      const ErrorCategory category = CategoryOf(refusal);
      EXPECT_NE(category, ErrorCategory::kAttentionLength)
          << refusal << "\nfrom\n" << CaseText(c) << "move\n" << CaseText(move);
      EXPECT_NE(category, ErrorCategory::kInvalidHeads) << refusal;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(GeneratorTest, EveryMoveIsSmallerOrAParameterChange) {
  for (int i = 0; i < 200; ++i) {
    const SearchCase c = GenerateCase(5, i);
    for (const SearchCase& move : ShrinkMoves(c)) {
      EXPECT_LE(CaseSize(move), CaseSize(c)) << CaseText(c) << "move\n" << CaseText(move);
    }
  }
}

}  // namespace
}  // namespace search
}  // namespace kvspec
