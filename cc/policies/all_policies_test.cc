// Rules every registered policy obeys (spec/harness.md): a refused step
// leaves the policy exactly as it was; victims are ascending and never in
// the recent window; a policy never keeps more than its budget.
#include <cmath>
#include <memory>
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/registry.h"
#include "cc/rng.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

// Small settings every policy accepts (full takes none).
PolicyConfig SmallConfig(const std::string& name) {
  if (name == "full") return {name, {}};
  if (name == "window") return {name, {{"budget", 6}}};
  if (name == "streamingllm") return {name, {{"budget", 6}, {"sinks", 2}}};
  if (name == "snapkv") {
    return {name, {{"budget", 6}, {"recent_window", 2}, {"obs_window", 3},
                   {"pool_kernel", 3}}, 9};
  }
  if (name == "openvino") {
    return {name, {{"budget", 6}, {"sinks", 1}, {"recent_window", 2},
                   {"block", 1}, {"max_pool", 2}, {"obs_window", 0}}};
  }
  if (name == "lagkv") return {name, {{"budget", 6}, {"sinks", 1}, {"lag", 2}}};
  if (name == "simlayerkv") {
    return {name, {{"n_initial", 1}, {"n_recent", 3}, {"lazy_threshold_ppm", 0}}};
  }
  return {name, {{"budget", 6}, {"recent_window", 2}}, 9};
}

std::vector<float> RandomRow(Rng& rng, size_t length) {
  std::vector<float> row(length);
  for (float& w : row) w = rng.UniformFloat();
  return row;
}

// For a policy that reads keys (spec/tensors.md): `input` with keys of one
// KV head and head_dim 2, signed entries, held in `storage`; for one that
// reads values too, the same entries as its values (value_dim 2).
StepInput WithKeys(const Policy& policy, StepInput input, Rng& rng,
                   std::vector<float>& storage) {
  if (!policy.reads_keys()) return input;
  storage = RandomRow(rng, 2 * size_t{input.count});
  for (size_t i = 0; i < storage.size(); i += 2) storage[i] = -storage[i];
  input.keys = absl::MakeConstSpan(storage);
  input.key_heads = 1;
  input.head_dim = 2;
  if (policy.reads_values()) {
    input.values = input.keys;
    input.value_dim = 2;
  }
  return input;
}

TEST(AllPolicies, ARefusedStepChangesNothing) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    auto refused = MakePolicy(SmallConfig(info.name));
    auto clean = MakePolicy(SmallConfig(info.name));
    ASSERT_TRUE(refused.ok() && clean.ok()) << info.name;
    Rng rng(3);
    Position next = 0;
    for (int step = 0; step < 40; ++step) {
      const size_t kept = (*clean)->kept().size();
      const std::vector<float> row = RandomRow(rng, kept);
      // Every kind of bad step that is bad at this point, offered to one
      // twin only.
      std::vector<float> nan_row = row;
      std::vector<float> negative_row = row;
      std::vector<float> long_row = row;
      long_row.push_back(0.5f);
      std::vector<float> keys;
      const Policy& policy = **clean;
      std::vector<StepInput> bad = {
          WithKeys(policy, {next, 0, absl::MakeConstSpan(row)}, rng, keys),
          WithKeys(policy, {next, 1, absl::MakeConstSpan(long_row)}, rng, keys),
      };
      if (next > 0) {
        bad.push_back(
            WithKeys(policy, {next - 1, 1, absl::MakeConstSpan(row)}, rng, keys));
      }
      if (!row.empty()) {
        nan_row.back() = std::nanf("");
        negative_row.front() = -0.0f;
        bad.push_back(
            WithKeys(policy, {next, 1, absl::MakeConstSpan(nan_row)}, rng, keys));
        bad.push_back(WithKeys(
            policy, {next, 1, absl::MakeConstSpan(negative_row)}, rng, keys));
      }
      // Keys of the wrong length, or with a NaN, for a policy that reads
      // them (spec/tensors.md#checks).
      std::vector<float> short_keys;
      std::vector<float> nan_keys;
      if (policy.reads_keys()) {
        StepInput short_input =
            WithKeys(policy, {next, 1, absl::MakeConstSpan(row)}, rng, short_keys);
        short_keys.pop_back();
        short_input.keys = absl::MakeConstSpan(short_keys);
        bad.push_back(short_input);
        StepInput nan_input =
            WithKeys(policy, {next, 1, absl::MakeConstSpan(row)}, rng, nan_keys);
        nan_keys[1] = std::nanf("");
        bad.push_back(nan_input);
        bad.push_back({next, 1, absl::MakeConstSpan(row)});  // no keys
      }
      const size_t memory_before = (*refused)->MemoryBytes();
      for (const StepInput& input : bad) {
        const auto result = (*refused)->Step(input);
        EXPECT_FALSE(result.ok())
            << info.name << " accepted a bad step at " << step;
      }
      const uint32_t count = step % 9 == 0 ? 3 : 1;
      const bool null_step = step % 5 == 4;
      std::vector<float> good_keys;
      const StepInput good = WithKeys(
          policy,
          {next, count,
           null_step ? std::nullopt
                     : std::optional<absl::Span<const float>>(
                           absl::MakeConstSpan(row))},
          rng, good_keys);
      EXPECT_EQ((*refused)->MemoryBytes(), memory_before);
      const auto a = (*refused)->Step(good);
      const auto b = (*clean)->Step(good);
      ASSERT_TRUE(a.ok() && b.ok()) << info.name;
      EXPECT_EQ(*a, *b) << info.name << " step " << step;
      EXPECT_EQ((*refused)->steps_done(), (*clean)->steps_done());
      next += count;
    }
  }
}

TEST(AllPolicies, VictimsAreAscendingOutsideTheRecentWindowWithinBudget) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    const PolicyConfig config = SmallConfig(info.name);
    auto policy = MakePolicy(config);
    ASSERT_TRUE(policy.ok());
    Rng rng(11);
    Position next = 0;
    for (int step = 0; step < 60; ++step) {
      const std::vector<float> row = RandomRow(rng, (*policy)->kept().size());
      const uint32_t count = 1 + static_cast<uint32_t>(rng.Uniform(3));
      std::vector<float> keys;
      const auto victims = (*policy)->Step(WithKeys(
          **policy, {next, count, absl::MakeConstSpan(row)}, rng, keys));
      ASSERT_TRUE(victims.ok()) << victims.status();
      next += count;
      for (size_t i = 1; i < victims->size(); ++i) {
        EXPECT_LT((*victims)[i - 1], (*victims)[i]) << info.name;
      }
      // full and simlayerkv (without query rows) never evict.
      if (info.name != "full" && info.name != "simlayerkv") {
        EXPECT_LE((*policy)->kept().size(), 6u) << info.name;
      }
      // recent_window 2 (or streamingllm's window of 4, lagkv's newest
      // partition of lag 2, scored 1.0): the latest two
      // admitted positions are never victims.
      for (Position victim : *victims) {
        EXPECT_LT(victim + 2, next) << info.name << " evicted " << victim;
      }
    }
  }
}

}  // namespace
}  // namespace kvspec
