// C++ recipe of spec/arithmetic.md#recipes-by-language, checked by
// tools/recipes/check.sh against tools/recipes/expected.txt.
// Build: g++ -std=c++17 -O2 -ffp-contract=off recipe.cc.
// uint64_t arithmetic wraps modulo 2^64 by definition; products of two
// 32-bit values are widened to 64 bits first; `/` truncates, which is floor
// for the spec's operands (never negative); std::optional models presence.
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
  return 0;
}
