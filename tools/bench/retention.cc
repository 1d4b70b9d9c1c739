#include "tools/bench/retention.h"

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
