// The benchmark's multi-head section (spec/measures.md#several-heads): every
// policy and granularity on the multi-head canonical trace
// (spec/trace.md#several-heads), with the retained attention mass per head
// and its mean over heads, the peak memory of all kept sets, and the time
// per step against a loop that only touches the same inputs.
//
// Example:
//   absl::StatusOr<std::vector<HeadsRun>> runs = MeasureHeads(HeadsConfig{}, 3);
//   std::printf("%s", HeadsMarkdown(HeadsConfig{}, *runs).c_str());
#ifndef KVSPEC_TOOLS_BENCH_HEADS_H_
#define KVSPEC_TOOLS_BENCH_HEADS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"

namespace kvspec {
namespace bench {

struct HeadsConfig {
  uint32_t query_heads = 32;
  uint32_t kv_heads = 8;
  uint32_t budget = 1024;   // per kept set
  uint32_t steps = 2048;    // of the canonical trace
  uint32_t from = 1024;     // first measured step
};

struct HeadsRun {
  PolicyConfig policy;
  std::string granularity;  // "layer", "kv_head", "query_head", or "one set"
  size_t sets = 0;
  // spec/measures.md#several-heads: per head, the mean of r_h(t) over the
  // measured steps; their mean over heads (head order); the least of them.
  std::vector<double> head_means;
  double mean = 0.0;
  double worst_head = 1.0;
  size_t peak_memory_bytes = 0;
  // Median over repetitions of the measured steps' time, per step, for the
  // policy and for the touch loop over the same recorded inputs.
  double ns_per_step = 0.0;
  double touch_ns_per_step = 0.0;
};

// Every policy at its defaults but `budget`, each score-based one at every
// granularity (aggregation mean). `repetitions` >= 1 timings of each.
absl::StatusOr<std::vector<HeadsRun>> MeasureHeads(const HeadsConfig& config,
                                                   int repetitions);

std::string HeadsMarkdown(const HeadsConfig& config,
                          const std::vector<HeadsRun>& runs);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_HEADS_H_
