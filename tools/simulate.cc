// simulate: runs kvspec's reference policies over a scenario and prints, step
// by step, what each policy admits, evicts and keeps.
//
//   bazel run //tools:simulate                       # every policy, sample
//   bazel run //tools:simulate -- --policy=streamingllm --params=budget=6,sinks=2
//   bazel run //tools:simulate -- --scenario=/path/scenario.pb --policy=window
//   bazel run //tools:simulate -- --list             # policies and parameters
//   bazel run //tools:simulate -- --policy=snapkv \
//       --params=preset=kvpress-0.5.5,ratio_ppm=500000 --scenario=prompt.pb
//
// A scenario file is a binary kvspec.v1.Scenario (spec/kvspec.proto); floats
// are read as exact IEEE values. Printed floats are shortest round-trip.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/heads.h"
#include "cc/presets.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "cc/version.h"
#include "spec/kvspec.pb.h"
#include "tools/sample_scenario.h"

ABSL_FLAG(std::string, policy, "",
          "Registry name of the policy to run (see --list). Empty runs every "
          "registered policy with the sample settings of "
          "tools/sample_scenario.h.");
ABSL_FLAG(std::vector<std::string>, params, {},
          "Comma-separated name=value integer parameters for --policy, e.g. "
          "budget=6,sinks=2. Parameters left out take the defaults of the "
          "policy's card.");
ABSL_FLAG(uint64_t, seed, 0,
          "Seed of the Rng each policy receives (spec/rng.md); deterministic "
          "policies ignore it.");
ABSL_FLAG(std::string, scenario, "",
          "Path of a binary kvspec.v1.Scenario. Empty uses the built-in "
          "sample scenario.");
ABSL_FLAG(std::string, write_sample, "",
          "Write the built-in sample scenario to this path as a binary "
          "kvspec.v1.Scenario, then exit.");
ABSL_FLAG(uint32_t, trace_steps, 0,
          "Run the canonical trace (spec/trace.md) for this many steps instead "
          "of a scenario, streaming: memory stays proportional to the kept "
          "positions. Prints a summary per policy, not every step.");
ABSL_FLAG(std::string, write_trace, "",
          "With --trace_steps: write the canonical trace, expanded into "
          "explicit full-cache rows, to this path as a binary "
          "kvspec.v1.Scenario, then exit. (The rows grow with the square of "
          "the steps: keep it to a few thousand.)");
ABSL_FLAG(bool, list, false,
          "List the registered policies with their parameters, defaults and "
          "ranges, then exit.");
ABSL_FLAG(bool, quiet, false,
          "Print only each policy's summary line, not every step.");

namespace kvspec {
namespace {

std::string Positions(absl::Span<const Position> positions) {
  return "[" + absl::StrJoin(positions, " ") + "]";
}

void ListPolicies() {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    std::printf("%s: %s\n  card: %s\n", info.name.c_str(),
                info.summary.c_str(), info.card.c_str());
    if (info.parameters.empty()) std::printf("  (no parameters)\n");
    for (const ParameterInfo& p : info.parameters) {
      std::printf("  %s: %s; default %s, range [%lld, %lld]\n",
                  p.name.c_str(), p.meaning.c_str(),
                  p.default_value.has_value()
                      ? std::to_string(*p.default_value).c_str()
                      : "none (required)",
                  static_cast<long long>(p.min),
                  static_cast<long long>(p.max));
    }
    // spec/prefill.md#presets.
    for (const Preset& preset : Presets()) {
      if (preset.policy != info.name) continue;
      std::vector<std::string> values;
      for (const Parameter& p : preset.parameters) {
        values.push_back(absl::StrFormat("%s=%d", p.name, p.value));
      }
      std::printf("  preset=%s: %s\n    follows %s\n", preset.name.c_str(),
                  absl::StrJoin(values, ",").c_str(), preset.follows.c_str());
    }
  }
}

absl::StatusOr<std::vector<Parameter>> ParseParams(
    const std::vector<std::string>& texts, std::string& preset_name) {
  std::vector<Parameter> parameters;
  for (const std::string& text : texts) {
    const std::vector<std::string> parts = absl::StrSplit(text, '=');
    int64_t value = 0;
    // spec/heads.md#parameters: granularity and aggregation take names too.
    const std::optional<int64_t> named =
        parts.size() == 2 ? HeadParameterValue(parts[0], parts[1])
                          : std::nullopt;
    if (parts.size() == 2 && parts[0] == "preset") {
      // spec/prefill.md#presets: expanded by ExpandPreset once the policy
      // is known; kept here as a marker.
      preset_name = parts[1];
      continue;
    } else if (named.has_value()) {
      value = *named;
    } else if (parts.size() != 2 || parts[0].empty() ||
               !absl::SimpleAtoi(parts[1], &value)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--params: '%s' is not name=integer (e.g. budget=6, or "
          "granularity=layer|kv_head|query_head, "
          "aggregation=mean|max|sum, or preset=NAME; see --list)",
          text));
    }
    parameters.push_back({parts[0], value});
  }
  return parameters;
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  if (path.empty()) return SampleScenario();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrFormat("--scenario: cannot open '%s'", path));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  v1::Scenario proto;
  if (!proto.ParseFromString(bytes.str())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--scenario: '%s' is not a binary kvspec.v1.Scenario", path));
  }
  return FromProto(proto);
}

