// The policy registry: builds any kvspec policy from its name and integer
// parameters, checking every parameter against its card.
//
// A bad configuration is refused, never half-built: UNKNOWN_POLICY for a name
// the registry does not have; INVALID_PARAMETER for a parameter that is
// unknown, repeated, missing, out of range or breaks a rule relating it to
// another, with a message naming the parameter, the value and the rule
// ("window: budget must be at least 1, got 0").
//
// Example:
//   absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(
//       {"streamingllm", {{"budget", 8}, {"sinks", 4}}});
//
// Spec: spec/harness.md#configuration and each spec/policies/<name>.md.
#ifndef KVSPEC_CC_REGISTRY_H_
#define KVSPEC_CC_REGISTRY_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cc/config.h"
#include "cc/policy.h"

namespace kvspec {

// Every registered policy, in registry order (the order of spec/README.md).
const std::vector<PolicyInfo>& RegisteredPolicies();

// Builds the policy `config` names. See the header comment for refusals.
absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config);

}  // namespace kvspec

#endif  // KVSPEC_CC_REGISTRY_H_
