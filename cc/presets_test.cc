#include "cc/presets.h"

#include "cc/errors.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

// spec/prefill.md#presets: every preset's expansion is a configuration the
// registry accepts, with and without a ratio for the kvpress presets.
TEST(Presets, EveryExpansionIsAccepted) {
  ASSERT_GE(Presets().size(), 10u);
  for (const Preset& preset : Presets()) {
    // spec/spans.md#presets: an engine preset is given the parameter it
    // derives from (a window of 8, or a budget of 8 with 4 sinks).
    std::vector<Parameter> given;
    if (preset.derive == Preset::Derive::kBudgetIsSpan ||
        preset.derive == Preset::Derive::kBudgetIsSpanMinusOne) {
      given = {{"span_window", 8}};
    } else if (preset.derive != Preset::Derive::kNothing) {
      given = {{"budget", 8}, {"sinks", 4}};
      if (preset.policy != "streamingllm") given.pop_back();
    }
    // pyramidkv.md#presets: kvpress's pyramid is refused without a ratio.
    if (preset.name == "kvpress-0.5.5-pyramidkv") given = {{"ratio_ppm", 500000}};
    absl::StatusOr<PolicyConfig> config =
        ExpandPreset({preset.policy, given}, preset.name);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(MakePolicy(*config).ok())
        << preset.policy << ":" << preset.name << " "
        << MakePolicy(*config).status();
    // simlayerkv.md#presets: SimLayerKVPress takes a threshold, no ratio.
    if (preset.name == "kvpress-0.5.5" && preset.policy == "simlayerkv") {
      absl::StatusOr<PolicyConfig> with_threshold = ExpandPreset(
          {preset.policy, {{"lazy_threshold_ppm", 900000}}}, preset.name);
      ASSERT_TRUE(with_threshold.ok());
      EXPECT_TRUE(MakePolicy(*with_threshold).ok()) << preset.policy;
    } else if (preset.name == "kvpress-0.5.5") {
      absl::StatusOr<PolicyConfig> with_ratio =
          ExpandPreset({preset.policy, {{"ratio_ppm", 500000}}}, preset.name);
      ASSERT_TRUE(with_ratio.ok());
      EXPECT_TRUE(MakePolicy(*with_ratio).ok()) << preset.policy;
    }
  }
}

TEST(Presets, GivenParametersOverrideThePreset) {
  absl::StatusOr<PolicyConfig> config = ExpandPreset(
      {"snapkv", {{"obs_window", 8}, {"ratio_ppm", 250000}}}, "kvpress-0.5.5");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(EffectiveParameter(*config, "obs_window"), 8);
  EXPECT_EQ(EffectiveParameter(*config, "ratio_ppm"), 250000);
  EXPECT_EQ(EffectiveParameter(*config, "window_reduce"), 1);
  EXPECT_EQ(EffectiveParameter(*config, "pooling"), 1);
}

// spec/spans.md#presets, each derivation worked by hand.
TEST(Presets, EnginePresetsDeriveFromTheWindow) {
  auto expand = [](const char* policy, const char* preset,
                   std::vector<Parameter> given) {
    return ExpandPreset({policy, std::move(given)}, preset);
  };
  absl::StatusOr<PolicyConfig> dynamic =
      expand("window", "hf-dynamic-5.2.0", {{"span_window", 4}});
  ASSERT_TRUE(dynamic.ok()) << dynamic.status();
  EXPECT_EQ(EffectiveParameter(*dynamic, "budget"), 3);
  EXPECT_EQ(EffectiveParameter(*dynamic, "spans"), 1);
  absl::StatusOr<PolicyConfig> chunked =
      expand("window", "hf-dynamic-5.2.0", {{"span_chunk", 8}});
  ASSERT_TRUE(chunked.ok());
  EXPECT_EQ(EffectiveParameter(*chunked, "budget"), 7);
  absl::StatusOr<PolicyConfig> fixed =
      expand("window", "hf-static-5.2.0", {{"span_window", 4}});
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(EffectiveParameter(*fixed, "budget"), 4);
  absl::StatusOr<PolicyConfig> mlx =
      expand("window", "mlx-lm-0.32.2", {{"budget", 6}});
  ASSERT_TRUE(mlx.ok());
  EXPECT_EQ(EffectiveParameter(*mlx, "span_window"), 6);
  EXPECT_EQ(EffectiveParameter(*mlx, "evict_at"), 2);
  absl::StatusOr<PolicyConfig> sinks =
      expand("streamingllm", "mlx-lm-0.32.2", {{"budget", 6}, {"sinks", 2}});
  ASSERT_TRUE(sinks.ok());
  EXPECT_EQ(EffectiveParameter(*sinks, "span_window"), 4);
  // A window of 1 would keep 0 positions: refused, as transformers' own
  // layer misbehaves there (it keeps everything).
  EXPECT_EQ(CategoryOf(expand("window", "hf-dynamic-5.2.0",
                              {{"span_window", 1}}).status()),
            ErrorCategory::kInvalidParameter);
  EXPECT_EQ(CategoryOf(expand("window", "hf-static-5.2.0", {}).status()),
            ErrorCategory::kInvalidParameter);
  EXPECT_EQ(CategoryOf(expand("streamingllm", "mlx-lm-0.32.2",
                              {{"budget", 6}}).status()),
            ErrorCategory::kInvalidParameter);
}

TEST(Presets, AnUnknownPresetIsRefusedByName) {
  const absl::StatusOr<PolicyConfig> config =
      ExpandPreset({"window", {}}, "kvpress-0.5.5");
  EXPECT_EQ(CategoryOf(config.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(config.status().message().find("window"), std::string::npos);
}

// An unknown policy is refused as such, before its preset is looked for:
// "foo: unknown preset" would suggest a policy foo exists.
TEST(Presets, AnUnknownPolicyIsSaidBeforeItsPreset) {
  const absl::StatusOr<PolicyConfig> config = ExpandPreset({"foo", {}}, "bar");
  EXPECT_EQ(CategoryOf(config.status()), ErrorCategory::kUnknownPolicy);
  EXPECT_NE(config.status().message().find("unknown policy 'foo'"), std::string::npos)
      << config.status().message();
  EXPECT_EQ(config.status().message().find("preset"), std::string::npos)
      << config.status().message();
}

}  // namespace
}  // namespace kvspec
