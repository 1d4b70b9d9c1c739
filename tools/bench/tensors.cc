#include "tools/bench/tensors.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"
#include "cc/rng.h"
#include "tools/bench/timing.h"

namespace kvspec {
namespace bench {
namespace {

// A tensor entry in (-1, 1), a multiple of 2^-10 (the vectors' drawn
// entries, tools/vectors/case_builder.h's DrawnEntry).
float Entry(Rng& rng) {
  return static_cast<float>(static_cast<int64_t>(rng.Uniform(2047)) - 1023) / 1024.0f;
}

std::string ParametersText(const PolicyConfig& config) {
  std::vector<std::string> parts;
  for (const Parameter& p : config.parameters) {
    parts.push_back(absl::StrFormat("%s %d", p.name, p.value));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

absl::StatusOr<std::vector<TensorRun>> MeasureTensors(const TensorsConfig& c,
                                                      int repetitions) {
  const int64_t budget = c.budget;
  const std::vector<PolicyConfig> plan = {
      {"knorm", {{"budget", budget}}},
      {"keydiff", {{"budget", budget}}},
      {"lagkv", {{"budget", budget}}},
      {"lagkv", {{"budget", budget}, {"lag", 16}}},
  };
  // One key and one value per step, d entries each, from the Rng.
  const size_t d = c.head_dim;
  Rng rng(c.seed);
  std::vector<float> keys(size_t{c.steps} * d), values(size_t{c.steps} * d);
  for (float& k : keys) k = Entry(rng);
  for (float& v : values) v = Entry(rng);
  auto input = [&](uint32_t t) {
    StepInput in{t, 1, std::nullopt};
    in.keys = absl::MakeConstSpan(keys).subspan(size_t{t} * d, d);
    in.key_heads = 1;
    in.head_dim = c.head_dim;
    in.values = absl::MakeConstSpan(values).subspan(size_t{t} * d, d);
    in.value_dim = c.head_dim;
    return in;
  };
  const double measured = static_cast<double>(c.steps - c.from);
  std::vector<TensorRun> runs;
  for (const PolicyConfig& config : plan) {
    std::fprintf(stderr, "tensors: %s %s\n", config.name.c_str(),
                 ParametersText(config).c_str());
    TensorRun run;
    run.policy = config;
    std::vector<double> policy_ns, touch_ns;
    for (int r = 0; r < repetitions; ++r) {
      absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
      if (!policy.ok()) return policy.status();
      size_t evicted = 0;
      for (uint32_t t = 0; t < c.from; ++t) {
        absl::StatusOr<std::vector<Position>> victims = (*policy)->Step(input(t));
        if (!victims.ok()) return victims.status();
      }
      auto start = std::chrono::steady_clock::now();
      for (uint32_t t = c.from; t < c.steps; ++t) {
        absl::StatusOr<std::vector<Position>> victims = (*policy)->Step(input(t));
        if (!victims.ok()) return victims.status();
        evicted += victims->size();
      }
      policy_ns.push_back(Seconds(start) * 1e9 / measured);
      run.peak_memory_bytes = std::max(run.peak_memory_bytes, (*policy)->MemoryBytes());
      // The touch loop: the step's key and value and a buffer the size of
      // the policy's state, read once and folded into a checksum.
      const size_t words = (run.peak_memory_bytes + 7) / 8;
      std::vector<uint64_t> buffer(words);
      for (size_t i = 0; i < words; ++i) buffer[i] = i * 0x9e3779b97f4a7c15u;
      uint64_t checksum = 0;
      start = std::chrono::steady_clock::now();
      for (uint32_t t = c.from; t < c.steps; ++t) {
        const StepInput in = input(t);
        uint64_t sum = 0;
        for (const absl::Span<const float>& tensor : {*in.keys, *in.values}) {
          for (float x : tensor) {
            uint32_t bits;
            std::memcpy(&bits, &x, sizeof(bits));
            sum += bits;
          }
        }
        for (uint64_t word : buffer) sum += word;
        checksum ^= sum;
      }
      touch_ns.push_back(Seconds(start) * 1e9 / measured);
      if (checksum == 1 && evicted == static_cast<size_t>(-1)) {
        std::fprintf(stderr, "unreachable\n");
      }
    }
    run.ns_per_step = Median(policy_ns);
    run.touch_ns_per_step = Median(touch_ns);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string TensorsMarkdown(const TensorsConfig& c, const std::vector<TensorRun>& runs) {
  std::string out = absl::StrFormat(
      "### Scored from keys and values: head_dim %u, budget %u\n\n"
      "One KV head, one position a step, %u steps of drawn keys and values "
      "(entries in (-1, 1), multiples of 2^-10, seed %d), measured from step "
      "%u, when every step evicts one position. Time: median of the "
      "repetitions, against a loop that reads the step's key and value and a "
      "buffer the size of the policy's peak state.\n\n"
      "| policy | parameters | peak memory (KiB) | ns/step | touch ns/step | ratio |\n"
      "| --- | --- | ---: | ---: | ---: | ---: |\n",
      c.head_dim, c.budget, c.steps, c.seed, c.from);
  for (const TensorRun& run : runs) {
    out += absl::StrFormat("| `%s` | %s | %.0f | %.0f | %.0f | %.1fx |\n",
                           run.policy.name, ParametersText(run.policy),
                           static_cast<double>(run.peak_memory_bytes) / 1024.0,
                           run.ns_per_step, run.touch_ns_per_step,
                           run.ns_per_step / run.touch_ns_per_step);
  }
  return out;
}

}  // namespace bench
}  // namespace kvspec
