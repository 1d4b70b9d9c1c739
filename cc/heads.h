// Heads: how a multi-head scenario maps onto kept sets, and how the scores
// of the query heads sharing a set combine (spec/heads.md).
//
// A scenario declares query_heads (Hq) and kv_heads (Hkv); query head h
// belongs to KV head h / (Hq / Hkv). A policy that reads attention keeps
// one kept set per unit of its `granularity` parameter; every other policy
// keeps one set. Each head of a set keeps its own single-head state, and at
// ranking time the set ranks by Combine() of its heads' binary64 scores.
//
// Example:
//   SetsOf(Granularity::kKvHead, {4, 2}, /*reads_attention=*/true)
//     == {{0, 1}, {2, 3}}
//
// Spec: spec/heads.md
#ifndef KVSPEC_CC_HEADS_H_
#define KVSPEC_CC_HEADS_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kvspec {

// spec/heads.md#kept-sets: the values of the `granularity` parameter.
enum class Granularity { kLayer = 0, kKvHead = 1, kQueryHead = 2 };

// spec/heads.md#combining-heads-at-ranking-time: the values of the
// `aggregation` parameter.
enum class Aggregation { kMean = 0, kMax = 1, kSum = 2 };

// spec/heads.md#parameters: the value a name stands for in the text form
// of `granularity` ("layer", "kv_head", "query_head") or `aggregation`
// ("mean", "max", "sum"); nullopt for any other parameter or word.
std::optional<int64_t> HeadParameterValue(absl::string_view parameter,
                                          absl::string_view word);

// The reverse: the name of `value` of `granularity` or `aggregation`
// ("kv_head" for granularity 1); nullopt for any other parameter, or a
// value outside 0..2.
std::optional<std::string> HeadParameterName(absl::string_view parameter,
                                             int64_t value);

// spec/heads.md#head-counts.
struct HeadCounts {
  uint32_t query_heads = 1;
  uint32_t kv_heads = 1;
};

// The most heads of either kind a scenario may declare.
inline constexpr uint32_t kMaxHeads = 1024;

// spec/heads.md#head-counts, in its order: query_heads in [1, 1024],
// kv_heads in [1, 1024], kv_heads divides query_heads. INVALID_HEADS.
absl::Status CheckHeadCounts(const HeadCounts& heads);

// The query heads each kept set covers, set 0 first, each ascending
// (spec/heads.md#kept-sets). A policy that does not read attention has one
// set covering every head whatever `granularity` is.
std::vector<std::vector<uint32_t>> SetsOf(Granularity granularity,
                                          const HeadCounts& heads,
                                          bool reads_attention);

// spec/heads.md#combining-heads-at-ranking-time: out[slot] is the combined
// score of `slot` over the heads' scores `heads[h][slot]`, heads in
// ascending order: the binary64 sum from +0.0 (sum), that sum divided once
// by the head count (mean), or the largest (max). Scores are never NaN.
// Requires: at least one head, every head's scores the same length.
template <typename Score>
void Combine(Aggregation aggregation,
             absl::Span<const std::vector<Score>> heads,
             std::vector<double>& out) {
  const size_t slots = heads[0].size();
  out.assign(slots, 0.0);
  if (aggregation == Aggregation::kMax) {
    for (size_t slot = 0; slot < slots; ++slot) {
      double best = static_cast<double>(heads[0][slot]);
      for (size_t h = 1; h < heads.size(); ++h) {
        best = std::max(best, static_cast<double>(heads[h][slot]));
      }
      out[slot] = best;
    }
    return;
  }
  // Ascending head order, one binary64 addition per head, from +0.0.
  for (const std::vector<Score>& head : heads) {
    for (size_t slot = 0; slot < slots; ++slot) {
      out[slot] += static_cast<double>(head[slot]);
    }
  }
  if (aggregation == Aggregation::kMean) {
    const double count = static_cast<double>(heads.size());
    for (double& value : out) value /= count;
  }
}

}  // namespace kvspec

#endif  // KVSPEC_CC_HEADS_H_
