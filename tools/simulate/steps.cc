#include "tools/simulate/steps.h"

#include "cc/registry.h"

namespace kvspec {
namespace simulate {

uint64_t StepCount(const Scenario& scenario) {
  if (!scenario.steps.empty() || !scenario.trace.has_value()) {
    return scenario.steps.size();
  }
  return scenario.trace->steps;
}

std::optional<size_t> RatioBudget(const PolicyConfig& config, bool prefill,
                                  const StepRecord& set) {
  if (!prefill) return std::nullopt;
  return PrefillRatioBudget(config, set.kept_count + set.victims.size());
}

Admitted AdmittedWalk::Next(size_t index) {
  Admitted admitted{next_, 1};
  if (index < scenario_.steps.size()) {
    admitted.count = scenario_.steps[index].admit;
  }
  next_ += admitted.count;
  return admitted;
}

bool IsPrefillStep(const Scenario& scenario, size_t index) {
  return index < scenario.steps.size() &&
         !scenario.steps[index].queries.empty();
}

const char* AttentionKind(const Scenario& scenario, size_t index) {
  if (index >= scenario.steps.size()) return "rows";  // a generated trace
  const ScenarioStep& step = scenario.steps[index];
  if (!step.queries.empty()) return "query_rows";
  if (step.attention.has_value() || !step.heads.empty()) return "rows";
  return "null";
}

std::vector<const StepRecord*> SetRecords(const StepRecord& record) {
  std::vector<const StepRecord*> sets;
  if (record.sets.empty()) {
    sets.push_back(&record);
  } else {
    for (const StepRecord& set : record.sets) sets.push_back(&set);
  }
  return sets;
}

}  // namespace simulate
}  // namespace kvspec
