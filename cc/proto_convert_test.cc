#include "cc/proto_convert.h"

#include "cc/errors.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

TEST(ProtoConvert, ScenarioRoundTripsKeepingNullApartFromEmpty) {
  Scenario scenario;
  scenario.id = "tiny";
  scenario.steps.push_back({2, std::vector<float>{}});
  scenario.steps.push_back({1, std::nullopt});
  scenario.steps.push_back({1, std::vector<float>{0.1f, 1e-45f, 0.0f}});
  const v1::Scenario proto = ToProto(scenario);
  EXPECT_TRUE(proto.steps(0).has_attention());
  EXPECT_FALSE(proto.steps(1).has_attention());

  // Through bytes, as across a process boundary.
  v1::Scenario parsed;
  ASSERT_TRUE(parsed.ParseFromString(proto.SerializeAsString()));
  const Scenario back = FromProto(parsed);
  EXPECT_EQ(back.id, "tiny");
  ASSERT_EQ(back.steps.size(), 3u);
  EXPECT_EQ(back.steps[0].admit, 2u);
  EXPECT_EQ(back.steps[0].attention, std::vector<float>{});
  EXPECT_EQ(back.steps[1].attention, std::nullopt);
  EXPECT_EQ(back.steps[2].attention,
            (std::vector<float>{0.1f, 1e-45f, 0.0f}));
}

TEST(ProtoConvert, PolicyConfigRoundTrips) {
  const PolicyConfig config{"streamingllm", {{"budget", 8}, {"sinks", -3}},
                            0xffffffffffffffffULL};
  const PolicyConfig back = FromProto(ToProto(config));
  EXPECT_EQ(back.name, "streamingllm");
  ASSERT_EQ(back.parameters.size(), 2u);
  EXPECT_EQ(back.parameters[1].name, "sinks");
  EXPECT_EQ(back.parameters[1].value, -3);
  EXPECT_EQ(back.seed, 0xffffffffffffffffULL);
}

TEST(ProtoConvert, EvictionLogCarriesStepsAndRejectionCategory) {
  RunResult result;
  result.steps.push_back({{0, 1}, 3, 2});
  result.refusal =
      Refuse(ErrorCategory::kAttentionValue, {"value", {"heads"}}, "bad");
  result.refused_step = 1;
  const v1::EvictionLog log = ToProto(result);
  ASSERT_EQ(log.steps_size(), 1);
  EXPECT_EQ(log.steps(0).victims_size(), 2);
  EXPECT_EQ(log.steps(0).kept_count(), 3u);
  EXPECT_EQ(log.steps(0).query_cache_position(), 2u);
  EXPECT_TRUE(log.has_rejection());
  EXPECT_EQ(log.rejection().category(), v1::ATTENTION_VALUE);
  EXPECT_EQ(log.rejection().step(), 1);
  EXPECT_EQ(log.rejection().subject().check(), "value");
  ASSERT_EQ(log.rejection().subject().names_size(), 1);
  EXPECT_EQ(log.rejection().subject().names(0), "heads");
  // And back.
  const RunResult back = FromProto(log);
  EXPECT_EQ(SubjectOf(back.refusal), (Subject{"value", {"heads"}}));
  EXPECT_EQ(CategoryOf(back.refusal), ErrorCategory::kAttentionValue);
}

TEST(ProtoConvert, CleanRunHasNoRejection) {
  RunResult result;
  result.steps.push_back({{}, 1, 0});
  EXPECT_FALSE(ToProto(result).has_rejection());
}

}  // namespace
}  // namespace kvspec
