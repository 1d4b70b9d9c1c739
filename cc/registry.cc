#include "cc/registry.h"

#include <cassert>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/prefill.h"

namespace kvspec {
namespace {

using policies::PolicyEntry;

// Registry order: the order of spec/README.md's policy table.
const std::vector<const PolicyEntry*>& Entries() {
  static const auto* entries = new std::vector<const PolicyEntry*>{
      &policies::FullEntry(),
      &policies::WindowEntry(),
      &policies::StreamingLlmEntry(),
      &policies::H2oEntry(),
      &policies::TovaEntry(),
      &policies::SnapKvEntry(),
      &policies::RandomEntry(),
      &policies::OpenVinoEntry(),
      &policies::KnormEntry(),
      &policies::KeyDiffEntry(),
      &policies::LagKvEntry(),
      &policies::SimLayerKvEntry(),
  };
  return *entries;
}

// spec/harness.md#configuration: names checked before values, then each
// parameter's range, then (in the policy's factory) cross-parameter rules.
absl::StatusOr<std::vector<int64_t>> ResolveParameters(
    const PolicyInfo& info, const std::vector<Parameter>& given) {
  std::vector<std::optional<int64_t>> values(info.parameters.size());
  for (const Parameter& parameter : given) {
    size_t index = 0;
    while (index < info.parameters.size() &&
           info.parameters[index].name != parameter.name) {
      ++index;
    }
    if (index == info.parameters.size()) {
      std::vector<std::string> known;
      for (const ParameterInfo& p : info.parameters) known.push_back(p.name);
      return Refuse(
          ErrorCategory::kInvalidParameter, {"unknown", {parameter.name}},
          absl::StrFormat("%s: unknown parameter '%s'; %s takes %s", info.name,
                          parameter.name, info.name,
                          known.empty() ? "no parameters"
                                        : absl::StrJoin(known, ", ")));
    }
    if (values[index].has_value()) {
      return Refuse(ErrorCategory::kInvalidParameter,
                    {"repeated", {parameter.name}},
                    absl::StrFormat("%s: parameter '%s' is given twice",
                                    info.name, parameter.name));
    }
    values[index] = parameter.value;
  }
  std::vector<int64_t> resolved;
  for (size_t i = 0; i < info.parameters.size(); ++i) {
    const ParameterInfo& p = info.parameters[i];
    if (!values[i].has_value()) {
      if (!p.default_value.has_value()) {
        // Unreachable for the registered policies: each has a default.
        return Refuse(ErrorCategory::kInvalidParameter, {"range", {p.name}},
                      absl::StrFormat("%s: parameter '%s' is required (%s)",
                                      info.name, p.name, p.meaning));
      }
      values[i] = p.default_value;
    }
    const int64_t value = *values[i];
    if (value < p.min || value > p.max) {
      return Refuse(ErrorCategory::kInvalidParameter, {"range", {p.name}},
                    absl::StrFormat("%s: %s must be in [%d, %d], got %d",
                                    info.name, p.name, p.min, p.max, value));
    }
    resolved.push_back(value);
  }
  return resolved;
}

}  // namespace

namespace policies {

int64_t ParameterValues::Get(absl::string_view name) const {
  for (size_t i = 0; i < info_->parameters.size(); ++i) {
    if (info_->parameters[i].name == name) return values_[i];
  }
  assert(false && "ParameterValues::Get: not a parameter of this policy");
  std::abort();
}

bool ParameterValues::Takes(absl::string_view name) const {
  for (const ParameterInfo& parameter : info_->parameters) {
    if (parameter.name == name) return true;
  }
  return false;
}

}  // namespace policies

const std::vector<PolicyInfo>& RegisteredPolicies() {
  static const auto* infos = [] {
    auto* list = new std::vector<PolicyInfo>;
    for (const PolicyEntry* entry : Entries()) list->push_back(entry->info);
    return list;
  }();
  return *infos;
}

absl::StatusOr<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config,
                                                   size_t heads) {
  for (const PolicyEntry* entry : Entries()) {
    if (entry->info.name != config.name) continue;
    absl::StatusOr<std::vector<int64_t>> values =
        ResolveParameters(entry->info, config.parameters);
    if (!values.ok()) return values.status();
    return entry->make(
        policies::ParameterValues(&entry->info, *std::move(values)),
        Rng(config.seed), heads);
  }
  std::vector<std::string> names;
  for (const PolicyEntry* entry : Entries()) names.push_back(entry->info.name);
  return Refuse(ErrorCategory::kUnknownPolicy, {"unknown", {"name"}},
                absl::StrFormat("unknown policy '%s'; the registry has %s",
                                config.name, absl::StrJoin(names, ", ")));
}

bool ReadsAttention(absl::string_view name) {
  return TakesParameter(name, "granularity");
}

bool ReadsKeys(absl::string_view name) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy({std::string(name), {}});
  return policy.ok() && (*policy)->reads_keys();
}

bool ReadsValues(absl::string_view name) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy(PolicyConfig{std::string(name), {}});
  return policy.ok() && (*policy)->reads_values();
}

bool TakesParameter(absl::string_view name, absl::string_view parameter) {
  for (const PolicyEntry* entry : Entries()) {
    if (entry->info.name != name) continue;
    for (const ParameterInfo& p : entry->info.parameters) {
      if (p.name == parameter) return true;
    }
  }
  return false;
}

int64_t EffectiveParameter(const PolicyConfig& config, absl::string_view name) {
  for (const PolicyEntry* entry : Entries()) {
    if (entry->info.name != config.name) continue;
    absl::StatusOr<std::vector<int64_t>> values =
        ResolveParameters(entry->info, config.parameters);
    assert(values.ok());
    return policies::ParameterValues(&entry->info, *std::move(values)).Get(name);
  }
  assert(false && "EffectiveParameter: not a registered policy");
  std::abort();
}

std::optional<size_t> StepBudget(const PolicyConfig& config, bool prefill_step,
                                 size_t kept) {
  for (const PolicyEntry* entry : Entries()) {
    if (entry->info.name != config.name) continue;
    absl::StatusOr<std::vector<int64_t>> values =
        ResolveParameters(entry->info, config.parameters);
    assert(values.ok());
    const policies::ParameterValues parameters(&entry->info,
                                               *std::move(values));
    if (!parameters.Takes("budget") || !parameters.Takes("prefill_only") ||
        !parameters.Takes("ratio_ppm")) {
      return std::nullopt;
    }
    return policies::StepBudgetRule::Of(parameters).At(prefill_step, kept);
  }
  assert(false && "StepBudget: not a registered policy");
  std::abort();
}

std::optional<size_t> PrefillRatioBudget(const PolicyConfig& config,
                                         size_t kept) {
  if (!MakePolicy(config).ok()) return std::nullopt;
  for (const PolicyEntry* entry : Entries()) {
    if (entry->info.name != config.name) continue;
    absl::StatusOr<std::vector<int64_t>> values =
        ResolveParameters(entry->info, config.parameters);
    const policies::ParameterValues parameters(&entry->info,
                                               *std::move(values));
    if (!parameters.Takes("ratio_ppm") || parameters.Get("ratio_ppm") == 0) {
      return std::nullopt;
    }
  }
  return StepBudget(config, /*prefill_step=*/true, kept);
}

}  // namespace kvspec
