// import_attention: turns one layer's attention, saved from a model run, into
// a kvspec scenario (a binary kvspec.v1.Scenario, spec/kvspec.proto).
//
// The input is one layer's causal attention A[h, q, k]: the weight query
// position q pays to key position k, for each query head h (softmax rows of
// an eager attention, so A[h, q, k] is 0 for every k > q). It comes in one of
// four layouts:
//
//   matrix     one float32 array [heads, L, L]: a .npy file, or a tensor
//              `layer.<n>` of a .safetensors file;
//   step rows  .safetensors tensors `step.<t>`, t = 0 .. L-1, each float32
//              [heads, t + 1]: the query of step t over keys 0..t;
//   window     a .safetensors tensor `window.<n>`, float32 [heads, R, L]
//              with 1 <= R <= L: row r is the row of query position
//              q = L - R + r over keys 0..L-1 (the prompt's last R queries,
//              an observation window; entries k > q are +0.0).
//   chunks     .safetensors tensors `chunk.<n>.<e>`, one per chunk of a
//              chunked prefill, e its end (the chunk admits positions
//              e' .. e-1, e' the next smaller end of layer n, 0 for the
//              first): float32 [heads, m_e, e] with 1 <= m_e <= e - e':
//              row r is the row of query q = e - m_e + r over keys 0..e-1
//              (the chunk's last m_e queries; entries k > q are +0.0).
//              L is the largest e. capture_attention.py --prefill_chunk
//              writes them.
//
// Matrix and step rows: the scenario has one step per query position q.
// Step q admits position q and carries, for each selected head h, the
// full-cache row A[h, q, 0..q-1]: row q WITHOUT its diagonal weight
// A[h, q, q], because in kvspec a step's query never attends to its own
// position (spec/harness.md#the-decode-step). Step 0's rows are present and
// empty.
//
// Window: a prefill scenario (spec/prefill.md). With D = decode (default 0)
// and m = window_rows (default R - D), the prompt's first P = L - D
// positions are the prompt proper and its last D positions are decoded:
//   step 0 (the prefill step) admits P positions and carries query rows
//     (Step.queries) for the queries P-m .. P-1: for each selected head h in
//     the order selected, and within a head for each of those queries q
//     ascending, the q + 1 weights window[h, r(q), 0..q], its own (diagonal)
//     weight last, where r(q) = q - (L - R). No `attention`, no `heads`.
//   steps 1 .. D (one per query position q = P .. L-1) each admit 1 and
//     carry, for each selected head, the row window[h, r(q), 0..q-1]
//     WITHOUT the diagonal, in `attention` (one head) or `heads` (several
//     heads), exactly as the matrix layout's steps.
// Required: 1 <= m, D < L (so P >= 1), m <= P and m + D <= R; anything else
// is refused naming the flag and the numbers, checked in that order (D < L,
// then m >= 1, m <= P, m + D <= R; without window_rows, D >= R is refused
// as leaving no row for the prefill step). The window's rows 0 .. R-m-D-1
// (queries before P - m) are not used and not checked.
//
// Chunks: a chunked prefill (spec/prefill.md: a prefill step may come on a
// cache that is not empty). With chunk ends e_1 < ... < e_K = L (e_0 = 0),
// m_k the rows of chunk k's tensor, D = decode (default 0) and m =
// window_rows (default: every row):
//   step k-1, for k = 1 .. K-1, admits e_k - e_{k-1} positions and carries
//     query rows for the chunk's last min(m, m_k) queries, q + 1 weights
//     each as in the window layout (head by head, queries ascending);
//   step K-1, the last chunk's, admits e_K - e_{K-1} - D positions and
//     carries the last min(m, m_K - D) of its rows before the decoded
//     positions (queries up to L - D - 1);
//   steps K .. K+D-1: one decode step per query position q = L-D .. L-1,
//     its row from the last chunk's tensor without the diagonal, as the
//     window layout's decode steps.
// Required: m >= 1 and D < m_K (the decode steps take the last chunk's
// last D rows and its prefill step keeps at least one), checked in that
// order after D < L. m is capped, never refused, by each chunk's rows
// (spec/prefill.md: m <= admit). Rows a step does not carry are not used
// and not checked.
//
// Weights are copied bit for bit: no renormalization, no conversion
// (spec/harness.md#what-a-policy-sees).
//
// Checks. Every weight the scenario carries must be accepted by
// spec/harness.md#attention-weights (finite, sign bit clear: no NaN, no inf,
// no negative number, no -0.0); otherwise the file is refused.
//   matrix: every weight above the diagonal (k > q) of every head, selected
//     or not, must be zero (+0.0 or -0.0); the diagonal weights and the
//     unselected heads' weights below it are not carried and not checked.
//   step rows: the selected heads' weights left of the diagonal.
//   window: for each selected head and each row the scenario uses
//     (queries P-m .. L-1): the carried weights (0..q for a prefill row,
//     0..q-1 for a decode row) and every weight above the diagonal, which
//     must be exactly +0.0 (bits 0x00000000; -0.0 or anything else is
//     refused: the file is not causal). A decode row's diagonal is not
//     carried and not checked; the unselected heads are not read.
//   chunks: the same, tensor by tensor in ascending e, each row over its
//     tensor's e keys (exactly +0.0 from q + 1 to e - 1).
// Heads are checked in file order, rows in query order, columns in order:
// the first fault is reported.
//
// Which tensor. A .safetensors file may hold layer.<n>, window.<n>,
// chunk.<n>.<e> and other tensors (e.g. totals.<n>, keys.<n> and
// values.<n>, read only with ImportOptions::totals, ::keys and ::values), or
// step.<t> tensors, never step.<t> together with the others. The layer
// number n is `layer`, or, when the file's layer.<n>, window.<n> and
// chunk.<n>.<e> tensors all have the same n, that n. For n, `layout` says
// which to read (refused when the file has no such tensor for n); without
// it: the chunk.<n>.<e> tensors when they are n's only kind (chunk.<n>.<e>
// beside layer.<n> or window.<n> is refused: give `layout`); else
// window.<n> when there is no layer.<n>; when both exist, window.<n> if
// window_rows or decode is given, layer.<n> otherwise. window_rows and
// decode are refused for the matrix and step-rows layouts, `layout` for a
// .npy file and for step rows.
// For the window and chunks layouts, __metadata__ is cross-checked when it
// holds a decimal "tokens" (must be L), "num_attention_heads" (must be the
// tensors' heads), "window_rows" (R: a window's rows; each chunk's rows
// must be min(R, the positions its chunk admits)) or, for chunks,
// "prefill_chunk" (C: the ends must be C, 2C, ... and L, none missing,
// none more): a contradiction is refused; a value that is not a decimal
// number is ignored. Chunks are also refused when a tensor's width is not
// its e, when it has more rows than its chunk admits, when their heads
// differ, and when the chunk tensors of the file's layers do not all end
// at the same L. (Ends are distinct and ascending by construction: a
// repeated name is a repeated JSON key, and a name that is not canonical,
// chunk.1.08 or chunk.1.0, is refused.)
//
// KV heads. A .safetensors file's __metadata__ "num_key_value_heads" K
// (capture_attention.py writes the model's; ignored when it is not a
// decimal number) says which KV head each of the file's H query heads uses:
// query head h uses KV head h / (H / K). A scenario's KV head serves a run
// of consecutive heads, the same number each (spec/heads.md#head-counts),
// so the selected heads keep the model's KV heads when each KV head's
// selected heads are next to each other and every KV head used has as many
// selected: the scenario's kv_heads is then the number of KV heads used (K
// when every head is selected in file order). Without the metadata,
// kv_heads is ImportOptions::kv_heads. Checked after the heads, in this
// order: a given kv_heads (kv_heads_from_file false, or no metadata) must
// be at least 1 and divide the selected heads; K must be at least 1 and
// divide H (else the file contradicts itself); the selection must keep the
// KV heads as above (refused naming --heads, whatever kv_heads); a given
// kv_heads must be the number of KV heads used (refused naming both
// values). With kv_heads_from_file and the metadata, the scenario's
// kv_heads is that number.
//
// Size and memory. Before anything is allocated for the scenario or a
// weight is read, the import computes the exact size of the serialized
// scenario (ScenarioWireBytes below: ByteSizeLong() of the scenario it
// would build) and refuses it above kMaxScenarioBytes, with the figures and
// the ways out; then it estimates the memory the import needs (the input
// bytes it reads, which stay mapped, plus the scenario in memory) and
// refuses it above MemAvailable (/proc/meminfo; no check when unreadable).
// The input is mapped (mmap), not copied; an allocation failure anywhere
// in ImportAttention or WriteScenarioFile is a refusal, never an abort.
//
// Every refusal is an absl::Status whose message starts with the input path
// ("--output=" and the output path for WriteScenarioFile) and names the
// problem, e.g.
//   "attn.npy: head 2, row 5, column 7: weight 0.25 above the diagonal
//    (rows must be causal)".
//
// Example:
//   ImportOptions options;
//   options.heads = std::vector<uint32_t>{0, 2};
//   options.kv_heads = 2;
//   absl::StatusOr<v1::Scenario> scenario = ImportAttention("attn.npy",
//                                                           options);
//   if (scenario.ok()) status = WriteScenarioFile(*scenario, "attn.pb");
#ifndef KVSPEC_TOOLS_ATTENTION_IMPORT_ATTENTION_LIB_H_
#define KVSPEC_TOOLS_ATTENTION_IMPORT_ATTENTION_LIB_H_

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spec/kvspec.pb.h"

