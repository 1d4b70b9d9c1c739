#include "cc/text.h"

#include <charconv>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_format.h"

namespace kvspec {
namespace {

template <typename T>
std::string Shortest(T value) {
  char buffer[64];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace

std::string ShortestDecimal(float value) { return Shortest(value); }
std::string ShortestDecimal(double value) { return Shortest(value); }

std::string HexBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return absl::StrFormat("0x%08x", bits);
}

std::string HexBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return absl::StrFormat("0x%016x", bits);
}

std::string FloatText(float value) {
  return ShortestDecimal(value) + " (" + HexBits(value) + ")";
}

std::string FloatText(double value) {
  return ShortestDecimal(value) + " (" + HexBits(value) + ")";
}

}  // namespace kvspec
