// A partial port, for the runner's tests and as a sample: the reference
// testee as a port of an older spec version, or of fewer features, would
// see it. It declares --spec_version (default 0.1.0), the policies that
// version has, and --declare (a comma-separated feature list; empty: none,
// so the runner takes the version's features). It implements --implement
// (default: what it declares, or the version's features): each request's
// scenario loses the wire fields of every other feature, as a protobuf
// library drops the fields it does not know, and a parameter of a missing
// feature or of a later version is refused as INVALID_PARAMETER, as a port
// that does not know it would (spec/features.md#a-port-without-a-feature).
// Everything else is the reference's answer.
//
//   partial_port --spec_version=0.3.0
//   partial_port --spec_version=0.1.0 --declare=decode,heads --implement=decode
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "absl/strings/str_split.h"
#include "conformance/testee/reference_answer.h"
#include "conformance/testee/stdio_frames.h"
#include "tools/vectors/features.h"

namespace {

std::string Arg(int argc, char** argv, const char* name, const std::string& fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return argv[i] + prefix.size();
    }
  }
  return fallback;
}

std::set<std::string> List(const std::string& text) {
  std::set<std::string> items;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    items.insert(std::string(item));
  }
  return items;
}

}  // namespace

int main(int argc, char** argv) {
  namespace v1 = kvspec::conformance::v1;
  namespace vectors = kvspec::vectors;
  const std::string version = Arg(argc, argv, "spec_version", "0.1.0");
  const std::set<std::string> declared = List(Arg(argc, argv, "declare", ""));
  const std::set<std::string> implemented = List(Arg(
      argc, argv, "implement", declared.empty() ? "" : Arg(argc, argv, "declare", "")));
  const std::set<std::string> features =
      implemented.empty() ? vectors::FeaturesOfVersion(version) : implemented;
  std::string payload;
  while (kvspec::testee::ReadFrame(STDIN_FILENO, payload)) {
    v1::RunnerMessage message;
    if (!message.ParseFromString(payload)) return 1;
    if (message.has_hello()) {
      v1::PortMessage reply = kvspec::Answer(message);
      v1::HelloReply* hello = reply.mutable_hello();
      hello->set_spec_version(version);
      hello->set_port_name("kvspec-partial-port");
      hello->clear_policies();
      for (const char* policy :
           {"full", "window", "streamingllm", "h2o", "tova", "snapkv", "random"}) {
        if (vectors::CompareVersions(vectors::PolicySince(policy), version) <= 0) {
          hello->add_policies(policy);
        }
      }
      hello->clear_features();
      for (const std::string& feature : declared) hello->add_features(feature);
      kvspec::testee::WriteFrame(STDOUT_FILENO, reply.SerializeAsString());
      continue;
    }
    v1::Request* request = message.mutable_request();
    const std::string unknown =
        vectors::UnknownParameter(request->policy(), features, version);
    v1::PortMessage reply;
    if (!unknown.empty()) {
      reply.mutable_response()->set_seq(request->seq());
      kvspec::v1::Rejection* rejection =
          reply.mutable_response()->mutable_log()->mutable_rejection();
      rejection->set_category(kvspec::v1::INVALID_PARAMETER);
      rejection->set_step(-1);
      rejection->set_message("unknown parameter " + unknown);
    } else {
      *request->mutable_scenario() = vectors::StripScenario(request->scenario(), features);
      reply = kvspec::Answer(message);
    }
    kvspec::testee::WriteFrame(STDOUT_FILENO, reply.SerializeAsString());
  }
  return 0;
}
