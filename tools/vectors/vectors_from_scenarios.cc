// vectors_from_scenarios: a vectors folder from a case list (tools/vectors/
// case_list.h, spec/vectors.md#case-lists): each listed scenario file run
// under its listed policy by the reference, every expected log, cut and
// margin computed as for vectors/ itself (tools/vectors/generate.h), so the
// runner judges a port on scenarios of one's own, at the port's declared
// precision too (spec/protocol.md#precision).
//
//   bazel run -c opt //tools:vectors_from_scenarios -- --cases=/tmp/cases.txt
//       --out=/tmp/my-vectors
//   bazel run -c opt //conformance:runner -- --vectors=/tmp/my-vectors --port=...
//
// Scenario paths in the list are relative to the list's folder unless
// absolute. A scenario file listed by several cases is read once; its
// scenario keeps the id it holds (import_attention --id), or the file's base
// name without extension when it holds none; two files with one id are
// refused. --out must not exist, or be an empty folder; nothing is written
// unless every case was generated.
//
// A case whose configuration or scenario the reference refuses (an unknown
// parameter, a budget out of range, a malformed row) would be written as a
// vector whose expected outcome is that refusal, which is seldom what a
// list meant: such a case is refused here, naming it and the reference's
// message, unless --allow_refused says the refusal is the point.
//
// Exit status: 0 when the folder was written, 1 when the list, a scenario
// or the suite was refused (the message names the line, file or case), 2
// for a malformed command line.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cc/harness.h"
#include "cc/presets.h"
#include "tools/files/files.h"
#include "tools/simulate/scenario_file.h"
#include "tools/vectors/case_list.h"
#include "tools/vectors/generate.h"

ABSL_FLAG(std::string, cases, "",
          "The case list: one case a line, '<case-id> <scenario-file> "
          "<policy> <name=value,...>|-' (spec/vectors.md#case-lists).");
ABSL_FLAG(std::string, out, "",
          "The vectors folder to write: a new path, or an empty folder.");
ABSL_FLAG(bool, allow_refused, false,
          "Write a case the reference refuses (its configuration or a step) "
          "as a vector expecting that refusal, instead of refusing the list.");

namespace kvspec {
namespace vectors {
namespace {

// Under `bazel run` the working directory is the runfiles tree.
std::string UserPath(const std::string& path) {
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir == nullptr || path.empty() || path[0] == '/') return path;
  return std::string(dir) + "/" + path;
}

constexpr std::uintmax_t kMaxListBytes = 16u << 20;

absl::StatusOr<std::string> ReadList(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat("--cases: '", path, "' is not a regular file"));
  }
  if (std::filesystem::file_size(path, error) > kMaxListBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cases: '", path, "' is over 16 MiB: a case list is one line a case"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return absl::NotFoundError(absl::StrCat("--cases: cannot read '", path, "'"));
  return text.str();
}

absl::StatusOr<Suite> BuildListedSuite(const std::vector<ListedCase>& listed,
                                       const std::filesystem::path& base) {
  Suite suite;
  std::map<std::string, std::string> id_of_file;  // path -> scenario id
  std::map<std::string, std::string> file_of_id;  // scenario id -> path
  for (const ListedCase& c : listed) {
    std::filesystem::path file(c.scenario_file);
    if (file.is_relative()) file = base / file;
    const std::string path = file.lexically_normal().string();
    auto known = id_of_file.find(path);
    if (known == id_of_file.end()) {
      absl::StatusOr<Scenario> scenario = ReadScenarioFile(path);
      if (!scenario.ok()) {
        return absl::Status(scenario.status().code(),
                            absl::StrCat("case ", c.id, ": ", scenario.status().message()));
      }
      if (scenario->id.empty()) scenario->id = file.stem().string();
      auto [other, fresh] = file_of_id.emplace(scenario->id, path);
      if (!fresh) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scenario id '", scenario->id, "' is held by both '", other->second, "' and '",
            path, "': give each file its own id (import_attention --id)"));
      }
      known = id_of_file.emplace(path, scenario->id).first;
      suite.scenarios.push_back(*std::move(scenario));
    }
    CaseSpec spec;
    spec.id = c.id;
    spec.description = absl::StrCat("listed: ", c.scenario_file, " under ", c.policy.name,
                                    c.preset.empty() ? "" : " preset " + c.preset);
    spec.policy = c.policy;
    if (!c.preset.empty()) {
      absl::StatusOr<PolicyConfig> expanded = ExpandPreset(c.policy, c.preset);
      if (!expanded.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("case ", c.id, ": ", expanded.status().message()));
      }
      spec.policy = *std::move(expanded);
    }
    spec.scenario_id = known->second;
    if (!absl::GetFlag(FLAGS_allow_refused)) {
      const Scenario* scenario = nullptr;
      for (const Scenario& s : suite.scenarios) {
        if (s.id == spec.scenario_id) scenario = &s;
      }
      const RunResult run = RunScenario(spec.policy, *scenario);
      if (!run.refusal.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "case ", c.id, ": the reference refuses it",
            run.refused_step < 0 ? "" : absl::StrCat(" at step ", run.refused_step), ": ",
            run.refusal.message(), " (--allow_refused writes it as a refusal case)"));
      }
    }
    suite.cases.push_back(std::move(spec));
  }
  return suite;
}

