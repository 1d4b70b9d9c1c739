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
#include <optional>
#include <string>
#include <vector>

#include "spec/kvspec.pb.h"
#include "tools/search/generator.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// The features a case decides: each feature it needs whose rule changes its
// log: the case run without the feature's wire fields (as a port lacking
// only it reads them, spec/features.md#a-port-without-a-feature) and
// without its parameters (each then at its default) gets another log than
// `expected` (messages aside). A port lacking the feature would refuse its
// parameters by name; that refusal is not counted, since it says nothing of
// the rule.
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
// 0 .. search_cases - 1 of `seed` (each run through the reference), over
// accepted cases only: in a refused case a feature "decides" by moving or
// removing the refusal, which says little of its rule among the others.
CombinationCounts CountCombinations(const vectors::VectorSet& set, uint64_t seed,
                                    int64_t search_cases);

// A markdown table, every combination the search or the vectors decide,
// the gaps (the search decides it, no vector does) marked, and a count.
std::string CombinationTable(const CombinationCounts& counts);

// The combinations the search decides and no vector does.
std::vector<std::string> Gaps(const CombinationCounts& counts);

// Whether case `c`, run through the reference, is accepted and decides
// `combination`.
bool DecidesCombination(const search::SearchCase& c, const std::string& combination);

// A small case deciding `combination`: of the search's accepted cases 0 ..
// search_cases - 1 of `seed` that decide it and evict some position (any
// that decide it when none evicts), the smallest (CaseSize), shrunk while
// it still decides it, stays accepted and still evicts, by the search's own
// moves
// (search::ShrinkMoves), first move that keeps it, until none does or
// `max_rounds`. Sets `index` to the case it started from and `rounds`.
// nullopt when no case decides it.
std::optional<search::SearchCase> ShrunkWitness(const std::string& combination,
                                                uint64_t seed, int64_t search_cases,
                                                int max_rounds, int64_t& index,
                                                int& rounds);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_COMBINATIONS_H_
