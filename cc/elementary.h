// The elementary functions a score may need beyond + - * / and sqrt: exp and
// log in binary64, each an algorithm of correctly rounded operations and
// exact bit manipulations, so that every port computes the same bits
// (spec/elementary.md). They are the algorithms of fdlibm 5.3's exp and log,
// which Java's StrictMath.exp and StrictMath.log are required to compute, so
// a Java port may call those and a port in any other language writes them
// out as spec/elementary.md does.
//
// Never call std::exp or std::log for a number that feeds a vector or a
// metric: glibc's do not give fdlibm's bits (spec/arithmetic.md#operations).
//
// Example:
//   double weight = Exp(score - max_score);   // a softmax term
//   double entropy_term = p * Log(p);
//
// Spec: spec/elementary.md
#ifndef KVSPEC_CC_ELEMENTARY_H_
#define KVSPEC_CC_ELEMENTARY_H_

#include "absl/types/span.h"

namespace kvspec {

// spec/elementary.md#exp: e^x. +inf above the overflow threshold, +0.0
// below the underflow threshold, NaN for NaN.
double Exp(double x);

// spec/elementary.md#log: the natural logarithm. -inf at +-0, NaN below zero
// and for NaN, +inf at +inf.
double Log(double x);

// spec/elementary.md#reductions-over-vectors: sqrt(sumsq(a)), the entries
// widened to binary64 (exactly), each squared, summed from index 0 into
// +0.0, then one IEEE sqrt.
double Norm(absl::Span<const float> a);

// The same for binary64 entries (no widening): sqrt of the squares summed
// from index 0 into +0.0.
double Norm(absl::Span<const double> a);

// spec/elementary.md#reductions-over-vectors: dot(a, b), the products
// a[i] * b[i] summed from index 0 into +0.0, each product rounded (no fused
// multiply-add). a and b have the same length.
double Dot(absl::Span<const double> a, absl::Span<const double> b);

// spec/elementary.md#reductions-over-vectors: mean(a), the entries summed
// from index 0 into +0.0, then one division by their number. a is not
// empty.
double Mean(absl::Span<const double> a);

// spec/elementary.md#reductions-over-vectors: std(a, c) = sqrt(variance(a,
// c)): mu = Mean(a), the squared deviations (a[i] - mu) * (a[i] - mu)
// summed from index 0 into +0.0, divided by n - c, one IEEE sqrt. Requires
// a.size() > c.
double Std(absl::Span<const double> a, size_t correction);

}  // namespace kvspec

#endif  // KVSPEC_CC_ELEMENTARY_H_
