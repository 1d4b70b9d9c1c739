// import_attention: see import_attention_lib.h for what it reads and writes.
//
// The file is mapped into memory (mmap, read-only), never copied. A reader
// for each format (.npy, .safetensors) checks the file's structure and
// returns a Layout: where, in the file's bytes, each head's row for each
// query position starts. A Plan then says what the scenario will hold (its
// heads, its prefill step, its decode steps); from the Plan alone the
// scenario's exact serialized size and the import's memory are computed and
// checked against their limits before anything is allocated. One pass then
// checks every weight the scenario will carry (and the causal zeros), and a
// second pass copies the carried weights straight from the mapping into the
// scenario's rows. Floats are decoded from their four little-endian bytes,
// so every bit pattern travels unchanged whatever the host.
#include "tools/attention/import_attention_lib.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
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
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "spec/kvspec.pb.h"
#include "tools/files/files.h"

namespace kvspec {
namespace {

// spec/heads.md#head-counts: a scenario has at most this many query heads.
constexpr uint64_t kMaxHeads = 1024;

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

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr bool kLittleEndianHost = true;
#else
constexpr bool kLittleEndianHost = false;
#endif

// The IEEE bits of the float32 stored as four little-endian bytes at `p`.
uint32_t BitsAt(const char* p) {
  if constexpr (kLittleEndianHost) {
    uint32_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return bits;
  }
  uint32_t bits = 0;
  for (int i = 3; i >= 0; --i) {
    bits = (bits << 8) | static_cast<unsigned char>(p[i]);
  }
  return bits;
}

float FloatOfBits(uint32_t bits) {
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

// `value`, or UINT64_MAX if it does not fit.
uint64_t Saturate(absl::uint128 value) {
  return absl::Uint128High64(value) != 0 ? UINT64_MAX
                                         : absl::Uint128Low64(value);
}

// ---------------------------------------------------------------------------
// Where the weights are.

enum class Kind {
  kMatrix,    // [heads, L, L]: every query's row over every key
  kStepRows,  // step.<t> [heads, t + 1]: row q holds keys 0..q
  kWindow,    // window.<n> [heads, R, L]: the last R queries' rows
  kChunks,    // chunk.<n>.<e> [heads, m_e, e]: each chunk's last queries
};

// One tensor of query rows: a window.<n> (one chunk, 0 .. L-1) or a
// chunk.<n>.<e>. The chunk admits positions start .. end-1; the tensor
// holds the rows of its last `rows` queries, each over keys 0 .. end-1.
struct ChunkRows {
  std::string tensor;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t rows = 0;
  // Where the tensor's data starts in the file.
  uint64_t data = 0;

  uint64_t first_query() const { return end - rows; }
  // Where head h's row of query q (first_query() <= q < end) starts.
  uint64_t row(uint32_t h, uint64_t q) const {
    return data + ((uint64_t{h} * rows) + (q - first_query())) * end * 4;
  }
};

// One layer's causal attention as it lies in the file's bytes. The file
// holds the rows of the queries first_query() .. L-1; the row of query q,
// r = q - first_query(), of head h starts at byte row_start[r] + h *
// head_stride[r] and holds row_keys(q) float32 weights, for keys 0, 1, ...
struct Layout {
  Kind kind = Kind::kMatrix;
  uint32_t heads = 0;
  // L: the number of positions (the keys of the last query).
  uint32_t length = 0;
  // The number of query rows the file holds: L, or R for a window.
  uint32_t rows = 0;
  // The tensor's name in a .safetensors file ("layer.3", "window.3"); empty
  // for a .npy file and for step rows.
  std::string tensor;
  // Matrix and step rows: where each query's row is.
  std::vector<uint64_t> row_start;
  std::vector<uint64_t> head_stride;
  // Window (one) and chunks (ascending ends, the last ending at L): the
  // tensors of query rows. row_start and head_stride are empty.
  std::vector<ChunkRows> chunks;
  // ImportOptions::totals: totals.<n>, float64 [heads, totals_width]
  // (the totals over queries 0 .. totals_width - 1), from byte
  // totals_data; totals_tensor empty when not read.
  std::string totals_tensor;
  uint64_t totals_data = 0;
  uint64_t totals_width = 0;
  // A .safetensors file's __metadata__ "num_key_value_heads" (its text and
  // number) when it is a decimal number: the model's KV heads.
  std::optional<std::pair<std::string, uint64_t>> kv_heads_metadata;

  uint32_t first_query() const { return length - rows; }
  uint64_t row_keys(uint32_t q) const {
    return kind == Kind::kStepRows ? uint64_t{q} + 1 : length;
  }
  uint64_t row(uint32_t h, uint32_t q) const {
    const uint32_t r = q - first_query();
    return row_start[r] + h * head_stride[r];
  }
};

// How a refusal names one weight: "head 2, row 5, column 7" in a .npy
// matrix, "tensor layer.3, head 2, row 5, column 7" in a .safetensors
// matrix, "tensor step.5, head 2, column 7" for step rows, "tensor
// window.3, head 2, row 5 (window row 1), column 7" in a window. A row is a
// query position.
std::string WeightName(const Layout& layout, uint32_t head, uint32_t q,
                       uint64_t k) {
  if (layout.kind == Kind::kStepRows) {
    return absl::StrFormat("tensor step.%d, head %d, column %d", q, head, k);
  }
  const std::string tensor =
      layout.tensor.empty() ? "" : absl::StrCat("tensor ", layout.tensor, ", ");
  return absl::StrFormat("%shead %d, row %d, column %d", tensor, head, q, k);
}

// "tensor window.3, head 2, row 5 (window row 1), column 7", "tensor
// chunk.3.8, head 2, row 6 (chunk row 1), column 7".
std::string ChunkWeightName(const Layout& layout, const ChunkRows& chunk,
                            uint32_t head, uint64_t q, uint64_t k) {
  return absl::StrFormat("tensor %s, head %d, row %d (%s row %d), column %d",
                         chunk.tensor, head, q,
                         layout.kind == Kind::kWindow ? "window" : "chunk",
                         q - chunk.first_query(), k);
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
  layout.kind = Kind::kMatrix;
  layout.heads = static_cast<uint32_t>(shape[0]);
  layout.length = static_cast<uint32_t>(shape[1]);
  layout.rows = layout.length;
  layout.tensor = std::move(tensor);
  const uint64_t row_bytes = 4 * uint64_t{layout.length};
  layout.row_start.reserve(layout.length);
  layout.head_stride.reserve(layout.length);
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
  // The keys read so far: a header of many tensors is checked for a
  // repeated key in linear time, not by comparing each key with every
  // earlier one (40,000 tensors took 320 s that way).
  std::unordered_set<std::string> keys;
  while (true) {
    cursor.SkipSpace();
    const size_t key_pos = cursor.pos();
    absl::StatusOr<std::string> key = ReadJsonString(cursor);
    if (!key.ok()) return key.status();
    if (!keys.insert(*key).second) {
      return Invalid(absl::StrFormat("at byte %d: key \"%s\" is repeated",
                                     key_pos, *key));
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

// `digits` as a number when it is one written canonically (decimal, no
// sign, no leading zero, below 2^32), else nullopt.
std::optional<uint32_t> CanonicalNumber(absl::string_view digits) {
  uint32_t index = 0;
  const bool canonical =
      !digits.empty() && (digits == "0" || digits[0] != '0') &&
      std::all_of(digits.begin(), digits.end(),
                  [](char c) { return absl::ascii_isdigit(c); }) &&
      absl::SimpleAtoi(digits, &index);
  if (!canonical) return std::nullopt;
  return index;
}

// "layer.12" with prefix "layer." -> 12. nullopt if `name` does not start
// with the prefix; an error if what follows is not a plain decimal number.
absl::StatusOr<std::optional<uint32_t>> IndexedName(const std::string& name,
                                                    absl::string_view prefix) {
  if (!absl::StartsWith(name, prefix)) return std::optional<uint32_t>();
  const std::optional<uint32_t> index =
      CanonicalNumber(absl::string_view(name).substr(prefix.size()));
  if (!index.has_value()) {
    return Invalid(absl::StrFormat(
        "tensor name \"%s\" is not %s<n> with n a decimal number", name,
        prefix));
  }
  return index;
}

// "chunk.3.256" -> {3, 256}. nullopt if `name` does not start with
// "chunk."; an error if the rest is not two plain decimal numbers n.e with
// e >= 1.
absl::StatusOr<std::optional<std::pair<uint32_t, uint32_t>>> ChunkName(
    const std::string& name) {
  using Result = std::optional<std::pair<uint32_t, uint32_t>>;
  constexpr absl::string_view kPrefix = "chunk.";
  if (!absl::StartsWith(name, kPrefix)) return Result();
  const absl::string_view rest = absl::string_view(name).substr(kPrefix.size());
  const size_t dot = rest.find('.');
  const std::optional<uint32_t> n =
      dot == absl::string_view::npos ? std::nullopt
                                     : CanonicalNumber(rest.substr(0, dot));
  const std::optional<uint32_t> e =
      dot == absl::string_view::npos ? std::nullopt
                                     : CanonicalNumber(rest.substr(dot + 1));
  if (!n.has_value() || !e.has_value()) {
    return Invalid(absl::StrFormat(
        "tensor name \"%s\" is not chunk.<n>.<e> with n and e decimal "
        "numbers",
        name));
  }
  if (*e == 0) {
    return Invalid(absl::StrFormat(
        "tensor name \"%s\": a chunk ends after at least one position (e "
        ">= 1)",
        name));
  }
  return Result(std::make_pair(*n, *e));
}

// The binary64 stored as eight little-endian bytes at `offset`.
double DoubleAt(absl::string_view bytes, uint64_t offset) {
  const uint64_t bits = LittleEndian(bytes, offset, 8);
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
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


using Metadata = std::vector<std::pair<std::string, std::string>>;

// The value of __metadata__ entry `key` and its number, or nullopt when it
// is absent or not a decimal number (then it is not compared).
std::optional<std::pair<std::string, uint64_t>> MetadataNumber(
    const Metadata& metadata, absl::string_view key) {
  for (const auto& [name, value] : metadata) {
    if (name != key) continue;
    uint64_t number = 0;
    const bool decimal =
        !value.empty() &&
        std::all_of(value.begin(), value.end(),
                    [](char c) { return absl::ascii_isdigit(c); }) &&
        absl::SimpleAtoi(value, &number);
    if (decimal) return std::make_pair(value, number);
  }
  return std::nullopt;
}

// Refuses a __metadata__ entry that contradicts the window tensor's shape:
// "num_attention_heads" (heads), "window_rows" (R), "tokens" (L). Entries
// that are absent or not decimal numbers are not compared.
absl::Status CheckWindowMetadata(const Metadata& metadata,
                                 const TensorEntry& tensor) {
  const std::pair<absl::string_view, int> fields[] = {
      {"num_attention_heads", 0}, {"window_rows", 1}, {"tokens", 2}};
  const char* const dims[] = {"heads", "R", "L"};
  for (const auto& [key, dim] : fields) {
    const auto entry = MetadataNumber(metadata, key);
    if (entry.has_value() && entry->second != tensor.shape[dim]) {
      return Invalid(absl::StrFormat(
          "__metadata__ says %s = \"%s\" but tensor %s has shape %s (%s = "
          "%d): the file contradicts itself",
          key, entry->first, tensor.name, ShapeText(tensor.shape), dims[dim],
          tensor.shape[dim]));
    }
  }
  return absl::OkStatus();
}

// The layout of a window.<n> tensor: float32 [heads, R, L], row r the row of
// query L - R + r over keys 0..L-1.
absl::StatusOr<Layout> WindowLayout(const TensorEntry& tensor,
                                    uint64_t data_start,
                                    const Metadata& metadata) {
  KVSPEC_RETURN_IF_ERROR(CheckF32Tensor(tensor));
  const std::vector<uint64_t>& shape = tensor.shape;
  const std::string shape_text = ShapeText(shape);
  if (shape.size() != 3) {
    return Invalid(absl::StrFormat("tensor %s: shape %s is not [heads, R, L]",
                                   tensor.name, shape_text));
  }
  if (shape[0] == 0) {
    return Invalid(absl::StrFormat("tensor %s: shape %s has no heads",
                                   tensor.name, shape_text));
  }
  if (shape[2] == 0) {
    return Invalid(absl::StrFormat(
        "tensor %s: shape %s has L = 0: no positions", tensor.name,
        shape_text));
  }
  if (shape[1] == 0) {
    return Invalid(absl::StrFormat("tensor %s: shape %s has R = 0: no rows",
                                   tensor.name, shape_text));
  }
  if (shape[1] > shape[2]) {
    return Invalid(absl::StrFormat(
        "tensor %s: shape %s has R = %d rows, more than its L = %d positions "
        "(row r is the query at position L - R + r)",
        tensor.name, shape_text, shape[1], shape[2]));
  }
  if (shape[0] > UINT32_MAX || shape[2] > UINT32_MAX) {
    return Invalid(absl::StrFormat("tensor %s: shape %s is too large",
                                   tensor.name, shape_text));
  }
  KVSPEC_RETURN_IF_ERROR(CheckWindowMetadata(metadata, tensor));
  Layout layout;
  layout.kind = Kind::kWindow;
  layout.heads = static_cast<uint32_t>(shape[0]);
  layout.rows = static_cast<uint32_t>(shape[1]);
  layout.length = static_cast<uint32_t>(shape[2]);
  layout.tensor = tensor.name;
  ChunkRows chunk;
  chunk.tensor = tensor.name;
  chunk.start = 0;
  chunk.end = layout.length;
  chunk.rows = layout.rows;
  chunk.data = data_start + tensor.begin;
  layout.chunks.push_back(std::move(chunk));
  return layout;
}

// Refuses a __metadata__ entry that contradicts the chunk tensors:
// "tokens" (L), "num_attention_heads" (heads), "prefill_chunk" (C: the ends
// are C, 2C, ... and L) and "window_rows" (R: each chunk holds the rows of
// its last min(R, admit) queries), checked in that order, chunks in order.
absl::Status CheckChunksMetadata(const Metadata& metadata,
                                 const Layout& layout) {
  const std::vector<ChunkRows>& chunks = layout.chunks;
  const uint64_t L = layout.length;
  if (const auto tokens = MetadataNumber(metadata, "tokens");
      tokens.has_value() && tokens->second != L) {
    return Invalid(absl::StrFormat(
        "__metadata__ says tokens = \"%s\" but the last chunk tensor, %s, "
        "ends at L = %d: the file contradicts itself",
        tokens->first, chunks.back().tensor, L));
  }
  if (const auto heads = MetadataNumber(metadata, "num_attention_heads");
      heads.has_value() && heads->second != layout.heads) {
    return Invalid(absl::StrFormat(
        "__metadata__ says num_attention_heads = \"%s\" but the chunk "
        "tensors have %d heads: the file contradicts itself",
        heads->first, layout.heads));
  }
  if (const auto size = MetadataNumber(metadata, "prefill_chunk");
      size.has_value()) {
    const uint64_t C = size->second;
    if (C == 0) {
      return Invalid(
          "__metadata__ says prefill_chunk = \"0\": a chunk holds at least "
          "one position");
    }
    // The tensor's name without its end: "chunk.3.".
    const std::string& last = chunks.back().tensor;
    const std::string prefix = last.substr(0, last.rfind('.') + 1);
    for (size_t k = 0; k < chunks.size(); ++k) {
      // min((k + 1) C, L), without overflow.
      const uint64_t want = C > L / (k + 1) ? L : std::min((k + 1) * C, L);
      if (chunks[k].end > want) {
        return Invalid(absl::StrFormat(
            "__metadata__ says prefill_chunk = \"%s\", so the chunks end at "
            "the multiples of %d below L = %d and at L, but the file has no "
            "tensor %s%d: a chunk is missing (%s)",
            size->first, C, L, prefix, want,
            k == 0 ? absl::StrCat("the first is ", chunks[k].tensor)
                   : absl::StrCat(chunks[k].tensor, " follows ",
                                  chunks[k - 1].tensor)));
      }
      if (chunks[k].end < want) {
        return Invalid(absl::StrFormat(
            "__metadata__ says prefill_chunk = \"%s\", so the chunks end at "
            "the multiples of %d below L = %d and at L, but tensor %s ends "
            "at %d: the file contradicts itself",
            size->first, C, L, chunks[k].tensor, chunks[k].end));
      }
    }
  }
  if (const auto rows = MetadataNumber(metadata, "window_rows");
      rows.has_value()) {
    for (const ChunkRows& chunk : chunks) {
      const uint64_t admit = chunk.end - chunk.start;
      const uint64_t want = std::min(rows->second, admit);
      if (chunk.rows != want) {
        return Invalid(absl::StrFormat(
            "__metadata__ says window_rows = \"%s\" but tensor %s has %d "
            "rows, not min(%s, the %d positions its chunk admits) = %d: the "
            "file contradicts itself",
            rows->first, chunk.tensor, chunk.rows, rows->first, admit, want));
      }
    }
  }
  return absl::OkStatus();
}

// One layer's chunk.<n>.<e> tensors, ascending e.
using ChunkTensors = std::vector<std::pair<uint32_t, const TensorEntry*>>;

// The layout of one layer's chunk tensors: chunk.<n>.<e> float32
// [heads, m, e], row r the row of query e - m + r over keys 0..e-1, the
// chunk admitting the positions from the previous end to e - 1.
absl::StatusOr<Layout> ChunksLayout(const ChunkTensors& tensors,
                                    uint64_t data_start,
                                    const Metadata& metadata) {
  Layout layout;
  layout.kind = Kind::kChunks;
  uint64_t start = 0;
  for (const auto& [e, tensor] : tensors) {
    KVSPEC_RETURN_IF_ERROR(CheckF32Tensor(*tensor));
    const std::vector<uint64_t>& shape = tensor->shape;
    const std::string shape_text = ShapeText(shape);
    if (shape.size() != 3) {
      return Invalid(absl::StrFormat(
          "tensor %s: shape %s is not [heads, m, e] (e = %d, the chunk's "
          "end)",
          tensor->name, shape_text, e));
    }
    if (shape[0] == 0) {
      return Invalid(absl::StrFormat("tensor %s: shape %s has no heads",
                                     tensor->name, shape_text));
    }
    if (shape[2] != e) {
      return Invalid(absl::StrFormat(
          "tensor %s: shape %s has rows of %d keys, but a chunk ending at "
          "%d has rows over keys 0..%d (shape [heads, m, %d])",
          tensor->name, shape_text, shape[2], e, e - 1, e));
    }
    if (shape[1] == 0) {
      return Invalid(absl::StrFormat("tensor %s: shape %s has m = 0: no rows",
                                     tensor->name, shape_text));
    }
    const uint64_t admit = e - start;
    if (shape[1] > admit) {
      return Invalid(absl::StrFormat(
          "tensor %s: shape %s has m = %d rows, more than the %d position%s "
          "its chunk admits (%d..%d, %s)",
          tensor->name, shape_text, shape[1], admit, admit == 1 ? "" : "s",
          start, e - 1,
          layout.chunks.empty()
              ? std::string("the first chunk")
              : absl::StrCat("after ", layout.chunks.back().tensor)));
    }
    if (shape[0] > UINT32_MAX) {
      return Invalid(absl::StrFormat("tensor %s: shape %s is too large",
                                     tensor->name, shape_text));
    }
    if (!layout.chunks.empty() && shape[0] != layout.heads) {
      return Invalid(absl::StrFormat(
          "tensor %s has %d heads but %s has %d: every chunk holds the same "
          "heads",
          tensor->name, shape[0], layout.chunks.back().tensor, layout.heads));
    }
    layout.heads = static_cast<uint32_t>(shape[0]);
    ChunkRows chunk;
    chunk.tensor = tensor->name;
    chunk.start = start;
    chunk.end = e;
    chunk.rows = shape[1];
    chunk.data = data_start + tensor->begin;
    layout.chunks.push_back(std::move(chunk));
    start = e;
  }
  layout.length = static_cast<uint32_t>(start);
  layout.rows = static_cast<uint32_t>(layout.chunks.back().rows);
  layout.tensor = layout.chunks.back().tensor;
  KVSPEC_RETURN_IF_ERROR(CheckChunksMetadata(metadata, layout));
  return layout;
}

// "matrix", "window", "chunks": the --layout value.
const char* LayoutName(TensorLayout layout) {
  switch (layout) {
    case TensorLayout::kMatrix: return "matrix";
    case TensorLayout::kWindow: return "window";
    case TensorLayout::kChunks: return "chunks";
  }
  return "?";
}

bool WindowFlagsGiven(const ImportOptions& options) {
  return options.window_rows.has_value() || options.decode.has_value() ||
         options.totals;
}

// "--window_rows=3 and --decode=1 apply", "--decode=1 applies": the window
// flags given.
std::string WindowFlagsText(const ImportOptions& options) {
  std::vector<std::string> flags;
  if (options.window_rows.has_value()) {
    flags.push_back(absl::StrCat("--window_rows=", *options.window_rows));
  }
  if (options.decode.has_value()) {
    flags.push_back(absl::StrCat("--decode=", *options.decode));
  }
  if (options.totals) flags.push_back("--totals");
  return absl::StrJoin(flags, " and ") +
         (flags.size() == 1 ? " applies" : " apply");
}

// The layout of the tensors to read; `metadata` receives the file's
// __metadata__.
absl::StatusOr<Layout> ReadSafetensorsLayout(absl::string_view bytes,
                                             const ImportOptions& options,
                                             Metadata& metadata) {
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
      for (const auto& [key, field] : value.members) {
        metadata.emplace_back(key, field.string);
      }
      continue;
    }
    absl::StatusOr<TensorEntry> tensor = TensorFromJson(name, value);
    if (!tensor.ok()) return tensor.status();
    tensors.push_back(std::move(*tensor));
  }
  KVSPEC_RETURN_IF_ERROR(CheckOffsets(tensors, data_bytes));

  // Sort the tensors we know into layer.<n>, window.<n>, chunk.<n>.<e> and
  // step.<t>; others (totals.<n>, ...) are not read.
  std::vector<std::pair<uint32_t, const TensorEntry*>> layers, windows, steps;
  // (n, e) and the tensor.
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, const TensorEntry*>>
      chunks;
  for (const TensorEntry& tensor : tensors) {
    absl::StatusOr<std::optional<uint32_t>> layer =
        IndexedName(tensor.name, "layer.");
    if (!layer.ok()) return layer.status();
    absl::StatusOr<std::optional<uint32_t>> window =
        IndexedName(tensor.name, "window.");
    if (!window.ok()) return window.status();
    absl::StatusOr<std::optional<uint32_t>> step =
        IndexedName(tensor.name, "step.");
    if (!step.ok()) return step.status();
    absl::StatusOr<std::optional<std::pair<uint32_t, uint32_t>>> chunk =
        ChunkName(tensor.name);
    if (!chunk.ok()) return chunk.status();
    if (layer->has_value()) layers.emplace_back(**layer, &tensor);
    if (window->has_value()) windows.emplace_back(**window, &tensor);
    if (step->has_value()) steps.emplace_back(**step, &tensor);
    if (chunk->has_value()) chunks.emplace_back(**chunk, &tensor);
  }
  auto by_number = [](const auto& a, const auto& b) {
    return a.first < b.first;
  };
  std::sort(layers.begin(), layers.end(), by_number);
  std::sort(windows.begin(), windows.end(), by_number);
  std::sort(steps.begin(), steps.end(), by_number);
  std::sort(chunks.begin(), chunks.end(), by_number);

  const bool layer_tensors =
      !layers.empty() || !windows.empty() || !chunks.empty();
  if (layer_tensors && !steps.empty()) {
    return Invalid(absl::StrFormat(
        "the file holds both %s and step.<t> tensors; it must hold one kind",
        !layers.empty()    ? "layer.<n>"
        : !windows.empty() ? "window.<n>"
                           : "chunk.<n>.<e>"));
  }
  if (!layer_tensors && steps.empty()) {
    return Invalid(
        "the file holds no tensor layer.<n> (a [heads, L, L] matrix), no "
        "tensor window.<n> (a [heads, R, L] window), no tensor chunk.<n>.<e> "
        "(a chunked prefill's rows) and no tensor step.<t> (per-step rows)");
  }

  if (layer_tensors) {
    // Every layer tensor's name, by layer number, layer.<n> before
    // window.<n> before chunk.<n>.<e> (a layer's chunks as one entry).
    std::vector<std::pair<uint32_t, std::string>> all;
    for (const auto& [n, tensor] : layers) all.emplace_back(n, tensor->name);
    for (const auto& [n, tensor] : windows) all.emplace_back(n, tensor->name);
    for (size_t i = 0; i < chunks.size();) {
      const uint32_t n = chunks[i].first.first;
      size_t j = i;
      while (j < chunks.size() && chunks[j].first.first == n) ++j;
      all.emplace_back(
          n, j - i == 1 ? chunks[i].second->name
                        : absl::StrFormat("%s .. %s (%d chunks)",
                                          chunks[i].second->name,
                                          chunks[j - 1].second->name, j - i));
      i = j;
    }
    std::stable_sort(all.begin(), all.end(), by_number);
    std::vector<std::string> names;
    std::vector<uint32_t> numbers;
    for (const auto& [n, name] : all) {
      names.push_back(name);
      if (numbers.empty() || numbers.back() != n) numbers.push_back(n);
    }
    uint32_t n = 0;
    if (options.layer.has_value()) {
      n = *options.layer;
      if (std::find(numbers.begin(), numbers.end(), n) == numbers.end()) {
        std::vector<std::string> kinds;
        if (!layers.empty()) kinds.push_back(absl::StrCat("layer.", n));
        if (!windows.empty()) kinds.push_back(absl::StrCat("window.", n));
        if (!chunks.empty()) kinds.push_back(absl::StrCat("chunk.", n, ".<e>"));
        std::string wanted = kinds.back();
        if (kinds.size() > 1) {
          kinds.pop_back();
          wanted = absl::StrCat(absl::StrJoin(kinds, ", "), " or ", wanted);
        }
        return Invalid(absl::StrFormat(
            "--layer=%d: the file has no tensor %s (it holds %s)", n, wanted,
            absl::StrJoin(names, ", ")));
      }
    } else if (numbers.size() == 1) {
      n = numbers[0];
    } else {
      return Invalid(absl::StrFormat(
          "the file holds %d layers (%s): choose one with --layer",
          numbers.size(), absl::StrJoin(names, ", ")));
    }
    const TensorEntry* layer = nullptr;
    const TensorEntry* window = nullptr;
    ChunkTensors layer_chunks;
    for (const auto& [m, tensor] : layers) {
      if (m == n) layer = tensor;
    }
    for (const auto& [m, tensor] : windows) {
      if (m == n) window = tensor;
    }
    for (const auto& [ne, tensor] : chunks) {
      if (ne.first == n) layer_chunks.emplace_back(ne.second, tensor);
    }

    // Which of layer n's tensors.
    TensorLayout read;
    if (options.layout.has_value()) {
      read = *options.layout;
      const bool present =
          read == TensorLayout::kMatrix   ? layer != nullptr
          : read == TensorLayout::kWindow ? window != nullptr
                                          : !layer_chunks.empty();
      if (!present) {
        const std::string wanted =
            read == TensorLayout::kMatrix   ? absl::StrCat("tensor layer.", n)
            : read == TensorLayout::kWindow ? absl::StrCat("tensor window.", n)
                                            : absl::StrCat("tensor chunk.", n,
                                                           ".<e>");
        return Invalid(absl::StrFormat(
            "--layout=%s: the file has no %s (it holds %s)", LayoutName(read),
            wanted, absl::StrJoin(names, ", ")));
      }
    } else if (!layer_chunks.empty()) {
      if (layer != nullptr || window != nullptr) {
        std::vector<std::string> others, flags = {"--layout=chunks"};
        if (layer != nullptr) {
          others.push_back(layer->name);
          flags.push_back("--layout=matrix");
        }
        if (window != nullptr) {
          others.push_back(window->name);
          flags.push_back("--layout=window");
        }
        const std::string last = flags.back();
        flags.pop_back();
        return Invalid(absl::StrFormat(
            "layer %d has tensors chunk.%d.<e> and %s: choose which to read "
            "with %s or %s",
            n, n, absl::StrJoin(others, " and "), absl::StrJoin(flags, ", "),
            last));
      }
      read = TensorLayout::kChunks;
    } else if (window != nullptr &&
               (layer == nullptr || WindowFlagsGiven(options))) {
      read = TensorLayout::kWindow;
    } else {
      read = TensorLayout::kMatrix;
    }

    if (read == TensorLayout::kChunks) {
      // Every layer's chunks end at the same L: the largest end of each
      // layer (the last of its run, chunks being sorted by (n, e)).
      const std::pair<uint32_t, uint32_t>* first_end = nullptr;
      const TensorEntry* first_tensor = nullptr;
      for (size_t i = 0; i < chunks.size(); ++i) {
        if (i + 1 < chunks.size() &&
            chunks[i + 1].first.first == chunks[i].first.first) {
          continue;
        }
        if (first_end == nullptr) {
          first_end = &chunks[i].first;
          first_tensor = chunks[i].second;
        } else if (chunks[i].first.second != first_end->second) {
          return Invalid(absl::StrFormat(
              "layer %d's chunks end at %d (%s) but layer %d's at %d (%s): "
              "every layer's chunks end at the prompt's L",
              first_end->first, first_end->second, first_tensor->name,
              chunks[i].first.first, chunks[i].first.second,
              chunks[i].second->name));
        }
      }
      return ChunksLayout(layer_chunks, data_start, metadata);
    }
    if (read == TensorLayout::kWindow) {
      absl::StatusOr<Layout> layout = WindowLayout(*window, data_start, metadata);
      if (!layout.ok() || !options.totals) return layout;
      // ImportOptions::totals: totals.<n>, F64 [heads, P] of the window's
      // heads, 1 <= P <= L (P is checked against the prefill step's
      // admitted positions when the plan is made).
      const std::string name = absl::StrCat("totals.", n);
      const TensorEntry* totals = nullptr;
      for (const TensorEntry& tensor : tensors) {
        if (tensor.name == name) totals = &tensor;
      }
      if (totals == nullptr) {
        return Invalid(absl::StrFormat(
            "--totals: the file has no tensor %s (capture_attention.py "
            "--totals writes it; it holds %s)",
            name, absl::StrJoin(names, ", ")));
      }
      if (totals->dtype != "F64") {
        return Invalid(absl::StrFormat(
            "tensor %s has dtype %s; column totals are F64", name,
            totals->dtype));
      }
      if (totals->shape.size() != 2 || totals->shape[0] != layout->heads ||
          totals->shape[1] < 1 || totals->shape[1] > layout->length) {
        return Invalid(absl::StrFormat(
            "tensor %s: shape %s is not [heads, P] = [%d, 1..%d]: the heads "
            "and at most the L positions of tensor %s",
            name, ShapeText(totals->shape), layout->heads, layout->length,
            window->name));
      }
      const std::optional<uint64_t> need = ByteCount(totals->shape, 8);
      if (!need.has_value() || *need != totals->end - totals->begin) {
        return Invalid(absl::StrFormat(
            "tensor %s: data_offsets [%d, %d] hold %d bytes but shape %s of "
            "F64 needs %d",
            name, totals->begin, totals->end, totals->end - totals->begin,
            ShapeText(totals->shape), need.value_or(0)));
      }
      layout->totals_tensor = name;
      layout->totals_data = data_start + totals->begin;
      layout->totals_width = totals->shape[1];
      return layout;
    }
    if (WindowFlagsGiven(options)) {
      return Invalid(absl::StrFormat(
          "%s to window.<n> and chunk.<n>.<e> tensors; tensor %s is a "
          "[heads, L, L] matrix%s",
          WindowFlagsText(options), layer->name,
          options.layout.has_value()
              ? " (--layout=matrix)"
              : absl::StrFormat(" and the file has no window.%d", n)));
    }
    KVSPEC_RETURN_IF_ERROR(CheckF32Tensor(*layer));
    absl::Status shape = CheckMatrixShape(layer->shape);
    if (!shape.ok()) {
      return Invalid(absl::StrCat("tensor ", layer->name, ": ",
                                  shape.message()));
    }
    return MatrixLayout(layer->shape, data_start + layer->begin, layer->name);
  }

  // Step rows: step.0 .. step.<L-1>, step.t of shape [heads, t + 1].
  if (options.layer.has_value()) {
    return Invalid(absl::StrFormat(
        "--layer=%d: the file holds per-step rows (step.<t>), not layer "
        "tensors",
        *options.layer));
  }
  if (options.layout.has_value()) {
    return Invalid(absl::StrFormat(
        "--layout=%s applies to layer.<n>, window.<n> and chunk.<n>.<e> "
        "tensors; the file holds per-step rows (step.<t>)",
        LayoutName(*options.layout)));
  }
  if (WindowFlagsGiven(options)) {
    return Invalid(absl::StrFormat(
        "%s to window.<n> and chunk.<n>.<e> tensors; the file holds per-step "
        "rows (step.<t>)",
        WindowFlagsText(options)));
  }
  Layout layout;
  layout.kind = Kind::kStepRows;
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
  layout.rows = layout.length;
  return layout;
}

absl::StatusOr<Layout> ReadSafetensors(absl::string_view bytes,
                                       const ImportOptions& options) {
  Metadata metadata;
  absl::StatusOr<Layout> layout =
      ReadSafetensorsLayout(bytes, options, metadata);
  if (layout.ok()) {
    layout->kv_heads_metadata =
        MetadataNumber(metadata, "num_key_value_heads");
  }
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

// Bits below this are exactly the accepted weights: sign clear, exponent
// not all ones (+0.0, subnormals, positive normals).
constexpr uint32_t kFirstRefusedBits = 0x7F800000u;

// Checks every weight the scenario will carry (the selected heads' weights
// left of the diagonal) and every weight right of the diagonal (every head),
// for the matrix and step-rows layouts. Heads in file order, rows in order,
// columns in order: the first fault is reported.
absl::Status CheckWeights(absl::string_view bytes, const Layout& layout,
                          const std::vector<bool>& selected) {
  for (uint32_t h = 0; h < layout.heads; ++h) {
    for (uint32_t q = 0; q < layout.length; ++q) {
      const char* row = bytes.data() + layout.row(h, q);
      const uint64_t keys = layout.row_keys(q);
      if (selected[h]) {
        for (uint64_t k = 0; k < q; ++k) {
          const uint32_t bits = BitsAt(row + 4 * k);
          if (bits < kFirstRefusedBits) continue;
          if (std::optional<std::string> problem =
                  WeightProblem(FloatOfBits(bits))) {
            return Invalid(absl::StrCat(WeightName(layout, h, q, k), ": ",
                                        *problem));
          }
        }
      }
      for (uint64_t k = uint64_t{q} + 1; k < keys; ++k) {
        const uint32_t bits = BitsAt(row + 4 * k);
        if ((bits & 0x7FFFFFFFu) != 0) {  // +0.0 and -0.0 are both zero
          return Invalid(absl::StrFormat(
              "%s: weight %s above the diagonal (rows must be causal)",
              WeightName(layout, h, q, k),
              ShortestDecimal(FloatOfBits(bits))));
        }
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The plan: what the scenario will hold.

struct Plan {
  // The file's heads, in the scenario's order.
  std::vector<uint32_t> heads;
  std::string id;
  uint32_t kv_heads = 1;
  // A window or chunks: the prefill steps, in order; prefill[k] takes its
  // query rows from layout.chunks[k]. A window's one step admits positions
  // 0 .. P - 1. Empty for a matrix and step rows.
  std::vector<PrefillShape> prefill;
  // One decode step per query position first_decode .. length - 1 (a
  // window's or chunks' from the last chunk's tensor).
  uint64_t first_decode = 0;
  uint64_t length = 0;

  uint64_t query_rows() const {
    uint64_t rows = 0;
    for (const PrefillShape& step : prefill) rows += step.query_rows;
    return rows;
  }
};

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
    if (layout.heads > kMaxHeads) {
      return Invalid(absl::StrFormat(
          "%d query heads selected; a scenario holds at most %d "
          "(spec/heads.md#head-counts): choose some with --heads",
          layout.heads, kMaxHeads));
    }
    for (uint32_t h = 0; h < layout.heads; ++h) heads.push_back(h);
  }
  if (heads.size() > kMaxHeads) {
    return Invalid(absl::StrFormat(
        "%d query heads selected; a scenario holds at most %d "
        "(spec/heads.md#head-counts): choose some with --heads",
        heads.size(), kMaxHeads));
  }
  return heads;
}

// The scenario's kv_heads for the selected `heads` ("KV heads" in
// import_attention_lib.h). With the file's __metadata__
// "num_key_value_heads" K, the model's KV head of query head h is h / g,
// g = H / K (H the file's heads); the selected heads keep the model's KV
// heads when they run through its KV heads one after another, the same
// number from each: the scenario's kv_heads is then the number of runs
// (spec/heads.md#head-counts: a KV head's query heads are consecutive, as
// many for each).
absl::StatusOr<uint32_t> ChooseKvHeads(const Layout& layout,
                                       const ImportOptions& options,
                                       const std::vector<uint32_t>& heads) {
  const std::optional<std::pair<std::string, uint64_t>>& metadata =
      layout.kv_heads_metadata;
  const bool given = !options.kv_heads_from_file || !metadata.has_value();
  if (given) {
    if (options.kv_heads == 0) {
      return Invalid("--kv_heads must be at least 1");
    }
    if (heads.size() % options.kv_heads != 0) {
      return Invalid(absl::StrFormat(
          "--kv_heads=%d does not divide the %d selected query head%s "
          "(spec/heads.md#head-counts)",
          options.kv_heads, heads.size(), heads.size() == 1 ? "" : "s"));
    }
  }
  if (!metadata.has_value()) return options.kv_heads;

  const auto& [text, kv] = *metadata;
  const uint64_t all = layout.heads;
  if (kv == 0) {
    return Invalid(absl::StrFormat(
        "__metadata__ says num_key_value_heads = \"%s\": a model has at "
        "least one KV head",
        text));
  }
  if (all % kv != 0) {
    return Invalid(absl::StrFormat(
        "__metadata__ says num_key_value_heads = \"%s\" but the file has %d "
        "query heads, not a multiple of %d: the file contradicts itself",
        text, all, kv));
  }
  const uint64_t group = all / kv;
  // The runs of consecutive selected heads that share a KV head: each KV
  // head's heads must form one run, and every run the same length.
  std::vector<uint64_t> run_kv;
  std::vector<size_t> run_length;
  bool even = true;
  for (uint32_t h : heads) {
    const uint64_t k = h / group;
    if (!run_kv.empty() && run_kv.back() == k) {
      ++run_length.back();
      continue;
    }
    if (std::find(run_kv.begin(), run_kv.end(), k) != run_kv.end()) {
      even = false;  // KV head k's heads are not together
    }
    run_kv.push_back(k);
    run_length.push_back(1);
  }
  for (size_t length : run_length) even = even && length == run_length[0];
  if (!even) {
    return Invalid(absl::StrFormat(
        "--heads=%s does not keep the model's KV heads: __metadata__ says "
        "num_key_value_heads = \"%s\", so each of its %d KV heads serves %d "
        "consecutive query heads of the %d, and a scenario's KV heads serve "
        "equal runs of its heads: select as many heads of each KV head "
        "used, each KV head's heads together",
        absl::StrJoin(heads, ","), text, kv, group, all));
  }
  const uint32_t derived = static_cast<uint32_t>(run_kv.size());
  if (given && options.kv_heads != derived) {
    const std::string selected =
        options.heads.has_value()
            ? absl::StrFormat("the %d selected heads (%s)", heads.size(),
                              absl::StrJoin(heads, ", "))
            : absl::StrFormat("all %d heads", heads.size());
    return Invalid(absl::StrFormat(
        "--kv_heads=%d contradicts __metadata__ num_key_value_heads = "
        "\"%s\": the model's %d query heads share %d KV heads, %d each, so "
        "%s make %d; give --kv_heads=%d or leave it out",
        options.kv_heads, text, all, kv, group, selected, derived, derived));
  }
  return derived;
}

// The chunks' prefill steps and decode steps, in the order
// import_attention_lib.h gives: D < L, m >= 1, D < m_K.
absl::StatusOr<Plan> PlanChunks(const Layout& layout,
                                const ImportOptions& options, Plan plan) {
  const uint64_t L = layout.length;
  const uint64_t D = options.decode.value_or(0);
  const ChunkRows& last = layout.chunks.back();
  if (D >= L) {
    return Invalid(absl::StrFormat(
        "--decode=%d: the prompt has L = %d positions (the last chunk tensor "
        "is %s); at most %d can be decode steps, the prefill steps admit at "
        "least one",
        D, L, last.tensor, L - 1));
  }
  if (options.window_rows.has_value() && *options.window_rows < 1) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d: each prefill step needs at least 1 query row",
        *options.window_rows));
  }
  if (D >= last.rows) {
    return Invalid(absl::StrFormat(
        "--decode=%d: the decode steps take the rows of the last chunk's last "
        "queries, and its prefill step needs at least one: tensor %s holds "
        "%d row%s (queries %d..%d); give --decode below %d",
        D, last.tensor, last.rows, last.rows == 1 ? "" : "s",
        last.first_query(), last.end - 1, last.rows));
  }
  const uint64_t m =
      options.window_rows.has_value() ? *options.window_rows : UINT64_MAX;
  for (size_t k = 0; k < layout.chunks.size(); ++k) {
    const ChunkRows& chunk = layout.chunks[k];
    const bool is_last = k + 1 == layout.chunks.size();
    const uint64_t end = is_last ? chunk.end - D : chunk.end;
    const uint64_t rows = is_last ? chunk.rows - D : chunk.rows;
    plan.prefill.push_back({end - chunk.start, end, std::min(m, rows)});
  }
  plan.first_decode = L - D;
  return plan;
}

absl::StatusOr<Plan> MakePlan(const Layout& layout,
                              const ImportOptions& options,
                              const std::string& default_id) {
  Plan plan;
  absl::StatusOr<std::vector<uint32_t>> heads = SelectHeads(layout, options);
  if (!heads.ok()) return heads.status();
  plan.heads = std::move(*heads);
  absl::StatusOr<uint32_t> kv_heads =
      ChooseKvHeads(layout, options, plan.heads);
  if (!kv_heads.ok()) return kv_heads.status();
  plan.kv_heads = *kv_heads;
  plan.id = options.id.empty() ? default_id : options.id;
  plan.length = layout.length;
  if (options.totals && layout.kind != Kind::kWindow) {
    return Invalid(absl::StrFormat(
        "--totals reads totals.<n> beside a window.<n> tensor (the window "
        "layout); this import reads %s",
        layout.kind == Kind::kChunks ? "chunk.<n>.<e> tensors"
                                     : "a matrix or step rows"));
  }
  if (layout.kind == Kind::kChunks) return PlanChunks(layout, options, plan);
  if (layout.kind != Kind::kWindow) return plan;

  // The window's flags, in the order import_attention_lib.h gives.
  const uint64_t L = layout.length, R = layout.rows;
  const uint64_t D = options.decode.value_or(0);
  const std::string shape =
      absl::StrFormat("tensor %s [%d, %d, %d]", layout.tensor, layout.heads,
                      R, L);
  if (D >= L) {
    return Invalid(absl::StrFormat(
        "--decode=%d: the prompt has L = %d positions (%s); at most %d can "
        "be decode steps, the prefill step admits at least one",
        D, L, shape, L - 1));
  }
  const uint64_t P = L - D;
  if (!options.window_rows.has_value() && D >= R) {
    return Invalid(absl::StrFormat(
        "--decode=%d leaves no window row for the prefill step: the window "
        "has R = %d rows (%s), and the default --window_rows is R - D; "
        "give --decode below %d",
        D, R, shape, R));
  }
  const uint64_t m = options.window_rows.has_value()
                         ? uint64_t{*options.window_rows}
                         : R - D;
  if (m < 1) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d: the prefill step needs at least 1 query row", m));
  }
  if (m > P) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d is more than the %d position%s the prefill step "
        "admits (P = L - D = %d - %d)",
        m, P, P == 1 ? "" : "s", L, D));
  }
  if (m + D > R) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d plus --decode=%d is %d rows, more than the "
        "window's R = %d (%s)",
        m, D, m + D, R, shape));
  }
  if (options.totals && layout.totals_width != P) {
    return Invalid(absl::StrFormat(
        "--totals with --decode=%d: tensor %s holds the totals of the first "
        "%d queries, but the prefill step admits P = L - D = %d - %d = %d "
        "positions; import with --decode=%d, or capture with "
        "capture_attention.py --totals_decode %d",
        D, layout.totals_tensor, layout.totals_width, L, D, P,
        L - layout.totals_width, D));
  }
  plan.prefill.push_back({P, P, m, options.totals ? P : 0});
  plan.first_decode = P;
  return plan;
}

