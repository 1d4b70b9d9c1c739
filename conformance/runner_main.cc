// The conformance runner (spec/protocol.md).
//
//   bazel run -c opt //conformance:runner -- --port='<command line>'
//   bazel run -c opt //conformance:runner -- --port=... --policy=snapkv --case='snapkv/ring/*'
//   bazel run -c opt //conformance:runner -- --port=... --expectations=FILE --junit=out.xml
//   bazel run -c opt //conformance:runner -- --case=ID --dump=FILE   # frames to replay by hand
//   bazel run -c opt //conformance:runner -- --decode=FILE [--decode_as=port]  # frames as text
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "cc/version.h"
#include "conformance/decode.h"
#include "conformance/expectations.h"
#include "conformance/frame.h"
#include "conformance/report.h"
#include "conformance/runner.h"
#include "tools/files/files.h"
#include "tools/vectors/load.h"

ABSL_FLAG(std::string, port, "",
          "Command line that starts the port (run with /bin/sh -c). Required "
          "unless --dump.");
ABSL_FLAG(std::string, vectors, "",
          "The vectors/ folder. Default: the checkout's vectors/ under `bazel "
          "run`, the runfiles' under `bazel test`, else ./vectors.");
ABSL_FLAG(std::string, case, "",
          "Run only this case ID, or the IDs under a prefix ending in /* "
          "(e.g. 'snapkv/ring/*').");
ABSL_FLAG(std::string, policy, "", "Run only the cases of this policy.");
ABSL_FLAG(std::string, expectations, "",
          "Expectation file: '<case id or prefix/*> <outcome> <reason>' per "
          "line. Without one, every case must pass.");
ABSL_FLAG(double, timeout_seconds, 60.0,
          "Per-case timeout, in seconds: a number in (0, 86400].");
ABSL_FLAG(int, max_restarts, 3,
          "Abandon the port after this many crashes, timeouts or protocol "
          "errors in a row; the remaining cases are reported as not reached.");
ABSL_FLAG(uint64_t, max_frame_bytes, uint64_t{64} << 20,
          "Largest frame the runner accepts from the port; checked before "
          "anything is allocated.");
ABSL_FLAG(int, stop_after_failures, 0,
          "Stop after this many cases that did not pass (0: run everything); "
          "the rest are reported as not reached.");
ABSL_FLAG(bool, require_all, false,
          "Every case the port cannot run (a feature it does not declare, or "
          "an outcome set after its spec version) is a failure, not 'not "
          "run'. The bundled ports run with it.");
ABSL_FLAG(bool, cut, true,
          "Ask the port for each score-based eviction's cut and compare it. "
          "--nocut: ask for none and compare logs with every cut left out, "
          "for an engine adapter whose engine ranks nothing it could report "
          "(conformance/engines/README.md); the reports say so.");
ABSL_FLAG(bool, strict_binary64, true,
          "A port whose hello declares binary64 (or no precision) is judged "
          "bit for bit and never 'within precision'. --nostrict_binary64: "
          "judge it within binary64's error bound, like a port of lower "
          "precision (spec/protocol.md#precision), for one that sums in "
          "another order.");
ABSL_FLAG(std::string, junit, "", "Also write a JUnit XML report to this file.");
ABSL_FLAG(std::string, json, "", "Also write a JSON summary to this file.");
ABSL_FLAG(std::string, decode, "",
          "Print the frames of this file as text and exit: a --dump file (the "
          "runner's frames), or with --decode_as=port a port's recorded "
          "reply (port < dump > reply).");
ABSL_FLAG(std::string, decode_as, "runner",
          "With --decode: whose frames the file holds, 'runner' or 'port'.");
ABSL_FLAG(std::string, dump, "",
          "With --case=ID: write the hello and request frames the runner "
          "would send for that case to this file (replay with: port < FILE), "
          "then exit.");

