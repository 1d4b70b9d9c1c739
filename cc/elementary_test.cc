// Tests of spec/elementary.md. Hand-worked cases first (values that follow
// from the spec's steps by hand), then the spec's golden table and spot
// checks, whose bits Java's StrictMath (fdlibm) gives independently
// (tools/recipes/check.sh).
#include "cc/elementary.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cc/rng.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

uint64_t Bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double FromBits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ExpTest, HandWorkedSpecialValues) {
  // Step 1.
  EXPECT_EQ(Exp(kInf), kInf);
  EXPECT_EQ(Bits(Exp(-kInf)), 0u);
  EXPECT_TRUE(std::isnan(Exp(std::nan(""))));
  EXPECT_EQ(Exp(709.79), kInf);              // above O_THRESHOLD = 709.782712893384
  EXPECT_EQ(Bits(Exp(-745.14)), 0u);          // below U_THRESHOLD = -745.1332191019411
  EXPECT_EQ(Bits(Exp(-1e300)), 0u);
}

TEST(ExpTest, HandWorkedSmallArguments) {
  // |x| < 2^-28: 1.0 + x. For x = 2^-30 that is exactly 1 + 2^-30.
  EXPECT_EQ(Exp(0x1p-30), 1.0 + 0x1p-30);
  EXPECT_EQ(Exp(0.0), 1.0);
  EXPECT_EQ(Exp(-0.0), 1.0);
  // 1.0 + 2^-60 rounds to 1.0.
  EXPECT_EQ(Exp(0x1p-60), 1.0);
  // k = 0, r = x = 2^-20: t = 2^-40; c = r - t * (P1 + ...) rounds to
  // 2^-20 - 2^-40 P1 to within an ulp; the result 1 - ((r c)/(c - 2) - r)
  // is 1 + 2^-20 + 2^-41 rounded: the exact e^(2^-20) = 1 + 2^-20 + 2^-41 +
  // 2^-62/6 + ..., whose nearest binary64 is 1 + 2^-20 + 2^-41.
  EXPECT_EQ(Exp(0x1p-20), 1.0 + 0x1p-20 + 0x1p-41);
}

TEST(LogTest, HandWorkedSpecialValues) {
  EXPECT_EQ(Log(0.0), -kInf);
  EXPECT_EQ(Log(-0.0), -kInf);
  EXPECT_TRUE(std::isnan(Log(-1.0)));
  EXPECT_TRUE(std::isnan(Log(-kInf)));
  EXPECT_EQ(Log(kInf), kInf);
  EXPECT_TRUE(std::isnan(Log(std::nan(""))));
}

TEST(LogTest, HandWorkedPowersOfTwo) {
  // Step 3 with f = 0: +0.0 for 1, else dk * LN2_HI + dk * LN2_LO.
  const double ln2_hi = FromBits(0x3fe62e42fee00000);
  const double ln2_lo = FromBits(0x3dea39ef35793c76);
  EXPECT_EQ(Bits(Log(1.0)), 0u);
  for (int j : {1, -1, 2, 10, -10, 1023, -1022}) {
    const double x = std::ldexp(1.0, j);
    const double dk = j;
    EXPECT_EQ(Bits(Log(x)), Bits(dk * ln2_hi + dk * ln2_lo)) << "2^" << j;
  }
  // A subnormal power of two: step 1 scales by 2^54 and sets k = -54; step
  // 2 adds the exponent of 2^-1074 * 2^54 = 2^-1020, so k = -1074, f = 0.
  const double dk = -1074;
  EXPECT_EQ(Bits(Log(FromBits(1))), Bits(dk * ln2_hi + dk * ln2_lo));
  // log 2 is ln 2 to the nearest binary64 (LN2_HI + LN2_LO rounds to it).
  EXPECT_EQ(Bits(Log(2.0)), 0x3fe62e42fefa39efu);
}

// (u >> 11) - 2^52, exact in binary64.
double Centred(uint64_t u) {
  return static_cast<double>(static_cast<int64_t>(u >> 11) - (int64_t{1} << 52));
}

