// openvino: OpenVINO GenAI 2026.3.0.0's cache eviction
// (CacheEvictionAlgorithm). Each step's scores, its heads summed, are
// registered after its admissions: max-pooled forward over `max_pool` slots
// and added to every tracked slot's binary64 sum, with a count of the steps
// the slot has been seen (NORM_SUM). Only a decode step evicts: whole closed
// blocks past the start area and before the recent area, the lowest by the
// sum of their slots' sums (divided by their counts with `norm_sum` 1),
// equal scores evicting the older block.
//
// Spec: spec/policies/openvino.md
#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/policies/blocks.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"

namespace kvspec {
namespace policies {
namespace {

struct OpenVinoParameters {
  size_t budget = 0;
  size_t sinks = 0;
  size_t recent_window = 0;
  size_t block = 1;
  bool norm_sum = true;
  size_t max_pool = 1;
  uint64_t obs_window = 0;
};

class OpenVinoPolicy final : public Policy {
 public:
  OpenVinoPolicy(const OpenVinoParameters& p, size_t heads)
      : Policy(heads), p_(p) {}
  absl::string_view name() const override { return "openvino"; }

 protected:
  // openvino.md#the-scores-of-a-step, decode step: the heads' rows summed
  // per slot, head 0 first, from +0.0. Registered after the admissions (in
  // ChooseVictims), with +0.0 for the admitted slots.
  void Record(absl::Span<const float> attention) override {
    const size_t kept_count = kept().size();
    std::vector<double> x(kept_count, 0.0);
    for (size_t h = 0; h < heads(); ++h) {
      const float* row = attention.data() + h * kept_count;
      for (size_t slot = 0; slot < kept_count; ++slot) {
        x[slot] += static_cast<double>(row[slot]);
      }
    }
    decode_scores_ = std::move(x);
  }

  void Admit(Position) override {}

  // openvino.md#the-scores-of-a-step, prefill step: per head the rows that
  // cover a slot summed in ascending query order (or the head's column
  // total), then the heads summed, head 0 first. Registered at once; a
  // prefill step never evicts.
  void RecordQueries(const QueryRows& queries) override {
    const size_t kept_count = kept().size();
    std::vector<double> x(kept_count, 0.0);
    std::vector<double> head_sum(kept_count);
    for (size_t h = 0; h < heads(); ++h) {
      if (queries.has_totals()) {
        const absl::Span<const double> totals = queries.Totals(h);
        std::copy(totals.begin(), totals.end(), head_sum.begin());
      } else {
        std::fill(head_sum.begin(), head_sum.end(), 0.0);
        for (size_t j = 0; j < queries.rows; ++j) {
          const absl::Span<const float> row = queries.Row(h, j);
          for (size_t slot = 0; slot < row.size(); ++slot) {
            head_sum[slot] += static_cast<double>(row[slot]);
          }
        }
      }
      for (size_t slot = 0; slot < kept_count; ++slot) x[slot] += head_sum[slot];
    }
    Register(x, queries.has_totals() ? queries.total_rows : queries.rows);
  }

  // openvino.md#how-it-works: a decode step registers its scores, then
  // evicts; a prefill step (registered in RecordQueries) and a step with
  // null attention evict nothing.
  std::vector<size_t> ChooseVictims() override {
    ranked_ = false;
    if (!decode_scores_.has_value()) return {};
    std::vector<double> x = std::move(*decode_scores_);
    decode_scores_.reset();
    x.resize(kept().size(), 0.0);  // the admitted slots: +0.0
    Register(x, 1);
    return Evict();
  }

  void Forget(absl::Span<const size_t> slots) override {
    // Victims are never in the start area, and every kept slot past it is
    // tracked at a decode step (it registered before evicting).
    std::vector<size_t> tracked;
    tracked.reserve(slots.size());
    for (size_t slot : slots) tracked.push_back(slot - p_.sinks);
    EraseSlots(acc_, tracked);
    EraseSlots(count_, tracked);
  }

  size_t PolicyStateBytes() const override {
    return acc_.size() * (sizeof(double) + sizeof(uint64_t));
  }

  bool RankingScores(std::vector<double>& scores,
                     size_t& candidate_end) const override {
    if (!ranked_) return false;
    scores = SlotScores();
    candidate_end = CandidateEnd();
    return true;
  }

  bool CurrentScores(std::vector<double>& scores,
                     size_t& candidate_end) override {
    if (acc_.size() + p_.sinks != kept().size()) return false;
    scores = SlotScores();
    candidate_end = CandidateEnd();
    return true;
  }

  size_t CandidateBegin() const override { return p_.sinks; }

