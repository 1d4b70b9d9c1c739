// What the pieces of the attention importer share: internal to
// //tools/attention:import_attention_lib, whose interface is
// import_attention_lib.h (what is read, checked and refused). An import
// runs the pieces in this order (import_attention_lib.cc):
//   import_npy.cc          reads a .npy file's matrix into a Layout;
//   import_safetensors.cc  reads a .safetensors file's tensors into a
//                          Layout, with import_json.cc (its header's JSON)
//                          and import_tensors.cc (its tensors' entries,
//                          names, metadata, windows and chunks);
//   import_plan.cc         the Plan: the heads, kv_heads, the prefill and
//                          decode steps, the window and chunk flags;
//   import_sizes.cc        the scenario's exact size and the import's
//                          memory, checked against their limits;
//   import_weights.cc      checks the weights and copies them into the
//                          scenario;
//   import_write.cc        writes the scenario file.
// What is not inline here is in import_internal.cc.
#ifndef KVSPEC_TOOLS_ATTENTION_IMPORT_INTERNAL_H_
#define KVSPEC_TOOLS_ATTENTION_IMPORT_INTERNAL_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_attention_lib.h"

namespace kvspec {
namespace import_attention {

// An InvalidArgumentError with `message`: how every piece refuses a file.
absl::Status Invalid(absl::string_view message);

// ---------------------------------------------------------------------------
// Bytes and numbers.

// The unsigned little-endian integer of `width` bytes at `offset`. The caller
// has checked that the bytes are there.
inline uint64_t LittleEndian(absl::string_view bytes, uint64_t offset,
                             int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  }
  return value;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
inline constexpr bool kLittleEndianHost = true;
#else
inline constexpr bool kLittleEndianHost = false;
#endif

// The IEEE bits of the float32 stored as four little-endian bytes at `p`.
inline uint32_t BitsAt(const char* p) {
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

inline float FloatOfBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// The binary64 stored as eight little-endian bytes at `offset`.
inline double DoubleAt(absl::string_view bytes, uint64_t offset) {
  const uint64_t bits = LittleEndian(bytes, offset, 8);
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// The product of `dims` times `element_bytes`, or nullopt on overflow.
std::optional<uint64_t> ByteCount(const std::vector<uint64_t>& dims,
                                  uint64_t element_bytes);

// "[3, 16, 16]": a shape in messages.
std::string ShapeText(const std::vector<uint64_t>& shape);

// `value`, or UINT64_MAX if it does not fit.
uint64_t Saturate(absl::uint128 value);

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

// keys.<n> or values.<n> (ImportOptions::keys, ::values): float32 [heads,
// L, dim] in C order, from byte `data` of the file; `tensor` empty when not
// read.
struct HeadVectorsTensor {
  std::string tensor;
  uint64_t data = 0;
  uint64_t heads = 0;
  uint32_t dim = 0;

  // Where KV head g's vector of position p starts, L = `length`.
  uint64_t at(uint64_t g, uint64_t length, uint64_t p) const {
    return data + (g * length + p) * dim * 4;
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
  // ImportOptions::keys: keys.<n>, float32 [heads, length, head_dim];
  // ImportOptions::values: values.<n>, [heads, length, value_dim]
  // (spec/tensors.md#the-fields). Each `tensor` empty when not read.
  HeadVectorsTensor keys;
  HeadVectorsTensor values;
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

// Checks the matrix dimensions [heads, L, L] that both formats share.
absl::Status CheckMatrixShape(const std::vector<uint64_t>& shape);

// The layout of a [heads, L, L] float32 matrix in C order starting at `start`.
Layout MatrixLayout(const std::vector<uint64_t>& shape, uint64_t start,
                    std::string tensor);

// ---------------------------------------------------------------------------
// The options in messages.

// "matrix", "window", "chunks": the --layout value.
const char* LayoutName(TensorLayout layout);

// Whether --window_rows, --decode or --totals is given.
bool WindowFlagsGiven(const ImportOptions& options);

// "--window_rows=3 and --decode=1 apply", "--decode=1 applies": the window
// flags given.
std::string WindowFlagsText(const ImportOptions& options);

// ---------------------------------------------------------------------------
// The plan: what the scenario will hold.

struct Plan {
  // The file's heads, in the scenario's order.
  std::vector<uint32_t> heads;
  std::string id;
  uint32_t kv_heads = 1;
  // ImportOptions::keys or ::values: the file's KV head (keys.<n>'s and
  // values.<n>'s first index) of each of the scenario's kv_heads KV heads;
  // empty without either.
  std::vector<uint64_t> key_heads;
  // d (ImportOptions::keys) and e (ImportOptions::values); 0 without.
  uint32_t head_dim = 0;
  uint32_t value_dim = 0;
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

// ---------------------------------------------------------------------------
// The stages of an import, in order, by the file that defines them.

// import_npy.cc: a .npy file's [heads, L, L] float32 matrix.
absl::StatusOr<Layout> ReadNpy(absl::string_view bytes);

// import_safetensors.cc: the tensors of a .safetensors file that `options`
// select ("Which tensor" in import_attention_lib.h), with the file's
// __metadata__ "num_key_value_heads".
absl::StatusOr<Layout> ReadSafetensors(absl::string_view bytes,
                                       const ImportOptions& options);

// import_plan.cc: the plan for `layout`: the selected heads, kv_heads, the
// id (`default_id` when ImportOptions::id is empty) and, for a window or
// chunks, the prefill and decode steps; the flags are checked in the order
// import_attention_lib.h gives.
absl::StatusOr<Plan> MakePlan(const Layout& layout,
                              const ImportOptions& options,
                              const std::string& default_id);

// import_sizes.cc.

// The exact serialized size of a scenario of this shape (ScenarioWireBytes
// in import_attention_lib.h, before it saturates).
absl::uint128 WireBytes(uint64_t id_bytes, uint32_t query_heads,
                        uint32_t kv_heads,
                        const std::vector<PrefillShape>& prefill,
                        uint64_t first_decode, uint64_t length,
                        uint32_t head_dim, uint32_t value_dim);

// What the import of `plan` needs (ImportSize).
ImportSize MeasurePlan(const Layout& layout, const Plan& plan);

// Refuses a scenario over kMaxScenarioBytes, or an import over the memory
// available, before anything is allocated for it.
absl::Status CheckLimits(const Layout& layout, const Plan& plan,
                         const ImportSize& size,
                         const ImportOptions& options);

// import_weights.cc.

// Checks every weight the scenario will carry (the selected heads' weights
// left of the diagonal) and every weight right of the diagonal (every head),
// for the matrix and step-rows layouts. Heads in file order, rows in order,
// columns in order: the first fault is reported.
absl::Status CheckWeights(absl::string_view bytes, const Layout& layout,
                          const std::vector<bool>& selected);

// Checks every weight a window or chunks scenario carries and the zeros
// above the diagonal of every row it uses: tensor by tensor (ascending
// ends), for the selected heads (file order), rows in query order, columns
// in order.
absl::Status CheckChunkWeights(absl::string_view bytes, const Layout& layout,
                               const Plan& plan,
                               const std::vector<bool>& selected);

// spec/prefill.md#their-checks: every total the scenario carries (the
// selected heads, in the scenario's order, positions ascending) is finite
// with its sign bit clear.
absl::Status CheckTotals(absl::string_view bytes, const Layout& layout,
                         const Plan& plan);

// spec/tensors.md#checks: every key the scenario carries (its KV heads in
// order, positions ascending, channels ascending) is finite, then every
// value the same way.
absl::Status CheckKeysAndValues(absl::string_view bytes, const Layout& layout,
                                const Plan& plan);

// The scenario `plan` describes, its weights copied bit for bit from
// `bytes` (checked before).
v1::Scenario BuildScenario(absl::string_view bytes, const Layout& layout,
                           const Plan& plan);

}  // namespace import_attention
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_ATTENTION_IMPORT_INTERNAL_H_
