// The policy registry: builds any kvspec policy from its name and integer
// parameters, checking every parameter against its card.
//
// A bad configuration is refused, never half-built: UNKNOWN_POLICY for a name
// the registry does not have; INVALID_PARAMETER for a parameter that is
// unknown, repeated, out of range or breaks a rule relating it to another
// (every registered parameter has a default, so none can be missing), with a message naming the parameter, the value and the rule
// ("window: budget must be at least 1, got 0").
//
// Example:
//   absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(
//       {"streamingllm", {{"budget", 8}, {"sinks", 4}}});
//
// Spec: spec/harness.md#configuration and each spec/policies/<name>.md.
#ifndef KVSPEC_CC_REGISTRY_H_
#define KVSPEC_CC_REGISTRY_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cc/config.h"
#include "cc/policy.h"

namespace kvspec {

// Every registered policy, in registry order (the order of spec/README.md).
const std::vector<PolicyInfo>& RegisteredPolicies();

// Builds the policy `config` names. See the header comment for refusals.
// `heads`: the query heads its one kept set covers (spec/heads.md#kept-sets);
// each step's attention then holds one row per head.
absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config,
                                                   size_t heads = 1);

// True when the policy named `name` reads attention, so keeps one kept set
// per unit of its `granularity` parameter (spec/heads.md#kept-sets): the
// policies that take that parameter.
bool ReadsAttention(absl::string_view name);

// spec/tensors.md#policies-that-read-keys: true when the registered
// policy `name` reads the scenario's keys (so runs only scenarios with
// them, never a generated trace).
bool ReadsKeys(absl::string_view name);
// The same for values (spec/tensors.md#policies-that-read-keys).
bool ReadsValues(absl::string_view name);

// True when the registered policy `name` takes the parameter `parameter`.
bool TakesParameter(absl::string_view name, absl::string_view parameter);

// The value `config` gives `name`, or the parameter's default. Requires: a
// configuration MakePolicy accepts, and `name` one of the policy's
// parameters.
int64_t EffectiveParameter(const PolicyConfig& config, absl::string_view name);

// The budget of a step that leaves `kept` positions after admission
// (spec/prefill.md#when-a-policy-evicts): at a prefill step with ratio_ppm
// above 0, the budget the ratio gives (spec/prefill.md#budgets-from-a-ratio,
// max(1, floor(kept x (1 - ratio_ppm / 10^6))) in binary64); nullopt for a
// step that evicts nothing by prefill_only, and for a policy without the
// prefill parameters (budget, prefill_only, ratio_ppm). Requires: a
// configuration MakePolicy accepts.
std::optional<size_t> StepBudget(const PolicyConfig& config, bool prefill_step,
                                 size_t kept);

// The budget a ratio gives a kept set at a prefill step that leaves `kept`
// positions after admission (StepBudget at a prefill step), or nullopt when
// that budget is not a ratio's: a configuration MakePolicy refuses, a
// policy without ratio_ppm, or ratio_ppm 0. What simulate and the Python
// package report as a set's ratio_budget.
std::optional<size_t> PrefillRatioBudget(const PolicyConfig& config,
                                         size_t kept);

}  // namespace kvspec

#endif  // KVSPEC_CC_REGISTRY_H_
