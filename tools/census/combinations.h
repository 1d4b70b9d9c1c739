// Features in combination (issue 33, section 3): which features a case
// decides, alone and together with each other feature and with each
// scenario property, counted over the vectors and over the differential
// search's cases, so that a combination the search produces but no vector
// decides shows. A report for now (audit --combinations); the census does
// not yet fail on a gap.
#ifndef KVSPEC_TOOLS_CENSUS_COMBINATIONS_H_
#define KVSPEC_TOOLS_CENSUS_COMBINATIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "spec/kvspec.pb.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// The features a case decides: each feature it needs whose absence (a port
// that lacks only it, spec/features.md#a-port-without-a-feature) changes
// its log from `expected` (messages aside).
std::vector<std::string> DecidedFeatures(const v1::PolicyConfig& policy,
                                         const v1::Scenario& scenario,
                                         const v1::EvictionLog& expected);

// The scenario properties a combination is counted with: "several-heads"
// (query_heads > 1), "cache-before-prefill" (a prefill step after
// positions were admitted), "decode-after-prefill" (a step without query
// rows after one with them), "ratio" (ratio_ppm above 0).
std::vector<std::string> Properties(const v1::PolicyConfig& policy,
                                    const v1::Scenario& scenario);

// "a" alone, "a + b" for two decided features (in list order), "a + p" for
// a decided feature and a property.
std::vector<std::string> Combinations(const std::vector<std::string>& decided,
                                      const std::vector<std::string>& properties);

struct CombinationCounts {
  std::map<std::string, int64_t> vectors;  // combination -> cases
  std::map<std::string, int64_t> search;
  int64_t search_cases = 0;
};

// Counts the vectors' combinations, and those of the search's cases
// 0 .. search_cases - 1 of `seed` (each run through the reference).
CombinationCounts CountCombinations(const vectors::VectorSet& set, uint64_t seed,
                                    int64_t search_cases);

// A markdown table, every combination the search or the vectors decide,
// the gaps (the search decides it, no vector does) marked, and a count.
std::string CombinationTable(const CombinationCounts& counts);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_COMBINATIONS_H_
