// Hand-worked margins (tools/census/margins.h): each expected value is
// computed here from the definition, not taken from a run.
#include "tools/census/margins.h"

#include <cmath>

#include "gtest/gtest.h"

namespace kvspec {
namespace audit {
namespace {

RankingObservation Own(std::vector<std::pair<double, bool>> ranked) {
  RankingObservation o;
  Position p = 0;
  for (const auto& [score, evicted] : ranked) o.ranking.push_back({p++, score, 0, evicted});
  return o;
}

TEST(DecisionMargin, LastVictimAgainstFirstSurvivor) {
  // One victim at 1.0, the survivor at 3.0: (3 - 1) / 3.
  EXPECT_EQ(*DecisionMargin(Own({{1.0, true}, {3.0, false}})), 2.0 / 3.0);
  // Two victims (1.0, 2.0), survivors 2.5 and 9.0: (2.5 - 2) / 2.5 = 0.2;
  // the first victim and the second survivor do not count.
  EXPECT_EQ(*DecisionMargin(Own({{1.0, true}, {2.0, true}, {2.5, false}, {9.0, false}})),
            0.5 / 2.5);
  // A victim at 0 against a survivor above it: the whole of it, 1.
  EXPECT_EQ(*DecisionMargin(Own({{0.0, true}, {0.25, false}})), 1.0);
  // Equal scores at the cut: a tie, margin 0.
  EXPECT_EQ(*DecisionMargin(Own({{0.5, true}, {0.5, false}})), 0.0);
}

TEST(DecisionMargin, NoneWithoutBothSides) {
  EXPECT_FALSE(DecisionMargin(Own({{1.0, true}, {2.0, true}})).has_value());
  EXPECT_FALSE(DecisionMargin(Own({{1.0, false}, {2.0, false}})).has_value());
  EXPECT_FALSE(DecisionMargin(Own({})).has_value());
}

TEST(DecisionMargin, JointRankingAgainstAPairTheWalkCouldHaveTaken) {
  // Sets 0 and 1 kept 3 and 2 before the step, floor 2, one pair to evict.
  // The walk takes set 0's 0.1; set 1's 0.2 sits at the floor, so it could
  // never be taken; set 0's 0.3 could (set 0 holds 2 after the walk, 3
  // with 0.1 given back, above the floor): (0.3 - 0.1) / 0.3.
  RankingObservation joint;
  joint.joint = true;
  joint.floor = 2;
  joint.kept_before = {3, 2};
  joint.ranking = {{0, 0.1, 0, true}, {1, 0.2, 1, false}, {2, 0.3, 0, false}};
  EXPECT_EQ(*DecisionMargin(joint), (0.3 - 0.1) / 0.3);
  // Without set 0's later pair nothing else could have been taken.
  joint.ranking.pop_back();
  EXPECT_FALSE(DecisionMargin(joint).has_value());
  // With set 1 above the floor (3 kept), its 0.2 is the one: (0.2 - 0.1) / 0.2.
  joint.kept_before = {3, 3};
  EXPECT_EQ(*DecisionMargin(joint), (0.2 - 0.1) / 0.2);
}

TEST(MarginBucket, ByEachPrecisionsEpsilon) {
  EXPECT_EQ(MarginBucket(0.0), 0);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -60)), 1);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -52)), 1);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -30)), 2);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -23)), 2);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -11)), 3);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -10)), 3);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -8)), 4);
  EXPECT_EQ(MarginBucket(std::ldexp(1.0, -7)), 4);
  EXPECT_EQ(MarginBucket(0.5), 5);
  EXPECT_EQ(MarginBucket(1.0), 5);
}

}  // namespace
}  // namespace audit
}  // namespace kvspec
