// Frames as text, for people: a --dump file (the runner's hello and
// request) or a port's recorded reply (`port < dump > reply`), each frame
// in protobuf text format (spec/protocol.md#frames).
#ifndef KVSPEC_CONFORMANCE_DECODE_H_
#define KVSPEC_CONFORMANCE_DECODE_H_

#include <string>

#include "absl/status/statusor.h"

namespace kvspec {
namespace conformance {

enum class Side {
  kRunner,  // RunnerMessage frames: what the runner writes (a --dump file)
  kPort,    // PortMessage frames: what a port writes
};

// Every frame of `bytes`, decoded as `side`'s messages, in text format, each
// under a "# frame N: B bytes" line. Refuses (InvalidArgument, naming the
// frame and its byte offset) a truncated frame, one over `max_frame_bytes`,
// one that does not parse, and one that sets no message.
absl::StatusOr<std::string> FramesAsText(const std::string& bytes, Side side,
                                         size_t max_frame_bytes);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_DECODE_H_
