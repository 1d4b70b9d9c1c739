#include "tools/census/combinations.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "tools/search/generator.h"
#include "tools/vectors/features.h"

namespace kvspec {
namespace audit {
namespace {

// The log without its refusal's message (never compared,
// spec/protocol.md#outcomes), and an empty rejection cleared.
std::string Comparable(v1::EvictionLog log) {
  log.mutable_rejection()->clear_message();
  if (!log.has_rejection() || log.rejection().category() == 0) log.clear_rejection();
  return log.SerializeAsString();
}

}  // namespace

std::vector<std::string> DecidedFeatures(const v1::PolicyConfig& policy,
                                         const v1::Scenario& scenario,
                                         const v1::EvictionLog& expected) {
  const std::vector<std::string> needed = vectors::CaseFeatures(policy, scenario);
  const std::string since = vectors::CaseSince(policy, scenario, {});
  const std::string want = Comparable(expected);
  std::vector<std::string> decided;
  for (const std::string& feature : needed) {
    std::set<std::string> without(needed.begin(), needed.end());
    without.erase(feature);
    // The feature's parameters left out (each then takes its default), not
    // refused as unknown: a refusal of the parameter's name says nothing of
    // what the rule does in this scenario.
    v1::PolicyConfig stripped = policy;
    for (std::string unknown = vectors::UnknownParameter(stripped, without, since);
         !unknown.empty(); unknown = vectors::UnknownParameter(stripped, without, since)) {
      auto* parameters = stripped.mutable_parameters();
      for (int i = 0; i < parameters->size(); ++i) {
        if (parameters->Get(i).name() == unknown) {
          parameters->DeleteSubrange(i, 1);
          break;
        }
      }
    }
    const v1::EvictionLog got =
        ToProto(RunScenario(FromProto(stripped),
                            FromProto(vectors::StripScenario(scenario, without)),
                            RunOptions{/*record_cut=*/true}));
    if (Comparable(got) != want) decided.push_back(feature);
  }
  return decided;
}

std::vector<std::string> Properties(const v1::PolicyConfig& policy,
                                    const v1::Scenario& scenario) {
  std::vector<std::string> properties;
  if (scenario.query_heads() > 1) properties.push_back("several-heads");
  bool admitted = false, prefill_seen = false, before = false, after = false;
  for (const v1::Step& step : scenario.steps()) {
    const bool prefill = step.queries_size() > 0;
    if (prefill && admitted) before = true;
    if (!prefill && prefill_seen) after = true;
    prefill_seen = prefill_seen || prefill;
    admitted = true;
  }
  if (before) properties.push_back("cache-before-prefill");
  if (after) properties.push_back("decode-after-prefill");
  for (const v1::Parameter& p : policy.parameters()) {
    if (p.name() == "ratio_ppm" && p.value() > 0) properties.push_back("ratio");
  }
  return properties;
}

std::vector<std::string> Combinations(const std::vector<std::string>& decided,
                                      const std::vector<std::string>& properties) {
  std::vector<std::string> out;
  for (size_t i = 0; i < decided.size(); ++i) {
    out.push_back(decided[i]);
    for (size_t j = i + 1; j < decided.size(); ++j) {
      out.push_back(absl::StrCat(decided[i], " + ", decided[j]));
    }
    for (const std::string& p : properties) out.push_back(absl::StrCat(decided[i], " + ", p));
  }
  return out;
}

CombinationCounts CountCombinations(const vectors::VectorSet& set, uint64_t seed,
                                    int64_t search_cases) {
  CombinationCounts counts;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const v1::Case& vector = *loaded.vector;
    if (vector.expected().has_rejection()) continue;  // accepted cases only
    for (const std::string& c :
         Combinations(DecidedFeatures(vector.policy(), *loaded.scenario, vector.expected()),
                      Properties(vector.policy(), *loaded.scenario))) {
      ++counts.vectors[c];
    }
  }
  counts.search_cases = search_cases;
  for (int64_t i = 0; i < search_cases; ++i) {
    const search::SearchCase c = search::GenerateCase(seed, static_cast<uint64_t>(i));
    const v1::PolicyConfig policy = ToProto(c.policy);
    const v1::Scenario scenario = ToProto(c.scenario);
    const RunResult result = RunScenario(c.policy, c.scenario, RunOptions{/*record_cut=*/true});
    if (!result.refusal.ok()) continue;  // accepted cases only
    const v1::EvictionLog expected = ToProto(result);
    for (const std::string& combination :
         Combinations(DecidedFeatures(policy, scenario, expected),
                      Properties(policy, scenario))) {
      ++counts.search[combination];
    }
  }
  return counts;
}

std::string CombinationTable(const CombinationCounts& counts) {
  std::set<std::string> all;
  for (const auto& [c, n] : counts.vectors) all.insert(c);
  for (const auto& [c, n] : counts.search) all.insert(c);
  std::string table = absl::StrFormat(
      "| combination decided | vectors | search cases (of %d) |\n| --- | ---: | ---: |\n",
      counts.search_cases);
  int gaps = 0;
  for (const std::string& c : all) {
    const auto v = counts.vectors.find(c);
    const auto s = counts.search.find(c);
    const int64_t nv = v == counts.vectors.end() ? 0 : v->second;
    const int64_t ns = s == counts.search.end() ? 0 : s->second;
    const bool gap = nv == 0 && ns > 0;
    gaps += gap ? 1 : 0;
    absl::StrAppendFormat(&table, "| %s | %s | %d |\n", c,
                          gap ? "**0**" : absl::StrCat(nv), ns);
  }
  absl::StrAppendFormat(&table,
                        "\n%d combinations decided, %d decided by search cases "
                        "and by no vector (marked **0**)\n",
                        all.size(), gaps);
  return table;
}

std::vector<std::string> Gaps(const CombinationCounts& counts) {
  std::vector<std::string> gaps;
  for (const auto& [c, n] : counts.search) {
    if (n > 0 && counts.vectors.find(c) == counts.vectors.end()) gaps.push_back(c);
  }
  return gaps;
}

namespace {

bool Evicts(const RunResult& result) {
  for (const StepRecord& step : result.steps) {
    if (!step.victims.empty()) return true;
    for (const StepRecord& set : step.sets) {
      if (!set.victims.empty()) return true;
    }
  }
  return false;
}

// DecidesCombination, and when `evicting`, only for a case that evicts.
bool Decides(const search::SearchCase& c, const std::string& combination, bool evicting) {
  const RunResult result = RunScenario(c.policy, c.scenario, RunOptions{/*record_cut=*/true});
  if (!result.refusal.ok()) return false;  // accepted cases only
  if (evicting && !Evicts(result)) return false;
  const v1::PolicyConfig policy = ToProto(c.policy);
  const v1::Scenario scenario = ToProto(c.scenario);
  for (const std::string& d : Combinations(DecidedFeatures(policy, scenario, ToProto(result)),
                                           Properties(policy, scenario))) {
    if (d == combination) return true;
  }
  return false;
}

}  // namespace

bool DecidesCombination(const search::SearchCase& c, const std::string& combination) {
  return Decides(c, combination, /*evicting=*/false);
}

std::optional<search::SearchCase> ShrunkWitness(const std::string& combination,
                                                uint64_t seed, int64_t search_cases,
                                                int max_rounds, int64_t& index,
                                                int& rounds) {
  std::optional<search::SearchCase> best;
  rounds = 0;
  for (const bool evicting : {true, false}) {
    uint64_t best_size = 0;
    for (int64_t i = 0; i < search_cases; ++i) {
      search::SearchCase c = search::GenerateCase(seed, static_cast<uint64_t>(i));
      if (!Decides(c, combination, evicting)) continue;
      const uint64_t size = search::CaseSize(c);
      if (!best.has_value() || size < best_size) {
        best = std::move(c);
        best_size = size;
        index = i;
      }
    }
    if (!best.has_value()) continue;  // none evicts: any accepted case
    while (rounds < max_rounds) {
      bool moved = false;
      for (search::SearchCase& move : search::ShrinkMoves(*best)) {
        if (Decides(move, combination, evicting)) {
          best = std::move(move);
          moved = true;
          break;
        }
      }
      if (!moved) break;
      ++rounds;
    }
    break;
  }
  return best;
}

}  // namespace audit
}  // namespace kvspec
