// knorm: key norm (Devoto et al., 2024; kvpress's KnormPress). A position's
// score under one KV head is +0.0 - norm(key), fixed when the position is
// admitted; the lowest-scoring positions (the largest norms) outside the
// recent window go; equal scores evict the lower position. A set covering
// several KV heads ranks by their combination
// (spec/policies/knorm.md#several-kv-heads). Reads keys, never attention.
//
// Spec: spec/policies/knorm.md
#include <memory>

#include "cc/elementary.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/prefill.h"
#include "cc/policies/ranking.h"

namespace kvspec {
namespace policies {
namespace {

class KnormPolicy final : public Policy {
 public:
  KnormPolicy(StepBudgetRule budget, size_t recent_window,
              Aggregation aggregation, size_t heads)
      : Policy(heads),
        budget_(budget),
        recent_window_(recent_window),
        aggregation_(aggregation) {}
  absl::string_view name() const override { return "knorm"; }
  bool reads_keys() const override { return true; }

 protected:
  // knorm.md: attention is not read.
  void Record(absl::Span<const float>) override {}
  // The slot's score comes with its key (RecordKeys, right after).
  void Admit(Position) override {}

  // knorm.md#how-it-works: each admitted position's score under each of
  // the set's KV heads, +0.0 - norm(key) (spec/elementary.md's norm: the
  // widened entries squared and summed from channel 0, then sqrt).
  void RecordKeys(absl::Span<const float> keys, size_t key_heads,
                  size_t head_dim, size_t count) override {
    if (scores_.empty()) scores_.resize(key_heads);
    for (size_t g = 0; g < key_heads; ++g) {
      for (size_t i = 0; i < count; ++i) {
        scores_[g].push_back(
            0.0 - Norm(keys.subspan((g * count + i) * head_dim, head_dim)));
      }
    }
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const std::optional<size_t> budget = budget_.At(prefill_step(), kept_count);
    if (!budget.has_value()) return {};
    const size_t excess = Excess(kept_count, *budget);
    if (excess == 0) return {};
    return LowestRanked(absl::MakeConstSpan(Ranked()), kept(), CandidateEnd(),
                        excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    for (std::vector<double>& head : scores_) EraseSlots(head, slots);
    if (!combined_.empty()) EraseSlots(combined_, slots);
  }

  size_t PolicyStateBytes() const override {
    return (scores_.size() * kept().size() + combined_.size()) * sizeof(double);
  }

  bool CurrentScores(std::vector<double>& scores,
                     size_t& candidate_end) override {
    scores = Ranked();
    candidate_end = CandidateEnd();
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = scores_.size() == 1 ? scores_[0] : combined_;
    candidate_end = CandidateEnd();
    return true;
  }

 private:
  // The scores the set ranks by: its one KV head's, or the combination of
  // its KV heads' (spec/heads.md#combining-heads-at-ranking-time's rule over
  // KV heads).
  const std::vector<double>& Ranked() {
    if (scores_.size() == 1) return scores_[0];
    Combine(aggregation_, absl::MakeConstSpan(scores_), combined_);
    return combined_;
  }

  size_t CandidateEnd() const { return kept().size() - recent_window_; }

  const StepBudgetRule budget_;
  const size_t recent_window_;
  const Aggregation aggregation_;
  // Per KV head of the set, per kept slot: +0.0 - norm(key).
  std::vector<std::vector<double>> scores_;
  // Several KV heads only: the combined scores of the latest ranking.
  std::vector<double> combined_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeKnorm(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("knorm", budget, recent_window));
  KVSPEC_RETURN_IF_ERROR(CheckPrefillRules("knorm", values, true, false));
  return std::unique_ptr<Policy>(new KnormPolicy(
      StepBudgetRule::Of(values), static_cast<size_t>(recent_window),
      static_cast<Aggregation>(values.Get("aggregation")), heads));
}

}  // namespace

const PolicyEntry& KnormEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"knorm",
       "evicts the largest key norm (the lowest +0.0 - norm(key)) outside the "
       "recent window; reads the scenario's keys",
       "spec/policies/knorm.md",
       {BudgetParameter(),
        {"recent_window", 0, 0, kMaxBudget - 1,
         "latest kept positions, never evicted; must be below budget"},
        GranularityParameter(),
        {"aggregation", 0, 0, 2,
         "how the scores of a set's KV heads combine: 0 mean, 1 max, 2 sum"},
        PrefillOnlyParameter(), RatioParameter()}},
      &MakeKnorm};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
