// import_attention: turns one layer's attention, saved from a model run, into
// a kvspec scenario that tools/simulate and the runner read.
//
//   bazel run -c opt //tools:import_attention -- --input=/tmp/window.safetensors
//       --layer=8 --output=/tmp/prompt.pb --kv_heads=8
//   bazel run -c opt //tools:import_attention -- --input=/tmp/window.safetensors
//       --output=/tmp/prompt.pb --kv_heads=8 --window_rows=32 --decode=16
//   bazel run -c opt //tools:import_attention -- --input=/tmp/chunks.safetensors
//       --output=/tmp/chunked.pb --kv_heads=8 --decode=16
//   bazel run -c opt //tools:import_attention -- --input=/tmp/attn.npy
//       --output=/tmp/attn.pb --heads=0,2 --kv_heads=1
//   bazel run -c opt //tools:simulate -- --scenario=/tmp/attn.pb --policy=h2o
//       --params=budget=64
//
// (each command on one line).
//
// Inputs (by extension): a .npy float32 array [heads, L, L], or a
// .safetensors file holding tensors layer.<n> (float32 [heads, L, L]),
// window.<n> (float32 [heads, R, L]: the rows of the prompt's last R
// queries), chunk.<n>.<e> (float32 [heads, m, e]: the rows of the last m
// queries of a prefill chunk ending at e) or step.<t> (float32
// [heads, t + 1], t = 0 .. L-1).
//
// --kv_heads: the model's num_key_value_heads (with --heads, how many of
// the model's KV heads the kept heads use). Left out, it is taken from the
// .safetensors file's __metadata__ num_key_value_heads (capture_attention.py
// records the model's); given, it must agree with the metadata (a
// contradiction is refused, naming both values); without metadata, 1. A
// --heads that takes unequal numbers of heads from the model's KV heads,
// or a KV head's heads apart, is refused when the metadata is there.
//
// A matrix or step rows: step q of the scenario admits position q and
// carries each selected head's row q without its diagonal weight, bit for
// bit.
//
// A window: a prefill scenario (spec/prefill.md). Step 0 admits the first
// P = L - D positions (D = --decode, default 0) and carries, as query rows,
// the rows of its last m queries P-m .. P-1 (m = --window_rows, default
// R - D), each with its diagonal weight (q + 1 weights); then one decode
// step per remaining position q = P .. L-1 admits it and carries row q
// without its diagonal. Requires 1 <= m <= P, m + D <= R, D < L.
//
// Chunks (capture_attention.py --prefill_chunk): a chunked prefill, one
// prefill step per chunk tensor in ascending e, admitting the chunk's
// positions and carrying its rows as query rows (the last m of them with
// --window_rows=m, capped by each chunk's rows); --decode=D takes the last
// chunk's last D positions as decode steps (D below its row count).
// --totals (window layout): also the tensor totals.<n> that
// capture_attention.py --totals writes, carried on the prefill step as
// each head's column totals over its P = L - D queries
// (spec/prefill.md#column-totals), which h2o reads instead of the rows;
// the tensor must hold P columns (capture with --totals_decode D).
// --keys (any layer layout): also the tensor keys.<n> that
// capture_attention.py --keys writes, F32 [KV heads, L, head_dim]: the
// scenario gets head_dim and each step its KV heads' keys of the positions
// it admits (spec/tensors.md), which knorm reads.
// --values (any layer layout, with or without --keys): also the tensor
// values.<n> that capture_attention.py --values writes, F32 [KV heads, L,
// value_dim]: the scenario gets value_dim and each step its KV heads'
// values of the positions it admits, which lagkv reads (with the keys).
// --layout=matrix|window|chunks chooses when a layer has several kinds;
// chunk tensors beside layer.<n> or window.<n> require it.
//
// Before anything big is built, the scenario's exact serialized size is
// checked against protobuf's 2 GiB message limit (INT_MAX bytes), and the
// import's memory against MemAvailable: a refusal gives the figures and the
// ways out. tools/attention/import_attention_lib.h says exactly what is read, checked
// and refused; tools/attention/capture_attention.py writes the .safetensors file from
// a Hugging Face model.
//
// --output is written only over a regular file (or a new one), and never
// over --input: an existing FIFO, symlink, device node (/dev/null) or
// directory, and the input file under another name, are refused before the
// import starts, naming the flag and the path (tools/files/files.h).
//
// Exit status: 0 on success, 1 when the input is refused, does not fit, or
// the output is refused or cannot be written (out of memory included), 2
// for a malformed command line.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "tools/files/files.h"
#include "tools/attention/import_attention_lib.h"

