#include "cc/rng.h"

#include <cassert>

namespace kvspec {
namespace {

uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Number of significant bits of x: 0 for 0, 64 for 2^63 and above.
int BitLength(uint64_t x) {
  int bits = 0;
  while (x != 0) {
    ++bits;
    x >>= 1;
  }
  return bits;
}

}  // namespace

uint64_t SplitMix64Next(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Rng::Rng(uint64_t seed) {
  uint64_t splitmix_state = seed;
  for (uint64_t& word : state_) word = SplitMix64Next(splitmix_state);
}

uint64_t Rng::Next() {
  const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = RotateLeft(state_[3], 45);
  return result;
}

uint64_t Rng::Uniform(uint64_t n) {
  assert(n >= 1 && "Rng::Uniform requires n >= 1");
  if (n == 1) return 0;
  // Bitmask rejection: take the top `bits` bits of each output, where `bits`
  // is just enough to represent n - 1, and retry until the value is below n.
  const int bits = BitLength(n - 1);
  while (true) {
    const uint64_t candidate = Next() >> (64 - bits);
    if (candidate < n) return candidate;
  }
}

double Rng::UniformDouble() {
  return static_cast<double>(Next() >> 11) * 0x1.0p-53;
}

float Rng::UniformFloat() {
  return static_cast<float>(Next() >> 40) * 0x1.0p-24f;
}

}  // namespace kvspec
