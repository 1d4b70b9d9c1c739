// Plain types that name a policy configuration and describe a policy's
// parameters. Shared by the registry, the policies and the tools.
//
// Spec: spec/harness.md#configuration
#ifndef KVSPEC_CC_CONFIG_H_
#define KVSPEC_CC_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvspec {

struct Parameter {
  std::string name;
  int64_t value = 0;
};

struct PolicyConfig {
  std::string name;
  // Each name at most once; order is not significant.
  std::vector<Parameter> parameters;
  // Seed of the Rng the policy receives (spec/rng.md); deterministic
  // policies ignore it.
  uint64_t seed = 0;
};

// How one parameter is checked: `min <= value <= max`, or absent and
// `default_value` used; a parameter without a default is required.
struct ParameterInfo {
  std::string name;
  std::optional<int64_t> default_value;
  int64_t min = 0;
  int64_t max = 0;
  // One line for --help and the card: what the parameter means.
  std::string meaning;
};

struct PolicyInfo {
  std::string name;
  // One line: the eviction rule.
  std::string summary;
  // Path of the policy's card, e.g. "spec/policies/window.md".
  std::string card;
  std::vector<ParameterInfo> parameters;
};

}  // namespace kvspec

#endif  // KVSPEC_CC_CONFIG_H_
