// import_attention: see import_attention_lib.h for what it reads and writes.
//
// The file is read whole into memory. A reader for each format (.npy,
// .safetensors) checks the file's structure and returns a Layout: where, in
// the file's bytes, each head's row for each query position starts. One
// pass then checks every weight the scenario will carry and every weight
// above the diagonal, and a second pass copies the carried weights into the
// scenario. Floats are decoded from their four little-endian bytes into a
// uint32 and reinterpreted, so every bit pattern travels unchanged whatever
// the host.
#include "tools/import_attention_lib.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "cc/text.h"
#include "spec/kvspec.pb.h"

namespace kvspec {
namespace {

// spec/heads.md#head-counts: a scenario has at most this many query heads.
constexpr uint64_t kMaxHeads = 1024;

// A serialized protobuf message must stay below 2 GiB.
constexpr uint64_t kMaxScenarioBytes = INT_MAX;

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// ---------------------------------------------------------------------------
// Bytes and numbers.

// The unsigned little-endian integer of `width` bytes at `offset`. The caller
// has checked that the bytes are there.
uint64_t LittleEndian(absl::string_view bytes, uint64_t offset, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  }
  return value;
}

// The float32 whose IEEE bits are the four little-endian bytes at `offset`.
float FloatAt(absl::string_view bytes, uint64_t offset) {
  const uint32_t bits = static_cast<uint32_t>(LittleEndian(bytes, offset, 4));
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// a * b, or nullopt if it does not fit in 64 bits.
std::optional<uint64_t> Multiply(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return std::nullopt;
  return a * b;
}

// The product of `dims` times `element_bytes`, or nullopt on overflow.
std::optional<uint64_t> ByteCount(const std::vector<uint64_t>& dims,
                                  uint64_t element_bytes) {
  std::optional<uint64_t> bytes = element_bytes;
  for (uint64_t dim : dims) {
    if (bytes.has_value()) bytes = Multiply(*bytes, dim);
  }
  return bytes;
}

std::string ShapeText(const std::vector<uint64_t>& shape) {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

// ---------------------------------------------------------------------------
// Where the weights are.

// One layer's causal attention as it lies in the file's bytes. Row q of head
// h starts at byte row_start[q] + h * head_stride[q] and holds row_keys(q)
// float32 weights, for keys 0, 1, ...
struct Layout {
  uint32_t heads = 0;
  // L: the number of query positions, which is also the number of keys.
  uint32_t length = 0;
  // true: tensors step.<t>, row q holds keys 0..q. false: a [heads, L, L]
  // matrix, every row holds L keys and those above the diagonal are zero.
  bool step_rows = false;
  // The matrix's tensor name in a .safetensors file ("layer.3"); empty for
  // a .npy file and for step rows.
  std::string tensor;
  std::vector<uint64_t> row_start;
  std::vector<uint64_t> head_stride;

  uint64_t row_keys(uint32_t q) const { return step_rows ? q + 1 : length; }
};

// How a refusal names one weight: "head 2, row 5, column 7" in a .npy
// matrix, "tensor layer.3, head 2, row 5, column 7" in a .safetensors
// matrix, "tensor step.5, head 2, column 7" for step rows.
std::string WeightName(const Layout& layout, uint32_t head, uint32_t q,
                       uint64_t k) {
  if (layout.step_rows) {
    return absl::StrFormat("tensor step.%d, head %d, column %d", q, head, k);
  }
  const std::string tensor =
      layout.tensor.empty() ? "" : absl::StrCat("tensor ", layout.tensor, ", ");
  return absl::StrFormat("%shead %d, row %d, column %d", tensor, head, q, k);
}

// Checks the matrix dimensions [heads, L, L] that both formats share.
absl::Status CheckMatrixShape(const std::vector<uint64_t>& shape) {
  if (shape.size() != 3 || shape[1] != shape[2]) {
    return Invalid(absl::StrFormat("shape %s is not [heads, L, L]",
                                   ShapeText(shape)));
  }
  if (shape[0] == 0) {
    return Invalid(absl::StrFormat("shape %s has no heads", ShapeText(shape)));
  }
  if (shape[1] == 0) {
    return Invalid(absl::StrFormat("shape %s has L = 0: no positions",
                                   ShapeText(shape)));
  }
  if (shape[0] > UINT32_MAX || shape[1] > UINT32_MAX) {
    return Invalid(absl::StrFormat("shape %s is too large", ShapeText(shape)));
  }
  return absl::OkStatus();
}

// The layout of a [heads, L, L] float32 matrix in C order starting at `start`.
Layout MatrixLayout(const std::vector<uint64_t>& shape, uint64_t start,
                    std::string tensor) {
  Layout layout;
  layout.heads = static_cast<uint32_t>(shape[0]);
  layout.length = static_cast<uint32_t>(shape[1]);
  layout.tensor = std::move(tensor);
  const uint64_t row_bytes = 4 * uint64_t{layout.length};
  for (uint32_t q = 0; q < layout.length; ++q) {
    layout.row_start.push_back(start + q * row_bytes);
    layout.head_stride.push_back(layout.length * row_bytes);
  }
  return layout;
}

// ---------------------------------------------------------------------------
// A cursor over header text, shared by the .npy and the JSON reader.

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

// ---------------------------------------------------------------------------
// .npy (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html)
//
//   "\x93NUMPY", major, minor (1.0, 2.0 or 3.0), the header length (2 bytes
//   little-endian in 1.0, 4 bytes in 2.0 and 3.0), the header: a Python dict
//   literal such as {'descr': '<f4', 'fortran_order': False,
//   'shape': (3, 16, 16), } padded with spaces and ended by '\n', then the
//   data.

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

// A Python string literal without escapes: 'text' or "text".
absl::StatusOr<std::string> ReadPythonString(Cursor& cursor) {
  const char quote = cursor.Peek();
  if (quote != '\'' && quote != '"') return cursor.Error("expected a string");
  cursor.Advance();
  std::string value;
  while (cursor.Peek() != quote) {
    if (cursor.AtEnd() || cursor.Peek() == '\\' || cursor.Peek() == '\n') {
      return cursor.Error("unsupported or unterminated string");
    }
    value += cursor.Peek();
    cursor.Advance();
  }
  cursor.Advance();
  return value;
}

// A tuple of non-negative integers: (), (3,), (3, 16, 16).
absl::StatusOr<std::vector<uint64_t>> ReadPythonTuple(Cursor& cursor) {
  KVSPEC_RETURN_IF_ERROR(cursor.Expect('('));
  std::vector<uint64_t> values;
  cursor.SkipSpace();
  while (cursor.Peek() != ')') {
    absl::StatusOr<uint64_t> value = cursor.ReadInteger();
    if (!value.ok()) return value.status();
    values.push_back(*value);
    cursor.SkipSpace();
    if (cursor.Peek() == ',') {
      cursor.Advance();
      cursor.SkipSpace();
    } else if (cursor.Peek() != ')') {
      return cursor.Error("expected ',' or ')' in the shape");
    }
  }
  cursor.Advance();
  return values;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view text) {
  Cursor cursor(text);
  NpyHeader header;
  bool seen_descr = false, seen_fortran = false, seen_shape = false;
  cursor.SkipSpace();
  KVSPEC_RETURN_IF_ERROR(cursor.Expect('{'));
  cursor.SkipSpace();
  while (cursor.Peek() != '}') {
    absl::StatusOr<std::string> key = ReadPythonString(cursor);
    if (!key.ok()) return key.status();
    cursor.SkipSpace();
    KVSPEC_RETURN_IF_ERROR(cursor.Expect(':'));
    cursor.SkipSpace();
    if (*key == "descr" && !seen_descr) {
      if (cursor.Peek() != '\'' && cursor.Peek() != '"') {
        return cursor.Error(
            "'descr' is not a dtype string (a structured dtype is not "
            "supported)");
      }
      absl::StatusOr<std::string> descr = ReadPythonString(cursor);
      if (!descr.ok()) return descr.status();
      header.descr = *descr;
      seen_descr = true;
    } else if (*key == "fortran_order" && !seen_fortran) {
      if (absl::StartsWith(text.substr(cursor.pos()), "True")) {
        header.fortran_order = true;
      } else if (!absl::StartsWith(text.substr(cursor.pos()), "False")) {
        return cursor.Error("expected True or False");
      }
      for (int i = header.fortran_order ? 4 : 5; i > 0; --i) cursor.Advance();
      seen_fortran = true;
    } else if (*key == "shape" && !seen_shape) {
      absl::StatusOr<std::vector<uint64_t>> shape = ReadPythonTuple(cursor);
      if (!shape.ok()) return shape.status();
      header.shape = *shape;
      seen_shape = true;
    } else {
      return Invalid(absl::StrFormat(
          "unexpected or repeated key '%s' in the header", *key));
    }
    cursor.SkipSpace();
    if (cursor.Peek() == ',') {
      cursor.Advance();
      cursor.SkipSpace();
    } else if (cursor.Peek() != '}') {
      return cursor.Error("expected ',' or '}'");
    }
  }
  cursor.Advance();
  cursor.SkipSpace();
  if (!cursor.AtEnd()) return cursor.Error("expected the end of the header");
  if (!seen_descr || !seen_fortran || !seen_shape) {
    return Invalid(
        "the header lacks one of 'descr', 'fortran_order' and 'shape'");
  }
  return header;
}

absl::StatusOr<Layout> ReadNpy(absl::string_view bytes) {
  constexpr absl::string_view kMagic("\x93NUMPY", 6);
  if (bytes.size() < 8 || bytes.substr(0, 6) != kMagic) {
    return Invalid("not a NumPy .npy file (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    return Invalid(absl::StrFormat(
        "NumPy format version %d.%d is not supported (only 1.0, 2.0, 3.0)",
        major, minor));
  }
  const int length_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + uint64_t(length_bytes)) {
    return Invalid("truncated: the file ends inside the header length");
  }
  const uint64_t header_length = LittleEndian(bytes, 8, length_bytes);
  const uint64_t data_start = 8 + length_bytes + header_length;
  if (data_start > bytes.size()) {
    return Invalid(absl::StrFormat(
        "header length %d is larger than the file (%d bytes after the "
        "length field)",
        header_length, bytes.size() - 8 - length_bytes));
  }
  absl::StatusOr<NpyHeader> header =
      ParseNpyHeader(bytes.substr(8 + length_bytes, header_length));
  if (!header.ok()) {
    return Invalid(absl::StrCat("malformed header: ",
                                header.status().message()));
  }
  if (header->descr != "<f4") {
    return Invalid(absl::StrFormat(
        "dtype '%s' is not supported; only little-endian float32 ('<f4')",
        header->descr));
  }
  if (header->fortran_order) {
    return Invalid(
        "the array is in Fortran order; only C order is supported (save "
        "np.ascontiguousarray(a))");
  }
  KVSPEC_RETURN_IF_ERROR(CheckMatrixShape(header->shape));
  const std::optional<uint64_t> need = ByteCount(header->shape, 4);
  const uint64_t have = bytes.size() - data_start;
  if (!need.has_value() || *need != have) {
    const std::string dims = absl::StrJoin(header->shape, "x");
    const std::string need_text =
        need.has_value() ? absl::StrCat(*need) : "more than 2^64";
    if (!need.has_value() || have < *need) {
      return Invalid(absl::StrFormat(
          "truncated: the header says %s float32 (%s bytes of data) but the "
          "file holds %d",
          dims, need_text, have));
    }
    return Invalid(absl::StrFormat(
        "the header says %s float32 (%s bytes of data) but the file holds "
        "%d: %d bytes too many",
        dims, need_text, have, have - *need));
  }
  return MatrixLayout(header->shape, data_start, "");
}

// ---------------------------------------------------------------------------
// A minimal JSON reader for safetensors headers. A header is one object
// whose values are objects; those hold strings, non-negative integers and
// arrays of non-negative integers. Anything else JSON allows (floats,
// negative numbers, true, false, null, arrays of other things, deeper
// objects) is refused by name.

struct JsonValue {
  enum class Kind { kObject, kString, kInteger, kIntegerArray };
  Kind kind = Kind::kObject;
  std::string string;                // kString
  uint64_t integer = 0;              // kInteger
  std::vector<uint64_t> integers;    // kIntegerArray
  // kObject: the members in file order.
  std::vector<std::pair<std::string, JsonValue>> members;
};

// Appends code point `c` to `out` as UTF-8.
void AppendUtf8(uint32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// The four hex digits of a \u escape (the cursor is just past the 'u').
absl::StatusOr<uint32_t> ReadHex4(Cursor& cursor) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = cursor.Peek();
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return cursor.Error("expected four hex digits after \\u");
    }
    value = value * 16 + digit;
    cursor.Advance();
  }
  return value;
}

