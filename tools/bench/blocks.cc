#include "tools/bench/blocks.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "tools/bench/retention.h"

namespace kvspec {
namespace bench {

namespace {

// The smallest multiple of `block` at or above `value`.
uint32_t RoundUp(uint32_t value, uint32_t block) {
  return (value + block - 1) / block * block;
}

absl::StatusOr<BlockRun> Run(const PolicyConfig& policy, uint32_t block,
                             std::string score, std::string note,
                             const TraceConfig& trace,
                             const std::vector<double>& sums, uint32_t from) {
  absl::StatusOr<std::unique_ptr<Policy>> built = MakePolicy(policy);
  if (!built.ok()) return built.status();
  absl::StatusOr<Retention> r = MeasureTrace(**built, trace, sums, from);
  if (!r.ok()) return r.status();
  BlockRun run;
  run.policy = policy;
  run.block = block;
  run.score = std::move(score);
  run.note = std::move(note);
  run.mean = r->mean;
  run.victims = r->victims;
  run.victims_per_step = r->victims_per_step;
  const EvictionWork work = CountEvictionWork(*r, from, trace.steps);
  run.peak_kept = work.peak_kept;
  run.evictions_per_1000 = work.evictions_per_1000;
  run.victims_per_eviction = work.victims_per_eviction;
  return run;
}

}  // namespace

absl::StatusOr<std::vector<BlockRun>> MeasureBlocks(const BlocksConfig& config) {
  TraceConfig trace;
  trace.steps = config.steps;
  absl::StatusOr<std::vector<double>> sums = TraceRowSums(trace);
  if (!sums.ok()) return sums.status();
  std::vector<BlockRun> runs;
  for (const char* name : {"window", "streamingllm", "h2o", "tova", "snapkv"}) {
    const std::string policy_name = name;
    const bool scored = policy_name != "window" && policy_name != "streamingllm";
    for (uint32_t block : config.sizes) {
      if (block == 0 || block > config.peak) continue;
      // spec/blocks.md#rules: budget, sinks and recent_window multiples of
      // the block; sinks (4) and recent_window (16) at their defaults
      // rounded up to one.
      const uint32_t budget = (config.peak - block + 1) / block * block;
      PolicyConfig policy{policy_name, {{"budget", budget}}};
      if (policy_name == "streamingllm") {
        policy.parameters.push_back({"sinks", RoundUp(4, block)});
      } else if (scored) {
        policy.parameters.push_back({"recent_window", RoundUp(16, block)});
      }
      if (block > 1) policy.parameters.push_back({"block", block});
      const std::vector<int64_t> scores =
          scored && block > 1 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{-1};
      for (int64_t score : scores) {
        PolicyConfig with = policy;
        if (score >= 0) with.parameters.push_back({"block_score", score});
        absl::StatusOr<BlockRun> run =
            Run(with, block, score < 0 ? "" : score == 0 ? "sum" : "max", "", trace,
                *sums, config.from);
        if (!run.ok()) return run.status();
        if (score == 2) {
          const BlockRun& sum = runs.back();
          run->evicts_as_sum = sum.victims == run->victims &&
                               sum.victims_per_step == run->victims_per_step;
        }
        runs.push_back(*std::move(run));
      }
    }
  }
  // OpenVINO GenAI's documented defaults (its notes, 1.1 and 1.2):
  // max_cache_size 672 = start 32 + evictable 512 + recent 128, block 32
  // (CPU), block score sum. h2o has no start area, so the start's 32
  // positions are evictable here; the row against it keeps one position
  // at a time with the same peak (672 + 32 - 1).
  {
    PolicyConfig ov{"h2o", {{"budget", 672}, {"recent_window", 128}, {"block", 32},
                            {"block_score", 0}}};
    absl::StatusOr<BlockRun> run =
        Run(ov, 32, "sum", "OpenVINO's default areas, no start area", trace, *sums,
            config.from);
    if (!run.ok()) return run.status();
    runs.push_back(*std::move(run));
    PolicyConfig one{"h2o", {{"budget", 703}, {"recent_window", 128}}};
    run = Run(one, 1, "", "the same peak, one position at a time", trace, *sums,
              config.from);
    if (!run.ok()) return run.status();
    runs.push_back(*std::move(run));
  }
  return runs;
}

std::string BlocksMarkdown(const BlocksConfig& config, const std::vector<BlockRun>& runs) {
  std::string out = absl::StrFormat(
      "## Blocks: whole blocks against one position at a time (peak %d)\n\n"
      "The canonical trace, %d steps, measured from step %d. With block B "
      "the budget is the largest multiple of B with budget + B - 1 <= %d; "
      "sinks 4 and recent_window 16 are rounded up to multiples of B.\n\n"
      "| policy | block | block score | budget | peak kept | retained mass | "
      "evicting steps per 1,000 | positions per eviction | row |\n"
      "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
      config.peak, config.steps, config.from, config.peak);
  for (const BlockRun& run : runs) {
    int64_t budget = 0;
    for (const Parameter& p : run.policy.parameters) {
      if (p.name == "budget") budget = p.value;
    }
    std::string note = run.note;
    if (run.score == "max") {
      note = run.evicts_as_sum ? "evicts what sum evicts, at every step"
                               : "evicts otherwise than sum";
    }
    out += absl::StrFormat("| %s | %d | %s | %d | %d | %.4f | %.1f | %.1f | %s |\n",
                           run.policy.name, run.block, run.score.empty() ? "-" : run.score,
                           budget, run.peak_kept, run.mean, run.evictions_per_1000,
                           run.victims_per_eviction, note);
  }
  return out;
}

}  // namespace bench
}  // namespace kvspec
