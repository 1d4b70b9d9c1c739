// libFuzzer target: the attention importer (tools/attention/import_attention_lib.h)
// refuses any malformed .npy or .safetensors file with a status, never a
// crash, and whatever it accepts is a scenario the harness accepts.
//
// An input is 5 control bytes, then the file:
//   byte 0   bit 0: the file's name ends in .safetensors (1) or .npy (0)
//   byte 1   bit 7: --layer given, = bits 0-1; bits 4-5: --layout
//            (0: not given, 1 matrix, 2 window, 3 chunks); bit 3:
//            --totals; bit 2: --keys; bit 6: --values
//   byte 2   bit 7: --heads given, the heads of bits 0-3 (head i when bit i
//            is set), in descending order when bit 6 is set;
//            bits 4-5: --kv_heads 1, 2, 4 or 0
//   byte 3   bit 7: --window_rows given, = bits 0-6
//   byte 4   bit 7: --decode given, = bits 0-6
// (missing control bytes are 0). The file is written to /dev/shm and
// imported three times: with no option, with every option the control
// bytes give (and an id), and with those but no window flags (--layout
// kept). Every import
// has ImportOptions::memory_available = 256 MiB, so a header that claims a
// huge tensor is refused by the memory check before anything is allocated.
//
// Each accepted import is checked against its promises: MeasureImport gives
// exactly its serialized size and its step count, and, for a small
// scenario, the harness runs it through `full` without a refusal (every
// row has the right length and every weight is accepted), and, when it
// carries keys, through `knorm` (every step's keys have the shape and
// values spec/tensors.md#checks asks), and, when it carries keys and
// values, through `lagkv` (the same for both; refused, INVALID_HEADS before
// the first step, exactly when head_dim or value_dim is below lagkv's 2).
// Built and run by tools/fuzz.sh.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_attention_lib.h"

