// Internal: parameter descriptions shared by several policies, so that every
// budgeted policy states the same default and range (spec/harness.md#budget).
#ifndef KVSPEC_CC_POLICIES_LIMITS_H_
#define KVSPEC_CC_POLICIES_LIMITS_H_

#include <cstdint>

#include "cc/config.h"

namespace kvspec {
namespace policies {

// Largest budget: every position fits in 32 bits, so no more can be kept.
inline constexpr int64_t kMaxBudget = 4294967295;

// spec/harness.md#budget: default 512, range [1, 2^32 - 1].
inline ParameterInfo BudgetParameter() {
  return {"budget", 512, 1, kMaxBudget,
          "most positions kept after a step"};
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_LIMITS_H_
