// The rule census (spec/vectors.md#flags): RunCensus asks of every flag on
// every case whether it decided the case (flags.cc), runs the suite's
// checks (suite.cc, bounds.cc, features.cc, identical_logs.cc) and fails a
// flag that decided no case it must; CensusTable prints the count per flag
// and policy. The tie audit is in tie_audit.cc.
#include "tools/census/census.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/census/census_internal.h"
#include "tools/vectors/flags.h"

namespace kvspec {
namespace audit {
namespace {

const char* const kPolicies[] = {"full", "window", "streamingllm", "h2o",
                                 "tova", "snapkv", "random"};

}  // namespace

using internal::CaseContext;
using internal::CheckBounds;
using internal::CheckDefaults;
using internal::CheckFeatures;
using internal::CheckForeignParameters;
using internal::CheckIdenticalLogs;
using internal::CheckLaterHeads;
using internal::ContextOf;
using internal::Decides;

CensusResult RunCensus(const vectors::VectorSet& set, const CensusOptions& options) {
  CensusResult result;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const CaseContext c = ContextOf(loaded);
    for (const std::string& flag : loaded.vector->flags()) {
      std::string note;
      if (Decides(flag, c, &note)) {
        ++result.decided[{flag, c.config.name}];
        ++result.decided_total[flag];
        result.decided_cases.insert({loaded.vector->id(), flag});
        if (!note.empty()) {
          result.notes.push_back(absl::StrCat("case ", loaded.vector->id(), ": ", note));
        }
      } else {
        result.failures.push_back(absl::StrFormat(
            "case %s: flag %s did not decide it", loaded.vector->id(), flag));
      }
    }
  }
  CheckBounds(set, result.failures);
  CheckForeignParameters(set, result.failures);
  CheckLaterHeads(set, result.failures);
  CheckDefaults(set, result.failures);
  if (options.features) CheckFeatures(set, result.failures);
  CheckIdenticalLogs(set, result.failures);
  for (const vectors::FlagInfo& flag : vectors::Flags()) {
    if (flag.required_for.empty() && result.decided_total[flag.name] == 0) {
      result.failures.push_back(absl::StrFormat(
          "flag %s decided no case in the suite", flag.name));
    }
    for (const std::string& policy : flag.required_for) {
      if (result.decided[{flag.name, policy}] == 0) {
        result.failures.push_back(absl::StrFormat(
            "flag %s decided no %s case", flag.name, policy));
      }
    }
  }
  return result;
}

std::string CensusTable(const CensusResult& result) {
  std::string table = "| flag |";
  for (const char* policy : kPolicies) table += absl::StrFormat(" %s |", policy);
  table += "\n| --- |";
  for (size_t i = 0; i < std::size(kPolicies); ++i) table += " ---: |";
  table += "\n";
  for (const vectors::FlagInfo& flag : vectors::Flags()) {
    table += absl::StrFormat("| `%s` |", flag.name);
    for (const char* policy : kPolicies) {
      const auto it = result.decided.find({flag.name, policy});
      const int n = it == result.decided.end() ? 0 : it->second;
      const bool required =
          std::find(flag.required_for.begin(), flag.required_for.end(), policy) !=
          flag.required_for.end();
      table += n > 0 ? absl::StrFormat(" %d |", n) : (required ? " **0** |" : " |");
    }
    table += "\n";
  }
  return table;
}

}  // namespace audit
}  // namespace kvspec
