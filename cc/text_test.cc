#include "cc/text.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace kvspec {
namespace {

TEST(ShortestDecimal, RoundTripsWithFewestDigits) {
  EXPECT_EQ(ShortestDecimal(0.1f), "0.1");
  EXPECT_EQ(ShortestDecimal(0.1), "0.1");
  EXPECT_EQ(ShortestDecimal(1.0f / 3.0f), "0.33333334");
  EXPECT_EQ(ShortestDecimal(std::numeric_limits<float>::denorm_min()),
            "1e-45");
  EXPECT_EQ(ShortestDecimal(-0.0f), "-0");
  EXPECT_EQ(ShortestDecimal(std::numeric_limits<float>::infinity()), "inf");
}

TEST(HexBits, ShowsTheExactBits) {
  EXPECT_EQ(HexBits(0.1f), "0x3dcccccd");
  EXPECT_EQ(HexBits(0.1), "0x3fb999999999999a");
  EXPECT_EQ(HexBits(-0.0f), "0x80000000");
  EXPECT_EQ(FloatText(0.5f), "0.5 (0x3f000000)");
}

}  // namespace
}  // namespace kvspec
