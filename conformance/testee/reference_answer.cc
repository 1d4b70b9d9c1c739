#include "conformance/testee/reference_answer.h"

#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "cc/version.h"
#include "tools/vectors/features.h"

namespace kvspec {
conformance::v1::PortMessage Answer(const conformance::v1::RunnerMessage& in) {
  conformance::v1::PortMessage out;
  if (in.has_hello()) {
    conformance::v1::HelloReply* hello = out.mutable_hello();
    hello->set_protocol_version(1);
    hello->set_spec_version(kSpecVersion);
    hello->set_port_name("kvspec-reference");
    hello->set_language("C++17");
    hello->set_port_version(kSpecVersion);
    for (const PolicyInfo& info : RegisteredPolicies()) hello->add_policies(info.name);
    // spec/features.md: the reference implements every feature.
    for (const vectors::FeatureInfo& feature : vectors::Features()) {
      hello->add_features(feature.name);
    }
    return out;
  }
  const conformance::v1::Request& request = in.request();
  conformance::v1::Response* response = out.mutable_response();
  response->set_seq(request.seq());
  // The whole port, in one call: build the policy, run the scenario.
  const RunResult result =
      RunScenario(FromProto(request.policy()), FromProto(request.scenario()),
                  RunOptions{request.want_cut()});
  *response->mutable_log() = ToProto(result);
  return out;
}

}  // namespace kvspec

