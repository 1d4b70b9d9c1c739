// Conversions between the reference's plain C++ types and the wire schemas of
// spec/kvspec.proto. The reference itself never depends on protobuf; only
// tools and the conformance layer do, through this file.
#ifndef KVSPEC_CC_PROTO_CONVERT_H_
#define KVSPEC_CC_PROTO_CONVERT_H_

#include "cc/harness.h"
#include "cc/registry.h"
#include "spec/kvspec.pb.h"

namespace kvspec {

TraceConfig FromProto(const v1::TraceConfig& proto);
v1::TraceConfig ToProto(const TraceConfig& config);

Scenario FromProto(const v1::Scenario& proto);
v1::Scenario ToProto(const Scenario& scenario);

PolicyConfig FromProto(const v1::PolicyConfig& proto);
v1::PolicyConfig ToProto(const PolicyConfig& config);

v1::EvictionLog ToProto(const RunResult& result);
// The refusal, if any, carries the log's category and message.
RunResult FromProto(const v1::EvictionLog& log);

}  // namespace kvspec

#endif  // KVSPEC_CC_PROTO_CONVERT_H_
