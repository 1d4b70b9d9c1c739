// The flag table (spec/vectors.md#flags), continued: the counterfactual
// checks of the block flags (spec/blocks.md) and of the openvino card's
// (spec/policies/openvino.md). Decides (flags.cc) asks here after
// DecidesTriggers.
#include <cstdint>
#include <optional>
#include <string>

#include "tools/census/census_internal.h"
#include "tools/census/mutants.h"

namespace kvspec {
namespace audit {
namespace internal {

std::optional<bool> DecidesBlocks(const std::string& flag,
                                  const CaseContext& c, std::string* /*note*/) {
  if (flag.rfind("openvino.", 0) == 0) {
    if (!c.expected.refusal.ok() || c.config.name != "openvino") return false;
    // openvino.md#evicting, 3: the sums ranked as they are.
    if (flag == "openvino.norm-sum") {
      return EffectiveParameter(c.config, "norm_sum", 1) == 1 &&
             LogDiffersWith(c, WithParameter(c.config, "norm_sum", 0));
    }
    // openvino.md#registering, 3: no pool.
    if (flag == "openvino.max-pool") {
      return EffectiveParameter(c.config, "max_pool", 7) > 1 &&
             LogDiffersWith(c, WithParameter(c.config, "max_pool", 1));
    }
    // openvino.md#registering, 4 and 5: counts as if every query counted.
    if (flag == "openvino.window-counts") {
      return EffectiveParameter(c.config, "obs_window", 8) > 0 &&
             LogDiffersWith(c, WithParameter(c.config, "obs_window", 0));
    }
    return false;
  }
  if (flag.rfind("block.", 0) != 0) return std::nullopt;
  if (!c.expected.refusal.ok()) return false;
  if (flag == "block.size") {
    // Positions one by one: every rule of spec/blocks.md off at once.
    return EffectiveParameter(c.config, "block", 1) > 1 &&
           LogDiffersWith(c, WithParameter(c.config, "block", 1));
  }
  if (flag == "block.score") {
    return EffectiveParameter(c.config, "block_score", 0) > 0 &&
           LogDiffersWith(c, WithParameter(c.config, "block_score", 0));
  }
  return false;
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
