// A minimal JSON reader for safetensors headers (import_json.cc), for the
// attention importer's .safetensors reader (import_safetensors.cc). A
// header is one object whose values are objects; those hold strings,
// non-negative integers and arrays of non-negative integers. Anything else
// JSON allows (floats, negative numbers, true, false, null, arrays of other
// things, deeper objects) is refused by name.
#ifndef KVSPEC_TOOLS_ATTENTION_IMPORT_JSON_H_
#define KVSPEC_TOOLS_ATTENTION_IMPORT_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvspec {
namespace import_attention {

struct JsonValue {
  enum class Kind { kObject, kString, kInteger, kIntegerArray };
  Kind kind = Kind::kObject;
  std::string string;                // kString
  uint64_t integer = 0;              // kInteger
  std::vector<uint64_t> integers;    // kIntegerArray
  // kObject: the members in file order.
  std::vector<std::pair<std::string, JsonValue>> members;
};

// The header `text`: one object, as above, and nothing after it but
// spaces; refused naming the byte where it goes wrong.
absl::StatusOr<JsonValue> ParseJsonHeader(absl::string_view text);

}  // namespace import_attention
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_ATTENTION_IMPORT_JSON_H_
