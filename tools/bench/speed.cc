#include "tools/bench/speed.h"

#include <unistd.h>

#include <cstring>
#include <iostream>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "cc/registry.h"
#include "cc/trace.h"

namespace kvspec {
namespace bench {
namespace {

// Every step's attention as the policy received it, flattened.
struct Recording {
  std::vector<float> weights;
  std::vector<size_t> offsets;  // step t's weights: [offsets[t], offsets[t+1])
  absl::Span<const float> Step(uint32_t t) const {
    return absl::MakeConstSpan(weights.data() + offsets[t],
                               offsets[t + 1] - offsets[t]);
  }
};

absl::StatusOr<Recording> Record(const PolicyConfig& config,
                                 uint32_t steps) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) return policy.status();
  TraceConfig trace;
  trace.steps = steps;
  absl::StatusOr<TraceGenerator> rows = TraceGenerator::Create(trace);
  if (!rows.ok()) return rows.status();
  Recording recording;
  recording.offsets.push_back(0);
  while (rows->Advance()) {
    const size_t start = recording.weights.size();
    for (Position p : (*policy)->kept()) {
      recording.weights.push_back(rows->Weight(p));
    }
    absl::StatusOr<std::vector<Position>> victims = (*policy)->Step(
        {rows->step(), 1,
         absl::MakeConstSpan(recording.weights.data() + start,
                             recording.weights.size() - start)});
    if (!victims.ok()) return victims.status();
    recording.offsets.push_back(recording.weights.size());
  }
  return recording;
}

// Keeps the median of each benchmark's repetitions, per iteration, in ns,
// and shows Google Benchmark's usual report on stderr.
class Capture : public benchmark::ConsoleReporter {
 public:
  Capture()
      : ConsoleReporter(isatty(STDERR_FILENO) ? OO_Defaults : OO_None) {
    SetOutputStream(&std::cerr);
    SetErrorStream(&std::cerr);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) {
        errors_.push_back(run.benchmark_name() + ": " + run.error_message);
        continue;
      }
      const bool median = run.run_type == Run::RT_Aggregate &&
                          run.aggregate_name == "median";
      const bool single = run.run_type == Run::RT_Iteration;
      if (median || (single && ns_.count(run.run_name.function_name) == 0)) {
        ns_[run.run_name.function_name] = run.GetAdjustedCPUTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> ns_;
  std::vector<std::string> errors_;
};

}  // namespace

absl::StatusOr<std::vector<Speed>> MeasureSpeed(const Figures& figures,
                                                int repetitions) {
  const uint32_t steps = figures.config.steps;
  const uint32_t from = figures.config.from;
  const double measured = static_cast<double>(steps - from);
  std::vector<Speed> speeds;
  for (const Run& run : figures.runs) {
    if (run.group != Group::kPolicies) continue;
    absl::StatusOr<Recording> recording = Record(run.policy, steps);
    if (!recording.ok()) return recording.status();
    const Recording& rec = *recording;
    const PolicyConfig config = run.policy;
    const std::string name = absl::StrCat(run.label, "/", run.budget);

    // spec/measures.md#speed: the policy, steps `from` on, timed.
    benchmark::RegisterBenchmark(
        name.c_str(),
        [&rec, config, steps, from](benchmark::State& state) {
          for (auto _ : state) {
            state.PauseTiming();
            std::unique_ptr<Policy> policy = *MakePolicy(config);
            for (uint32_t t = 0; t < from; ++t) {
              benchmark::DoNotOptimize(policy->Step({t, 1, rec.Step(t)}));
            }
            state.ResumeTiming();
            for (uint32_t t = from; t < steps; ++t) {
              auto victims = policy->Step({t, 1, rec.Step(t)});
              benchmark::DoNotOptimize(victims);
            }
            state.PauseTiming();
            policy.reset();
            state.ResumeTiming();
          }
        })
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(repetitions)
        ->ReportAggregatesOnly(repetitions > 1);

    // The baseline: the same steps, each reading its attention and a buffer
    // the size of the policy's peak state once, folded into a checksum.
    const size_t words = (run.retention.peak_memory_bytes + 7) / 8;
    benchmark::RegisterBenchmark(
        ("baseline/" + name).c_str(),
        [&rec, words, steps, from](benchmark::State& state) {
          std::vector<uint64_t> buffer(words);
          for (size_t i = 0; i < words; ++i) buffer[i] = i * 0x9e3779b97f4a7c15u;
          for (auto _ : state) {
            state.PauseTiming();
            state.ResumeTiming();
            for (uint32_t t = from; t < steps; ++t) {
              uint64_t sum = 0;
              for (float w : rec.Step(t)) {
                uint32_t bits;
                std::memcpy(&bits, &w, sizeof(bits));
                sum += bits;
              }
              for (uint64_t word : buffer) sum += word;
              benchmark::DoNotOptimize(sum);
            }
            state.PauseTiming();
            state.ResumeTiming();
          }
        })
        ->Unit(benchmark::kMillisecond)
        ->Repetitions(repetitions)
        ->ReportAggregatesOnly(repetitions > 1);

    Capture capture;
    benchmark::RunSpecifiedBenchmarks(&capture);
    benchmark::ClearRegisteredBenchmarks();
    if (!capture.errors_.empty()) {
      return absl::InternalError(capture.errors_.front());
    }
    const auto policy_ms = capture.ns_.find(name);
    const auto baseline_ms = capture.ns_.find("baseline/" + name);
    if (policy_ms == capture.ns_.end() || baseline_ms == capture.ns_.end()) {
      continue;  // filtered out by --benchmark_filter
    }
    // Per iteration in ms (the unit above) -> per measured step in ns.
    speeds.push_back({run.label, run.budget,
                      policy_ms->second * 1e6 / measured,
                      baseline_ms->second * 1e6 / measured});
  }
  return speeds;
}

}  // namespace bench
}  // namespace kvspec
