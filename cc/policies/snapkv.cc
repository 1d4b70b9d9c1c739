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
#include <limits>
#include <memory>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/policies/blocks.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/prefill.h"
#include "cc/policies/pyramid.h"
#include "cc/policies/ranking.h"
#include "cc/policies/triggers.h"

namespace kvspec {
namespace policies {
namespace {

class SnapKvPolicy final : public Policy {
 public:
  struct Options {
    StepBudgetRule budget;
    size_t recent_window = 0;
    size_t obs_window = 0;
    size_t pool_kernel = 1;
    Aggregation aggregation = Aggregation::kMean;
    bool window_mean = false;     // window_reduce 1
    bool avg_pooling = false;     // pooling 1
    bool window_outside = false;  // window_budget 1
  };
  SnapKvPolicy(const Options& options, size_t heads)
      : Policy(heads),
        budget_(options.budget),
        recent_window_(options.recent_window),
        obs_window_(options.obs_window),
        pool_kernel_(options.pool_kernel),
        radius_((options.pool_kernel - 1) / 2),
        aggregation_(options.aggregation),
        window_mean_(options.window_mean),
        avg_pooling_(options.avg_pooling),
        window_outside_(options.window_outside),
        history_(heads, std::vector<std::vector<float>>(options.obs_window)),
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

  // snapkv.md#at-prefill: each head's window sums (or means) over the
  // prefix, pooled over the prefix; the window's slots score +infinity.
  // The ring is not written.
  void RecordQueries(const QueryRows& queries) override {
    const size_t kept_count = kept().size();
    window_ = std::min(obs_window_, queries.rows);
    const size_t prefix = kept_count - window_;
    for (size_t h = 0; h < history_.size(); ++h) {
      std::vector<double>& sums = window_sums_[h];
      // Row by row: each slot's additions run in ascending query order.
      std::fill(sums.begin(), sums.begin() + prefix, 0.0);
      for (size_t j = queries.rows - window_; j < queries.rows; ++j) {
        const float* row = queries.Row(h, j).data();
        for (size_t slot = 0; slot < prefix; ++slot) {
          sums[slot] += static_cast<double>(row[slot]);
        }
      }
      if (window_mean_) {
        for (size_t slot = 0; slot < prefix; ++slot) {
          sums[slot] /= static_cast<double>(window_);
        }
      }
      Pool(sums, prefix, pooled_[h]);
      for (size_t slot = prefix; slot < kept_count; ++slot) {
        sums[slot] = std::numeric_limits<double>::infinity();
        pooled_[h][slot] = std::numeric_limits<double>::infinity();
      }
    }
  }

  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    const std::optional<size_t> budget = budget_.At(prefill_step(), kept_count);
    if (!budget.has_value()) return {};
    // snapkv.md#at-prefill: `outside`, the window neither counts nor is a
    // candidate.
    const bool outside = prefill_step() && window_outside_;
    const size_t counted = outside ? kept_count - window_ : kept_count;
    // blocks.md#how-many-blocks-go (window_budget is 0 with blocks).
    const size_t excess = blocks().whole()
                              ? blocks().ToEvict(counted, *budget)
                              : Excess(counted, *budget);
    if (excess == 0) return {};
    candidate_end_ = CandidateEnd();
    if (!prefill_step()) {
      for (size_t h = 0; h < history_.size(); ++h) PoolHead(h);
    }
    if (blocks().whole()) {
      // blocks.md#ranking-blocks: `excess` counts blocks.
      return blocks().LowestRanked(absl::MakeConstSpan(Scores()),
                                   candidate_end_, excess);
    }
    return LowestRanked(absl::MakeConstSpan(Scores()), kept(), candidate_end_,
                        excess);
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
    if (!prefill_step()) {
      for (size_t h = 0; h < history_.size(); ++h) PoolHead(h);
    }
    scores = Scores();
    candidate_end = CandidateEnd();
    return true;
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    scores = pooled_.size() == 1 ? pooled_[0] : combined_;
    candidate_end = candidate_end_;
    return true;
  }

 private:
  // Candidates: the slots before the recent window, and at a prefill step
  // with the window `outside`, before the window too.
  size_t CandidateEnd() const {
    const size_t kept_count = kept().size();
    size_t end = kept_count - recent_window_;
    if (prefill_step() && window_outside_) {
      end = std::min(end, kept_count - window_);
    }
    return end;
  }

  // snapkv.md#pooling: pooled[i] over slots [0, count) of `sums`: the max
  // over [i - r, i + r] clamped to [0, count - 1], or (avg) the sum of the
  // slots present in that range, ascending, divided by pool_kernel.
  void Pool(const std::vector<double>& sums, size_t count,
            std::vector<double>& pooled) const {
    for (size_t slot = 0; slot < count; ++slot) {
      const size_t low = slot >= radius_ ? slot - radius_ : 0;
      const size_t high = std::min(count - 1, slot + radius_);
      if (avg_pooling_) {
        double sum = 0.0;
        for (size_t j = low; j <= high; ++j) sum += sums[j];
        pooled[slot] = sum / static_cast<double>(pool_kernel_);
      } else {
        double best = sums[low];
        for (size_t j = low + 1; j <= high; ++j) best = std::max(best, sums[j]);
        pooled[slot] = best;
      }
    }
  }

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
    // snapkv.md#pooling: every kept slot is a neighbour, protected or not.
    Pool(sums, kept_count, pooled);
  }