namespace kvspec {
namespace conformance {
namespace {

std::string DefaultVectors() {
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    return std::string(workspace) + "/vectors";
  }
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    return std::string(srcdir) + "/kvspec/vectors";
  }
  return "vectors";
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

// A report file, written whole or not at all (tools/files/files.h); a
// failure names the flag and the path.
bool WriteReport(const std::string& flag, const std::string& path,
                 const std::string& text) {
  const absl::Status written = files::WriteAtomically(flag, path, text);
  if (!written.ok()) {
    std::fprintf(stderr, "runner: %s\n", std::string(written.message()).c_str());
  }
  return written.ok();
}

// `text` to stdout by its length (a NUL inside does not end it), flushed:
// false, with a message on stderr, if stdout cannot take it.
bool PrintAll(const std::string& text) {
  const bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size() &&
                  std::fflush(stdout) == 0;
  if (!ok) std::fprintf(stderr, "runner: cannot write the report to stdout\n");
  return ok;
}

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? resolved : path;
}

// The replay line's start: this very binary, the vectors and the port, run
// from the directory the port command is resolved in, so the line works as
// printed wherever the porter pastes it.
std::string ReplayPrefix(const std::string& vectors, const std::string& port) {
  char cwd[PATH_MAX];
  const std::string here = getcwd(cwd, sizeof cwd) != nullptr ? cwd : ".";
  return "cd " + ShellQuote(here) + " && " + ShellQuote(RealPath("/proc/self/exe")) +
         " --vectors=" + ShellQuote(RealPath(vectors)) + " --port=" + ShellQuote(port);
}

int Decode(const std::string& path) {
  const std::string as = absl::GetFlag(FLAGS_decode_as);
  if (as != "runner" && as != "port") {
    std::fprintf(stderr, "runner: --decode_as must be 'runner' or 'port', not '%s'\n",
                 as.c_str());
    return 2;
  }
  // A dump holds a hello and a request, a reply a hello and a response: a
  // few frames. A regular file of at most four of the largest frames is
  // read; a FIFO, /dev/zero or a larger file is refused before reading.
  const uint64_t max_frame = absl::GetFlag(FLAGS_max_frame_bytes);
  const absl::StatusOr<std::string> bytes =
      files::ReadInputFile("--decode", path, 4 * (max_frame + 4));
  if (!bytes.ok()) {
    std::fprintf(stderr, "runner: %s\n", std::string(bytes.status().message()).c_str());
    return 2;
  }
  const absl::StatusOr<std::string> text = FramesAsText(
      *bytes, as == "runner" ? Side::kRunner : Side::kPort, max_frame);
  if (!text.ok()) {
    std::fprintf(stderr, "runner: %s: %s\n", path.c_str(),
                 std::string(text.status().message()).c_str());
    return 2;
  }
  return PrintAll(*text) ? 0 : 2;
}

int Main() {
  if (const std::string path = absl::GetFlag(FLAGS_decode); !path.empty()) {
    return Decode(path);
  }
  std::string directory = absl::GetFlag(FLAGS_vectors);
  if (directory.empty()) directory = DefaultVectors();
  const absl::StatusOr<vectors::VectorSet> set = vectors::LoadVectorSet(directory);
  if (!set.ok()) {
    std::fprintf(stderr, "runner: %s\n", std::string(set.status().message()).c_str());
    return 2;
  }
  if (const std::string dump = absl::GetFlag(FLAGS_dump); !dump.empty()) {
    const vectors::LoadedCase* c = vectors::FindCase(*set, absl::GetFlag(FLAGS_case));
    if (c == nullptr) {
      std::fprintf(stderr, "runner: --dump needs --case=<an existing case ID>\n");
      return 2;
    }
    v1::RunnerMessage hello;
    hello.mutable_hello()->set_protocol_version(kProtocolVersion);
    hello.mutable_hello()->set_spec_version(kSpecVersion);
    if (!WriteReport("--dump", dump,
                     EncodeFrame(hello.SerializeAsString()) +
                         EncodeFrame(RequestPayload(*c, 1)))) {
      return 2;
    }
    std::printf("wrote the hello and request frames of %s to %s\n",
                c->vector->id().c_str(), dump.c_str());
    return 0;
  }
  RunnerOptions options;
  options.port_command = absl::GetFlag(FLAGS_port);
  if (options.port_command.empty()) {
    std::fprintf(stderr, "runner: --port is required (see --help)\n");
    return 2;
  }
  options.replay_prefix = ReplayPrefix(directory, options.port_command);
  options.timeout_seconds = absl::GetFlag(FLAGS_timeout_seconds);
  if (!(options.timeout_seconds > 0 && options.timeout_seconds <= 86400)) {
    std::fprintf(stderr,
                 "runner: --timeout_seconds must be a number in (0, 86400], not %g\n",
                 options.timeout_seconds);
    return 2;
  }
  options.max_restarts = absl::GetFlag(FLAGS_max_restarts);
  if (options.max_restarts < 1) {
    std::fprintf(stderr, "runner: --max_restarts must be at least 1, not %d\n",
                 options.max_restarts);
    return 2;
  }
  options.max_frame_bytes = absl::GetFlag(FLAGS_max_frame_bytes);
  options.case_pattern = absl::GetFlag(FLAGS_case);
  options.policy = absl::GetFlag(FLAGS_policy);
  options.stop_after_failures = absl::GetFlag(FLAGS_stop_after_failures);
  if (options.stop_after_failures < 0) {
    std::fprintf(stderr, "runner: --stop_after_failures must be 0 or more, not %d\n",
                 options.stop_after_failures);
    return 2;
  }
  options.require_all = absl::GetFlag(FLAGS_require_all);
  options.compare_cut = absl::GetFlag(FLAGS_cut);
  options.strict_binary64 = absl::GetFlag(FLAGS_strict_binary64);
  options.shard_total = std::max(1, EnvInt("TEST_TOTAL_SHARDS", 1));
  options.shard_index = EnvInt("TEST_SHARD_INDEX", 0);
  if (const char* status_file = std::getenv("TEST_SHARD_STATUS_FILE")) {
    std::ofstream(status_file, std::ios::trunc);  // this runner honours sharding
  }
  if (isatty(STDERR_FILENO)) {
    options.progress = [](size_t done, size_t total) {
      std::fprintf(stderr, "\r%zu/%zu cases", done, total);
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  std::vector<Expectation> expectations;
  if (const std::string path = absl::GetFlag(FLAGS_expectations); !path.empty()) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "runner: cannot read expectations %s\n", path.c_str());
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseExpectations(text.str(), path);
    if (!parsed.ok()) {
      std::fprintf(stderr, "runner: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    expectations = *std::move(parsed);
  }
  const absl::StatusOr<RunReport> report = RunConformance(*set, options);
  if (!report.ok()) {
    std::fprintf(stderr, "runner: %s\n", std::string(report.status().message()).c_str());
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  const Verdict verdict = Judge(*report, expectations, options.require_all);
  // Every report is written even when one fails; any failure to write one
  // fails the run (exit 2), naming what could not be written.
  bool written = true;
  if (const std::string path = absl::GetFlag(FLAGS_junit); !path.empty()) {
    written = WriteReport("--junit", path, JUnitXml(*report, verdict)) && written;
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    written = WriteReport("--json", path, JsonSummary(*report, verdict)) && written;
  }
  written = PrintAll(TextReport(*report, verdict)) && written;
  if (!written) return 2;
  return verdict.failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace conformance
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs kvspec's vectors against a port over the conformance protocol "
      "(spec/protocol.md).\n  runner --port='<command>' [--case=ID|prefix/*] "
      "[--policy=NAME] [--expectations=FILE] [--junit=FILE] [--json=FILE]");
  absl::ParseCommandLine(argc, argv);
  return kvspec::conformance::Main();
}
