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
    absl::StatusOr<PolicyConfig> config =
        ExpandPreset({preset.policy, {}}, preset.name);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(MakePolicy(*config).ok())
        << preset.policy << ":" << preset.name << " "
        << MakePolicy(*config).status();
    if (preset.name == "kvpress-0.5.5") {
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

TEST(Presets, AnUnknownPresetIsRefusedByName) {
  const absl::StatusOr<PolicyConfig> config =
      ExpandPreset({"window", {}}, "kvpress-0.5.5");
  EXPECT_EQ(CategoryOf(config.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(config.status().message().find("window"), std::string::npos);
}

}  // namespace
}  // namespace kvspec