  // The scores ranked by: one head's pooled scores as they are, or the
  // heads' combination (heads.md#combining-heads-at-ranking-time): each
  // head pools its own sums first.
  const std::vector<double>& Scores() {
    if (pooled_.size() == 1) return pooled_[0];
    Combine(aggregation_, absl::MakeConstSpan(pooled_), combined_);
    return combined_;
  }

  const StepBudgetRule budget_;
  const size_t recent_window_;
  const size_t obs_window_;
  const size_t pool_kernel_;
  const size_t radius_;  // (pool_kernel - 1) / 2
  const Aggregation aggregation_;
  const bool window_mean_;
  const bool avg_pooling_;
  const bool window_outside_;
  // At the latest prefill step: the observation window's length w.
  size_t window_ = 0;
  // The candidates of the latest eviction (for RankingScores).
  size_t candidate_end_ = 0;
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

// pyramidkv.md#parameters: the mode's three rules, in the card's order.
absl::Status CheckPyramidRules(const ParameterValues& values) {
  const int64_t pyramid = values.Get("pyramid");
  const int64_t ratio_ppm = values.Get("ratio_ppm");
  if (values.Get("layer") >= values.Get("layers")) {
    return Refuse(ErrorCategory::kInvalidParameter, {"rule", {"layer", "layers"}},
                  absl::StrFormat("snapkv: layer must be below layers, got "
                                  "layer %d, layers %d",
                                  values.Get("layer"), values.Get("layers")));
  }
  if ((pyramid == 1 && ratio_ppm == 0) || (pyramid == 2 && ratio_ppm != 0)) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"pyramid", "ratio_ppm"}},
                  absl::StrFormat("snapkv: pyramid 1 (kvpress) needs ratio_ppm "
                                  "above 0 and pyramid 2 (KVCache-Factory) "
                                  "ratio_ppm 0, got pyramid %d, ratio_ppm %d",
                                  pyramid, ratio_ppm));
  }
  const int64_t window_budget = values.Get("window_budget");
  if ((pyramid == 1 && window_budget != 0) || (pyramid == 2 && window_budget != 1)) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"pyramid", "window_budget"}},
                  absl::StrFormat("snapkv: pyramid 1 (kvpress) needs window_budget "
                                  "0 and pyramid 2 (KVCache-Factory) "
                                  "window_budget 1, got pyramid %d, "
                                  "window_budget %d",
                                  pyramid, window_budget));
  }
  if (pyramid != 0 && values.Get("recent_window") != 0) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"pyramid", "recent_window"}},
                  absl::StrFormat("snapkv: pyramid %d needs recent_window 0, got "
                                  "recent_window %d",
                                  pyramid, values.Get("recent_window")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Policy>> MakeSnapKv(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  const int64_t obs_window = values.Get("obs_window");
  const int64_t pool_kernel = values.Get("pool_kernel");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("snapkv", budget, recent_window));
  // snapkv.md#parameters: an even kernel has no centre.
  if (pool_kernel % 2 == 0) {
    return Refuse(ErrorCategory::kInvalidParameter, {"rule", {"pool_kernel"}},
                  absl::StrFormat("snapkv: pool_kernel must be odd, got %d",
                                  pool_kernel));
  }
  KVSPEC_RETURN_IF_ERROR(CheckPrefillRules("snapkv", values, true, true));
  KVSPEC_RETURN_IF_ERROR(CheckPyramidRules(values));
  SnapKvPolicy::Options options;
  options.budget = StepBudgetRule::Of(values);
  options.recent_window = static_cast<size_t>(recent_window);
  options.obs_window = static_cast<size_t>(obs_window);
  options.pool_kernel = static_cast<size_t>(pool_kernel);
  options.aggregation = static_cast<Aggregation>(values.Get("aggregation"));
  options.window_mean = values.Get("window_reduce") == 1;
  options.avg_pooling = values.Get("pooling") == 1;
  options.window_outside = values.Get("window_budget") == 1;
  KVSPEC_RETURN_IF_ERROR(CheckTriggerRules("snapkv", values));
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("snapkv", values));
  std::unique_ptr<Policy> policy(new SnapKvPolicy(options, heads));
  policy->SetTrigger(TriggerOf(values));
  policy->SetBlocks(BlocksOf(values));
  return policy;
}

}  // namespace

const PolicyEntry& SnapKvEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"snapkv",
       "evicts the lowest max-pooled sum of the last obs_window weights "
       "outside the recent window",
       "spec/policies/snapkv.md",
       WithBlockParameters(WithTriggerParameters({BudgetParameter(),
        RecentWindowParameter(),
        {"obs_window", 16, 1, 65536,
         "recorded steps each slot's ring remembers"},
        {"pool_kernel", 5, 1, 65535,
         "width of the max-pool over adjacent kept slots; odd; 1 disables "
         "pooling"},
        GranularityParameter(),
        AggregationParameter(),
        AdaptiveParameter(),
        SafeguardParameter(),
        PrefillOnlyParameter(),
        RatioParameter(),
        {"window_reduce", 0, 0, 1,
         "at a prefill step, the window rows: 0 sum, 1 mean"},
        {"pooling", 0, 0, 1,
         "0 max, 1 avg (zero padding, divided by pool_kernel)"},
        {"window_budget", 0, 0, 1,
         "at a prefill step: 0 inside (the window ranks above all and "
         "counts), 1 outside (kept besides budget others)"},
        PyramidParameters()[0], PyramidParameters()[1],
        PyramidParameters()[2], PyramidParameters()[3]}), true)},
      &MakeSnapKv};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
