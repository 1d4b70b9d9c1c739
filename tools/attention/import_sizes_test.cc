// Tests of tools/attention/import_attention_lib.h: sizes and limits.
// MeasureImport and ScenarioWireBytes give a scenario's exact serialized
// size; a scenario over kMaxScenarioBytes, or an import over the memory
// available, is refused before anything is read, and running out of memory
// is a refusal, not a crash.
#include "tools/attention/import_attention_lib.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_test_util.h"

namespace kvspec {
namespace import_test {
namespace {

TEST(Sizes, TheFormulaIsByteSizeLong) {
  // Matrices: rows cross the 1- and 2-byte length varints (4q >= 128 from
  // q = 32), steps too.
  ExpectExactSize(WriteInput("size1.npy", NpyOf({2, 3, 3}, kExample)), {});
  ExpectExactSize(WriteInput("size2.npy", NpyOf({3, 100, 100},
                                                Uniform(3, 100))),
                  {});
  ImportOptions options;
  options.heads = std::vector<uint32_t>{2};
  options.id = std::string(200, 'x');  // a 2-byte id length
  ExpectExactSize(WriteInput("size3.npy", NpyOf({3, 100, 100},
                                                Uniform(3, 100))),
                  options);
  // Step rows.
  std::string data, header = "{";
  for (int t = 0; t < 40; ++t) {
    std::vector<float> row(2 * (t + 1), 1.0f / (t + 1));
    const std::string bytes = FloatBytes(row);
    if (t > 0) header += ",";
    header += TensorJson(absl::StrCat("step.", t), "F32",
                         {2, static_cast<uint64_t>(t + 1)}, data.size(),
                         data.size() + bytes.size());
    data += bytes;
  }
  ExpectExactSize(WriteInput("size4.safetensors",
                             Safetensors(header + "}", data)),
                  {});
  // Windows, with and without decode steps, all rows or some, one head or
  // several.
  const std::string window = WriteInput(
      "size5.safetensors",
      SafetensorsOf("window.1", {2, 40, 300}, UniformWindow(2, 40, 300)));
  for (std::optional<uint32_t> decode : {std::optional<uint32_t>(),
                                         std::optional<uint32_t>(0),
                                         std::optional<uint32_t>(5),
                                         std::optional<uint32_t>(39)}) {
    for (std::optional<uint32_t> rows :
         {std::optional<uint32_t>(), std::optional<uint32_t>(1)}) {
      options = {};
      options.decode = decode;
      options.window_rows = rows;
      ExpectExactSize(window, options);
      options.heads = std::vector<uint32_t>{1};
      ExpectExactSize(window, options);
    }
  }
  ExpectExactSize(WindowFile("size6.safetensors"), {});
  // Long rows: lengths of 3 and 4 varint bytes (4 x 600000 > 2^21), a
  // prefill step of more than 2^21 bytes.
  const std::string long_window = WriteInput(
      "size7.safetensors",
      SafetensorsOf("window.0", {1, 2, 600000}, UniformWindow(1, 2, 600000)));
  options = {};
  ExpectExactSize(long_window, options);
  options.decode = 1;
  ExpectExactSize(long_window, options);
}

TEST(Sizes, TheFormulaAtScale) {
  // Values worked by hand from the wire format (import_sizes.cc). One
  // head, one decode step of q = 200000 weights: row payload 800000 bytes
  // (varint 3 bytes), row field 1 + 3 + 1 + 3 + 800000 = 800008 (the
  // packed field inside the row: 1 + 3 + 800000 = 800004; the row in the
  // step: 1 + 3 + 800004), step 2 + 800008 = 800010, in the scenario
  // 1 + 3 + 800010 = 800014; query_heads and kv_heads 2 + 2.
  EXPECT_EQ(ScenarioWireBytes(0, 1, 1, 0, 0, 200000, 200001), 800014u + 4u);
  // An empty id is not written; a 3-byte id is 1 + 1 + 3.
  EXPECT_EQ(ScenarioWireBytes(3, 1, 1, 0, 0, 200000, 200001),
            800014u + 4u + 5u);
  // Step 0 of a matrix: admit (2) + one empty row (2), in the scenario
  // 1 + 1 + 4.
  EXPECT_EQ(ScenarioWireBytes(0, 1, 1, 0, 0, 0, 1), 6u + 4u);
  // 32 heads, R = 64, L = 131072: the measurement's window, 1.07 GB.
  const uint64_t window = ScenarioWireBytes(20, 32, 8, 131072, 64, 131072,
                                            131072);
  EXPECT_GT(window, uint64_t{32} * 64 * (131072 - 64) * 4);
  EXPECT_LT(window, kMaxScenarioBytes);
  // R = 128 still fits, by 1 MB (a query row holds q + 1 weights, not L);
  // R = 129 does not. The square at L = 32768, 32 heads: far over, and no
  // overflow at L = 2^32 - 1 with 1024 heads.
  EXPECT_EQ(ScenarioWireBytes(20, 32, 8, 131072, 128, 131072, 131072),
            2146476068u);
  EXPECT_GT(ScenarioWireBytes(20, 32, 8, 131072, 129, 131072, 131072),
            kMaxScenarioBytes);
  EXPECT_GT(ScenarioWireBytes(20, 32, 8, 0, 0, 0, 32768),
            uint64_t{32} * 32768 * 32767 / 2 * 4);
  EXPECT_EQ(ScenarioWireBytes(20, 1024, 8, 0, 0, 0, UINT32_MAX), UINT64_MAX);
}

TEST(Limits, OverTheMessageLimitIsRefusedBeforeAnythingIsRead) {
  // A window [32, 128, 200000]: 3.3 GB of data (a hole), a 3.3 GB scenario.
  const uint64_t data = uint64_t{32} * 128 * 200000 * 4;
  const std::string head = Safetensors(
      "{" + TensorJson("window.4", "F32", {32, 128, 200000}, 0, data) + "}",
      "");
  const std::string path =
      WriteSparse("huge.safetensors", head, head.size() + data);
  const long rss_before = MaxRssKib();
  ImportOptions options;
  options.kv_heads = 8;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  const std::string message(scenario.status().message());
  EXPECT_EQ(scenario.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(StartsWith(
      message, path + ": the scenario would be 3275792416 bytes (3.05 GiB) "
                      "serialized (32 heads, a prefill step of 128 query rows "
                      "per head over a prompt of 200000 positions, 0 decode "
                      "steps), over the 2147483647 bytes (2.00 GiB) limit of "
                      "one protobuf message"))
      << message;
  EXPECT_TRUE(Contains(message, "Ways out: fewer heads (--heads), fewer window "
                                "rows (--window_rows, now 128), fewer decode "
                                "steps (--decode, now 0), or a shorter prompt"))
      << message;
  absl::StatusOr<ImportSize> size = MeasureImport(path, options);
  ASSERT_TRUE(size.ok()) << size.status();
  // 32 heads x (4 x (199873 + ... + 200000) + 128 x 8) + the step's admit
  // (4) and its tag and length (6) + the id (18) + the head counts (4).
  EXPECT_EQ(size->scenario_bytes, 3275792416u);
  // Nothing was read or built: well under the 3.3 GB a read would touch.
  EXPECT_LT(MaxRssKib() - rss_before, 64 * 1024);

  // 64 rows fit: 1.6 GB. Truncated after the header, the file is refused
  // before its size matters.
  const uint64_t fits = uint64_t{32} * 64 * 200000 * 4;
  const std::string header =
      "{" + TensorJson("window.4", "F32", {32, 64, 200000}, 0, fits) + "}";
  EXPECT_EQ(Refusal("truncated.safetensors",
                    Safetensors(header, std::string(1000, '\0'))),
            "tensor window.4: data_offsets [0, 1638400000] run past the end of "
            "the file (1000 bytes of data after the header)");
  const std::string fits_head = Safetensors(header, "");
  absl::StatusOr<ImportSize> fits_size = MeasureImport(
      WriteSparse("fits.safetensors", fits_head, fits_head.size() + fits), {});
  ASSERT_TRUE(fits_size.ok()) << fits_size.status();
  EXPECT_LT(fits_size->scenario_bytes, kMaxScenarioBytes);

  // The square at L = 32768, one head: a 4 GiB .npy (a hole), a scenario of
  // 2^31 bytes and more.
  std::string npy = Npy(NpyDict({1, 32768, 32768}), "");
  const std::string square = WriteSparse(
      "square.npy", npy, npy.size() + uint64_t{32768} * 32768 * 4);
  scenario = ImportAttention(square, {});
  const std::string square_message(scenario.status().message());
  EXPECT_TRUE(Contains(square_message,
                       "serialized (1 head, L = 32768: 536854528 weights per "
                       "head), over the 2147483647 bytes (2.00 GiB) limit"))
      << square_message;
  EXPECT_TRUE(Contains(square_message,
                       "the square's scenario grows as L^2 (L(L-1)/2 weights "
                       "per head), a window's as R x L"))
      << square_message;
  EXPECT_LT(MaxRssKib() - rss_before, 64 * 1024);
}

TEST(Limits, MemoryOverWhatIsAvailableIsRefused) {
  const std::string path = WindowFile("memory.safetensors");
  ImportOptions options;
  options.memory_available = 1000;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  EXPECT_EQ(scenario.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(scenario.status().message(),
            path + ": the import needs about 1450 bytes (0.00 GiB) of memory "
                   "(120 bytes (0.00 GiB) of the input read through its "
                   "mapping + about 1330 bytes (0.00 GiB) for the scenario's "
                   "24 weights in 6 rows) and 1000 bytes (0.00 GiB) is "
                   "available (the memory limit given): import fewer heads "
                   "(--heads), fewer window rows (--window_rows) or decode "
                   "steps (--decode), or free memory");
  // 1330 = 24 weights x 4 + 6 rows x 128 + 1 step x 192 + the id's 18
  // bytes + 256.
  options.memory_available = 1450;
  EXPECT_TRUE(ImportAttention(path, options).ok());
}

// VmSize of this process, in bytes.
uint64_t VmSize() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmSize:", 0) == 0) {
      uint64_t kib = 0;
      std::istringstream(line.substr(7)) >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

// Runs in a child process (a death test): address space for the mapped file
// and one 32 MB row, not two. The import must fail cleanly.
void ImportWithTooLittleAddressSpace(const std::string& path,
                                     uint64_t file_bytes) {
  struct rlimit limit;
  limit.rlim_cur = limit.rlim_max = VmSize() + file_bytes + (48 << 20);
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
  ImportOptions options;
  options.decode = 1;
  options.memory_available = UINT64_MAX;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  const std::string message =
      scenario.ok() ? "accepted" : std::string(scenario.status().message());
  std::fprintf(stderr, "%s\n", message.c_str());
  std::_Exit(scenario.status().code() == absl::StatusCode::kResourceExhausted
                 ? 0
                 : 1);
}

TEST(Limits, OutOfMemoryIsARefusalNotACrash) {
  // One head, R = 2, L = 8M: a 64 MB file; the scenario's two rows are
  // 32 MB each.
  constexpr uint64_t kLength = 8 << 20;
  std::string data(2 * kLength * 4, '\0');
  const std::string one = LittleEndian(Bits(1.0f), 4);
  data.replace((kLength - 2) * 4, 4, one);  // row 0: query L-2 on itself
  data.replace((2 * kLength - 1) * 4, 4, one);
  const std::string path = WriteInput(
      "oom.safetensors",
      Safetensors(Header({TensorJson("window.0", "F32", {1, 2, kLength}, 0,
                                     data.size())}),
                  data));
  data.clear();
  data.shrink_to_fit();
  EXPECT_EXIT(ImportWithTooLittleAddressSpace(path, 2 * kLength * 4),
              ::testing::ExitedWithCode(0),
              "oom.safetensors: out of memory while importing "
              "\\(std::bad_alloc\\)");
}

}  // namespace
}  // namespace import_test
}  // namespace kvspec
