// h2o: Heavy-Hitter Oracle (Zhang et al., 2023). A position's score is the
// attention it has received since it was admitted, summed in binary64 in
// step order. The lowest-scoring positions outside the recent window go;
// equal scores evict the lower position.
//
// Spec: spec/policies/h2o.md
#include <memory>

#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/ranking.h"

namespace kvspec {
namespace policies {
namespace {

class H2oPolicy final : public Policy {
 public:
  H2oPolicy(size_t budget, size_t recent_window)
      : budget_(budget), recent_window_(recent_window) {}
  absl::string_view name() const override { return "h2o"; }

 protected:
  // h2o.md#how-it-works: one addition per kept slot per recorded step, so
  // each slot's sum runs in step order (spec/arithmetic.md#reductions).
  void Record(absl::Span<const float> attention) override {
    for (size_t slot = 0; slot < attention.size(); ++slot) {
      cumulative_[slot] += static_cast<double>(attention[slot]);
    }
  }

  // spec/harness.md#unobserved-positions: a new position scores +0.0.
  void Admit(Position) override { cumulative_.push_back(0.0); }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const size_t excess = Excess(kept_count, budget_);
    if (excess == 0) return {};
    return LowestRanked(absl::MakeConstSpan(cumulative_), kept(),
                        kept_count - recent_window_, excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    EraseSlots(cumulative_, slots);
  }

  size_t PolicyStateBytes() const override {
    return cumulative_.size() * sizeof(double);
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = cumulative_;
    candidate_end = kept().size() - recent_window_;
    return true;
  }

 private:
  const size_t budget_;
  const size_t recent_window_;
  // Per kept slot: attention received since admission.
  std::vector<double> cumulative_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeH2o(const ParameterValues& values,
                                                Rng) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("h2o", budget, recent_window));
  return std::unique_ptr<Policy>(new H2oPolicy(
      static_cast<size_t>(budget), static_cast<size_t>(recent_window)));
}

}  // namespace

const PolicyEntry& H2oEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"h2o",
       "evicts the lowest cumulative attention since admission outside the "
       "recent window",
       "spec/policies/h2o.md",
       {BudgetParameter(), RecentWindowParameter()}},
      &MakeH2o};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
