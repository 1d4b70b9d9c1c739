// The deterministic figures of the benchmark (spec/measures.md): every policy
// at each budget on the canonical trace, and the sweeps the cards discuss,
// each measured for retained attention mass, peak memory and victims. Also
// renders them: the cards' generated blocks, the plots, CSV and JSON.
// Timings are not here (tools/bench/speed.h): they are not deterministic.
//
// Example:
//   absl::StatusOr<Figures> figures = ComputeFigures(FigureConfig{}, nullptr);
//   std::string block = CardBlock(*figures, "snapkv");
//
// Spec: spec/measures.md#the-benchmarks-configuration
#ifndef KVSPEC_TOOLS_BENCH_FIGURES_H_
#define KVSPEC_TOOLS_BENCH_FIGURES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"
#include "tools/bench/retention.h"

namespace kvspec {
namespace bench {

// spec/measures.md#the-benchmarks-configuration.
struct FigureConfig {
  uint32_t steps = 8192;
  uint32_t from = 1024;
  std::vector<uint32_t> budgets = {256, 512, 1024};
  uint64_t random_seed = 1;
  std::vector<int64_t> snapkv_obs_windows = {1, 4, 16, 64};
  std::vector<int64_t> snapkv_pool_kernels = {1, 5};
  std::vector<int64_t> streamingllm_sinks = {0, 1, 2, 4, 8};
};

// Which table a run belongs to.
enum class Group { kPolicies, kSnapKvSweep, kSinksSweep };

// One measured configuration.
struct Run {
  Group group = Group::kPolicies;
  // The policy's name in the policies table; the swept parameters in a
  // sweep ("obs_window 4, pool_kernel 1").
  std::string label;
  PolicyConfig policy;
  uint32_t budget = 0;  // 0 for full, which has none
  Retention retention;
};

struct Figures {
  FigureConfig config;
  std::vector<Run> runs;

  // The run of `group` with this label and budget (budget 0 matches full's
  // run whatever is asked), or nullptr.
  const Run* Find(Group group, const std::string& label,
                  uint32_t budget) const;
  // The policies-table runs (by label) that evict alike `run`
  // (spec/measures.md#victims), `run` itself excluded.
  std::vector<std::string> EvictAlike(const Run& run) const;
};

// Called before each configuration is run: how many are done, how many in
// all, and the next one's description.
using Progress =
    std::function<void(size_t done, size_t total, const std::string& what)>;

// Runs every configuration. Identical configurations (a sweep's default
// point and the policies table's row) are run once. Refusal: the first
// configuration or step refused, naming the configuration.
absl::StatusOr<Figures> ComputeFigures(const FigureConfig& config,
                                       const Progress& progress);

// The content of `policy`'s card block "what_it_buys".
std::string CardBlock(const Figures& figures, const std::string& policy);

// The sweep part of that block (snapkv, streamingllm), or "" for a policy
// without a sweep.
std::string SweepSection(const Figures& figures, const std::string& policy);

// spec/figures/retained_mass.svg: mean retained mass against budget, one
// line per policy. spec/figures/memory.svg: peak memory per policy and
// budget.
std::string MassPlotSvg(const Figures& figures);
std::string MemoryPlotSvg(const Figures& figures);

// Helpers shared with the speed and scale reports.
std::string WithCommas(uint64_t value);
std::string Fixed4(double value);  // "0.8123"

}  // namespace bench
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_BENCH_FIGURES_H_