namespace {

constexpr size_t kControlBytes = 5;
constexpr uint64_t kMemory = uint64_t{256} << 20;
constexpr uint64_t kMaxRunWeights = uint64_t{1} << 16;

const std::string& Directory() {
  static const std::string* dir = [] {
    auto* d =
        new std::string(absl::StrFormat("/dev/shm/kvspec-fuzz-%d", getpid()));
    mkdir(d->c_str(), 0700);
    return d;
  }();
  return *dir;
}

[[noreturn]] void Fail(const std::string& path,
                       const kvspec::ImportOptions& options,
                       const std::string& what) {
  const char* const layouts[] = {"matrix", "window", "chunks"};
  std::fprintf(stderr,
               "%s: %s (layer %s, layout %s, %s heads, kv_heads %u, "
               "window_rows %s, decode %s%s%s%s)\n",
               path.c_str(), what.c_str(),
               options.layer ? std::to_string(*options.layer).c_str() : "-",
               options.layout ? layouts[static_cast<int>(*options.layout)]
                              : "-",
               options.heads ? std::to_string(options.heads->size()).c_str()
                             : "all",
               options.kv_heads,
               options.window_rows
                   ? std::to_string(*options.window_rows).c_str()
                   : "-",
               options.decode ? std::to_string(*options.decode).c_str() : "-",
               options.totals ? ", totals" : "", options.keys ? ", keys" : "",
               options.values ? ", values" : "");
  std::abort();
}

void ImportAndCheck(const std::string& path,
                    const kvspec::ImportOptions& options) {
  absl::StatusOr<kvspec::v1::Scenario> scenario =
      kvspec::ImportAttention(path, options);
  if (!scenario.ok()) {
    if (scenario.status().message().rfind(path, 0) != 0) {
      Fail(path, options, "a refusal that does not start with the path: " +
                              std::string(scenario.status().message()));
    }
    return;
  }
  absl::StatusOr<kvspec::ImportSize> size =
      kvspec::MeasureImport(path, options);
  if (!size.ok()) {
    Fail(path, options, "imported, but MeasureImport refuses: " +
                            std::string(size.status().message()));
  }
  if (size->scenario_bytes != scenario->ByteSizeLong()) {
    Fail(path, options,
         absl::StrFormat("MeasureImport says %d bytes, the scenario is %d",
                         size->scenario_bytes, scenario->ByteSizeLong()));
  }
  if (size->steps != static_cast<uint64_t>(scenario->steps_size())) {
    Fail(path, options,
         absl::StrFormat("MeasureImport says %d steps, the scenario has %d",
                         size->steps, scenario->steps_size()));
  }
  if (size->weights > kMaxRunWeights) return;
  const kvspec::RunResult result =
      kvspec::RunScenario({"full", {}}, kvspec::FromProto(*scenario));
  if (!result.refusal.ok()) {
    Fail(path, options,
         absl::StrFormat("the harness refuses the imported scenario at step "
                         "%d: %s",
                         result.refused_step, result.refusal.message()));
  }
  if (scenario->has_head_dim()) {
    const kvspec::RunResult knorm = kvspec::RunScenario(
        {"knorm", {{"budget", 2}}}, kvspec::FromProto(*scenario));
    if (!knorm.refusal.ok()) {
      Fail(path, options,
           absl::StrFormat("knorm refuses the imported scenario's keys at "
                           "step %d: %s",
                           knorm.refused_step, knorm.refusal.message()));
    }
  }
  if (!scenario->has_head_dim() || !scenario->has_value_dim()) return;
  // spec/policies/lagkv.md: sinks 1 and lag 2, so that five kept positions
  // make two partitions, one judged.
  const kvspec::RunResult lagkv = kvspec::RunScenario(
      {"lagkv", {{"budget", 2}, {"sinks", 1}, {"lag", 2}}},
      kvspec::FromProto(*scenario));
  const bool narrow = scenario->head_dim() < 2 || scenario->value_dim() < 2;
  if (!narrow && !lagkv.refusal.ok()) {
    Fail(path, options,
         absl::StrFormat("lagkv refuses the imported scenario's keys and "
                         "values at step %d: %s",
                         lagkv.refused_step, lagkv.refusal.message()));
  }
  const bool heads_refusal = kvspec::CategoryOf(lagkv.refusal) ==
                                 kvspec::ErrorCategory::kInvalidHeads &&
                             lagkv.refused_step == -1;
  if (narrow && !heads_refusal) {
    Fail(path, options,
         absl::StrFormat("lagkv over head_dim %d and value_dim %d: not "
                         "refused INVALID_HEADS before the first step (step "
                         "%d: %s)",
                         scenario->head_dim(), scenario->value_dim(),
                         lagkv.refused_step, lagkv.refusal.message()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t control[kControlBytes] = {};
  const size_t given = size < kControlBytes ? size : kControlBytes;
  for (size_t i = 0; i < given; ++i) control[i] = data[i];
  const std::string path =
      Directory() + ((control[0] & 1) ? "/attention.safetensors" : "/attention.npy");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + given),
              static_cast<std::streamsize>(size - given));
  }

  kvspec::ImportOptions defaults;
  defaults.memory_available = kMemory;
  ImportAndCheck(path, defaults);

  kvspec::ImportOptions options = defaults;
  if (control[1] & 0x80) options.layer = control[1] & 3;
  const kvspec::TensorLayout layouts[] = {kvspec::TensorLayout::kMatrix,
                                          kvspec::TensorLayout::kWindow,
                                          kvspec::TensorLayout::kChunks};
  if (const int layout = (control[1] >> 4) & 3; layout != 0) {
    options.layout = layouts[layout - 1];
  }
  if (control[2] & 0x80) {
    std::vector<uint32_t> heads;
    for (uint32_t h = 0; h < 4; ++h) {
      if (control[2] & (1u << h)) heads.push_back(h);
    }
    if (control[2] & 0x40) heads.assign(heads.rbegin(), heads.rend());
    options.heads = heads;
  }
  const uint32_t kv_heads[] = {1, 2, 4, 0};
  options.kv_heads = kv_heads[(control[2] >> 4) & 3];
  options.id = "fuzz";
  kvspec::ImportOptions no_window = options;
  if (control[3] & 0x80) options.window_rows = control[3] & 0x7F;
  if (control[4] & 0x80) options.decode = control[4] & 0x7F;
  options.totals = (control[1] & 0x08) != 0;  // totals.<n> beside a window
  options.keys = (control[1] & 0x04) != 0;    // keys.<n> beside any layout
  options.values = (control[1] & 0x40) != 0;  // values.<n> beside any layout
  no_window.keys = options.keys;
  no_window.values = options.values;
  ImportAndCheck(path, options);
  ImportAndCheck(path, no_window);
  return 0;
}
