#include "conformance/frame.h"

namespace kvspec {
namespace conformance {

std::string EncodeFrame(absl::string_view payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string frame;
  frame.reserve(4 + payload.size());
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  frame.append(payload.data(), payload.size());
  return frame;
}

FrameDecoder::State FrameDecoder::Next(std::string& frame) {
  if (buffer_.size() < 4) return State::kNeedMore;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) {
    n |= uint32_t{static_cast<uint8_t>(buffer_[static_cast<size_t>(i)])} << (8 * i);
  }
  if (n > max_) {
    declared_ = n;
    return State::kTooLarge;
  }
  if (buffer_.size() - 4 < n) return State::kNeedMore;
  frame.assign(buffer_, 4, n);
  buffer_.erase(0, 4 + size_t{n});
  return State::kFrame;
}

}  // namespace conformance
}  // namespace kvspec