ABSL_FLAG(std::string, input, "",
          "The attention file: .npy (float32 [heads, L, L], C order) or "
          ".safetensors (tensors layer.<n> of float32 [heads, L, L], "
          "window.<n> of float32 [heads, R, L] (the last R queries' rows: a "
          "prefill scenario), chunk.<n>.<e> of float32 [heads, m, e] (each "
          "prefill chunk's last m queries' rows: a chunked prefill, one "
          "prefill step per chunk), or step.<t> of float32 [heads, t + 1]).");
ABSL_FLAG(std::string, output, "",
          "Where to write the binary kvspec.v1.Scenario. Written to a "
          "temporary file beside it, then renamed: never left half-written. "
          "Refused, before the import, when it exists and is not a regular "
          "file (a FIFO, symlink, device or directory is never replaced) or "
          "is the --input file under any name.");
ABSL_FLAG(std::string, layer, "",
          "Which layer's tensors (layer.<n>, window.<n> or chunk.<n>.<e>) of "
          "a .safetensors file to read. Empty: the file's only layer.");
ABSL_FLAG(std::string, layout, "",
          "Which of the layer's tensors to read: matrix (layer.<n>), window "
          "(window.<n>) or chunks (chunk.<n>.<e>). Empty: the layer's only "
          "kind; with both layer.<n> and window.<n>, window.<n> if "
          "--window_rows or --decode is given, layer.<n> otherwise; "
          "chunk.<n>.<e> beside either is refused without --layout.");
ABSL_FLAG(std::string, heads, "all",
          "Comma-separated query heads to keep, in the order given (e.g. "
          "0,2,5), or 'all' for every head in file order.");
ABSL_FLAG(std::string, kv_heads, "",
          "The scenario's kv_heads (spec/heads.md#head-counts): how many of "
          "the model's KV heads the selected heads use (its "
          "num_key_value_heads when every head is kept). Must divide the "
          "number of selected heads. Empty: from the .safetensors file's "
          "__metadata__ num_key_value_heads (capture_attention.py writes "
          "it), else 1. Given, it must agree with that metadata: a "
          "contradiction is refused, naming both values.");
ABSL_FLAG(std::string, id, "",
          "The scenario's id. Empty: the input file's base name.");
ABSL_FLAG(std::string, window_rows, "",
          "window.<n> and chunk.<n>.<e> only: m, how many of the window's R "
          "rows the prefill step carries as query rows (the queries P-m .. "
          "P-1, P = L - decode). Empty: R - decode, every row the decode "
          "steps do not use. 1 <= m <= P and m + decode <= R. Chunks: each "
          "prefill step carries its chunk's last min(m, rows) rows (empty: "
          "every row); m >= 1.");
ABSL_FLAG(std::string, decode, "",
          "window.<n> and chunk.<n>.<e> only: D, how many of the prompt's "
          "last positions become decode steps after the prefill step(s) (one "
          "step each, admitting 1 and carrying its row without the "
          "diagonal). Empty: 0. D < L; chunks: D below the last chunk's row "
          "count.");

ABSL_FLAG(bool, totals, false,
          "window.<n> only: also read totals.<n> (F64 [heads, L - D], "
          "capture_attention.py --totals --totals_decode D) and carry the "
          "selected heads' column totals on the prefill step of L - D "
          "positions, total_rows L - D (spec/prefill.md#column-totals), "
          "for h2o.");

ABSL_FLAG(bool, keys, false,
          "also read keys.<n> (F32 [KV heads, L, head_dim], "
          "capture_attention.py --keys) and carry each step's keys of the "
          "positions it admits, for the scenario's KV heads, with head_dim "
          "(spec/tensors.md), for knorm.");

ABSL_FLAG(bool, values, false,
          "also read values.<n> (F32 [KV heads, L, value_dim], "
          "capture_attention.py --values) and carry each step's values of "
          "the positions it admits, for the scenario's KV heads, with "
          "value_dim (spec/tensors.md), for lagkv (with --keys).");

namespace kvspec {
namespace {

// Under `bazel run` the working directory is the runfiles tree; a relative
// path is the user's, relative to where bazel was run.
std::string UserPath(const std::string& path) {
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir == nullptr || path.empty() || path[0] == '/') return path;
  return std::string(dir) + "/" + path;
}

// --name=text into `value` (nothing when `text` is empty); false, after a
// message, when it is not a number.
bool ParseCount(const char* name, const std::string& text,
                std::optional<uint32_t>& value) {
  if (text.empty()) return true;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(text, &n)) {
    std::fprintf(stderr, "--%s: '%s' is not a non-negative number\n", name,
                 text.c_str());
    return false;
  }
  value = n;
  return true;
}

