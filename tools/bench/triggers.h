// The benchmark's triggers section (spec/triggers.md): at one peak cache
// size, each policy evicting at every step against evicting in bulk
// (`slack`) or every N-th step (`interval`), on the canonical trace: the
// retained attention mass (spec/measures.md#retained-attention-mass) and
// how often the policy ranks and evicts (the work a trigger saves).
//
// Example:
//   absl::StatusOr<std::vector<TriggerRun>> runs = MeasureTriggers({});
//   std::printf("%s", TriggersMarkdown({}, *runs).c_str());
#ifndef KVSPEC_TOOLS_BENCH_TRIGGERS_H_
#define KVSPEC_TOOLS_BENCH_TRIGGERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"

namespace kvspec {
namespace bench {

struct TriggersConfig {
  uint32_t peak = 512;     // most positions ever kept, equal for every row
  uint32_t steps = 8192;   // of the canonical trace
  uint32_t from = 1024;    // first measured step
  // Each trigger size: slack S with budget peak - S, and interval N with
  // budget peak - N + 1, both peaking at `peak`.
  std::vector<uint32_t> sizes = {16, 64, 256};
};

struct TriggerRun {
  PolicyConfig policy;
  std::string trigger;  // "every step", "slack 64", "interval 64"
  uint32_t budget = 0;
  uint32_t peak_kept = 0;   // most positions kept after any step
  double mean = 0.0;        // mean retained mass over the measured steps
  // Measured steps that evicted, per 1,000 measured steps, and positions
  // evicted per such step.
  double evictions_per_1000 = 0.0;
  double victims_per_eviction = 0.0;
};

// window, streamingllm, h2o, tova and snapkv at their defaults but the
// budget and the trigger; each at every step and under each trigger size.
absl::StatusOr<std::vector<TriggerRun>> MeasureTriggers(const TriggersConfig& config);

std::string TriggersMarkdown(const TriggersConfig& config,
                             const std::vector<TriggerRun>& runs);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_TRIGGERS_H_
