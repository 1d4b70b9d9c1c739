// import_attention: turns one layer's attention, saved from a model run, into
// a kvspec scenario (a binary kvspec.v1.Scenario, spec/kvspec.proto).
//
// The input is one layer's causal attention A[h, q, k]: the weight query
// position q pays to key position k, for each query head h (softmax rows of
// an eager attention, so A[h, q, k] is 0 for every k > q). It comes in one of
// two layouts:
//
//   matrix     one float32 array [heads, L, L]: a .npy file, or a tensor
//              `layer.<n>` of a .safetensors file;
//   step rows  .safetensors tensors `step.<t>`, t = 0 .. L-1, each float32
//              [heads, t + 1]: the query of step t over keys 0..t.
//
// The scenario has one step per query position q. Step q admits position q
// and carries, for each selected head h, the full-cache row A[h, q, 0..q-1]:
// row q WITHOUT its diagonal weight A[h, q, q], because in kvspec a step's
// query never attends to its own position (spec/harness.md#the-decode-step).
// Step 0's rows are present and empty. Weights are copied bit for bit: no
// renormalization, no conversion (spec/harness.md#what-a-policy-sees).
//
// Every weight the scenario carries must be accepted by
// spec/harness.md#attention-weights (finite, sign bit clear: no NaN, no inf,
// no negative number, no -0.0), and every weight above the diagonal
// (k > q, matrix layout only) must be zero; otherwise the file is refused.
// The diagonal weights and the unselected heads' weights below the diagonal
// are not carried and not checked.
//
// Every refusal is an absl::Status whose message starts with the input path
// and names the problem, e.g.
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
#ifndef KVSPEC_TOOLS_IMPORT_ATTENTION_LIB_H_
#define KVSPEC_TOOLS_IMPORT_ATTENTION_LIB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spec/kvspec.pb.h"

namespace kvspec {

struct ImportOptions {
  // Which `layer.<n>` tensor of a .safetensors file to read. nullopt: the
  // file's only layer tensor (refused when it has several). Refused for a
  // .npy file and for a file of step rows.
  std::optional<uint32_t> layer;
  // The query heads to keep, in the order given (the scenario's head i is
  // the file's head heads[i]). nullopt: every head, in file order. Each must
  // be below the file's head count and appear once; an empty list is
  // refused.
  std::optional<std::vector<uint32_t>> heads;
  // The scenario's kv_heads (spec/heads.md#head-counts); it must divide the
  // number of selected heads.
  uint32_t kv_heads = 1;
  // The scenario's id. Empty: the input file's base name.
  std::string id;
};

// Reads `path` (.npy or .safetensors, by extension) and builds the scenario.
absl::StatusOr<v1::Scenario> ImportAttention(const std::string& path,
                                             const ImportOptions& options);

// "0,2,5" -> {0, 2, 5}; "" -> {}. Refuses only what is not a list of
// numbers: an empty list, a repeated head and a head out of range are
// refused by ImportAttention, which names the file.
absl::StatusOr<std::vector<uint32_t>> ParseHeadList(absl::string_view text);

// Writes `scenario` to `path` as a binary kvspec.v1.Scenario: first to a
// temporary file beside it, then renamed over `path`, so `path` is either
// the complete new file or untouched.
absl::Status WriteScenarioFile(const v1::Scenario& scenario,
                               const std::string& path);

}  // namespace kvspec

#endif  // KVSPEC_TOOLS_IMPORT_ATTENTION_LIB_H_
