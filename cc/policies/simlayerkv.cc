// simlayerkv: SimLayerKV (Zhang et al., 2024) as kvpress 0.5.5's
// SimLayerKVPress runs it. One decision per layer at each prefill step: the
// mean attention of the last n_last queries (over every query head and
// row) on the first n_initial and the last n_recent positions of the
// prefix is summed; above lazy_threshold_ppm / 10^6 the layer is lazy and
// keeps its first n_initial and last n_recent - n_last positions, otherwise
// everything. One kept set covers every head. Decode steps evict nothing.
//
// Spec: spec/policies/simlayerkv.md
#include <algorithm>
#include <memory>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/policies/entries.h"
#include "cc/policies/limits.h"

namespace kvspec {
namespace policies {
namespace {

constexpr int64_t kNeverLazy = 1000000;  // lazy_threshold_ppm of 1.0

class SimLayerKvPolicy final : public Policy {
 public:
  struct Options {
    size_t n_initial = 4;
    size_t n_recent = 1024;
    size_t n_last = 1;
    int64_t threshold_ppm = kNeverLazy;
  };
  SimLayerKvPolicy(const Options& options, size_t heads)
      : Policy(heads), options_(options) {}
  absl::string_view name() const override { return "simlayerkv"; }

 protected:
  // simlayerkv.md#how-it-works: attention rows are checked, not read.
  void Record(absl::Span<const float>) override {}
  void Admit(Position) override {}

  // simlayerkv.md#how-it-works: the layer's score and decision, made when
  // the query rows arrive; ChooseVictims acts on it.
  void RecordQueries(const QueryRows& queries) override {
    lazy_ = false;
    const size_t n = queries.kept;
    if (options_.threshold_ppm == kNeverLazy) return;
    if (n <= options_.n_initial + options_.n_recent + options_.n_last) return;
    const size_t w = std::min(options_.n_last, queries.rows);
    const size_t prefix = n - options_.n_last;
    // a[i]: binary64 sums over heads ascending, then each head's last w
    // rows ascending, divided once by Hq * w.
    std::vector<double> mean(prefix, 0.0);
    for (size_t slot = 0; slot < prefix; ++slot) {
      double s = 0.0;
      for (size_t h = 0; h < heads(); ++h) {
        for (size_t j = queries.rows - w; j < queries.rows; ++j) {
          s += static_cast<double>(queries.Row(h, j)[slot]);
        }
      }
      mean[slot] = s / static_cast<double>(heads() * w);
    }
    double initial = 0.0;
    for (size_t slot = 0; slot < options_.n_initial; ++slot) {
      initial += mean[slot];
    }
    double recent = 0.0;
    for (size_t slot = prefix - options_.n_recent; slot < prefix; ++slot) {
      recent += mean[slot];
    }
    const double score = initial + recent;
    const double threshold =
        static_cast<double>(options_.threshold_ppm) / 1000000.0;
    lazy_ = score > threshold;
  }

  // A lazy layer's victims: slots n_initial .. n - (n_recent - n_last) - 1.
  std::vector<size_t> ChooseVictims() override {
    std::vector<size_t> victims;
    if (!prefill_step() || !lazy_) return victims;
    const size_t n = kept().size();
    const size_t end = n - (options_.n_recent - options_.n_last);
    for (size_t slot = options_.n_initial; slot < end; ++slot) {
      victims.push_back(slot);
    }
    lazy_ = false;
    return victims;
  }
  void Forget(absl::Span<const size_t>) override {}
  size_t PolicyStateBytes() const override { return 0; }

 private:
  const Options options_;
  bool lazy_ = false;  // this prefill step's decision
};

absl::StatusOr<std::unique_ptr<Policy>> MakeSimLayerKv(
    const ParameterValues& values, Rng, size_t heads) {
  const int64_t n_recent = values.Get("n_recent");
  const int64_t n_last = values.Get("n_last");
  // simlayerkv.md#parameters: kvpress's slice -n_recent + n_last must be
  // negative.
  if (n_last >= n_recent) {
    return Refuse(ErrorCategory::kInvalidParameter,
                  {"rule", {"n_last", "n_recent"}},
                  absl::StrFormat("simlayerkv: n_last must be below n_recent "
                                  "(a lazy layer keeps the last n_recent - "
                                  "n_last positions), got n_last %d, "
                                  "n_recent %d",
                                  n_last, n_recent));
  }
  SimLayerKvPolicy::Options options;
  options.n_initial = static_cast<size_t>(values.Get("n_initial"));
  options.n_recent = static_cast<size_t>(n_recent);
  options.n_last = static_cast<size_t>(n_last);
  options.threshold_ppm = values.Get("lazy_threshold_ppm");
  return std::unique_ptr<Policy>(
      std::make_unique<SimLayerKvPolicy>(options, heads));
}

}  // namespace

const PolicyEntry& SimLayerKvEntry() {
  static const PolicyEntry* entry = new PolicyEntry{
      {"simlayerkv",
       "SimLayerKV: a lazy layer (its last queries' attention on the first "
       "and recent positions above a threshold) keeps only those, another "
       "keeps everything",
       "spec/policies/simlayerkv.md",
       {{"n_initial", 4, 0, kMaxBudget,
         "first positions a lazy layer keeps, and the score's first region"},
        {"n_recent", 1024, 2, kMaxBudget,
         "the score's recent region; a lazy layer keeps the last n_recent - "
         "n_last"},
        {"n_last", 1, 1, kMaxBudget - 1,
         "the last queries whose attention is read"},
        {"lazy_threshold_ppm", kNeverLazy, 0, kNeverLazy,
         "lazy when the score is above lazy_threshold_ppm / 10^6; 1000000 "
         "never compresses"}}},
      &MakeSimLayerKv};
  return *entry;
}

}  // namespace policies
}  // namespace kvspec
