// audit: the tie-breaking audit and the rule census of the vector suite.
//
//   bazel run //tools:audit -- <case id>     # the ties that decided victims
//   bazel run //tools:audit -- --census      # how many cases each rule decided
//   bazel run //tools:audit -- --list        # every case id
//
// Reads vectors/ (checked against its manifest first). Spec:
// spec/vectors.md#flags.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "tools/census/census.h"
#include "tools/vectors/load.h"

ABSL_FLAG(bool, census, false,
          "Print, for every flag (spec rule) and policy, how many cases the "
          "rule decided, then every problem; exit 1 if a flag did not decide a "
          "case it is on, or a required (flag, policy) decided none.");
ABSL_FLAG(bool, list, false, "List every case id with its flags.");
ABSL_FLAG(std::vector<std::string>, drop, {},
          "With --census: leave out these case IDs (comma-separated), to see "
          "what the census says of a suite without them.");
ABSL_FLAG(std::string, vectors, "",
          "The vectors/ folder to read. Default: vectors/ of "
          "$BUILD_WORKSPACE_DIRECTORY under `bazel run`, else ./vectors.");

namespace kvspec {
namespace {

int Main(const std::vector<char*>& args) {
  std::string directory = absl::GetFlag(FLAGS_vectors);
  if (directory.empty()) {
    const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    directory = std::string(workspace != nullptr ? workspace : ".") + "/vectors";
  }
  const absl::StatusOr<vectors::VectorSet> set = vectors::LoadVectorSet(directory);
  if (!set.ok()) {
    std::fprintf(stderr, "%s\n", std::string(set.status().message()).c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_list)) {
    for (const vectors::LoadedCase& c : set->cases) {
      std::string flags;
      for (const std::string& flag : c.vector->flags()) flags += " " + flag;
      std::printf("%s%s\n", c.vector->id().c_str(), flags.c_str());
    }
    return 0;
  }
  if (absl::GetFlag(FLAGS_census)) {
    vectors::VectorSet kept = *set;
    for (const std::string& id : absl::GetFlag(FLAGS_drop)) {
      const auto it = std::find_if(kept.cases.begin(), kept.cases.end(),
                                   [&](const vectors::LoadedCase& c) {
                                     return c.vector->id() == id;
                                   });
      if (it == kept.cases.end()) {
        std::fprintf(stderr, "--drop: no case '%s'\n", id.c_str());
        return 2;
      }
      kept.cases.erase(it);
    }
    const audit::CensusResult result = audit::RunCensus(kept);
    std::printf("%s\n", audit::CensusTable(result).c_str());
    for (const std::string& failure : result.failures) {
      std::printf("FAIL: %s\n", failure.c_str());
    }
    std::printf("%zu cases, %zu census failures\n", kept.cases.size(),
                result.failures.size());
    return result.failures.empty() ? 0 : 1;
  }
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: audit <case id> | --census | --list\n");
    return 2;
  }
  const vectors::LoadedCase* found = vectors::FindCase(*set, args[1]);
  if (found == nullptr) {
    std::fprintf(stderr, "no case '%s' (try --list)\n", args[1]);
    return 2;
  }
  std::printf("%s: %s\n", found->vector->id().c_str(),
              found->vector->description().c_str());
  const std::vector<std::string> lines = audit::AuditCase(*found);
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  std::printf("%zu evictions decided by a tie at the cut\n", lines.size());
  return 0;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The tie-breaking audit and the rule census of kvspec's vectors.\n"
      "  audit <case id>   every eviction where a tie at the cut decided a victim\n"
      "  audit --census    how many cases each spec rule decided, per policy\n"
      "  audit --list      every case id");
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  return kvspec::Main(args);
}
