// tova: Token Omission Via Attention (Oren et al., 2024). A position's score
// is the latest attention weight it received; a position not observed yet
// scores +0.0. The lowest-scoring positions outside the recent window go;
// equal scores evict the lower position.
//
// Spec: spec/policies/tova.md
#include <algorithm>
#include <memory>

#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/ranking.h"

namespace kvspec {
namespace policies {
namespace {

class TovaPolicy final : public Policy {
 public:
  TovaPolicy(size_t budget, size_t recent_window)
      : budget_(budget), recent_window_(recent_window) {}
  absl::string_view name() const override { return "tova"; }

 protected:
  // tova.md#how-it-works: overwrite; earlier weights are forgotten.
  void Record(absl::Span<const float> attention) override {
    std::copy(attention.begin(), attention.end(), latest_.begin());
  }

  // spec/harness.md#unobserved-positions.
  void Admit(Position) override { latest_.push_back(0.0f); }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const size_t excess = Excess(kept_count, budget_);
    if (excess == 0) return {};
    return LowestRanked(absl::MakeConstSpan(latest_), kept(),
                        kept_count - recent_window_, excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    EraseSlots(latest_, slots);
  }

  size_t PolicyStateBytes() const override {
    return latest_.size() * sizeof(float);
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores.assign(latest_.begin(), latest_.end());
    candidate_end = kept().size() - recent_window_;
    return true;
  }

 private:
  const size_t budget_;
  const size_t recent_window_;
  // Per kept slot: the latest weight, stored as received (binary32; it is
  // ranked as a number, so widening would change nothing).
  std::vector<float> latest_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeTova(const ParameterValues& values,
                                                 Rng) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("tova", budget, recent_window));
  return std::unique_ptr<Policy>(new TovaPolicy(
      static_cast<size_t>(budget), static_cast<size_t>(recent_window)));
}

}  // namespace

const PolicyEntry& TovaEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"tova",
       "evicts the lowest latest attention weight outside the recent window",
       "spec/policies/tova.md",
       {BudgetParameter(), RecentWindowParameter()}},
      &MakeTova};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