int Main() {
  const std::string input = UserPath(absl::GetFlag(FLAGS_input));
  const std::string output = UserPath(absl::GetFlag(FLAGS_output));
  if (input.empty() || output.empty()) {
    std::fprintf(stderr, "--input and --output are required (see --help)\n");
    return 2;
  }
  ImportOptions options;
  std::optional<uint32_t> kv_heads;
  if (!ParseCount("kv_heads", absl::GetFlag(FLAGS_kv_heads), kv_heads)) {
    return 2;
  }
  // Not given: the capture's metadata says (else 1).
  options.kv_heads = kv_heads.value_or(1);
  options.kv_heads_from_file = !kv_heads.has_value();
  options.id = absl::GetFlag(FLAGS_id);
  if (const std::string layer = absl::GetFlag(FLAGS_layer); !layer.empty()) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(layer, &n)) {
      std::fprintf(stderr, "--layer: '%s' is not a layer number\n",
                   layer.c_str());
      return 2;
    }
    options.layer = n;
  }
  if (const std::string layout = absl::GetFlag(FLAGS_layout);
      !layout.empty()) {
    if (layout == "matrix") {
      options.layout = TensorLayout::kMatrix;
    } else if (layout == "window") {
      options.layout = TensorLayout::kWindow;
    } else if (layout == "chunks") {
      options.layout = TensorLayout::kChunks;
    } else {
      std::fprintf(stderr,
                   "--layout: '%s' is not matrix, window or chunks\n",
                   layout.c_str());
      return 2;
    }
  }
  options.totals = absl::GetFlag(FLAGS_totals);
  options.keys = absl::GetFlag(FLAGS_keys);
  options.values = absl::GetFlag(FLAGS_values);
  if (!ParseCount("window_rows", absl::GetFlag(FLAGS_window_rows),
                  options.window_rows) ||
      !ParseCount("decode", absl::GetFlag(FLAGS_decode), options.decode)) {
    return 2;
  }
  if (const std::string heads = absl::GetFlag(FLAGS_heads); heads != "all") {
    absl::StatusOr<std::vector<uint32_t>> list = ParseHeadList(heads);
    if (!list.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(list.status().message()).c_str());
      return 2;
    }
    options.heads = *list;
  }

  // The output is checked before the import, which can take minutes and
  // gigabytes, and again when it is written.
  if (absl::Status ok = files::CheckOutput("--output", output, {input});
      !ok.ok()) {
    std::fprintf(stderr, "%s\n", std::string(ok.message()).c_str());
    return 1;
  }
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(input, options);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(scenario.status().message()).c_str());
    return 1;
  }
  if (absl::Status written = WriteScenarioFile(*scenario, output, {input});
      !written.ok()) {
    std::fprintf(stderr, "%s\n", std::string(written.message()).c_str());
    return 1;
  }
  int prefill_steps = 0;
  uint64_t prefill_admitted = 0;
  int query_rows = 0;
  for (const v1::Step& step : scenario->steps()) {
    if (step.queries_size() == 0) break;
    ++prefill_steps;
    prefill_admitted += step.admit();
    query_rows += step.queries_size();
  }
  if (prefill_steps > 1) {
    std::printf(
        "%s: %d steps (%d prefill steps, one per chunk, admitting %llu "
        "positions with %d query rows per head in all, %d decode step(s)), "
        "%u query head(s), %u kv head(s), id '%s'\n",
        output.c_str(), scenario->steps_size(), prefill_steps,
        static_cast<unsigned long long>(prefill_admitted),
        query_rows / static_cast<int>(scenario->query_heads()),
        scenario->steps_size() - prefill_steps, scenario->query_heads(),
        scenario->kv_heads(), scenario->id().c_str());
  } else if (prefill_steps == 1) {
    const v1::Step& prefill = scenario->steps(0);
    std::printf(
        "%s: %d steps (a prefill step admitting %u positions with %d query "
        "rows per head, %d decode step(s)), %u query head(s), %u kv head(s), "
        "id '%s'\n",
        output.c_str(), scenario->steps_size(), prefill.admit(),
        prefill.queries_size() / static_cast<int>(scenario->query_heads()),
        scenario->steps_size() - 1, scenario->query_heads(),
        scenario->kv_heads(), scenario->id().c_str());
  } else {
    std::printf("%s: %d steps, %u query head(s), %u kv head(s), id '%s'\n",
                output.c_str(), scenario->steps_size(),
                scenario->query_heads(), scenario->kv_heads(),
                scenario->id().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Turns one layer's attention saved from a model run into a binary "
      "kvspec.v1.Scenario.\n"
      "  import_attention --input=attn.safetensors --output=attn.pb "
      "[--layer=N] [--heads=0,2] [--kv_heads=K] [--id=NAME] "
      "[--layout=matrix|window|chunks] [--window_rows=M] [--decode=D] "
      "[--totals] [--keys] [--values]\n"
      "  import_attention --input=attn.npy --output=attn.pb");
  absl::ParseCommandLine(argc, argv);
  try {
    return kvspec::Main();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory (std::bad_alloc)\n",
                 absl::GetFlag(FLAGS_input).c_str());
    return 1;
  }
}
