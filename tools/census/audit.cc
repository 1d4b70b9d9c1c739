// audit: the tie-breaking audit and the rule census of the vector suite.
//
//   bazel run -c opt //tools:audit -- <case id>     # its victims and the ties that decided them
//   bazel run -c opt //tools:audit -- --all         # the same for every case, then totals
//   bazel run -c opt //tools:audit -- --census      # how many cases each rule decided
//   bazel run -c opt //tools:audit -- --list        # every case id
//   bazel run -c opt //tools:audit -- --margins     # how close the score-based decisions are
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
#include "tools/census/combinations.h"
#include "tools/search/generator.h"
#include "tools/census/examples.h"
#include "tools/census/margins.h"
#include "tools/census/precision.h"
#include "tools/census/subjects.h"
#include "tools/vectors/load.h"

ABSL_FLAG(bool, census, false,
          "Print, for every flag (spec rule) and policy, how many cases the "
          "rule decided, then every problem; exit 1 if a flag did not decide a "
          "case it is on, or a required (flag, policy) decided none.");
ABSL_FLAG(std::string, spec, "spec",
          "With --census: the spec folder whose worked examples must each "
          "name a vector (spec/vectors.md#the-suite).");
ABSL_FLAG(bool, combinations, false,
          "Report which features the vectors and the differential search's "
          "cases decide, alone, in pairs and with scenario properties, and the "
          "combinations only the search decides (tools/census/combinations.h).");
ABSL_FLAG(int64_t, search_cases, 3000,
          "With --combinations or --census: the search's cases 0..N-1 of seed "
          "1 whose feature combinations the vectors must decide too.");
ABSL_FLAG(bool, witnesses, false,
          "With --combinations: for each combination only the search decides, "
          "print a small case deciding it (the smallest search case that does, "
          "shrunk while it still does), as protobuf text.");
ABSL_FLAG(bool, margins, false,
          "Print how far apart, relatively, the scores at each score-based "
          "eviction of the suite are, by the epsilon of each precision "
          "(tools/census/margins.h).");
ABSL_FLAG(bool, list, false, "List every case id with its flags.");
ABSL_FLAG(bool, all, false,
          "Audit every case (as `audit <case id>` does), then print the "
          "totals: cases, evicting steps, deciding ties. Exit 1 if a case's "
          "audit disagrees with its expected log.");
ABSL_FLAG(bool, deciding_only, false,
          "With a case id or --all: print only the steps where a tie "
          "decided victims.");
ABSL_FLAG(std::vector<std::string>, drop, {},
          "With --census: leave out these case IDs (comma-separated), to see "
          "what the census says of a suite without them.");
