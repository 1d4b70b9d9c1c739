// port_speed: decode steps per second of each policy at budget 512 on the
// canonical trace, for several ports side by side in one run, measured
// through the conformance protocol (so every port does the same work: trace
// generation, the policy, the eviction log without cuts).
//
//   bazel run -c opt //conformance:port_speed -- --port=reference=/path/reference_testee --port=rust=/path/port.sh ...
//
// Each (port, policy) pair is timed --repeats times, interleaved round by
// round so that machine noise hits every port alike; the table shows the
// median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "cc/proto_convert.h"
#include "cc/trace.h"
#include "cc/version.h"
#include "conformance/port.h"
#include "conformance/runner.h"
#include "spec/conformance.pb.h"

ABSL_FLAG(std::vector<std::string>, port, {},
          "name=command, repeatable as a comma-separated list: the ports to time.");
ABSL_FLAG(uint32_t, steps, 4096, "Canonical-trace steps per request.");
ABSL_FLAG(int, repeats, 3, "Timed requests per (port, policy); the median is shown.");
ABSL_FLAG(double, timeout_seconds, 600, "Longest wait for one reply.");

namespace kvspec {
namespace conformance {
namespace {

const char* const kPolicies[] = {"window", "streamingllm", "h2o", "tova", "snapkv", "random"};

std::string RequestFor(const std::string& policy, uint32_t steps, uint64_t seq) {
  v1::RunnerMessage message;
  v1::Request* request = message.mutable_request();
  request->set_seq(seq);
  request->set_case_id("port-speed/" + policy);
  request->mutable_policy()->set_name(policy);
  auto* budget = request->mutable_policy()->add_parameters();
  budget->set_name("budget");
  budget->set_value(512);
  TraceConfig trace;
  trace.steps = steps;
  *request->mutable_scenario()->mutable_trace() = ToProto(trace);
  return message.SerializeAsString();
}

int Main() {
  std::vector<std::pair<std::string, std::string>> ports;
  for (const std::string& entry : absl::GetFlag(FLAGS_port)) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "--port wants name=command, got '%s'\n", entry.c_str());
      return 2;
    }
    ports.push_back({entry.substr(0, eq), entry.substr(eq + 1)});
  }
  if (ports.empty()) {
    std::fprintf(stderr, "give at least one --port=name=command\n");
    return 2;
  }
  const uint32_t steps = absl::GetFlag(FLAGS_steps);
  const double timeout = absl::GetFlag(FLAGS_timeout_seconds);
  std::vector<std::unique_ptr<PortProcess>> processes;
  std::vector<uint64_t> seqs(ports.size(), 0);
  for (const auto& [name, command] : ports) {
    auto process = PortProcess::Start(command, size_t{1} << 30);
    if (!process.ok()) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(),
                   std::string(process.status().message()).c_str());
      return 2;
    }
    v1::RunnerMessage hello;
    hello.mutable_hello()->set_protocol_version(kProtocolVersion);
    hello.mutable_hello()->set_spec_version(kSpecVersion);
    std::string frame;
    if ((*process)->Send(hello.SerializeAsString(), timeout) != PortProcess::Sent::kSent ||
        (*process)->Receive(timeout, frame) != PortProcess::Received::kFrame) {
      std::fprintf(stderr, "%s: no hello reply\n", name.c_str());
      return 2;
    }
    processes.push_back(*std::move(process));
  }
  // seconds[port][policy] over the repeats.
  std::map<std::string, std::map<std::string, std::vector<double>>> seconds;
  for (int round = 0; round < absl::GetFlag(FLAGS_repeats); ++round) {
    for (const char* policy : kPolicies) {
      for (size_t p = 0; p < ports.size(); ++p) {
        const std::string request = RequestFor(policy, steps, ++seqs[p]);
        const auto start = std::chrono::steady_clock::now();
        std::string frame;
        if (processes[p]->Send(request, timeout) != PortProcess::Sent::kSent ||
            processes[p]->Receive(timeout, frame) != PortProcess::Received::kFrame) {
          std::fprintf(stderr, "%s: no reply for %s\n", ports[p].first.c_str(), policy);
          return 1;
        }
        seconds[ports[p].first][policy].push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        std::fprintf(stderr, ".");
      }
    }
  }
  std::fprintf(stderr, "\n");
  std::printf("decode steps per second, budget 512, canonical trace of %u steps, "
              "median of %d:\n\n| policy |",
              steps, absl::GetFlag(FLAGS_repeats));
  for (const auto& port : ports) std::printf(" %s |", port.first.c_str());
  std::printf("\n| --- |");
  for (size_t p = 0; p < ports.size(); ++p) std::printf(" ---: |");
  std::printf("\n");
  for (const char* policy : kPolicies) {
    std::printf("| %s |", policy);
    for (const auto& port : ports) {
      std::vector<double> s = seconds[port.first][policy];
      std::sort(s.begin(), s.end());
      std::printf(" %.0f |", steps / s[s.size() / 2]);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace conformance
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Times each policy at budget 512 on the canonical trace in several ports, "
      "side by side, through the conformance protocol.");
  absl::ParseCommandLine(argc, argv);
  return kvspec::conformance::Main();
}
