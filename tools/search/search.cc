// The differential search: random scenarios over the whole input space
// (tools/search/generator.h), their expected logs from the reference, run
// through a port over the conformance protocol (spec/protocol.md) exactly as
// the runner runs vectors. Any disagreement is shrunk to the smallest
// scenario that still disagrees and written as a one-case vectors folder
// that the runner replays.
//
//   search --port='<command>' --seed=1 --cases=2000      # a budget in cases
//   search --port='<command>' --seed=7 --seconds=300     # or in seconds
//   search --write_corpus=DIR --seed=1 --cases=2000      # the cases as vectors
//   search --seed=1 --only=1234 --show                   # one case, as text
//   search --seed=1 --cases=5000 --stats                 # what the cases cover
//
// Exit status: 0 when every case agreed (or a corpus was written), 1 when
// a disagreement was found, 2 when the search itself could not run.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "conformance/runner.h"
#include "tools/search/generator.h"
#include "cc/proto_convert.h"
#include "tools/vectors/features.h"
#include "tools/vectors/generate.h"
#include "tools/vectors/load.h"

ABSL_FLAG(uint64_t, seed, 1, "Seed of the search: case I of seed S is the same everywhere.");
ABSL_FLAG(int64_t, cases, -1,
          "Budget: stop after running this many cases through the port (0: no "
          "limit). Default: 1000, or no limit when --seconds is given.");
ABSL_FLAG(double, seconds, 0, "Budget: stop starting batches after this many seconds (0: no limit).");
ABSL_FLAG(std::string, port, "", "The port's command line, as the runner's --port.");
ABSL_FLAG(std::string, write_corpus, "",
          "Write the cases, with the reference's expected logs, as a vectors folder "
          "(MANIFEST.json, search.pb, search.textproto) and run no port.");
ABSL_FLAG(int64_t, only, -1, "Generate only case I (with --show, --port or --write_corpus).");
ABSL_FLAG(bool, show, false, "Print each generated case as protobuf text.");
ABSL_FLAG(bool, stats, false, "Print how many cases carry each coverage tag.");
ABSL_FLAG(int64_t, batch, 250, "Cases per port run (one port process per batch).");
ABSL_FLAG(std::string, out, "search-out",
          "Folder for the shrunk disagreements, one vectors folder each.");
ABSL_FLAG(int64_t, max_disagreements, 1,
          "Stop after shrinking this many disagreements (0: never stop early).");
ABSL_FLAG(double, shrink_seconds, 300, "Time limit for shrinking one disagreement.");
ABSL_FLAG(double, timeout_seconds, 20, "Per-case timeout for the port, in seconds.");
ABSL_FLAG(std::string, work, "", "Scratch folder (default: a fresh one under $TMPDIR).");

namespace kvspec {
namespace search {
namespace {

using conformance::Outcome;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Named {
  std::string id;  // search/<topic>/<name>
  SearchCase c;
};

bool Disagrees(Outcome outcome) {
  return outcome != Outcome::kPass && outcome != Outcome::kSkipped &&
         outcome != Outcome::kNotRun;
}

// The cases as vectors files (expected logs from the reference).
absl::StatusOr<std::vector<vectors::GeneratedFile>> Files(const std::vector<Named>& cases) {
  vectors::Suite suite;
  for (const Named& n : cases) {
    Scenario scenario = n.c.scenario;
    scenario.id = n.id.substr(n.id.find('/') + 1);
    for (char& ch : scenario.id) {
      if (ch == '/') ch = '-';
    }
    vectors::CaseSpec spec;
    spec.id = n.id;
    spec.description = "found by tools/search";
    spec.policy = n.c.policy;
    spec.scenario_id = scenario.id;
    suite.scenarios.push_back(std::move(scenario));
    suite.cases.push_back(std::move(spec));
  }
  return vectors::GenerateVectorFiles(suite);
}

absl::Status WriteFolder(const std::string& directory,
                         const std::vector<vectors::GeneratedFile>& files) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return absl::InternalError("cannot create " + directory + ": " + error.message());
  for (const vectors::GeneratedFile& file : files) {
    const std::string path = directory + "/" + file.path;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << file.bytes;
    if (!out) return absl::InternalError("cannot write " + path);
  }
  return absl::OkStatus();
}

class Search {
 public:
  Search(std::string port, std::string work) : port_(std::move(port)), work_(std::move(work)) {}