// ---------------------------------------------------------------------------
// Sizes. Every message and packed field of a scenario is tag (1 byte: every
// field number is below 16) + length varint + payload (spec/kvspec.proto):
//
//   AttentionRow of n weights   row(n) = n ? 1 + varint(4n) + 4n : 0
//   Step                        admit: 1 + varint(admit); each row in
//                               attention, heads or queries: field(row(n))
//   Scenario                    id: field(len) if not empty; each step:
//                               field(step); query_heads, kv_heads:
//                               1 + varint(value)
//
// with field(x) = 1 + varint(x) + x.

uint64_t VarintBytes(uint64_t value) {
  uint64_t bytes = 1;
  while (value >= 128) {
    value >>= 7;
    ++bytes;
  }
  return bytes;
}

uint64_t FieldBytes(uint64_t payload) {
  return 1 + VarintBytes(payload) + payload;
}

uint64_t RowBytes(uint64_t weights) {
  return weights == 0 ? 0 : 1 + VarintBytes(4 * weights) + 4 * weights;
}

// The sum of f(x) for x in [lo, hi), where key(x) is nondecreasing in x
// (every component monotone) and f is affine in x wherever key(x) stays the
// same. Each run of equal keys is found by binary search and summed in
// closed form, so the cost is the number of runs times log(hi - lo).
template <typename F, typename K>
absl::uint128 SumPiecewise(uint64_t lo, uint64_t hi, F f, K key) {
  absl::uint128 total = 0;
  while (lo < hi) {
    const uint64_t k = key(lo);
    uint64_t last = lo, bound = hi - 1;
    while (last < bound) {
      const uint64_t mid = last + (bound - last + 1) / 2;
      if (key(mid) == k) {
        last = mid;
      } else {
        bound = mid - 1;
      }
    }
    const uint64_t n = last - lo + 1;
    const uint64_t first = f(lo);
    total += absl::uint128(first) * n;
    if (n > 1) {
      const uint64_t slope = f(lo + 1) - first;
      total += absl::uint128(slope) * (absl::uint128(n) * (n - 1) / 2);
    }
    lo = last + 1;
  }
  return total;
}

