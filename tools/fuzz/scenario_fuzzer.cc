// libFuzzer target: the scenario-file loader of tools/simulate
// (tools/simulate/scenario_file.h: ReadScenarioFile, ConvertReleasing) refuses
// malformed files with a status, never a crash, and the reference's harness
// (cc/harness.h) refuses or runs whatever scenario the file holds.
//
// Each input is written to a file in /dev/shm and read with
// ReadScenarioFile, exactly as `simulate --scenario=FILE` reads it. Then:
//   1. the input is parsed in memory as well, and FromProto's scenario must
//      equal ConvertReleasing's (the releasing conversion changes nothing);
//   2. when the scenario is small (at most kMaxPositions positions admitted,
//      kMaxSteps steps, a trace of at most kMaxTraceSteps steps and
//      kMaxTraceHeads heads), it is run through a few policies with a small
//      budget, recording cuts: full, window, h2o, tova (sets sharing one
//      budget), snapkv (the granularity taken from the input's size) and
//      openvino (every head summed, a pool and a window).
//      Larger scenarios are only loaded: the harness admits every position
//      it is told to, so one step admitting 2^32 - 1 positions is a valid
//      scenario of a few bytes that takes 16 GiB (see tools/README.md).
// Built and run by tools/fuzz.sh.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "google/protobuf/stubs/logging.h"
#include "spec/kvspec.pb.h"
#include "tools/simulate/scenario_file.h"

namespace {

constexpr uint64_t kMaxPositions = 512;
constexpr size_t kMaxSteps = 512;
constexpr uint32_t kMaxTraceSteps = 64;
constexpr uint32_t kMaxTraceHeads = 16;

const std::string& Path() {
  static const std::string* path = [] {
    const std::string dir =
        absl::StrFormat("/dev/shm/kvspec-fuzz-%d", getpid());
    mkdir(dir.c_str(), 0700);
    return new std::string(dir + "/scenario.pb");
  }();
  return *path;
}

// The scenario as deterministic wire bytes, to compare two scenarios.
std::string Wire(const kvspec::Scenario& scenario) {
  std::string bytes;
  kvspec::ToProto(scenario).SerializeToString(&bytes);
  return bytes;
}

bool SmallEnough(const kvspec::Scenario& scenario) {
  if (scenario.steps.size() > kMaxSteps) return false;
  uint64_t positions = 0;
  for (const kvspec::ScenarioStep& step : scenario.steps) {
    positions += step.admit;
  }
  if (positions > kMaxPositions) return false;
  if (scenario.trace.has_value()) {
    if (scenario.trace->steps > kMaxTraceSteps) return false;
    if (scenario.query_heads.value_or(1) > kMaxTraceHeads) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Protobuf logs every invalid UTF-8 id it parses; the parse's result is
  // what is checked.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(Path(), std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  absl::StatusOr<kvspec::Scenario> scenario = kvspec::ReadScenarioFile(Path());
  kvspec::v1::Scenario proto;
  const bool parsed = proto.ParseFromString(bytes);
  if (parsed != scenario.ok()) {
    std::fprintf(stderr, "ReadScenarioFile %s what ParseFromString %s\n",
                 scenario.ok() ? "accepted" : "refused",
                 parsed ? "accepts" : "refuses");
    std::abort();
  }
  if (!scenario.ok()) return 0;
  if (Wire(kvspec::FromProto(proto)) != Wire(*scenario)) {
    std::fprintf(stderr, "ConvertReleasing differs from FromProto\n");
    std::abort();
  }

  if (!SmallEnough(*scenario)) return 0;
  const int64_t granularity = static_cast<int64_t>(size % 3);
  const std::vector<kvspec::PolicyConfig> configs = {
      {"full", {}},
      {"window", {{"budget", 3}}},
      {"h2o", {{"budget", 4}, {"recent_window", 1}, {"granularity", granularity}}},
      {"tova",
       {{"budget", 3}, {"recent_window", 0}, {"granularity", 2}, {"adaptive", 1}}},
      {"snapkv",
       {{"budget", 4}, {"recent_window", 1}, {"obs_window", 2},
        {"pool_kernel", 3}, {"granularity", granularity}}},
      // spec/policies/openvino.md: every head summed, query rows and
      // totals registered, a forward pool and a window.
      {"openvino",
       {{"budget", 4}, {"sinks", 1}, {"recent_window", 1}, {"block", 1},
        {"max_pool", 2}, {"obs_window", 2}}},
      // spec/policies/knorm.md: scored from the scenario's keys.
      {"knorm", {{"budget", 3}, {"granularity", granularity}}},
      // spec/policies/keydiff.md: its anchor from every kept key.
      {"keydiff", {{"budget", 3}, {"granularity", granularity}}},
      // spec/policies/lagkv.md: partitions of 2 judged from keys and
      // values (refused without values, or with head_dim 1).
      {"lagkv", {{"budget", 3}, {"sinks", 1}, {"lag", 2}, {"granularity", granularity}}},
      // spec/policies/simlayerkv.md: every head's query rows, judged at
      // threshold 0 whenever the cache is longer than 1 + 2 + 1.
      {"simlayerkv",
       {{"n_initial", 1}, {"n_recent", 2}, {"n_last", 1}, {"lazy_threshold_ppm", 0}}},
  };
  kvspec::RunOptions options;
  options.record_cut = true;
  for (const kvspec::PolicyConfig& config : configs) {
    (void)kvspec::RunScenario(config, *scenario, options);
  }
  return 0;
}
