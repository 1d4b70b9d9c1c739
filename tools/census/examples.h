// The census's check of spec/'s worked examples (spec/vectors.md#the-suite,
// "Worked examples"): every example in the spec names the vector that
// runs its numbers, and every vector so named names the spec file back.
#ifndef KVSPEC_TOOLS_CENSUS_EXAMPLES_H_
#define KVSPEC_TOOLS_CENSUS_EXAMPLES_H_

#include <string>
#include <vector>

#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {

// One example found in a spec file: where, and the case IDs it names.
struct SpecExample {
  std::string file;  // relative to the spec folder, e.g. "policies/h2o.md"
  int line = 0;      // 1-based line of the word "Example"
  std::string text;  // the example's paragraph (or list item)
  std::vector<std::string> cases;
};

// The examples of one markdown text: every "Example" (capitalised, then
// ":", " (" or ",") and "Worked example", each with the paragraph it is
// in; a paragraph that starts "Worked examples" and holds a list gives one
// example per item. A case ID is a backticked token that starts with a
// suite family ("window/", "h2o/", "harness/", "prefill/", "search/", ...).
std::vector<SpecExample> FindExamples(const std::string& file,
                                      const std::string& markdown);

// Reads every *.md of `spec_dir` and spec_dir/policies, and adds a failure
// for: a folder it cannot read; an example that names no case; a named case
// the suite does not have; a named case whose description does not name
// the example's file ("h2o.md"). Returns how many examples it checked.
int CheckWorkedExamples(const vectors::VectorSet& set, const std::string& spec_dir,
                        std::vector<std::string>& failures);

}  // namespace audit
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_CENSUS_EXAMPLES_H_