// The sum of q for q in [lo, hi).
absl::uint128 SumRange(uint64_t lo, uint64_t hi) {
  if (hi <= lo) return 0;
  return (absl::uint128(lo) + hi - 1) * (hi - lo) / 2;
}

absl::uint128 WireBytes(uint64_t id_bytes, uint32_t query_heads,
                        uint32_t kv_heads,
                        const std::vector<PrefillShape>& prefill,
                        uint64_t first_decode, uint64_t length) {
  const uint64_t H = query_heads;
  absl::uint128 total = 0;
  if (id_bytes > 0) total += FieldBytes(id_bytes);
  for (const PrefillShape& shape : prefill) {
    // The query rows of one head: queries q = end - m .. end - 1, q + 1
    // weights each.
    const absl::uint128 rows = SumPiecewise(
        shape.end - shape.query_rows + 1, shape.end + 1,
        [](uint64_t n) { return FieldBytes(RowBytes(n)); },
        [](uint64_t n) {
          return VarintBytes(4 * n) | VarintBytes(RowBytes(n)) << 8;
        });
    absl::uint128 step =
        1 + VarintBytes(shape.admit) + absl::uint128(H) * rows;
    if (shape.total_rows > 0) {
      // Per head a ColumnTotals {repeated double sums = 1} of `end` values
      // (packed), then total_rows.
      const absl::uint128 sums = absl::uint128(shape.end) * 8;
      const uint64_t payload =
          shape.end == 0 ? 0 : Saturate(1 + VarintBytes(Saturate(sums)) + sums);
      step += absl::uint128(H) * (1 + VarintBytes(payload) + payload);
      step += 1 + VarintBytes(shape.total_rows);
    }
    const uint64_t saturated = Saturate(step);
    total += absl::uint128(1 + VarintBytes(saturated)) + step;
  }
  // Decode step q: admit 1 (2 bytes), H rows of q weights.
  auto step = [H](uint64_t q) { return 2 + H * FieldBytes(RowBytes(q)); };
  total += SumPiecewise(
      first_decode, length, [&step](uint64_t q) { return FieldBytes(step(q)); },
      [&step](uint64_t q) -> uint64_t {
        if (q == 0) return 0;
        return 1 | VarintBytes(4 * q) << 8 | VarintBytes(RowBytes(q)) << 16 |
               VarintBytes(step(q)) << 24;
      });
  total += 1 + VarintBytes(query_heads);
  total += 1 + VarintBytes(kv_heads);
  return total;
}

