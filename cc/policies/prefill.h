// Internal: what the score policies and streamingllm share about prefill
// (spec/prefill.md): the two parameters, the rules relating them to other
// parameters, and the step budget, including budgets from a ratio.
#ifndef KVSPEC_CC_POLICIES_PREFILL_H_
#define KVSPEC_CC_POLICIES_PREFILL_H_

#include <cmath>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cc/config.h"
#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/pyramid.h"

namespace kvspec {
namespace policies {

// spec/prefill.md#when-a-policy-evicts: listed after each card's other
// parameters.
inline ParameterInfo PrefillOnlyParameter() {
  return {"prefill_only", 0, 0, 1,
          "1: evicts at prefill steps (steps with query rows) only"};
}
inline ParameterInfo RatioParameter() {
  return {"ratio_ppm", 0, 0, 999999,
          "not 0: a prefill step's budget is max(1, floor(n * (1 - "
          "ratio_ppm / 10^6))) in binary64"};
}

// spec/prefill.md#budgets-from-a-ratio: kvpress's compute_n_kept, in
// binary64, one rounding per operation. `kept` < 2^53.
inline size_t RatioBudget(size_t kept, int64_t ratio_ppm) {
  const double r = static_cast<double>(ratio_ppm) / 1000000.0;
  const double t = 1.0 - r;
  const double u = static_cast<double>(kept) * t;
  const double floor_u = std::floor(u);
  return floor_u < 1.0 ? 1 : static_cast<size_t>(floor_u);
}

// The step budget of spec/prefill.md#when-a-policy-evicts.
// With snapkv's `pyramid` 1 or 2, a prefill step's budget is the layer's
// (spec/policies/pyramidkv.md#how-it-works).
struct StepBudgetRule {
  size_t budget = 0;
  bool prefill_only = false;
  int64_t ratio_ppm = 0;
  PyramidRule pyramid;

  static StepBudgetRule Of(const ParameterValues& values) {
    StepBudgetRule rule{static_cast<size_t>(values.Get("budget")),
                        values.Get("prefill_only") == 1,
                        values.Get("ratio_ppm"),
                        {}};
    if (values.Takes("pyramid")) {
      rule.pyramid = {values.Get("pyramid"), values.Get("pyramid_beta"),
                      values.Get("layer"), values.Get("layers"),
                      values.Get("obs_window")};
    }
    return rule;
  }

  // The budget of a step that leaves `kept` positions after admission;
  // nullopt: the step evicts nothing.
  std::optional<size_t> At(bool prefill_step, size_t kept) const {
    if (prefill_step && pyramid.formula == 1) {
      return PyramidKvpressBudget(pyramid, kept, ratio_ppm);
    }
    if (prefill_step && pyramid.formula == 2) {
      return PyramidFactoryBudget(pyramid, kept, budget);
    }
    if (prefill_step && ratio_ppm > 0) return RatioBudget(kept, ratio_ppm);
    if (!prefill_step && prefill_only) return std::nullopt;
    return budget;
  }
};

// spec/prefill.md#when-a-policy-evicts, the rules relating the prefill
// parameters to others, in that order (after the card's own rules).
// `name`: the policy; `recent_window`: nullopt for a policy without one.
inline absl::Status CheckPrefillRules(const char* name,
                                      const ParameterValues& values,
                                      bool has_recent_window,
                                      bool has_window_budget) {
  const int64_t ratio_ppm = values.Get("ratio_ppm");
  if (has_recent_window && ratio_ppm > 0 && values.Get("recent_window") != 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"ratio_ppm", "recent_window"}},
                  absl::StrFormat("%s: ratio_ppm above 0 requires "
                                  "recent_window 0, got ratio_ppm %d, "
                                  "recent_window %d",
                                  name, ratio_ppm, values.Get("recent_window")));
  }
  if (has_recent_window && values.Takes("adaptive") &&
      values.Get("adaptive") == 1) {
    const bool window_outside =
        has_window_budget && values.Get("window_budget") == 1;
    if (values.Get("prefill_only") != 0 || ratio_ppm != 0 || window_outside) {
      // The subject names the first of the three that is not 0.
      const char* other = values.Get("prefill_only") != 0 ? "prefill_only"
                          : ratio_ppm != 0               ? "ratio_ppm"
                                                         : "window_budget";
      return Refuse(ErrorCategory::kInvalidParameter,
                    {"rule", {"adaptive", other}},
                    absl::StrFormat("%s: adaptive 1 requires prefill_only 0, "
                                    "ratio_ppm 0%s (AdaKV at prefill is not "
                                    "pinned), got prefill_only %d, ratio_ppm "
                                    "%d",
                                    name,
                                    has_window_budget ? " and window_budget 0"
                                                      : "",
                                    values.Get("prefill_only"), ratio_ppm));
    }
  }
  return absl::OkStatus();
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_PREFILL_H_