std::string ConfigText(const PolicyConfig& config) {
  std::vector<std::string> parts;
  for (const Parameter& p : config.parameters) {
    parts.push_back(absl::StrFormat("%s=%d", p.name, p.value));
  }
  return config.name + (parts.empty() ? "" : " " + absl::StrJoin(parts, ","));
}

// A scenario with several heads (spec/heads.md): each step's victims, kept
// set by kept set.
bool RunSetsAndPrint(const PolicyConfig& config, const Scenario& scenario,
                     bool quiet) {
  const RunResult result = RunScenario(config, scenario);
  for (size_t i = 0; i < result.steps.size() && !quiet; ++i) {
    const StepRecord& record = result.steps[i];
    std::vector<std::string> sets;
    if (record.sets.empty()) {
      sets.push_back(Positions(record.victims));
    } else {
      for (const StepRecord& set : record.sets) {
        sets.push_back(Positions(set.victims));
      }
    }
    std::printf("step %3zu  evict %s\n", i, absl::StrJoin(sets, " | ").c_str());
  }
  const size_t sets = result.steps.empty() || result.steps[0].sets.empty()
                          ? 1
                          : result.steps[0].sets.size();
  std::printf("%zu steps, %zu kept set(s) (victims per set, set 0 first)\n",
              result.steps.size(), sets);
  if (!result.refusal.ok()) {
    std::printf("refused at step %lld (%s): %s\n",
                static_cast<long long>(result.refused_step),
                std::string(CategoryName(CategoryOf(result.refusal))).c_str(),
                std::string(result.refusal.message()).c_str());
  }
  std::printf("\n");
  return result.refusal.ok();
}

// Runs one configuration and prints its log. Returns false when the
// configuration or a step was refused.
bool RunAndPrint(const PolicyConfig& config, const Scenario& scenario,
                 bool quiet) {
  std::printf("== %s ==\n", ConfigText(config).c_str());
  if (scenario.query_heads.value_or(1) != 1 ||
      scenario.kv_heads.value_or(1) != 1) {
    return RunSetsAndPrint(config, scenario, quiet);
  }
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) {
    std::printf("refused (%s): %s\n\n",
                std::string(CategoryName(CategoryOf(policy.status()))).c_str(),
                std::string(policy.status().message()).c_str());
    return false;
  }
  const RunResult result = RunScenario(**policy, scenario);
  uint64_t next = 0;
  size_t evicted = 0;
  for (size_t i = 0; i < result.steps.size(); ++i) {
    const ScenarioStep& step = scenario.steps[i];
    const StepRecord& record = result.steps[i];
    evicted += record.victims.size();
    if (!quiet) {
      const std::string admitted =
          step.admit == 1 ? absl::StrFormat("%d", next)
                          : absl::StrFormat("%d..%d", next,
                                            next + step.admit - 1);
      std::printf("step %3zu  admit %-9s  %-12s  query@%-4u  evict %-14s  "
                  "kept %u\n",
                  i, admitted.c_str(),
                  step.attention.has_value() ? "attention" : "null",
                  record.query_cache_position,
                  Positions(record.victims).c_str(), record.kept_count);
    }
    next += step.admit;
  }
  std::printf("kept at the end: %s\n", Positions((*policy)->kept()).c_str());
  std::printf("%zu steps, %llu positions admitted, %zu evicted, %zu bytes of "
              "policy state\n",
              result.steps.size(), static_cast<unsigned long long>(next),
              evicted, (*policy)->MemoryBytes());
  if (!result.refusal.ok()) {
    std::printf("refused at step %lld (%s): %s\n",
                static_cast<long long>(result.refused_step),
                std::string(CategoryName(CategoryOf(result.refusal))).c_str(),
                std::string(result.refusal.message()).c_str());
  }
  std::printf("\n");
  return result.refusal.ok();
}

