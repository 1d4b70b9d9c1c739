// Internal: parameter descriptions shared by several policies, so that every
// budgeted policy states the same default and range (spec/harness.md#budget).
#ifndef KVSPEC_CC_POLICIES_LIMITS_H_
#define KVSPEC_CC_POLICIES_LIMITS_H_

#include <cstdint>
#include <optional>
#include <vector>

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
                {"rule", {"recent_window", "budget"}},
                absl::StrFormat("%s: recent_window must be below budget, got "
                                "recent_window %d, budget %d",
                                policy, recent_window, budget));
}

// spec/spans.md#parameters: taken by full, window and streamingllm, listed
// after their own parameters; `evict_at` and `position_ids` only by the
// policies that evict (window and streamingllm).
inline std::vector<ParameterInfo> SpanParameters(bool evicts) {
  std::vector<ParameterInfo> parameters = {
      {"spans", 0, 0, 1,
       "1: each step's record carries its queries' spans and held set"},
      {"span_window", 0, 0, kMaxBudget,
       "not 0: a query at q attends only to positions >= q - span_window + 1"},
      {"span_chunk", 0, 0, kMaxBudget,
       "not 0: a query at q attends only to its own chunk of span_chunk"}};
  // full evicts nothing: it has no moment to make room, and its
  // cache-relative ids are its positions.
  if (evicts) {
    parameters.push_back(
        {"evict_at", 0, 0, 2,
         "when room is made: 0 after admission, 1 before (room for the "
         "step), 2 before (down to budget - 1)"});
    parameters.push_back({"position_ids", 0, 0, 1,
                          "0 absolute position ids, 1 cache-relative"});
    // spec/spans.md#context-shift (feature contextshift, 0.9.0).
    parameters.push_back({"context_shift", 0, 0, 1,
                          "1: room is made by a context shift (llama.cpp): "
                          "before a step that does not fit, in one block"});
    parameters.push_back({"discard", 0, 0, kMaxBudget,
                          "positions a context shift discards; 0: half of "
                          "those that may go"});
  }
  return parameters;
}

// spec/spans.md#parameters: the rules between the span parameters and the
// others. `prefill` says whether the policy takes prefill_only and
// ratio_ppm (their values are then `prefill_only` and `ratio_ppm`).
inline absl::Status CheckSpanRules(const char* policy, int64_t span_window,
                                   int64_t span_chunk, int64_t evict_at,
                                   int64_t prefill_only, int64_t ratio_ppm) {
  if (span_window > 0 && span_chunk > 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"span_window", "span_chunk"}},
                  absl::StrFormat("%s: span_window and span_chunk cannot both "
                                  "be set, got span_window %d, span_chunk %d",
                                  policy, span_window, span_chunk));
  }
  if (evict_at > 0 && prefill_only > 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"evict_at", "prefill_only"}},
                  absl::StrFormat("%s: evict_at %d needs prefill_only 0 (a "
                                  "prefill budget evicts after admission), "
                                  "got prefill_only %d",
                                  policy, evict_at, prefill_only));
  }
  if (evict_at > 0 && ratio_ppm > 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"evict_at", "ratio_ppm"}},
                  absl::StrFormat("%s: evict_at %d needs ratio_ppm 0 (a "
                                  "prefill budget evicts after admission), "
                                  "got ratio_ppm %d",
                                  policy, evict_at, ratio_ppm));
  }
  return absl::OkStatus();
}

// spec/spans.md#parameters, the rules of the context shift, checked after
// CheckSpanRules. `sinks` is nullopt for a policy without sinks (window).
inline absl::Status CheckContextShiftRules(const char* policy,
                                           int64_t context_shift,
                                           int64_t discard, int64_t evict_at,
                                           int64_t prefill_only,
                                           int64_t ratio_ppm, int64_t budget,
                                           std::optional<int64_t> sinks) {
  if (discard > 0 && context_shift == 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"discard", "context_shift"}},
                  absl::StrFormat("%s: discard %d needs context_shift 1 (only "
                                  "a context shift discards), got "
                                  "context_shift 0",
                                  policy, discard));
  }
  if (context_shift == 0) return absl::OkStatus();
  const struct {
    const char* name;
    int64_t value;
  } others[] = {{"evict_at", evict_at},
                {"prefill_only", prefill_only},
                {"ratio_ppm", ratio_ppm}};
  for (const auto& other : others) {
    if (other.value != 0) {
      return Refuse(ErrorCategory::kInvalidParameter,
                    {"rule", {"context_shift", other.name}},
                    absl::StrFormat("%s: context_shift 1 needs %s 0 (the "
                                    "shift is its own moment to make room), "
                                    "got %s %d",
                                    policy, other.name, other.name,
                                    other.value));
    }
  }
  // A full cache must have a position to discard and one to keep.
  if (sinks.has_value() && budget - *sinks < 2) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"context_shift", "budget", "sinks"}},
                  absl::StrFormat("%s: context_shift 1 needs budget - sinks "
                                  ">= 2, got budget %d, sinks %d",
                                  policy, budget, *sinks));
  }
  if (!sinks.has_value() && budget < 2) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"context_shift", "budget"}},
                  absl::StrFormat("%s: context_shift 1 needs budget >= 2, "
                                  "got budget %d",
                                  policy, budget));
  }
  return absl::OkStatus();
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_LIMITS_H_
