// The vector suite: every case kvspec publishes, as definitions. The
// expected results are never written here; tools/vectors/generate.h computes
// them with the reference.
//
// Case IDs are stable: a case is never renumbered, renamed or reused. A case
// that must change meaning gets a new ID.
#ifndef KVSPEC_TOOLS_VECTORS_CASES_H_
#define KVSPEC_TOOLS_VECTORS_CASES_H_

#include <map>
#include <string>
#include <vector>

#include "cc/harness.h"
#include "cc/registry.h"

namespace kvspec {
namespace vectors {

struct CaseSpec {
  // "<group>/<topic>/<name>"; the group names the file.
  std::string id;
  std::vector<std::string> flags;
  std::string description;
  PolicyConfig policy;
  std::string scenario_id;
};

struct Suite {
  std::vector<Scenario> scenarios;
  std::vector<CaseSpec> cases;
  // Scenario ID -> trace fields written absent on the wire (proto field
  // names). An absent field takes its default (spec/trace.md#parameters), so
  // the scenario's TraceConfig must hold the default there; the generator
  // checks it.
  std::map<std::string, std::vector<std::string>> absent_trace_fields;
};

// The whole suite, in file and case order.
Suite BuildSuite();

// Scenario transforms the census uses for counterfactuals (and tests).
// The canonical trace config with `steps`.
TraceConfig CanonicalTrace(uint32_t steps);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_CASES_H_
