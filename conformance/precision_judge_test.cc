// spec/protocol.md#precision, worked by hand on one h2o step: budget 2,
// recent_window 1; two positions admitted without attention, then one with
// the row (w0, w1). Position 2 is protected; 0 and 1 are ranked by w0, w1
// and the lower goes. The port's log is the reference's, edited.
#include "conformance/precision_judge.h"

#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace conformance {
namespace {

constexpr PortPrecision kBf16{Precision::kBfloat16, Precision::kBinary32};
constexpr PortPrecision kF32{Precision::kBinary32, Precision::kBinary32};

struct Fixture {
  v1::Case vector;
  v1::Scenario scenario;
  vectors::LoadedCase loaded() const { return {&vector, &scenario, "test.pb"}; }
};

Fixture Make(float w0, float w1) {
  Scenario s;
  s.id = "s";
  ScenarioStep first;
  first.admit = 2;
  s.steps.push_back(first);
  ScenarioStep second;
  second.attention = std::vector<float>{w0, w1};
  s.steps.push_back(second);
  const PolicyConfig config{"h2o", {{"budget", 2}, {"recent_window", 1}}, 0};
  Fixture f;
  f.scenario = ToProto(s);
  *f.vector.mutable_policy() = ToProto(config);
  f.vector.set_id("t/t/t");
  f.vector.set_score_terms(1);  // one row (spec/arithmetic.md#score-terms)
  *f.vector.mutable_expected() = ToProto(RunScenario(config, s, RunOptions{true}));
  return f;
}

TEST(PrecisionJudge, ReferenceEvictsTheLowerWeight) {
  const Fixture f = Make(0.3f, 0.30001f);
  const v1::StepResult& step = f.vector.expected().steps(1);
  ASSERT_EQ(step.victims_size(), 1);
  EXPECT_EQ(step.victims(0), 0u);
  ASSERT_EQ(step.cut_size(), 2);  // the victim, then the one candidate left
  EXPECT_EQ(step.cut(1).position(), 1u);
}

// 0.3 and 0.30001 are 3.3e-5 apart, relatively: inside bfloat16's band
// (about 2^-8 = 0.0039 per score), outside binary32's (about 6 x 2^-24).
TEST(PrecisionJudge, ExchangeInsideTheBandIsWithinPrecision) {
  const Fixture f = Make(0.3f, 0.30001f);
  v1::EvictionLog port = f.vector.expected();
  v1::StepResult* step = port.mutable_steps(1);
  step->set_victims(0, 1);
  step->mutable_cut(0)->set_position(1);
  step->mutable_cut(1)->set_position(0);
  PrecisionJudgement j = JudgeWithinPrecision(f.loaded(), port, kBf16, true);
  EXPECT_EQ(j.verdict, PrecisionVerdict::kWithin) << j.detail;
  EXPECT_EQ(j.step, 1);
  EXPECT_NE(j.detail.find("evicts 1"), std::string::npos) << j.detail;
  j = JudgeWithinPrecision(f.loaded(), port, kF32, true);
  EXPECT_EQ(j.verdict, PrecisionVerdict::kMismatch) << j.detail;
}

TEST(PrecisionJudge, ExchangeOutsideTheBandIsAMismatch) {
  const Fixture f = Make(0.1f, 0.9f);
  v1::EvictionLog port = f.vector.expected();
  port.mutable_steps(1)->set_victims(0, 1);
  const PrecisionJudgement j = JudgeWithinPrecision(f.loaded(), port, kBf16, false);
  EXPECT_EQ(j.verdict, PrecisionVerdict::kMismatch);
  EXPECT_NE(j.detail.find("cannot rank"), std::string::npos) << j.detail;
}

TEST(PrecisionJudge, EvictingAProtectedPositionIsAMismatch) {
  const Fixture f = Make(0.3f, 0.30001f);
  v1::EvictionLog port = f.vector.expected();
  port.mutable_steps(1)->set_victims(0, 2);  // the recent window's
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, false).verdict,
            PrecisionVerdict::kMismatch);
}

