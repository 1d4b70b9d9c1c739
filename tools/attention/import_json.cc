// The attention importer's minimal JSON reader for .safetensors headers
// (import_json.h says what it accepts).
#include "tools/attention/import_json.h"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "tools/attention/import_cursor.h"
#include "tools/attention/import_internal.h"

namespace kvspec {
namespace import_attention {
namespace {

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

}  // namespace

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

}  // namespace import_attention
}  // namespace kvspec
