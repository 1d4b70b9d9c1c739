#include "tools/simulate/sample_scenario.h"

namespace kvspec {
namespace {

// Half the mass on position 0, the rest shared equally: float arithmetic
// only, so every platform builds the same bits (spec/arithmetic.md).
std::vector<float> SinkRow(uint32_t length) {
  std::vector<float> row(length, 0.0f);
  if (length == 0) return row;
  if (length == 1) {
    row[0] = 1.0f;
    return row;
  }
  row[0] = 0.5f;
  const float share = 0.5f / static_cast<float>(length - 1);
  for (uint32_t i = 1; i < length; ++i) row[i] = share;
  return row;
}

}  // namespace

Scenario SampleScenario() {
  Scenario scenario;
  scenario.id = "sample";
  uint32_t admitted = 0;
  auto add = [&](uint32_t admit, bool with_attention) {
    ScenarioStep step;
    step.admit = admit;
    if (with_attention) step.attention = SinkRow(admitted);
    scenario.steps.push_back(std::move(step));
    admitted += admit;
  };
  add(10, /*with_attention=*/false);  // prefill chunk
  for (int i = 0; i < 6; ++i) add(1, true);
  add(3, true);                       // a chunk crossing capacity
  for (int i = 0; i < 4; ++i) add(1, /*with_attention=*/i != 0);
  return scenario;
}

std::vector<PolicyConfig> SampleConfigs() {
  return {
      {"full", {}},
      {"window", {{"budget", 8}}},
      {"streamingllm", {{"budget", 8}, {"sinks", 2}}},
      {"h2o", {{"budget", 8}, {"recent_window", 2}}},
      {"tova", {{"budget", 8}, {"recent_window", 2}}},
      {"snapkv",
       {{"budget", 8}, {"recent_window", 2}, {"obs_window", 4},
        {"pool_kernel", 3}}},
      {"random", {{"budget", 8}, {"recent_window", 2}}},
  };
}

}  // namespace kvspec
