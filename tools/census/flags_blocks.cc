// The flag table (spec/vectors.md#flags), continued: the counterfactual
// checks of the block flags (spec/blocks.md). Decides (flags.cc) asks here
// after DecidesTriggers.
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
