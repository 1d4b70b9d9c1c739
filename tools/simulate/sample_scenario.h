// The built-in sample scenario of tools/simulate: small enough to read whole,
// and shaped to show each positional rule deciding something: a prefill chunk
// longer than the sample budgets, decode steps with attention, one step with
// null attention, and a second chunk that crosses capacity.
#ifndef KVSPEC_TOOLS_SIMULATE_SAMPLE_SCENARIO_H_
#define KVSPEC_TOOLS_SIMULATE_SAMPLE_SCENARIO_H_

#include <vector>

#include "cc/harness.h"
#include "cc/registry.h"

namespace kvspec {

// Steps: a chunk of 10 (positions 0..9); six decode steps; a chunk of 3;
// four decode steps. Rows give position 0 half of the mass (a sink) and
// share the rest equally; step 8 (the first decode step after the
// second chunk) has null attention.
Scenario SampleScenario();

// The configurations simulate runs when no --policy is given.
std::vector<PolicyConfig> SampleConfigs();

}  // namespace kvspec

#endif  // KVSPEC_TOOLS_SIMULATE_SAMPLE_SCENARIO_H_
