// Conversions between the reference's plain C++ types and the wire schemas of
// spec/kvspec.proto. The reference itself never depends on protobuf; only
// tools and the conformance layer do, through this file.
#ifndef KVSPEC_CC_PROTO_CONVERT_H_
#define KVSPEC_CC_PROTO_CONVERT_H_

#include "cc/harness.h"
#include "cc/registry.h"
#include "spec/kvspec.pb.h"

namespace kvspec {

Scenario FromProto(const v1::Scenario& proto);
v1::Scenario ToProto(const Scenario& scenario);

PolicyConfig FromProto(const v1::PolicyConfig& proto);
v1::PolicyConfig ToProto(const PolicyConfig& config);

v1::EvictionLog ToProto(const RunResult& result);

}  // namespace kvspec

#endif  // KVSPEC_CC_PROTO_CONVERT_H_
