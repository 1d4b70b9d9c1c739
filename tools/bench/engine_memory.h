// The memory of engines' retention rules at equal spans (spec/spans.md#presets,
// issue 20): what keeping W - 1 (transformers' dynamic sliding layer), W (its
// static layer) or M - 1 + S (mlx-lm's rotating cache) costs, at the chunk
// sizes engines use, for a prompt and a few decode steps. Every figure is
// read from the reference's logs with `spans` 1: the held set is what the
// step's queries attend over, the kept count what stays between steps.
//
// Spec: spec/spans.md; figures in tools/bench/RESULTS.md#engine-memory.
#ifndef KVSPEC_TOOLS_BENCH_ENGINE_MEMORY_H_
#define KVSPEC_TOOLS_BENCH_ENGINE_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"

namespace kvspec {
namespace bench {

struct EngineMemoryRun {
  std::string preset;     // e.g. "window:hf-dynamic-5.2.0"
  uint32_t chunk = 0;     // prefill chunk length
  uint64_t peak_held = 0; // most positions any step's queries attend over
  uint64_t peak_kept = 0; // most positions kept after a step
  uint64_t final_kept = 0;
  bool spans_equal = false;  // every query's span equals the first preset's
};

// The prompt of `prompt` positions in chunks of `chunk`, then `decode`
// single steps, through each engine preset with window `window` (and, for
// a window above 4, mlx-lm's sinks preset with 4 sinks). Spans are
// compared with the first preset's.
absl::StatusOr<std::vector<EngineMemoryRun>> MeasureEngineMemory(
    uint32_t window, uint32_t prompt, uint32_t decode,
    const std::vector<uint32_t>& chunks);

std::string EngineMemoryMarkdown(uint32_t window, uint32_t prompt,
                                 uint32_t decode,
                                 const std::vector<EngineMemoryRun>& runs);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_ENGINE_MEMORY_H_
