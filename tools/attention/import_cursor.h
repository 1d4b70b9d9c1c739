// A cursor over header text, shared by the two readers of the attention
// importer: the .npy header's Python dict (import_npy.cc) and the
// .safetensors header's JSON (import_json.cc). Internal to
// //tools/attention:import_attention_lib.
#ifndef KVSPEC_TOOLS_ATTENTION_IMPORT_CURSOR_H_
#define KVSPEC_TOOLS_ATTENTION_IMPORT_CURSOR_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "tools/attention/import_internal.h"

namespace kvspec {
namespace import_attention {

class Cursor {
 public:
  explicit Cursor(absl::string_view text) : text_(text) {}

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  size_t pos() const { return pos_; }
  void Advance() { ++pos_; }
  void Rewind() { --pos_; }

  // Skips spaces, tabs, carriage returns and newlines.
  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' ||
                        Peek() == '\r')) {
      ++pos_;
    }
  }

  // Consumes `c` or fails naming what was expected.
  absl::Status Expect(char c) {
    if (Peek() != c) return Error(absl::StrFormat("expected '%c'", c));
    ++pos_;
    return absl::OkStatus();
  }

  // "at byte 17: expected ':', found 'x'".
  absl::Status Error(absl::string_view what) const {
    const std::string found =
        AtEnd() ? "the end of the header"
                : (absl::ascii_isprint(static_cast<unsigned char>(Peek()))
                       ? absl::StrFormat("'%c'", Peek())
                       : absl::StrFormat("byte 0x%02x",
                                         static_cast<unsigned char>(Peek())));
    return Invalid(
        absl::StrFormat("at byte %d: %s, found %s", pos_, what, found));
  }

  // A non-negative decimal integer below 2^64.
  absl::StatusOr<uint64_t> ReadInteger() {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      return Error("expected a non-negative integer");
    }
    const size_t start = pos_;
    uint64_t value = 0;
    while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      const uint64_t digit = Peek() - '0';
      if (value > (UINT64_MAX - digit) / 10) {
        pos_ = start;
        return Error("integer too large");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    return value;
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace import_attention
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_ATTENTION_IMPORT_CURSOR_H_
