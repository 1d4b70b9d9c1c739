// Internal: the harness's victim rule for score-based policies
// (spec/harness.md#victims): rank candidates by score ascending, then
// position ascending, and take the first `count`.
#ifndef KVSPEC_CC_POLICIES_RANKING_H_
#define KVSPEC_CC_POLICIES_RANKING_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <numeric>
#include <vector>

#include "absl/types/span.h"
#include "cc/policy.h"

namespace kvspec {
namespace policies {

// The first slot holding the least score among slots [0, end), end >= 1.
// Kept order is ascending position, so among equal scores the first slot
// has the lowest position: this is the lowest-ranked candidate of
// spec/harness.md#victims. One pass; a strict `<` keeps the first of equal
// scores.
template <typename Score>
size_t FirstLowest(absl::Span<const Score> scores, size_t end) {
  assert(end >= 1 && end <= scores.size());
  size_t lowest = 0;
  Score best = scores[0];
  for (size_t slot = 1; slot < end; ++slot) {
    if (scores[slot] < best) {
      best = scores[slot];
      lowest = slot;
    }
  }
  return lowest;
}

// The `count` candidates that rank lowest by (score, position), as slot
// indices in ascending order. The candidates are slots [0, candidate_end):
// every kept position but the recent window. Scores are compared as numbers
// (binary32 scores widen exactly to binary64); none is NaN.
// Requires: count <= candidate_end <= scores.size() == kept.size().
// O(candidate_end) on average (selection), plus O(count log count); one
// pass (FirstLowest) when count is 1.
template <typename Score>
std::vector<size_t> LowestRanked(absl::Span<const Score> scores,
                                 absl::Span<const Position> kept,
                                 size_t candidate_end, size_t count) {
  assert(count <= candidate_end && candidate_end <= scores.size() &&
         scores.size() == kept.size());
  // A total order (positions are distinct), so the set of the first `count`
  // is unique whatever the selection algorithm does with equal elements.
  const auto ranks_lower = [&](size_t a, size_t b) {
    if (scores[a] != scores[b]) return scores[a] < scores[b];
    return kept[a] < kept[b];
  };
  // One victim (every decode step): the lowest-ranked candidate, in one
  // pass.
  if (count == 1) {
    const size_t lowest = FirstLowest(scores, candidate_end);
    assert(std::none_of(scores.begin(), scores.begin() + candidate_end,
                        [&](const Score& s) { return s < scores[lowest]; }));
    assert(std::find(scores.begin(), scores.end(), scores[lowest]) -
               scores.begin() ==
           static_cast<ptrdiff_t>(lowest));
    return {lowest};
  }
  std::vector<size_t> slots(candidate_end);
  std::iota(slots.begin(), slots.end(), size_t{0});
  if (count < slots.size()) {
    std::nth_element(slots.begin(), slots.begin() + count, slots.end(),
                     ranks_lower);
  }
  slots.resize(count);
  std::sort(slots.begin(), slots.end());  // harness.md#victims: ascending
  return slots;
}

// How many positions a step must evict: kept - budget, or 0.
inline size_t Excess(size_t kept, size_t budget) {
  return kept > budget ? kept - budget : 0;
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_RANKING_H_
