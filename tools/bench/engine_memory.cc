#include "tools/bench/engine_memory.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/presets.h"

namespace kvspec {
namespace bench {
namespace {

struct PresetUse {
  const char* policy;
  const char* preset;
  std::vector<Parameter> given;
};

uint64_t HeldCount(const StepRecord& step) {
  uint64_t n = 0;
  for (const HeldRun& run : step.held) n += uint64_t{run.last} - run.first + 1;
  return n;
}

}  // namespace

absl::StatusOr<std::vector<EngineMemoryRun>> MeasureEngineMemory(
    uint32_t window, uint32_t prompt, uint32_t decode,
    const std::vector<uint32_t>& chunks) {
  const int64_t w = window;
  // The same span for every query in the first three (q - W + 1 .. q); the
  // sinks preset keeps 4 sinks and W - 4 recent positions in the same M.
  std::vector<PresetUse> presets = {
      {"window", "hf-dynamic-5.2.0", {{"span_window", w}}},
      {"window", "hf-static-5.2.0", {{"span_window", w}}},
      {"window", "mlx-lm-0.32.2", {{"budget", w}}}};
  // mlx-lm's --max-kv-size keeps 4 sinks (make_prompt_cache), so a cache
  // of more than 4.
  if (w > 4) {
    presets.push_back({"streamingllm", "mlx-lm-0.32.2", {{"budget", w}, {"sinks", 4}}});
  }
  std::vector<EngineMemoryRun> runs;
  for (uint32_t chunk : chunks) {
    Scenario scenario;
    for (uint32_t done = 0; done < prompt; done += chunk) {
      scenario.steps.push_back({std::min(chunk, prompt - done), std::nullopt});
    }
    for (uint32_t i = 0; i < decode; ++i) scenario.steps.push_back({1, std::nullopt});
    std::vector<std::vector<std::vector<Position>>> first_spans;
    for (const PresetUse& use : presets) {
      absl::StatusOr<PolicyConfig> config =
          ExpandPreset({use.policy, use.given}, use.preset);
      if (!config.ok()) return config.status();
      const RunResult result = RunScenario(*config, scenario);
      if (!result.refusal.ok()) return result.refusal;
      EngineMemoryRun run;
      run.preset = absl::StrFormat("%s:%s", use.policy, use.preset);
      run.chunk = chunk;
      std::vector<std::vector<std::vector<Position>>> spans;
      for (const StepRecord& step : result.steps) {
        run.peak_held = std::max(run.peak_held, HeldCount(step));
        run.peak_kept = std::max<uint64_t>(run.peak_kept, step.kept_count);
        spans.push_back(step.spans);
      }
      run.final_kept = result.steps.back().kept_count;
      if (first_spans.empty()) first_spans = spans;
      run.spans_equal = spans == first_spans;
      runs.push_back(run);
    }
  }
  return runs;
}

std::string EngineMemoryMarkdown(uint32_t window, uint32_t prompt,
                                 uint32_t decode,
                                 const std::vector<EngineMemoryRun>& runs) {
  // K and V of one position, one KV head of one layer: 2 x head_dim 128 x 2
  // bytes (bfloat16).
  constexpr uint64_t kBytes = 2 * 128 * 2;
  std::string out = absl::StrFormat(
      "## Engine memory at equal spans\n\n"
      "`bazel run -c opt //tools:bench -- --sections=engines`: a prompt of "
      "%d positions in chunks of S, then %d decode steps, window %d; each "
      "preset of spec/spans.md#presets through the reference with `spans` 1. "
      "Held: the most positions a step's queries attend over (the keys "
      "attention is given); kept: the most kept after a step (memory between "
      "steps); KiB at 512 bytes a position (K and V, head_dim 128, bfloat16) "
      "for one KV head of one layer. Same spans: every query's span equals "
      "transformers' dynamic layer's.\n\n"
      "| preset | S | peak held | peak kept | kept at the end | KiB at peak held | same spans |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
      prompt, decode, window);
  for (const EngineMemoryRun& run : runs) {
    out += absl::StrFormat("| `%s` | %d | %d | %d | %d | %d | %s |\n",
                           run.preset, run.chunk, run.peak_held, run.peak_kept,
                           run.final_kept, run.peak_held * kBytes / 1024,
                           run.spans_equal ? "yes" : "no");
  }
  return out;
}

}  // namespace bench
}  // namespace kvspec
