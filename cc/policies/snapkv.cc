// snapkv: SnapKV (Li et al., 2024), adapted to decode-time eviction. Each kept
// slot holds a ring of the last `obs_window` recorded attention weights
// (binary32), stored as one row per ring index. At each eviction every ring is
// summed afresh, in ring-index order 0 upward, into a binary64 window sum; the sums are max-pooled over adjacent
// kept slots with an odd kernel, clamped at both ends; the lowest pooled
// scores outside the recent window go; equal pooled scores evict the lower
// position. Null attention writes nothing and does not advance the ring.
//
// Spec: spec/policies/snapkv.md
#include <algorithm>
#include <memory>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/ranking.h"

namespace kvspec {
namespace policies {
namespace {

class SnapKvPolicy final : public Policy {
 public:
  SnapKvPolicy(size_t budget, size_t recent_window, size_t obs_window,
               size_t pool_kernel, Aggregation aggregation, size_t heads)
      : Policy(heads),
        budget_(budget),
        recent_window_(recent_window),
        obs_window_(obs_window),
        radius_((pool_kernel - 1) / 2),
        aggregation_(aggregation),
        history_(heads, std::vector<std::vector<float>>(obs_window)),
        window_sums_(heads),
        pooled_(heads) {}
  absl::string_view name() const override { return "snapkv"; }

 protected:
  // snapkv.md#the-ring: every kept slot writes ring index `cursor_`; then
  // the shared cursor moves on. Only recorded steps get here (null
  // attention is inert: spec/harness.md#null-attention). Each head writes
  // its own row into its own rings (heads.md#what-each-head-records).
  void Record(absl::Span<const float> attention) override {
    const size_t kept_count = kept().size();
    for (size_t h = 0; h < history_.size(); ++h) {
      std::copy(attention.begin() + h * kept_count,
                attention.begin() + (h + 1) * kept_count,
                history_[h][cursor_].begin());
    }
    cursor_ = (cursor_ + 1) % obs_window_;
  }

  // spec/harness.md#unobserved-positions: a new slot's ring is all +0.0.
  void Admit(Position) override {
    for (size_t h = 0; h < history_.size(); ++h) {
      for (std::vector<float>& row : history_[h]) row.push_back(0.0f);
      window_sums_[h].push_back(0.0);
      pooled_[h].push_back(0.0);
    }
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const size_t excess = Excess(kept_count, budget_);
    if (excess == 0) return {};
    for (size_t h = 0; h < history_.size(); ++h) PoolHead(h);
    return LowestRanked(absl::MakeConstSpan(Scores()), kept(),
                        kept_count - recent_window_, excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    for (size_t h = 0; h < history_.size(); ++h) {
      for (std::vector<float>& row : history_[h]) EraseSlots(row, slots);
      EraseSlots(window_sums_[h], slots);
      EraseSlots(pooled_[h], slots);
    }
    if (!combined_.empty()) EraseSlots(combined_, slots);
  }

  size_t PolicyStateBytes() const override {
    const size_t heads = history_.size();
    return heads * obs_window_ * kept().size() * sizeof(float) +
           2 * heads * kept().size() * sizeof(double) +
           combined_.size() * sizeof(double);
  }

  bool CurrentScores(std::vector<double>& scores,
                     size_t& candidate_end) override {
    for (size_t h = 0; h < history_.size(); ++h) PoolHead(h);
    scores = Scores();
    candidate_end = kept().size() - recent_window_;
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = pooled_.size() == 1 ? pooled_[0] : combined_;
    candidate_end = kept().size() - recent_window_;
    return true;
  }

 private:
  // One head's window sums and pooled scores over the kept slots.
  void PoolHead(size_t h) {
    const size_t kept_count = kept().size();
    std::vector<double>& sums = window_sums_[h];
    std::vector<double>& pooled = pooled_[h];
    // snapkv.md#window-sums: recomputed from the ring, index 0 upward.
    for (size_t slot = 0; slot < kept_count; ++slot) {
      double sum = 0.0;
      for (const std::vector<float>& row : history_[h]) {
        sum += static_cast<double>(row[slot]);
      }
      sums[slot] = sum;
    }
    // snapkv.md#pooling: max over slots [slot - r, slot + r], clamped to
    // [0, kept_count - 1]. Every kept slot is a neighbour, protected or not.
    for (size_t slot = 0; slot < kept_count; ++slot) {
      const size_t low = slot >= radius_ ? slot - radius_ : 0;
      const size_t high = std::min(kept_count - 1, slot + radius_);
      double best = sums[low];
      for (size_t j = low + 1; j <= high; ++j) best = std::max(best, sums[j]);
      pooled[slot] = best;
    }
  }

  // The scores ranked by: one head's pooled scores as they are, or the
  // heads' combination (heads.md#combining-heads-at-ranking-time): each
  // head pools its own sums first.
  const std::vector<double>& Scores() {
    if (pooled_.size() == 1) return pooled_[0];
    Combine(aggregation_, absl::MakeConstSpan(pooled_), combined_);
    return combined_;
  }

  const size_t budget_;
  const size_t recent_window_;
  const size_t obs_window_;
  const size_t radius_;  // (pool_kernel - 1) / 2
  const Aggregation aggregation_;
  // Ring index the next recorded step writes, shared by every slot and head.
  size_t cursor_ = 0;
  // Per head, the rings by ring index: history_[h][i][slot] is ring index i
  // of kept slot `slot`; obs_window_ rows of kept().size() weights.
  std::vector<std::vector<std::vector<float>>> history_;
  // Per head and slot, as computed at the latest eviction (kept for the
  // eviction log and the tie audit; stale between evictions).
  std::vector<std::vector<double>> window_sums_;
  std::vector<std::vector<double>> pooled_;
  // Several heads only: the combined scores of the latest eviction.
  std::vector<double> combined_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeSnapKv(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  const int64_t obs_window = values.Get("obs_window");
  const int64_t pool_kernel = values.Get("pool_kernel");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("snapkv", budget, recent_window));
  // snapkv.md#parameters: an even kernel has no centre.
  if (pool_kernel % 2 == 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  absl::StrFormat("snapkv: pool_kernel must be odd, got %d",
                                  pool_kernel));
  }
  return std::unique_ptr<Policy>(new SnapKvPolicy(
      static_cast<size_t>(budget), static_cast<size_t>(recent_window),
      static_cast<size_t>(obs_window), static_cast<size_t>(pool_kernel),
      static_cast<Aggregation>(values.Get("aggregation")), heads));
}

}  // namespace

const PolicyEntry& SnapKvEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"snapkv",
       "evicts the lowest max-pooled sum of the last obs_window weights "
       "outside the recent window",
       "spec/policies/snapkv.md",
       {BudgetParameter(),
        RecentWindowParameter(),
        {"obs_window", 16, 1, 65536,
         "recorded steps each slot's ring remembers"},
        {"pool_kernel", 5, 1, 65535,
         "width of the max-pool over adjacent kept slots; odd; 1 disables "
         "pooling"},
        GranularityParameter(),
        AggregationParameter(),
        AdaptiveParameter(),
        SafeguardParameter()}},
      &MakeSnapKv};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