// The input bytes the checks and the copy read.
absl::uint128 InputBytes(const Layout& layout, const Plan& plan) {
  const absl::uint128 L = layout.length;
  switch (layout.kind) {
    case Kind::kMatrix:  // every head, above the diagonal too
      return absl::uint128(layout.heads) * L * L * 4;
    case Kind::kStepRows:
      return absl::uint128(layout.heads) * SumRange(1, layout.length + 1) * 4;
    case Kind::kWindow:  // the used rows of the selected heads
    case Kind::kChunks: {
      absl::uint128 rows_by_keys = 0;
      for (size_t k = 0; k < plan.prefill.size(); ++k) {
        const bool is_last = k + 1 == plan.prefill.size();
        const uint64_t rows = plan.prefill[k].query_rows +
                              (is_last ? plan.length - plan.first_decode : 0);
        rows_by_keys += absl::uint128(rows) * layout.chunks[k].end;
      }
      return absl::uint128(plan.heads.size()) * rows_by_keys * 4;
    }
  }
  return 0;
}

ImportSize MeasurePlan(const Layout& layout, const Plan& plan) {
  const uint64_t H = plan.heads.size();
  ImportSize size;
  size.scenario_bytes = Saturate(
      WireBytes(plan.id.size(), static_cast<uint32_t>(H), plan.kv_heads,
                plan.prefill, plan.first_decode, plan.length));
  const uint64_t decode_steps = plan.length - plan.first_decode;
  size.steps = plan.prefill.size() + decode_steps;
  size.rows = Saturate(absl::uint128(H) *
                       (absl::uint128(plan.query_rows()) + decode_steps));
  absl::uint128 per_head = SumRange(plan.first_decode, plan.length);
  for (const PrefillShape& step : plan.prefill) {
    per_head += SumRange(step.end - step.query_rows + 1, step.end + 1);
  }
  const absl::uint128 weights = absl::uint128(H) * per_head;
  size.weights = Saturate(weights);
  absl::uint128 totals = 0;  // column totals carried, every head
  for (const PrefillShape& step : plan.prefill) {
    if (step.total_rows > 0) totals += absl::uint128(H) * step.end;
  }
  size.message_bytes = Saturate(weights * 4 + totals * 8 +
                                absl::uint128(size.rows) * 128 +
                                absl::uint128(size.steps) * 192 +
                                plan.id.size() + 256);
  size.input_bytes = Saturate(InputBytes(layout, plan) + totals * 8);
  return size;
}

