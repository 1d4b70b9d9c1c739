// keydiff: key diversity (Park et al., 2025; kvpress's KeyDiffPress). At a
// step that evicts, each KV head's anchor is the unit vector of the mean of
// the kept positions' unit keys, and a position's score is +0.0 minus the
// dot product of its unit key with the anchor: the keys nearest the
// anchor's direction (the lowest scores) outside the recent window go;
// equal scores evict the lower position. A set covering several KV heads
// ranks by their combination (spec/policies/knorm.md#several-kv-heads).
// Reads keys, never attention.
//
// Spec: spec/policies/keydiff.md
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

// keydiff.md#how-it-works, the unit key: each entry divided by the norm,
// or zeros for a zero vector.
void Unit(absl::Span<const double> v, double* out) {
  const double n = Norm(v);
  for (size_t c = 0; c < v.size(); ++c) out[c] = n == 0.0 ? 0.0 : v[c] / n;
}

class KeyDiffPolicy final : public Policy {
 public:
  KeyDiffPolicy(StepBudgetRule budget, size_t recent_window,
                Aggregation aggregation, size_t heads)
      : Policy(heads),
        budget_(budget),
        recent_window_(recent_window),
        aggregation_(aggregation) {}
  absl::string_view name() const override { return "keydiff"; }
  bool reads_keys() const override { return true; }

 protected:
  // keydiff.md: attention is not read.
  void Record(absl::Span<const float>) override {}
  // The slot's unit key comes with its key (RecordKeys, right after).
  void Admit(Position) override {}

  // keydiff.md#how-it-works: each admitted position's unit key under each
  // of the set's KV heads, computed once.
  void RecordKeys(absl::Span<const float> keys, size_t key_heads,
                  size_t head_dim, size_t count) override {
    if (units_.empty()) units_.resize(key_heads);
    head_dim_ = head_dim;
    std::vector<double> widened(head_dim);
    for (size_t g = 0; g < key_heads; ++g) {
      for (size_t i = 0; i < count; ++i) {
        const absl::Span<const float> key =
            keys.subspan((g * count + i) * head_dim, head_dim);
        for (size_t c = 0; c < head_dim; ++c) widened[c] = key[c];
        units_[g].resize(units_[g].size() + head_dim);
        Unit(widened, units_[g].data() + units_[g].size() - head_dim);
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
    for (std::vector<double>& head : units_) EraseSlotVectors(head, head_dim_, slots);
    if (!combined_.empty()) EraseSlots(combined_, slots);
    for (std::vector<double>& head : scores_) {
      if (!head.empty()) EraseSlots(head, slots);
    }
  }

  size_t PolicyStateBytes() const override {
    size_t bytes = combined_.size() * sizeof(double);
    for (const std::vector<double>& head : units_) bytes += head.size() * sizeof(double);
    for (const std::vector<double>& head : scores_) bytes += head.size() * sizeof(double);
    return bytes;
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
  // keydiff.md#how-it-works: every kept slot's score under each KV head,
  // from the anchor of the kept slots now; then the set's one KV head's, or
  // their combination (spec/heads.md#combining-heads-at-ranking-time's
  // rule over KV heads).
  const std::vector<double>& Ranked() {
    const size_t kept_count = kept().size();
    const size_t d = head_dim_;
    scores_.assign(units_.size(), std::vector<double>(kept_count, 0.0));
    std::vector<double> mean(d), anchor(d);
    for (size_t g = 0; g < units_.size(); ++g) {
      const std::vector<double>& unit = units_[g];
      for (size_t c = 0; c < d; ++c) {
        double sum = 0.0;
        for (size_t slot = 0; slot < kept_count; ++slot) sum += unit[slot * d + c];
        mean[c] = sum / static_cast<double>(kept_count);
      }
      Unit(mean, anchor.data());
      for (size_t slot = 0; slot < kept_count; ++slot) {
        scores_[g][slot] =
            0.0 - Dot(absl::MakeConstSpan(unit.data() + slot * d, d), anchor);
      }
    }
    if (scores_.size() == 1) return scores_[0];
    Combine(aggregation_, absl::MakeConstSpan(scores_), combined_);
    return combined_;
  }

  size_t CandidateEnd() const { return kept().size() - recent_window_; }

  const StepBudgetRule budget_;
  const size_t recent_window_;
  const Aggregation aggregation_;
  size_t head_dim_ = 0;
  // Per KV head of the set: each kept slot's unit key, head_dim entries a
  // slot, slot after slot.
  std::vector<std::vector<double>> units_;
  // Per KV head, per kept slot: the scores of the latest ranking.
  std::vector<std::vector<double>> scores_;
  // Several KV heads only: the combined scores of the latest ranking.
  std::vector<double> combined_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeKeyDiff(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("keydiff", budget, recent_window));
  KVSPEC_RETURN_IF_ERROR(CheckPrefillRules("keydiff", values, true, false));
  return std::unique_ptr<Policy>(new KeyDiffPolicy(
      StepBudgetRule::Of(values), static_cast<size_t>(recent_window),
      static_cast<Aggregation>(values.Get("aggregation")), heads));
}

}  // namespace

const PolicyEntry& KeyDiffEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"keydiff",
       "evicts the keys nearest the cache's mean key direction (the lowest "
       "+0.0 - cos(key, anchor)) outside the recent window; reads the "
       "scenario's keys",
       "spec/policies/keydiff.md",
       {BudgetParameter(),
        {"recent_window", 0, 0, kMaxBudget - 1,
         "latest kept positions, never evicted; must be below budget"},
        GranularityParameter(),
        {"aggregation", 0, 0, 2,
         "how the scores of a set's KV heads combine: 0 mean, 1 max, 2 sum"},
        PrefillOnlyParameter(), RatioParameter()}},
      &MakeKeyDiff};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
