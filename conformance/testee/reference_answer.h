// The reference testee's reply to one RunnerMessage (spec/protocol.md),
// shared by the reference testee and the misbehaving fake ports.
#ifndef KVSPEC_CONFORMANCE_TESTEE_REFERENCE_ANSWER_H_
#define KVSPEC_CONFORMANCE_TESTEE_REFERENCE_ANSWER_H_

#include "spec/conformance.pb.h"

namespace kvspec {

conformance::v1::PortMessage Answer(const conformance::v1::RunnerMessage& in);

}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_TESTEE_REFERENCE_ANSWER_H_
