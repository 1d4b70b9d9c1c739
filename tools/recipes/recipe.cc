// C++ recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt.
// Build: g++ -std=c++17 -O2 -ffp-contract=off recipe.cc.
// uint64_t arithmetic wraps modulo 2^64 by definition; products of two
// 32-bit values are widened to 64 bits first; `/` truncates, which is floor
// for the spec's operands (never negative); std::optional models presence.
// exp and log (spec/elementary.md) are fdlibm 5.3's algorithms written out
// from the spec's steps: binary64 + - * / (never fused: -ffp-contract=off),
// the 64 bits moved with memcpy, never the platform's libm exp and log.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t state = seed;
    for (uint64_t& w : s_) {
      state += 0x9e3779b97f4a7c15ULL;
      w = Mix64(state);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  uint64_t Uniform(uint64_t n) {
    if (n == 1) return 0;
    int bits = 64 - __builtin_clzll(n - 1);  // C++20: std::bit_width(n - 1)
    for (;;) {
      const uint64_t candidate = Next() >> (64 - bits);
      if (candidate < n) return candidate;
    }
  }

 private:
  uint64_t s_[4];
};

uint64_t RatioBudget(uint64_t n, int64_t ppm) {
  const double r = static_cast<double>(ppm) / 1000000.0;
  const double t = 1.0 - r;
  const double u = static_cast<double>(n) * t;
  const double f = std::floor(u);
  return f < 1.0 ? 1 : static_cast<uint64_t>(f);
}

uint64_t FloorOf(uint32_t budget, uint32_t permille) {
  // uint32_t * uint32_t would wrap at 2^32: widen first.
  const uint64_t f = uint64_t{budget} * permille / 1000;
  return f == 0 && permille > 0 ? 1 : f;
}

uint32_t EffectiveHeads(std::optional<uint32_t> field) {  // has_query_heads()
  return field.value_or(1);
}

// spec/elementary.md#bits-and-words: exact moves of the 64 bits.
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

// spec/elementary.md#constants, from their bits.
const double kLn2Hi = FromBits(0x3fe62e42fee00000);
const double kLn2Lo = FromBits(0x3dea39ef35793c76);
const double kInvLn2 = FromBits(0x3ff71547652b82fe);
const double kOThreshold = FromBits(0x40862e42fefa39ef);
const double kUThreshold = FromBits(0xc0874910d52d3051);
const double kP1 = FromBits(0x3fc555555555553e);
const double kP2 = FromBits(0xbf66c16c16bebd93);
const double kP3 = FromBits(0x3f11566aaf25de2c);
const double kP4 = FromBits(0xbebbbd41c5d26bf1);
const double kP5 = FromBits(0x3e66376972bea4d0);
const double kLg1 = FromBits(0x3fe5555555555593);
const double kLg2 = FromBits(0x3fd999999997fa04);
const double kLg3 = FromBits(0x3fd2492494229359);
const double kLg4 = FromBits(0x3fcc71c51d8e78af);
const double kLg5 = FromBits(0x3fc7466496cb03de);
const double kLg6 = FromBits(0x3fc39a09d078c69f);
const double kLg7 = FromBits(0x3fc2f112df3e5244);
const double kThird = FromBits(0x3fd5555555555555);
const double kTwo54 = FromBits(0x4350000000000000);
const double kTwoM1000 = FromBits(0x0170000000000000);

// spec/elementary.md#scaling: the bits of y plus j * 2^52, modulo 2^64
// (uint64_t of a negative int is its value modulo 2^64).
double AddToExponent(double y, int j) {
  return FromBits(BitsOf(y) + (static_cast<uint64_t>(j) << 52));
}

