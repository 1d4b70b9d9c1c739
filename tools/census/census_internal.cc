// The census's shared helpers (census_internal.h): a case's context and the
// counterfactual runs compared against its expected log, victims
// (spec/harness.md#victims, spec/heads.md#the-eviction-log) or the whole
// log (spec/spans.md#the-log). They check nothing themselves.
#include "tools/census/census_internal.h"

#include "cc/errors.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"

namespace kvspec {
namespace audit {
namespace internal {
namespace {

// The whole log, spans and held sets included (spec/spans.md#the-log).
bool SameLog(const RunResult& a, const RunResult& b) {
  return CategoryOf(a.refusal) == CategoryOf(b.refusal) && a.steps == b.steps;
}

}  // namespace

CaseContext ContextOf(const vectors::LoadedCase& loaded) {
  return {loaded.vector, loaded.scenario, FromProto(loaded.vector->policy()),
          FromProto(*loaded.scenario), FromProto(loaded.vector->expected())};
}

bool Accepted(const PolicyConfig& config) { return MakePolicy(config).ok(); }

std::vector<std::vector<Position>> VictimsOf(const StepRecord& step) {
  if (step.sets.empty()) return {step.victims};
  std::vector<std::vector<Position>> victims;
  for (const StepRecord& set : step.sets) victims.push_back(set.victims);
  return victims;
}

bool SameVictims(const RunResult& a, const RunResult& b) {
  if (CategoryOf(a.refusal) != CategoryOf(b.refusal)) return false;
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    if (VictimsOf(a.steps[i]) != VictimsOf(b.steps[i])) return false;
  }
  return true;
}

bool Evicts(const RunResult& result) {
  for (const StepRecord& step : result.steps) {
    for (const std::vector<Position>& victims : VictimsOf(step)) {
      if (!victims.empty()) return true;
    }
  }
  return false;
}

PolicyConfig WithParameter(PolicyConfig config, const std::string& name,
                           int64_t value) {
  for (Parameter& p : config.parameters) {
    if (p.name == name) {
      p.value = value;
      return config;
    }
  }
  config.parameters.push_back({name, value});
  return config;
}

bool DiffersWith(const CaseContext& c, const PolicyConfig& config) {
  return !SameVictims(c.expected, RunScenario(config, c.scenario));
}

bool DiffersWith(const CaseContext& c, const Scenario& scenario) {
  return !SameVictims(c.expected, RunScenario(c.config, scenario));
}

bool LogDiffersWith(const CaseContext& c, const PolicyConfig& config) {
  return !SameLog(c.expected, RunScenario(config, c.scenario));
}

bool LogDiffersWith(const CaseContext& c, const Scenario& scenario) {
  return !SameLog(c.expected, RunScenario(c.config, scenario));
}

std::vector<uint64_t> FirstPositions(const Scenario& scenario) {
  std::vector<uint64_t> first;
  uint64_t next = 0;
  for (const ScenarioStep& step : scenario.steps) {
    first.push_back(next);
    next += step.admit;
  }
  return first;
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