namespace kvspec {

// The largest scenario accepted, in serialized bytes: INT_MAX, protobuf's
// limit for one message. Protobuf 3.21 refuses to serialize a larger message
// (MessageLite::SerializeToZeroCopyStream checks ByteSizeLong() <= INT_MAX),
// a length-delimited field (a Step) is at most INT_MAX bytes when parsed,
// and CodedInputStream's default total bytes limit is INT_MAX.
inline constexpr uint64_t kMaxScenarioBytes = INT_MAX;

// Which of a layer's tensors to read (ImportOptions::layout).
enum class TensorLayout {
  kMatrix,  // layer.<n>
  kWindow,  // window.<n>
  kChunks,  // chunk.<n>.<e>
};

struct ImportOptions {
  // Which layer's tensors (`layer.<n>`, `window.<n>` or `chunk.<n>.<e>`) of
  // a .safetensors file to read. nullopt: the file's only layer number
  // (refused when it has several). Refused for a .npy file and for a file of
  // step rows.
  std::optional<uint32_t> layer;
  // Which kind of layer n's tensors to read. nullopt: chosen as "Which
  // tensor" above says.
  std::optional<TensorLayout> layout;
  // The query heads to keep, in the order given (the scenario's head i is
  // the file's head heads[i]). nullopt: every head, in file order. Each must
  // be below the file's head count and appear once; an empty list is
  // refused.
  std::optional<std::vector<uint32_t>> heads;
  // The scenario's kv_heads (spec/heads.md#head-counts); it must divide the
  // number of selected heads, and agree with the file's __metadata__
  // "num_key_value_heads" when it has one ("KV heads" above).
  uint32_t kv_heads = 1;
  // True when kv_heads was not given (import_attention without --kv_heads):
  // the scenario's kv_heads is then the one the file's __metadata__
  // "num_key_value_heads" gives for the selected heads, and `kv_heads` only
  // for a file without it.
  bool kv_heads_from_file = false;
  // The scenario's id. Empty: the input file's base name.
  std::string id;
  // Window and chunks layouts only: m, the query rows the prefill step
  // carries (chunks: each prefill step, capped by its chunk's rows).
  // nullopt: R - decode (chunks: every row).
  std::optional<uint32_t> window_rows;
  // Window and chunks layouts only: D, the prompt's last positions that
  // become decode steps after the prefill step(s). nullopt: 0.
  std::optional<uint32_t> decode;
  // Window layout only: also read totals.<n>, float64 [heads, P] (what
  // capture_attention.py --totals writes: each key's column total over
  // the first P queries, P = L - its --totals_decode), and carry the
  // selected heads' totals on the prefill step with total_rows P
  // (spec/prefill.md#column-totals), for h2o. Refused unless P is the
  // prefill step's L - decode, for other layouts, and when the file has no
  // totals.<n>; every value carried must be finite with its sign bit clear.
  bool totals = false;
  // Also read keys.<n>, float32 [K, L, d] (what capture_attention.py --keys
  // writes: KV head g's key of position p at [g, p, :], after the rotary
  // embedding, as the model's cache holds it), and carry them as the
  // scenario's keys (spec/tensors.md#the-fields): head_dim d, and on each
  // step, for each of the scenario's KV heads, the keys of the positions
  // the step admits, bit for bit. The scenario's KV head j is the model's
  // KV head of its j-th run of query heads ("KV heads" above), so the file
  // must have __metadata__ "num_key_value_heads" equal to K. Refused for a
  // .npy file and step rows, when the file has no keys.<n>, for a dtype
  // other than F32, a shape other than [K, L, 1..1024], and a key that is
  // not finite (spec/tensors.md#checks), naming the KV head, position and
  // channel.
  bool keys = false;
  // Also read values.<n>, float32 [K, L, e] (what capture_attention.py
  // --values writes: KV head g's value of position p at [g, p, :], as the
  // model's cache holds it), and carry them as the scenario's values
  // (spec/tensors.md#the-fields), as `keys` carries keys: value_dim e, and
  // on each step, for each of the scenario's KV heads, the values of the
  // positions the step admits, bit for bit; with or without `keys` (e need
  // not be d). Refused as keys are, naming values.<n>: for a .npy file and
  // step rows, when the file has no values.<n>, for a dtype other than F32,
  // a shape other than [K, L, 1..1024], a K other than the metadata's
  // num_key_value_heads, and a value that is not finite, naming the KV
  // head, position and channel. With both, keys.<n> is checked first
  // (its structure, then, after the weights, every key before any value).
  bool values = false;
  // The memory the import may use, in bytes. nullopt: MemAvailable from
  // /proc/meminfo when readable, else no limit.
  std::optional<uint64_t> memory_available;
};

// Reads `path` (.npy or .safetensors, by extension) and builds the scenario.
absl::StatusOr<v1::Scenario> ImportAttention(const std::string& path,
                                             const ImportOptions& options);

// What ImportAttention would need for `path` and `options`, computed from
// the file's header and the options alone: no weight is read or checked and
// no limit is applied (the structure, the heads and the flags are checked
// as ImportAttention does).
struct ImportSize {
  // Exactly the scenario's ByteSizeLong() (saturated at UINT64_MAX).
  uint64_t scenario_bytes = 0;
  // The input bytes the checks and the copy read (they stay mapped).
  uint64_t input_bytes = 0;
  // An estimate of the scenario in memory: 4 bytes per weight and per
  // key or value float, 128 per row, 192 per step (objects, pointers,
  // allocator headers), the id and 256. ImportAttention refuses input_bytes + message_bytes above the
  // memory available.
  uint64_t message_bytes = 0;
  // The scenario's steps, rows (decode rows and query rows) and weights.
  uint64_t steps = 0;
  uint64_t rows = 0;
  uint64_t weights = 0;
};
absl::StatusOr<ImportSize> MeasureImport(const std::string& path,
                                         const ImportOptions& options);

// The exact serialized size of a scenario ImportAttention builds, from its
// shape: `id_bytes` the id's length, `query_heads` rows per step, a prefill
// step admitting `prefill_admit` positions (0: none) with query rows for
// queries prefill_admit - query_rows .. prefill_admit - 1, then one decode
// step for each query position first_decode .. length - 1 (admit 1, q
// weights per head). Wire format: tag + length varint + payload for every
// message and packed field (spec/kvspec.proto); saturated at UINT64_MAX.
uint64_t ScenarioWireBytes(uint64_t id_bytes, uint32_t query_heads,
                           uint32_t kv_heads, uint64_t prefill_admit,
                           uint64_t query_rows, uint64_t first_decode,
                           uint64_t length);

// One prefill step's shape: it admits `admit` positions, the last end - 1,
// and carries query rows for the queries end - query_rows .. end - 1.
struct PrefillShape {
  uint64_t admit = 0;
  uint64_t end = 0;
  uint64_t query_rows = 0;
  // Column totals (spec/prefill.md#column-totals): 0, none; else the step
  // carries one ColumnTotals of `end` values per head and this total_rows.
  uint64_t total_rows = 0;
};

// The same for any number of prefill steps in order (a chunked prefill),
// then one decode step for each query position first_decode .. length - 1.
// The form above is this with {{prefill_admit, prefill_admit, query_rows}}
// ({} when prefill_admit is 0).
// With head_dim d > 0 the scenario carries keys (ImportOptions::keys):
// head_dim, and on each step kv_heads HeadVectors of admit x d floats; with
// value_dim e > 0 values (ImportOptions::values) the same way with e.
uint64_t ScenarioWireBytes(uint64_t id_bytes, uint32_t query_heads,
                           uint32_t kv_heads,
                           const std::vector<PrefillShape>& prefill,
                           uint64_t first_decode, uint64_t length,
                           uint32_t head_dim = 0, uint32_t value_dim = 0);

// "0,2,5" -> {0, 2, 5}; "" -> {}. Refuses only what is not a list of
// numbers: an empty list, a repeated head and a head out of range are
// refused by ImportAttention, which names the file.
absl::StatusOr<std::vector<uint32_t>> ParseHeadList(absl::string_view text);

// Writes `scenario` to `path` as a binary kvspec.v1.Scenario, serialized
// straight to the file through protobuf's zero-copy FileOutputStream (no
// copy of the bytes in memory), with files::WriteAtomically
// (tools/files/files.h): first to a temporary file beside it, then renamed
// over `path`, so `path` is either the complete new file or untouched.
// Refused before anything is written: a `path` that exists and is not a
// regular file (a FIFO, a symlink, a device such as /dev/null, a
// directory: never replaced), and a `path` that is one of `inputs` under
// any name (same device and inode: the import's input file would be
// destroyed). Messages start with "--output=PATH".
absl::Status WriteScenarioFile(const v1::Scenario& scenario,
                               const std::string& path,
                               const std::vector<std::string>& inputs = {});

}  // namespace kvspec

#endif  // KVSPEC_TOOLS_ATTENTION_IMPORT_ATTENTION_LIB_H_
