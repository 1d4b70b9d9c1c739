#include "tools/vectors/cases.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cc/registry.h"
#include "tools/vectors/case_builder.h"
#include "tools/vectors/combination_cases.h"

namespace kvspec {
namespace vectors {

namespace build {

// spec/vectors.md#the-suite, the parameter matrix: for every policy and
// every parameter registered for some other policy but not for it, a case
// that gives it that parameter (at its default where it is taken, a valid
// value there) and expects INVALID_PARAMETER at step -1
// (harness.md#configuration: unknown names are refused first). A port that
// accepts another policy's parameter, or refuses it only for some
// policies, fails one of them. The census checks the matrix is complete.
void AddForeignParameterCases(SuiteBuilder& b) {
  std::vector<const ParameterInfo*> all;
  std::vector<std::string> seen;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      if (std::find(seen.begin(), seen.end(), p.name) != seen.end()) continue;
      seen.push_back(p.name);
      all.push_back(&p);
    }
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo* p : all) {
      bool takes = false;
      for (const ParameterInfo& own : info.parameters) takes |= own.name == p->name;
      if (takes) continue;
      std::string name = p->name;
      std::replace(name.begin(), name.end(), '_', '-');
      const int64_t value = p->default_value.value_or(p->min);
      b.Case(absl::StrFormat("harness/foreign-parameter/%s-%s", info.name, name),
             {"refusal.invalid-parameter"},
             absl::StrFormat("%s takes no parameter '%s' (another policy's, "
                             "given at its default %d): INVALID_PARAMETER at "
                             "step -1",
                             info.name, p->name, value),
             P(info.name.c_str(), {{p->name, value}}), "one-step");
    }
  }
}

}  // namespace build

TraceConfig CanonicalTrace(uint32_t steps) {
  TraceConfig config;
  config.steps = steps;
  return config;
}

// The families in file and case order: each Add* is in its own file
// (tools/vectors/cases_*.cc), declared in case_builder.h.
Suite BuildSuite() {
  using namespace build;  // NOLINT: the families' Add* functions
  SuiteBuilder builder;
  AddScenarios(builder);
  AddHarnessCases(builder);
  AddPositionalCases(builder);
  AddScoreCases(builder);
  AddAuditCases(builder);
  AddHeadScenarios(builder);
  AddHeadCases(builder);
  AddPrefillScenarios(builder);
  AddPrefillCases(builder);
  AddTotalsScenarios(builder);
  AddTotalsCases(builder);
  AddSearchCases(builder);
  AddSpanCases(builder);
  AddContextShiftCases(builder);
  AddTriggerScenarios(builder);
  AddTriggerCases(builder);
  AddBlockScenarios(builder);
  AddBlockCases(builder);
  AddOpenVinoScenarios(builder);
  AddOpenVinoCases(builder);
  AddKnormScenarios(builder);
  AddKnormCases(builder);
  AddKeyDiffScenarios(builder);
  AddKeyDiffCases(builder);
  AddLagKvScenarios(builder);
  AddLagKvCases(builder);
  AddPyramidScenarios(builder);
  AddPyramidCases(builder);
  AddSimLayerKvScenarios(builder);
  AddSimLayerKvCases(builder);
  AddForeignParameterCases(builder);
  for (CombinationCase& c : CombinationCases()) {  // combination_cases.h
    builder.Add(std::move(c.scenario));
    builder.Case(std::move(c.spec.id), std::move(c.spec.flags),
                 std::move(c.spec.description), std::move(c.spec.policy),
                 std::move(c.spec.scenario_id));
  }
  return builder.Build();
}

}  // namespace vectors
}  // namespace kvspec