using files::BytesText;

// Refuses a scenario over kMaxScenarioBytes, or an import over the memory
// available, before anything is allocated for it.
absl::Status CheckLimits(const Layout& layout, const Plan& plan,
                         const ImportSize& size,
                         const ImportOptions& options) {
  const uint64_t H = plan.heads.size();
  if (size.scenario_bytes > kMaxScenarioBytes) {
    std::string what, ways;
    const uint64_t decode_steps = plan.length - plan.first_decode;
    if (layout.kind == Kind::kWindow) {
      what = absl::StrFormat(
          "%d head%s, a prefill step of %d query rows per head over a prompt "
          "of %d positions, %d decode step%s",
          H, H == 1 ? "" : "s", plan.query_rows(), plan.prefill[0].admit,
          decode_steps, decode_steps == 1 ? "" : "s");
      ways = absl::StrFormat(
          "fewer heads (--heads), fewer window rows (--window_rows, now %d), "
          "fewer decode steps (--decode, now %d), or a shorter prompt",
          plan.query_rows(), decode_steps);
    } else if (layout.kind == Kind::kChunks) {
      what = absl::StrFormat(
          "%d head%s, %d prefill steps (one per chunk) carrying %d query rows "
          "per head in all over a prompt of %d positions, %d decode step%s",
          H, H == 1 ? "" : "s", plan.prefill.size(), plan.query_rows(),
          plan.first_decode, decode_steps, decode_steps == 1 ? "" : "s");
      ways = absl::StrFormat(
          "fewer heads (--heads), fewer query rows per chunk "
          "(--window_rows%s), fewer decode steps (--decode, now %d), fewer and larger chunks "
          "(capture_attention.py --prefill_chunk), or a shorter prompt",
          options.window_rows.has_value()
              ? absl::StrCat(", now ", *options.window_rows)
              : std::string(),
          decode_steps);
    } else {
      what = absl::StrFormat("%d head%s, L = %d: %d weights per head", H,
                             H == 1 ? "" : "s", plan.length,
                             Saturate(SumRange(0, plan.length)));
      ways =
          "fewer heads (--heads), a shorter prompt, or a window capture "
          "(window.<n> [heads, R, L], capture_attention.py --window) instead "
          "of the square: the square's scenario grows as L^2 (L(L-1)/2 "
          "weights per head), a window's as R x L";
    }
    return absl::OutOfRangeError(absl::StrFormat(
        "the scenario would be %s serialized (%s), over the %s limit of one "
        "protobuf message (INT_MAX: what protobuf serializes and "
        "tools/simulate parses). Ways out: %s",
        BytesText(size.scenario_bytes), what, BytesText(kMaxScenarioBytes),
        ways));
  }
  const std::optional<files::Memory> measured =
      options.memory_available.has_value() ? std::nullopt : files::MemoryAvailable();
  const std::optional<uint64_t> available =
      options.memory_available.has_value()
          ? options.memory_available
          : (measured.has_value() ? std::optional<uint64_t>(measured->bytes) : std::nullopt);
  const uint64_t need = Saturate(absl::uint128(size.input_bytes) +
                                 size.message_bytes);
  if (available.has_value() && need > *available) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the import needs about %s of memory (%s of the input read through "
        "its mapping + about %s for the scenario's %d weights in %d rows) "
        "and %s is available (%s): import fewer heads (--heads)%s, or free "
        "memory",
        BytesText(need), BytesText(size.input_bytes),
        BytesText(size.message_bytes), size.weights, size.rows,
        BytesText(*available),
        options.memory_available.has_value() ? std::string("the memory limit given")
                                             : measured->source,
        layout.kind == Kind::kWindow || layout.kind == Kind::kChunks
            ? ", fewer window rows (--window_rows) or decode steps (--decode)"
            : ""));
  }
  return absl::OkStatus();
}

