#include "tools/bench/retention.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace kvspec {
namespace bench {

absl::Status CheckMeasuredSteps(size_t row_sums, uint32_t from) {
  // spec/measures.md#retained-attention-mass: r(t) is defined for t >= 1.
  if (from == 0) {
    return absl::InvalidArgumentError(
        "from must be at least 1: step 0's row is empty, so r(0) is undefined");
  }
  if (from >= row_sums) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "from must be below the number of steps (%d), got %d", row_sums, from));
  }
  return absl::OkStatus();
}

EvictionWork CountEvictionWork(const Retention& run, uint32_t from,
                               uint32_t steps) {
  EvictionWork work;
  // Kept after step t: t + 1 admitted less every victim so far.
  uint64_t kept = 0, evictions = 0, victims = 0;
  for (size_t t = 0; t < run.victims_per_step.size(); ++t) {
    kept = kept + 1 - run.victims_per_step[t];
    work.peak_kept = std::max<uint32_t>(work.peak_kept, static_cast<uint32_t>(kept));
    if (t >= from && run.victims_per_step[t] > 0) {
      ++evictions;
      victims += run.victims_per_step[t];
    }
  }
  const double measured = static_cast<double>(steps - from);
  work.evictions_per_1000 = 1000.0 * static_cast<double>(evictions) / measured;
  work.victims_per_eviction =
      evictions == 0 ? 0.0 : static_cast<double>(victims) / static_cast<double>(evictions);
  return work;
}

absl::StatusOr<std::vector<double>> TraceRowSums(const TraceConfig& config) {
  absl::StatusOr<TraceGenerator> trace = TraceGenerator::Create(config);
  if (!trace.ok()) return trace.status();
  return RowSums(*trace);
}

absl::StatusOr<Retention> MeasureTrace(Policy& policy,
                                       const TraceConfig& config,
                                       absl::Span<const double> row_sums,
                                       uint32_t from) {
  absl::StatusOr<TraceGenerator> trace = TraceGenerator::Create(config);
  if (!trace.ok()) return trace.status();
  return MeasureRows(policy, *trace, row_sums, from);
}

}  // namespace bench
}  // namespace kvspec
