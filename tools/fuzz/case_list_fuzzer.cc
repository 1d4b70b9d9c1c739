// libFuzzer target: the case-list parser of tools/vectors/vectors_from_scenarios
// (tools/vectors/case_list.h: ParseCaseList) refuses any text it does not
// understand with a status, never a crash; what it accepts holds no field
// that is empty or has a separator in it, and no parameter named twice.
// Built and run by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "tools/vectors/case_list.h"

namespace {

bool Clean(const std::string& field) {
  return !field.empty() && field.find_first_of(" \t\r\n") == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<kvspec::vectors::ListedCase>> cases =
      kvspec::vectors::ParseCaseList(text);
  if (!cases.ok()) {
    if (cases.status().message().rfind("line ", 0) != 0) std::abort();  // names no line
    return 0;
  }
  for (const kvspec::vectors::ListedCase& c : *cases) {
    if (!Clean(c.id) || !Clean(c.scenario_file) || !Clean(c.policy.name) || c.id[0] == '#') {
      std::abort();
    }
    std::set<std::string> names;
    for (const kvspec::Parameter& p : c.policy.parameters) {
      if (p.name.empty() || p.name == "seed" || p.name == "preset" ||
          !names.insert(p.name).second) {
        std::abort();
      }
    }
  }
  return 0;
}