absl::StatusOr<std::string> ReadJsonString(Cursor& cursor) {
  KVSPEC_RETURN_IF_ERROR(cursor.Expect('"'));
  std::string value;
  while (cursor.Peek() != '"') {
    if (cursor.AtEnd()) return cursor.Error("unterminated string");
    const unsigned char c = static_cast<unsigned char>(cursor.Peek());
    if (c < 0x20) return cursor.Error("control character in a string");
    cursor.Advance();
    if (c != '\\') {
      value += static_cast<char>(c);
      continue;
    }
    const char escape = cursor.Peek();
    cursor.Advance();
    switch (escape) {
      case '"': value += '"'; break;
      case '\\': value += '\\'; break;
      case '/': value += '/'; break;
      case 'b': value += '\b'; break;
      case 'f': value += '\f'; break;
      case 'n': value += '\n'; break;
      case 'r': value += '\r'; break;
      case 't': value += '\t'; break;
      case 'u': {
        absl::StatusOr<uint32_t> unit = ReadHex4(cursor);
        if (!unit.ok()) return unit.status();
        uint32_t code_point = *unit;
        if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
          return cursor.Error("lone low surrogate in a \\u escape");
        }
        if (code_point >= 0xD800 && code_point <= 0xDBFF) {
          if (cursor.Peek() != '\\') {
            return cursor.Error("high surrogate without its low surrogate");
          }
          cursor.Advance();
          KVSPEC_RETURN_IF_ERROR(cursor.Expect('u'));
          absl::StatusOr<uint32_t> low = ReadHex4(cursor);
          if (!low.ok()) return low.status();
          if (*low < 0xDC00 || *low > 0xDFFF) {
            return cursor.Error("high surrogate without its low surrogate");
          }
          code_point =
              0x10000 + ((code_point - 0xD800) << 10) + (*low - 0xDC00);
        }
        AppendUtf8(code_point, value);
        break;
      }
      default:
        cursor.Rewind();
        return cursor.Error("unknown escape in a string");
    }
  }
  cursor.Advance();
  return value;
}

