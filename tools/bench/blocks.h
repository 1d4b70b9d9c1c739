// The benchmark's blocks section (spec/blocks.md): each policy evicting
// whole blocks of B positions against one position at a time, at equal
// peak memory, on the canonical trace: the retained attention mass
// (spec/measures.md#retained-attention-mass), how often a step evicts and
// how many positions it removes (the eviction work per generated token),
// and OpenVINO GenAI's documented default areas at its CPU block size.
//
// Example:
//   absl::StatusOr<std::vector<BlockRun>> runs = MeasureBlocks({});
//   std::printf("%s", BlocksMarkdown({}, *runs).c_str());
#ifndef KVSPEC_TOOLS_BENCH_BLOCKS_H_
#define KVSPEC_TOOLS_BENCH_BLOCKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"
#include "cc/policy.h"

namespace kvspec {
namespace bench {

struct BlocksConfig {
  // Most positions kept after any step: with block B the budget is the
  // largest multiple of B with budget + B - 1 <= peak (spec/blocks.md: a
  // cache keeps between budget and budget + B - 1).
  uint32_t peak = 512;
  uint32_t steps = 8192;  // of the canonical trace
  uint32_t from = 1024;   // first measured step
  std::vector<uint32_t> sizes = {1, 16, 32};
};

struct BlockRun {
  PolicyConfig policy;  // as run, every parameter named
  uint32_t block = 1;
  std::string score;    // "sum", "max", or "" (positional policies)
  std::string note;     // "" or what the row stands for
  uint32_t peak_kept = 0;
  double mean = 0.0;    // mean retained mass over the measured steps
  double evictions_per_1000 = 0.0;  // measured steps that evict, per 1,000
  double victims_per_eviction = 0.0;
  // For a max row: whether it evicted exactly what the sum row of the same
  // policy and block evicted, step by step (Retention::EvictsAlike).
  bool evicts_as_sum = false;
  std::vector<Position> victims;  // every step's, in order
  std::vector<uint32_t> victims_per_step;
};

// window, streamingllm, h2o, tova and snapkv at each block size (sum and
// max for the score-based ones), then h2o at OpenVINO GenAI's default
// areas (max_cache_size 672, recent 128, block 32) against h2o at one
// position at a time with the same peak.
absl::StatusOr<std::vector<BlockRun>> MeasureBlocks(const BlocksConfig& config);

std::string BlocksMarkdown(const BlocksConfig& config, const std::vector<BlockRun>& runs);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_BLOCKS_H_
