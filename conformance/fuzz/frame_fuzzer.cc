// libFuzzer target: the frame decoder never crashes, never allocates past
// its cap, and every frame it returns re-encodes to the bytes it consumed.
// Built and run by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conformance/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvspec::conformance::FrameDecoder;
  constexpr size_t kCap = 1 << 20;
  FrameDecoder decoder(kCap);
  // Feed in uneven pieces, as a pipe would deliver them.
  size_t offset = 0;
  size_t piece = 1;
  std::string consumed;
  std::string frame;
  while (offset < size) {
    const size_t n = std::min(piece, size - offset);
    decoder.Feed(std::string(reinterpret_cast<const char*>(data + offset), n));
    offset += n;
    piece = piece * 3 % 17 + 1;
    while (true) {
      const FrameDecoder::State state = decoder.Next(frame);
      if (state == FrameDecoder::State::kTooLarge) {
        if (decoder.declared_length() <= kCap) abort();
        return 0;
      }
      if (state == FrameDecoder::State::kNeedMore) break;
      if (frame.size() > kCap) abort();
      consumed += kvspec::conformance::EncodeFrame(frame);
    }
  }
  // Everything returned is a prefix of the input, re-encoded exactly.
  if (consumed.size() > size ||
      consumed != std::string(reinterpret_cast<const char*>(data), consumed.size())) {
    abort();
  }
  return 0;
}