// A JSON number: refused unless it is a non-negative integer.
absl::StatusOr<uint64_t> ReadJsonInteger(Cursor& cursor) {
  if (cursor.Peek() == '-') {
    return cursor.Error(
        "negative number (a safetensors header holds none)");
  }
  if (cursor.Peek() == '0') {
    cursor.Advance();
    if (absl::ascii_isdigit(static_cast<unsigned char>(cursor.Peek()))) {
      return cursor.Error("digit after a leading zero (JSON forbids it)");
    }
    cursor.Rewind();
  }
  absl::StatusOr<uint64_t> value = cursor.ReadInteger();
  if (!value.ok()) return value.status();
  if (cursor.Peek() == '.' || cursor.Peek() == 'e' || cursor.Peek() == 'E') {
    return cursor.Error(
        "number with a fraction or exponent (a safetensors header holds "
        "integers only)");
  }
  return value;
}

// [] or [1, 2, 3].
absl::StatusOr<std::vector<uint64_t>> ReadJsonIntegerArray(Cursor& cursor) {
  KVSPEC_RETURN_IF_ERROR(cursor.Expect('['));
  std::vector<uint64_t> values;
  cursor.SkipSpace();
  if (cursor.Peek() == ']') {
    cursor.Advance();
    return values;
  }
  while (true) {
    cursor.SkipSpace();
    if (!absl::ascii_isdigit(static_cast<unsigned char>(cursor.Peek())) &&
        cursor.Peek() != '-') {
      return cursor.Error(
          "expected an integer (arrays in a safetensors header hold "
          "integers only)");
    }
    absl::StatusOr<uint64_t> value = ReadJsonInteger(cursor);
    if (!value.ok()) return value.status();
    values.push_back(*value);
    cursor.SkipSpace();
    if (cursor.Peek() == ']') break;
    KVSPEC_RETURN_IF_ERROR(cursor.Expect(','));
  }
  cursor.Advance();
  return values;
}

