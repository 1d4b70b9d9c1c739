// lagkv: lag-relative spread (Liang et al., 2025; kvpress's LagKVPress). At a
// step that evicts, the set's kept slots are cut into the sinks, partitions
// of `lag` slots, and the newest slots; each partition but the last is
// judged against the next: its keys and values are scaled channel by channel
// into the next partition's range, each vector's spread across channels is
// put through a softmax over the partition, and the key's and value's are
// averaged. A slot scores its rank in its partition / lag (or, with
// cross_scoring 1, the average itself); the sinks and the newest slots score
// 1.0. The lowest scores go, equal scores the lower position first. A set
// covering several KV heads ranks by their combination
// (spec/policies/knorm.md#several-kv-heads). Reads keys and values, never
// attention.
//
// Spec: spec/policies/lagkv.md
#include <algorithm>
#include <memory>
#include <numeric>

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

// lagkv.md#how-it-works, step 3: the spread of each of a judged partition's
// `lag` vectors (`dim` entries each, slot after slot at `part`), scaled
// into the range of its reference's `lag` vectors (at `reference`).
std::vector<double> Spreads(const float* part, const float* reference,
                            size_t lag, size_t dim) {
  std::vector<double> lo(dim), hi(dim);
  for (size_t c = 0; c < dim; ++c) lo[c] = hi[c] = reference[c];
  for (size_t r = 1; r < lag; ++r) {
    for (size_t c = 0; c < dim; ++c) {
      const double entry = reference[r * dim + c];
      lo[c] = std::min(lo[c], entry);
      hi[c] = std::max(hi[c], entry);
    }
  }
  std::vector<double> spreads(lag), scaled(dim);
  for (size_t i = 0; i < lag; ++i) {
    for (size_t c = 0; c < dim; ++c) {
      // A channel the reference holds constant scales to +0.0.
      scaled[c] = hi[c] == lo[c]
                      ? 0.0
                      : (static_cast<double>(part[i * dim + c]) - lo[c]) /
                            (hi[c] - lo[c]);
    }
    spreads[i] = Std(scaled, 1);
  }
  return spreads;
}

// lagkv.md#how-it-works, step 4: t = exp(s - max s), each divided by the
// sum of t in slot order from +0.0.
void Softmax(std::vector<double>& s) {
  const double top = *std::max_element(s.begin(), s.end());
  double z = 0.0;
  for (double& entry : s) {
    entry = Exp(entry - top);
    z += entry;
  }
  for (double& entry : s) entry /= z;
}

class LagKvPolicy final : public Policy {
 public:
  LagKvPolicy(StepBudgetRule budget, size_t sinks, size_t lag,
              bool cross_scoring, Aggregation aggregation, size_t heads)
      : Policy(heads),
        budget_(budget),
        sinks_(sinks),
        lag_(lag),
        cross_scoring_(cross_scoring),
        aggregation_(aggregation) {}
  absl::string_view name() const override { return "lagkv"; }
  bool reads_keys() const override { return true; }
  bool reads_values() const override { return true; }
  // lagkv.md#how-it-works, step 3: std(y, 1) needs two channels.
  uint32_t least_head_dim() const override { return 2; }
  uint32_t least_value_dim() const override { return 2; }

 protected:
  // lagkv.md: attention is not read.
  void Record(absl::Span<const float>) override {}
  // The slot's tensors come with RecordKeys and RecordValues, right after.
  void Admit(Position) override {}

  // lagkv.md#how-it-works: each admitted position's key and value under
  // each of the set's KV heads, kept as given.
  void RecordKeys(absl::Span<const float> keys, size_t key_heads,
                  size_t head_dim, size_t count) override {
    head_dim_ = head_dim;
    Append(keys, key_heads, head_dim, count, keys_);
  }
  void RecordValues(absl::Span<const float> values, size_t value_heads,
                    size_t value_dim, size_t count) override {
    value_dim_ = value_dim;
    Append(values, value_heads, value_dim, count, values_);
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const std::optional<size_t> budget = budget_.At(prefill_step(), kept_count);
    if (!budget.has_value()) return {};
    const size_t excess = Excess(kept_count, *budget);
    if (excess == 0) return {};
    return LowestRanked(absl::MakeConstSpan(Ranked()), kept(), kept_count,
                        excess);
  }

  void Forget(absl::Span<const size_t> slots) override {
    for (std::vector<float>& head : keys_) EraseSlotVectors(head, head_dim_, slots);
    for (std::vector<float>& head : values_) EraseSlotVectors(head, value_dim_, slots);
    if (!combined_.empty()) EraseSlots(combined_, slots);
    for (std::vector<double>& head : scores_) {
      if (!head.empty()) EraseSlots(head, slots);
    }
  }

  size_t PolicyStateBytes() const override {
    size_t bytes = combined_.size() * sizeof(double);
    for (const std::vector<float>& head : keys_) bytes += head.size() * sizeof(float);
    for (const std::vector<float>& head : values_) bytes += head.size() * sizeof(float);
    for (const std::vector<double>& head : scores_) bytes += head.size() * sizeof(double);
    return bytes;
  }