struct Golden {
  bool is_exp;
  uint64_t x;
  uint64_t result;
};

// spec/elementary.md#golden-values
constexpr Golden kGolden[] = {
    {true, 0x3ff0000000000000, 0x4005bf0a8b14576a},
    {true, 0xbff0000000000000, 0x3fd78b56362cef38},
    {true, 0x3fe0000000000000, 0x3ffa61298e1e069c},
    {true, 0x3ddb7cdfd9d7bdbb, 0x3ff000000006df38},
    {true, 0x39b4484bfeebc2a0, 0x3ff0000000000000},
    {true, 0x4024000000000000, 0x40d5829dcf950560},
    {true, 0xc034800000000000, 0x3e157a3afeed00ab},
    {true, 0x40862e3d70a3d70a, 0x7fefe9ce5c4c52b4},
    {true, 0x4086300000000000, 0x7ff0000000000000},
    {true, 0xc086240000000000, 0x000e6cf6d08897ac},
    {true, 0xc087480000000000, 0x0000000000000001},
    {true, 0xc087500000000000, 0x0000000000000000},
    {false, 0x4000000000000000, 0x3fe62e42fefa39ef},
    {false, 0x4024000000000000, 0x40026bb1bbb55516},
    {false, 0x3fe0000000000000, 0xbfe62e42fefa39ef},
    {false, 0x3ff000001ad7f29b, 0x3e7ad7f2847b6492},
    {false, 0x3ff6666666666666, 0x3fd588c2d913348e},
    {false, 0x3fe6666666666666, 0xbfd6d3c324e13f50},
    {false, 0x0000000000000001, 0xc0874385446d71c3},
    {false, 0x7fefffffffffffff, 0x40862e42fefa39ef},
    {false, 0x0000000000000000, 0xfff0000000000000},
    {false, 0x7ff0000000000000, 0x7ff0000000000000},
};

TEST(ElementaryTest, GoldenTable) {
  for (const Golden& g : kGolden) {
    const double x = FromBits(g.x);
    const double y = g.is_exp ? Exp(x) : Log(x);
    EXPECT_EQ(Bits(y), g.result) << (g.is_exp ? "exp" : "log") << "(" << x << ")";
  }
}

// spec/elementary.md#spot-checks
TEST(ElementaryTest, SpotCheckDigests) {
  Rng rng(2026);
  struct Family {
    const char* name;
    bool is_exp;
    double (*input)(uint64_t);
    uint64_t digest;
  };
  // The inputs of spec/elementary.md#spot-checks, from u = rng.Next().
  static const Family kFamilies[] = {
      {"exp wide", true,
       [](uint64_t u) { return Centred(u) * 0x1p-42; }, 0x0a32ea2e7f43012c},
      {"exp near 0", true,
       [](uint64_t u) { return Centred(u) * 0x1p-51; }, 0xd2bd2cb5aa0abfad},
      {"exp tiny", true,
       [](uint64_t u) { return Centred(u) * 0x1p-80; }, 0xb58076fce64cb01b},
      {"log wide", false,
       [](uint64_t u) { return FromBits(u % 0x7ff0000000000000u); }, 0x11f7a20bef104ba3},
      {"log near 1", false,
       [](uint64_t u) { return 1.0 + Centred(u) * 0x1p-75; }, 0x49df08a6e71eb149},
      {"log small", false,
       [](uint64_t u) { return static_cast<double>(u >> 11) * 0x1p-50; }, 0x0ac327932ad8629a},
  };
  for (const Family& family : kFamilies) {
    uint64_t d = 0xcbf29ce484222325u;
    for (int i = 0; i < 1000; ++i) {
      const double x = family.input(rng.Next());
      d = (d ^ Bits(family.is_exp ? Exp(x) : Log(x))) * 0x100000001b3u;
    }
    EXPECT_EQ(d, family.digest) << family.name;
  }
}

}  // namespace
}  // namespace kvspec
