// Counterfactual policies for the census: each is a registered policy with
// exactly one rule of its card replaced by a plausible mistake. A case that
// a mutant evicts differently from the reference is a case that the replaced
// rule decided (spec/vectors.md#flags). They are never used to generate
// vectors.
#ifndef KVSPEC_TOOLS_CENSUS_MUTANTS_H_
#define KVSPEC_TOOLS_CENSUS_MUTANTS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cc/policy.h"
#include "cc/registry.h"

namespace kvspec {
namespace audit {

enum class Mutation {
  // h2o and snapkv accumulate in binary32 instead of binary64.
  kBinary32Sums,
  // snapkv sums each ring in time order (oldest first), not index order.
  kChronologicalRingSum,
  // snapkv pooling wraps around the ends of the kept set.
  kWrappedPooling,
  // snapkv pools among candidates only, ignoring protected neighbours.
  kCandidatesOnlyPooling,
  // random's draws index the remaining candidates in descending order.
  kDescendingDraws,
};

// Builds `config`'s policy with `mutation` applied. Refuses a policy the
// mutation does not apply to (InvalidArgument), and any configuration the
// registry would refuse.
// The value `config` gives `name`, else the card's default, else `fallback`.
int64_t EffectiveParameter(const PolicyConfig& config, const std::string& name,
                           int64_t fallback);

absl::StatusOr<std::unique_ptr<Policy>> MakeMutant(const PolicyConfig& config,
                                                   Mutation mutation);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_MUTANTS_H_