  // Runs `cases` through the port; one report per case, by id.
  absl::StatusOr<std::map<std::string, conformance::CaseReport>> Run(
      const std::vector<Named>& cases) {
    absl::StatusOr<std::vector<vectors::GeneratedFile>> files = Files(cases);
    if (!files.ok()) return files.status();
    const std::string directory = work_ + "/batch";
    std::filesystem::remove_all(directory);
    if (absl::Status s = WriteFolder(directory, *files); !s.ok()) return s;
    absl::StatusOr<vectors::VectorSet> set = vectors::LoadVectorSet(directory);
    if (!set.ok()) return set.status();
    conformance::RunnerOptions options;
    options.port_command = port_;
    options.timeout_seconds = absl::GetFlag(FLAGS_timeout_seconds);
    options.replay_prefix = "true";
    absl::StatusOr<conformance::RunReport> report = conformance::RunConformance(*set, options);
    if (!report.ok()) return report.status();
    if (hello_.port_name().empty()) hello_ = report->hello;
    std::map<std::string, conformance::CaseReport> by_id;
    for (conformance::CaseReport& r : report->cases) by_id[r.id] = std::move(r);
    return by_id;
  }

  // Shrinks a disagreeing case while it still disagrees.
  absl::StatusOr<Named> Shrink(Named failing, conformance::CaseReport& report, int& rounds) {
    const Clock::time_point start = Clock::now();
    const double limit = absl::GetFlag(FLAGS_shrink_seconds);
    while (Since(start) < limit) {
      std::vector<SearchCase> moves = ShrinkMoves(failing.c);
      if (moves.empty()) break;
      std::vector<Named> batch;
      for (size_t k = 0; k < moves.size(); ++k) {
        batch.push_back({absl::StrCat("search/shrink/m", k), std::move(moves[k])});
      }
      absl::StatusOr<std::map<std::string, conformance::CaseReport>> reports = Run(batch);
      if (!reports.ok()) return reports.status();
      const Named* best = nullptr;
      for (const Named& n : batch) {
        const auto it = reports->find(n.id);
        if (it == reports->end() || !Disagrees(it->second.outcome)) continue;
        if (best == nullptr || CaseSize(n.c) < CaseSize(best->c)) best = &n;
      }
      if (best == nullptr || CaseSize(best->c) >= CaseSize(failing.c)) break;
      failing.c = best->c;
      report = reports->at(best->id);
      ++rounds;
    }
    return failing;
  }

  const conformance::v1::HelloReply& hello() const { return hello_; }