// An object; `depth` is 1 for the header's top level, 2 for a tensor's entry
// or __metadata__. Deeper objects are refused.
absl::StatusOr<JsonValue> ReadJsonObject(Cursor& cursor, int depth) {
  if (depth > 2) {
    return cursor.Error(
        "object nested deeper than a safetensors header's two levels");
  }
  KVSPEC_RETURN_IF_ERROR(cursor.Expect('{'));
  JsonValue object;
  object.kind = JsonValue::Kind::kObject;
  cursor.SkipSpace();
  if (cursor.Peek() == '}') {
    cursor.Advance();
    return object;
  }
  while (true) {
    cursor.SkipSpace();
    const size_t key_pos = cursor.pos();
    absl::StatusOr<std::string> key = ReadJsonString(cursor);
    if (!key.ok()) return key.status();
    for (const auto& member : object.members) {
      if (member.first == *key) {
        return Invalid(absl::StrFormat("at byte %d: key \"%s\" is repeated",
                                       key_pos, *key));
      }
    }
    cursor.SkipSpace();
    KVSPEC_RETURN_IF_ERROR(cursor.Expect(':'));
    cursor.SkipSpace();
    JsonValue value;
    const char c = cursor.Peek();
    if (c == '{') {
      absl::StatusOr<JsonValue> inner = ReadJsonObject(cursor, depth + 1);
      if (!inner.ok()) return inner.status();
      value = std::move(*inner);
    } else if (c == '"') {
      absl::StatusOr<std::string> text = ReadJsonString(cursor);
      if (!text.ok()) return text.status();
      value.kind = JsonValue::Kind::kString;
      value.string = std::move(*text);
    } else if (c == '[') {
      absl::StatusOr<std::vector<uint64_t>> integers =
          ReadJsonIntegerArray(cursor);
      if (!integers.ok()) return integers.status();
      value.kind = JsonValue::Kind::kIntegerArray;
      value.integers = std::move(*integers);
    } else if (c == '-' || absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      absl::StatusOr<uint64_t> integer = ReadJsonInteger(cursor);
      if (!integer.ok()) return integer.status();
      value.kind = JsonValue::Kind::kInteger;
      value.integer = *integer;
    } else if (c == 't' || c == 'f' || c == 'n') {
      return cursor.Error(
          "true, false and null are not expected in a safetensors header");
    } else {
      return cursor.Error("expected a value");
    }
    object.members.emplace_back(std::move(*key), std::move(value));
    cursor.SkipSpace();
    if (cursor.Peek() == '}') break;
    KVSPEC_RETURN_IF_ERROR(cursor.Expect(','));
  }
  cursor.Advance();
  return object;
}

absl::StatusOr<JsonValue> ParseJsonHeader(absl::string_view text) {
  Cursor cursor(text);
  cursor.SkipSpace();
  absl::StatusOr<JsonValue> header = ReadJsonObject(cursor, 1);
  if (!header.ok()) return header.status();
  // safetensors pads the header with spaces.
  cursor.SkipSpace();
  if (!cursor.AtEnd()) return cursor.Error("expected the end of the header");
  return header;
}

// ---------------------------------------------------------------------------
// .safetensors (https://github.com/huggingface/safetensors#format)
//
//   8 bytes: N, the header length, little-endian; N bytes: a JSON object
//   mapping each tensor's name to {"dtype", "shape", "data_offsets": [begin,
//   end]} (offsets relative to the data, which starts after the header), and
//   optionally "__metadata__" to an object of strings; then the data.

struct TensorEntry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // relative to the data
  uint64_t end = 0;
};

