// Hand-worked cases from spec/heads.md.
#include "cc/heads.h"

#include <cmath>
#include <vector>

#include "cc/errors.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using Sets = std::vector<std::vector<uint32_t>>;

TEST(CheckHeadCounts, AcceptsTheBoundsAndDivisors) {
  EXPECT_TRUE(CheckHeadCounts({1, 1}).ok());
  EXPECT_TRUE(CheckHeadCounts({1024, 1024}).ok());
  EXPECT_TRUE(CheckHeadCounts({32, 8}).ok());
  EXPECT_TRUE(CheckHeadCounts({6, 3}).ok());
}

TEST(CheckHeadCounts, RefusesInTheSpecsOrder) {
  // heads.md#head-counts: query_heads, then kv_heads, then divisibility.
  const struct {
    HeadCounts heads;
    const char* names;
  } cases[] = {
      {{0, 1}, "query_heads must be in [1, 1024], got 0"},
      {{1025, 1}, "query_heads must be in [1, 1024], got 1025"},
      {{0, 0}, "query_heads"},       // both bad: query_heads first
      {{4, 0}, "kv_heads must be in [1, 1024], got 0"},
      {{4, 1025}, "kv_heads must be in [1, 1024], got 1025"},
      {{4, 3}, "kv_heads must divide query_heads"},
      {{2, 4}, "kv_heads must divide query_heads"},  // more KV than query heads
  };
  for (const auto& c : cases) {
    const absl::Status status = CheckHeadCounts(c.heads);
    EXPECT_EQ(CategoryOf(status), ErrorCategory::kInvalidHeads) << c.names;
    EXPECT_NE(status.message().find(c.names), absl::string_view::npos)
        << status.message();
  }
}

TEST(SetsOf, NumbersSetsAsTheTableSays) {
  // heads.md#kept-sets, Hq 4, Hkv 2 (G = 2).
  EXPECT_EQ(SetsOf(Granularity::kLayer, {4, 2}, true), (Sets{{0, 1, 2, 3}}));
  EXPECT_EQ(SetsOf(Granularity::kKvHead, {4, 2}, true), (Sets{{0, 1}, {2, 3}}));
  EXPECT_EQ(SetsOf(Granularity::kQueryHead, {4, 2}, true),
            (Sets{{0}, {1}, {2}, {3}}));
  // Hq 6, Hkv 3: group g is heads 2g and 2g + 1.
  EXPECT_EQ(SetsOf(Granularity::kKvHead, {6, 3}, true),
            (Sets{{0, 1}, {2, 3}, {4, 5}}));
}

TEST(SetsOf, OneHeadIsOneSetWhateverTheGranularity) {
  for (Granularity g : {Granularity::kLayer, Granularity::kKvHead,
                        Granularity::kQueryHead}) {
    EXPECT_EQ(SetsOf(g, {1, 1}, true), (Sets{{0}}));
  }
}

TEST(SetsOf, APolicyThatDoesNotReadAttentionHasOneSet) {
  // heads.md#policies-that-do-not-read-attention.
  for (Granularity g : {Granularity::kLayer, Granularity::kKvHead,
                        Granularity::kQueryHead}) {
    EXPECT_EQ(SetsOf(g, {4, 2}, false), (Sets{{0, 1, 2, 3}}));
  }
}

TEST(Combine, MeanSumAndMaxOfThreeHeads) {
  // Slot 0: 0.5, 0.25, 0.0; slot 1: 0.0, 0.0, 1.0.
  const std::vector<std::vector<double>> heads = {
      {0.5, 0.0}, {0.25, 0.0}, {0.0, 1.0}};
  std::vector<double> out;
  Combine(Aggregation::kSum, absl::MakeConstSpan(heads), out);
  EXPECT_EQ(out, (std::vector<double>{0.75, 1.0}));
  Combine(Aggregation::kMean, absl::MakeConstSpan(heads), out);
  EXPECT_EQ(out, (std::vector<double>{0.75 / 3, 1.0 / 3}));
  Combine(Aggregation::kMax, absl::MakeConstSpan(heads), out);
  EXPECT_EQ(out, (std::vector<double>{0.5, 1.0}));
}

TEST(Combine, OneHeadIsItsOwnScoreBitForBit) {
  const std::vector<std::vector<float>> one = {{0.0f, 1e-45f, 0.3f}};
  for (Aggregation a : {Aggregation::kMean, Aggregation::kMax,
                        Aggregation::kSum}) {
    std::vector<double> out;
    Combine(a, absl::MakeConstSpan(one), out);
    ASSERT_EQ(out.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(out[i], static_cast<double>(one[0][i]));
      EXPECT_FALSE(std::signbit(out[i]));
    }
  }
}

TEST(Combine, MeanIsOneDivisionOfTheSumNotASumOfQuotients) {
  // heads.md#combining-heads-at-ranking-time: (x0 + x1 + x2) / 3, the sum
  // in ascending head order. 0.1f + 0.2f + 0.4f summed in binary64, then
  // divided by 3; summing x / 3 instead rounds three more times.
  const std::vector<std::vector<float>> heads = {{0.1f}, {0.2f}, {0.4f}};
  std::vector<double> out;
  Combine(Aggregation::kMean, absl::MakeConstSpan(heads), out);
  const double sum = (0.0 + static_cast<double>(0.1f)) +
                     static_cast<double>(0.2f) + static_cast<double>(0.4f);
  EXPECT_EQ(out[0], sum / 3.0);
}

TEST(Combine, MeanCanTieWhereTheSumsDiffer) {
  // heads.md: two sums one binary64 ulp apart in [1.5, 2) divide by 3 into
  // [0.5, 0.667), where the grid is twice as coarse: some adjacent pairs
  // round to the same mean. 1.5 + k * 2^-52 for the k found by hand below.
  int ties = 0;
  for (int k = 0; k < 8; ++k) {
    const double a = 1.5 + k * std::ldexp(1.0, -52);
    const double b = a + std::ldexp(1.0, -52);
    if (a / 3 == b / 3) ++ties;
  }
  EXPECT_GT(ties, 0);
}

}  // namespace
}  // namespace kvspec
