// Decision margins of the vector suite: how far apart, relatively, the
// scores on the two sides of each score-based eviction are. A port that
// computes scores in a lower precision than binary64 (float32, bfloat16,
// float16) can only be expected to reproduce a decision whose margin its
// rounding cannot bridge; this measures how many of the suite's decisions
// are that close (issue 36's first measurement; no rule of spec/ yet).
//
// For an own ranking (spec/harness.md#victims) that evicts k >= 1
// candidates and keeps at least one: v is the k-th (last) victim's score,
// s the first survivor's; the margin is (s - v) / max(|s|, |v|), 0 when
// s == v (a tie at the cut, decided by the tie order). With blocks a
// candidate is a block and its score the block score (spec/blocks.md). A
// ranking that evicts every candidate has no survivor and no margin. In a
// joint ranking (spec/heads.md#head-adaptive-budgets) v is the last pair
// the walk took and s the first later pair it did not take whose set,
// with v given back, is above the floor (a pair it could have taken had
// the two scores changed places); none such: no margin.
//
// Example:
//   MarginReport report = MeasureMargins(*set);
//   std::printf("%s", MarginTable(report).c_str());
#ifndef KVSPEC_TOOLS_CENSUS_MARGINS_H_
#define KVSPEC_TOOLS_CENSUS_MARGINS_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cc/harness.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// The margin of one observed ranking, or nullopt (no victim, or no
// survivor that could have been taken instead).
std::optional<double> DecisionMargin(const RankingObservation& ranking);

// The buckets of a margin m, by the machine epsilon of each precision:
// 0: m == 0 (a tie); 1: m <= 2^-52 (binary64's epsilon); 2: m <= 2^-23
// (float32's); 3: m <= 2^-10 (float16's); 4: m <= 2^-7 (bfloat16's);
// 5: above. A decision in bucket b <= 2, 3 or 4 can be turned by one
// rounding of a score at float32, float16 or bfloat16 respectively.
constexpr int kMarginBuckets = 6;
int MarginBucket(double margin);

struct MarginCounts {
  // Decisions (rankings with a margin) per bucket. Cases per bucket of
  // their smallest margin above 0 (bucket 0 stays empty: a tie at a cut is
  // equal scores, which a port computing them alike also ties), and how
  // many cases have a tie at some cut.
  std::array<int64_t, kMarginBuckets> decisions{};
  std::array<int64_t, kMarginBuckets> cases{};
  int64_t cases_with_tie = 0;
  int64_t joint_rankings = 0;   // of the rankings, joint ones (measured too)
  int64_t no_survivor = 0;      // rankings that evict but have no margin
  int64_t cases_without = 0;    // score-based cases with no margin above 0
};

struct NarrowDecision {
  std::string case_id;
  int64_t step = 0;
  size_t set = 0;
  double margin = 0.0;
};

struct MarginReport {
  std::map<std::string, MarginCounts> by_policy;  // "h2o", "tova", "snapkv"
  MarginCounts all;
  // Every decision with 0 < margin <= 2^-23 (buckets 1 and 2), in suite
  // order: where even a float32 port may evict otherwise.
  std::vector<NarrowDecision> narrow;
  int64_t cases = 0;  // score-based cases run
};

MarginReport MeasureMargins(const vectors::VectorSet& set);
std::string MarginTable(const MarginReport& report);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_MARGINS_H_
