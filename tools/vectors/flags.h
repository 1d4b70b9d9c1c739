// The flags a vector case carries: each names one spec rule the case exists
// for. spec/vectors.md#flags renders this table (a generated block), and
// tools/census/audit --census counts, for each flag, the cases it decided.
#ifndef KVSPEC_TOOLS_VECTORS_FLAGS_H_
#define KVSPEC_TOOLS_VECTORS_FLAGS_H_

#include <string>
#include <vector>

namespace kvspec {
namespace vectors {

struct FlagInfo {
  std::string name;
  // The spec paragraph that states the rule, e.g. "harness.md#victims".
  std::string rule;
  // One line: what a case with this flag shows.
  std::string note;
  // Policies for which the suite must hold at least one case this flag
  // decided (tools/census/audit --census fails otherwise).
  std::vector<std::string> required_for;
  // The spec version in which the rule was introduced or last changed
  // (spec/features.md#since): a case with this flag has its outcome set no
  // earlier.
  std::string since = "0.1.0";
};

// Every flag, in the order spec/vectors.md lists them.
const std::vector<FlagInfo>& Flags();

// nullptr if `name` is not a flag.
const FlagInfo* FindFlag(const std::string& name);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_FLAGS_H_
