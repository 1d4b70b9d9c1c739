// Internal: the trigger parameters every evicting policy takes
// (spec/triggers.md#parameters), listed after all of its others, and their
// rules (spec/triggers.md#combinations), checked after all of its others.
#ifndef KVSPEC_CC_POLICIES_TRIGGERS_H_
#define KVSPEC_CC_POLICIES_TRIGGERS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cc/config.h"
#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policy.h"

namespace kvspec {
namespace policies {

// spec/triggers.md#parameters.
inline std::vector<ParameterInfo> TriggerParameters() {
  return {{"slack", 0, 0, kMaxBudget,
           "not 0: a decode step evicts only when more than budget + slack "
           "positions are kept, then down to budget"},
          {"interval", 0, 0, kMaxBudget,
           "not 0: a decode step evicts only at every interval-th decode "
           "step (or one admitting at least budget positions), then down to "
           "budget"}};
}

// `parameters` with the trigger parameters appended.
inline std::vector<ParameterInfo> WithTriggerParameters(
    std::vector<ParameterInfo> parameters) {
  for (ParameterInfo& p : TriggerParameters()) parameters.push_back(p);
  return parameters;
}

// spec/triggers.md#combinations, rules 1 and 2.
inline absl::Status CheckTriggerRules(const char* policy,
                                      const ParameterValues& values) {
  const int64_t slack = values.Get("slack");
  const int64_t interval = values.Get("interval");
  if (slack > 0 && interval > 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"slack", "interval"}},
                  absl::StrFormat("%s: slack and interval cannot both be "
                                  "set, got slack %d, interval %d",
                                  policy, slack, interval));
  }
  if (slack == 0 && interval == 0) return absl::OkStatus();
  const char* trigger = slack > 0 ? "slack" : "interval";
  const int64_t value = slack > 0 ? slack : interval;
  for (const char* other :
       {"prefill_only", "adaptive", "evict_at", "context_shift"}) {
    if (!values.Takes(other) || values.Get(other) == 0) continue;
    return Refuse(ErrorCategory::kInvalidParameter, {"rule", {trigger, other}},
                  absl::StrFormat("%s: %s %d needs %s 0 (it is its own rule "
                                  "for when a step evicts), got %s %d",
                                  policy, trigger, value, other, other,
                                  values.Get(other)));
  }
  return absl::OkStatus();
}

// The policy's trigger, for Policy::SetTrigger.
inline Trigger TriggerOf(const ParameterValues& values) {
  Trigger trigger;
  trigger.budget = static_cast<uint64_t>(values.Get("budget"));
  trigger.slack = static_cast<uint64_t>(values.Get("slack"));
  trigger.interval = static_cast<uint64_t>(values.Get("interval"));
  return trigger;
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_TRIGGERS_H_
