// What every piece of the attention importer shares (import_internal.h):
// refusals, byte counts, shapes in messages, the [heads, L, L] matrix both
// readers find, and how messages name the options.
#include "tools/attention/import_internal.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace kvspec {
namespace import_attention {
namespace {

// a * b, or nullopt if it does not fit in 64 bits.
std::optional<uint64_t> Multiply(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return std::nullopt;
  return a * b;
}

}  // namespace

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

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

uint64_t Saturate(absl::uint128 value) {
  return absl::Uint128High64(value) != 0 ? UINT64_MAX
                                         : absl::Uint128Low64(value);
}

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

}  // namespace import_attention
}  // namespace kvspec
