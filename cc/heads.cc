#include "cc/heads.h"

#include "absl/strings/str_format.h"
#include "cc/errors.h"

namespace kvspec {

namespace {

// The names of granularity's or aggregation's values 0..2, or nullptr.
const char* const* HeadParameterNames(absl::string_view parameter) {
  static const char* const granularities[] = {"layer", "kv_head", "query_head"};
  static const char* const aggregations[] = {"mean", "max", "sum"};
  return parameter == "granularity"   ? granularities
         : parameter == "aggregation" ? aggregations
                                      : nullptr;
}

}  // namespace

std::optional<int64_t> HeadParameterValue(absl::string_view parameter,
                                          absl::string_view word) {
  const char* const* names = HeadParameterNames(parameter);
  if (names == nullptr) return std::nullopt;
  for (int64_t value = 0; value < 3; ++value) {
    if (word == names[value]) return value;
  }
  return std::nullopt;
}

std::optional<std::string> HeadParameterName(absl::string_view parameter,
                                             int64_t value) {
  const char* const* names = HeadParameterNames(parameter);
  if (names == nullptr || value < 0 || value > 2) return std::nullopt;
  return std::string(names[value]);
}

absl::Status CheckHeadCounts(const HeadCounts& heads) {
  if (heads.query_heads < 1 || heads.query_heads > kMaxHeads) {
    return Refuse(ErrorCategory::kInvalidHeads, {"range", {"query_heads"}},
                  absl::StrFormat("query_heads must be in [1, %d], got %d",
                                  kMaxHeads, heads.query_heads));
  }
  if (heads.kv_heads < 1 || heads.kv_heads > kMaxHeads) {
    return Refuse(ErrorCategory::kInvalidHeads, {"range", {"kv_heads"}},
                  absl::StrFormat("kv_heads must be in [1, %d], got %d",
                                  kMaxHeads, heads.kv_heads));
  }
  if (heads.query_heads % heads.kv_heads != 0) {
    return Refuse(ErrorCategory::kInvalidHeads,
                  {"rule", {"kv_heads", "query_heads"}},
                  absl::StrFormat("kv_heads must divide query_heads, got "
                                  "query_heads %d, kv_heads %d",
                                  heads.query_heads, heads.kv_heads));
  }
  return absl::OkStatus();
}

std::vector<std::vector<uint32_t>> SetsOf(Granularity granularity,
                                          const HeadCounts& heads,
                                          bool reads_attention) {
  // Heads per set: every head (layer), a KV head's group, or one.
  uint32_t per_set = heads.query_heads;
  if (reads_attention && granularity == Granularity::kKvHead) {
    per_set = heads.query_heads / heads.kv_heads;
  } else if (reads_attention && granularity == Granularity::kQueryHead) {
    per_set = 1;
  }
  std::vector<std::vector<uint32_t>> sets(heads.query_heads / per_set);
  for (uint32_t h = 0; h < heads.query_heads; ++h) {
    sets[h / per_set].push_back(h);
  }
  return sets;
}

}  // namespace kvspec