int Main() {
  const std::string list_path = UserPath(absl::GetFlag(FLAGS_cases));
  const std::string out = UserPath(absl::GetFlag(FLAGS_out));
  if (list_path.empty() || out.empty()) {
    std::fprintf(stderr, "vectors_from_scenarios: --cases and --out are required (--help)\n");
    return 2;
  }
  std::error_code error;
  if (std::filesystem::exists(out, error) &&
      !(std::filesystem::is_directory(out, error) && std::filesystem::is_empty(out, error))) {
    std::fprintf(stderr, "--out: '%s' exists and is not an empty folder\n", out.c_str());
    return 1;
  }
  absl::StatusOr<std::string> text = ReadList(list_path);
  absl::StatusOr<std::vector<ListedCase>> listed =
      text.ok() ? ParseCaseList(*text) : absl::StatusOr<std::vector<ListedCase>>(text.status());
  if (listed.ok() && listed->empty()) {
    listed = absl::InvalidArgumentError("the list holds no case");
  }
  if (!listed.ok()) {
    std::fprintf(stderr, "--cases: %s: %s\n", list_path.c_str(),
                 std::string(listed.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<Suite> suite =
      BuildListedSuite(*listed, std::filesystem::path(list_path).parent_path());
  absl::StatusOr<std::vector<GeneratedFile>> files =
      suite.ok() ? GenerateVectorFiles(*suite)
                 : absl::StatusOr<std::vector<GeneratedFile>>(suite.status());
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", std::string(files.status().message()).c_str());
    return 1;
  }
  std::filesystem::create_directories(out, error);
  if (error) {
    std::fprintf(stderr, "--out: cannot create '%s': %s\n", out.c_str(), error.message().c_str());
    return 1;
  }
  for (const GeneratedFile& file : *files) {
    absl::Status written = files::WriteAtomically("--out", out + "/" + file.path, file.bytes);
    if (!written.ok()) {
      std::fprintf(stderr, "%s\n", std::string(written.message()).c_str());
      return 1;
    }
  }
  std::printf("vectors_from_scenarios: %zu cases over %zu scenarios written to %s\n",
              suite->cases.size(), suite->scenarios.size(), out.c_str());
  return 0;
}

}  // namespace
}  // namespace vectors
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Writes a vectors folder from a case list (spec/vectors.md#case-lists):\n"
      "  vectors_from_scenarios --cases=LIST --out=DIR");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::fprintf(stderr, "vectors_from_scenarios: unexpected argument '%s'\n", rest[1]);
    return 2;
  }
  return kvspec::vectors::Main();
}
