#include "tools/census/combinations.h"

#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace audit {
namespace {

TEST(Combinations, EachFeatureAlonePairedAndWithEachProperty) {
  EXPECT_EQ(Combinations({"a", "b"}, {"p"}),
            (std::vector<std::string>{"a", "a + b", "a + p", "b", "b + p"}));
  EXPECT_TRUE(Combinations({}, {"p"}).empty());
}

TEST(Properties, PrefillAfterDecodeDecodeAfterPrefillHeadsAndRatio) {
  v1::Scenario scenario;
  scenario.set_query_heads(2);
  scenario.add_steps()->set_admit(1);                     // decode
  scenario.add_steps()->add_queries()->add_weights(1.0f);  // prefill after it
  scenario.add_steps()->set_admit(1);                     // decode after prefill
  v1::PolicyConfig policy;
  policy.set_name("h2o");
  v1::Parameter* ratio = policy.add_parameters();
  ratio->set_name("ratio_ppm");
  ratio->set_value(500000);
  EXPECT_EQ(Properties(policy, scenario),
            (std::vector<std::string>{"several-heads", "cache-before-prefill",
                                      "decode-after-prefill", "ratio"}));
  v1::Scenario first_prefill;
  first_prefill.add_steps()->add_queries()->add_weights(1.0f);
  ratio->set_value(0);
  EXPECT_TRUE(Properties(policy, first_prefill).empty());
}

// Two heads whose rows both score position 0 at 1.0: h2o budget 1 evicts the
// new position 1 in each set. A port without `heads` drops the rows (and
// the head counts), sees null attention, ties 0 and 1 at +0.0 and evicts 0:
// the case decides `heads`. Its configuration gives only decode's
// parameters, so a port without `decode` refuses them: it decides `decode`.
TEST(DecidedFeatures, HeadsDecideWhenDroppingTheirRowsChangesVictims) {
  v1::PolicyConfig policy;
  policy.set_name("h2o");
  for (const auto& [name, value] : {std::pair<const char*, int>{"budget", 1},
                                    {"recent_window", 0}}) {
    v1::Parameter* p = policy.add_parameters();
    p->set_name(name);
    p->set_value(value);
  }
  v1::Scenario scenario;
  scenario.set_query_heads(2);
  scenario.set_kv_heads(2);
  scenario.add_steps()->set_admit(1);
  v1::Step* step = scenario.add_steps();
  step->set_admit(1);
  step->add_heads()->add_weights(1.0f);
  step->add_heads()->add_weights(1.0f);
  const v1::EvictionLog expected = ToProto(
      RunScenario(FromProto(policy), FromProto(scenario), RunOptions{/*record_cut=*/true}));
  ASSERT_EQ(expected.steps_size(), 2);
  ASSERT_EQ(expected.steps(1).sets_size(), 2);
  EXPECT_EQ(expected.steps(1).sets(0).victims(0), 1u);
  EXPECT_EQ(DecidedFeatures(policy, scenario, expected),
            (std::vector<std::string>{"decode", "heads"}));
}

// window, budget 2, context_shift 0 given explicitly, three decode steps:
// step 2 evicts 0. Without `contextshift`'s parameter the policy takes
// context_shift's default, 0, and logs the same: the feature does not
// decide the case (a port lacking it would refuse the name, which is not
// counted). Without `decode`'s parameters the budget is the default,
// 4294967295, and nothing is evicted: `decode` decides it.
TEST(DecidedFeatures, AFeatureParameterAtItsDefaultDecidesNothing) {
  v1::PolicyConfig policy;
  policy.set_name("window");
  for (const auto& [name, value] : {std::pair<const char*, int>{"budget", 2},
                                    {"context_shift", 0}}) {
    v1::Parameter* p = policy.add_parameters();
    p->set_name(name);
    p->set_value(value);
  }
  v1::Scenario scenario;
  for (int i = 0; i < 3; ++i) scenario.add_steps()->set_admit(1);
  const v1::EvictionLog expected = ToProto(
      RunScenario(FromProto(policy), FromProto(scenario), RunOptions{/*record_cut=*/true}));
  ASSERT_EQ(expected.steps_size(), 3);
  ASSERT_EQ(expected.steps(2).victims_size(), 1);
  EXPECT_EQ(expected.steps(2).victims(0), 0u);
  EXPECT_EQ(DecidedFeatures(policy, scenario, expected), (std::vector<std::string>{"decode"}));
}

// A refused case decides no combination, whatever its features.
TEST(DecidesCombination, ARefusedCaseDecidesNone) {
  search::SearchCase c;
  c.policy = FromProto([] {
    v1::PolicyConfig p;
    p.set_name("window");
    v1::Parameter* budget = p.add_parameters();
    budget->set_name("budget");
    budget->set_value(0);  // below the bound: INVALID_PARAMETER
    return p;
  }());
  v1::Scenario scenario;
  scenario.add_steps()->set_admit(1);
  c.scenario = FromProto(scenario);
  ASSERT_FALSE(RunScenario(c.policy, c.scenario).refusal.ok());
  EXPECT_FALSE(DecidesCombination(c, "decode"));
}

}  // namespace
}  // namespace audit
}  // namespace kvspec
