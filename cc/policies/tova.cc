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
#include "cc/policies/blocks.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/prefill.h"
#include "cc/policies/ranking.h"
#include "cc/policies/triggers.h"

namespace kvspec {
namespace policies {
namespace {

class TovaPolicy final : public Policy {
 public:
  TovaPolicy(StepBudgetRule budget, size_t recent_window,
             Aggregation aggregation, bool protect_newest, size_t heads)
      : Policy(heads),
        budget_(budget),
        recent_window_(recent_window),
        aggregation_(aggregation),
        protect_newest_(protect_newest),
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

  // tova.md#at-prefill: each head's latest weights become its last query
  // row, which covers every kept slot (the newest's own weight included).
  void RecordQueries(const QueryRows& queries) override {
    for (size_t h = 0; h < latest_.size(); ++h) {
      const absl::Span<const float> row = queries.Row(h, queries.rows - 1);
      std::copy(row.begin(), row.end(), latest_[h].begin());
    }
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const std::optional<size_t> budget = budget_.At(prefill_step(), kept_count);
    if (!budget.has_value()) return {};
    const size_t excess = blocks().whole()
                              ? blocks().ToEvict(kept_count, *budget)
                              : Excess(kept_count, *budget);
    if (excess == 0) return {};
    const size_t candidate_end = CandidateEnd();
    if (blocks().whole()) {
      // blocks.md#ranking-blocks: `excess` counts blocks.
      if (latest_.size() == 1) {
        return blocks().LowestRanked(absl::MakeConstSpan(latest_[0]),
                                     candidate_end, excess);
      }
      Combine(aggregation_, absl::MakeConstSpan(latest_), combined_);
      return blocks().LowestRanked(absl::MakeConstSpan(combined_),
                                   candidate_end, excess);
    }
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
    candidate_end = CandidateEnd();
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    if (latest_.size() == 1) {
      scores.assign(latest_[0].begin(), latest_[0].end());
    } else {
      scores = combined_;
    }
    candidate_end = CandidateEnd();
    return true;
  }

 private:
  // Candidates are the slots before the recent window; at a prefill step
  // with protect_newest, the newest slot is not one (tova.md#at-prefill).
  size_t CandidateEnd() const {
    const size_t protect =
        protect_newest_ && prefill_step() ? std::max<size_t>(recent_window_, 1)
                                          : recent_window_;
    return kept().size() - protect;
  }

  const StepBudgetRule budget_;
  const size_t recent_window_;
  const Aggregation aggregation_;
  const bool protect_newest_;
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
  KVSPEC_RETURN_IF_ERROR(CheckPrefillRules("tova", values, true, false));
  KVSPEC_RETURN_IF_ERROR(CheckTriggerRules("tova", values));
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("tova", values));
  std::unique_ptr<Policy> policy(new TovaPolicy(
      StepBudgetRule::Of(values), static_cast<size_t>(recent_window),
      static_cast<Aggregation>(values.Get("aggregation")),
      values.Get("protect_newest") == 1, heads));
  policy->SetTrigger(TriggerOf(values));
  policy->SetBlocks(BlocksOf(values));
  return policy;
}

}  // namespace

const PolicyEntry& TovaEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"tova",
       "evicts the lowest latest attention weight outside the recent window",
       "spec/policies/tova.md",
       WithBlockParameters(WithTriggerParameters({BudgetParameter(), RecentWindowParameter(), GranularityParameter(),
        AggregationParameter(), AdaptiveParameter(), SafeguardParameter(),
        PrefillOnlyParameter(), RatioParameter(),
        {"protect_newest", 0, 0, 1,
         "1: at a prefill step the newest position is never a candidate"}}), true)},
      &MakeTova};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