 private:
  // openvino.md#registering, 1 to 5.
  void Register(const std::vector<double>& x, uint64_t k) {
    const size_t n = x.size();
    const size_t s = p_.sinks;
    const uint64_t w = p_.obs_window;
    // 1. The window count, saturating at obs_window.
    if (w > 0 && seen_ < w) seen_ = std::min<uint64_t>(w, seen_ + k);
    // 2. Nothing is tracked while the kept slots are all in the start area.
    if (n <= s) return;
    // 3. The forward max pool over `max_pool` slots, cut at the last slot.
    const size_t m = n - s;
    std::vector<double> u(m);
    for (size_t j = 0; j < m; ++j) {
      const size_t end = std::min(j + p_.max_pool, m);
      double best = x[s + j];
      for (size_t i = j + 1; i < end; ++i) best = std::max(best, x[s + i]);
      u[j] = best;
    }
    // 4. The first registration.
    if (acc_.empty()) {
      acc_ = u;
      count_.resize(m);
      for (size_t j = 0; j < m; ++j) {
        count_[j] = w == 0 ? m - j : std::min<uint64_t>(k, m - j);
      }
      return;
    }
    // 5. A later registration: the d newest slots join at +0.0.
    const size_t d = m - acc_.size();
    acc_.resize(m, 0.0);
    for (size_t j = 0; j < m; ++j) acc_[j] += u[j];
    if (w == 0 || seen_ == w) {
      for (size_t j = 0; j < m - d; ++j) count_[j] += d;
      count_.resize(m);
      for (size_t i = 0; i < d; ++i) count_[m - d + i] = d - i;
    } else {
      count_.resize(m);
      for (size_t j = 0; j < m; ++j) count_[j] = std::min<uint64_t>(seen_, m - j);
    }
  }

  // openvino.md#evicting: the victims' slots, ascending.
  std::vector<size_t> Evict() {
    const size_t n = kept().size();
    const size_t b = p_.block;
    if (n < p_.budget + b) return {};
    const size_t count = n / b - p_.budget / b;
    ranked_ = true;
    const std::vector<double> scores = SlotScores();
    // Candidate blocks S/B .. floor(n/B) - R/B - 1, as closed blocks of the
    // kept slots; ranked by (block score, first position).
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t block = p_.sinks / b; block < CandidateEnd() / b; ++block) {
      ranked.push_back({blocks().ScoreOf(absl::MakeConstSpan(scores), block), block});
    }
    std::sort(ranked.begin(), ranked.end());
    std::vector<size_t> victims;
    for (size_t i = 0; i < count; ++i) victims.push_back(ranked[i].second);
    std::sort(victims.begin(), victims.end());
    return blocks().SlotsOf(victims);
  }

  // The end of the candidate slots: floor(n / B) - R / B closed blocks.
  size_t CandidateEnd() const {
    const size_t b = p_.block;
    return (kept().size() / b - p_.recent_window / b) * b;
  }

  // Every kept slot's score: +0.0 in the start area (never read), then each
  // tracked slot's acc, divided by its count with norm_sum 1.
  std::vector<double> SlotScores() const {
    std::vector<double> scores(p_.sinks, 0.0);
    for (size_t j = 0; j < acc_.size(); ++j) {
      scores.push_back(p_.norm_sum ? acc_[j] / static_cast<double>(count_[j])
                                   : acc_[j]);
    }
    return scores;
  }

  const OpenVinoParameters p_;
  // Per tracked slot (kept slot sinks + j): the sum and the count.
  std::vector<double> acc_;
  std::vector<uint64_t> count_;
  // Query rows registered towards obs_window, at most obs_window.
  uint64_t seen_ = 0;
  // This step's decode scores, until they are registered after admission.
  std::optional<std::vector<double>> decode_scores_;
  // Whether this step's ChooseVictims ranked blocks (for the cut).
  bool ranked_ = false;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeOpenVino(
    const ParameterValues& values, Rng, size_t heads) {
  OpenVinoParameters p;
  p.budget = static_cast<size_t>(values.Get("budget"));
  p.sinks = static_cast<size_t>(values.Get("sinks"));
  p.recent_window = static_cast<size_t>(values.Get("recent_window"));
  p.block = static_cast<size_t>(values.Get("block"));
  p.norm_sum = values.Get("norm_sum") == 1;
  p.max_pool = static_cast<size_t>(values.Get("max_pool"));
  p.obs_window = static_cast<uint64_t>(values.Get("obs_window"));
  // openvino.md#parameters, rule 1 (in 64 bits: both are below 2^32).
  if (values.Get("sinks") + values.Get("recent_window") >= values.Get("budget")) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"sinks", "recent_window", "budget"}},
                  absl::StrFormat("openvino: sinks + recent_window must be "
                                  "below budget, got sinks %d, recent_window "
                                  "%d, budget %d",
                                  values.Get("sinks"), values.Get("recent_window"),
                                  values.Get("budget")));
  }
  // Rule 2: blocks.md#rules, 1.
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("openvino", values));
  std::unique_ptr<Policy> policy(new OpenVinoPolicy(p, heads));
  policy->SetBlocks(BlocksOf(values));
  return policy;
}

}  // namespace

const PolicyEntry& OpenVinoEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"openvino",
       "OpenVINO GenAI's block eviction: the lowest accumulated (NORM_SUM) "
       "block scores between the start and recent areas",
       "spec/policies/openvino.md",
       {{"budget", 672, 1, kMaxBudget,
         "max_cache_size: the kept count in closed blocks after an eviction"},
        {"sinks", 32, 0, kMaxBudget - 1,
         "start_size: the first kept slots, never scored or evicted"},
        {"recent_window", 128, 0, kMaxBudget - 1,
         "recent_size: the last recent_window / block closed blocks, never "
         "evicted"},
        {"block", 32, 1, 65536, "positions per block"},
        {"norm_sum", 1, 0, 1,
         "0 SUM: a token scores its sum; 1 NORM_SUM: its sum divided by its "
         "count"},
        {"max_pool", 7, 1, 65536,
         "the forward max pool's width in slots, before accumulation"},
        {"obs_window", 8, 0, kMaxBudget,
         "snapkv_window_size: the query rows that seed the counts; 0 counts "
         "every query"}}},
      &MakeOpenVino};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
