// simulate's warnings: a run that is accepted but will not do what its
// parameters suggest. Printed on stderr and written in --json's `warnings`
// (simulate-json.md).
#ifndef KVSPEC_TOOLS_SIMULATE_WARNINGS_H_
#define KVSPEC_TOOLS_SIMULATE_WARNINGS_H_

#include <string>
#include <vector>

#include "cc/config.h"

namespace kvspec {
namespace simulate {

struct Warning {
  std::string code;
  std::vector<std::string> parameters;
  std::string message;
};

// spec/prefill.md#when-a-policy-evicts: `ratio_ppm` and `prefill_only` act
// at prefill steps only (steps with query rows). A run whose configuration
// sets either over a scenario without one gets a warning. `config` is
// accepted by the registry.
std::vector<Warning> PrefillWarnings(const PolicyConfig& config,
                                     const std::string& scenario_name,
                                     bool has_prefill_step);

}  // namespace simulate
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_SIMULATE_WARNINGS_H_
