// Frames of the conformance protocol (spec/protocol.md#frames): a 4-byte
// little-endian length, then that many bytes.
//
// FrameDecoder is a pure byte-stream decoder with no I/O, so it can be fed
// by a pipe, a file or a fuzzer alike. It checks each declared length
// against its cap before reserving any memory for the frame.
#ifndef KVSPEC_CONFORMANCE_FRAME_H_
#define KVSPEC_CONFORMANCE_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace kvspec {
namespace conformance {

inline constexpr size_t kDefaultMaxFrameBytes = size_t{64} << 20;

// The 4-byte header and the payload, ready to write.
std::string EncodeFrame(absl::string_view payload);

class FrameDecoder {
 public:
  enum class State {
    kNeedMore,  // no complete frame yet
    kFrame,     // Next() filled `frame`
    kTooLarge,  // a declared length exceeds the cap; the stream is unusable
  };

  explicit FrameDecoder(size_t max_frame_bytes) : max_(max_frame_bytes) {}

  // Appends bytes read from the stream.
  void Feed(absl::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }

  // Takes the next complete frame's payload out of the buffer, if any.
  State Next(std::string& frame);

  // The length the oversized frame declared (after kTooLarge).
  uint64_t declared_length() const { return declared_; }

  // Bytes received but not yet returned in a frame.
  size_t buffered() const { return buffer_.size(); }

 private:
  size_t max_;
  uint64_t declared_ = 0;
  std::string buffer_;
};

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_FRAME_H_
