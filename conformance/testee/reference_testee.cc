// The reference as a port: a conformance testee (spec/protocol.md) that runs
// each request through the C++ reference. It is the sample a port author
// reads first: everything a testee does is here, in this order.
//
//   1. read frames from stdin: a 4-byte little-endian length, then a
//      serialized kvspec.conformance.v1.RunnerMessage;
//   2. answer the hello with a HelloReply listing the supported policies;
//   3. answer each request with a Response echoing its sequence number;
//   4. log to stderr only; exit when stdin closes.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "conformance/testee/reference_answer.h"
#include "conformance/testee/stdio_frames.h"
#include "spec/conformance.pb.h"

// The reply to each message is computed by Answer(), in reference_answer.cc:
// build the policy from the request's configuration, run the scenario with
// the harness, and return the eviction log.
int main() {
  std::string payload;
  while (kvspec::testee::ReadFrame(STDIN_FILENO, payload)) {
    kvspec::conformance::v1::RunnerMessage message;
    if (!message.ParseFromString(payload)) {
      std::fprintf(stderr, "reference testee: a frame that is not a RunnerMessage\n");
      return 1;
    }
    if (message.has_request()) {
      std::fprintf(stderr, "reference testee: case %s\n",
                   message.request().case_id().c_str());
    }
    if (!kvspec::testee::WriteFrame(STDOUT_FILENO,
                                    kvspec::Answer(message).SerializeAsString())) {
      return 1;
    }
  }
  return 0;
}
