// Ports of lower precision (spec/arithmetic.md#ports-of-lower-precision):
// the error bound of a score computed in binary32, bfloat16 or float16
// instead of binary64, and whether a score-based eviction is decided by
// more than that bound. The vectors carry each case's score terms and
// smallest decision margin (spec/vectors.md#precision), the census counts
// the cases each precision decides, and the runner judges a port that
// declares a precision by these rules (spec/protocol.md#precision).
//
// Example:
//   const ErrorBound bound = JudgingBound({Precision::kBfloat16,
//                                          Precision::kBinary32}, terms);
//   if (Separated(bound, decision.victim, decision.survivor)) ...  // must match
#ifndef KVSPEC_CC_PRECISION_H_
#define KVSPEC_CC_PRECISION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "cc/config.h"
#include "cc/harness.h"

namespace kvspec {

// The formats a port may compute scores in.
enum class Precision { kBinary64, kBinary32, kBfloat16, kFloat16 };

// "binary64", "binary32", "bfloat16", "float16".
std::string PrecisionName(Precision precision);
std::optional<Precision> ParsePrecision(const std::string& name);

// u, the unit roundoff (half the gap from 1 to the next number): 2^-53,
// 2^-24, 2^-8, 2^-11.
double UnitRoundoff(Precision precision);
// eta, half the smallest subnormal: the most a rounding in the subnormal
// range can err by, absolutely: 2^-150, 2^-134, 2^-25 (binary64: 2^-1074,
// its smallest subnormal, since half of it is not a binary64).
double SubnormalError(Precision precision);

// What a port declares in its hello (spec/protocol.md#precision): the
// precision it reads weights in, and the one every operation on them is
// carried and kept in.
struct PortPrecision {
  Precision score = Precision::kBinary64;
  Precision accumulate = Precision::kBinary64;
  bool operator==(const PortPrecision& other) const {
    return score == other.score && accumulate == other.accumulate;
  }
};
// "binary64", or "bfloat16 (accumulate binary32)" when the two differ.
std::string PortPrecisionName(const PortPrecision& precision);

// spec/arithmetic.md#score-terms: T = R x K x B, R the rows the scenario
// hands its query heads (a decode row, a query row or a column-totals list
// each count 1; a null step 0), K the configuration's `pool_kernel` and B
// its `block` (each 1 without one, and for a refused configuration). At
// least 1.
uint64_t ScoreTerms(const PolicyConfig& config, const Scenario& scenario);

// spec/arithmetic.md#exact-cases: every score the case computes is exact
// at the precision, whatever the order of its sums: every weight and column
// total is a multiple of 2^-g whose sum over the whole scenario is below
// 2^(t - g) (t the significand bits of the narrower of the two precisions,
// 2^-g within its subnormal range), and the configuration divides by
// nothing (spec/arithmetic.md lists the parameters that divide). A
// generated trace is never exact; a refused configuration always is.
bool ExactAt(const PortPrecision& precision, const PolicyConfig& config,
             const Scenario& scenario);

// spec/arithmetic.md#range: no score of the case exceeds its weight
// ceiling, the sum of every weight and column total it hands a policy (a
// generated trace: 8 per row, spec/arithmetic.md#range says why).
double WeightCeiling(const Scenario& scenario);
// The largest finite number of the narrower of the two precisions.
double LargestFinite(const PortPrecision& precision);

// |computed - s| <= relative * s + absolute for every score s >= 0; not
// finite: no bound (the precision cannot hold that many operations), and
// no decision is robust.
struct ErrorBound {
  double relative = 0.0;
  double absolute = 0.0;
  bool finite = true;
};
// spec/arithmetic.md#the-bound: a score computed from exact (real) inputs
// with the port's precision, against its exact value.
ErrorBound ScoreBound(const PortPrecision& precision, uint64_t terms);
// spec/arithmetic.md#the-bound: the port's score against the reference's
// binary64 one (both sides' errors).
ErrorBound JudgingBound(const PortPrecision& precision, uint64_t terms);

// spec/arithmetic.md#range: the bound holds only where no computed score
// can overflow: Upper(bound, ceiling) below the largest finite number.
// A policy that scores from keys is in range at binary64 only.
bool InRange(const PortPrecision& precision, const ErrorBound& bound,
             const PolicyConfig& config, const Scenario& scenario);

// The most and least a score s may be computed as, within `bound`: the
// relative part scales |s| (scores from keys are negative).
double Upper(const ErrorBound& bound, double s);
double Lower(const ErrorBound& bound, double s);
// True when no computation within `bound` can rank `survivor` at or below
// `victim`: Lower(survivor) > Upper(victim).
bool Separated(const ErrorBound& bound, double victim, double survivor);

// One score-based decision (spec/arithmetic.md#decision-margins): the
// highest score taken and the lowest score it could have taken instead.
struct Decision {
  double victim = 0.0;
  double survivor = 0.0;
};
// Of an observed ranking: for an own ranking the last victim and the first
// survivor; for a joint ranking the last pair the walk took and the first
// later pair it left whose set, with that pair given back, is above the
// floor. nullopt: no victim, or no such survivor.
std::optional<Decision> DecisionOf(const RankingObservation& ranking);
// (survivor - victim) / max(|survivor|, |victim|): 0 for equal scores, 1
// for a survivor of +infinity above a finite victim. In [0, 1] for scores
// of one sign (weights' are >= 0, knorm's <= 0); up to 2 for a negative
// victim below a positive survivor (keydiff's scores are of either sign).
double RelativeMargin(const Decision& decision);

}  // namespace kvspec

#endif  // KVSPEC_CC_PRECISION_H_
