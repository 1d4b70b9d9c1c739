// The attention importer's .safetensors reader: which of the file's tensors
// to read and where their rows are (ReadSafetensors, import_internal.h;
// "Which tensor" in import_attention_lib.h).
//
// .safetensors (https://github.com/huggingface/safetensors#format)
//
//   8 bytes: N, the header length, little-endian; N bytes: a JSON object
//   mapping each tensor's name to {"dtype", "shape", "data_offsets": [begin,
//   end]} (offsets relative to the data, which starts after the header), and
//   optionally "__metadata__" to an object of strings; then the data.
#include "tools/attention/import_internal.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "tools/attention/import_json.h"
#include "tools/attention/import_tensors.h"

namespace kvspec {
namespace import_attention {
namespace {

// What ImportOptions::keys and ::values read, in messages.
struct VectorsKind {
  const char* prefix;  // "keys": the tensor keys.<n>, the flag --keys
  const char* one;     // "key": what one position's vector is
  const char* dim;     // "head_dim": its length's field
  HeadVectorsTensor Layout::*field;
};
constexpr VectorsKind kKeys = {"keys", "key", "head_dim", &Layout::keys};
constexpr VectorsKind kValues = {"values", "value", "value_dim",
                                 &Layout::values};

// `layout` (layer n's rows, read) with kind.prefix.<n>, float32 [K, L, dim]
// with K >= 1, L the layout's and 1 <= dim <= 1024
// (spec/tensors.md#the-fields); K is checked against the KV heads when the
// plan is made.
absl::StatusOr<Layout> WithVectors(absl::StatusOr<Layout> layout,
                                   const VectorsKind& kind,
                                   const std::vector<TensorEntry>& tensors,
                                   const std::vector<std::string>& names,
                                   uint32_t n, uint64_t data_start) {
  const std::string name = absl::StrCat(kind.prefix, ".", n);
  const TensorEntry* entry = nullptr;
  for (const TensorEntry& tensor : tensors) {
    if (tensor.name == name) entry = &tensor;
  }
  if (entry == nullptr) {
    return Invalid(absl::StrFormat(
        "--%s: the file has no tensor %s (capture_attention.py --%s "
        "writes it; it holds %s)",
        kind.prefix, name, kind.prefix, absl::StrJoin(names, ", ")));
  }
  if (entry->dtype != "F32") {
    return Invalid(absl::StrFormat("tensor %s has dtype %s; %s are F32",
                                   name, entry->dtype, kind.prefix));
  }
  const std::vector<uint64_t>& shape = entry->shape;
  if (shape.size() != 3 || shape[0] < 1 || shape[0] > UINT32_MAX ||
      shape[1] != layout->length || shape[2] < 1 || shape[2] > 1024) {
    return Invalid(absl::StrFormat(
        "tensor %s: shape %s is not [KV heads, L, %s] = [1.., %d, "
        "1..1024]: every position's %s, %s in [1, 1024] "
        "(spec/tensors.md#the-fields)",
        name, ShapeText(shape), kind.dim, layout->length, kind.one,
        kind.dim));
  }
  const std::optional<uint64_t> need = ByteCount(shape, 4);
  if (!need.has_value() || *need != entry->end - entry->begin) {
    return Invalid(absl::StrFormat(
        "tensor %s: data_offsets [%d, %d] hold %d bytes but shape %s of F32 "
        "needs %d",
        name, entry->begin, entry->end, entry->end - entry->begin,
        ShapeText(shape), need.value_or(0)));
  }
  HeadVectorsTensor& read = (*layout).*kind.field;
  read.tensor = name;
  read.data = data_start + entry->begin;
  read.heads = shape[0];
  read.dim = static_cast<uint32_t>(shape[2]);
  return layout;
}

// ImportOptions::keys and ::values: `layout` with keys.<n>, then values.<n>
// (WithVectors). Without either, `layout` as it is.
absl::StatusOr<Layout> WithKeysAndValues(
    absl::StatusOr<Layout> layout, const std::vector<TensorEntry>& tensors,
    const std::vector<std::string>& names, uint32_t n, uint64_t data_start,
    const ImportOptions& options) {
  if (layout.ok() && options.keys) {
    layout = WithVectors(std::move(layout), kKeys, tensors, names, n,
                         data_start);
  }
  if (layout.ok() && options.values) {
    layout = WithVectors(std::move(layout), kValues, tensors, names, n,
                         data_start);
  }
  return layout;
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
      return WithKeysAndValues(
          ChunksLayout(layer_chunks, data_start, metadata), tensors, names, n,
          data_start, options);
    }
    if (read == TensorLayout::kWindow) {
      absl::StatusOr<Layout> layout = WithKeysAndValues(
          WindowLayout(*window, data_start, metadata), tensors, names, n,
          data_start, options);
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
    return WithKeysAndValues(
        MatrixLayout(layer->shape, data_start + layer->begin, layer->name),
        tensors, names, n, data_start, options);
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
  if (options.keys || options.values) {
    const char* flag = options.keys ? "keys" : "values";
    return Invalid(absl::StrFormat(
        "--%s reads %s.<n> beside a layer's tensors; the file holds "
        "per-step rows (step.<t>)",
        flag, flag));
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

}  // namespace

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

}  // namespace import_attention
}  // namespace kvspec
