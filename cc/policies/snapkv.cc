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
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/ranking.h"

namespace kvspec {
namespace policies {
namespace {

class SnapKvPolicy final : public Policy {
 public:
  SnapKvPolicy(size_t budget, size_t recent_window, size_t obs_window,
               size_t pool_kernel)
      : budget_(budget),
        recent_window_(recent_window),
        obs_window_(obs_window),
        radius_((pool_kernel - 1) / 2),
        history_(obs_window) {}
  absl::string_view name() const override { return "snapkv"; }

 protected:
  // snapkv.md#the-ring: every kept slot writes ring index `cursor_`; then
  // the shared cursor moves on. Only recorded steps get here (null
  // attention is inert: spec/harness.md#null-attention).
  void Record(absl::Span<const float> attention) override {
    std::copy(attention.begin(), attention.end(), history_[cursor_].begin());
    cursor_ = (cursor_ + 1) % obs_window_;
  }

  // spec/harness.md#unobserved-positions: a new slot's ring is all +0.0.
  void Admit(Position) override {
    for (std::vector<float>& row : history_) row.push_back(0.0f);
    window_sums_.push_back(0.0);
    pooled_.push_back(0.0);
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const size_t excess = Excess(kept_count, budget_);
    if (excess == 0) return {};
    // snapkv.md#window-sums: recomputed from the ring, index 0 upward.
    for (size_t slot = 0; slot < kept_count; ++slot) {
      double sum = 0.0;
      for (const std::vector<float>& row : history_) {
        sum += static_cast<double>(row[slot]);
      }
      window_sums_[slot] = sum;
    }
    // snapkv.md#pooling: max over slots [slot - r, slot + r], clamped to
    // [0, kept_count - 1]. Every kept slot is a neighbour, protected or not.
    for (size_t slot = 0; slot < kept_count; ++slot) {
      const size_t low = slot >= radius_ ? slot - radius_ : 0;
      const size_t high = std::min(kept_count - 1, slot + radius_);
      double best = window_sums_[low];
      for (size_t j = low + 1; j <= high; ++j) {
        best = std::max(best, window_sums_[j]);
      }
      pooled_[slot] = best;
    }
    return LowestRanked(absl::MakeConstSpan(pooled_), kept(),
                        kept_count - recent_window_, excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    for (std::vector<float>& row : history_) EraseSlots(row, slots);
    EraseSlots(window_sums_, slots);
    EraseSlots(pooled_, slots);
  }

  size_t PolicyStateBytes() const override {
    return history_.size() * kept().size() * sizeof(float) +
           window_sums_.size() * sizeof(double) +
           pooled_.size() * sizeof(double);
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = pooled_;
    candidate_end = kept().size() - recent_window_;
    return true;
  }

 private:
  const size_t budget_;
  const size_t recent_window_;
  const size_t obs_window_;
  const size_t radius_;  // (pool_kernel - 1) / 2
  // Ring index the next recorded step writes, shared by every slot.
  size_t cursor_ = 0;
  // The rings, by ring index: history_[i][slot] is ring index i of kept
  // slot `slot`; obs_window_ rows of kept().size() weights.
  std::vector<std::vector<float>> history_;
  // Per slot, as computed at the latest eviction (kept for the eviction log
  // and the tie audit; stale between evictions).
  std::vector<double> window_sums_;
  std::vector<double> pooled_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeSnapKv(
    const ParameterValues& values, Rng) {
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
      static_cast<size_t>(obs_window), static_cast<size_t>(pool_kernel)));
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
         "pooling"}}},
      &MakeSnapKv};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
