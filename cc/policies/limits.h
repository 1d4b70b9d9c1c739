// Internal: parameter descriptions shared by several policies, so that every
// budgeted policy states the same default and range (spec/harness.md#budget).
#ifndef KVSPEC_CC_POLICIES_LIMITS_H_
#define KVSPEC_CC_POLICIES_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cc/config.h"
#include "cc/errors.h"

namespace kvspec {
namespace policies {

// Largest budget: every position fits in 32 bits, so no more can be kept.
inline constexpr int64_t kMaxBudget = 4294967295;

// spec/harness.md#budget: default 512, range [1, 2^32 - 1].
inline ParameterInfo BudgetParameter() {
  return {"budget", 512, 1, kMaxBudget,
          "most positions kept after a step"};
}

// spec/harness.md#protected-positions: default 16, range [0, 2^32 - 2];
// must also be below budget (CheckRecentWindow).
inline ParameterInfo RecentWindowParameter() {
  return {"recent_window", 16, 0, kMaxBudget - 1,
          "latest kept positions, never evicted; must be below budget"};
}

// spec/heads.md#parameters: taken by the policies that read attention,
// listed after their own parameters.
inline ParameterInfo GranularityParameter() {
  return {"granularity", 1, 0, 2,
          "which query heads share a kept set: 0 layer, 1 kv_head, "
          "2 query_head"};
}
inline ParameterInfo AggregationParameter() {
  return {"aggregation", 0, 0, 2,
          "how the scores of a set's heads combine: 0 mean, 1 max, 2 sum"};
}
// spec/heads.md#head-adaptive-budgets (AdaKV).
inline ParameterInfo AdaptiveParameter() {
  return {"adaptive", 0, 0, 1,
          "1: the kept sets share budget x sets by one joint ranking (AdaKV)"};
}
inline ParameterInfo SafeguardParameter() {
  return {"safeguard_permille", 200, 0, 1000,
          "with adaptive 1, each set keeps at least budget x this / 1000 "
          "(at least 1 when above 0)"};
}

// spec/harness.md#protected-positions: recent_window >= budget is refused.
inline absl::Status CheckRecentWindow(const char* policy, int64_t budget,
                                      int64_t recent_window) {
  if (recent_window < budget) return absl::OkStatus();
  return Refuse(ErrorCategory::kInvalidParameter,
                absl::StrFormat("%s: recent_window must be below budget, got "
                                "recent_window %d, budget %d",
                                policy, recent_window, budget));
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_LIMITS_H_
