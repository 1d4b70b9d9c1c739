// FirstLowest and LowestRanked against hand-worked cases of
// spec/harness.md#victims: least score first, equal scores to the lower
// position (the lower slot, kept order being ascending).
#include "cc/policies/ranking.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvspec {
namespace policies {
namespace {

size_t First(const std::vector<double>& scores, size_t end) {
  return FirstLowest(absl::MakeConstSpan(scores), end);
}

TEST(FirstLowest, ShortSpans) {
  EXPECT_EQ(First({5.0}, 1), 0u);
  EXPECT_EQ(First({5.0, 4.0}, 2), 1u);
  EXPECT_EQ(First({4.0, 4.0, 4.0}, 3), 0u);  // tie: the first
}

TEST(FirstLowest, TiesGoToTheLowerSlot) {
  // Slots 1 and 6 hold the least (1.0): slot 1, the lower.
  EXPECT_EQ(First({3, 1, 2, 3, 4, 5, 1, 7}, 8), 1u);
  // Slots 3 and 4 hold the least (0): slot 3, the lower.
  EXPECT_EQ(First({3, 3, 3, 0, 0, 3, 3, 3}, 8), 3u);
  // All equal: slot 0.
  EXPECT_EQ(First(std::vector<double>(13, 2.5), 13), 0u);
}

TEST(FirstLowest, OnlySlotsBeforeTheEndAreCandidates) {
  // 10 candidates: the least is the last.
  EXPECT_EQ(First({9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 10), 9u);
  // The same scores, but only the first 7 are candidates: slot 6.
  EXPECT_EQ(First({9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 7), 6u);
  // +0.0 beats any positive score, wherever it sits.
  EXPECT_EQ(First({1e-300, 1, 1, 1, 1, 0.0}, 6), 5u);
}

TEST(LowestRanked, OneVictimAndSeveralAgree) {
  const std::vector<float> scores = {0.5f, 0.25f, 0.25f, 0.75f, 0.125f, 0.125f};
  const std::vector<Position> kept = {10, 11, 12, 13, 14, 15};
  // Candidates are the first five slots (slot 5 is protected).
  EXPECT_EQ(LowestRanked(absl::MakeConstSpan(scores),
                         absl::MakeConstSpan(kept), 5, 1),
            (std::vector<size_t>{4}));
  // Three victims: 0.125 (slot 4), then 0.25 at slots 1 and 2, ascending.
  EXPECT_EQ(LowestRanked(absl::MakeConstSpan(scores),
                         absl::MakeConstSpan(kept), 5, 3),
            (std::vector<size_t>{1, 2, 4}));
}

}  // namespace
}  // namespace policies
}  // namespace kvspec
