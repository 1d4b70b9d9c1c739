// streamingllm: StreamingLLM's cache (Xiao et al., 2023). The first `sinks`
// positions ever admitted are kept for good (attention sinks); the rest of the
// budget, W = budget - sinks, is a rolling window of the latest positions.
// Eviction is purely positional: every kept position that is neither a sink
// nor among the latest W goes, whatever the attention. No ties can arise.
// A budget from a ratio (spec/prefill.md) can fall to the sinks or below;
// then the lowest sinks go too (streamingllm.md#at-prefill).
//
// Chunked admission (streamingllm.md#chunked-admission) needs no special case
// here: a step admits its whole chunk first and then evicts, so a chunk that
// crosses capacity, or one longer than the window, or one that still holds
// sink positions, all fall out of the same rule.
//
// Spec: spec/policies/streamingllm.md
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/policies/blocks.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/prefill.h"
#include "cc/policies/ranking.h"
#include "cc/policies/triggers.h"
#include "cc/spans.h"

namespace kvspec {
namespace policies {
namespace {

class StreamingLlmPolicy final : public Policy {
 public:
  StreamingLlmPolicy(StepBudgetRule budget, size_t budget_value,
                     size_t sinks, int64_t evict_at, bool context_shift,
                     int64_t discard, size_t heads)
      : Policy(heads),
        budget_(budget),
        budget_value_(budget_value),
        sinks_(sinks),
        evict_at_(evict_at),
        context_shift_(context_shift),
        discard_(discard) {}
  absl::string_view name() const override { return "streamingllm"; }

 protected:
  void Record(absl::Span<const float>) override {}

  // Sinks are the first `sinks_` positions ever admitted; kept order is
  // ascending, so the sinks still kept are slots 0 .. sinks_kept_ - 1.
  void Admit(Position) override {
    if (admitted_ < sinks_) ++sinks_kept_;
    ++admitted_;
  }

  // streamingllm.md#how-it-works and #at-prefill: the n - B victims are the
  // kept positions taken non-sinks first, then sinks, each by ascending
  // position. With B > sinks (always so for `budget`) only non-sinks go:
  // everything between the sinks and the latest B - sinks.
  std::vector<size_t> ChooseVictims() override {
    std::vector<size_t> victims;
    // Room was made before admission.
    if (evict_at_ != 0 || context_shift_) return victims;
    const size_t kept_count = kept().size();
    const std::optional<size_t> budget = budget_.At(prefill_step(), kept_count);
    if (!budget.has_value()) return victims;
    if (blocks().whole()) {
      // blocks.md#ranking-blocks: the oldest closed blocks after the sinks'
      // (sinks are a multiple of the block and below budget, so enough).
      return blocks().Oldest(sinks_kept_, kept_count,
                             blocks().ToEvict(kept_count, *budget));
    }
    const size_t excess = Excess(kept_count, *budget);
    if (excess == 0) return victims;
    const size_t non_sinks = kept_count - sinks_kept_;
    const size_t from_sinks = excess > non_sinks ? excess - non_sinks : 0;
    for (size_t slot = 0; slot < from_sinks; ++slot) victims.push_back(slot);
    for (size_t slot = sinks_kept_; slot < sinks_kept_ + excess - from_sinks;
         ++slot) {
      victims.push_back(slot);
    }
    return victims;
  }