 private:
  std::string port_;
  std::string work_;
  conformance::v1::HelloReply hello_;
};

// Why the port would not run a generated case (conformance::NotRunReason,
// the runner's rule), or "" when it would.
std::string NotRunReason(const conformance::v1::HelloReply& hello,
                         const std::set<std::string>& port_features, const SearchCase& c) {
  const v1::PolicyConfig policy = ToProto(c.policy);
  const v1::Scenario scenario = ToProto(c.scenario);
  return conformance::NotRunReason(hello, port_features, c.policy.name,
                                   vectors::CaseFeatures(policy, scenario),
                                   vectors::CaseSince(policy, scenario, {}));
}

// Counts a case left out by each thing missing (a case may lack several).
void CountLeftOut(const std::string& reason, std::map<std::string, int64_t>& reasons) {
  if (absl::StartsWith(reason, "needs feature")) {
    absl::string_view list = reason;
    list = list.substr(list.find(' ', absl::string_view("needs feature").size()) + 1);
    list = list.substr(0, list.find(", which"));
    for (absl::string_view feature : absl::StrSplit(list, ", ")) {
      ++reasons[absl::StrCat("need feature ", feature)];
    }
  } else if (absl::StartsWith(reason, "needs policy")) {
    ++reasons[std::string(reason.substr(1, reason.find(", which") - 1))];
  } else {
    ++reasons["were set in a later spec version than the port's"];
  }
}

std::vector<Named> Generate(uint64_t seed, int64_t first, int64_t count) {
  std::vector<Named> cases;
  for (int64_t i = first; i < first + count; ++i) {
    cases.push_back({absl::StrCat("search/s", seed, "/c", i), GenerateCase(seed, i)});
  }
  return cases;
}

int WriteCorpus(uint64_t seed, int64_t first, int64_t count, const std::string& directory) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<vectors::GeneratedFile>> files =
      Files(Generate(seed, first, count));
  if (!files.ok()) {
    std::fprintf(stderr, "search: %s\n", std::string(files.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = WriteFolder(directory, *files); !s.ok()) {
    std::fprintf(stderr, "search: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  std::printf("search: wrote %lld cases of seed %llu to %s in %.1f s\n",
              static_cast<long long>(count), static_cast<unsigned long long>(seed),
              directory.c_str(), Since(start));
  return 0;
}

void PrintStats(const std::vector<Named>& cases) {
  std::map<std::string, int64_t> counts;
  for (const Named& n : cases) {
    for (const std::string& tag : Tags(n.c)) ++counts[tag];
  }
  std::printf("coverage of %zu cases (tag: cases)\n", cases.size());
  for (const auto& [tag, count] : counts) {
    std::printf("  %-40s %lld\n", tag.c_str(), static_cast<long long>(count));
  }
}

int Main() {
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const int64_t only = absl::GetFlag(FLAGS_only);
  int64_t budget = absl::GetFlag(FLAGS_cases);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  if (!(seconds >= 0 && seconds <= 1e9) || absl::GetFlag(FLAGS_batch) < 1 || budget < -1) {
    std::fprintf(stderr, "search: --cases and --seconds must be at least 0, --batch at least 1\n");
    return 2;
  }
  // --seconds alone is a budget in time: it runs that long.
  if (budget == -1) budget = seconds > 0 ? 0 : 1000;
  if (budget == 0 && seconds == 0 && only < 0) {
    std::fprintf(stderr, "search: give a budget: --cases=N or --seconds=S\n");
    return 2;
  }
  const int64_t first = only >= 0 ? only : 0;
  if (only >= 0) budget = 1;

  if (absl::GetFlag(FLAGS_show) || absl::GetFlag(FLAGS_stats)) {
    const std::vector<Named> cases = Generate(seed, first, budget == 0 ? 1000 : budget);
    if (absl::GetFlag(FLAGS_show)) {
      for (const Named& n : cases) std::printf("# %s\n%s", n.id.c_str(), CaseText(n.c).c_str());
    }
    if (absl::GetFlag(FLAGS_stats)) PrintStats(cases);
    return 0;
  }
  if (const std::string corpus = absl::GetFlag(FLAGS_write_corpus); !corpus.empty()) {
    if (budget == 0) {
      std::fprintf(stderr, "search: --write_corpus needs --cases\n");
      return 2;
    }
    return WriteCorpus(seed, first, budget, corpus);
  }
  const std::string port = absl::GetFlag(FLAGS_port);
  if (port.empty()) {
    std::fprintf(stderr, "search: --port (or --write_corpus, --show, --stats) is required\n");
    return 2;
  }
  std::string work = absl::GetFlag(FLAGS_work);
  if (work.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/kvspec-search-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "search: cannot create a scratch folder %s\n", pattern.c_str());
      return 2;
    }
    work = pattern;
  }

  Search search(port, work);
  const Clock::time_point start = Clock::now();
  double port_seconds = 0;
  // done: cases sent to the port; next: the next case index generated;
  // left_out: generated cases the port's hello does not cover, never sent
  // (but the first, sent to learn the hello, is counted here when it is one).
  int64_t done = 0, next = first, left_out = 0;
  int64_t agreed = 0, disagreed = 0, not_run = 0, skipped = 0;
  std::map<std::string, int64_t> left_out_reasons;
  std::set<std::string> port_features;
  std::vector<std::pair<Named, conformance::CaseReport>> found;
  const int64_t max_found = absl::GetFlag(FLAGS_max_disagreements);
  const int64_t batch_size = absl::GetFlag(FLAGS_batch);
  // Consecutive generated cases the port's hello does not cover after which
  // the search gives up: the generator makes almost nothing this port runs.
  constexpr int64_t kMaxLeftOutInARow = 100000;
  while ((budget == 0 || done < budget) && (seconds == 0 || Since(start) < seconds) &&
         (max_found == 0 || static_cast<int64_t>(found.size()) < max_found)) {
    const int64_t want = budget == 0 ? batch_size : std::min(batch_size, budget - done);
    // The first batch is one case: its run brings the port's hello, and the
    // cases after it are generated for what the hello says the port runs.
    const bool know_hello = !search.hello().spec_version().empty();
    const int64_t n = know_hello ? want : 1;
    std::vector<Named> cases;
    int64_t in_a_row = 0;
    while (static_cast<int64_t>(cases.size()) < n) {
      if (only >= 0 && next > first) break;
      Named named{absl::StrCat("search/s", seed, "/c", next), GenerateCase(seed, next)};
      ++next;
      const std::string reason =
          know_hello ? NotRunReason(search.hello(), port_features, named.c) : "";
      if (reason.empty()) {
        cases.push_back(std::move(named));
        in_a_row = 0;
        continue;
      }
      ++left_out;
      CountLeftOut(reason, left_out_reasons);
      if (++in_a_row >= kMaxLeftOutInARow) break;
    }
    if (cases.empty()) {
      if (in_a_row >= kMaxLeftOutInARow) {
        std::fprintf(stderr,
                     "search: %lld generated cases in a row need what the port's hello "
                     "does not declare (policies, features or spec version); stopped\n",
                     static_cast<long long>(in_a_row));
      }
      break;
    }
    const Clock::time_point t = Clock::now();
    absl::StatusOr<std::map<std::string, conformance::CaseReport>> reports = search.Run(cases);
    port_seconds += Since(t);
    if (!reports.ok()) {
      std::fprintf(stderr, "search: %s\n", std::string(reports.status().message()).c_str());
      return 2;
    }
    if (!know_hello) port_features = conformance::PortFeatures(search.hello());
    int64_t counted = static_cast<int64_t>(cases.size());
    for (const Named& c : cases) {
      const auto it = reports->find(c.id);
      if (it == reports->end()) continue;
      const Outcome outcome = it->second.outcome;
      if (!know_hello && outcome == Outcome::kNotRun) {
        // The one case sent to learn the hello, which the hello does not
        // cover: left out like the ones generated after it.
        CountLeftOut(NotRunReason(search.hello(), port_features, c.c), left_out_reasons);
        ++left_out;
        --counted;
        continue;
      }
      if (outcome == Outcome::kPass) ++agreed;
      if (outcome == Outcome::kNotRun) ++not_run;
      if (outcome == Outcome::kSkipped) ++skipped;
      if (Disagrees(outcome)) ++disagreed;
      if (Disagrees(outcome) &&
          (max_found == 0 || static_cast<int64_t>(found.size()) < max_found)) {
        found.push_back({c, it->second});
      }
    }
    done += counted;
  }
  const double search_seconds = Since(start);
  std::printf("search: port %s %s (spec %s); seed %llu, cases %lld..%lld\n",
              search.hello().port_name().c_str(), search.hello().port_version().c_str(),
              search.hello().spec_version().c_str(), static_cast<unsigned long long>(seed),
              static_cast<long long>(first), static_cast<long long>(next - 1));
  std::printf("search: %lld cases in %.1f s (%.0f cases/s; %.1f s in port runs)\n",
              static_cast<long long>(done), search_seconds,
              search_seconds > 0 ? done / search_seconds : 0.0, port_seconds);
  if (left_out > 0) {
    std::printf("search: %lld generated cases left out, never sent: the port's hello "
                "does not cover them\n",
                static_cast<long long>(left_out));
    for (const auto& [reason, count] : left_out_reasons) {
      std::printf("search:   %lld %s\n", static_cast<long long>(count), reason.c_str());
    }
  }

  const std::string out = absl::GetFlag(FLAGS_out);
  int index = 0;
  for (auto& [failing, report] : found) {
    ++index;
    const uint64_t before = CaseSize(failing.c);
    const std::string original_id = failing.id;
    const Outcome first_outcome = report.outcome;
    int rounds = 0;
    absl::StatusOr<Named> shrunk = search.Shrink(failing, report, rounds);
    if (!shrunk.ok()) {
      std::fprintf(stderr, "search: shrinking %s: %s\n", original_id.c_str(),
                   std::string(shrunk.status().message()).c_str());
      return 2;
    }
    std::string name = original_id.substr(std::string("search/").size());
    std::replace(name.begin(), name.end(), '/', '-');
    const std::string id = "search/found/" + name;
    const std::string directory = out + "/" + name;
    absl::StatusOr<std::vector<vectors::GeneratedFile>> files = Files({{id, shrunk->c}});
    if (!files.ok() || !WriteFolder(directory, *files).ok()) {
      std::fprintf(stderr, "search: cannot write %s\n", directory.c_str());
      return 2;
    }
    std::printf(
        "\nDISAGREEMENT %d: case %s (%s), shrunk in %d rounds from size %llu to %llu (%s)\n",
        index, original_id.c_str(), conformance::OutcomeName(first_outcome).c_str(), rounds,
        static_cast<unsigned long long>(before),
        static_cast<unsigned long long>(CaseSize(shrunk->c)),
        conformance::OutcomeName(report.outcome).c_str());
    std::printf("%s", CaseText(shrunk->c).c_str());
    // The runner's own replay lines name the scratch batch; ours follows.
    std::string detail;
    for (absl::string_view line : absl::StrSplit(report.detail, '\n')) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "replay:") ||
          absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "in a checkout:")) {
        continue;
      }
      absl::StrAppend(&detail, line, "\n");
    }
    std::printf("what differs:\n%s", detail.c_str());
    const std::string folder =
        conformance::ShellQuote(std::filesystem::absolute(directory).string());
    // The runner binary beside this one, when it is built (bazel-bin/).
    std::error_code error;
    const std::filesystem::path runner =
        std::filesystem::read_symlink("/proc/self/exe", error).parent_path().parent_path()
            .parent_path() / "conformance" / "runner";
    if (!error && std::filesystem::is_regular_file(runner)) {
      std::printf("replay: %s --vectors=%s --port=%s --case=%s\n",
                  conformance::ShellQuote(runner.string()).c_str(), folder.c_str(),
                  conformance::ShellQuote(port).c_str(), id.c_str());
    }
    std::printf("replay: bazel run -c opt //conformance:runner -- --vectors=%s --port=%s --case=%s\n",
                folder.c_str(), conformance::ShellQuote(port).c_str(), id.c_str());
  }
  std::filesystem::remove_all(work + "/batch");
  if (absl::GetFlag(FLAGS_work).empty()) std::filesystem::remove_all(work);
  std::printf("%lld agreed, %lld disagreed, %lld skipped, %lld not run\n",
              static_cast<long long>(agreed), static_cast<long long>(disagreed),
              static_cast<long long>(skipped),
              static_cast<long long>(not_run));
  return found.empty() ? 0 : 1;
}

}  // namespace
}  // namespace search
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The differential search: random scenarios through the reference and a port "
      "(tools/README.md#search).\n"
      "  search --port='<command>' --seed=S --cases=N | --seconds=T\n"
      "  search --write_corpus=DIR --seed=S --cases=N\n"
      "  search --seed=S --only=I --show | --cases=N --stats");
  absl::ParseCommandLine(argc, argv);
  return kvspec::search::Main();
}