absl::StatusOr<TensorEntry> TensorFromJson(const std::string& name,
                                           const JsonValue& value) {
  if (value.kind != JsonValue::Kind::kObject) {
    return Invalid(absl::StrFormat(
        "header entry \"%s\" is not an object {dtype, shape, data_offsets}",
        name));
  }
  TensorEntry tensor;
  tensor.name = name;
  bool seen_dtype = false, seen_shape = false, seen_offsets = false;
  for (const auto& [key, field] : value.members) {
    if (key == "dtype" && field.kind == JsonValue::Kind::kString) {
      tensor.dtype = field.string;
      seen_dtype = true;
    } else if (key == "shape" && field.kind == JsonValue::Kind::kIntegerArray) {
      tensor.shape = field.integers;
      seen_shape = true;
    } else if (key == "data_offsets" &&
               field.kind == JsonValue::Kind::kIntegerArray &&
               field.integers.size() == 2) {
      tensor.begin = field.integers[0];
      tensor.end = field.integers[1];
      seen_offsets = true;
    } else {
      return Invalid(absl::StrFormat(
          "tensor %s: unexpected field \"%s\" (expected \"dtype\": string, "
          "\"shape\": [integers], \"data_offsets\": [begin, end])",
          name, key));
    }
  }
  if (!seen_dtype || !seen_shape || !seen_offsets) {
    return Invalid(absl::StrFormat(
        "tensor %s: lacks one of \"dtype\", \"shape\" and \"data_offsets\"",
        name));
  }
  return tensor;
}