  // spans.md#when-room-is-made: non-sinks by ascending position, never a
  // sink, until the kept count is at most budget - count (evict_at 1; every
  // non-sink if the chunk is longer) or budget - 1 (evict_at 2).
  //
  // spans.md#context-shift: when the step does not fit, the oldest d of
  // the kept non-sinks (llama.cpp's seq_rm(n_keep, n_keep + n_discard)).
  std::vector<size_t> ChooseVictimsBeforeAdmission(uint32_t count) override {
    std::vector<size_t> victims;
    if (context_shift_) {
      if (kept().size() + count <= budget_value_) return victims;
      const size_t d =
          ContextShiftDiscard(kept().size() - sinks_kept_, discard_);
      for (size_t slot = sinks_kept_; slot < sinks_kept_ + d; ++slot) {
        victims.push_back(slot);
      }
      return victims;
    }
    if (evict_at_ == 0) return victims;
    const size_t room =
        evict_at_ == 1 ? (count < budget_value_ ? budget_value_ - count : 0)
                       : budget_value_ - 1;
    const size_t kept_count = kept().size();
    if (kept_count <= room) return victims;
    const size_t non_sinks = kept_count - sinks_kept_;
    const size_t excess = std::min(kept_count - room, non_sinks);
    for (size_t slot = sinks_kept_; slot < sinks_kept_ + excess; ++slot) {
      victims.push_back(slot);
    }
    return victims;
  }

  void Forget(absl::Span<const size_t> slots) override {
    size_t sinks_evicted = 0;
    for (size_t slot : slots) sinks_evicted += slot < sinks_kept_ ? 1 : 0;
    sinks_kept_ -= sinks_evicted;
  }
  size_t PolicyStateBytes() const override { return 0; }

 private:
  const StepBudgetRule budget_;
  const size_t budget_value_;
  const size_t sinks_;
  const int64_t evict_at_;
  const bool context_shift_;
  const int64_t discard_;
  // Positions admitted so far, and how many of the sinks are still kept.
  uint64_t admitted_ = 0;
  size_t sinks_kept_ = 0;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeStreamingLlm(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t sinks = values.Get("sinks");
  // streamingllm.md#parameters: the rolling window holds at least one
  // position, or a newly admitted position could never be kept.
  if (sinks >= budget) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"sinks", "budget"}},
                  absl::StrFormat("streamingllm: sinks must be below budget "
                                  "(the rolling window budget - sinks must "
                                  "hold at least one position), got sinks "
                                  "%d, budget %d",
                                  sinks, budget));
  }
  KVSPEC_RETURN_IF_ERROR(
      CheckPrefillRules("streamingllm", values, false, false));
  KVSPEC_RETURN_IF_ERROR(CheckSpanRules(
      "streamingllm", values.Get("span_window"), values.Get("span_chunk"),
      values.Get("evict_at"), values.Get("prefill_only"),
      values.Get("ratio_ppm")));
  KVSPEC_RETURN_IF_ERROR(CheckContextShiftRules(
      "streamingllm", values.Get("context_shift"), values.Get("discard"),
      values.Get("evict_at"), values.Get("prefill_only"),
      values.Get("ratio_ppm"), budget, sinks));
  KVSPEC_RETURN_IF_ERROR(CheckTriggerRules("streamingllm", values));
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("streamingllm", values));
  auto policy = std::make_unique<StreamingLlmPolicy>(
      StepBudgetRule::Of(values), static_cast<size_t>(budget),
      static_cast<size_t>(sinks), values.Get("evict_at"),
      values.Get("context_shift") == 1, values.Get("discard"), heads);
  policy->SetSpanRule(SpanRuleOf(values), static_cast<size_t>(sinks));
  policy->SetTrigger(TriggerOf(values));
  policy->SetBlocks(BlocksOf(values));
  return std::unique_ptr<Policy>(std::move(policy));
}

}  // namespace

const PolicyEntry& StreamingLlmEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"streamingllm",
       "keeps the first `sinks` positions and the latest budget - sinks",
       "spec/policies/streamingllm.md",
       [] {
         std::vector<ParameterInfo> parameters = {
             BudgetParameter(),
             {"sinks", 4, 0, kMaxBudget - 1,
              "attention-sink positions kept for good: the first `sinks` "
              "admitted"},
             PrefillOnlyParameter(), RatioParameter()};
         // spans.md#parameters, after the card's own.
         for (ParameterInfo& p : SpanParameters(true)) parameters.push_back(p);
         // triggers.md#parameters, last.
         return WithBlockParameters(WithTriggerParameters(parameters), false);
       }()},
      &MakeStreamingLlm};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
