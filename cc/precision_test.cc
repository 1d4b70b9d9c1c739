// The rules of spec/arithmetic.md#ports-of-lower-precision, worked by hand.
#include "cc/precision.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace kvspec {
namespace {

TEST(Precision, NamesAndUnitRoundoffs) {
  EXPECT_EQ(UnitRoundoff(Precision::kBinary64), std::ldexp(1.0, -53));
  EXPECT_EQ(UnitRoundoff(Precision::kBinary32), std::ldexp(1.0, -24));
  EXPECT_EQ(UnitRoundoff(Precision::kBfloat16), std::ldexp(1.0, -8));
  EXPECT_EQ(UnitRoundoff(Precision::kFloat16), std::ldexp(1.0, -11));
  EXPECT_EQ(SubnormalError(Precision::kFloat16), std::ldexp(1.0, -25));
  EXPECT_EQ(ParsePrecision("bfloat16"), Precision::kBfloat16);
  EXPECT_EQ(ParsePrecision("float32"), std::nullopt);  // spelled binary32
  EXPECT_EQ(PortPrecisionName({Precision::kBfloat16, Precision::kBinary32}),
            "bfloat16 (accumulate binary32)");
  EXPECT_EQ(PortPrecisionName({}), "binary64");
}

// spec/arithmetic.md#score-terms: a decode row 1, a null step 0, two heads'
// query rows (2 each) 4, two heads' totals 2, two heads' decode rows 2.
TEST(Precision, ScoreTermsCountRowsTimesKernel) {
  Scenario s;
  s.query_heads = 2;
  s.kv_heads = 2;
  ScenarioStep step;
  step.heads = {{0.5f}, {0.5f}};
  s.steps.push_back(step);  // 2
  s.steps.push_back(ScenarioStep{});  // null: 0
  ScenarioStep prefill;
  prefill.queries = {{1.0f}, {0.5f, 0.5f}, {1.0f}, {0.5f, 0.5f}};
  s.steps.push_back(prefill);  // 4
  ScenarioStep totals = prefill;
  totals.totals = {{1.0, 1.0}, {1.0, 1.0}};
  totals.total_rows = 2;
  s.steps.push_back(totals);  // 2: the totals, not the rows
  EXPECT_EQ(ScoreTerms(PolicyConfig{"h2o", {}, 0}, s), 8u);
  EXPECT_EQ(ScoreTerms(PolicyConfig{"snapkv", {{"pool_kernel", 3}}, 0}, s), 24u);
  EXPECT_EQ(ScoreTerms(PolicyConfig{"snapkv", {{"pool_kernel", 3}, {"block", 2}}, 0}, s), 48u);
  EXPECT_EQ(ScoreTerms(PolicyConfig{"h2o", {{"budget", -1}}, 0}, s), 8u);  // refused
  Scenario trace;
  trace.trace = TraceConfig{};
  trace.trace->steps = 10;
  trace.query_heads = 4;
  EXPECT_EQ(ScoreTerms(PolicyConfig{"tova", {}, 0}, trace), 40u);
  EXPECT_EQ(ScoreTerms(PolicyConfig{"tova", {}, 0}, Scenario{}), 1u);
}

// L = 2T + 3. binary32, T = 1: L = 5, gamma = 5u / (1 - 5u), plus the
// input's u, about 6u = 3.58e-7.
TEST(Precision, BoundOfOneTermAtBinary32) {
  const double u = std::ldexp(1.0, -24);
  const ErrorBound b = ScoreBound({Precision::kBinary32, Precision::kBinary32}, 1);
  ASSERT_TRUE(b.finite);
  const double gamma = 5 * u / (1 - 5 * u);
  EXPECT_NEAR(b.relative, u + gamma + u * gamma, 1e-12);
  EXPECT_GE(b.relative, u + gamma + u * gamma);  // widened, never narrowed
  EXPECT_NEAR(b.relative, 6 * u, 1e-12);
  // binary64 inputs are exact: only the accumulation's gamma.
  const ErrorBound r = ScoreBound({}, 1);
  EXPECT_NEAR(r.relative, 5 * std::ldexp(1.0, -53), 1e-20);  // widened by 2^-20
}

// bfloat16 throughout: L u < 1/2 holds for T = 62 (L = 127, 127/256 =
// 0.496) and fails for T = 63 (L = 129, 0.504).
TEST(Precision, BfloatAccumulationRunsOutOfBits) {
  const PortPrecision bf{Precision::kBfloat16, Precision::kBfloat16};
  EXPECT_TRUE(ScoreBound(bf, 62).finite);
  EXPECT_FALSE(ScoreBound(bf, 63).finite);
  EXPECT_FALSE(Separated(ScoreBound(bf, 63), 0.0, 1.0));  // nothing is robust
  // Accumulated in binary32 the same weights stay close to u = 2^-8.
  const ErrorBound mixed = ScoreBound({Precision::kBfloat16, Precision::kBinary32}, 63);
  EXPECT_LT(mixed.relative, std::ldexp(1.0, -8) * 1.01);
  EXPECT_GT(mixed.relative, std::ldexp(1.0, -8));
}

// spec/arithmetic.md#exact-cases, case by case.
TEST(Precision, ExactCasesNeedDyadicWeightsAFitAndNoDivision) {
  const PortPrecision bf{Precision::kBfloat16, Precision::kBfloat16};
  const PortPrecision half{Precision::kFloat16, Precision::kFloat16};
  const PortPrecision single{Precision::kBinary32, Precision::kBinary32};
  const auto scenario = [](std::vector<float> row, uint32_t heads = 1) {
    Scenario s;
    ScenarioStep first;
    first.admit = static_cast<uint32_t>(row.size());
    s.steps.push_back(first);
    ScenarioStep step;
    if (heads == 1) {
      step.attention = row;
    } else {
      s.query_heads = heads;
      s.kv_heads = heads;
      step.heads.assign(heads, row);
    }
    s.steps.push_back(step);
    return s;
  };
  const PolicyConfig h2o{"h2o", {{"budget", 2}, {"recent_window", 1}}, 0};
  EXPECT_TRUE(ExactAt(bf, h2o, scenario({0.5f, 0.25f, 0.125f})));
  EXPECT_FALSE(ExactAt(bf, h2o, scenario({0.1f, 0.25f})));  // 0.1 is no dyadic fit
  // 0.1f is 13421773 x 2^-27: alone it fits binary32's 24 bits; beside
  // 0.25 the sum, 0.35 x 2^27, does not.
  EXPECT_TRUE(ExactAt(single, h2o, scenario({0.1f})));
  EXPECT_FALSE(ExactAt(single, h2o, scenario({0.1f, 0.25f})));
  // 200 + 100: g = 0, a sum of 300 needs 9 bits: not bfloat16's 8.
  EXPECT_FALSE(ExactAt(bf, h2o, scenario({200.0f, 100.0f})));
  EXPECT_TRUE(ExactAt(half, h2o, scenario({200.0f, 100.0f})));
  // 2^-30 is finer than float16's smallest subnormal, 2^-24.
  EXPECT_FALSE(ExactAt(half, h2o, scenario({0x1p-30f, 0.5f})));
  EXPECT_FALSE(ExactAt(half, h2o, scenario({0x1p-30f})));  // fits 11 bits, not the range
  EXPECT_TRUE(ExactAt(bf, h2o, scenario({0x1p-30f, 0x1p-29f})));
  // A configuration that divides a sum.
  EXPECT_FALSE(ExactAt(bf, PolicyConfig{"h2o", {{"budget", 2}, {"recent_window", 1},
                                                {"normalize", 1}}, 0},
                       scenario({0.5f, 0.25f})));
  EXPECT_FALSE(ExactAt(bf, h2o, scenario({0.5f, 0.25f}, 2)));  // the mean of 2 heads
  EXPECT_TRUE(ExactAt(bf, PolicyConfig{"h2o", {{"budget", 2}, {"recent_window", 1},
                                               {"aggregation", 2}}, 0},
                      scenario({0.5f, 0.25f}, 2)));  // their sum
  EXPECT_FALSE(ExactAt(bf, PolicyConfig{"openvino", {}, 0}, scenario({0.5f, 0.25f})));
  Scenario trace;  // a generated trace: never taken to be exact
  trace.trace = TraceConfig{};
  trace.trace->steps = 8;
  EXPECT_FALSE(ExactAt(single, PolicyConfig{"tova", {{"budget", 4}}, 0}, trace));
  EXPECT_TRUE(ExactAt(bf, PolicyConfig{"h2o", {{"budget", 0}}, 0},
                      scenario({0.1f})));  // refused: ranks nothing
}

TEST(Precision, SeparatedNeedsBothSidesToStayApart) {
  ErrorBound b;
  b.relative = 0.01;
  EXPECT_TRUE(Separated(b, 1.0, 1.03));   // 1.0197 > 1.01
  EXPECT_FALSE(Separated(b, 1.0, 1.02));  // 1.0098 < 1.01
  EXPECT_FALSE(Separated(b, 0.5, 0.5));   // a tie is never robust
  EXPECT_TRUE(Separated(b, 0.0, 1e-300));  // no absolute error here
  b.absolute = 1e-10;
  EXPECT_FALSE(Separated(b, 0.0, 1e-300));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(Separated(b, 5.0, inf));
  EXPECT_FALSE(Separated(b, inf, inf));
  // JudgingBound adds the reference's own binary64 error.
  const ErrorBound j = JudgingBound({Precision::kBinary32, Precision::kBinary32}, 1);
  EXPECT_GT(j.relative, ScoreBound({Precision::kBinary32, Precision::kBinary32}, 1).relative);
}

TEST(Precision, DecisionOfAnOwnRanking) {
  RankingObservation o;
  o.ranking = {{4, 0.1, 0, true}, {2, 0.25, 0, true}, {7, 0.5, 0, false},
               {1, 0.75, 0, false}};
  const std::optional<Decision> d = DecisionOf(o);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->victim, 0.25);
  EXPECT_EQ(d->survivor, 0.5);
  EXPECT_EQ(RelativeMargin(*d), 0.5);
  o.ranking[2].evicted = o.ranking[3].evicted = true;  // no survivor
  EXPECT_FALSE(DecisionOf(o).has_value());
}

// Two sets, floor 1, counts 2 and 1 after admission: the walk takes set 0's
// 0.1; set 1's 0.2 is at the floor and could not be taken; set 0's 0.3,
// with 0.1 given back (count 2 > 1), could: the decision is 0.1 / 0.3.
TEST(Precision, DecisionOfAJointRankingSkipsPairsAtTheFloor) {
  RankingObservation o;
  o.joint = true;
  o.floor = 1;
  o.kept_before = {2, 1};
  o.ranking = {{3, 0.1, 0, true}, {5, 0.2, 1, false}, {6, 0.3, 0, false}};
  const std::optional<Decision> d = DecisionOf(o);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->victim, 0.1);
  EXPECT_EQ(d->survivor, 0.3);
  EXPECT_EQ(RelativeMargin(Decision{0.0, 2.0}), 1.0);
  EXPECT_EQ(RelativeMargin(Decision{3.0, std::numeric_limits<double>::infinity()}), 1.0);
}

}  // namespace
}  // namespace kvspec
