// The tensors of a .safetensors file's header (import_tensors.h): their
// entries, offsets, names, dtypes, __metadata__, and the window and chunk
// tensors' shapes, checked against each other and the metadata.
#include "tools/attention/import_tensors.h"

#include <algorithm>
#include <cstdint>
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
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "tools/attention/import_internal.h"
#include "tools/attention/import_json.h"

namespace kvspec {
namespace import_attention {
namespace {

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

}  // namespace

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

}  // namespace import_attention
}  // namespace kvspec
