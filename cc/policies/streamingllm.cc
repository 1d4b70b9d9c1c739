// streamingllm: StreamingLLM's cache (Xiao et al., 2023). The first `sinks`
// positions ever admitted are kept for good (attention sinks); the rest of the
// budget, W = budget - sinks, is a rolling window of the latest positions.
// Eviction is purely positional: every kept position that is neither a sink
// nor among the latest W goes, whatever the attention. No ties can arise.
//
// Chunked admission (streamingllm.md#chunked-admission) needs no special case
// here: a step admits its whole chunk first and then evicts, so a chunk that
// crosses capacity, or one longer than the window, or one that still holds
// sink positions, all fall out of the same rule.
//
// Spec: spec/policies/streamingllm.md
#include <memory>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"

namespace kvspec {
namespace policies {
namespace {

class StreamingLlmPolicy final : public Policy {
 public:
  StreamingLlmPolicy(size_t sinks, size_t window, size_t heads)
      : Policy(heads), sinks_(sinks), window_(window) {}
  absl::string_view name() const override { return "streamingllm"; }

 protected:
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}

  // streamingllm.md#how-it-works. Sinks are never evicted, so once admitted
  // they are slots 0..sinks-1 (kept order is ascending position order).
  // Victims are the slots between the sinks and the latest `window_`.
  std::vector<size_t> ChooseVictims() override {
    std::vector<size_t> victims;
    const size_t kept_count = kept().size();
    if (kept_count <= sinks_ + window_) return victims;
    for (size_t slot = sinks_; slot < kept_count - window_; ++slot) {
      victims.push_back(slot);
    }
    return victims;
  }

  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }

 private:
  const size_t sinks_;
  const size_t window_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeStreamingLlm(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t sinks = values.Get("sinks");
  // streamingllm.md#parameters: the rolling window holds at least one
  // position, or a newly admitted position could never be kept.
  if (sinks >= budget) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  absl::StrFormat("streamingllm: sinks must be below budget "
                                  "(the rolling window budget - sinks must "
                                  "hold at least one position), got sinks "
                                  "%d, budget %d",
                                  sinks, budget));
  }
  return std::unique_ptr<Policy>(new StreamingLlmPolicy(
      static_cast<size_t>(sinks), static_cast<size_t>(budget - sinks),
      heads));
}

}  // namespace

const PolicyEntry& StreamingLlmEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"streamingllm",
       "keeps the first `sinks` positions and the latest budget - sinks",
       "spec/policies/streamingllm.md",
       {BudgetParameter(),
        {"sinks", 4, 0, kMaxBudget - 1,
         "attention-sink positions kept for good: the first `sinks` admitted"}}},
      &MakeStreamingLlm};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
