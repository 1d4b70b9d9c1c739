#include "conformance/port_text.h"

#include "absl/strings/str_format.h"

namespace kvspec {
namespace conformance {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` (RFC 3629:
// no overlong form, no surrogate, nothing above U+10FFFF), or 0.
size_t Utf8Length(absl::string_view s) {
  const auto byte = [&s](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  size_t n;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (b0 < 0x80) {
    return 1;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) low = 0xA0;   // overlong
    if (b0 == 0xED) high = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) low = 0x90;   // overlong
    if (b0 == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string PortText(absl::string_view raw, size_t cap) {
  std::string out;
  size_t i = 0;
  while (i < raw.size()) {
    const size_t n = Utf8Length(raw.substr(i));
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    std::string piece;
    if (n == 0 || (n == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F))) {
      piece = absl::StrFormat("\\x%02x", c);
    } else {
      piece.assign(raw.data() + i, n);
    }
    if (out.size() + piece.size() > cap) break;
    out += piece;
    i += n == 0 ? 1 : n;
  }
  if (i < raw.size()) {
    out += absl::StrFormat(" [cut: %d more bytes from the port]", raw.size() - i);
  }
  return out;
}

std::string TailOnBoundary(absl::string_view text, size_t cap) {
  if (text.size() <= cap) return std::string(text);
  size_t start = text.size() - cap;
  // At most three continuation bytes can precede a character's start.
  for (int k = 0; k < 3 && start < text.size() &&
                  (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80;
       ++k) {
    ++start;
  }
  return std::string(text.substr(start));
}

}  // namespace conformance
}  // namespace kvspec
