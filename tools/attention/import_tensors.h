// The tensors of a .safetensors file's header, for the attention
// importer's reader (import_safetensors.cc): each entry's fields and
// offsets, the names layer.<n>, window.<n>, step.<t> and chunk.<n>.<e>,
// the F32 checks, __metadata__, and the Layout of a window.<n> tensor and
// of a layer's chunk.<n>.<e> tensors. Defined in import_tensors.cc.
#ifndef KVSPEC_TOOLS_ATTENTION_IMPORT_TENSORS_H_
#define KVSPEC_TOOLS_ATTENTION_IMPORT_TENSORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/attention/import_internal.h"
#include "tools/attention/import_json.h"

namespace kvspec {
namespace import_attention {

struct TensorEntry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // relative to the data
  uint64_t end = 0;
};

// The header entry `name`: an object of "dtype", "shape" and
// "data_offsets", nothing else.
absl::StatusOr<TensorEntry> TensorFromJson(const std::string& name,
                                           const JsonValue& value);

// Checks every tensor's data_offsets against the data and each other.
absl::Status CheckOffsets(std::vector<TensorEntry> tensors,
                          uint64_t data_bytes);

// "layer.12" with prefix "layer." -> 12. nullopt if `name` does not start
// with the prefix; an error if what follows is not a plain decimal number.
absl::StatusOr<std::optional<uint32_t>> IndexedName(const std::string& name,
                                                    absl::string_view prefix);

// "chunk.3.256" -> {3, 256}. nullopt if `name` does not start with
// "chunk."; an error if the rest is not two plain decimal numbers n.e with
// e >= 1.
absl::StatusOr<std::optional<std::pair<uint32_t, uint32_t>>> ChunkName(
    const std::string& name);

// The checks every F32 tensor we read shares: dtype, then the bytes its
// offsets hold against its shape.
absl::Status CheckF32Tensor(const TensorEntry& tensor);

using Metadata = std::vector<std::pair<std::string, std::string>>;

// The value of __metadata__ entry `key` and its number, or nullopt when it
// is absent or not a decimal number (then it is not compared).
std::optional<std::pair<std::string, uint64_t>> MetadataNumber(
    const Metadata& metadata, absl::string_view key);

// The layout of a window.<n> tensor: float32 [heads, R, L], row r the row of
// query L - R + r over keys 0..L-1.
absl::StatusOr<Layout> WindowLayout(const TensorEntry& tensor,
                                    uint64_t data_start,
                                    const Metadata& metadata);

// One layer's chunk.<n>.<e> tensors, ascending e.
using ChunkTensors = std::vector<std::pair<uint32_t, const TensorEntry*>>;

// The layout of one layer's chunk tensors: chunk.<n>.<e> float32
// [heads, m, e], row r the row of query e - m + r over keys 0..e-1, the
// chunk admitting the positions from the previous end to e - 1.
absl::StatusOr<Layout> ChunksLayout(const ChunkTensors& tensors,
                                    uint64_t data_start,
                                    const Metadata& metadata);

}  // namespace import_attention
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_ATTENTION_IMPORT_TENSORS_H_
