// The runner's judgement of a port that declares a precision below binary64
// (or a binary64 port run with --nostrict_binary64): spec/protocol.md#precision.
//
// The reference is run again on the case, watching its rankings, so every
// candidate's binary64 score is known. Then, step by step:
//   - everything but victims and cuts must be equal, as for any port;
//   - equal victims: each cut entry the port reports must be a candidate
//     whose port score lies within the judging bound of the reference's
//     (spec/arithmetic.md#the-bound), the cut in the port's own rank order,
//     each rank's position the reference's or one whose reference score the
//     bound cannot tell from it;
//   - other victims: `within precision` when every position the port
//     evicted instead could have been ranked, within the bound, at or below
//     every position it kept instead (so only positions inside the band
//     were exchanged); the rest of the case is not judged. Anything else is
//     a mismatch.
// A case exact at the port's precision (spec/arithmetic.md#exact-cases) is
// judged bit for bit, as a binary64 port is.
#ifndef KVSPEC_CONFORMANCE_PRECISION_JUDGE_H_
#define KVSPEC_CONFORMANCE_PRECISION_JUDGE_H_

#include <string>

#include "cc/precision.h"
#include "spec/kvspec.pb.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace conformance {

enum class PrecisionVerdict {
  kExact,        // exact at the precision: judge bit for bit
  kPass,         // every step agrees within the bound
  kWithin,       // the first difference is an exchange inside the band
  kMismatch,     // anything else
};

struct PrecisionJudgement {
  PrecisionVerdict verdict = PrecisionVerdict::kMismatch;
  // For kWithin and kMismatch: the step, what differs, and why it is or is
  // not inside the band (several lines, no trailing newline).
  std::string detail;
  int step = -1;
};

// `compare_cut`: false under --nocut (cuts are left out on both sides).
PrecisionJudgement JudgeWithinPrecision(const vectors::LoadedCase& loaded,
                                        const kvspec::v1::EvictionLog& actual,
                                        const PortPrecision& precision,
                                        bool compare_cut);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_PRECISION_JUDGE_H_
