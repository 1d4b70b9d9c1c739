// random: the seeded random baseline. When a step must evict k positions, k
// candidates outside the recent window are drawn uniformly, without
// replacement, from the policy's Rng, in the order random.md fixes, so any
// port reproduces every draw. The one policy that uses its Rng.
//
// Spec: spec/policies/random.md
#include <algorithm>
#include <memory>
#include <numeric>

#include "cc/errors.h"
#include "cc/policies/blocks.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"
#include "cc/policies/ranking.h"
#include "cc/policies/triggers.h"

namespace kvspec {
namespace policies {
namespace {

class RandomPolicy final : public Policy {
 public:
  RandomPolicy(size_t budget, size_t recent_window, Rng rng, size_t heads)
      : Policy(heads),
        budget_(budget), recent_window_(recent_window), rng_(rng) {}
  absl::string_view name() const override { return "random"; }

 protected:
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}

  // random.md#draws: the d-th draw (d = 0, 1, ...) is Uniform(m - d) over the
  // m - d candidates not drawn yet, listed in ascending position order; the
  // candidate at that index is a victim and leaves the list.
  std::vector<size_t> ChooseVictims() override {
    const size_t kept_count = kept().size();
    if (blocks().whole()) return ChooseBlocks(kept_count);
    const size_t excess = Excess(kept_count, budget_);
    if (excess == 0) return {};
    std::vector<size_t> remaining(kept_count - recent_window_);
    std::iota(remaining.begin(), remaining.end(), size_t{0});
    std::vector<size_t> victims;
    for (size_t d = 0; d < excess; ++d) {
      const size_t index = static_cast<size_t>(rng_.Uniform(remaining.size()));
      victims.push_back(remaining[index]);
      remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(index));
    }
    std::sort(victims.begin(), victims.end());
    return victims;
  }

  void Forget(absl::Span<const size_t>) override {}

  // blocks.md#ranking-blocks: the same draws over the candidate blocks
  // (the closed blocks before the recent window), ascending.
  std::vector<size_t> ChooseBlocks(size_t kept_count) {
    const size_t excess = blocks().ToEvict(kept_count, budget_);
    if (excess == 0) return {};
    const auto [first, end] =
        blocks().CandidateBlocks(0, kept_count - recent_window_);
    std::vector<size_t> remaining(end - first);
    std::iota(remaining.begin(), remaining.end(), first);
    std::vector<size_t> victims;
    for (size_t d = 0; d < excess; ++d) {
      const size_t index = static_cast<size_t>(rng_.Uniform(remaining.size()));
      victims.push_back(remaining[index]);
      remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(index));
    }
    std::sort(victims.begin(), victims.end());
    return blocks().SlotsOf(victims);
  }

  size_t PolicyStateBytes() const override { return sizeof(rng_.state()); }

 private:
  const size_t budget_;
  const size_t recent_window_;
  Rng rng_;
};

absl::StatusOr<std::unique_ptr<Policy>> MakeRandom(
    const ParameterValues& values, Rng rng, size_t heads) {
  const int64_t budget = values.Get("budget");
  const int64_t recent_window = values.Get("recent_window");
  KVSPEC_RETURN_IF_ERROR(CheckRecentWindow("random", budget, recent_window));
  KVSPEC_RETURN_IF_ERROR(CheckTriggerRules("random", values));
  KVSPEC_RETURN_IF_ERROR(CheckBlockRules("random", values));
  std::unique_ptr<Policy> policy(new RandomPolicy(
      static_cast<size_t>(budget), static_cast<size_t>(recent_window), rng,
      heads));
  policy->SetTrigger(TriggerOf(values));
  policy->SetBlocks(BlocksOf(values));
  return policy;
}

}  // namespace

const PolicyEntry& RandomEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"random",
       "evicts uniformly random positions outside the recent window, drawn "
       "from the seeded Rng",
       "spec/policies/random.md",
       WithBlockParameters(WithTriggerParameters({BudgetParameter(), RecentWindowParameter()}), false)},
      &MakeRandom};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
