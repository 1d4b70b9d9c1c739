// Nanoseconds per decode step (spec/measures.md#speed), timed with Google
// Benchmark: a policy's Step() replayed on the recorded inputs of its run over
// the canonical trace, against a baseline loop that only reads the same
// inputs and a buffer the size of the policy's state, measured side by side.
#ifndef KVSPEC_TOOLS_BENCH_SPEED_H_
#define KVSPEC_TOOLS_BENCH_SPEED_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/figures.h"

namespace kvspec {
namespace bench {

struct Speed {
  std::string label;  // the policy
  uint32_t budget = 0;
  double policy_ns = 0.0;    // per measured step, median of the repetitions
  double baseline_ns = 0.0;  // the same, for the baseline loop
  double ratio() const { return policy_ns / baseline_ns; }
};

// Times every run of the policies table of `figures`. Google Benchmark's own
// flags (--benchmark_min_time, --benchmark_repetitions, ...) must have been
// passed to benchmark::Initialize first. Its per-benchmark report goes to
// stderr, as progress.
absl::StatusOr<std::vector<Speed>> MeasureSpeed(const Figures& figures,
                                                int repetitions);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_SPEED_H_