// Checks every tensor's data_offsets against the data and each other.
absl::Status CheckOffsets(std::vector<TensorEntry> tensors,
                          uint64_t data_bytes) {
  for (const TensorEntry& t : tensors) {
    if (t.begin > t.end) {
      return Invalid(absl::StrFormat(
          "tensor %s: data_offsets [%d, %d] end before they begin", t.name,
          t.begin, t.end));
    }
    if (t.end > data_bytes) {
      return Invalid(absl::StrFormat(
          "tensor %s: data_offsets [%d, %d] run past the end of the file "
          "(%d bytes of data after the header)",
          t.name, t.begin, t.end, data_bytes));
    }
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorEntry& a, const TensorEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  // The non-empty tensor reaching furthest so far.
  const TensorEntry* furthest = nullptr;
  for (const TensorEntry& t : tensors) {
    if (t.begin == t.end) continue;  // empty: overlaps nothing
    if (furthest != nullptr && t.begin < furthest->end) {
      return Invalid(absl::StrFormat(
          "tensors %s and %s overlap: data_offsets [%d, %d] and [%d, %d]",
          furthest->name, t.name, furthest->begin, furthest->end, t.begin,
          t.end));
    }
    if (furthest == nullptr || t.end > furthest->end) furthest = &t;
  }
  return absl::OkStatus();
}

// "layer.12" with prefix "layer." -> 12. nullopt if `name` does not start
// with the prefix; an error if what follows is not a plain decimal number.
absl::StatusOr<std::optional<uint32_t>> IndexedName(const std::string& name,
                                                    absl::string_view prefix) {
  if (!absl::StartsWith(name, prefix)) return std::optional<uint32_t>();
  const absl::string_view digits =
      absl::string_view(name).substr(prefix.size());
  uint32_t index = 0;
  const bool canonical =
      !digits.empty() && (digits == "0" || digits[0] != '0') &&
      std::all_of(digits.begin(), digits.end(),
                  [](char c) { return absl::ascii_isdigit(c); }) &&
      absl::SimpleAtoi(digits, &index);
  if (!canonical) {
    return Invalid(absl::StrFormat(
        "tensor name \"%s\" is not %s<n> with n a decimal number", name,
        prefix));
  }
  return std::optional<uint32_t>(index);
}

// The checks every F32 tensor we read shares: dtype, then the bytes its
// offsets hold against its shape.
absl::Status CheckF32Tensor(const TensorEntry& tensor) {
  if (tensor.dtype != "F32") {
    return Invalid(absl::StrFormat(
        "tensor %s has dtype %s; only F32 is supported", tensor.name,
        tensor.dtype));
  }
  const std::optional<uint64_t> need = ByteCount(tensor.shape, 4);
  const uint64_t have = tensor.end - tensor.begin;
  if (!need.has_value() || *need != have) {
    return Invalid(absl::StrFormat(
        "tensor %s: data_offsets [%d, %d] hold %d bytes but shape %s of F32 "
        "needs %s",
        tensor.name, tensor.begin, tensor.end, have, ShapeText(tensor.shape),
        need.has_value() ? absl::StrCat(*need) : "more than 2^64"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Layout> ReadSafetensors(absl::string_view bytes,
                                       const ImportOptions& options) {
  if (bytes.size() < 8) {
    return Invalid(absl::StrFormat(
        "truncated: %d bytes, shorter than the 8-byte header length",
        bytes.size()));
  }
  const uint64_t header_length = LittleEndian(bytes, 0, 8);
  if (header_length > bytes.size() - 8) {
    return Invalid(absl::StrFormat(
        "header length %d is larger than the file (%d bytes after the "
        "8-byte length)",
        header_length, bytes.size() - 8));
  }
  absl::StatusOr<JsonValue> header =
      ParseJsonHeader(bytes.substr(8, header_length));
  if (!header.ok()) {
    return Invalid(absl::StrCat("malformed JSON header: ",
                                header.status().message()));
  }
  const uint64_t data_start = 8 + header_length;
  const uint64_t data_bytes = bytes.size() - data_start;

  std::vector<TensorEntry> tensors;
  for (const auto& [name, value] : header->members) {
    if (name == "__metadata__") {
      const bool strings_only =
          value.kind == JsonValue::Kind::kObject &&
          std::all_of(value.members.begin(), value.members.end(),
                      [](const auto& member) {
                        return member.second.kind == JsonValue::Kind::kString;
                      });
      if (!strings_only) {
        return Invalid(
            "malformed JSON header: __metadata__ is not an object of "
            "strings");
      }
      continue;
    }
    absl::StatusOr<TensorEntry> tensor = TensorFromJson(name, value);
    if (!tensor.ok()) return tensor.status();
    tensors.push_back(std::move(*tensor));
  }
  KVSPEC_RETURN_IF_ERROR(CheckOffsets(tensors, data_bytes));

  // Sort the tensors we know into layer.<n> and step.<t>; others are ignored.
  std::vector<std::pair<uint32_t, const TensorEntry*>> layers, steps;
  for (const TensorEntry& tensor : tensors) {
    absl::StatusOr<std::optional<uint32_t>> layer =
        IndexedName(tensor.name, "layer.");
    if (!layer.ok()) return layer.status();
    absl::StatusOr<std::optional<uint32_t>> step =
        IndexedName(tensor.name, "step.");
    if (!step.ok()) return step.status();
    if (layer->has_value()) layers.emplace_back(**layer, &tensor);
    if (step->has_value()) steps.emplace_back(**step, &tensor);
  }
  std::sort(layers.begin(), layers.end());
  std::sort(steps.begin(), steps.end());
  std::vector<std::string> layer_names;
  for (const auto& [n, tensor] : layers) layer_names.push_back(tensor->name);

  if (!layers.empty() && !steps.empty()) {
    return Invalid(
        "the file holds both layer.<n> and step.<t> tensors; it must hold "
        "one kind");
  }
  if (layers.empty() && steps.empty()) {
    return Invalid(
        "the file holds no tensor layer.<n> (a [heads, L, L] matrix) and no "
        "tensor step.<t> (per-step rows)");
  }

  if (!layers.empty()) {
    const TensorEntry* chosen = nullptr;
    if (options.layer.has_value()) {
      for (const auto& [n, tensor] : layers) {
        if (n == *options.layer) chosen = tensor;
      }
      if (chosen == nullptr) {
        return Invalid(absl::StrFormat(
            "--layer=%d: the file has no tensor layer.%d (it holds %s)",
            *options.layer, *options.layer, absl::StrJoin(layer_names, ", ")));
      }
    } else if (layers.size() == 1) {
      chosen = layers[0].second;
    } else {
      return Invalid(absl::StrFormat(
          "the file holds %d layers (%s): choose one with --layer",
          layers.size(), absl::StrJoin(layer_names, ", ")));
    }
    KVSPEC_RETURN_IF_ERROR(CheckF32Tensor(*chosen));
    absl::Status shape = CheckMatrixShape(chosen->shape);
    if (!shape.ok()) {
      return Invalid(absl::StrCat("tensor ", chosen->name, ": ",
                                  shape.message()));
    }
    return MatrixLayout(chosen->shape, data_start + chosen->begin,
                        chosen->name);
  }

  // Step rows: step.0 .. step.<L-1>, step.t of shape [heads, t + 1].
  if (options.layer.has_value()) {
    return Invalid(absl::StrFormat(
        "--layer=%d: the file holds per-step rows (step.<t>), not layer "
        "tensors",
        *options.layer));
  }
  Layout layout;
  layout.step_rows = true;
  for (uint32_t t = 0; t < steps.size(); ++t) {
    if (steps[t].first != t) {
      return Invalid(absl::StrFormat(
          "the file has no tensor step.%d (step rows must be step.0 .. "
          "step.<L-1>, the file's last is %s)",
          t, steps.back().second->name));
    }
    const TensorEntry& tensor = *steps[t].second;
    KVSPEC_RETURN_IF_ERROR(CheckF32Tensor(tensor));
    const bool heads_agree = t == 0 || (!tensor.shape.empty() &&
                                        tensor.shape[0] == layout.heads);
    if (tensor.shape.size() != 2 || tensor.shape[1] != uint64_t{t} + 1 ||
        !heads_agree) {
      return Invalid(absl::StrFormat(
          "tensor %s has shape %s, which is not [heads, %d]%s", tensor.name,
          ShapeText(tensor.shape), t + 1,
          t == 0 ? "" : absl::StrFormat(" with heads = %d as in step.0",
                                        layout.heads)));
    }
    if (t == 0) {
      if (tensor.shape[0] == 0) {
        return Invalid("tensor step.0 has shape [0, 1]: no heads");
      }
      if (tensor.shape[0] > UINT32_MAX) {
        return Invalid("tensor step.0: too many heads");
      }
      layout.heads = static_cast<uint32_t>(tensor.shape[0]);
    }
    layout.row_start.push_back(data_start + tensor.begin);
    layout.head_stride.push_back(4 * (uint64_t{t} + 1));
  }
  layout.length = static_cast<uint32_t>(steps.size());
  return layout;
}

// ---------------------------------------------------------------------------
// Weights.

// Why `weight` may not be carried by a scenario (spec/harness.md#attention-
// weights), or nullopt if it is accepted.
std::optional<std::string> WeightProblem(float weight) {
  const uint32_t bits = BitsOf(weight);
  const bool sign = (bits >> 31) != 0;
  const uint32_t exponent = (bits >> 23) & 0xFF;
  const uint32_t mantissa = bits & 0x7FFFFF;
  if (exponent == 0xFF && mantissa != 0) return std::string("NaN");
  if (exponent == 0xFF) {
    return std::string(sign ? "-inf" : "+inf") + " (weights must be finite)";
  }
  if (bits == 0x80000000u) {
    return std::string(
        "-0.0 (weights must have the sign bit clear, "
        "spec/harness.md#attention-weights)");
  }
  if (sign) {
    return "negative weight " + ShortestDecimal(weight) +
           " (weights must have the sign bit clear)";
  }
  return std::nullopt;
}

// Checks every weight the scenario will carry (the selected heads' weights
// left of the diagonal) and every weight right of the diagonal (every head).
// Heads in file order, rows in order, columns in order: the first fault is
// reported.
absl::Status CheckWeights(absl::string_view bytes, const Layout& layout,
                          const std::vector<bool>& selected) {
  for (uint32_t h = 0; h < layout.heads; ++h) {
    for (uint32_t q = 0; q < layout.length; ++q) {
      const uint64_t row = layout.row_start[q] + h * layout.head_stride[q];
      for (uint64_t k = 0; k < layout.row_keys(q); ++k) {
        if (k == q) continue;  // the diagonal is never carried
        const float weight = FloatAt(bytes, row + 4 * k);
        if (k > q) {
          if (weight != 0.0f) {  // +0.0 and -0.0 are both zero
            return Invalid(absl::StrFormat(
                "%s: weight %s above the diagonal (rows must be causal)",
                WeightName(layout, h, q, k), ShortestDecimal(weight)));
          }
        } else if (selected[h]) {
          if (std::optional<std::string> problem = WeightProblem(weight)) {
            return Invalid(absl::StrCat(WeightName(layout, h, q, k), ": ",
                                        *problem));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// The heads to carry, checked against the file.
absl::StatusOr<std::vector<uint32_t>> SelectHeads(
    const Layout& layout, const ImportOptions& options) {
  std::vector<uint32_t> heads;
  if (options.heads.has_value()) {
    heads = *options.heads;
    if (heads.empty()) {
      return Invalid("--heads selects no head (e.g. --heads=0,2,5)");
    }
    std::vector<bool> seen(layout.heads, false);
    for (uint32_t h : heads) {
      if (h >= layout.heads) {
        return Invalid(absl::StrFormat(
            "--heads: head %d is out of range (the file has %d head%s, "
            "0..%d)",
            h, layout.heads, layout.heads == 1 ? "" : "s", layout.heads - 1));
      }
      if (seen[h]) {
        return Invalid(absl::StrFormat("--heads: head %d is given twice", h));
      }
      seen[h] = true;
    }
  } else {
    for (uint32_t h = 0; h < layout.heads; ++h) heads.push_back(h);
  }
  if (heads.size() > kMaxHeads) {
    return Invalid(absl::StrFormat(
        "%d query heads selected; a scenario holds at most %d "
        "(spec/heads.md#head-counts): choose some with --heads",
        heads.size(), kMaxHeads));
  }
  if (options.kv_heads == 0) return Invalid("--kv_heads must be at least 1");
  if (heads.size() % options.kv_heads != 0) {
    return Invalid(absl::StrFormat(
        "--kv_heads=%d does not divide the %d selected query head%s "
        "(spec/heads.md#head-counts)",
        options.kv_heads, heads.size(), heads.size() == 1 ? "" : "s"));
  }
  return heads;
}

absl::StatusOr<v1::Scenario> BuildScenario(absl::string_view bytes,
                                           const Layout& layout,
                                           const ImportOptions& options,
                                           const std::string& default_id) {
  absl::StatusOr<std::vector<uint32_t>> heads = SelectHeads(layout, options);
  if (!heads.ok()) return heads.status();
  std::vector<bool> selected(layout.heads, false);
  for (uint32_t h : *heads) selected[h] = true;
  KVSPEC_RETURN_IF_ERROR(CheckWeights(bytes, layout, selected));

  // Refuse before building what protobuf could not serialize: 4 bytes per
  // carried weight already, before tags and lengths.
  const uint64_t L = layout.length;
  const uint64_t carried_bytes = heads->size() * (L * (L - 1) / 2) * 4;
  if (carried_bytes > kMaxScenarioBytes) {
    return Invalid(absl::StrFormat(
        "the scenario would carry %d bytes of weights (%d heads, L = %d); a "
        "protobuf message is limited to 2 GiB: select fewer heads with "
        "--heads or capture fewer tokens",
        carried_bytes, heads->size(), L));
  }

  v1::Scenario scenario;
  scenario.set_id(options.id.empty() ? default_id : options.id);
  scenario.set_query_heads(static_cast<uint32_t>(heads->size()));
  scenario.set_kv_heads(options.kv_heads);
  for (uint32_t q = 0; q < layout.length; ++q) {
    v1::Step* step = scenario.add_steps();
    step->set_admit(1);
    for (uint32_t h : *heads) {
      // spec/heads.md#rows-per-head: one head's row is `attention`, several
      // heads' rows are `heads`, head 0 first.
      v1::AttentionRow* row = heads->size() == 1 ? step->mutable_attention()
                                                 : step->add_heads();
      row->mutable_weights()->Reserve(static_cast<int>(q));
      const uint64_t start = layout.row_start[q] + h * layout.head_stride[q];
      for (uint32_t k = 0; k < q; ++k) {
        row->add_weights(FloatAt(bytes, start + 4 * uint64_t{k}));
      }
    }
  }
  if (scenario.ByteSizeLong() > kMaxScenarioBytes) {
    return Invalid(absl::StrFormat(
        "the scenario would be %d bytes; a protobuf message is limited to "
        "2 GiB: select fewer heads with --heads or capture fewer tokens",
        scenario.ByteSizeLong()));
  }
  return scenario;
}

// The whole file, or why it cannot be read.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrFormat("cannot open: %s", std::strerror(errno)));
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return Invalid("not a regular file");
  }
  std::string bytes;
  bytes.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd, &bytes[done], bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "file shrank";
      close(fd);
      return absl::DataLossError(absl::StrFormat("cannot read: %s", why));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return bytes;
}

// `text` with every byte outside printable ASCII written as \xNN: messages
// echo names and strings from the file, which may hold any bytes.
std::string Printable(absl::string_view text) {
  std::string out;
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F) {
      out += absl::StrFormat("\\x%02x", byte);
    } else {
      out += c;
    }
  }
  return out;
}

// The last component of `path`.
std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::StatusOr<v1::Scenario> ImportWithoutName(const std::string& path,
                                               const ImportOptions& options) {
  const bool npy = absl::EndsWithIgnoreCase(path, ".npy");
  const bool safetensors = absl::EndsWithIgnoreCase(path, ".safetensors");
  if (!npy && !safetensors) {
    return Invalid("unknown extension: expected .npy or .safetensors");
  }
  if (npy && options.layer.has_value()) {
    return Invalid(
        "--layer applies to .safetensors files; a .npy file holds one layer");
  }
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<Layout> layout =
      npy ? ReadNpy(*bytes) : ReadSafetensors(*bytes, options);
  if (!layout.ok()) return layout.status();
  return BuildScenario(*bytes, *layout, options, BaseName(path));
}

}  // namespace

absl::StatusOr<v1::Scenario> ImportAttention(const std::string& path,
                                             const ImportOptions& options) {
  absl::StatusOr<v1::Scenario> scenario = ImportWithoutName(path, options);
  if (!scenario.ok()) {
    // Every refusal names the file.
    return absl::Status(
        scenario.status().code(),
        absl::StrCat(path, ": ", Printable(scenario.status().message())));
  }
  return scenario;
}

absl::StatusOr<std::vector<uint32_t>> ParseHeadList(absl::string_view text) {
  std::vector<uint32_t> heads;
  if (absl::StripAsciiWhitespace(text).empty()) return heads;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t head = 0;
    if (!absl::SimpleAtoi(part, &head)) {
      return Invalid(absl::StrFormat(
          "--heads: '%s' is not a head number (e.g. --heads=0,2,5)", part));
    }
    heads.push_back(head);
  }
  return heads;
}

absl::Status WriteScenarioFile(const v1::Scenario& scenario,
                               const std::string& path) {
  std::string bytes;
  if (!scenario.SerializeToString(&bytes)) {
    return absl::InternalError(
        absl::StrFormat("%s: cannot serialize the scenario", path));
  }
  // The temporary file sits beside `path`, so the rename stays on one file
  // system and is atomic.
  std::string temp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(&temp[0]);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: cannot create a temporary file beside it: %s", path,
        std::strerror(errno)));
  }
  // mkstemp creates the file 0600; give it the usual permissions.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  size_t done = 0;
  std::string failure;
  while (done < bytes.size() && failure.empty()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failure = n < 0 ? std::strerror(errno) : "nothing written";
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (failure.empty() && fsync(fd) != 0) failure = std::strerror(errno);
  if (close(fd) != 0 && failure.empty()) failure = std::strerror(errno);
  if (failure.empty() && std::rename(temp.c_str(), path.c_str()) != 0) {
    failure = std::strerror(errno);
  }
  if (!failure.empty()) {
    unlink(temp.c_str());
    return absl::UnavailableError(
        absl::StrFormat("%s: cannot write: %s", path, failure));
  }
  return absl::OkStatus();
}

}  // namespace kvspec