ABSL_FLAG(std::vector<std::string>, skip, {},
          "With --census: leave out these checks (comma-separated: features, "
          "precision, combinations), each of which re-runs every case. For "
          "census_test.sh's runs with --drop, whose expected failure comes "
          "from another check; the output names what was skipped.");
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
  if (absl::GetFlag(FLAGS_margins)) {
    std::printf("%s", audit::MarginTable(audit::MeasureMargins(*set)).c_str());
    return 0;
  }
  if (absl::GetFlag(FLAGS_combinations)) {
    const audit::CombinationCounts counts =
        audit::CountCombinations(*set, 1, absl::GetFlag(FLAGS_search_cases));
    std::printf("%s", audit::CombinationTable(counts).c_str());
    if (absl::GetFlag(FLAGS_witnesses)) {
      for (const std::string& gap : audit::Gaps(counts)) {
        int64_t index = -1;
        int rounds = 0;
        const std::optional<search::SearchCase> witness = audit::ShrunkWitness(
            gap, 1, absl::GetFlag(FLAGS_search_cases), 200, index, rounds);
        if (!witness.has_value()) continue;
        std::printf("\n## %s: search --seed=1 case %lld, shrunk in %d rounds, size %llu\n%s",
                    gap.c_str(), static_cast<long long>(index), rounds,
                    static_cast<unsigned long long>(search::CaseSize(*witness)),
                    search::CaseText(*witness).c_str());
      }
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
    audit::CensusOptions options;
    bool run_precision = true, run_combinations = true;
    for (const std::string& part : absl::GetFlag(FLAGS_skip)) {
      if (part == "features") {
        options.features = false;
      } else if (part == "precision") {
        run_precision = false;
      } else if (part == "combinations") {
        run_combinations = false;
      } else {
        std::fprintf(stderr, "--skip: no check '%s' (features, precision, combinations)\n",
                     part.c_str());
        return 2;
      }
    }
    audit::CensusResult result = audit::RunCensus(kept, options);
    const int examples =
        audit::CheckWorkedExamples(kept, absl::GetFlag(FLAGS_spec), result.failures);
    // Refusal subjects (tools/census/subjects.h): each the spec gives has
    // a case, and each case's is one the spec gives.
    const int subjects =
        audit::CheckSubjects(kept, absl::GetFlag(FLAGS_spec), result.failures);
    // Features in combination (tools/census/combinations.h): every one the
    // search's first cases decide, some vector decides too.
    const audit::CombinationCounts combinations =
        run_combinations ? audit::CountCombinations(kept, 1, absl::GetFlag(FLAGS_search_cases))
                     : audit::CombinationCounts{};
    for (const std::string& gap : audit::Gaps(combinations)) {
      result.failures.push_back(absl::StrFormat(
          "combination %s: %d of the search's cases 0..%d (seed 1) decide it and no "
          "vector does (audit --combinations --witnesses prints a small case that does)",
          gap, combinations.search.at(gap), combinations.search_cases - 1));
    }
    std::printf("%s\n", audit::CensusTable(result).c_str());
    // spec/vectors.md#precision: the stored margins and terms, and every
    // flag's cases robust at each precision.
    if (run_precision) {
      const audit::PrecisionCensus precision =
          audit::MeasurePrecision(kept, result.decided_cases);
      std::printf("%s\n", audit::PrecisionTable(precision).c_str());
      result.failures.insert(result.failures.end(), precision.failures.begin(),
                             precision.failures.end());
    }
    for (const std::string& part : absl::GetFlag(FLAGS_skip)) {
      std::printf("skipped (--skip): the %s check\n", part.c_str());
    }
    for (const std::string& note : result.notes) {
      std::printf("note: %s\n", note.c_str());
    }
    for (const std::string& failure : result.failures) {
      std::printf("FAIL: %s\n", failure.c_str());
    }
    std::printf("%d worked examples in %s checked\n", examples,
                absl::GetFlag(FLAGS_spec).c_str());
    std::printf("%d distinct refusal subjects in the vectors\n",
                subjects);
    std::printf("%zu feature combinations decided by the vectors, against the "
                "search's first %lld cases\n",
                combinations.vectors.size(),
                static_cast<long long>(combinations.search_cases));
    std::printf("%zu cases, %zu census failures\n", kept.cases.size(),
                result.failures.size());
    return result.failures.empty() ? 0 : 1;
  }
  const bool all = absl::GetFlag(FLAGS_all);
  if (all ? args.size() != 1 : args.size() != 2) {
    std::fprintf(stderr, "usage: audit <case id> | --all | --census | --list\n");
    return 2;
  }
  std::vector<const vectors::LoadedCase*> cases;
  if (all) {
    for (const vectors::LoadedCase& c : set->cases) cases.push_back(&c);
  } else {
    cases.push_back(vectors::FindCase(*set, args[1]));
    if (cases[0] == nullptr) {
      std::fprintf(stderr, "no case '%s' (try --list)\n", args[1]);
      return 2;
    }
  }
  size_t steps = 0, deciding = 0, disagreeing = 0;
  for (const vectors::LoadedCase* c : cases) {
    const audit::CaseAudit result = audit::AuditCase(*c);
    std::printf("%s", audit::AuditText(result, absl::GetFlag(FLAGS_deciding_only)).c_str());
    for (const std::string& problem : audit::ExpectedLogProblems(*c, result)) {
      std::printf("  DISAGREES WITH THE EXPECTED LOG: %s\n", problem.c_str());
      ++disagreeing;
    }
    steps += result.steps.size();
    deciding += result.deciding_ties;
  }
  std::printf("%zu cases, %zu evicting steps, %zu deciding ties\n", cases.size(),
              steps, deciding);
  return disagreeing == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The tie-breaking audit and the rule census of kvspec's vectors.\n"
      "  audit <case id>   the case run as the harness runs it: each evicting\n"
      "                    step's victims per kept set, and each tie that\n"
      "                    decided them (equal scores on both sides of a cut)\n"
      "  audit --all       the same for every case, then the totals\n"
      "  audit --census    how many cases each spec rule decided, per policy\n"
      "  audit --list      every case id");
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  return kvspec::Main(args);
}
