// Retained attention mass (spec/measures.md#retained-attention-mass): runs a
// policy over a trace and measures, at each step, the share of the step's
// full-cache row that falls on the positions the policy still keeps. Also
// records the peak of the policy's own memory accounting and every victim,
// so two runs can be compared step by step (spec/measures.md#victims).
//
// Example:
//   TraceConfig trace;  trace.steps = 8192;        // the canonical trace
//   absl::StatusOr<std::vector<double>> sums = TraceRowSums(trace);
//   auto policy = MakePolicy({"h2o", {{"budget", 512}}});
//   absl::StatusOr<Retention> r =
//       MeasureTrace(**policy, trace, *sums, /*from=*/1024);
//   r->mean ...
//
// Spec: spec/measures.md
#ifndef KVSPEC_TOOLS_BENCH_RETENTION_H_
#define KVSPEC_TOOLS_BENCH_RETENTION_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cc/errors.h"
#include "cc/policy.h"
#include "cc/trace.h"

namespace kvspec {
namespace bench {

struct Retention {
  // Mean of r(t) over the measured steps, summed in step order.
  double mean = 0.0;
  // The least r(t) and the first measured step reaching it.
  double worst = 1.0;
  uint32_t worst_step = 0;
  uint32_t measured_steps = 0;
  // Mean, over the measured steps that have heavy hitters, of the share of
  // their multiplicity on kept positions (spec/measures.md#heavy-hitters-kept);
  // how many measured steps had heavy hitters.
  double heavy_kept = 0.0;
  uint32_t heavy_steps = 0;
  // Largest Policy::MemoryBytes() after any step.
  size_t peak_memory_bytes = 0;
  // Every step's victims, ascending within a step, steps in order, and how
  // many each step evicted: enough to tell whether two runs evict alike.
  std::vector<Position> victims;
  std::vector<uint32_t> victims_per_step;

  bool EvictsAlike(const Retention& other) const {
    return victims == other.victims &&
           victims_per_step == other.victims_per_step;
  }
};

// A source of full-cache rows, one step at a time, each step admitting one
// position: TraceGenerator, or a hand-made row in tests. Rows must provide
//   bool Advance();              // next step; false after the last
//   uint32_t step() const;       // the current step t
//   float Weight(Position p) const;  // w(t, p), p < t
//   const std::vector<std::pair<Position, uint32_t>>& heavy_hitters() const;
//                                    // the step's, ascending, with multiplicity
// row_sum(t) of spec/measures.md for every step of `rows`, index t.
template <typename Rows>
std::vector<double> RowSums(Rows& rows);

// Runs `policy` over every step of `rows` and measures steps `from` onward.
// `row_sums` is RowSums() of the same rows. Refusal: the policy's, as
// Policy::Step; INVALID_ARGUMENT when `from` is 0 or not below the number of
// steps, or `row_sums` is too short.
template <typename Rows>
absl::StatusOr<Retention> MeasureRows(Policy& policy, Rows& rows,
                                      absl::Span<const double> row_sums,
                                      uint32_t from);

// The eviction work of a run (the blocks and triggers sections): the most
// positions kept after any step (each step admits one), and over the steps
// `from` .. `steps` - 1 how many evict, per 1,000 steps, and how many
// positions an evicting step removes on average (0 when none evicts).
struct EvictionWork {
  uint32_t peak_kept = 0;
  double evictions_per_1000 = 0.0;
  double victims_per_eviction = 0.0;
};
EvictionWork CountEvictionWork(const Retention& run, uint32_t from,
                               uint32_t steps);

// Both of the above on the trace `config` describes.
absl::StatusOr<std::vector<double>> TraceRowSums(const TraceConfig& config);
absl::StatusOr<Retention> MeasureTrace(Policy& policy,
                                       const TraceConfig& config,
                                       absl::Span<const double> row_sums,
                                       uint32_t from);

// Implementation details below.
template <typename Rows>
std::vector<double> RowSums(Rows& rows) {
  std::vector<double> sums;
  while (rows.Advance()) {
    double sum = 0.0;
    for (Position p = 0; p < rows.step(); ++p) {
      sum += static_cast<double>(rows.Weight(p));
    }
    sums.push_back(sum);
  }
  return sums;
}

absl::Status CheckMeasuredSteps(size_t row_sums, uint32_t from);

template <typename Rows>
absl::StatusOr<Retention> MeasureRows(Policy& policy, Rows& rows,
                                      absl::Span<const double> row_sums,
                                      uint32_t from) {
  KVSPEC_RETURN_IF_ERROR(CheckMeasuredSteps(row_sums.size(), from));
  Retention result;
  double r_sum = 0.0;
  double heavy_sum = 0.0;
  std::vector<float> gathered;
  while (rows.Advance()) {
    const uint32_t t = rows.step();
    if (t >= row_sums.size()) {
      return absl::InvalidArgumentError("row_sums is shorter than the rows");
    }
    // spec/measures.md#retained-attention-mass: kept_sum(t), ascending p.
    gathered.clear();
    double kept_sum = 0.0;
    for (Position p : policy.kept()) {
      const float w = rows.Weight(p);
      gathered.push_back(w);
      kept_sum += static_cast<double>(w);
    }
    if (t >= from) {
      const double r = kept_sum / row_sums[t];
      r_sum += r;
      if (result.measured_steps == 0 || r < result.worst) {
        result.worst = r;
        result.worst_step = t;
      }
      ++result.measured_steps;
      // spec/measures.md#heavy-hitters-kept.
      uint64_t kept_count = 0, all_count = 0;
      for (const auto& [position, multiplicity] : rows.heavy_hitters()) {
        all_count += multiplicity;
        if (std::binary_search(policy.kept().begin(), policy.kept().end(),
                               position)) {
          kept_count += multiplicity;
        }
      }
      if (all_count > 0) {
        heavy_sum += static_cast<double>(kept_count) /
                     static_cast<double>(all_count);
        ++result.heavy_steps;
      }
    }
    absl::StatusOr<std::vector<Position>> victims =
        policy.Step({t, 1, absl::MakeConstSpan(gathered)});
    if (!victims.ok()) return victims.status();
    result.victims.insert(result.victims.end(), victims->begin(),
                          victims->end());
    result.victims_per_step.push_back(static_cast<uint32_t>(victims->size()));
    result.peak_memory_bytes =
        std::max(result.peak_memory_bytes, policy.MemoryBytes());
  }
  if (result.measured_steps == 0) {
    return absl::InvalidArgumentError("no measured step: from is past the rows");
  }
  result.mean = r_sum / static_cast<double>(result.measured_steps);
  if (result.heavy_steps > 0) {
    result.heavy_kept = heavy_sum / static_cast<double>(result.heavy_steps);
  }
  return result;
}

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_RETENTION_H_
