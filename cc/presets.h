// Presets: names for the parameter values one implementation uses
// (spec/prefill.md#presets), e.g. "snapkv:preset=kvpress-0.5.5". A preset
// belongs to the tools' text form of a configuration, never to the wire:
// it expands to plain parameters before the registry sees them.
//
// Example:
//   absl::StatusOr<PolicyConfig> config = ExpandPreset(
//       {"snapkv", {{"ratio_ppm", 500000}}}, "kvpress-0.5.5");
//
// Spec: spec/prefill.md#presets and each card's "Presets" table.
#ifndef KVSPEC_CC_PRESETS_H_
#define KVSPEC_CC_PRESETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cc/config.h"

namespace kvspec {

struct Preset {
  std::string policy;  // registry name
  std::string name;    // e.g. "kvpress-0.5.5"
  std::vector<Parameter> parameters;
  // The code it follows: repository or package, file, function.
  std::string follows;
  // spec/spans.md#presets: an engine preset derives one parameter from
  // another the user gives, as the engine sizes its cache from its window.
  enum class Derive {
    kNothing,
    kBudgetIsSpanMinusOne,   // budget = span_window (or span_chunk) - 1
    kBudgetIsSpan,           // budget = span_window (or span_chunk)
    kSpanIsBudget,           // span_window = budget
    kSpanIsBudgetMinusSinks  // span_window = budget - sinks
  };
  Derive derive = Derive::kNothing;
};

// Every preset, by policy in registry order, then by name.
const std::vector<Preset>& Presets();

// `config` with the preset `name` of its policy applied: the preset's
// parameters, each replaced by a parameter of the same name that `config`
// gives, then `config`'s other parameters in their order; then an engine
// preset's derived parameter (spec/spans.md#presets). Refuses a policy
// the registry does not have (UNKNOWN_POLICY, before any preset is looked
// for), an unknown preset, and an engine preset without the parameter it
// derives from (INVALID_PARAMETER, naming the policy's presets or the
// parameter).
absl::StatusOr<PolicyConfig> ExpandPreset(const PolicyConfig& config,
                                          absl::string_view name);

}  // namespace kvspec

#endif  // KVSPEC_CC_PRESETS_H_
