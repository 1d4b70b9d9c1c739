// h2o: Heavy-Hitter Oracle (Zhang et al., 2023). A position's score is the
// attention it has received since it was admitted, summed in binary64 in
// step order. The lowest-scoring positions outside the recent window go;
// equal scores evict the lower position. A policy covering several query
// heads keeps one sum per head and ranks by their combination
// (spec/heads.md#combining-heads-at-ranking-time).
//
// Spec: spec/policies/h2o.md
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

class H2oPolicy final : public Policy {
 public:
  H2oPolicy(StepBudgetRule budget, size_t recent_window,
            Aggregation aggregation, bool normalize, size_t heads)
      : Policy(heads),
        budget_(budget),
        recent_window_(recent_window),
        aggregation_(aggregation),
        normalize_(normalize),
        cumulative_(heads) {}
  absl::string_view name() const override { return "h2o"; }

 protected:
  // h2o.md#how-it-works: one addition per kept slot per recorded step, so
  // each slot's sum runs in step order (spec/arithmetic.md#reductions).
  // Each head adds its own row (heads.md#what-each-head-records).
  void Record(absl::Span<const float> attention) override {
    const size_t kept_count = kept().size();
    for (size_t h = 0; h < cumulative_.size(); ++h) {
      std::vector<double>& sums = cumulative_[h];
      const float* row = attention.data() + h * kept_count;
      for (size_t slot = 0; slot < kept_count; ++slot) {
        sums[slot] += static_cast<double>(row[slot]);
      }
    }
  }

  // spec/harness.md#unobserved-positions: a new position scores +0.0.
  void Admit(Position) override {
    for (std::vector<double>& sums : cumulative_) sums.push_back(0.0);
  }

  // h2o.md#at-prefill: each head's observed attention over the query rows
  // that cover a slot, summed in ascending query order from +0.0,
  // optionally divided by how many rows cover it, then added once.
  void RecordQueries(const QueryRows& queries) override {
    const size_t kept_count = kept().size();
    if (queries.has_totals()) {
      // h2o.md#at-prefill, with column totals: the gathered total is the
      // contribution, divided by the min(R, n - slot) queries that see it.
      for (size_t h = 0; h < cumulative_.size(); ++h) {
        const absl::Span<const double> totals = queries.Totals(h);
        std::vector<double>& sums = cumulative_[h];
        for (size_t slot = 0; slot < kept_count; ++slot) {
          double c = totals[slot];
          if (normalize_) {
            c /= static_cast<double>(
                queries.QueriesSeeing(slot, queries.total_rows));
          }
          sums[slot] += c;
        }
      }
      return;
    }
    std::vector<double> contribution(kept_count);
    for (size_t h = 0; h < cumulative_.size(); ++h) {
      // Row by row, so each slot's additions run in ascending query order;
      // row j covers slots [0, Length(j)).
      std::fill(contribution.begin(), contribution.end(), 0.0);
      for (size_t j = 0; j < queries.rows; ++j) {
        const absl::Span<const float> row = queries.Row(h, j);
        for (size_t slot = 0; slot < row.size(); ++slot) {
          contribution[slot] += static_cast<double>(row[slot]);
        }
      }
      std::vector<double>& sums = cumulative_[h];
      for (size_t slot = 0; slot < kept_count; ++slot) {
        double c = contribution[slot];
        if (normalize_) {
          // Rows covering the slot: every row whose length passes it.
          c /= static_cast<double>(queries.QueriesSeeing(slot, queries.rows));
        }
        sums[slot] += c;
      }
    }
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const std::optional<size_t> budget = budget_.At(prefill_step(), kept_count);
    if (!budget.has_value()) return {};
    if (blocks().whole()) {
      // blocks.md#ranking-blocks.
      const size_t count = blocks().ToEvict(kept_count, *budget);
      if (count == 0) return {};
      return blocks().LowestRanked(absl::MakeConstSpan(Scores()),
                                   kept_count - recent_window_, count);
    }
    const size_t excess = Excess(kept_count, *budget);
    if (excess == 0) return {};
    return LowestRanked(absl::MakeConstSpan(Scores()), kept(),
                        kept_count - recent_window_, excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    for (std::vector<double>& sums : cumulative_) EraseSlots(sums, slots);
    if (!combined_.empty()) EraseSlots(combined_, slots);
  }

  size_t PolicyStateBytes() const override {
    return (cumulative_.size() * kept().size() + combined_.size()) *
           sizeof(double);
  }

  bool CurrentScores(std::vector<double>& scores,
                     size_t& candidate_end) override {
    scores = Scores();
    candidate_end = kept().size() - recent_window_;
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = cumulative_.size() == 1 ? cumulative_[0] : combined_;
    candidate_end = kept().size() - recent_window_;
    return true;
  }

 private:
  // The scores ranked by: one head's sums as they are, or the heads'
  // combination (heads.md#combining-heads-at-ranking-time).
  const std::vector<double>& Scores() {
    if (cumulative_.size() == 1) return cumulative_[0];
    Combine(aggregation_, absl::MakeConstSpan(cumulative_), combined_);
    return combined_;
  }

  const StepBudgetRule budget_;
  const size_t recent_window_;
  const Aggregation aggregation_;
  const bool normalize_;
  // Per head, per kept slot: attention received since admission.
  std::vector<std::vector<double>> cumulative_;
  // Several heads only: the combined scores of the latest eviction.
  std::vector<double> combined_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeH2o(const ParameterValues& values,
                                                Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("h2o", budget, recent_window));
  KVSPEC_RETURN_IF_ERROR(CheckPrefillRules("h2o", values, true, false));
  KVSPEC_RETURN_IF_ERROR(CheckTriggerRules("h2o", values));
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("h2o", values));
  std::unique_ptr<Policy> policy(new H2oPolicy(
      StepBudgetRule::Of(values), static_cast<size_t>(recent_window),
      static_cast<Aggregation>(values.Get("aggregation")),
      values.Get("normalize") == 1, heads));
  policy->SetTrigger(TriggerOf(values));
  policy->SetBlocks(BlocksOf(values));
  return policy;
}

}  // namespace

const PolicyEntry& H2oEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"h2o",
       "evicts the lowest cumulative attention since admission outside the "
       "recent window",
       "spec/policies/h2o.md",
       WithBlockParameters(WithTriggerParameters({BudgetParameter(), RecentWindowParameter(), GranularityParameter(),
        AggregationParameter(), AdaptiveParameter(), SafeguardParameter(),
        PrefillOnlyParameter(), RatioParameter(),
        {"normalize", 0, 0, 1,
         "at a prefill step: 0 raw sum of the query rows, 1 divided by the "
         "number of rows that see the key"}}), true)},
      &MakeH2o};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
