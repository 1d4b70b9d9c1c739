#include "tools/census/mutants.h"

#include <algorithm>
#include <numeric>

#include "cc/policies/ranking.h"
#include "cc/rng.h"

namespace kvspec {
namespace audit {
namespace {

using policies::Excess;
using policies::LowestRanked;

}  // namespace

int64_t EffectiveParameter(const PolicyConfig& config, const std::string& name,
                           int64_t fallback) {
  for (const Parameter& p : config.parameters) {
    if (p.name == name) return p.value;
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name != config.name) continue;
    for (const ParameterInfo& p : info.parameters) {
      if (p.name == name && p.default_value) return *p.default_value;
    }
  }
  return fallback;
}

namespace {

int64_t Get(const PolicyConfig& config, const std::string& name,
            int64_t fallback) {
  return EffectiveParameter(config, name, fallback);
}

// h2o with binary32 sums.
class Binary32H2o final : public Policy {
 public:
  Binary32H2o(size_t budget, size_t recent) : budget_(budget), recent_(recent) {}
  absl::string_view name() const override { return "h2o"; }

 protected:
  void Record(absl::Span<const float> attention) override {
    for (size_t i = 0; i < attention.size(); ++i) sums_[i] += attention[i];
  }
  void Admit(Position) override { sums_.push_back(0.0f); }
  std::vector<size_t> ChooseVictims() override {
    const size_t excess = Excess(kept().size(), budget_);
    if (excess == 0) return {};
    return LowestRanked(absl::MakeConstSpan(sums_), kept(),
                        kept().size() - recent_, excess);
  }
  void Forget(absl::Span<const size_t> slots) override { EraseSlots(sums_, slots); }
  size_t PolicyStateBytes() const override { return 0; }

 private:
  size_t budget_, recent_;
  std::vector<float> sums_;
};

// snapkv with one mutation of its sums or its pooling.
class MutantSnapKv final : public Policy {
 public:
  MutantSnapKv(size_t budget, size_t recent, size_t obs, size_t pool,
               Mutation mutation)
      : budget_(budget), recent_(recent), obs_(obs), radius_((pool - 1) / 2),
        mutation_(mutation) {}
  absl::string_view name() const override { return "snapkv"; }

 protected:
  void Record(absl::Span<const float> attention) override {
    for (size_t i = 0; i < attention.size(); ++i) {
      rings_[i][cursor_] = attention[i];
    }
    cursor_ = (cursor_ + 1) % obs_;
  }
  void Admit(Position) override { rings_.emplace_back(obs_, 0.0f); }
  std::vector<size_t> ChooseVictims() override {
    const size_t n = kept().size();
    const size_t excess = Excess(n, budget_);
    if (excess == 0) return {};
    std::vector<double> sums(n);
    for (size_t s = 0; s < n; ++s) {
      if (mutation_ == Mutation::kBinary32Sums) {
        float sum = 0.0f;
        for (size_t i = 0; i < obs_; ++i) sum += rings_[s][i];
        sums[s] = sum;
      } else if (mutation_ == Mutation::kChronologicalRingSum) {
        double sum = 0.0;  // oldest first: from the cursor round
        for (size_t i = 0; i < obs_; ++i) sum += rings_[s][(cursor_ + i) % obs_];
        sums[s] = sum;
      } else {
        double sum = 0.0;
        for (size_t i = 0; i < obs_; ++i) sum += rings_[s][i];
        sums[s] = sum;
      }
    }
    const size_t candidates = n - recent_;
    const size_t pool_n =
        mutation_ == Mutation::kCandidatesOnlyPooling ? candidates : n;
    std::vector<double> pooled(n);
    for (size_t s = 0; s < n; ++s) {
      double best = sums[s];
      for (size_t d = 1; d <= radius_; ++d) {
        if (mutation_ == Mutation::kWrappedPooling) {
          best = std::max(best, sums[(s + d) % n]);
          best = std::max(best, sums[(s + n - d % n) % n]);
        } else {
          if (s + d < pool_n && s < pool_n) best = std::max(best, sums[s + d]);
          if (s >= d && s < pool_n) best = std::max(best, sums[s - d]);
        }
      }
      pooled[s] = best;
    }
    return LowestRanked(absl::MakeConstSpan(pooled), kept(), candidates, excess);
  }
  void Forget(absl::Span<const size_t> slots) override { EraseSlots(rings_, slots); }
  size_t PolicyStateBytes() const override { return 0; }

 private:
  size_t budget_, recent_, obs_, radius_;
  Mutation mutation_;
  size_t cursor_ = 0;
  std::vector<std::vector<float>> rings_;
};

// random drawing from the remaining candidates listed in descending order.
class DescendingRandom final : public Policy {
 public:
  DescendingRandom(size_t budget, size_t recent, uint64_t seed)
      : budget_(budget), recent_(recent), rng_(seed) {}
  absl::string_view name() const override { return "random"; }

 protected:
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}
  std::vector<size_t> ChooseVictims() override {
    const size_t excess = Excess(kept().size(), budget_);
    if (excess == 0) return {};
    std::vector<size_t> remaining(kept().size() - recent_);
    std::iota(remaining.rbegin(), remaining.rend(), size_t{0});
    std::vector<size_t> victims;
    for (size_t d = 0; d < excess; ++d) {
      const size_t i = static_cast<size_t>(rng_.Uniform(remaining.size()));
      victims.push_back(remaining[i]);
      remaining.erase(remaining.begin() + static_cast<std::ptrdiff_t>(i));
    }
    std::sort(victims.begin(), victims.end());
    return victims;
  }
  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }

 private:
  size_t budget_, recent_;
  Rng rng_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Policy>> MakeMutant(const PolicyConfig& config,
                                                   Mutation mutation) {
  // The registry checks the configuration exactly as for the real policy.
  absl::StatusOr<std::unique_ptr<Policy>> real = MakePolicy(config);
  if (!real.ok()) return real.status();
  const size_t budget = static_cast<size_t>(Get(config, "budget", 0));
  const size_t recent = static_cast<size_t>(Get(config, "recent_window", 0));
  if (config.name == "h2o" && mutation == Mutation::kBinary32Sums) {
    return std::unique_ptr<Policy>(new Binary32H2o(budget, recent));
  }
  if (config.name == "snapkv" && mutation != Mutation::kDescendingDraws) {
    return std::unique_ptr<Policy>(new MutantSnapKv(
        budget, recent, static_cast<size_t>(Get(config, "obs_window", 0)),
        static_cast<size_t>(Get(config, "pool_kernel", 1)), mutation));
  }
  if (config.name == "random" && mutation == Mutation::kDescendingDraws) {
    return std::unique_ptr<Policy>(new DescendingRandom(budget, recent, config.seed));
  }
  return absl::InvalidArgumentError("this mutation does not apply to " +
                                    config.name);
}

}  // namespace audit
}  // namespace kvspec
