// The tie-breaking audit and the rule census over the vector suite.
//
// Audit: for one case, every eviction where a tie at the cut decided a
// victim, with the tied positions and their scores.
//
// Census: for every case and each of its flags, whether the flag's rule
// decided the case: the rule's counterfactual (a parameter one step weaker, a
// scenario transform, or a mutant policy of tools/census/mutants.h) evicts
// differently, or, for a tie, the tie is at the cut. Spec: spec/vectors.md#flags.
#ifndef KVSPEC_TOOLS_CENSUS_CENSUS_H_
#define KVSPEC_TOOLS_CENSUS_CENSUS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// One line per decisive tie in the case, human-readable. Empty when no tie
// decided anything; an error line when the case is not found.
std::vector<std::string> AuditCase(const vectors::LoadedCase& loaded);

struct CensusResult {
  // (flag, policy) -> cases the flag decided.
  std::map<std::pair<std::string, std::string>, int> decided;
  // flag -> cases it decided, whatever the policy (an unknown one included).
  std::map<std::string, int> decided_total;
  // Problems that fail the census: a flag on a case that it did not decide;
  // a required (flag, policy) that decided no case.
  std::vector<std::string> failures;
};

CensusResult RunCensus(const vectors::VectorSet& set);

// The census as a markdown table: one row per flag, one column per policy.
std::string CensusTable(const CensusResult& result);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_CENSUS_H_
