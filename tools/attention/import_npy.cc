// The attention importer's .npy reader: a [heads, L, L] float32 matrix
// (ReadNpy, import_internal.h).
//
// .npy (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html)
//
//   "\x93NUMPY", major, minor (1.0, 2.0 or 3.0), the header length (2 bytes
//   little-endian in 1.0, 4 bytes in 2.0 and 3.0), the header: a Python dict
//   literal such as {'descr': '<f4', 'fortran_order': False,
//   'shape': (3, 16, 16), } padded with spaces and ended by '\n', then the
//   data.
#include "tools/attention/import_internal.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "tools/attention/import_cursor.h"

namespace kvspec {
namespace import_attention {
namespace {

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

}  // namespace

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

}  // namespace import_attention
}  // namespace kvspec
