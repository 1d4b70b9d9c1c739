// Blocking frame I/O for testees: the simplest correct way to speak
// spec/protocol.md#frames over stdin and stdout.
#ifndef KVSPEC_CONFORMANCE_TESTEE_STDIO_FRAMES_H_
#define KVSPEC_CONFORMANCE_TESTEE_STDIO_FRAMES_H_

#include <unistd.h>

#include <cstdint>
#include <string>

namespace kvspec {
namespace testee {

// Reads exactly `n` bytes; false on EOF or error.
inline bool ReadExactly(int fd, char* data, size_t n) {
  while (n > 0) {
    const ssize_t got = read(fd, data, n);
    if (got <= 0) return false;
    data += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// One frame's payload; false at end of input.
inline bool ReadFrame(int fd, std::string& payload) {
  unsigned char header[4];
  if (!ReadExactly(fd, reinterpret_cast<char*>(header), 4)) return false;
  const uint32_t n = uint32_t{header[0]} | uint32_t{header[1]} << 8 |
                     uint32_t{header[2]} << 16 | uint32_t{header[3]} << 24;
  payload.resize(n);
  return ReadExactly(fd, payload.data(), n);
}

inline bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

inline bool WriteFrame(int fd, const std::string& payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string frame;
  for (int i = 0; i < 4; ++i) frame.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return WriteAll(fd, frame + payload);
}

}  // namespace testee
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_TESTEE_STDIO_FRAMES_H_