// Checks every weight a window or chunks scenario carries and the zeros
// above the diagonal of every row it uses: tensor by tensor (ascending
// ends), for the selected heads (file order), rows in query order, columns
// in order.
absl::Status CheckChunkWeights(absl::string_view bytes, const Layout& layout,
                               const Plan& plan,
                               const std::vector<bool>& selected) {
  for (size_t c = 0; c < layout.chunks.size(); ++c) {
    const ChunkRows& chunk = layout.chunks[c];
    const PrefillShape& step = plan.prefill[c];
    // The prefill rows, then (the last chunk) the decode rows: to the end
    // of the tensor.
    const uint64_t first = step.end - step.query_rows;
    const uint64_t stop = c + 1 == layout.chunks.size() ? chunk.end : step.end;
    for (uint32_t h = 0; h < layout.heads; ++h) {
      if (!selected[h]) continue;
      for (uint64_t q = first; q < stop; ++q) {
        const char* row = bytes.data() + chunk.row(h, q);
        // A prefill row carries 0..q, a decode row 0..q-1.
        const uint64_t carried = q < step.end ? q + 1 : q;
        for (uint64_t k = 0; k < carried; ++k) {
          const uint32_t bits = BitsAt(row + 4 * k);
          if (bits < kFirstRefusedBits) continue;
          if (std::optional<std::string> problem =
                  WeightProblem(FloatOfBits(bits))) {
            return Invalid(absl::StrCat(
                ChunkWeightName(layout, chunk, h, q, k), ": ", *problem));
          }
        }
        for (uint64_t k = q + 1; k < chunk.end; ++k) {
          const uint32_t bits = BitsAt(row + 4 * k);
          if (bits != 0) {
            return Invalid(absl::StrFormat(
                "%s: weight %s (bits 0x%08x) above the diagonal, where a "
                "causal row has exactly +0.0: the file is not causal",
                ChunkWeightName(layout, chunk, h, q, k),
                ShortestDecimal(FloatOfBits(bits)), bits));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// Copies `n` float32 weights stored little-endian at `start` into `row`.
void CopyRow(absl::string_view bytes, uint64_t start, uint64_t n,
             v1::AttentionRow* row) {
  if (n == 0) return;
  google::protobuf::RepeatedField<float>* weights = row->mutable_weights();
  weights->Reserve(static_cast<int>(n));
  float* out = weights->AddNAlreadyReserved(static_cast<int>(n));
  const char* in = bytes.data() + start;
  if constexpr (kLittleEndianHost) {
    std::memcpy(out, in, 4 * n);
  } else {
    for (uint64_t k = 0; k < n; ++k) out[k] = FloatOfBits(BitsAt(in + 4 * k));
  }
}

// spec/prefill.md#their-checks: every total the scenario carries (the
// selected heads, in the scenario's order, positions ascending) is finite
// with its sign bit clear.
absl::Status CheckTotals(absl::string_view bytes, const Layout& layout,
                         const Plan& plan) {
  for (const PrefillShape& shape : plan.prefill) {
    if (shape.total_rows == 0) continue;
    for (uint32_t h : plan.heads) {
      for (uint64_t p = 0; p < shape.end; ++p) {
        const uint64_t offset = layout.totals_data + (uint64_t{h} * shape.end + p) * 8;
        const uint64_t bits = LittleEndian(bytes, offset, 8);
        if (bits < 0x7ff0000000000000u) continue;
        return Invalid(absl::StrFormat(
            "tensor %s, head %d, position %d: total %s (bits 0x%016x); "
            "totals must be finite and >= +0.0",
            layout.totals_tensor, h, p, FloatText(DoubleAt(bytes, offset)),
            bits));
      }
    }
  }
  return absl::OkStatus();
}

v1::Scenario BuildScenario(absl::string_view bytes, const Layout& layout,
                           const Plan& plan) {
  v1::Scenario scenario;
  scenario.set_id(plan.id);
  scenario.set_query_heads(static_cast<uint32_t>(plan.heads.size()));
  scenario.set_kv_heads(plan.kv_heads);
  const uint64_t steps =
      plan.prefill.size() + plan.length - plan.first_decode;
  scenario.mutable_steps()->Reserve(static_cast<int>(steps));
  for (size_t c = 0; c < plan.prefill.size(); ++c) {
    // spec/prefill.md#query-rows: head 0's rows first, each head's in
    // ascending query position; q + 1 weights, the diagonal last.
    const PrefillShape& shape = plan.prefill[c];
    const ChunkRows& chunk = layout.chunks[c];
    v1::Step* step = scenario.add_steps();
    step->set_admit(static_cast<uint32_t>(shape.admit));
    step->mutable_queries()->Reserve(
        static_cast<int>(plan.heads.size() * shape.query_rows));
    for (uint32_t h : plan.heads) {
      for (uint64_t q = shape.end - shape.query_rows; q < shape.end; ++q) {
        CopyRow(bytes, chunk.row(h, q), q + 1, step->add_queries());
      }
    }
    if (shape.total_rows > 0) {
      // spec/prefill.md#column-totals: one ColumnTotals per head, head 0
      // first, the positions 0 .. end - 1 ascending, bit for bit.
      for (uint32_t h : plan.heads) {
        google::protobuf::RepeatedField<double>* sums =
            step->add_totals()->mutable_sums();
        sums->Resize(static_cast<int>(shape.end), 0.0);
        for (uint64_t p = 0; p < shape.end; ++p) {
          sums->Set(static_cast<int>(p),
                    DoubleAt(bytes, layout.totals_data +
                                        (uint64_t{h} * shape.end + p) * 8));
        }
      }
      step->set_total_rows(static_cast<uint32_t>(shape.total_rows));
    }
  }
  for (uint64_t q = plan.first_decode; q < plan.length; ++q) {
    v1::Step* step = scenario.add_steps();
    step->set_admit(1);
    if (plan.heads.size() > 1) {
      step->mutable_heads()->Reserve(static_cast<int>(plan.heads.size()));
    }
    for (uint32_t h : plan.heads) {
      // spec/heads.md#rows-per-head: one head's row is `attention`, several
      // heads' rows are `heads`, head 0 first.
      v1::AttentionRow* row = plan.heads.size() == 1
                                  ? step->mutable_attention()
                                  : step->add_heads();
      CopyRow(bytes,
              layout.chunks.empty() ? layout.row(h, static_cast<uint32_t>(q))
                                    : layout.chunks.back().row(h, q),
              q, row);
    }
  }
  return scenario;
}

// ---------------------------------------------------------------------------
// The input file, mapped read-only.

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(data_, size_);
  }

  // The file at `path`, or why it cannot be mapped.
  static absl::StatusOr<MappedFile> Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(
          absl::StrFormat("cannot open: %s", std::strerror(errno)));
    }
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      close(fd);
      return Invalid("not a regular file");
    }
    MappedFile file;
    if (info.st_size > 0) {
      void* data = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ,
                        MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        const std::string why = std::strerror(errno);
        close(fd);
        return absl::ResourceExhaustedError(absl::StrFormat(
            "cannot map the file (%d bytes): %s", info.st_size, why));
      }
      file.data_ = data;
      file.size_ = static_cast<size_t>(info.st_size);
    }
    close(fd);
    return file;
  }

  absl::string_view bytes() const {
    return data_ == nullptr
               ? absl::string_view()
               : absl::string_view(static_cast<const char*>(data_), size_);
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

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

// The mapped file, its layout and the plan: everything but the weights.
struct Prepared {
  MappedFile file;
  Layout layout;
  Plan plan;
  ImportSize size;
};

absl::StatusOr<Prepared> Prepare(const std::string& path,
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
  if (npy && options.layout.has_value()) {
    return Invalid(absl::StrFormat(
        "--layout=%s applies to .safetensors files; a .npy file holds a "
        "[heads, L, L] matrix",
        LayoutName(*options.layout)));
  }
  if (npy && WindowFlagsGiven(options)) {
    return Invalid(absl::StrFormat(
        "%s to window.<n> and chunk.<n>.<e> tensors of a .safetensors file; "
        "a .npy file holds a [heads, L, L] matrix",
        WindowFlagsText(options)));
  }
  Prepared prepared;
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  prepared.file = std::move(*file);
  const absl::string_view bytes = prepared.file.bytes();
  absl::StatusOr<Layout> layout =
      npy ? ReadNpy(bytes) : ReadSafetensors(bytes, options);
  if (!layout.ok()) return layout.status();
  prepared.layout = std::move(*layout);
  absl::StatusOr<Plan> plan =
      MakePlan(prepared.layout, options, BaseName(path));
  if (!plan.ok()) return plan.status();
  prepared.plan = std::move(*plan);
  prepared.size = MeasurePlan(prepared.layout, prepared.plan);
  return prepared;
}

absl::StatusOr<v1::Scenario> ImportWithoutName(const std::string& path,
                                               const ImportOptions& options) {
  absl::StatusOr<Prepared> prepared = Prepare(path, options);
  if (!prepared.ok()) return prepared.status();
  const Layout& layout = prepared->layout;
  const Plan& plan = prepared->plan;
  KVSPEC_RETURN_IF_ERROR(CheckLimits(layout, plan, prepared->size, options));
  const absl::string_view bytes = prepared->file.bytes();
  std::vector<bool> selected(layout.heads, false);
  for (uint32_t h : plan.heads) selected[h] = true;
  if (layout.kind == Kind::kWindow || layout.kind == Kind::kChunks) {
    KVSPEC_RETURN_IF_ERROR(CheckChunkWeights(bytes, layout, plan, selected));
    KVSPEC_RETURN_IF_ERROR(CheckTotals(bytes, layout, plan));
  } else {
    KVSPEC_RETURN_IF_ERROR(CheckWeights(bytes, layout, selected));
  }
  return BuildScenario(bytes, layout, plan);
}

// `status` with the path in front of its message: every refusal names the
// file.
absl::Status Named(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(path, ": ", Printable(status.message())));
}

absl::Status OutOfMemory(const std::string& path, absl::string_view doing) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s: out of memory while %s (std::bad_alloc): import fewer heads "
      "(--heads), fewer rows, or free memory",
      path, doing));
}

}  // namespace

