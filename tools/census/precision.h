// The census of precision (spec/vectors.md#precision): every case's
// `score_terms` and `min_margin` recomputed from its scenario and the
// reference's rankings, and, for every flag, how many of the cases it
// decided each precision decides robustly: every score-based decision of
// the case separated by more than the precision's judging bound
// (spec/arithmetic.md#robust-decisions). A case with no score-based
// decision is robust at every precision.
//
// Example:
//   PrecisionCensus census = MeasurePrecision(set, decided_cases);
//   std::printf("%s", PrecisionTable(census).c_str());
#ifndef KVSPEC_TOOLS_CENSUS_PRECISION_H_
#define KVSPEC_TOOLS_CENSUS_PRECISION_H_

#include <array>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cc/precision.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// The precisions the census counts, in its table's order.
inline constexpr std::array<PortPrecision, 4> kCensusPrecisions = {{
    {Precision::kBinary32, Precision::kBinary32},
    {Precision::kBfloat16, Precision::kBinary32},
    {Precision::kFloat16, Precision::kFloat16},
    {Precision::kBfloat16, Precision::kBfloat16},
}};
// The precision every flag needs a robust case at (issue 36): a bfloat16
// model's weights with binary32 running sums, as GPU kernels keep them.
inline constexpr size_t kRequiredPrecision = 1;

// Rules observable only through binary64 rounding: in exact arithmetic the
// alternative the rule excludes ranks the same, so no port of lower
// precision can be judged on them (spec/vectors.md#precision). The census
// asks no robust case of them.
struct Binary64Rule {
  const char* flag;
  const char* why;
};
inline constexpr Binary64Rule kBinary64Rules[] = {
    {"h2o.binary64-sum", "binary32 and binary64 sums of the same weights"},
    {"heads.mean-rounding", "two sums that round to one binary64 mean"},
    {"prefill.window-reduce", "sum and mean rank alike but for rounding"},
    {"snapkv.ring-index-order", "the order of a binary64 sum"},
    {"empty-row.recorded",
     "an empty first row moves the ring's cursor, which changes only the order "
     "of the window's sums"},
};

struct PrecisionCensus {
  // flag -> cases it decided that are robust at kCensusPrecisions[i].
  std::map<std::string, std::array<int, kCensusPrecisions.size()>> robust;
  std::map<std::string, int> decided;  // flag -> cases it decided
  std::array<int, kCensusPrecisions.size()> robust_cases{};  // of the suite
  int cases = 0;
  // The suite's decisions by relative margin: 0 (a tie), <= 2^-20,
  // <= 2^-10, <= 2^-6, <= 2^-3, above.
  std::array<int64_t, 6> margins{};
  std::vector<std::string> failures;
};

// `decided`: (case id, flag) pairs the flag decided (RunCensus's).
PrecisionCensus MeasurePrecision(const vectors::VectorSet& set,
                                 const std::set<std::pair<std::string, std::string>>& decided);
std::string PrecisionTable(const PrecisionCensus& census);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_PRECISION_H_
