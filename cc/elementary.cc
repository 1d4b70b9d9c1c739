// Each step cites its paragraph of spec/elementary.md. The constants are
// given there as bits; here as hexadecimal floating literals of those bits.
#include "cc/elementary.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kvspec {
namespace {

uint64_t BitsOf(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

double FromBits(uint64_t bits) {
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// spec/elementary.md#constants
constexpr double kLn2Hi = 0x1.62e42feep-1;            // 0x3fe62e42fee00000
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;      // 0x3dea39ef35793c76
constexpr double kInvLn2 = 0x1.71547652b82fep+0;      // 0x3ff71547652b82fe
constexpr double kOverflow = 0x1.62e42fefa39efp+9;    // 0x40862e42fefa39ef
constexpr double kUnderflow = -0x1.74910d52d3051p+9;  // 0xc0874910d52d3051
constexpr double kP1 = 0x1.555555555553ep-3;          // 0x3fc555555555553e
constexpr double kP2 = -0x1.6c16c16bebd93p-9;         // 0xbf66c16c16bebd93
constexpr double kP3 = 0x1.1566aaf25de2cp-14;         // 0x3f11566aaf25de2c
constexpr double kP4 = -0x1.bbd41c5d26bf1p-20;        // 0xbebbbd41c5d26bf1
constexpr double kP5 = 0x1.6376972bea4d0p-25;         // 0x3e66376972bea4d0
constexpr double kLg1 = 0x1.5555555555593p-1;         // 0x3fe5555555555593
constexpr double kLg2 = 0x1.999999997fa04p-2;         // 0x3fd999999997fa04
constexpr double kLg3 = 0x1.2492494229359p-2;         // 0x3fd2492494229359
constexpr double kLg4 = 0x1.c71c51d8e78afp-3;         // 0x3fcc71c51d8e78af
constexpr double kLg5 = 0x1.7466496cb03dep-3;         // 0x3fc7466496cb03de
constexpr double kLg6 = 0x1.39a09d078c69fp-3;         // 0x3fc39a09d078c69f
constexpr double kLg7 = 0x1.2f112df3e5244p-3;         // 0x3fc2f112df3e5244
constexpr double kThird = 0x1.5555555555555p-2;       // 0x3fd5555555555555
constexpr double kTwo54 = 0x1p54;                     // 0x4350000000000000
constexpr double kTwoM1000 = 0x1p-1000;               // 0x0170000000000000

// spec/elementary.md#scaling: y x 2^k, exact, by adding k to the exponent
// field. Requires the result to be a normal number.
double AddToExponent(double y, int k) {
  return FromBits(BitsOf(y) + (static_cast<uint64_t>(static_cast<int64_t>(k)) << 52));
}

}  // namespace

double Norm(absl::Span<const float> a) {
  double sum = 0.0;
  for (float entry : a) {
    const double widened = entry;
    sum += widened * widened;
  }
  return std::sqrt(sum);
}

double Norm(absl::Span<const double> a) {
  double sum = 0.0;
  for (double entry : a) sum += entry * entry;
  return std::sqrt(sum);
}

double Dot(absl::Span<const double> a, absl::Span<const double> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

double Mean(absl::Span<const double> a) {
  double sum = 0.0;
  for (double entry : a) sum += entry;
  return sum / static_cast<double>(a.size());
}

double Std(absl::Span<const double> a, size_t correction) {
  const double mu = Mean(a);
  double sum = 0.0;
  for (double entry : a) {
    const double deviation = entry - mu;
    sum += deviation * deviation;
  }
  return std::sqrt(sum / static_cast<double>(a.size() - correction));
}

double Exp(double x) {
  const uint64_t bits = BitsOf(x);
  const bool negative = (bits >> 63) != 0;
  const uint32_t high = static_cast<uint32_t>(bits >> 32) & 0x7fffffffu;  // of |x|

  // spec/elementary.md#exp step 1: special values and thresholds.
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return negative ? 0.0 : x;
  if (x > kOverflow) return std::numeric_limits<double>::infinity();
  if (x < kUnderflow) return 0.0;

  // Step 2: x = k ln2 + r, r = hi - lo.
  int k;
  double hi = 0.0;
  double lo = 0.0;
  double r;
  if (high > 0x3fd62e42u) {
    if (high < 0x3ff0a2b2u) {
      k = negative ? -1 : 1;
      hi = negative ? x + kLn2Hi : x - kLn2Hi;
      lo = negative ? -kLn2Lo : kLn2Lo;
    } else {
      // (int) truncates toward zero; the operand is far inside int's range
      // because |x| <= 745.14 here.
      k = static_cast<int>(kInvLn2 * x + (negative ? -0.5 : 0.5));
      const double t = k;
      hi = x - t * kLn2Hi;
      lo = t * kLn2Lo;
    }
    r = hi - lo;
  } else if (high < 0x3e300000u) {
    return 1.0 + x;  // step 3: |x| < 2^-28
  } else {
    k = 0;
    r = x;
  }

  // Step 4: the rational approximation on the reduced argument.
  const double t = r * r;
  const double c = r - t * (kP1 + t * (kP2 + t * (kP3 + t * (kP4 + t * kP5))));
  if (k == 0) return 1.0 - ((r * c) / (c - 2.0) - r);
  const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);

  // Step 5: scaling by 2^k.
  if (k >= -1021) return AddToExponent(y, k);
  return AddToExponent(y, k + 1000) * kTwoM1000;
}

double Log(double x) {
  uint64_t bits = BitsOf(x);
  int32_t high = static_cast<int32_t>(static_cast<uint32_t>(bits >> 32));  // signed
  const uint32_t low = static_cast<uint32_t>(bits);
  int k = 0;

  // spec/elementary.md#log step 1: zero, negatives, subnormals.
  if (high < 0x00100000) {
    if (((static_cast<uint32_t>(high) & 0x7fffffffu) | low) == 0) {
      return -std::numeric_limits<double>::infinity();
    }
    if (high < 0) return std::numeric_limits<double>::quiet_NaN();
    k -= 54;
    x *= kTwo54;  // exact
    bits = BitsOf(x);
    high = static_cast<int32_t>(static_cast<uint32_t>(bits >> 32));
  }
  if (high >= 0x7ff00000) return x + x;  // +inf or NaN

  // Step 2: x = 2^k (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)).
  k += (high >> 20) - 1023;
  const int32_t m = high & 0x000fffff;  // the top 20 bits of the fraction
  const int32_t carry = (m + 0x95f64) & 0x100000;
  const uint32_t new_high = static_cast<uint32_t>(m | (carry ^ 0x3ff00000));
  const double normalized =
      FromBits((static_cast<uint64_t>(new_high) << 32) | (bits & 0xffffffffu));
  k += carry >> 20;
  const double f = normalized - 1.0;
  const double dk = k;

  // Step 3: |f| < 2^-20.
  if ((0x000fffff & (2 + m)) < 3) {
    if (f == 0.0) {
      if (k == 0) return 0.0;
      return dk * kLn2Hi + dk * kLn2Lo;
    }
    const double rr = f * f * (0.5 - kThird * f);
    if (k == 0) return f - rr;
    return dk * kLn2Hi - ((rr - dk * kLn2Lo) - f);
  }

  // Step 4: s = f / (2 + f) and the polynomial in s^2.
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  const double t1 = w * (kLg2 + w * (kLg4 + w * kLg6));
  const double t2 = z * (kLg1 + w * (kLg3 + w * (kLg5 + w * kLg7)));
  const double rr = t2 + t1;
  if (m >= 0x6147a && m <= 0x6b851) {
    const double hfsq = 0.5 * f * f;
    if (k == 0) return f - (hfsq - s * (hfsq + rr));
    return dk * kLn2Hi - ((hfsq - (s * (hfsq + rr) + dk * kLn2Lo)) - f);
  }
  if (k == 0) return f - s * (f - rr);
  return dk * kLn2Hi - ((s * (f - rr) - dk * kLn2Lo) - f);
}

}  // namespace kvspec
