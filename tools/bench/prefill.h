// The benchmark's prefill section (spec/measures.md#prefill): each prefill
// variant and preset on the multi-head canonical trace, with the prompt as
// one prefill step compressed to a budget, then decode steps that never
// evict; the retained attention mass during decoding, and the time per
// prefill position against a loop that only touches the same inputs.
//
// Example:
//   absl::StatusOr<std::vector<PrefillRun>> runs =
//       MeasurePrefill(PrefillConfig{}, 3);
//   std::printf("%s", PrefillMarkdown(PrefillConfig{}, *runs).c_str());
#ifndef KVSPEC_TOOLS_BENCH_PREFILL_H_
#define KVSPEC_TOOLS_BENCH_PREFILL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"

namespace kvspec {
namespace bench {

struct PrefillConfig {
  uint32_t query_heads = 4;
  uint32_t kv_heads = 2;
  uint32_t prompt = 4096;  // positions of the prefill step
  uint32_t decode = 4096;  // decode steps after it
  std::vector<uint32_t> budgets = {256, 512, 1024};
};

struct PrefillRun {
  std::string variant;  // e.g. "snapkv kvpress-0.5.5"
  std::string policy;   // registry name
  std::string what;     // the parameters that make the variant, in words
  uint32_t budget = 0;  // positions kept after the prefill step
  PolicyConfig config;
  uint32_t query_rows = 0;  // per head, carried by the prefill step
  // spec/measures.md#prefill: per head, the mean over decode steps of the
  // retained mass; their mean over heads, and the least.
  double mass = 0.0;
  double worst_head = 1.0;
  // Median over repetitions, per prompt position: the prefill step (build
  // the layer, admit, score, evict), and the touch loop over its inputs.
  double ns_per_position = 0.0;
  double touch_ns_per_position = 0.0;
};

absl::StatusOr<std::vector<PrefillRun>> MeasurePrefill(
    const PrefillConfig& config, int repetitions);

// The whole table (README), timings included.
std::string PrefillMarkdown(const PrefillConfig& config,
                            const std::vector<PrefillRun>& runs);

// A card's generated block "prefill": `policy`'s rows, masses only (they
// are deterministic; timings are not).
std::string PrefillCardBlock(const PrefillConfig& config,
                             const std::vector<PrefillRun>& runs,
                             const std::string& policy);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_PREFILL_H_
