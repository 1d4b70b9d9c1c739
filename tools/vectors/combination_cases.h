// The cases that close the gaps of the feature-combination census
// (tools/census/combinations.h, tools/README.md#audit-ties-and-the-census):
// for each feature decided together with another feature or a scenario
// property that the differential search's cases decide and no other vector
// did, the search's smallest such case, shrunk while it still decides the
// combination (`audit --combinations --witnesses` prints them). Each is
// kept here as the protobuf text the search printed, so that a reader sees
// exactly the request a port gets.
#ifndef KVSPEC_TOOLS_VECTORS_COMBINATION_CASES_H_
#define KVSPEC_TOOLS_VECTORS_COMBINATION_CASES_H_

#include <string>
#include <vector>

#include "cc/harness.h"
#include "tools/vectors/cases.h"

namespace kvspec {
namespace vectors {

struct CombinationCase {
  Scenario scenario;  // id "combination-<feature>-with-<other>"
  CaseSpec spec;      // id "search/combination/<feature>-with-<other>"
};

// Every such case, in the order of the census's table.
std::vector<CombinationCase> CombinationCases();

// "adaptive + ratio" for a case id "search/combination/adaptive-with-ratio";
// "" for an id of another form.
std::string CombinationOfCase(const std::string& case_id);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_COMBINATION_CASES_H_