  bool CurrentScores(std::vector<double>& scores,
                     size_t& candidate_end) override {
    scores = Ranked();
    candidate_end = kept().size();
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = scores_.size() == 1 ? scores_[0] : combined_;
    candidate_end = kept().size();
    return true;
  }

 private:
  static void Append(absl::Span<const float> given, size_t heads, size_t dim,
                     size_t count, std::vector<std::vector<float>>& kept) {
    if (kept.empty()) kept.resize(heads);
    for (size_t g = 0; g < heads; ++g) {
      const absl::Span<const float> head = given.subspan(g * count * dim, count * dim);
      kept[g].insert(kept[g].end(), head.begin(), head.end());
    }
  }

  // lagkv.md#how-it-works, steps 1 to 6: every kept slot's score under KV
  // head g, from the kept keys and values now.
  std::vector<double> HeadScores(size_t g) const {
    const size_t m = kept().size();
    std::vector<double> scores(m, 1.0);
    // Step 1, the short cache: sinks 1.0, then (i - sinks) / (m - sinks).
    if (m < sinks_ + 2 * lag_) {
      for (size_t i = sinks_; i < m; ++i) {
        scores[i] = static_cast<double>(i - sinks_) /
                    static_cast<double>(m - sinks_);
      }
      return scores;
    }
    // Step 2: partitions 0 .. P - 2 are judged; the rest stays 1.0.
    const size_t partitions = (m - sinks_) / lag_;
    for (size_t j = 0; j + 1 < partitions; ++j) {
      const size_t first = sinks_ + j * lag_;
      const size_t reference = first + lag_;
      // Steps 3 and 4, keys then values.
      std::vector<double> wk = Spreads(keys_[g].data() + first * head_dim_,
                                       keys_[g].data() + reference * head_dim_,
                                       lag_, head_dim_);
      Softmax(wk);
      std::vector<double> wv = Spreads(values_[g].data() + first * value_dim_,
                                       values_[g].data() + reference * value_dim_,
                                       lag_, value_dim_);
      Softmax(wv);
      // Step 5, the judgement.
      std::vector<double> judged(lag_);
      for (size_t i = 0; i < lag_; ++i) judged[i] = (wk[i] + wv[i]) / 2.0;
      // Step 6: the judgement itself, or the rank by (judgement, slot).
      if (cross_scoring_) {
        for (size_t i = 0; i < lag_; ++i) scores[first + i] = judged[i];
        continue;
      }
      std::vector<size_t> order(lag_);
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return judged[a] < judged[b];
      });
      for (size_t rank = 0; rank < lag_; ++rank) {
        scores[first + order[rank]] =
            static_cast<double>(rank) / static_cast<double>(lag_);
      }
    }
    return scores;
  }

  // The set's one KV head's scores, or their combination
  // (spec/heads.md#combining-heads-at-ranking-time's rule over KV heads).
  const std::vector<double>& Ranked() {
    scores_.clear();
    for (size_t g = 0; g < keys_.size(); ++g) scores_.push_back(HeadScores(g));
    if (scores_.size() == 1) return scores_[0];
    Combine(aggregation_, absl::MakeConstSpan(scores_), combined_);
    return combined_;
  }

  const StepBudgetRule budget_;
  const size_t sinks_;
  const size_t lag_;
  const bool cross_scoring_;
  const Aggregation aggregation_;
  size_t head_dim_ = 0;
  size_t value_dim_ = 0;
  // Per KV head of the set: each kept slot's key (values_: value), as
  // given, head_dim_ (value_dim_) entries a slot, slot after slot.
  std::vector<std::vector<float>> keys_;
  std::vector<std::vector<float>> values_;
  // Per KV head, per kept slot: the scores of the latest ranking.
  std::vector<std::vector<double>> scores_;
  // Several KV heads only: the combined scores of the latest ranking.
  std::vector<double> combined_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeLagKv(const ParameterValues& values,
                                                  Rng, size_t heads) {
  KVSPEC_RETURN_IF_ERROR(CheckPrefillRules("lagkv", values, false, false));
  return std::unique_ptr<Policy>(new LagKvPolicy(
      StepBudgetRule::Of(values), static_cast<size_t>(values.Get("sinks")),
      static_cast<size_t>(values.Get("lag")), values.Get("cross_scoring") == 1,
      static_cast<Aggregation>(values.Get("aggregation")), heads));
}

}  // namespace

const PolicyEntry& LagKvEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"lagkv",
       "evicts the positions whose keys and values spread least across "
       "channels once scaled into the next partition's range (ranked within "
       "each partition of lag slots); the sinks and the newest partition "
       "stay; reads the scenario's keys and values",
       "spec/policies/lagkv.md",
       {BudgetParameter(),
        {"sinks", 4, 0, kMaxBudget - 1, "the oldest kept slots, scored 1.0"},
        {"lag", 128, 1, int64_t{1} << 20, "slots in a partition"},
        {"cross_scoring", 0, 0, 1,
         "1: a judged slot scores its judgement, not its rank in its "
         "partition"},
        GranularityParameter(),
        {"aggregation", 0, 0, 2,
         "how the scores of a set's KV heads combine: 0 mean, 1 max, 2 sum"},
        PrefillOnlyParameter(), RatioParameter()}},
      &MakeLagKv};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
