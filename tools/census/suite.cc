// The suite's shape (spec/vectors.md#the-suite): the parameter matrix (each
// policy refuses every other policy's parameter, in some case) and later
// heads (each per-head input check refused for a head after head 0 alone).
#include <set>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "tools/census/census_internal.h"

namespace kvspec {
namespace audit {
namespace internal {

// spec/vectors.md#the-suite, the parameter matrix: for every policy and
// every parameter registered only for other policies, a case giving the
// policy that parameter alone, refused INVALID_PARAMETER at step -1.
void CheckForeignParameters(const vectors::VectorSet& set,
                            std::vector<std::string>& failures) {
  std::set<std::string> names;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) names.insert(p.name);
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const std::string& name : names) {
      bool takes = false;
      for (const ParameterInfo& own : info.parameters) takes |= own.name == name;
      if (takes) continue;
      bool found = false;
      for (const vectors::LoadedCase& loaded : set.cases) {
        const PolicyConfig config = FromProto(loaded.vector->policy());
        const v1::EvictionLog& expected = loaded.vector->expected();
        found = config.name == info.name && config.parameters.size() == 1 &&
                config.parameters[0].name == name && expected.has_rejection() &&
                expected.rejection().category() == v1::INVALID_PARAMETER &&
                expected.rejection().step() == -1;
        if (found) break;
      }
      if (!found) {
        failures.push_back(absl::StrFormat(
            "parameter matrix: no case gives %s the parameter '%s' (another "
            "policy's) and expects INVALID_PARAMETER at step -1",
            info.name, name));
      }
    }
  }
}

// spec/vectors.md#the-suite, later heads: every per-head input check
// (the attention rows, the query rows and the column totals, each for its
// length and for its values) has a refused case where only a head after
// head 0 is bad. A case counts for (field, category) when giving every
// later head head 0's data in that field at the refused step repairs the
// refusal: head 0's own data passed that check.
void CheckLaterHeads(const vectors::VectorSet& set,
                     std::vector<std::string>& failures) {
  enum Field { kRows, kQueries, kTotals };
  const struct {
    Field field;
    const char* name;
  } fields[] = {{kRows, "attention rows (`heads`)"},
                {kQueries, "query rows"},
                {kTotals, "column totals"}};
  const ErrorCategory categories[] = {ErrorCategory::kAttentionLength,
                                      ErrorCategory::kAttentionValue};
  std::set<std::pair<int, ErrorCategory>> covered;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const CaseContext c = ContextOf(loaded);
    const uint32_t query_heads = c.scenario.query_heads.value_or(1);
    if (query_heads < 2 || c.expected.refusal.ok() ||
        c.expected.refused_step < 0 || c.scenario.trace.has_value()) {
      continue;
    }
    const size_t index = static_cast<size_t>(c.expected.refused_step);
    for (const auto& f : fields) {
      Scenario repaired = c.scenario;
      ScenarioStep& step = repaired.steps[index];
      switch (f.field) {
        case kRows:
          if (step.heads.size() != query_heads) continue;
          for (uint32_t h = 1; h < query_heads; ++h) step.heads[h] = step.heads[0];
          break;
        case kQueries: {
          if (step.queries.empty() || step.queries.size() % query_heads != 0) continue;
          const size_t rows = step.queries.size() / query_heads;
          for (size_t i = rows; i < step.queries.size(); ++i) {
            step.queries[i] = step.queries[i % rows];
          }
          break;
        }
        case kTotals:
          if (step.totals.size() != query_heads) continue;
          for (uint32_t h = 1; h < query_heads; ++h) step.totals[h] = step.totals[0];
          break;
      }
      const RunResult after = RunScenario(c.config, repaired, RunOptions{});
      const bool same = !after.refusal.ok() &&
                        after.refused_step == c.expected.refused_step &&
                        CategoryOf(after.refusal) == CategoryOf(c.expected.refusal);
      if (!same) covered.insert({f.field, CategoryOf(c.expected.refusal)});
    }
  }
  for (const auto& f : fields) {
    for (ErrorCategory category : categories) {
      if (covered.count({f.field, category}) > 0) continue;
      failures.push_back(absl::StrFormat(
          "later heads: no case is refused %s for the %s of a head after head "
          "0 alone (head 0's data in that field passes)",
          std::string(CategoryName(category)), f.name));
    }
  }
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
