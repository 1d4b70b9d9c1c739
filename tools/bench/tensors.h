// The benchmark's tensor section: the cost per decode step of the policies
// that score from a scenario's keys and values (spec/tensors.md: knorm,
// keydiff, lagkv), against a loop that only touches the same inputs and a
// buffer the size of the policy's peak state (spec/measures.md#speed's
// baseline). The canonical trace has no keys, so these policies have no row
// in the other sections; their retained attention mass is measured on a
// captured prompt instead (tools/attention/attention_report.py).
//
// Example:
//   absl::StatusOr<std::vector<TensorRun>> runs = MeasureTensors(TensorsConfig{}, 3);
//   std::printf("%s", TensorsMarkdown(TensorsConfig{}, *runs).c_str());
#ifndef KVSPEC_TOOLS_BENCH_TENSORS_H_
#define KVSPEC_TOOLS_BENCH_TENSORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/registry.h"

namespace kvspec {
namespace bench {

struct TensorsConfig {
  uint32_t head_dim = 64;   // d = e, a model's (SmolLM2's is 64)
  uint32_t budget = 1024;   // one KV head, one kept set
  uint32_t steps = 2048;    // one position a step
  uint32_t from = 1024;     // first measured step
  uint64_t seed = 2026;     // of the keys' and values' entries
};

struct TensorRun {
  PolicyConfig policy;
  size_t peak_memory_bytes = 0;
  // Median over repetitions of the measured steps' time, per step, for the
  // policy and for the touch loop.
  double ns_per_step = 0.0;
  double touch_ns_per_step = 0.0;
};

// knorm, keydiff, and lagkv at its defaults and with lag 16, each with
// `budget`, over the same drawn keys and values; `repetitions` >= 1.
absl::StatusOr<std::vector<TensorRun>> MeasureTensors(const TensorsConfig& config,
                                                      int repetitions);

std::string TensorsMarkdown(const TensorsConfig& config,
                            const std::vector<TensorRun>& runs);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_TENSORS_H_