absl::StatusOr<v1::Scenario> ImportAttention(const std::string& path,
                                             const ImportOptions& options) {
  try {
    absl::StatusOr<v1::Scenario> scenario = ImportWithoutName(path, options);
    if (!scenario.ok()) return Named(path, scenario.status());
    return scenario;
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, "importing");
  }
}

absl::StatusOr<ImportSize> MeasureImport(const std::string& path,
                                         const ImportOptions& options) {
  try {
    absl::StatusOr<Prepared> prepared = Prepare(path, options);
    if (!prepared.ok()) return Named(path, prepared.status());
    return prepared->size;
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, "reading the header");
  }
}

uint64_t ScenarioWireBytes(uint64_t id_bytes, uint32_t query_heads,
                           uint32_t kv_heads, uint64_t prefill_admit,
                           uint64_t query_rows, uint64_t first_decode,
                           uint64_t length) {
  std::vector<PrefillShape> prefill;
  if (prefill_admit > 0) {
    prefill.push_back({prefill_admit, prefill_admit, query_rows});
  }
  return Saturate(WireBytes(id_bytes, query_heads, kv_heads, prefill,
                            first_decode, length));
}

uint64_t ScenarioWireBytes(uint64_t id_bytes, uint32_t query_heads,
                           uint32_t kv_heads,
                           const std::vector<PrefillShape>& prefill,
                           uint64_t first_decode, uint64_t length) {
  return Saturate(WireBytes(id_bytes, query_heads, kv_heads, prefill,
                            first_decode, length));
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

namespace {

absl::Status OutOfMemoryWriting(const std::string& path) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--output=%s: out of memory while writing the scenario "
      "(std::bad_alloc)",
      path));
}

