// Test helpers shared by the policy tests: small scenarios written by hand.
#ifndef KVSPEC_CC_POLICIES_TESTING_H_
#define KVSPEC_CC_POLICIES_TESTING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cc/harness.h"
#include "cc/registry.h"

namespace kvspec {
namespace testing_util {

// A scenario whose steps admit `chunks[k]` positions each, all with null
// attention (positional policies never look at attention).
inline Scenario ChunkScenario(const std::vector<uint32_t>& chunks) {
  Scenario scenario;
  for (uint32_t admit : chunks) scenario.steps.push_back({admit, std::nullopt});
  return scenario;
}

// The victims of each step of a run that must not be refused.
inline std::vector<std::vector<Position>> VictimsPerStep(
    const RunResult& result) {
  std::vector<std::vector<Position>> victims;
  for (const StepRecord& step : result.steps) victims.push_back(step.victims);
  return victims;
}

// Builds `config` and runs `scenario`, returning the kept set at the end.
inline std::vector<Position> KeptAfter(const PolicyConfig& config,
                                       const Scenario& scenario) {
  auto policy = MakePolicy(config);
  if (!policy.ok()) return {};
  RunScenario(**policy, scenario);
  const auto kept = (*policy)->kept();
  return std::vector<Position>(kept.begin(), kept.end());
}

}  // namespace testing_util
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_TESTING_H_
