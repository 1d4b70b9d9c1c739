#include "tools/simulate/warnings.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cc/registry.h"

namespace kvspec {
namespace simulate {

std::vector<Warning> PrefillWarnings(const PolicyConfig& config,
                                     const std::string& scenario_name,
                                     bool has_prefill_step) {
  if (has_prefill_step) return {};
  const std::vector<ParameterInfo>* parameters = nullptr;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name == config.name) parameters = &info.parameters;
  }
  if (parameters == nullptr) return {};
  const auto takes = [&](absl::string_view name) {
    for (const ParameterInfo& p : *parameters) {
      if (p.name == name) return true;
    }
    return false;
  };
  const int64_t ratio =
      takes("ratio_ppm") ? EffectiveParameter(config, "ratio_ppm") : 0;
  const int64_t prefill_only =
      takes("prefill_only") ? EffectiveParameter(config, "prefill_only") : 0;
  if (ratio == 0 && prefill_only == 0) return {};
  Warning warning;
  warning.code = "no_prefill_step";
  std::vector<std::string> given;
  if (prefill_only != 0) {
    warning.parameters.push_back("prefill_only");
    given.push_back("prefill_only=1");
  }
  if (ratio != 0) {
    warning.parameters.push_back("ratio_ppm");
    given.push_back(absl::StrFormat("ratio_ppm=%d", ratio));
  }
  const std::string scenario_has_none = absl::StrFormat(
      "%s has no prefill step", scenario_name);
  std::string what;
  if (prefill_only != 0) {
    what = absl::StrFormat(
        "%s: with prefill_only=1 the policy evicts only at prefill steps%s, "
        "the steps that carry query rows "
        "(spec/prefill.md#when-a-policy-evicts), and %s, so this run never "
        "evicts",
        absl::StrJoin(given, " and "),
        ratio != 0 ? ", and a ratio acts only at prefill steps too" : "",
        scenario_has_none);
  } else {
    what = absl::StrFormat(
        "%s: a ratio acts only at prefill steps, the steps that carry query "
        "rows (spec/prefill.md#when-a-policy-evicts), and %s, so this run "
        "evicts nothing by the ratio: every step evicts by budget=%d",
        absl::StrJoin(given, " and "), scenario_has_none,
        EffectiveParameter(config, "budget"));
  }
  warning.message = absl::StrCat(
      what,
      ". For a prefill, give the prompt as a step with query rows "
      "(kvspec.v1.Step.queries, spec/prefill.md#query-rows), e.g. from a "
      "model's attention over an observation window: import_attention "
      "--input=<window capture> --output=prompt.pb ..., then "
      "--scenario=prompt.pb.");
  return {warning};
}

}  // namespace simulate
}  // namespace kvspec