absl::Status WriteScenarioFileOrThrow(const v1::Scenario& scenario,
                                      const std::string& path,
                                      const std::vector<std::string>& inputs) {
  const size_t bytes = scenario.ByteSizeLong();
  if (bytes > kMaxScenarioBytes) {
    return absl::OutOfRangeError(absl::StrFormat(
        "--output=%s: the scenario is %d bytes, over the %d-byte limit of "
        "one protobuf message",
        path, bytes, kMaxScenarioBytes));
  }
  // files::WriteAtomically refuses a path that is not a regular file or is
  // one of the inputs, then writes a temporary file beside it and renames
  // it over `path`. An exception must not escape the writer (the temporary
  // file would be left behind): out of memory is a failed write.
  bool out_of_memory = false;
  const absl::Status written = files::WriteAtomically(
      "--output", path,
      [&](int fd) -> std::string {
        try {
          // Serialized straight into the stream's buffers and written: no
          // copy of the whole message in memory.
          google::protobuf::io::FileOutputStream stream(fd);
          const bool serialized = scenario.SerializeToZeroCopyStream(&stream);
          const bool flushed = stream.Flush();
          if (serialized && flushed) return "";
          return stream.GetErrno() != 0 ? std::strerror(stream.GetErrno())
                                        : "cannot serialize the scenario";
        } catch (const std::bad_alloc&) {
          out_of_memory = true;
          return "out of memory";
        }
      },
      inputs);
  if (out_of_memory) return OutOfMemoryWriting(path);
  return written;
}

}  // namespace

absl::Status WriteScenarioFile(const v1::Scenario& scenario,
                               const std::string& path,
                               const std::vector<std::string>& inputs) {
  try {
    return WriteScenarioFileOrThrow(scenario, path, inputs);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryWriting(path);
  }
}

}  // namespace kvspec
