// The census's check of refusal subjects (spec/harness.md#subjects): every
// subject the spec can give has a vector refused with it, and every subject
// a vector carries is one the spec gives.
#ifndef KVSPEC_TOOLS_CENSUS_SUBJECTS_H_
#define KVSPEC_TOOLS_CENSUS_SUBJECTS_H_

#include <set>
#include <string>
#include <vector>

#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// The subjects of the rules between parameters: the second table of
// harness.md's "## Subjects" section, each row's backticked subject and,
// for a row that says "(or `x`, `y`)", the same subject with its last name
// replaced by each. Empty when the section or table is missing.
std::set<std::string> RuleSubjects(const std::string& harness_md);

// Every subject the spec gives, as text ("range budget"): "unknown name";
// "unknown P" and "range P" for every parameter of every registered policy;
// "repeated budget"; "range trace.F" for every field of TraceConfig but
// its seed; the scenario's and step's subjects of the first table; and
// RuleSubjects.
std::set<std::string> SpecSubjects(const std::string& harness_md);

// Reads spec_dir/harness.md and adds a failure for a missing file or rule
// table, for each spec subject no case is refused with, and for each case
// whose expected subject the spec does not give (or that has none; any
// single name may be an unknown parameter).
// Returns how many distinct subjects the cases carry.
int CheckSubjects(const vectors::VectorSet& set, const std::string& spec_dir,
                  std::vector<std::string>& failures);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_SUBJECTS_H_