// Cut scores: 0.3 x (1 + 2^-20) is inside bfloat16's bound and outside
// binary32's (about 3.6e-7), and still below 0.30001; 0.3 x 1.1 is outside
// both.
TEST(PrecisionJudge, CutScoresWithinTheBoundPass) {
  const Fixture f = Make(0.3f, 0.30001f);
  v1::EvictionLog port = f.vector.expected();
  v1::RankedPosition* victim = port.mutable_steps(1)->mutable_cut(0);
  const double s = victim->score();
  victim->set_score(s * (1 + 0x1p-20));
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, true).verdict,
            PrecisionVerdict::kPass);
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kF32, true).verdict,
            PrecisionVerdict::kMismatch);
  victim->set_score(s * (1 - 0x1p-20));  // below, as far
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, true).verdict,
            PrecisionVerdict::kPass);
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kF32, true).verdict,
            PrecisionVerdict::kMismatch);
  victim->set_score(s * 1.1);
  const PrecisionJudgement j = JudgeWithinPrecision(f.loaded(), port, kBf16, true);
  EXPECT_EQ(j.verdict, PrecisionVerdict::kMismatch);
  EXPECT_NE(j.detail.find("cut rank 0"), std::string::npos) << j.detail;
  // Equal port scores must be in ascending position order.
  victim->set_score(s);
  v1::RankedPosition* next = port.mutable_steps(1)->mutable_cut(1);
  next->set_score(s);
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, true).verdict,
            PrecisionVerdict::kPass);
  victim->set_position(1);
  next->set_position(0);
  const PrecisionJudgement order = JudgeWithinPrecision(f.loaded(), port, kBf16, true);
  EXPECT_EQ(order.verdict, PrecisionVerdict::kMismatch);
  EXPECT_NE(order.detail.find("rank order"), std::string::npos) << order.detail;
  // Without cuts (--nocut) the scores are not judged.
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, false).verdict,
            PrecisionVerdict::kPass);
}

// 0.25 and 0.5 are exact in bfloat16 and sum exactly: judged bit for bit
// (spec/arithmetic.md#exact-cases).
TEST(PrecisionJudge, ExactCasesAreLeftToTheExactComparison) {
  const Fixture f = Make(0.25f, 0.5f);
  v1::EvictionLog port = f.vector.expected();
  port.mutable_steps(1)->set_victims(0, 1);
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, true).verdict,
            PrecisionVerdict::kExact);
}

// snapkv with blocks of 2 (budget 4, recent_window 2): four positions, then
// two more with the row (0.1, 0.1, 0.1, 0.1000001): the block 0..1 scores
// 0.2, the block 2..3 about 0.2000001, and 0..1 goes. Evicting 2..3 instead
// is an exchange inside bfloat16's band; evicting position 2 alone is one
// position where the reference evicts two: a mismatch.
TEST(PrecisionJudge, APartialBlockIsNotAnExchange) {
  Scenario s;
  ScenarioStep four;
  four.admit = 4;
  s.steps.push_back(four);
  ScenarioStep two;
  two.admit = 2;
  two.attention = std::vector<float>{0.1f, 0.1f, 0.1f, 0.1000001f};
  s.steps.push_back(two);
  const PolicyConfig config{"snapkv", {{"budget", 4}, {"recent_window", 2}, {"block", 2},
                                       {"pool_kernel", 1}, {"obs_window", 2}}, 0};
  v1::Case vector;
  const v1::Scenario scenario = ToProto(s);
  *vector.mutable_policy() = ToProto(config);
  vector.set_score_terms(1);
  *vector.mutable_expected() = ToProto(RunScenario(config, s, RunOptions{true}));
  ASSERT_EQ(vector.expected().steps(1).victims_size(), 2);
  EXPECT_EQ(vector.expected().steps(1).victims(0), 0u);
  const vectors::LoadedCase loaded{&vector, &scenario, "test.pb"};
  v1::EvictionLog port = vector.expected();
  port.mutable_steps(1)->clear_victims();
  port.mutable_steps(1)->add_victims(2);
  port.mutable_steps(1)->add_victims(3);
  EXPECT_EQ(JudgeWithinPrecision(loaded, port, kBf16, false).verdict,
            PrecisionVerdict::kWithin);
  port.mutable_steps(1)->clear_victims();
  port.mutable_steps(1)->add_victims(2);
  EXPECT_EQ(JudgeWithinPrecision(loaded, port, kBf16, false).verdict,
            PrecisionVerdict::kMismatch);
}

// spec/arithmetic.md#range: 3e38 and 3.2e38 sum past binary32's largest
// finite number (about 3.4e38), so a port of bfloat16 into binary32 may
// overflow: an exchange far outside the band is still within precision.
TEST(PrecisionJudge, ACaseOutOfRangeIsWithinPrecision) {
  const Fixture f = Make(3.0e38f, 3.2e38f);
  v1::EvictionLog port = f.vector.expected();
  port.mutable_steps(1)->set_victims(0, 1);
  const PrecisionJudgement j = JudgeWithinPrecision(f.loaded(), port, kBf16, false);
  EXPECT_EQ(j.verdict, PrecisionVerdict::kWithin);
  EXPECT_NE(j.detail.find("overflow"), std::string::npos) << j.detail;
  // binary64 accumulates them without overflow: a mismatch.
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, PortPrecision{}, false).verdict,
            PrecisionVerdict::kMismatch);
}