// spec/elementary.md#exp.
double Exp(double x) {
  const uint64_t bits = BitsOf(x);
  const bool negative = (bits >> 63) != 0;
  const uint32_t h = static_cast<uint32_t>(bits >> 32) & 0x7fffffffu;  // of |x|
  // Step 1: special values.
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return negative ? 0.0 : x;
  if (x > kOThreshold) return HUGE_VAL;
  if (x < kUThreshold) return 0.0;
  // Step 2: reduction, x = k ln2 + r with r = hi - lo.
  int k = 0;
  double hi = 0.0, lo = 0.0, r = x;
  if (h > 0x3fd62e42u) {
    if (h < 0x3ff0a2b2u) {
      k = negative ? -1 : 1;
      hi = negative ? x + kLn2Hi : x - kLn2Hi;
      lo = negative ? -kLn2Lo : kLn2Lo;
    } else {
      // static_cast<int> truncates toward zero (|x| < 746 here).
      k = static_cast<int>(negative ? kInvLn2 * x - 0.5 : kInvLn2 * x + 0.5);
      const double t = k;
      hi = x - t * kLn2Hi;
      lo = t * kLn2Lo;
    }
    r = hi - lo;
  } else if (h < 0x3e300000u) {
    return 1.0 + x;  // |x| < 2^-28
  }
  // Step 3: approximation.
  const double t = r * r;
  const double c = r - t * (kP1 + t * (kP2 + t * (kP3 + t * (kP4 + t * kP5))));
  if (k == 0) return 1.0 - ((r * c) / (c - 2.0) - r);
  const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  // Step 4: scaling by 2^k; below 2^-1021 one rounding, by the multiplication.
  if (k >= -1021) return AddToExponent(y, k);
  return AddToExponent(y, k + 1000) * kTwoM1000;
}

// The high word, read as a signed 32-bit integer (negative when the sign bit
// is set); through uint32_t, whose conversion to int32_t is modulo 2^32.
int32_t HighWord(uint64_t bits) {
  return static_cast<int32_t>(static_cast<uint32_t>(bits >> 32));
}

// spec/elementary.md#log.
double Log(double x) {
  uint64_t bits = BitsOf(x);
  int32_t h = HighWord(bits);
  const uint32_t l = static_cast<uint32_t>(bits);
  int k = 0;
  // Step 1: zero, negatives, subnormals, then +inf and NaN.
  if (h < 0x00100000) {
    if (((static_cast<uint32_t>(h) & 0x7fffffffu) | l) == 0) return -HUGE_VAL;
    if (h < 0) return std::nan("");
    k = -54;
    x = x * kTwo54;  // exact
    bits = BitsOf(x);
    h = HighWord(bits);
  }
  if (h >= 0x7ff00000) return x + x;
  // Step 2: reduction, x = 2^k (1 + f). h >= 0 here, so >> is a plain shift.
  k += (h >> 20) - 1023;
  const int32_t m = h & 0x000fffff;
  const int32_t i = (m + 0x95f64) & 0x100000;
  const uint64_t high = static_cast<uint32_t>(m | (i ^ 0x3ff00000));
  x = FromBits((high << 32) | (bits & 0xffffffffu));
  k += i >> 20;
  const double f = x - 1.0;
  const double dk = k;
  // Step 3: near 1, |f| < 2^-20.
  if (((2 + m) & 0x000fffff) < 3) {
    if (f == 0.0) return k == 0 ? 0.0 : dk * kLn2Hi + dk * kLn2Lo;
    const double rr = f * f * (0.5 - kThird * f);
    if (k == 0) return f - rr;
    return dk * kLn2Hi - ((rr - dk * kLn2Lo) - f);
  }
  // Step 4: approximation.
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

// (u >> 11) - 2^52, in [-2^52, 2^52): exact as a binary64.
double Centered(uint64_t u) {
  return static_cast<double>(static_cast<int64_t>(u >> 11) - (int64_t{1} << 52));
}

// spec/elementary.md#spot-checks: name, function, input from one draw u.
struct SpotFamily {
  const char* name;
  double (*function)(double);
  double (*input)(uint64_t u);
};
const SpotFamily kSpotFamilies[] = {
    {"exp wide", Exp, [](uint64_t u) { return Centered(u) * 0x1p-42; }},
    {"exp near 0", Exp, [](uint64_t u) { return Centered(u) * 0x1p-51; }},
    {"exp tiny", Exp, [](uint64_t u) { return Centered(u) * 0x1p-80; }},
    {"log wide", Log, [](uint64_t u) { return FromBits(u % 0x7ff0000000000000); }},
    {"log near 1", Log, [](uint64_t u) { return 1.0 + Centered(u) * 0x1p-75; }},
    {"log small", Log, [](uint64_t u) { return static_cast<double>(u >> 11) * 0x1p-50; }},
};

void PrintHex(uint64_t x) { std::printf(" 0x%016" PRIx64, x); }

}  // namespace

