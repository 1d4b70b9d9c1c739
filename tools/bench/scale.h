// Streaming runs (spec/measures.md#scale): a bounded policy over the
// canonical trace for millions of steps, each run in a fresh process so
// that the process's peak resident memory belongs to that run alone.
#ifndef KVSPEC_TOOLS_BENCH_SCALE_H_
#define KVSPEC_TOOLS_BENCH_SCALE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kvspec {
namespace bench {

struct StreamRun {
  std::string policy;
  uint32_t budget = 0;
  uint32_t steps = 0;
  double seconds = 0.0;         // wall time of RunTrace, in the child
  size_t peak_memory_bytes = 0;  // largest Policy::MemoryBytes() after a step
  long max_rss_kib = 0;          // the child's ru_maxrss
  double ns_per_step() const { return seconds * 1e9 / steps; }
};

// The child's side: runs `policy` at `budget` over `steps` steps of the
// canonical trace and prints one line, "stream <seconds> <peak bytes>", on
// stdout; progress on stderr every tenth of a long run. Returns the exit
// status (0, or 1 with the refusal on stderr).
int RunStreamChild(const std::string& policy, uint32_t budget, uint32_t steps);

// The parent's side: runs `program` (this binary) with --stream_child_*
// flags in a child process, reads its line and its ru_maxrss. Refusal:
// INTERNAL naming the child's exit status or its malformed output.
absl::StatusOr<StreamRun> RunStream(const std::string& program,
                                    const std::string& policy,
                                    uint32_t budget, uint32_t steps);

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_SCALE_H_
