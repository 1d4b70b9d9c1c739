// import_attention: turns one layer's attention, saved from a model run, into
// a kvspec scenario that tools/simulate and the runner read.
//
//   bazel run //tools:import_attention -- --input=/tmp/attn.safetensors
//       --output=/tmp/attn.pb --kv_heads=8
//   bazel run //tools:import_attention -- --input=/tmp/attn.npy
//       --output=/tmp/attn.pb --heads=0,2 --kv_heads=1
//   bazel run //tools:simulate -- --scenario=/tmp/attn.pb --policy=h2o
//       --params=budget=64
//
// (each command on one line).
//
// Inputs (by extension): a .npy float32 array [heads, L, L], or a
// .safetensors file holding tensors layer.<n> (float32 [heads, L, L]) or
// step.<t> (float32 [heads, t + 1], t = 0 .. L-1). Step q of the scenario
// admits position q and carries each selected head's row q without its
// diagonal weight, bit for bit. tools/import_attention_lib.h says exactly
// what is read, checked and refused; tools/capture_attention.py writes the
// .safetensors file from a Hugging Face model.
//
// Exit status: 0 on success, 1 when the input is refused or the output
// cannot be written, 2 for a malformed command line.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "tools/import_attention_lib.h"

ABSL_FLAG(std::string, input, "",
          "The attention file: .npy (float32 [heads, L, L], C order) or "
          ".safetensors (tensors layer.<n> of float32 [heads, L, L], or "
          "step.<t> of float32 [heads, t + 1]).");
ABSL_FLAG(std::string, output, "",
          "Where to write the binary kvspec.v1.Scenario. Written to a "
          "temporary file beside it, then renamed: never left half-written.");
ABSL_FLAG(std::string, layer, "",
          "Which layer.<n> tensor of a .safetensors file to read. Empty: the "
          "file's only layer tensor.");
ABSL_FLAG(std::string, heads, "all",
          "Comma-separated query heads to keep, in the order given (e.g. "
          "0,2,5), or 'all' for every head in file order.");
ABSL_FLAG(uint32_t, kv_heads, 1,
          "The scenario's kv_heads (spec/heads.md#head-counts): the model's "
          "num_key_value_heads for all its heads. Must divide the number of "
          "selected heads.");
ABSL_FLAG(std::string, id, "",
          "The scenario's id. Empty: the input file's base name.");

namespace kvspec {
namespace {

// Under `bazel run` the working directory is the runfiles tree; a relative
// path is the user's, relative to where bazel was run.
std::string UserPath(const std::string& path) {
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (dir == nullptr || path.empty() || path[0] == '/') return path;
  return std::string(dir) + "/" + path;
}

int Main() {
  const std::string input = UserPath(absl::GetFlag(FLAGS_input));
  const std::string output = UserPath(absl::GetFlag(FLAGS_output));
  if (input.empty() || output.empty()) {
    std::fprintf(stderr, "--input and --output are required (see --help)\n");
    return 2;
  }
  ImportOptions options;
  options.kv_heads = absl::GetFlag(FLAGS_kv_heads);
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
  if (const std::string heads = absl::GetFlag(FLAGS_heads); heads != "all") {
    absl::StatusOr<std::vector<uint32_t>> list = ParseHeadList(heads);
    if (!list.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(list.status().message()).c_str());
      return 2;
    }
    options.heads = *list;
  }

  absl::StatusOr<v1::Scenario> scenario = ImportAttention(input, options);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(scenario.status().message()).c_str());
    return 1;
  }
  if (absl::Status written = WriteScenarioFile(*scenario, output);
      !written.ok()) {
    std::fprintf(stderr, "%s\n", std::string(written.message()).c_str());
    return 1;
  }
  std::printf("%s: %d steps, %u query head(s), %u kv head(s), id '%s'\n",
              output.c_str(), scenario->steps_size(), scenario->query_heads(),
              scenario->kv_heads(), scenario->id().c_str());
  return 0;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Turns one layer's attention saved from a model run into a binary "
      "kvspec.v1.Scenario.\n"
      "  import_attention --input=attn.safetensors --output=attn.pb "
      "[--layer=N] [--heads=0,2] [--kv_heads=K] [--id=NAME]\n"
      "  import_attention --input=attn.npy --output=attn.pb");
  absl::ParseCommandLine(argc, argv);
  return kvspec::Main();
}
