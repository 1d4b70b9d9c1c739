// Internal to the registry: how each policy file exposes itself. Nothing but
// cc/registry.cc includes this; concrete policy classes stay in their files'
// anonymous namespaces.
#ifndef KVSPEC_CC_POLICIES_ENTRIES_H_
#define KVSPEC_CC_POLICIES_ENTRIES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/policy.h"
#include "cc/config.h"
#include "cc/rng.h"

namespace kvspec {
namespace policies {

// Parameter values after the registry has checked names and ranges, in the
// order of the policy's PolicyInfo::parameters.
class ParameterValues {
 public:
  ParameterValues(const PolicyInfo* info, std::vector<int64_t> values)
      : info_(info), values_(std::move(values)) {}
  // The value of `name`. Requires: `name` is one of the policy's parameters.
  int64_t Get(absl::string_view name) const;
  // Whether `name` is one of the policy's parameters.
  bool Takes(absl::string_view name) const;

 private:
  const PolicyInfo* info_;
  std::vector<int64_t> values_;
};

// spec/spans.md#parameters: the span rule of a policy taking the span
// parameters (SpanParameters in limits.h); `evicts` as there.
inline SpanRule SpanRuleOf(const ParameterValues& values, bool evicts = true) {
  SpanRule rule;
  rule.log = values.Get("spans") == 1;
  rule.window = static_cast<uint32_t>(values.Get("span_window"));
  rule.chunk = static_cast<uint32_t>(values.Get("span_chunk"));
  rule.cache_relative_ids = evicts && values.Get("position_ids") == 1;
  return rule;
}

struct PolicyEntry {
  PolicyInfo info;
  // Builds the policy. Checks only the rules relating parameters to each
  // other; single-parameter ranges were checked by the registry.
  // `heads`: the query heads of the one kept set the policy keeps
  // (spec/heads.md#kept-sets); each step's attention holds one row per head.
  absl::StatusOr<std::unique_ptr<Policy>> (*make)(const ParameterValues&,
                                                  Rng rng, size_t heads);
};

const PolicyEntry& FullEntry();
const PolicyEntry& WindowEntry();
const PolicyEntry& StreamingLlmEntry();
const PolicyEntry& H2oEntry();
const PolicyEntry& TovaEntry();
const PolicyEntry& SnapKvEntry();
const PolicyEntry& RandomEntry();
const PolicyEntry& OpenVinoEntry();
const PolicyEntry& KnormEntry();
const PolicyEntry& KeyDiffEntry();
const PolicyEntry& LagKvEntry();
const PolicyEntry& SimLayerKvEntry();

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_ENTRIES_H_
