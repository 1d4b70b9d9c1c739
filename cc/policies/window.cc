// window: the naive sliding window. Keeps the latest `budget` positions and
// evicts the oldest; no ties can arise (positions are distinct).
//
// Spec: spec/policies/window.md
#include <memory>

#include "cc/policies/entries.h"
#include "cc/policies/limits.h"

namespace kvspec {
namespace policies {
namespace {

class WindowPolicy final : public Policy {
 public:
  WindowPolicy(size_t budget, size_t heads) : Policy(heads), budget_(budget) {}
  absl::string_view name() const override { return "window"; }

 protected:
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}

  // window.md#how-it-works: the victims are the oldest kept positions, as
  // many as the kept set exceeds the budget.
  std::vector<size_t> ChooseVictims() override {
    std::vector<size_t> victims;
    for (size_t slot = 0; slot + budget_ < kept().size(); ++slot) {
      victims.push_back(slot);
    }
    return victims;
  }

  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }

 private:
  const size_t budget_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeWindow(
    const ParameterValues& values, Rng, size_t heads) {
  return std::unique_ptr<Policy>(
      new WindowPolicy(static_cast<size_t>(values.Get("budget")), heads));
}

}  // namespace

const PolicyEntry& WindowEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"window",
       "keeps the latest `budget` positions; evicts the oldest",
       "spec/policies/window.md",
       {BudgetParameter()}},
      &MakeWindow};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
