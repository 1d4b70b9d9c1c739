// Internal: the block parameters every evicting policy takes
// (spec/blocks.md#parameters), listed after the trigger parameters, and
// their rules (spec/blocks.md#rules), checked after every other rule.
#ifndef KVSPEC_CC_POLICIES_BLOCKS_H_
#define KVSPEC_CC_POLICIES_BLOCKS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cc/block.h"
#include "cc/config.h"
#include "cc/errors.h"
#include "cc/policies/entries.h"

namespace kvspec {
namespace policies {

// spec/blocks.md#parameters: `block` for every evicting policy, and
// `block_score` for the score-based ones (`scored`).
inline std::vector<ParameterInfo> WithBlockParameters(
    std::vector<ParameterInfo> parameters, bool scored) {
  parameters.push_back({"block", 1, 1, 65536,
                        "positions per block: every eviction removes whole "
                        "closed blocks"});
  if (scored) {
    parameters.push_back({"block_score", 0, 0, 2,
                          "a block's score from its positions' scores: 0 "
                          "sum, 1 mean, 2 max"});
  }
  return parameters;
}

// spec/blocks.md#rules, 1 and 2, with `block` above 1.
inline absl::Status CheckBlockRules(const char* policy,
                                    const ParameterValues& values) {
  const int64_t block = values.Get("block");
  if (block == 1) return absl::OkStatus();
  for (const char* size : {"budget", "recent_window", "sinks"}) {
    if (!values.Takes(size) || values.Get(size) % block == 0) continue;
    return Refuse(ErrorCategory::kInvalidParameter, {"rule", {"block", size}},
                  absl::StrFormat("%s: %s %d is not a multiple of block %d",
                                  policy, size, values.Get(size), block));
  }
  for (const char* other : {"ratio_ppm", "adaptive", "evict_at",
                            "context_shift", "window_budget"}) {
    if (!values.Takes(other) || values.Get(other) == 0) continue;
    return Refuse(ErrorCategory::kInvalidParameter, {"rule", {"block", other}},
                  absl::StrFormat("%s: block %d needs %s 0 (blocks are not "
                                  "pinned with it), got %s %d",
                                  policy, block, other, other,
                                  values.Get(other)));
  }
  return absl::OkStatus();
}

// The policy's blocks, for Policy::SetBlocks.
inline Blocks BlocksOf(const ParameterValues& values) {
  Blocks blocks;
  blocks.size = static_cast<size_t>(values.Get("block"));
  if (values.Takes("block_score")) {
    blocks.score = static_cast<BlockScore>(values.Get("block_score"));
  }
  return blocks;
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_BLOCKS_H_
