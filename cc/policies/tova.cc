// tova: Token Omission Via Attention (Oren et al., 2024). A position's score
// is the latest attention weight it received; a position not observed yet
// scores +0.0. The lowest-scoring positions outside the recent window go;
// equal scores evict the lower position. A policy covering several query
// heads keeps one latest weight per head and ranks by their combination
// (spec/heads.md#combining-heads-at-ranking-time).
//
// Spec: spec/policies/tova.md
#include <algorithm>
#include <memory>

#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/ranking.h"

namespace kvspec {
namespace policies {
namespace {

class TovaPolicy final : public Policy {
 public:
  TovaPolicy(size_t budget, size_t recent_window, Aggregation aggregation,
             size_t heads)
      : Policy(heads),
        budget_(budget),
        recent_window_(recent_window),
        aggregation_(aggregation),
        latest_(heads) {}
  absl::string_view name() const override { return "tova"; }

 protected:
  // tova.md#how-it-works: overwrite; earlier weights are forgotten.
  // Each head overwrites with its own row (heads.md#what-each-head-records).
  void Record(absl::Span<const float> attention) override {
    const size_t kept_count = kept().size();
    for (size_t h = 0; h < latest_.size(); ++h) {
      std::copy(attention.begin() + h * kept_count,
                attention.begin() + (h + 1) * kept_count, latest_[h].begin());
    }
  }

  // spec/harness.md#unobserved-positions.
  void Admit(Position) override {
    for (std::vector<float>& latest : latest_) latest.push_back(0.0f);
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const size_t excess = Excess(kept_count, budget_);
    if (excess == 0) return {};
    const size_t candidate_end = kept_count - recent_window_;
    if (latest_.size() == 1) {
      return LowestRanked(absl::MakeConstSpan(latest_[0]), kept(),
                          candidate_end, excess);
    }
    // heads.md#combining-heads-at-ranking-time.
    Combine(aggregation_, absl::MakeConstSpan(latest_), combined_);
    return LowestRanked(absl::MakeConstSpan(combined_), kept(), candidate_end,
                        excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    for (std::vector<float>& latest : latest_) EraseSlots(latest, slots);
    if (!combined_.empty()) EraseSlots(combined_, slots);
  }

  size_t PolicyStateBytes() const override {
    return latest_.size() * kept().size() * sizeof(float) +
           combined_.size() * sizeof(double);
  }

  bool CurrentScores(std::vector<double>& scores,
                     size_t& candidate_end) override {
    if (latest_.size() == 1) {
      scores.assign(latest_[0].begin(), latest_[0].end());
    } else {
      Combine(aggregation_, absl::MakeConstSpan(latest_), combined_);
      scores = combined_;
    }
    candidate_end = kept().size() - recent_window_;
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    if (latest_.size() == 1) {
      scores.assign(latest_[0].begin(), latest_[0].end());
    } else {
      scores = combined_;
    }
    candidate_end = kept().size() - recent_window_;
    return true;
  }

 private:
  const size_t budget_;
  const size_t recent_window_;
  const Aggregation aggregation_;
  // Per head, per kept slot: the latest weight, stored as received
  // (binary32; it is ranked as a number, so widening would change nothing).
  std::vector<std::vector<float>> latest_;
  // Several heads only: the combined scores of the latest eviction.
  std::vector<double> combined_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeTova(const ParameterValues& values,
                                                 Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("tova", budget, recent_window));
  return std::unique_ptr<Policy>(new TovaPolicy(
      static_cast<size_t>(budget), static_cast<size_t>(recent_window),
      static_cast<Aggregation>(values.Get("aggregation")), heads));
}

}  // namespace

const PolicyEntry& TovaEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"tova",
       "evicts the lowest latest attention weight outside the recent window",
       "spec/policies/tova.md",
       {BudgetParameter(), RecentWindowParameter(), GranularityParameter(),
        AggregationParameter(), AdaptiveParameter(), SafeguardParameter()}},
      &MakeTova};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
