// window: the naive sliding window. Keeps the latest `budget` positions and
// evicts the oldest; no ties can arise (positions are distinct).
//
// Spec: spec/policies/window.md
#include <memory>
#include <vector>

#include "cc/errors.h"
#include "cc/policies/blocks.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/triggers.h"
#include "cc/spans.h"

namespace kvspec {
namespace policies {
namespace {

class WindowPolicy final : public Policy {
 public:
  WindowPolicy(size_t budget, int64_t evict_at, bool context_shift,
               int64_t discard, size_t heads)
      : Policy(heads),
        budget_(budget),
        evict_at_(evict_at),
        context_shift_(context_shift),
        discard_(discard) {}
  absl::string_view name() const override { return "window"; }

 protected:
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}

  // window.md#how-it-works: the victims are the oldest kept positions, as
  // many as the kept set exceeds the budget.
  std::vector<size_t> ChooseVictims() override {
    std::vector<size_t> victims;
    // Room was made before admission.
    if (evict_at_ != 0 || context_shift_) return victims;
    if (blocks().whole()) {
      // blocks.md#ranking-blocks: the oldest closed blocks.
      return blocks().Oldest(0, kept().size(),
                             blocks().ToEvict(kept().size(), budget_));
    }
    for (size_t slot = 0; slot + budget_ < kept().size(); ++slot) {
      victims.push_back(slot);
    }
    return victims;
  }

  // spans.md#when-room-is-made: the oldest go until the kept count is at
  // most budget - count (evict_at 1, all of them if the chunk is longer) or
  // budget - 1 (evict_at 2).
  //
  // spans.md#context-shift: when the step does not fit, the oldest d of
  // the kept positions (every kept position may go).
  std::vector<size_t> ChooseVictimsBeforeAdmission(uint32_t count) override {
    std::vector<size_t> victims;
    if (context_shift_) {
      if (kept().size() + count <= budget_) return victims;
      const size_t d = ContextShiftDiscard(kept().size(), discard_);
      for (size_t slot = 0; slot < d; ++slot) victims.push_back(slot);
      return victims;
    }
    if (evict_at_ == 0) return victims;
    const size_t room = evict_at_ == 1 ? (count < budget_ ? budget_ - count : 0)
                                       : budget_ - 1;
    for (size_t slot = 0; slot + room < kept().size(); ++slot) {
      victims.push_back(slot);
    }
    return victims;
  }

  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }

 private:
  const size_t budget_;
  const int64_t evict_at_;
  const bool context_shift_;
  const int64_t discard_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeWindow(
    const ParameterValues& values, Rng, size_t heads) {
  KVSPEC_RETURN_IF_ERROR(CheckSpanRules("window", values.Get("span_window"),
                                        values.Get("span_chunk"),
                                        values.Get("evict_at"), 0, 0));
  KVSPEC_RETURN_IF_ERROR(CheckContextShiftRules(
      "window", values.Get("context_shift"), values.Get("discard"),
      values.Get("evict_at"), 0, 0, values.Get("budget"), std::nullopt));
  KVSPEC_RETURN_IF_ERROR(CheckTriggerRules("window", values));
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("window", values));
  auto policy = std::make_unique<WindowPolicy>(
      static_cast<size_t>(values.Get("budget")), values.Get("evict_at"),
      values.Get("context_shift") == 1, values.Get("discard"), heads);
  policy->SetSpanRule(SpanRuleOf(values));
  policy->SetTrigger(TriggerOf(values));
  policy->SetBlocks(BlocksOf(values));
  return std::unique_ptr<Policy>(std::move(policy));
}

}  // namespace

const PolicyEntry& WindowEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"window",
       "keeps the latest `budget` positions; evicts the oldest",
       "spec/policies/window.md",
       [] {
         std::vector<ParameterInfo> parameters = {BudgetParameter()};
         for (ParameterInfo& p : SpanParameters(true)) parameters.push_back(p);
         // triggers.md#parameters, last.
         return WithBlockParameters(WithTriggerParameters(parameters), false);
       }()},
      &MakeWindow};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
