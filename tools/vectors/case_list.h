// A case list: the cases a vectors folder is to hold, each naming its
// scenario file and its policy configuration. tools/vectors/
// vectors_from_scenarios reads one and writes the folder, every expected log
// computed by the reference (tools/vectors/generate.h), so that a port's
// answers on scenarios of its own (a model's attention, say) are judged by
// the runner like any vector. Fuzzed by tools/fuzz.sh (case_list_fuzzer).
//
// The format, one case a line (spec/vectors.md#case-lists):
//
//   # a comment; blank lines are skipped
//   <case-id> <scenario-file> <policy> <name=value,...>|-
//
// fields separated by spaces or tabs, so a path holds neither; `-` for no
// parameters. Each value is a decimal integer (a parameter's value,
// cc/config.h); `seed=N` sets the policy's seed (spec/rng.md) rather than a
// parameter, and `preset=NAME` names a preset (spec/prefill.md#presets),
// expanded by the writer as simulate expands one (cc/presets.h), which
// refuses an unknown name. Nothing here checks the policy or its parameters: the
// generator runs the reference, which refuses what the registry refuses,
// and a refusal is a case's expected outcome like any other.
#ifndef KVSPEC_TOOLS_VECTORS_CASE_LIST_H_
#define KVSPEC_TOOLS_VECTORS_CASE_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cc/config.h"

namespace kvspec {
namespace vectors {

struct ListedCase {
  std::string id;             // "<group>/<topic>/<name>", as cases.h
  std::string scenario_file;  // a binary kvspec.v1.Scenario
  PolicyConfig policy;
  std::string preset;  // empty: none
};

// Parses a case list. Refusals (InvalidArgument) name the line: "line N: "
// then: a line of other than 4 fields; a case ID that is not
// <group>/<topic>/<name> of [a-z0-9.-] (spec/vectors.md#cases); a
// parameter that is not name=integer (the value must fit int64; seed,
// uint64); a name given twice.
// A duplicate case ID is left to the generator, which refuses it.
absl::StatusOr<std::vector<ListedCase>> ParseCaseList(absl::string_view text);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_CASE_LIST_H_