// Streams the canonical trace through one configuration and prints a
// summary line.
bool RunTraceAndPrint(const PolicyConfig& config, uint32_t steps) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) {
    std::printf("%-40s refused (%s): %s\n", ConfigText(config).c_str(),
                std::string(CategoryName(CategoryOf(policy.status()))).c_str(),
                std::string(policy.status().message()).c_str());
    return false;
  }
  TraceConfig trace;
  trace.steps = steps;
  uint64_t evicted = 0;
  size_t peak_bytes = 0;
  const absl::Status status = RunTrace(
      **policy, trace,
      [&](uint32_t, absl::Span<const Position> victims, const EvictionDetail&) {
        evicted += victims.size();
        peak_bytes = std::max(peak_bytes, (*policy)->MemoryBytes());
      });
  if (!status.ok()) {
    std::printf("%-40s refused: %s\n", ConfigText(config).c_str(),
                std::string(status.message()).c_str());
    return false;
  }
  std::printf("%-40s %u steps, %llu evicted, %zu kept, at most %zu bytes of "
              "policy state after a step\n",
              ConfigText(config).c_str(), steps,
              static_cast<unsigned long long>(evicted), (*policy)->kept().size(),
              peak_bytes);
  return true;
}

int Main() {
  if (absl::GetFlag(FLAGS_list)) {
    ListPolicies();
    return 0;
  }
  if (const std::string path = absl::GetFlag(FLAGS_write_sample);
      !path.empty()) {
    std::ofstream out(path, std::ios::binary);
    if (!out || !ToProto(SampleScenario()).SerializeToOstream(&out)) {
      std::fprintf(stderr, "--write_sample: cannot write '%s'\n", path.c_str());
      return 1;
    }
    return 0;
  }
  const uint32_t trace_steps = absl::GetFlag(FLAGS_trace_steps);
  if (const std::string path = absl::GetFlag(FLAGS_write_trace); !path.empty()) {
    TraceConfig config;
    config.steps = trace_steps;
    absl::StatusOr<TraceGenerator> trace = TraceGenerator::Create(config);
    if (!trace.ok()) {
      std::fprintf(stderr, "--write_trace needs --trace_steps >= 1: %s\n",
                   std::string(trace.status().message()).c_str());
      return 2;
    }
    Scenario expanded;
    expanded.id = absl::StrFormat("canonical-%d-expanded", trace_steps);
    while (trace->Advance()) expanded.steps.push_back({1, trace->Row()});
    std::ofstream out(path, std::ios::binary);
    if (!out || !ToProto(expanded).SerializeToOstream(&out)) {
      std::fprintf(stderr, "--write_trace: cannot write '%s'\n", path.c_str());
      return 1;
    }
    return 0;
  }
  absl::StatusOr<Scenario> scenario = LoadScenario(absl::GetFlag(FLAGS_scenario));
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", std::string(scenario.status().message()).c_str());
    return 2;
  }
  std::string preset_name;
  absl::StatusOr<std::vector<Parameter>> params =
      ParseParams(absl::GetFlag(FLAGS_params), preset_name);
  if (!params.ok()) {
    std::fprintf(stderr, "%s\n", std::string(params.status().message()).c_str());
    return 2;
  }

  std::vector<PolicyConfig> configs;
  const std::string name = absl::GetFlag(FLAGS_policy);
  if (name.empty()) {
    if (!params->empty()) {
      std::fprintf(stderr, "--params needs --policy\n");
      return 2;
    }
    configs = SampleConfigs();
  } else {
    configs.push_back({name, *params});
    if (!preset_name.empty()) {
      absl::StatusOr<PolicyConfig> expanded =
          ExpandPreset(configs.back(), preset_name);
      if (!expanded.ok()) {
        std::fprintf(stderr, "--params: %s\n",
                     std::string(expanded.status().message()).c_str());
        return 2;
      }
      configs.back() = *std::move(expanded);
    }
  }
  if (trace_steps > 0) {
    std::printf("kvspec reference, spec %s; canonical trace, %u steps\n",
                kSpecVersion, trace_steps);
    bool all_ok = true;
    for (PolicyConfig& config : configs) {
      config.seed = absl::GetFlag(FLAGS_seed);
      if (name.empty()) {
        // The sample budgets are too small for a trace: use the defaults.
        // full keeps every position, so a long trace would cost O(steps^2).
        if (config.name == "full") {
          std::printf("%-40s skipped: keeps every position (ask with "
                      "--policy=full)\n", "full");
          continue;
        }
        config.parameters.clear();
      }
      all_ok &= RunTraceAndPrint(config, trace_steps);
    }
    return all_ok ? 0 : 1;
  }
  std::printf("kvspec reference, spec %s; scenario '%s': %zu steps\n\n",
              kSpecVersion, scenario->id.c_str(), scenario->steps.size());
  bool all_ok = true;
  for (PolicyConfig& config : configs) {
    config.seed = absl::GetFlag(FLAGS_seed);
    all_ok &= RunAndPrint(config, *scenario, absl::GetFlag(FLAGS_quiet));
  }
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs kvspec's reference policies over a scenario and prints what each "
      "step admits, evicts and keeps.\n"
      "  simulate                      every policy on the sample scenario\n"
      "  simulate --policy=NAME [--params=k=v,...] [--scenario=FILE]\n"
      "  simulate --list               policies, parameters, defaults");
  absl::ParseCommandLine(argc, argv);
  return kvspec::Main();
}
