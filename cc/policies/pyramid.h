// Internal: PyramidKV's per-layer budget at a prefill step, a mode of snapkv
// (spec/policies/pyramidkv.md): the two pinned formulas, kvpress's in
// binary64 and KVCache-Factory's in integers, and the mode's parameters.
#ifndef KVSPEC_CC_POLICIES_PYRAMID_H_
#define KVSPEC_CC_POLICIES_PYRAMID_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "cc/config.h"
#include "cc/policies/entries.h"

namespace kvspec {
namespace policies {

// pyramidkv.md#parameters, listed after snapkv's prefill parameters.
inline std::vector<ParameterInfo> PyramidParameters() {
  return {
      {"pyramid", 0, 0, 2,
       "0 off; 1 kvpress's per-layer prefill budget, from ratio_ppm; 2 "
       "KVCache-Factory's, from budget"},
      {"pyramid_beta", 20, 1, 1 << 20,
       "the pyramid's steepness: the last layer keeps about "
       "1/pyramid_beta of the mean layer's share"},
      {"layer", 0, 0, 65535, "this run's layer, 0 the first"},
      {"layers", 1, 1, 65536, "the model's layer count"},
  };
}

// The mode's values, read once by StepBudgetRule::Of.
struct PyramidRule {
  int64_t formula = 0;  // pyramid: 0 off, 1 kvpress, 2 KVCache-Factory
  int64_t beta = 20;
  int64_t layer = 0;
  int64_t layers = 1;
  int64_t window = 0;  // obs_window: the formulas' w
};

// pyramidkv.md#pyramid-1-kvpress: Python's round(), half to even. `x` >= 0.
inline double RoundHalfEven(double x) {
  const double low = std::floor(x);
  const double diff = x - low;  // exact: x and low share an exponent range
  if (diff < 0.5) return low;
  if (diff > 0.5) return low + 1.0;
  return std::fmod(low, 2.0) == 0.0 ? low : low + 1.0;
}

// pyramidkv.md#pyramid-1-kvpress: the value B rounds, each operation in
// binary64 in the card's order. `*fallback` is set when the check fails
// (the value is then u, the ratio's budget before rounding).
inline double PyramidKvpressRaw(const PyramidRule& rule, size_t kept,
                                int64_t ratio_ppm, bool* fallback) {
  const double r = static_cast<double>(ratio_ppm) / 1000000.0;
  const double t = 1.0 - r;
  const double n = static_cast<double>(kept);
  const double w = static_cast<double>(rule.window);
  const double u = n * t;
  const double c = w + u;
  const double a = c - w;
  double lo = a / static_cast<double>(rule.beta);
  double hi = a * 2.0 - lo;
  if (hi >= n - w) {  // n - w is exact and may be negative
    hi = n - w;
    lo = a * 2.0 - hi;
  }
  if (!(n >= hi && hi >= lo && lo >= w)) {
    *fallback = true;
    return u;
  }
  *fallback = false;
  const double steps =
      rule.layers > 1 ? (hi - lo) / static_cast<double>(rule.layers - 1) : 0.0;
  return hi - static_cast<double>(rule.layer) * steps;
}

// pyramidkv.md#pyramid-1-kvpress: the layer's budget.
inline size_t PyramidKvpressBudget(const PyramidRule& rule, size_t kept,
                                   int64_t ratio_ppm) {
  bool fallback = false;
  const double raw = PyramidKvpressRaw(rule, kept, ratio_ppm, &fallback);
  const double rounded = RoundHalfEven(raw);
  if (fallback && rounded < 1.0) return 1;
  return static_cast<size_t>(rounded);
}

// pyramidkv.md#pyramid-2-kvcache-factory: the layer's budget of prefix
// positions, in integers. `budget` < 2^32, `kept` < 2^32.
inline size_t PyramidFactoryBudget(const PyramidRule& rule, size_t kept,
                                   size_t budget) {
  const int64_t n = static_cast<int64_t>(kept);
  const int64_t b = static_cast<int64_t>(budget);
  const int64_t w = rule.window;
  if (n < b + w || n < 2 * b) return budget;
  int64_t lo = b / rule.beta;
  int64_t hi = 2 * b - lo;
  if (hi >= n - w) {
    hi = n - w;
    lo = 2 * b - hi;
  }
  // hi - lo >= 0 here (n - w >= b), so / is floor division.
  const int64_t steps = rule.layers > 1 ? (hi - lo) / (rule.layers - 1) : 0;
  return static_cast<size_t>(hi - rule.layer * steps);
}

}  // namespace policies
}  // namespace kvspec

#endif  // KVSPEC_CC_POLICIES_PYRAMID_H_
