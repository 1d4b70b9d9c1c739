#include "conformance/frame.h"

#include <string>

#include "gtest/gtest.h"

namespace kvspec {
namespace conformance {
namespace {

TEST(FrameDecoder, ReassemblesFramesFedByteByByte) {
  const std::string stream = EncodeFrame("hello") + EncodeFrame("") + EncodeFrame("xyz");
  FrameDecoder decoder(1024);
  std::vector<std::string> frames;
  std::string frame;
  for (char c : stream) {
    decoder.Feed(std::string(1, c));
    while (decoder.Next(frame) == FrameDecoder::State::kFrame) frames.push_back(frame);
  }
  EXPECT_EQ(frames, (std::vector<std::string>{"hello", "", "xyz"}));
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(FrameDecoder, LengthIsLittleEndian) {
  EXPECT_EQ(EncodeFrame(std::string(258, 'a')).substr(0, 4),
            std::string("\x02\x01\x00\x00", 4));
}

TEST(FrameDecoder, RefusesAnOversizedFrameBeforeItArrives) {
  FrameDecoder decoder(100);
  decoder.Feed(std::string("\xff\xff\xff\x7f", 4));  // declares ~2 GiB
  std::string frame;
  EXPECT_EQ(decoder.Next(frame), FrameDecoder::State::kTooLarge);
  EXPECT_EQ(decoder.declared_length(), 0x7fffffffu);
  EXPECT_TRUE(frame.empty());
}

TEST(FrameDecoder, WaitsForAnIncompleteFrame) {
  FrameDecoder decoder(100);
  decoder.Feed(std::string("\x05\x00\x00\x00" "abc", 7));
  std::string frame;
  EXPECT_EQ(decoder.Next(frame), FrameDecoder::State::kNeedMore);
  decoder.Feed("de");
  EXPECT_EQ(decoder.Next(frame), FrameDecoder::State::kFrame);
  EXPECT_EQ(frame, "abcde");
}

}  // namespace
}  // namespace conformance
}  // namespace kvspec