// spec/heads.md#head-adaptive-budgets, by hand: two sets (2 query heads, 2
// KV heads), budget 3, recent_window 1, adaptive: three positions, then a
// fourth with one row per head over 0..2, so the layer keeps 6 of 8.
// Candidates 0..2 score their weight: set 0 {0.1, 0.5, 0.9}, set 1
// {0.5000001, 0.6, 0.9}; (0,1) and (1,0) are 2e-7 apart relatively,
// inside bfloat16's band.
//   floor 1 (safeguard 334): the walk evicts (0,0), (0,1); a port that
//     evicts (1,0) instead of (0,1) keeps 3 in each set: within precision.
//   floor 3 (safeguard 1000): (0,1) would leave set 0 two positions, so the
//     walk evicts (0,0), (1,0); a port that evicts (0,1) instead of (1,0)
//     exchanges inside the band but leaves set 0 below the floor: a
//     mismatch, which only the floor check catches.
TEST(PrecisionJudge, AJointExchangeMustKeepEachSetsFloor) {
  for (const int64_t safeguard : {334, 1000}) {
    Scenario s;
    s.query_heads = 2;
    s.kv_heads = 2;
    ScenarioStep three;
    three.admit = 3;
    s.steps.push_back(three);
    ScenarioStep rows;
    rows.admit = 1;
    rows.heads = {{0.1f, 0.5f, 0.9f}, {0.5000001f, 0.6f, 0.9f}};
    s.steps.push_back(rows);
    const PolicyConfig config{"h2o", {{"budget", 3}, {"recent_window", 1}, {"granularity", 1},
                                      {"adaptive", 1}, {"safeguard_permille", safeguard}}, 0};
    v1::Case vector;
    const v1::Scenario scenario = ToProto(s);
    *vector.mutable_policy() = ToProto(config);
    vector.set_score_terms(2);
    *vector.mutable_expected() = ToProto(RunScenario(config, s, RunOptions{true}));
    ASSERT_EQ(vector.expected().steps_size(), 2) << vector.expected().DebugString();
    const v1::StepResult& step = vector.expected().steps(1);
    ASSERT_EQ(step.sets_size(), 2);
    const auto victims = [&step](int set) {
      return std::vector<uint32_t>(step.sets(set).victims().begin(),
                                   step.sets(set).victims().end());
    };
    const vectors::LoadedCase loaded{&vector, &scenario, "test.pb"};
    v1::EvictionLog port = vector.expected();
    v1::StepResult* set0 = port.mutable_steps(1)->mutable_sets(0);
    v1::StepResult* set1 = port.mutable_steps(1)->mutable_sets(1);
    set0->clear_victims();
    set1->clear_victims();
    if (safeguard == 334) {
      ASSERT_EQ(victims(0), (std::vector<uint32_t>{0, 1}));
      ASSERT_EQ(victims(1), std::vector<uint32_t>{});
      set0->add_victims(0);
      set0->set_kept_count(3);
      set1->add_victims(0);
      set1->set_kept_count(3);
      const PrecisionJudgement j = JudgeWithinPrecision(loaded, port, kBf16, false);
      EXPECT_EQ(j.verdict, PrecisionVerdict::kWithin) << j.detail;
    } else {
      ASSERT_EQ(victims(0), std::vector<uint32_t>{0});
      ASSERT_EQ(victims(1), std::vector<uint32_t>{0});
      set0->add_victims(0);
      set0->add_victims(1);
      set0->set_kept_count(2);
      set1->set_kept_count(4);
      const PrecisionJudgement j = JudgeWithinPrecision(loaded, port, kBf16, false);
      EXPECT_EQ(j.verdict, PrecisionVerdict::kMismatch) << j.detail;
      EXPECT_NE(j.detail.find("below the floor 3"), std::string::npos) << j.detail;
    }
  }
}

TEST(PrecisionJudge, OtherDifferencesAreMismatches) {
  const Fixture f = Make(0.3f, 0.30001f);
  v1::EvictionLog port = f.vector.expected();
  port.mutable_steps(1)->set_query_cache_position(7);
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, true).verdict,
            PrecisionVerdict::kMismatch);
  port = f.vector.expected();
  port.mutable_steps(1)->add_victims(1);  // two victims, not an exchange
  EXPECT_EQ(JudgeWithinPrecision(f.loaded(), port, kBf16, false).verdict,
            PrecisionVerdict::kMismatch);
}

}  // namespace
}  // namespace conformance
}  // namespace kvspec
