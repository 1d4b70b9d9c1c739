#include "tools/bench/triggers.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "tools/bench/retention.h"

namespace kvspec {
namespace bench {

absl::StatusOr<std::vector<TriggerRun>> MeasureTriggers(
    const TriggersConfig& config) {
  TraceConfig trace;
  trace.steps = config.steps;
  absl::StatusOr<std::vector<double>> sums = TraceRowSums(trace);
  if (!sums.ok()) return sums.status();
  struct Variant {
    std::string trigger;
    uint32_t budget;
    std::vector<Parameter> parameters;
  };
  std::vector<Variant> variants = {{"every step", config.peak, {}}};
  for (uint32_t size : config.sizes) {
    if (size >= config.peak) continue;
    variants.push_back({absl::StrFormat("slack %d", size), config.peak - size,
                        {{"slack", size}}});
    variants.push_back({absl::StrFormat("interval %d", size),
                        config.peak - size + 1, {{"interval", size}}});
  }
  std::vector<TriggerRun> runs;
  for (const char* name : {"window", "streamingllm", "h2o", "tova", "snapkv"}) {
    for (const Variant& v : variants) {
      PolicyConfig policy{name, {{"budget", v.budget}}};
      for (const Parameter& p : v.parameters) policy.parameters.push_back(p);
      absl::StatusOr<std::unique_ptr<Policy>> built = MakePolicy(policy);
      if (!built.ok()) return built.status();
      absl::StatusOr<Retention> r = MeasureTrace(**built, trace, *sums, config.from);
      if (!r.ok()) return r.status();
      TriggerRun run;
      run.policy = policy;
      run.trigger = v.trigger;
      run.budget = v.budget;
      run.mean = r->mean;
      const EvictionWork work = CountEvictionWork(*r, config.from, config.steps);
      run.peak_kept = work.peak_kept;
      run.evictions_per_1000 = work.evictions_per_1000;
      run.victims_per_eviction = work.victims_per_eviction;
      runs.push_back(run);
    }
  }
  return runs;
}

std::string TriggersMarkdown(const TriggersConfig& config,
                             const std::vector<TriggerRun>& runs) {
  std::string out = absl::StrFormat(
      "## Triggers: evicting in bulk at equal peak memory (%d positions)\n\n"
      "The canonical trace, %d steps, measured from step %d. `slack S` has "
      "budget %d - S, `interval N` budget %d - N + 1: every row keeps at most "
      "%d positions.\n\n"
      "| policy | trigger | budget | peak kept | retained mass | evicting steps "
      "per 1,000 | positions per eviction |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n",
      config.peak, config.steps, config.from, config.peak, config.peak,
      config.peak);
  for (const TriggerRun& run : runs) {
    out += absl::StrFormat("| %s | %s | %d | %d | %.4f | %.1f | %.1f |\n",
                           run.policy.name, run.trigger, run.budget,
                           run.peak_kept, run.mean, run.evictions_per_1000,
                           run.victims_per_eviction);
  }
  return out;
}

}  // namespace bench
}  // namespace kvspec
