// Rng: kvspec's one pseudo-random generator, xoshiro256** seeded through
// SplitMix64, specified bit for bit in spec/rng.md so that every port draws
// exactly the same numbers.
//
// Guarantees: the same seed gives the same sequence on every platform; every
// draw is built from 64-bit integer operations and exact conversions only;
// Uniform(n) has no modulo bias (bitmask rejection).
//
// Example:
//   Rng rng(42);
//   uint64_t victim_index = rng.Uniform(evictable_count);
//
// Spec: spec/rng.md
#ifndef KVSPEC_CC_RNG_H_
#define KVSPEC_CC_RNG_H_

#include <array>
#include <cstdint>

namespace kvspec {

// One step of SplitMix64 (spec/rng.md#splitmix64): advances `state` and
// returns the next output. Used to seed Rng; exposed for tests and ports.
uint64_t SplitMix64Next(uint64_t& state);

class Rng {
 public:
  // spec/rng.md#seeding: the four state words are the first four SplitMix64
  // outputs from `seed`.
  explicit Rng(uint64_t seed);

  // spec/rng.md#step: the next raw 64-bit output of xoshiro256**.
  uint64_t Next();

  // spec/rng.md#uniform-integer: a uniform integer in [0, n).
  // Requires: n >= 1. Uniform(1) returns 0 and consumes no output.
  uint64_t Uniform(uint64_t n);

  // spec/rng.md#uniform-float: a uniform double in [0, 1), a multiple of
  // 2^-53, from the top 53 bits of one output.
  double UniformDouble();

  // spec/rng.md#uniform-float: a uniform float in [0, 1), a multiple of
  // 2^-24, from the top 24 bits of one output.
  float UniformFloat();

  const std::array<uint64_t, 4>& state() const { return state_; }

 private:
  std::array<uint64_t, 4> state_;
};

}  // namespace kvspec

#endif  // KVSPEC_CC_RNG_H_
