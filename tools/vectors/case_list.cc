// Spec: spec/vectors.md#case-lists
#include "tools/vectors/case_list.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/vectors/case_id.h"

namespace kvspec {
namespace vectors {

absl::StatusOr<std::vector<ListedCase>> ParseCaseList(absl::string_view text) {
  std::vector<ListedCase> cases;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const std::string where = absl::StrCat("line ", line_number, ": ");
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty() || fields[0][0] == '#') continue;
    if (fields.size() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected 4 fields (<case-id> <scenario-file> <policy> "
                 "<name=value,...>|-), got ", fields.size()));
    }
    ListedCase c;
    c.id = std::string(fields[0]);
    if (!WellFormedId(c.id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "case id '", c.id, "' is not <group>/<topic>/<name> of [a-z0-9.-]"));
    }
    c.scenario_file = std::string(fields[1]);
    c.policy.name = std::string(fields[2]);
    if (fields[3] != "-") {
      std::set<std::string> seen;
      for (absl::string_view item : absl::StrSplit(fields[3], ',')) {
        std::vector<absl::string_view> pair = absl::StrSplit(item, absl::MaxSplits('=', 1));
        if (pair.size() != 2 || pair[0].empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "'", item, "' is not name=integer"));
        }
        const std::string name(pair[0]);
        if (!seen.insert(name).second) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "'", name, "' is given twice"));
        }
        if (name == "preset") {
          if (pair[1].empty()) {
            return absl::InvalidArgumentError(absl::StrCat(where, "preset names no preset"));
          }
          c.preset = std::string(pair[1]);
          continue;
        }
        if (name == "seed") {
          if (!absl::SimpleAtoi(pair[1], &c.policy.seed)) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, "seed '", pair[1], "' is not an integer in [0, 2^64 - 1]"));
          }
          continue;
        }
        Parameter p;
        p.name = name;
        if (!absl::SimpleAtoi(pair[1], &p.value)) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "'", item, "' is not name=integer (the value must fit int64)"));
        }
        c.policy.parameters.push_back(std::move(p));
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace vectors
}  // namespace kvspec
