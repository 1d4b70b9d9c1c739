// full: keeps every position; never evicts. The ceiling every other policy is
// measured against.
//
// Spec: spec/policies/full.md
#include <memory>

#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"

namespace kvspec {
namespace policies {
namespace {

class FullPolicy final : public Policy {
 public:
  explicit FullPolicy(size_t heads) : Policy(heads) {}
  absl::string_view name() const override { return "full"; }

 protected:
  // full.md#how-it-works: attention is accepted (and validated) but unused.
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}
  std::vector<size_t> ChooseVictims() override { return {}; }
  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }
};

absl::StatusOr<std::unique_ptr<Policy>> MakeFull(const ParameterValues& values,
                                                 Rng, size_t heads) {
  KVSPEC_RETURN_IF_ERROR(CheckSpanRules("full", values.Get("span_window"),
                                        values.Get("span_chunk"), 0, 0, 0));
  auto policy = std::make_unique<FullPolicy>(heads);
  policy->SetSpanRule(SpanRuleOf(values, /*evicts=*/false));
  return std::unique_ptr<Policy>(std::move(policy));
}

}  // namespace

const PolicyEntry& FullEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"full", "keeps every position; never evicts", "spec/policies/full.md",
       SpanParameters(false)},
      &MakeFull};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