int main() {
  uint64_t state = 0;
  std::printf("splitmix64 state=0:");
  for (int i = 0; i < 3; ++i) {
    state += 0x9e3779b97f4a7c15ULL;
    PrintHex(Mix64(state));
  }
  std::printf("\n");
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, UINT64_MAX}) {
    Rng rng(seed);
    std::printf("next seed=%" PRIu64 ":", seed);
    for (int i = 0; i < 5; ++i) PrintHex(rng.Next());
    std::printf("\n");
  }
  {
    Rng rng(42);
    std::printf("uniform(10) seed=42:");
    for (int i = 0; i < 10; ++i) std::printf(" %" PRIu64, rng.Uniform(10));
    std::printf("\n");
  }
  {
    Rng rng(42);
    std::printf("uniform(1000) seed=42:");
    for (int i = 0; i < 5; ++i) std::printf(" %" PRIu64, rng.Uniform(1000));
    std::printf("\n");
  }
  {
    Rng rng(7);
    std::printf("uniform(2^63+1) seed=7:");
    for (int i = 0; i < 3; ++i) PrintHex(rng.Uniform((uint64_t{1} << 63) + 1));
    std::printf("\n");
  }

  std::printf("trace head seeds seed=1:");
  for (uint64_t h = 1; h <= 3; ++h) {
    std::printf("%s h=%" PRIu64, h > 1 ? ";" : "", h);
    PrintHex(Mix64(uint64_t{1} ^ 0x3c6ef372fe94f82bULL ^ h));
  }
  std::printf("\n");

  const uint64_t m = std::strtoull("18446744073709551615", nullptr, 10);
  std::printf("u64 parse 18446744073709551615: %" PRIu64 " 0x%016" PRIx64 "\n",
              m, m);
  std::printf("u64 2^64-1 > 2^63: %s\n",
              m > (uint64_t{1} << 63) ? "true" : "false");
  std::printf("u64 (2^64-1) / 3: %" PRIu64 " rem %" PRIu64 "\n", m / 3, m % 3);
  std::printf("u64 (2^64-1) %% 10: %" PRIu64 "\n", m % 10);
  std::printf("u64 2^64-1 as binary64: %.0f\n", static_cast<double>(m));
  std::printf("u64 2^53+1 as binary64: %.0f\n",
              static_cast<double>((uint64_t{1} << 53) + 1));

  const uint32_t heads[][3] = {{32, 8, 31}, {6, 3, 5}, {1024, 1, 1023},
                               {1024, 1024, 1023}};
  std::printf("kv head h / (Hq / Hkv):");
  for (int i = 0; i < 4; ++i) {
    const uint32_t q = heads[i][0], k = heads[i][1], h = heads[i][2];
    std::printf("%s Hq=%u Hkv=%u h=%u -> %u", i ? ";" : "", q, k, h,
                h / (q / k));
  }
  std::printf("\n");
  const uint32_t floors[][2] = {{2, 200},   {512, 200},        {100, 290},
                                {7, 0},     {4294967295u, 999}, {4294967295u, 1000}};
  std::printf("adakv floor:");
  for (int i = 0; i < 6; ++i) {
    std::printf("%s budget=%u permille=%u -> %" PRIu64, i ? ";" : "",
                floors[i][0], floors[i][1], FloorOf(floors[i][0], floors[i][1]));
  }
  std::printf("\n");
  const uint32_t epochs[][2] = {{1300, 512}, {2147483647, 2147483647}, {511, 512}};
  std::printf("trace epoch t / epoch_length:");
  for (int i = 0; i < 3; ++i) {
    std::printf("%s t=%u L=%u -> %u", i ? ";" : "", epochs[i][0], epochs[i][1],
                epochs[i][0] / epochs[i][1]);
  }
  std::printf("\n");
  const uint64_t roles[] = {1, 4, 5, 9};
  std::printf("trace role (h - 1) mod 3:");
  for (int i = 0; i < 4; ++i) {
    std::printf("%s h=%" PRIu64 " -> %" PRIu64, i ? ";" : "", roles[i],
                (roles[i] - 1) % 3);
  }
  std::printf("\n");
  const uint32_t recents[][3] = {{3, 0, 8}, {1300, 4, 8}, {5, 4, 8}};
  std::printf(
      "trace recent start max(sinks, t - recent_length), t - recent_length "
      "stopping at 0:");
  for (int i = 0; i < 3; ++i) {
    const uint32_t t = recents[i][0], s = recents[i][1], r = recents[i][2];
    const uint32_t back = t > r ? t - r : 0;  // t - r would wrap below 0
    std::printf("%s t=%u sinks=%u R=%u -> %u", i ? ";" : "", t, s, r,
                s > back ? s : back);
  }
  std::printf("\n");
  std::printf("snapkv (pool_kernel - 1) / 2: 5 -> %u; 65535 -> %u\n",
              (5u - 1) / 2, (65535u - 1) / 2);

  const uint64_t ratios[][2] = {{20, 900000},  {10, 800000},         {90, 300000},
                                {1000, 500000}, {7, 999999},          {4294967295u, 1},
                                {4294967295u, 999999}};
  for (const auto& c : ratios) {
    const uint64_t n = c[0], ppm = c[1];
    const uint64_t exact_floor = n * (1000000 - ppm) / 1000000;
    std::printf("ratio budget n=%" PRIu64 " ppm=%" PRIu64 ": binary64 %" PRIu64
                " exact %" PRIu64 "\n",
                n, ppm, RatioBudget(n, static_cast<int64_t>(ppm)),
                exact_floor < 1 ? uint64_t{1} : exact_floor);
  }
  std::printf("kvpress int(100 * 0.29): %lld exact %d\n",
              static_cast<long long>(std::trunc(100 * 0.29)), 100 * 290 / 1000);
  std::printf("presence query_heads: absent -> %u; present 0 -> %u; present 4 -> %u\n",
              EffectiveHeads(std::nullopt), EffectiveHeads(0), EffectiveHeads(4));
  // uint32 fields (protobuf C++: uint32_t) hold every value up to 2^32 - 1.
  const uint32_t admit = 4294967295u;
  const uint32_t half = 2147483648u;
  std::printf("u32 field 4294967295: %" PRIu32 "; 2^31 > 1 as u32: %s\n", admit,
              half > 1u ? "true" : "false");
  // The sign bit: std::signbit, never == or < (-0.0 == 0.0 is true).
  const double positive_zero = 0.0, negative_zero = -0.0;
  const uint32_t minus_zero_bits = 0x80000000u;  // a binary32 weight's bits
  float weight;
  std::memcpy(&weight, &minus_zero_bits, sizeof(weight));
  std::printf("sign bit: +0.0 -> %d; -0.0 -> %d; binary32 -0.0 -> %d; -0.0 == +0.0: %s\n",
              std::signbit(positive_zero) ? 1 : 0, std::signbit(negative_zero) ? 1 : 0,
              std::signbit(weight) ? 1 : 0, negative_zero == positive_zero ? "true" : "false");

  // spec/elementary.md#golden-values: the inputs' bits; the results computed.
  const uint64_t exp_inputs[] = {
      0x3ff0000000000000, 0xbff0000000000000, 0x3fe0000000000000, 0x3ddb7cdfd9d7bdbb,
      0x39b4484bfeebc2a0, 0x4024000000000000, 0xc034800000000000, 0x40862e3d70a3d70a,
      0x4086300000000000, 0xc086240000000000, 0xc087480000000000, 0xc087500000000000};
  const uint64_t log_inputs[] = {
      0x4000000000000000, 0x4024000000000000, 0x3fe0000000000000, 0x3ff000001ad7f29b,
      0x3ff6666666666666, 0x3fe6666666666666, 0x0000000000000001, 0x7fefffffffffffff,
      0x0000000000000000, 0x7ff0000000000000};
  for (uint64_t b : exp_inputs) {
    std::printf("exp 0x%016" PRIx64 " -> 0x%016" PRIx64 "\n", b, BitsOf(Exp(FromBits(b))));
  }
  for (uint64_t b : log_inputs) {
    std::printf("log 0x%016" PRIx64 " -> 0x%016" PRIx64 "\n", b, BitsOf(Log(FromBits(b))));
  }
  // Spot checks: one generator across the families, in order.
  Rng spot(2026);
  for (const SpotFamily& family : kSpotFamilies) {
    uint64_t d = 0xcbf29ce484222325ULL;
    for (int i = 0; i < 1000; ++i) {
      d = (d ^ BitsOf(family.function(family.input(spot.Next())))) * 0x100000001b3ULL;
    }
    std::printf("spot %s: 0x%016" PRIx64 "\n", family.name, d);
  }
  return 0;
}
