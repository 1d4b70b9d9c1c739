// Tests of tools/attention/import_attention_lib.h. Every input file is built here byte
// by byte (the .npy and .safetensors layouts written out in full) and
// written to the test's temporary directory, so the test needs no NumPy and
// no model.
#include "tools/attention/import_attention_lib.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"

namespace kvspec {
namespace {

// (Debian's GoogleTest package has no gMock: plain predicates instead.)
bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kSubnormal = std::numeric_limits<float>::denorm_min();

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// ---------------------------------------------------------------------------
// Building files.

std::string LittleEndian(uint64_t value, int width) {
  std::string bytes;
  for (int i = 0; i < width; ++i) bytes += static_cast<char>(value >> (8 * i));
  return bytes;
}

std::string FloatBytes(const std::vector<float>& values) {
  std::string bytes;
  for (float v : values) bytes += LittleEndian(Bits(v), 4);
  return bytes;
}

// A .npy file: magic, version, header length, the dict padded with spaces
// to a multiple of 64 and ended by '\n', then the data.
std::string Npy(const std::string& dict, const std::string& data,
                int major = 1) {
  const int length_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((10 + (length_bytes - 2) + header.size() + 1) % 64 != 0) {
    header += ' ';
  }
  header += '\n';
  return std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0' +
         LittleEndian(header.size(), length_bytes) + header + data;
}

std::string NpyDict(const std::vector<uint64_t>& shape,
                    const std::string& descr = "<f4",
                    bool fortran = false) {
  std::string tuple = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) tuple += ",";
  return absl::StrCat("{'descr': '", descr, "', 'fortran_order': ",
                      fortran ? "True" : "False", ", 'shape': (", tuple,
                      "), }");
}

std::string NpyOf(const std::vector<uint64_t>& shape,
                  const std::vector<float>& values, int major = 1) {
  return Npy(NpyDict(shape), FloatBytes(values), major);
}

// One entry of a safetensors header.
std::string TensorJson(const std::string& name, const std::string& dtype,
                       const std::vector<uint64_t>& shape, uint64_t begin,
                       uint64_t end) {
  return absl::StrCat("\"", name, "\":{\"dtype\":\"", dtype,
                      "\",\"shape\":[", absl::StrJoin(shape, ","),
                      "],\"data_offsets\":[", begin, ",", end, "]}");
}

// A .safetensors file: the header's length (8 bytes, little-endian), the
// header padded with spaces to a multiple of 8, then the data.
std::string Safetensors(std::string header, const std::string& data) {
  while (header.size() % 8 != 0) header += ' ';
  return LittleEndian(header.size(), 8) + header + data;
}

// A header's JSON from its entries: {entry,entry,...}.
std::string Header(const std::vector<std::string>& entries) {
  return "{" + absl::StrJoin(entries, ",") + "}";
}

// A safetensors file holding one F32 tensor `name` of `shape`.
std::string SafetensorsOf(const std::string& name,
                          const std::vector<uint64_t>& shape,
                          const std::vector<float>& values) {
  const std::string data = FloatBytes(values);
  return Safetensors(
      "{" + TensorJson(name, "F32", shape, 0, data.size()) + "}", data);
}

std::string WriteInput(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  EXPECT_TRUE(out.good()) << path;
  return path;
}

// ---------------------------------------------------------------------------
// The hand-worked example: 2 heads, L = 3, A[h][q][k].
//
//   head 0            head 1
//   1     0     0     1     0    0
//   0.25  0.75  0     0.5   0.5  0
//   0.125 0.5   0.375 1e-45 +0.0 1
//
// The scenario: step 0 has two empty rows; step 1 carries row 1 without its
// diagonal: [0.25] and [0.5]; step 2: [0.125, 0.5] and [1e-45, +0.0].
const std::vector<float> kExample = {
    1, 0, 0, 0.25f, 0.75f, 0, 0.125f, 0.5f, 0.375f,   // head 0
    1, 0, 0, 0.5f, 0.5f, 0, kSubnormal, 0.0f, 1,      // head 1
};

// The rows of one step, head by head, whichever field carries them.
std::vector<std::vector<uint32_t>> RowBits(const v1::Step& step) {
  std::vector<std::vector<uint32_t>> rows;
  auto add = [&rows](const v1::AttentionRow& row) {
    std::vector<uint32_t> bits;
    for (float w : row.weights()) bits.push_back(Bits(w));
    rows.push_back(bits);
  };
  if (step.has_attention()) add(step.attention());
  for (const v1::AttentionRow& row : step.heads()) add(row);
  return rows;
}

using Rows = std::vector<std::vector<uint32_t>>;

TEST(ImportAttention, CarriesTheOffDiagonalCausalWeightsBitForBit) {
  const std::string path =
      WriteInput("example.npy", NpyOf({2, 3, 3}, kExample));
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->id(), "example.npy");
  EXPECT_EQ(scenario->query_heads(), 2u);
  EXPECT_EQ(scenario->kv_heads(), 1u);
  EXPECT_FALSE(scenario->has_trace());
  ASSERT_EQ(scenario->steps_size(), 3);
  for (const v1::Step& step : scenario->steps()) {
    EXPECT_EQ(step.admit(), 1u);
    EXPECT_FALSE(step.has_attention());  // several heads: rows in `heads`
    EXPECT_EQ(step.heads_size(), 2);
  }
  EXPECT_EQ(RowBits(scenario->steps(0)), (Rows{{}, {}}));
  EXPECT_EQ(RowBits(scenario->steps(1)),
            (Rows{{Bits(0.25f)}, {Bits(0.5f)}}));
  EXPECT_EQ(RowBits(scenario->steps(2)),
            (Rows{{Bits(0.125f), Bits(0.5f)}, {Bits(kSubnormal), 0u}}));
}

TEST(ImportAttention, TheHarnessAcceptsTheScenario) {
  const std::string path =
      WriteInput("harness.npy", NpyOf({2, 3, 3}, kExample));
  ImportOptions options;
  options.kv_heads = 2;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const RunResult result = RunScenario(
      {"h2o", {{"budget", 1}, {"recent_window", 0}}}, FromProto(*scenario));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 3u);
  ASSERT_EQ(result.steps[2].sets.size(), 2u);  // granularity kv_head, 2 sets
  // Each set keeps one position. At step 1, position 0 has been observed
  // (0.25 by head 0, 0.5 by head 1) and the fresh position 1 scores +0.0:
  // 1 goes. At step 2 the fresh position 2 goes likewise.
  EXPECT_EQ(result.steps[1].sets[0].victims, std::vector<Position>{1});
  EXPECT_EQ(result.steps[1].sets[1].victims, std::vector<Position>{1});
  EXPECT_EQ(result.steps[2].sets[0].victims, std::vector<Position>{2});
}

TEST(ImportAttention, SelectsHeadsInTheGivenOrder) {
  const std::string path = WriteInput("select.npy", NpyOf({2, 3, 3}, kExample));
  ImportOptions options;
  options.heads = std::vector<uint32_t>{1, 0};
  options.kv_heads = 2;
  options.id = "swapped";
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->id(), "swapped");
  EXPECT_EQ(scenario->query_heads(), 2u);
  EXPECT_EQ(scenario->kv_heads(), 2u);
  EXPECT_EQ(RowBits(scenario->steps(2)),
            (Rows{{Bits(kSubnormal), 0u}, {Bits(0.125f), Bits(0.5f)}}));
}

TEST(ImportAttention, OneHeadGoesInAttention) {
  const std::string path = WriteInput("one.npy", NpyOf({2, 3, 3}, kExample));
  ImportOptions options;
  options.heads = std::vector<uint32_t>{1};
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->query_heads(), 1u);
  EXPECT_EQ(scenario->kv_heads(), 1u);
  for (const v1::Step& step : scenario->steps()) {
    EXPECT_TRUE(step.has_attention());  // present, even when empty
    EXPECT_EQ(step.heads_size(), 0);
  }
  EXPECT_EQ(RowBits(scenario->steps(0)), (Rows{{}}));
  EXPECT_EQ(RowBits(scenario->steps(1)), (Rows{{Bits(0.5f)}}));
  EXPECT_EQ(RowBits(scenario->steps(2)), (Rows{{Bits(kSubnormal), 0u}}));
}

TEST(ImportAttention, KvHeadsMustDivideTheSelectedHeads) {
  const std::string path = WriteInput("kv.npy", NpyOf({2, 3, 3}, kExample));
  ImportOptions options;
  options.kv_heads = 3;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  EXPECT_EQ(scenario.status().message(),
            path + ": --kv_heads=3 does not divide the 2 selected query "
                   "heads (spec/heads.md#head-counts)");
  options.kv_heads = 0;
  EXPECT_EQ(ImportAttention(path, options).status().message(),
            path + ": --kv_heads must be at least 1");
  options.kv_heads = 2;
  options.heads = std::vector<uint32_t>{0};
  EXPECT_EQ(ImportAttention(path, options).status().message(),
            path + ": --kv_heads=2 does not divide the 1 selected query "
                   "head (spec/heads.md#head-counts)");
}

TEST(ImportAttention, NpyVersionsTwoAndThree) {
  const std::string one = WriteInput("v1.npy", NpyOf({2, 3, 3}, kExample, 1));
  const std::string two = WriteInput("v2.npy", NpyOf({2, 3, 3}, kExample, 2));
  const std::string three =
      WriteInput("v3.npy", NpyOf({2, 3, 3}, kExample, 3));
  ImportOptions options;
  options.id = "same";
  const std::string want = ImportAttention(one, options)->SerializeAsString();
  EXPECT_EQ(ImportAttention(two, options)->SerializeAsString(), want);
  EXPECT_EQ(ImportAttention(three, options)->SerializeAsString(), want);
}

// The example as a safetensors matrix and as step rows (step.t: [2, t + 1],
// the lower triangle of row t, diagonal included).
TEST(ImportAttention, StepRowsGiveTheSameScenarioAsTheMatrix) {
  const std::string matrix = WriteInput(
      "matrix.safetensors", SafetensorsOf("layer.0", {2, 3, 3}, kExample));
  const std::vector<float> step0 = {1, 1};
  const std::vector<float> step1 = {0.25f, 0.75f, 0.5f, 0.5f};
  const std::vector<float> step2 = {0.125f, 0.5f, 0.375f,
                                    kSubnormal, 0.0f, 1};
  // Out of order in the header and the data, on purpose.
  const std::string data = FloatBytes(step2) + FloatBytes(step0) +
                           FloatBytes(step1);
  const std::string header =
      "{" + TensorJson("step.2", "F32", {2, 3}, 0, 24) + "," +
      TensorJson("step.0", "F32", {2, 1}, 24, 32) + "," +
      TensorJson("step.1", "F32", {2, 2}, 32, 48) +
      ",\"__metadata__\":{\"source\":\"hand\"}}";
  const std::string steps =
      WriteInput("steps.safetensors", Safetensors(header, data));
  ImportOptions options;
  options.id = "same";
  absl::StatusOr<v1::Scenario> from_matrix = ImportAttention(matrix, options);
  absl::StatusOr<v1::Scenario> from_steps = ImportAttention(steps, options);
  ASSERT_TRUE(from_matrix.ok()) << from_matrix.status();
  ASSERT_TRUE(from_steps.ok()) << from_steps.status();
  EXPECT_EQ(from_steps->SerializeAsString(), from_matrix->SerializeAsString());
  const std::string npy =
      WriteInput("same.npy", NpyOf({2, 3, 3}, kExample));
  EXPECT_EQ(ImportAttention(npy, options)->SerializeAsString(),
            from_matrix->SerializeAsString());
}

TEST(ImportAttention, ChoosesTheLayer) {
  std::vector<float> other = kExample;
  other[3] = 0.0625f;  // head 0, row 1, column 0
  const std::string data = FloatBytes(kExample) + FloatBytes(other);
  const std::string header =
      "{\"__metadata__\":{\"model\":\"C:\\\\models\\\\tiny \\u00e9\\ud83d"
      "\\ude00\",\"layer\":\"3\"}," +
      TensorJson("layer.0", "F32", {2, 3, 3}, 0, 72) + "," +
      TensorJson("layer.3", "F32", {2, 3, 3}, 72, 144) + "}";
  const std::string path =
      WriteInput("layers.safetensors", Safetensors(header, data));
  ImportOptions options;
  options.layer = 3;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(RowBits(scenario->steps(1)),
            (Rows{{Bits(0.0625f)}, {Bits(0.5f)}}));

  options.layer = 5;
  EXPECT_EQ(ImportAttention(path, options).status().message(),
            path + ": --layer=5: the file has no tensor layer.5 (it holds "
                   "layer.0, layer.3)");
  options.layer.reset();
  EXPECT_EQ(ImportAttention(path, options).status().message(),
            path + ": the file holds 2 layers (layer.0, layer.3): choose one "
                   "with --layer");
  // One layer: --layer may be left out.
  const std::string single = WriteInput(
      "single.safetensors", SafetensorsOf("layer.7", {2, 3, 3}, kExample));
  EXPECT_TRUE(ImportAttention(single, options).ok());
}

TEST(ImportAttention, OutputFileIsWrittenWhole) {
  const std::string path = WriteInput("write.npy", NpyOf({2, 3, 3}, kExample));
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, {});
  ASSERT_TRUE(scenario.ok());
  const std::string out = ::testing::TempDir() + "/write.pb";
  ASSERT_TRUE(WriteScenarioFile(*scenario, out).ok());
  std::ifstream in(out, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  v1::Scenario read;
  ASSERT_TRUE(read.ParseFromString(bytes.str()));
  EXPECT_EQ(read.SerializeAsString(), scenario->SerializeAsString());

  const std::string nowhere = ::testing::TempDir() + "/no/such/dir/x.pb";
  const absl::Status status = WriteScenarioFile(*scenario, nowhere);
  EXPECT_TRUE(StartsWith(std::string(status.message()),
                         "--output=" + nowhere +
                             ": cannot create a temporary file"))
      << status;
  struct stat info;
  EXPECT_NE(stat(nowhere.c_str(), &info), 0);
}

// A fresh directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name + "-XXXXXX";
  EXPECT_NE(mkdtemp(&path[0]), nullptr) << path;
  return path;
}

// The names in `dir` that contain ".tmp-" (WriteScenarioFile's temporary
// files).
std::vector<std::string> TempFiles(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return {"cannot list " + dir};
  while (const dirent* entry = readdir(d)) {
    if (Contains(entry->d_name, ".tmp-")) names.push_back(entry->d_name);
  }
  closedir(d);
  return names;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The output is written only over a regular file: an existing FIFO, symlink
// or device node is refused and left as it was (issue 33: the temporary
// file used to be renamed over whatever the path named).
TEST(WriteScenarioFile, RefusesAFifoAndLeavesIt) {
  const std::string dir = FreshDir("fifo");
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(WriteInput("fifo.npy", NpyOf({2, 3, 3}, kExample)), {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string fifo = dir + "/out.pb";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(WriteScenarioFile(*scenario, fifo).message(),
            "--output=" + fifo +
                " exists and is a FIFO: refusing to replace it (give the path "
                "of a regular file, or of one that does not exist yet)");
  struct stat info;
  ASSERT_EQ(lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(TempFiles(dir), std::vector<std::string>{});
}

TEST(WriteScenarioFile, RefusesASymlinkAndLeavesItsTarget) {
  const std::string dir = FreshDir("symlink");
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(WriteInput("link.npy", NpyOf({2, 3, 3}, kExample)), {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string target = dir + "/target.pb";
  const std::string link = dir + "/link.pb";
  std::ofstream(target, std::ios::binary) << "keep";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(WriteScenarioFile(*scenario, link).message(),
            "--output=" + link +
                " exists and is a symbolic link: refusing to replace it (give "
                "the path of a regular file, or of one that does not exist "
                "yet)");
  struct stat info;
  ASSERT_EQ(lstat(link.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode)) << "the symlink was replaced";
  EXPECT_EQ(ReadAll(target), "keep");
  EXPECT_EQ(TempFiles(dir), std::vector<std::string>{});
}

// (As root the old code replaced the machine's /dev/null with the
// scenario.)
TEST(WriteScenarioFile, RefusesADeviceAndLeavesIt) {
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(WriteInput("null.npy", NpyOf({2, 3, 3}, kExample)), {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(WriteScenarioFile(*scenario, "/dev/null").message(),
            "--output=/dev/null exists and is a character device: refusing "
            "to replace it (give the path of a regular file, or of one that "
            "does not exist yet)");
  struct stat info;
  ASSERT_EQ(lstat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode)) << "/dev/null is no longer a device";
  EXPECT_EQ(TempFiles("/dev"), std::vector<std::string>{});
}

// The output is the input under another name ("dir/./x.npy"): refused, and
// the input is left whole (it used to be replaced by the scenario).
TEST(WriteScenarioFile, RefusesTheInputUnderAnotherName) {
  const std::string dir = FreshDir("input");
  const std::string bytes = NpyOf({2, 3, 3}, kExample);
  const std::string input = dir + "/capture.npy";
  std::ofstream(input, std::ios::binary) << bytes;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(input, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string alias = dir + "/./capture.npy";
  EXPECT_EQ(WriteScenarioFile(*scenario, alias, {input}).message(),
            "--output=" + alias + " is the input " + input +
                ": writing it would destroy the input");
  EXPECT_EQ(ReadAll(input), bytes) << "the input was overwritten";
  EXPECT_EQ(TempFiles(dir), std::vector<std::string>{});
  // A hard link to it is the same file too.
  const std::string hard = dir + "/hard.pb";
  ASSERT_EQ(link(input.c_str(), hard.c_str()), 0);
  EXPECT_EQ(WriteScenarioFile(*scenario, hard, {input}).message(),
            "--output=" + hard + " is the input " + input +
                ": writing it would destroy the input");
  EXPECT_EQ(ReadAll(input), bytes);
  // Another file is written as usual.
  EXPECT_TRUE(WriteScenarioFile(*scenario, dir + "/out.pb", {input}).ok());
  EXPECT_EQ(ReadAll(dir + "/out.pb"), scenario->SerializeAsString());
}

TEST(ParseHeadList, Numbers) {
  EXPECT_EQ(*ParseHeadList("0,2,5"), (std::vector<uint32_t>{0, 2, 5}));
  EXPECT_TRUE(ParseHeadList("")->empty());
  EXPECT_TRUE(Contains(std::string(ParseHeadList("0,x").status().message()),
                       "'x' is not a head number"));
  EXPECT_FALSE(ParseHeadList("0,,1").ok());
  EXPECT_FALSE(ParseHeadList("-1").ok());
}

// ---------------------------------------------------------------------------
// Refusals. Each message starts with the file's path.

// The message ImportAttention refuses `bytes` with, written as `name`.
std::string Refusal(const std::string& name, const std::string& bytes,
                    const ImportOptions& options = {}) {
  const std::string path = WriteInput(name, bytes);
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  if (scenario.ok()) return "accepted";
  const std::string message(scenario.status().message());
  EXPECT_TRUE(StartsWith(message, path + ": ")) << message;
  return message.substr(path.size() + 2);
}

// A [heads, L, L] causal matrix whose rows are uniform over keys 0..q.
std::vector<float> Uniform(int heads, int length) {
  std::vector<float> values;
  for (int h = 0; h < heads; ++h) {
    for (int q = 0; q < length; ++q) {
      for (int k = 0; k < length; ++k) {
        values.push_back(k <= q ? 1.0f / (q + 1) : 0.0f);
      }
    }
  }
  return values;
}

void Set(std::vector<float>& values, int length, int h, int q, int k,
         float value) {
  values[(h * length + q) * length + k] = value;
}

// A layer.0 matrix of `heads` uniform causal heads over L = 3, with
// __metadata__ `metadata` (a JSON object).
std::string MatrixWithMetadata(const std::string& name, int heads,
                               const std::string& metadata) {
  const std::string data = FloatBytes(Uniform(heads, 3));
  return WriteInput(
      name, Safetensors("{" +
                            TensorJson("layer.0", "F32",
                                       {static_cast<uint64_t>(heads), 3, 3},
                                       0, data.size()) +
                            ",\"__metadata__\":" + metadata + "}",
                        data));
}

// The scenario's kv_heads, or the refusal's message after the path.
std::string KvHeadsOf(const std::string& path, const ImportOptions& options) {
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  if (scenario.ok()) return absl::StrCat(scenario->kv_heads());
  const std::string message(scenario.status().message());
  EXPECT_TRUE(StartsWith(message, path + ": ")) << message;
  return message.substr(path.size() + 2);
}

// Without --kv_heads the scenario's kv_heads comes from the capture's
// __metadata__ "num_key_value_heads" (issue 33: it was 1 whatever the model
// had, so positions per KV head silently differed from kvpress's); a
// --kv_heads that contradicts it is refused, naming both values.
TEST(KvHeads, FromTheMetadataWhenNotGiven) {
  const std::string path = MatrixWithMetadata(
      "kv3.safetensors", 6,
      R"({"num_attention_heads":"6","num_key_value_heads":"3"})");
  ImportOptions options;
  options.kv_heads_from_file = true;
  EXPECT_EQ(KvHeadsOf(path, options), "3");
  // Selected heads keep their KV heads (2 query heads each: 0-1, 2-3, 4-5).
  options.heads = std::vector<uint32_t>{2, 3};
  EXPECT_EQ(KvHeadsOf(path, options), "1");
  options.heads = std::vector<uint32_t>{1, 0, 4, 5};
  EXPECT_EQ(KvHeadsOf(path, options), "2");
  options.heads = std::vector<uint32_t>{0, 2, 4};
  EXPECT_EQ(KvHeadsOf(path, options), "3");
  options.heads = std::vector<uint32_t>{5};
  EXPECT_EQ(KvHeadsOf(path, options), "1");
  // A selection no kv_heads groups as the model does.
  options.heads = std::vector<uint32_t>{0, 1, 2};
  EXPECT_EQ(KvHeadsOf(path, options),
            "--heads=0,1,2 does not keep the model's KV heads: __metadata__ "
            "says num_key_value_heads = \"3\", so each of its 3 KV heads "
            "serves 2 consecutive query heads of the 6, and a scenario's KV "
            "heads serve equal runs of its heads: select as many heads of "
            "each KV head used, each KV head's heads together");
  options.heads = std::vector<uint32_t>{0, 2, 1, 3};
  EXPECT_EQ(KvHeadsOf(path, options),
            "--heads=0,2,1,3 does not keep the model's KV heads: __metadata__ "
            "says num_key_value_heads = \"3\", so each of its 3 KV heads "
            "serves 2 consecutive query heads of the 6, and a scenario's KV "
            "heads serve equal runs of its heads: select as many heads of "
            "each KV head used, each KV head's heads together");
  // A file without the metadata, and a .npy file: kv_heads as given (1).
  options.heads.reset();
  EXPECT_EQ(KvHeadsOf(WriteInput("nometa.safetensors",
                                 SafetensorsOf("layer.0", {2, 3, 3}, kExample)),
                      options),
            "1");
  EXPECT_EQ(
      KvHeadsOf(WriteInput("kvfile.npy", NpyOf({2, 3, 3}, kExample)), options),
      "1");
}

TEST(KvHeads, AGivenValueMustAgreeWithTheMetadata) {
  const std::string path = MatrixWithMetadata(
      "kvgiven.safetensors", 6,
      R"({"num_attention_heads":"6","num_key_value_heads":"3"})");
  ImportOptions options;
  options.kv_heads = 3;
  EXPECT_EQ(KvHeadsOf(path, options), "3");
  options.kv_heads = 1;
  EXPECT_EQ(KvHeadsOf(path, options),
            "--kv_heads=1 contradicts __metadata__ num_key_value_heads = "
            "\"3\": the model's 6 query heads share 3 KV heads, 2 each, so "
            "all 6 heads make 3; give --kv_heads=3 or leave it out");
  options.kv_heads = 6;
  EXPECT_EQ(KvHeadsOf(path, options),
            "--kv_heads=6 contradicts __metadata__ num_key_value_heads = "
            "\"3\": the model's 6 query heads share 3 KV heads, 2 each, so "
            "all 6 heads make 3; give --kv_heads=3 or leave it out");
  options.heads = std::vector<uint32_t>{4, 5};
  options.kv_heads = 2;
  EXPECT_EQ(KvHeadsOf(path, options),
            "--kv_heads=2 contradicts __metadata__ num_key_value_heads = "
            "\"3\": the model's 6 query heads share 3 KV heads, 2 each, so "
            "the 2 selected heads (4, 5) make 1; give --kv_heads=1 or leave "
            "it out");
  options.kv_heads = 1;
  EXPECT_EQ(KvHeadsOf(path, options), "1");
  // The flag's own checks come first.
  options.kv_heads = 0;
  EXPECT_EQ(KvHeadsOf(path, options), "--kv_heads must be at least 1");
  options.heads.reset();
  options.kv_heads = 4;
  EXPECT_EQ(KvHeadsOf(path, options),
            "--kv_heads=4 does not divide the 6 selected query heads "
            "(spec/heads.md#head-counts)");
}

TEST(KvHeads, MetadataThatContradictsTheFile) {
  ImportOptions options;
  options.kv_heads_from_file = true;
  EXPECT_EQ(KvHeadsOf(MatrixWithMetadata("kv4.safetensors", 6,
                                         R"({"num_key_value_heads":"4"})"),
                      options),
            "__metadata__ says num_key_value_heads = \"4\" but the file "
            "has 6 query heads, not a multiple of 4: the file contradicts "
            "itself");
  EXPECT_EQ(KvHeadsOf(MatrixWithMetadata("kv0.safetensors", 6,
                                         R"({"num_key_value_heads":"0"})"),
                      options),
            "__metadata__ says num_key_value_heads = \"0\": a model has at "
            "least one KV head");
  // Not a decimal number: not read (kv_heads as given).
  EXPECT_EQ(KvHeadsOf(MatrixWithMetadata("kvx.safetensors", 6,
                                         R"({"num_key_value_heads":"three"})"),
                      options),
            "1");
}

TEST(Refusals, TruncatedNpy) {
  const std::string data = FloatBytes(Uniform(3, 16)).substr(0, 3000);
  EXPECT_EQ(Refusal("attn.npy", Npy(NpyDict({3, 16, 16}), data)),
            "truncated: the header says 3x16x16 float32 (3072 bytes of data) "
            "but the file holds 3000");
  EXPECT_EQ(Refusal("long.npy", Npy(NpyDict({1, 2, 2}),
                                    FloatBytes({1, 0, 0.5f, 0.5f, 9}))),
            "the header says 1x2x2 float32 (16 bytes of data) but the file "
            "holds 20: 4 bytes too many");
  EXPECT_EQ(Refusal("huge.npy",
                    Npy(NpyDict({1u << 31, 1u << 31, 1u << 31}), "")),
            "truncated: the header says 2147483648x2147483648x2147483648 "
            "float32 (more than 2^64 bytes of data) but the file holds 0");
  EXPECT_EQ(Refusal("short.npy", std::string("\x93NUMPY\x01\x00\x40", 9)),
            "truncated: the file ends inside the header length");
  EXPECT_EQ(Refusal("headerlong.npy",
                    std::string("\x93NUMPY\x01\x00\xff\x00{}", 12)),
            "header length 255 is larger than the file (2 bytes after the "
            "length field)");
}

TEST(Refusals, NpyFormat) {
  EXPECT_EQ(Refusal("magic.npy", "PK\x03\x04 not numpy"),
            "not a NumPy .npy file (no \\x93NUMPY magic)");
  std::string v4 = NpyOf({1, 1, 1}, {1});
  v4[6] = 4;
  EXPECT_EQ(Refusal("v4.npy", v4),
            "NumPy format version 4.0 is not supported (only 1.0, 2.0, 3.0)");
  EXPECT_EQ(Refusal("f8.npy", Npy(NpyDict({1, 1, 1}, "<f8"),
                                  std::string(8, '\0'))),
            "dtype '<f8' is not supported; only little-endian float32 "
            "('<f4')");
  EXPECT_EQ(Refusal("be.npy", Npy(NpyDict({1, 1, 1}, ">f4"),
                                  std::string(4, '\0'))),
            "dtype '>f4' is not supported; only little-endian float32 "
            "('<f4')");
  EXPECT_EQ(Refusal("fortran.npy", Npy(NpyDict({1, 1, 1}, "<f4", true),
                                       FloatBytes({1}))),
            "the array is in Fortran order; only C order is supported (save "
            "np.ascontiguousarray(a))");
  EXPECT_EQ(Refusal("structured.npy",
                    Npy("{'descr': [('a', '<f4')], 'fortran_order': False, "
                        "'shape': (1,), }",
                        FloatBytes({1}))),
            "malformed header: at byte 10: 'descr' is not a dtype string (a "
            "structured dtype is not supported), found '['");
  EXPECT_EQ(Refusal("nokey.npy", Npy("{'descr': '<f4', 'shape': (1, 1, 1), }",
                                     FloatBytes({1}))),
            "malformed header: the header lacks one of 'descr', "
            "'fortran_order' and 'shape'");
  EXPECT_EQ(Refusal("badtuple.npy",
                    Npy("{'descr': '<f4', 'fortran_order': False, 'shape': "
                        "(1; 1), }",
                        FloatBytes({1}))),
            "malformed header: at byte 52: expected ',' or ')' in the shape, "
            "found ';'");
}

TEST(Refusals, Shapes) {
  EXPECT_EQ(Refusal("shape.npy", Npy(NpyDict({4, 16, 15}),
                                     std::string(4 * 16 * 15 * 4, '\0'))),
            "shape [4, 16, 15] is not [heads, L, L]");
  EXPECT_EQ(Refusal("twod.npy", NpyOf({2, 2}, {1, 0, 0.5f, 0.5f})),
            "shape [2, 2] is not [heads, L, L]");
  EXPECT_EQ(Refusal("empty.npy", NpyOf({2, 0, 0}, {})),
            "shape [2, 0, 0] has L = 0: no positions");
  EXPECT_EQ(Refusal("noheads.npy", NpyOf({0, 3, 3}, {})),
            "shape [0, 3, 3] has no heads");
  EXPECT_EQ(Refusal("shape.safetensors",
                    SafetensorsOf("layer.2", {4, 16, 15},
                                  std::vector<float>(4 * 16 * 15))),
            "tensor layer.2: shape [4, 16, 15] is not [heads, L, L]");
  EXPECT_EQ(Refusal("bytes.safetensors",
                    Safetensors("{" +
                                    TensorJson("layer.0", "F32", {1, 2, 2}, 0,
                                               12) +
                                    "}",
                                FloatBytes({1, 0, 0.5f}))),
            "tensor layer.0: data_offsets [0, 12] hold 12 bytes but shape "
            "[1, 2, 2] of F32 needs 16");
}

TEST(Refusals, Dtype) {
  const std::string header =
      "{" + TensorJson("layer.3", "BF16", {2, 3, 3}, 0, 36) + "}";
  EXPECT_EQ(Refusal("attn.safetensors",
                    Safetensors(header, std::string(36, '\0'))),
            "tensor layer.3 has dtype BF16; only F32 is supported");
  // What the file says is echoed printable.
  const std::string name =
      Header({TensorJson("layer.\xc3\xa9", "F32", {2, 3, 3}, 0, 72)});
  EXPECT_EQ(Refusal("name.safetensors",
                    Safetensors(name, FloatBytes(kExample))),
            "tensor name \"layer.\\xc3\\xa9\" is not layer.<n> with n a "
            "decimal number");
  const std::string dtype =
      Header({TensorJson("layer.0", "F\x7f", {2, 3, 3}, 0, 72)});
  EXPECT_EQ(Refusal("odd.safetensors",
                    Safetensors(dtype, FloatBytes(kExample))),
            "tensor layer.0 has dtype F\\x7f; only F32 is supported");
}

TEST(Refusals, NonCausal) {
  std::vector<float> values = Uniform(3, 8);
  Set(values, 8, 2, 5, 7, 0.25f);
  EXPECT_EQ(Refusal("attn.npy", NpyOf({3, 8, 8}, values)),
            "head 2, row 5, column 7: weight 0.25 above the diagonal (rows "
            "must be causal)");
  EXPECT_EQ(Refusal("causal.safetensors",
                    SafetensorsOf("layer.1", {3, 8, 8}, values)),
            "tensor layer.1, head 2, row 5, column 7: weight 0.25 above the "
            "diagonal (rows must be causal)");
  // A head left out is still checked above the diagonal.
  ImportOptions options;
  options.heads = std::vector<uint32_t>{0};
  EXPECT_EQ(Refusal("unselected.npy", NpyOf({3, 8, 8}, values), options),
            "head 2, row 5, column 7: weight 0.25 above the diagonal (rows "
            "must be causal)");
  // NaN above the diagonal is not zero either; -0.0 is.
  values = Uniform(1, 4);
  Set(values, 4, 0, 0, 3, kNaN);
  EXPECT_EQ(Refusal("nanabove.npy", NpyOf({1, 4, 4}, values)),
            "head 0, row 0, column 3: weight nan above the diagonal (rows "
            "must be causal)");
  Set(values, 4, 0, 0, 3, -0.0f);
  EXPECT_EQ(Refusal("minuszeroabove.npy", NpyOf({1, 4, 4}, values)),
            "accepted");
}

TEST(Refusals, Weights) {
  std::vector<float> values = Uniform(2, 4);
  Set(values, 4, 0, 3, 1, kNaN);
  EXPECT_EQ(Refusal("nan.npy", NpyOf({2, 4, 4}, values)),
            "head 0, row 3, column 1: NaN");
  values = Uniform(2, 4);
  Set(values, 4, 1, 2, 0, -0.25f);
  EXPECT_EQ(Refusal("negative.npy", NpyOf({2, 4, 4}, values)),
            "head 1, row 2, column 0: negative weight -0.25 (weights must "
            "have the sign bit clear)");
  values = Uniform(2, 4);
  Set(values, 4, 1, 3, 2, -0.0f);
  EXPECT_EQ(Refusal("minuszero.npy", NpyOf({2, 4, 4}, values)),
            "head 1, row 3, column 2: -0.0 (weights must have the sign bit "
            "clear, spec/harness.md#attention-weights)");
  values = Uniform(2, 4);
  Set(values, 4, 0, 1, 0, kInf);
  EXPECT_EQ(Refusal("inf.npy", NpyOf({2, 4, 4}, values)),
            "head 0, row 1, column 0: +inf (weights must be finite)");
  values = Uniform(2, 4);
  Set(values, 4, 0, 1, 0, -kInf);
  EXPECT_EQ(Refusal("minusinf.npy", NpyOf({2, 4, 4}, values)),
            "head 0, row 1, column 0: -inf (weights must be finite)");
  // Step rows name the tensor.
  const std::string data =
      FloatBytes({1}) + FloatBytes({0.5f, 0.5f}) + FloatBytes({0.5f, kNaN, 0});
  const std::string header =
      "{" + TensorJson("step.0", "F32", {1, 1}, 0, 4) + "," +
      TensorJson("step.1", "F32", {1, 2}, 4, 12) + "," +
      TensorJson("step.2", "F32", {1, 3}, 12, 24) + "}";
  EXPECT_EQ(Refusal("nanstep.safetensors", Safetensors(header, data)),
            "tensor step.2, head 0, column 1: NaN");
}

TEST(Refusals, WeightsNotCarriedAreNotChecked) {
  // A NaN on the diagonal, and a NaN below it in a head left out.
  std::vector<float> values = Uniform(2, 4);
  Set(values, 4, 0, 2, 2, kNaN);
  Set(values, 4, 1, 3, 0, kNaN);
  ImportOptions options;
  options.heads = std::vector<uint32_t>{0};
  EXPECT_EQ(Refusal("diagonal.npy", NpyOf({2, 4, 4}, values), options),
            "accepted");
  options.heads.reset();
  EXPECT_EQ(Refusal("both.npy", NpyOf({2, 4, 4}, values), options),
            "head 1, row 3, column 0: NaN");
}

TEST(Refusals, Heads) {
  const std::string bytes = NpyOf({2, 3, 3}, kExample);
  ImportOptions options;
  options.heads = std::vector<uint32_t>{0, 2};
  EXPECT_EQ(Refusal("range.npy", bytes, options),
            "--heads: head 2 is out of range (the file has 2 heads, 0..1)");
  options.heads = std::vector<uint32_t>{1, 0, 1};
  EXPECT_EQ(Refusal("twice.npy", bytes, options),
            "--heads: head 1 is given twice");
  options.heads = std::vector<uint32_t>{};
  EXPECT_EQ(Refusal("none.npy", bytes, options),
            "--heads selects no head (e.g. --heads=0,2,5)");
}

TEST(Refusals, FileAndExtension) {
  EXPECT_EQ(Refusal("attn.pt", "whatever"),
            "unknown extension: expected .npy or .safetensors");
  const std::string missing = ::testing::TempDir() + "/missing.npy";
  EXPECT_EQ(ImportAttention(missing, {}).status().message(),
            missing + ": cannot open: No such file or directory");
  ImportOptions options;
  options.layer = 0;
  EXPECT_EQ(Refusal("layer.npy", NpyOf({2, 3, 3}, kExample), options),
            "--layer applies to .safetensors files; a .npy file holds one "
            "layer");
}

TEST(Refusals, SafetensorsStructure) {
  EXPECT_EQ(Refusal("tiny.safetensors", "abc"),
            "truncated: 3 bytes, shorter than the 8-byte header length");
  EXPECT_EQ(Refusal("long.safetensors", LittleEndian(1000, 8) + "{}"),
            "header length 1000 is larger than the file (2 bytes after the "
            "8-byte length)");
  EXPECT_EQ(Refusal("hugelength.safetensors", LittleEndian(~0ull, 8) + "{}"),
            "header length 18446744073709551615 is larger than the file (2 "
            "bytes after the 8-byte length)");
  const std::string data = FloatBytes(kExample);  // 72 bytes
  EXPECT_EQ(
      Refusal("past.safetensors",
              Safetensors(Header({TensorJson("layer.0", "F32", {2, 3, 3}, 4,
                                             76)}),
                          data)),
      "tensor layer.0: data_offsets [4, 76] run past the end of the file (72 "
      "bytes of data after the header)");
  EXPECT_EQ(
      Refusal("backwards.safetensors",
              Safetensors(Header({TensorJson("layer.0", "F32", {2, 3, 3}, 72,
                                             0)}),
                          data)),
      "tensor layer.0: data_offsets [72, 0] end before they begin");
  EXPECT_EQ(
      Refusal("overlap.safetensors",
              Safetensors(Header({TensorJson("layer.0", "F32", {2, 3, 3}, 0,
                                             72),
                                  TensorJson("other", "U8", {8}, 64, 72)}),
                          data)),
      "tensors layer.0 and other overlap: data_offsets [0, 72] and [64, 72]");
  EXPECT_EQ(
      Refusal("nothing.safetensors",
              Safetensors(Header({TensorJson("weights", "F32", {18}, 0, 72)}),
                          data)),
      "the file holds no tensor layer.<n> (a [heads, L, L] matrix), no "
      "tensor window.<n> (a [heads, R, L] window), no tensor chunk.<n>.<e> "
      "(a chunked prefill's rows) and no tensor step.<t> (per-step rows)");
  EXPECT_EQ(Refusal("badname.safetensors",
                    SafetensorsOf("layer.03", {2, 3, 3}, kExample)),
            "tensor name \"layer.03\" is not layer.<n> with n a decimal "
            "number");
  EXPECT_EQ(
      Refusal("gap.safetensors",
              Safetensors(Header({TensorJson("step.0", "F32", {1, 1}, 0, 4),
                                  TensorJson("step.2", "F32", {1, 3}, 4, 16)}),
                          FloatBytes({1, 0.5f, 0.25f, 0.25f}))),
      "the file has no tensor step.1 (step rows must be step.0 .. step.<L-1>, "
      "the file's last is step.2)");
  EXPECT_EQ(
      Refusal("stepshape.safetensors",
              Safetensors(Header({TensorJson("step.0", "F32", {2, 1}, 0, 8),
                                  TensorJson("step.1", "F32", {3, 2}, 8, 32)}),
                          FloatBytes({1, 1, 0, 0, 0, 0, 0, 0}))),
      "tensor step.1 has shape [3, 2], which is not [heads, 2] with heads = 2 "
      "as in step.0");
  ImportOptions options;
  options.layer = 0;
  EXPECT_EQ(Refusal("steplayer.safetensors",
                    SafetensorsOf("step.0", {1, 1}, {1}), options),
            "--layer=0: the file holds per-step rows (step.<t>), not layer "
            "tensors");
  EXPECT_EQ(Refusal("field.safetensors",
                    Safetensors(R"({"layer.0":{"dtype":"F32","shape":[1,1,1],)"
                                R"("data_offsets":[0,4],"extra":"x"}})",
                                FloatBytes({1}))),
            "tensor layer.0: unexpected field \"extra\" (expected \"dtype\": "
            "string, \"shape\": [integers], \"data_offsets\": [begin, end])");
  EXPECT_EQ(Refusal("metadata.safetensors",
                    Safetensors(R"({"__metadata__":{"layer":3}})", "")),
            "malformed JSON header: __metadata__ is not an object of strings");
}

TEST(Refusals, BadJson) {
  // Each header, and the message it gets after "malformed JSON header: ".
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "at byte 0: expected '{', found the end of the header"},
      {"[1]", "at byte 0: expected '{', found '['"},
      {"{\"a\":", "at byte 5: expected a value, found the end of the header"},
      {"{\"a\":{}", "at byte 7: expected ',', found the end of the header"},
      {"{\"a\":1.5}",
       "at byte 6: number with a fraction or exponent (a safetensors header "
       "holds integers only), found '.'"},
      {"{\"a\":-1}",
       "at byte 5: negative number (a safetensors header holds none), found "
       "'-'"},
      {"{\"a\":01}",
       "at byte 6: digit after a leading zero (JSON forbids it), found '1'"},
      {"{\"a\":true}",
       "at byte 5: true, false and null are not expected in a safetensors "
       "header, found 't'"},
      {"{\"a\":[1,\"x\"]}",
       "at byte 8: expected an integer (arrays in a safetensors header hold "
       "integers only), found '\"'"},
      {"{\"a\":\"x}",
       "at byte 8: unterminated string, found the end of the header"},
      {"{\"a\":\"\\q\"}",
       "at byte 7: unknown escape in a string, found 'q'"},
      {"{\"a\":\"\\ud800\"}",
       "at byte 12: high surrogate without its low surrogate, found '\"'"},
      {"{\"a\":{\"b\":{}}}",
       "at byte 10: object nested deeper than a safetensors header's two "
       "levels, found '{'"},
      {"{\"a\":{},\"a\":{}}", "at byte 8: key \"a\" is repeated"},
      {"{} x", "at byte 3: expected the end of the header, found 'x'"},
      {"{\"a\":99999999999999999999}",
       "at byte 5: integer too large, found '9'"},
  };
  for (const auto& [json, want] : cases) {
    std::string header = json;  // no padding: the length says where it ends
    EXPECT_EQ(Refusal("bad.safetensors",
                      LittleEndian(header.size(), 8) + header),
              "malformed JSON header: " + want)
        << json;
  }
}


// ---------------------------------------------------------------------------
// The window layout: window.<n> [heads, R, L], row r the query at position
// L - R + r. The hand-worked example: 2 heads, R = 3, L = 5, so rows 0, 1,
// 2 are the queries at positions 2, 3, 4.
//
//   head 0                              head 1
//   q=2  0.5    0.25   0.25  0    0     1e-45 +0.0   1      0      0
//   q=3  0.125  0.125  0.25  0.5  0     0.75  0.125  0.0625 0.0625 0
//   q=4  0.0625 0.0625 0.125 0.25 0.5   0.25  0.25   0.125  0.125  0.25
//
// --decode=0 (default): step 0 admits 5 and carries 3 query rows per head,
// q + 1 weights each, diagonal included. --decode=1: step 0 admits 4 and
// carries the rows of queries 2 and 3 (m = R - D = 2); step 1 admits 1 and
// carries row 4 without its diagonal, [0.0625 0.0625 0.125 0.25] and
// [0.25 0.25 0.125 0.125].
const std::vector<float> kWindow = {
    0.5f,       0.25f,  0.25f,   0,       0,                       // h0 q2
    0.125f,     0.125f, 0.25f,   0.5f,    0,                       // h0 q3
    0.0625f,    0.0625f, 0.125f, 0.25f,   0.5f,                    // h0 q4
    kSubnormal, 0.0f,   1,       0,       0,                       // h1 q2
    0.75f,      0.125f, 0.0625f, 0.0625f, 0,                       // h1 q3
    0.25f,      0.25f,  0.125f,  0.125f,  0.25f,                   // h1 q4
};

void SetWindow(std::vector<float>& values, int rows, int length, int h, int r,
               int k, float value) {
  values[(h * rows + r) * length + k] = value;
}

std::vector<uint32_t> BitsOfAll(const std::vector<float>& values) {
  std::vector<uint32_t> bits;
  for (float v : values) bits.push_back(Bits(v));
  return bits;
}

// The query rows of a step, in wire order.
Rows QueryBits(const v1::Step& step) {
  Rows rows;
  for (const v1::AttentionRow& row : step.queries()) {
    std::vector<uint32_t> bits;
    for (float w : row.weights()) bits.push_back(Bits(w));
    rows.push_back(bits);
  }
  return rows;
}

std::string WindowFile(const std::string& name,
                       const std::vector<float>& values = kWindow,
                       const std::string& metadata = "") {
  const std::string data = FloatBytes(values);
  std::string header =
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, data.size());
  if (!metadata.empty()) header += ",\"__metadata__\":" + metadata;
  return WriteInput(name, Safetensors(header + "}", data));
}

TEST(Window, AllRowsAreTheQueryRowsOfOnePrefillStep) {
  const std::string path = WindowFile(
      "window.safetensors", kWindow,
      R"({"tokens":"5","window_rows":"3","num_attention_heads":"2",)"
      R"("num_key_value_heads":"2","model":"hand"})");
  ImportOptions options;
  options.kv_heads = 2;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->id(), "window.safetensors");
  EXPECT_EQ(scenario->query_heads(), 2u);
  EXPECT_EQ(scenario->kv_heads(), 2u);
  ASSERT_EQ(scenario->steps_size(), 1);
  const v1::Step& step = scenario->steps(0);
  EXPECT_EQ(step.admit(), 5u);
  EXPECT_FALSE(step.has_attention());
  EXPECT_EQ(step.heads_size(), 0);
  EXPECT_EQ(QueryBits(step),
            (Rows{BitsOfAll({0.5f, 0.25f, 0.25f}),
                  BitsOfAll({0.125f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({kSubnormal, 0.0f, 1}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f}),
                  BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f, 0.25f})}));
}

TEST(Window, DecodeStepsTakeThePromptsLastPositions) {
  const std::string path = WindowFile("decode.safetensors");
  ImportOptions options;
  options.decode = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->query_heads(), 2u);
  EXPECT_EQ(scenario->kv_heads(), 1u);
  ASSERT_EQ(scenario->steps_size(), 2);
  const v1::Step& prefill = scenario->steps(0);
  EXPECT_EQ(prefill.admit(), 4u);
  EXPECT_FALSE(prefill.has_attention());
  EXPECT_EQ(prefill.heads_size(), 0);
  EXPECT_EQ(QueryBits(prefill),
            (Rows{BitsOfAll({0.5f, 0.25f, 0.25f}),
                  BitsOfAll({0.125f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({kSubnormal, 0.0f, 1}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f})}));
  const v1::Step& decode = scenario->steps(1);
  EXPECT_EQ(decode.admit(), 1u);
  EXPECT_EQ(decode.queries_size(), 0);
  EXPECT_FALSE(decode.has_attention());  // several heads: rows in `heads`
  EXPECT_EQ(RowBits(decode),
            (Rows{BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f}),
                  BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f})}));

  // Fewer query rows: --window_rows=1 --decode=1 carries query 3 only.
  options.window_rows = 1;
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 2);
  EXPECT_EQ(scenario->steps(0).admit(), 4u);
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({0.125f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f})}));
  EXPECT_EQ(RowBits(scenario->steps(1)),
            (Rows{BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f}),
                  BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f})}));

  // --decode=2: queries 3 and 4 are decode steps, query 2 the only row.
  options.window_rows.reset();
  options.decode = 2;
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 3);
  EXPECT_EQ(scenario->steps(0).admit(), 3u);
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({0.5f, 0.25f, 0.25f}),
                  BitsOfAll({kSubnormal, 0.0f, 1})}));
  EXPECT_EQ(RowBits(scenario->steps(1)),
            (Rows{BitsOfAll({0.125f, 0.125f, 0.25f}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f})}));
  EXPECT_EQ(scenario->steps(2).admit(), 1u);
}

TEST(Window, HeadsInTheGivenOrderAndOneHeadInAttention) {
  const std::string path = WindowFile("heads.safetensors");
  ImportOptions options;
  options.heads = std::vector<uint32_t>{1, 0};
  options.kv_heads = 1;
  options.decode = 1;
  options.id = "swapped";
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->id(), "swapped");
  EXPECT_EQ(scenario->query_heads(), 2u);
  EXPECT_EQ(scenario->kv_heads(), 1u);
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({kSubnormal, 0.0f, 1}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f}),
                  BitsOfAll({0.5f, 0.25f, 0.25f}),
                  BitsOfAll({0.125f, 0.125f, 0.25f, 0.5f})}));
  EXPECT_EQ(RowBits(scenario->steps(1)),
            (Rows{BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f}),
                  BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f})}));

  options.heads = std::vector<uint32_t>{1};
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->query_heads(), 1u);
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({kSubnormal, 0.0f, 1}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f})}));
  const v1::Step& decode = scenario->steps(1);
  EXPECT_TRUE(decode.has_attention());  // one head: its row in `attention`
  EXPECT_EQ(decode.heads_size(), 0);
  EXPECT_EQ(RowBits(decode),
            (Rows{BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f})}));
}

TEST(Window, TheHarnessAcceptsTheScenarios) {
  const std::string path = WindowFile("harness.safetensors");
  for (uint32_t decode : {0u, 1u, 2u}) {
    ImportOptions options;
    options.decode = decode;
    options.kv_heads = 2;
    absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    const RunResult result =
        RunScenario({"h2o", {{"budget", 2}, {"recent_window", 0}}},
                    FromProto(*scenario));
    ASSERT_TRUE(result.refusal.ok()) << decode << ": " << result.refusal;
    EXPECT_EQ(result.steps.size(), 1u + decode);
  }
}

TEST(Window, WhichTensor) {
  // layer.0 and window.0: the square unless a window flag is given.
  const std::string square = FloatBytes(Uniform(2, 5));
  const std::string window = FloatBytes(kWindow);
  const std::string totals(2 * 5 * 8, '\0');
  const std::string both = WriteInput(
      "both.safetensors",
      Safetensors(
          Header({TensorJson("layer.0", "F32", {2, 5, 5}, 0, 200),
                  TensorJson("window.0", "F32", {2, 3, 5}, 200, 320),
                  TensorJson("totals.0", "F64", {2, 5}, 320, 400)}),
          square + window + totals));
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(both, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->steps_size(), 5);  // the square
  ImportOptions options;
  options.decode = 0;
  scenario = ImportAttention(both, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->steps_size(), 1);  // the window
  EXPECT_EQ(scenario->steps(0).queries_size(), 6);

  // Two layer numbers: --layer chooses.
  const std::string two = WriteInput(
      "two.safetensors",
      Safetensors(Header({TensorJson("layer.5", "F32", {2, 5, 5}, 0, 200),
                          TensorJson("window.2", "F32", {2, 3, 5}, 200, 320)}),
                  square + window));
  EXPECT_EQ(ImportAttention(two, {}).status().message(),
            two + ": the file holds 2 layers (window.2, layer.5): choose one "
                  "with --layer");
  options = {};
  options.layer = 2;
  scenario = ImportAttention(two, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->steps(0).queries_size(), 6);
  options.layer = 3;
  EXPECT_EQ(ImportAttention(two, options).status().message(),
            two + ": --layer=3: the file has no tensor layer.3 or window.3 (it "
                  "holds window.2, layer.5)");
  // A window flag with a square.
  options.layer = 5;
  options.window_rows = 2;
  EXPECT_EQ(ImportAttention(two, options).status().message(),
            two + ": --window_rows=2 applies to window.<n> and "
                  "chunk.<n>.<e> tensors; tensor layer.5 is a [heads, L, L] "
                  "matrix and the file has no window.5");
  options = {};
  options.decode = 0;
  EXPECT_EQ(Refusal("flags.npy", NpyOf({2, 3, 3}, kExample), options),
            "--decode=0 applies to window.<n> and chunk.<n>.<e> tensors of a "
            ".safetensors file; a .npy file holds a [heads, L, L] matrix");
  options.window_rows = 1;
  EXPECT_EQ(Refusal("flags.safetensors", SafetensorsOf("step.0", {1, 1}, {1}),
                    options),
            "--window_rows=1 and --decode=0 apply to window.<n> and "
            "chunk.<n>.<e> tensors; the file holds per-step rows (step.<t>)");
  // Windows and step rows together.
  EXPECT_EQ(
      Refusal("mixed.safetensors",
              Safetensors(Header({TensorJson("window.0", "F32", {2, 3, 5}, 0,
                                             120),
                                  TensorJson("step.0", "F32", {1, 1}, 120,
                                             124)}),
                          window + FloatBytes({1}))),
      "the file holds both window.<n> and step.<t> tensors; it must hold one "
      "kind");
  EXPECT_EQ(Refusal("badwindow.safetensors",
                    SafetensorsOf("window.x", {2, 3, 5}, kWindow)),
            "tensor name \"window.x\" is not window.<n> with n a decimal "
            "number");
}

TEST(WindowRefusals, Flags) {
  const std::string bytes = Safetensors(
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, 120) + "}",
      FloatBytes(kWindow));
  ImportOptions options;
  options.window_rows = 3;
  options.decode = 1;
  EXPECT_EQ(Refusal("mdr.safetensors", bytes, options),
            "--window_rows=3 plus --decode=1 is 4 rows, more than the "
            "window's R = 3 (tensor window.0 [2, 3, 5])");
  options.decode = 3;
  EXPECT_EQ(Refusal("mp.safetensors", bytes, options),
            "--window_rows=3 is more than the 2 positions the prefill step "
            "admits (P = L - D = 5 - 3)");
  options.window_rows = 2;
  options.decode = 4;
  EXPECT_EQ(Refusal("mp1.safetensors", bytes, options),
            "--window_rows=2 is more than the 1 position the prefill step "
            "admits (P = L - D = 5 - 4)");
  options.decode = 5;
  EXPECT_EQ(Refusal("dl.safetensors", bytes, options),
            "--decode=5: the prompt has L = 5 positions (tensor window.0 [2, "
            "3, 5]); at most 4 can be decode steps, the prefill step admits "
            "at least one");
  options.window_rows.reset();
  options.decode = 3;
  EXPECT_EQ(Refusal("dr.safetensors", bytes, options),
            "--decode=3 leaves no window row for the prefill step: the window "
            "has R = 3 rows (tensor window.0 [2, 3, 5]), and the default "
            "--window_rows is R - D; give --decode below 3");
  options.window_rows = 0;
  options.decode.reset();
  EXPECT_EQ(Refusal("m0.safetensors", bytes, options),
            "--window_rows=0: the prefill step needs at least 1 query row");
}

TEST(WindowRefusals, NonCausal) {
  std::vector<float> values = kWindow;
  SetWindow(values, 3, 5, 1, 1, 4, 0.25f);  // head 1, query 3, column 4
  EXPECT_EQ(Refusal("noncausal.safetensors",
                    Safetensors("{" +
                                    TensorJson("window.0", "F32", {2, 3, 5}, 0,
                                               120) +
                                    "}",
                                FloatBytes(values))),
            "tensor window.0, head 1, row 3 (window row 1), column 4: weight "
            "0.25 (bits 0x3e800000) above the diagonal, where a causal row "
            "has exactly +0.0: the file is not causal");
  // -0.0 above the diagonal is not +0.0 either.
  values = kWindow;
  SetWindow(values, 3, 5, 0, 0, 3, -0.0f);  // head 0, query 2, column 3
  const std::string minus = FloatBytes(values);
  const std::string header =
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, 120) + "}";
  EXPECT_EQ(Refusal("minuszero.safetensors", Safetensors(header, minus)),
            "tensor window.0, head 0, row 2 (window row 0), column 3: weight "
            "-0 (bits 0x80000000) above the diagonal, where a causal row has "
            "exactly +0.0: the file is not causal");
  // Rows the scenario does not use, and heads not selected, are not read.
  ImportOptions options;
  options.window_rows = 1;  // queries 3 and 4 only
  EXPECT_EQ(Refusal("unused.safetensors", Safetensors(header, minus), options),
            "accepted");
  options = {};
  options.heads = std::vector<uint32_t>{1};
  EXPECT_EQ(Refusal("unselected.safetensors", Safetensors(header, minus),
                    options),
            "accepted");
}

TEST(WindowRefusals, Weights) {
  const std::string header =
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, 120) + "}";
  std::vector<float> values = kWindow;
  SetWindow(values, 3, 5, 0, 0, 1, kNaN);
  EXPECT_EQ(Refusal("nan.safetensors", Safetensors(header, FloatBytes(values))),
            "tensor window.0, head 0, row 2 (window row 0), column 1: NaN");
  // A prefill row carries its diagonal: -0.0 there is refused.
  values = kWindow;
  SetWindow(values, 3, 5, 1, 2, 4, -0.0f);
  EXPECT_EQ(Refusal("diag.safetensors",
                    Safetensors(header, FloatBytes(values))),
            "tensor window.0, head 1, row 4 (window row 2), column 4: -0.0 "
            "(weights must have the sign bit clear, "
            "spec/harness.md#attention-weights)");
  // A decode row does not: with --decode=1 the same file is accepted.
  ImportOptions options;
  options.decode = 1;
  EXPECT_EQ(Refusal("diagdecode.safetensors",
                    Safetensors(header, FloatBytes(values)), options),
            "accepted");
  values = kWindow;
  SetWindow(values, 3, 5, 1, 2, 0, -kInf);
  EXPECT_EQ(Refusal("inf.safetensors", Safetensors(header, FloatBytes(values)),
                    options),
            "tensor window.0, head 1, row 4 (window row 2), column 0: -inf "
            "(weights must be finite)");
  values = kWindow;
  SetWindow(values, 3, 5, 0, 1, 2, -0.5f);
  EXPECT_EQ(Refusal("neg.safetensors", Safetensors(header, FloatBytes(values))),
            "tensor window.0, head 0, row 3 (window row 1), column 2: negative "
            "weight -0.5 (weights must have the sign bit clear)");
}

TEST(WindowRefusals, ShapeDtypeMetadata) {
  EXPECT_EQ(Refusal("f16.safetensors",
                    Safetensors(Header({TensorJson("window.0", "F16",
                                                   {2, 3, 5}, 0, 60)}),
                                std::string(60, '\0'))),
            "tensor window.0 has dtype F16; only F32 is supported");
  EXPECT_EQ(Refusal("rank.safetensors",
                    SafetensorsOf("window.0", {2, 15}, kWindow)),
            "tensor window.0: shape [2, 15] is not [heads, R, L]");
  EXPECT_EQ(Refusal("rank4.safetensors",
                    SafetensorsOf("window.0", {1, 2, 3, 5}, kWindow)),
            "tensor window.0: shape [1, 2, 3, 5] is not [heads, R, L]");
  EXPECT_EQ(Refusal("tall.safetensors",
                    SafetensorsOf("window.0", {1, 6, 5},
                                  std::vector<float>(30))),
            "tensor window.0: shape [1, 6, 5] has R = 6 rows, more than its "
            "L = 5 positions (row r is the query at position L - R + r)");
  EXPECT_EQ(Refusal("norows.safetensors",
                    SafetensorsOf("window.0", {2, 0, 5}, {})),
            "tensor window.0: shape [2, 0, 5] has R = 0: no rows");
  EXPECT_EQ(Refusal("noheads.safetensors",
                    SafetensorsOf("window.0", {0, 3, 5}, {})),
            "tensor window.0: shape [0, 3, 5] has no heads");
  EXPECT_EQ(Refusal("bytes.safetensors",
                    Safetensors(Header({TensorJson("window.0", "F32",
                                                   {2, 3, 5}, 0, 116)}),
                                FloatBytes(kWindow).substr(0, 116))),
            "tensor window.0: data_offsets [0, 116] hold 116 bytes but shape "
            "[2, 3, 5] of F32 needs 120");
  const std::string data = FloatBytes(kWindow);
  const std::string tensor = TensorJson("window.0", "F32", {2, 3, 5}, 0, 120);
  EXPECT_EQ(Refusal("tokens.safetensors",
                    Safetensors("{" + tensor +
                                    R"(,"__metadata__":{"tokens":"6"}})",
                                data)),
            "__metadata__ says tokens = \"6\" but tensor window.0 has shape "
            "[2, 3, 5] (L = 5): the file contradicts itself");
  EXPECT_EQ(Refusal("rows.safetensors",
                    Safetensors("{" + tensor +
                                    R"(,"__metadata__":{"window_rows":"64"}})",
                                data)),
            "__metadata__ says window_rows = \"64\" but tensor window.0 has "
            "shape [2, 3, 5] (R = 3): the file contradicts itself");
  EXPECT_EQ(
      Refusal("heads.safetensors",
              Safetensors("{" + tensor +
                              R"(,"__metadata__":{"num_attention_heads":"4"}})",
                          data)),
      "__metadata__ says num_attention_heads = \"4\" but tensor window.0 has "
      "shape [2, 3, 5] (heads = 2): the file contradicts itself");
  // Not a number: not compared.
  EXPECT_EQ(Refusal("words.safetensors",
                    Safetensors("{" + tensor +
                                    R"(,"__metadata__":{"tokens":"five"}})",
                                data)),
            "accepted");
}

// ---------------------------------------------------------------------------
// Sizes and limits.

// A uniform causal window [heads, rows, length].
std::vector<float> UniformWindow(int heads, int rows, int length) {
  std::vector<float> values;
  values.reserve(static_cast<size_t>(heads) * rows * length);
  for (int h = 0; h < heads; ++h) {
    for (int r = 0; r < rows; ++r) {
      const int q = length - rows + r;
      for (int k = 0; k < length; ++k) {
        values.push_back(k <= q ? 1.0f / (q + 1) : 0.0f);
      }
    }
  }
  return values;
}

// MeasureImport's scenario_bytes, the built scenario's ByteSizeLong() and
// ScenarioWireBytes agree.
void ExpectExactSize(const std::string& path, const ImportOptions& options) {
  absl::StatusOr<ImportSize> size = MeasureImport(path, options);
  ASSERT_TRUE(size.ok()) << size.status();
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(size->scenario_bytes, scenario->ByteSizeLong()) << path;
  EXPECT_EQ(size->scenario_bytes, scenario->SerializeAsString().size());
  EXPECT_EQ(size->steps, static_cast<uint64_t>(scenario->steps_size()));
  uint64_t rows = 0, weights = 0;
  for (const v1::Step& step : scenario->steps()) {
    rows += step.queries_size() + step.heads_size() + step.has_attention();
    for (const v1::AttentionRow& row : step.queries()) {
      weights += row.weights_size();
    }
    for (const v1::AttentionRow& row : step.heads()) {
      weights += row.weights_size();
    }
    weights += step.attention().weights_size();
  }
  EXPECT_EQ(size->rows, rows) << path;
  EXPECT_EQ(size->weights, weights) << path;
  // The prefill steps (those with query rows, first), then decode steps.
  const uint64_t H = scenario->query_heads();
  std::vector<PrefillShape> prefill;
  uint64_t admitted = 0;
  for (const v1::Step& step : scenario->steps()) {
    if (step.queries_size() == 0) break;
    admitted += step.admit();
    prefill.push_back({step.admit(), admitted,
                       static_cast<uint64_t>(step.queries_size()) / H,
                       step.total_rows()});
  }
  const uint64_t length =
      admitted + scenario->steps_size() - prefill.size();
  EXPECT_EQ(ScenarioWireBytes(scenario->id().size(), H,
                              scenario->kv_heads(), prefill, admitted, length),
            scenario->ByteSizeLong())
      << path;
  if (prefill.size() <= 1 && (prefill.empty() || prefill[0].total_rows == 0)) {
    const uint64_t P = admitted;
    const uint64_t m = prefill.empty() ? 0 : prefill[0].query_rows;
    EXPECT_EQ(ScenarioWireBytes(scenario->id().size(), H,
                                scenario->kv_heads(), P, m, P, length),
              scenario->ByteSizeLong())
        << path;
  }
}

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
  // Values worked by hand from the wire format (import_attention_lib.cc,
  // "Sizes"). One head, one decode step of q = 200000 weights: row payload
  // 800000 bytes (varint 3 bytes), row field 1 + 3 + 1 + 3 + 800000 =
  // 800008 (the packed field inside the row: 1 + 3 + 800000 = 800004; the
  // row in the step: 1 + 3 + 800004), step 2 + 800008 = 800010, in the
  // scenario 1 + 3 + 800010 = 800014; query_heads and kv_heads 2 + 2.
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

// A file of `size` bytes whose first bytes are `head` and the rest a hole
// (sparse: no disk, no memory until read).
// ---------------------------------------------------------------------------
// Column totals (ImportOptions::totals, spec/prefill.md#column-totals).

std::string DoubleBytes(const std::vector<double>& values) {
  std::string bytes;
  for (double v : values) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bytes += LittleEndian(bits, 8);
  }
  return bytes;
}

uint64_t Bits64(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// kWindow's file (window.0 [2, 3, 5]) with a tensor `name` of `dtype` and
// `shape` holding `totals` after it.
std::string TotalsFile(const std::string& file, const std::vector<double>& totals,
                       const std::string& name = "totals.0",
                       const std::string& dtype = "F64",
                       const std::vector<uint64_t>& shape = {2, 5},
                       const std::vector<float>& window = kWindow) {
  const std::string rows = FloatBytes(window);
  const std::string sums = DoubleBytes(totals);
  const std::string header =
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, rows.size()) + "," +
      TensorJson(name, dtype, shape, rows.size(), rows.size() + sums.size()) +
      "}";
  return WriteInput(file, Safetensors(header, rows + sums));
}

const std::vector<double> kTotals = {
    1.5, 0.0, 4.9406564584124654e-324, 0.75, 1e300,  // head 0
    0.25, 0.5, 0.125, 2.0, 0.0625,                   // head 1
};

TEST(Totals, CarriedBitForBitOnThePrefillStep) {
  const std::string path = TotalsFile("totals.safetensors", kTotals);
  ImportOptions options;
  options.kv_heads = 2;
  options.totals = true;
  options.window_rows = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 1);
  const v1::Step& step = scenario->steps(0);
  EXPECT_EQ(step.admit(), 5u);
  EXPECT_EQ(step.queries_size(), 2);  // one row per head
  EXPECT_EQ(step.total_rows(), 5u);   // every query of the prompt
  ASSERT_EQ(step.totals_size(), 2);
  for (int h = 0; h < 2; ++h) {
    ASSERT_EQ(step.totals(h).sums_size(), 5);
    for (int p = 0; p < 5; ++p) {
      EXPECT_EQ(Bits64(step.totals(h).sums(p)), Bits64(kTotals[h * 5 + p]))
          << "head " << h << ", position " << p;
    }
  }
  // Heads in the order given: head 1's totals first.
  options.heads = std::vector<uint32_t>{1, 0};
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(Bits64(scenario->steps(0).totals(0).sums(0)), Bits64(0.25));
  EXPECT_EQ(Bits64(scenario->steps(0).totals(1).sums(4)), Bits64(1e300));
  // Without --totals the tensor is not read: no totals.
  scenario = ImportAttention(path, ImportOptions{});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->steps(0).totals_size(), 0);
  EXPECT_EQ(scenario->steps(0).total_rows(), 0u);
}

// capture_attention.py --totals_decode 1: totals [heads, L - 1] over the
// first L - 1 queries, carried on the prefill step of --decode=1 (admit
// 4, total_rows 4), its 4 values per head bit for bit; then the decode
// step of position 4, without totals.
TEST(Totals, BeforeDecodeSteps) {
  const std::vector<double> four = {1.5, 0.0, 4.9406564584124654e-324, 0.75,
                                    0.25, 0.5, 0.125, 2.0};
  const std::string path =
      TotalsFile("totals-decode.safetensors", four, "totals.0", "F64", {2, 4});
  ImportOptions options;
  options.kv_heads = 2;
  options.totals = true;
  options.decode = 1;
  options.window_rows = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 2);
  const v1::Step& step = scenario->steps(0);
  EXPECT_EQ(step.admit(), 4u);
  EXPECT_EQ(step.total_rows(), 4u);
  ASSERT_EQ(step.totals_size(), 2);
  for (int h = 0; h < 2; ++h) {
    ASSERT_EQ(step.totals(h).sums_size(), 4);
    for (int p = 0; p < 4; ++p) {
      EXPECT_EQ(Bits64(step.totals(h).sums(p)), Bits64(four[h * 4 + p]))
          << "head " << h << ", position " << p;
    }
  }
  EXPECT_EQ(scenario->steps(1).admit(), 1u);
  EXPECT_EQ(scenario->steps(1).totals_size(), 0);
  EXPECT_EQ(scenario->steps(1).total_rows(), 0u);
}

// h2o (budget 2, raw and normalized) logs the same victims and cut scores
// over `rows` (query rows) and `summed` (their totals): `steps` steps, each
// evicting.
void ExpectTheSameH2oLog(const v1::Scenario& rows, const v1::Scenario& summed,
                         size_t steps) {
  for (int normalize = 0; normalize <= 1; ++normalize) {
    const PolicyConfig config = {
        "h2o", {{"budget", 2}, {"recent_window", 0}, {"normalize", normalize}}};
    RunOptions options;
    options.record_cut = true;
    const RunResult a = RunScenario(config, FromProto(rows), options);
    const RunResult b = RunScenario(config, FromProto(summed), options);
    ASSERT_TRUE(a.refusal.ok()) << a.refusal;
    ASSERT_TRUE(b.refusal.ok()) << b.refusal;
    EXPECT_EQ(a.steps, b.steps) << "normalize " << normalize;
    ASSERT_EQ(a.steps.size(), steps);
    for (const auto& step : a.steps) EXPECT_FALSE(step.victims.empty());
  }
}

// The totals of a window's rows, formed as spec/prefill.md#column-totals
// says (float64, ascending query order from +0.0), give h2o the log the
// whole window's rows give: the same victims and cut scores.
TEST(Totals, GiveTheLogOfTheRowsTheySum) {
  // kWindow holds queries 2..4 of L = 5 (R = 3): totals over those 3.
  std::vector<double> totals(10, 0.0);
  for (int h = 0; h < 2; ++h) {
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 5; ++k) {
        totals[h * 5 + k] += static_cast<double>(kWindow[(h * 3 + r) * 5 + k]);
      }
    }
  }
  const std::string path = TotalsFile("sums.safetensors", totals);
  ImportOptions rows_only;
  rows_only.kv_heads = 1;
  absl::StatusOr<v1::Scenario> rows = ImportAttention(path, rows_only);
  ImportOptions with_totals = rows_only;
  with_totals.totals = true;
  with_totals.window_rows = 1;
  absl::StatusOr<v1::Scenario> summed = ImportAttention(path, with_totals);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_TRUE(summed.ok()) << summed.status();
  // The totals cover every query (total_rows L = 5) where the rows cover 3:
  // the same sums, since queries 0 and 1 are not in the file; so carry
  // total_rows 3 for the comparison, as a capture of those 3 rows would.
  summed->mutable_steps(0)->set_total_rows(3);
  ExpectTheSameH2oLog(*rows, *summed, 1);
}

// The same before a decode step (--decode=1, capture_attention.py
// --totals_decode 1): totals over queries 2 and 3 at keys 0..3 give the
// prefill of 4 positions the log its two rows give, and the decode step of
// position 4 (its row from the window) follows the same cache.
TEST(Totals, GiveTheLogOfTheRowsTheySumBeforeDecodeSteps) {
  std::vector<double> totals(8, 0.0);
  for (int h = 0; h < 2; ++h) {
    for (int r = 0; r < 2; ++r) {  // window rows 0 and 1: queries 2 and 3
      for (int k = 0; k < 4; ++k) {
        totals[h * 4 + k] += static_cast<double>(kWindow[(h * 3 + r) * 5 + k]);
      }
    }
  }
  const std::string path = TotalsFile("sums-decode.safetensors", totals,
                                      "totals.0", "F64", {2, 4});
  ImportOptions rows_only;
  rows_only.kv_heads = 1;
  rows_only.decode = 1;
  absl::StatusOr<v1::Scenario> rows = ImportAttention(path, rows_only);
  ImportOptions with_totals = rows_only;
  with_totals.totals = true;
  with_totals.window_rows = 1;
  absl::StatusOr<v1::Scenario> summed = ImportAttention(path, with_totals);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_TRUE(summed.ok()) << summed.status();
  ASSERT_EQ(summed->steps(0).total_rows(), 4u);
  // As above: the file holds queries 2 and 3 only, so the comparison
  // carries total_rows 2, as a capture of those 2 rows would.
  summed->mutable_steps(0)->set_total_rows(2);
  ExpectTheSameH2oLog(*rows, *summed, 2);
}

TEST(Totals, Refusals) {
  ImportOptions options;
  options.kv_heads = 2;
  options.totals = true;
  EXPECT_TRUE(Contains(Refusal("no-totals.safetensors",
                               Safetensors(
                                   "{" + TensorJson("window.0", "F32", {2, 3, 5},
                                                    0, 120) + "}",
                                   FloatBytes(kWindow)),
                               options),
                       "--totals: the file has no tensor totals.0"));
  const auto refused = [&](const std::string& file, const std::string& text,
                           ImportOptions o) {
    const std::string path = file;
    absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, o);
    EXPECT_FALSE(scenario.ok()) << path;
    if (!scenario.ok()) {
      EXPECT_TRUE(Contains(std::string(scenario.status().message()), text))
          << scenario.status();
    }
  };
  refused(TotalsFile("f32.safetensors", std::vector<double>(5, 0.0), "totals.0",
                     "F32", {2, 5}),
          "tensor totals.0 has dtype F32; column totals are F64", options);
  refused(TotalsFile("shape.safetensors", std::vector<double>(12, 0.0),
                     "totals.0", "F64", {2, 6}),
          "tensor totals.0: shape [2, 6] is not [heads, P] = [2, 1..5]",
          options);
  refused(TotalsFile("heads.safetensors", std::vector<double>(15, 0.0),
                     "totals.0", "F64", {3, 5}),
          "is not [heads, P] = [2, 1..5]", options);
  refused(TotalsFile("empty.safetensors", {}, "totals.0", "F64", {2, 0}),
          "is not [heads, P] = [2, 1..5]", options);
  // Totals of 4 queries where the prefill step admits all 5 (no decode).
  refused(TotalsFile("four.safetensors", std::vector<double>(8, 0.0),
                     "totals.0", "F64", {2, 4}),
          "--totals with --decode=0: tensor totals.0 holds the totals of the "
          "first 4 queries, but the prefill step admits P = L - D = 5 - 0 = 5 "
          "positions; import with --decode=1, or capture with "
          "capture_attention.py --totals_decode 0",
          options);
  refused(TotalsFile("short.safetensors", std::vector<double>(9, 0.0),
                     "totals.0", "F64", {2, 5}),
          "needs 80", options);
  ImportOptions decode = options;
  decode.decode = 1;
  refused(TotalsFile("decode.safetensors", kTotals),
          "--totals with --decode=1: tensor totals.0 holds the totals of the "
          "first 5 queries, but the prefill step admits P = L - D = 5 - 1 = 4 "
          "positions; import with --decode=0",
          decode);
  // A matrix file: --totals is a window flag.
  EXPECT_TRUE(Contains(
      Refusal("matrix-totals.safetensors",
              SafetensorsOf("layer.0", {2, 3, 3}, kExample), options),
      "--totals applies to window.<n> and chunk.<n>.<e> tensors"));
  // Values: the first bad one, head by head (selected heads only).
  for (double bad : {std::nan(""), HUGE_VAL, -0.0, -1.0}) {
    std::vector<double> totals = kTotals;
    totals[5 + 3] = bad;  // head 1, position 3
    const std::string path = TotalsFile("bad.safetensors", totals);
    refused(path, "tensor totals.0, head 1, position 3: total", options);
    ImportOptions head0 = options;
    head0.heads = std::vector<uint32_t>{0};
    head0.kv_heads = 1;
    EXPECT_TRUE(ImportAttention(path, head0).ok()) << bad;
  }
}

TEST(Totals, TheSizeFormulaCountsThem) {
  // L across the 1- and 2-byte varints of the packed sums (8L >= 128 from
  // L = 16) and of the ColumnTotals message; with --decode=1 the totals'
  // width P = L - 1 crosses them at 17.
  for (int decode : {0, 1}) {
  for (int length : {1, 2, 15, 16, 17, 18, 40}) {
    if (length - decode < 1) continue;
    const int rows = std::min(length, 3);
    std::vector<float> window(static_cast<size_t>(2 * rows * length), 0.0f);
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < rows; ++r) {
        const int q = length - rows + r;
        for (int k = 0; k <= q; ++k) {
          window[(h * rows + r) * length + k] = 1.0f / static_cast<float>(q + 1);
        }
      }
    }
    const std::string data = FloatBytes(window);
    const int width = length - decode;
    const std::string sums = DoubleBytes(std::vector<double>(2 * width, 0.5));
    const std::string header =
        "{" +
        TensorJson("window.0", "F32",
                   {2, static_cast<uint64_t>(rows), static_cast<uint64_t>(length)},
                   0, data.size()) +
        "," +
        TensorJson("totals.0", "F64", {2, static_cast<uint64_t>(width)},
                   data.size(), data.size() + sums.size()) +
        "}";
    const std::string path =
        WriteInput(absl::StrCat("size-", length, "-", decode, ".safetensors"),
                   Safetensors(header, data + sums));
    ImportOptions options;
    options.totals = true;
    options.kv_heads = 2;
    options.decode = decode;
    ExpectExactSize(path, options);
  }
  }
}

std::string WriteSparse(const std::string& name, const std::string& head,
                        uint64_t size) {
  const std::string path = WriteInput(name, head);
  EXPECT_EQ(truncate(path.c_str(), static_cast<off_t>(size)), 0) << path;
  return path;
}

long MaxRssKib() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
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

TEST(Window, WrittenAndReadBack) {
  const std::string path = WindowFile("written.safetensors");
  ImportOptions options;
  options.decode = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string out = ::testing::TempDir() + "/written.pb";
  ASSERT_TRUE(WriteScenarioFile(*scenario, out).ok());
  std::ifstream in(out, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(), scenario->SerializeAsString());
}

TEST(Refusals, TruncatedSafetensors) {
  // Every prefix of a valid file is refused cleanly (never a crash).
  const std::string whole = Safetensors(
      "{" + TensorJson("window.0", "F32", {2, 3, 5}, 0, 120) + "}",
      FloatBytes(kWindow));
  for (size_t n = 0; n < whole.size(); ++n) {
    EXPECT_NE(Refusal("prefix.safetensors", whole.substr(0, n)), "accepted")
        << n;
  }
  EXPECT_EQ(Refusal("whole.safetensors", whole), "accepted");
}

// ---------------------------------------------------------------------------
// The chunks layout: chunk.<n>.<e> [heads, m, e], one tensor per chunk of a
// chunked prefill, row r the query at position e - m + r over keys 0..e-1.
// The hand-worked example: 2 heads, L = 5 in two chunks, positions 0..2
// (chunk.0.3, the rows of queries 1 and 2) and 3..4 (chunk.0.5, queries 3
// and 4).
//
//   chunk.0.3 [2, 2, 3]                 chunk.0.5 [2, 2, 5]
//   h0 q1  0.25  0.75 0                 h0 q3  0.125  0.125  0.25   0.5    0
//   h0 q2  0.125 0.5  0.375             h0 q4  0.0625 0.0625 0.125  0.25   0.5
//   h1 q1  0.5   0.5  0                 h1 q3  0.75   0.125  0.0625 0.0625 0
//   h1 q2  1e-45 +0.0 1                 h1 q4  0.25   0.25   0.125  0.125  0.25
//
// Default: step 0 admits 3 with the rows of queries 1 and 2 (q + 1 weights
// each), step 1 admits 2 with those of queries 3 and 4.
const std::vector<float> kChunk3 = {
    0.25f, 0.75f, 0,       0.125f,     0.5f, 0.375f,  // head 0
    0.5f,  0.5f,  0,       kSubnormal, 0.0f, 1,       // head 1
};
const std::vector<float> kChunk5 = {
    0.125f,  0.125f,  0.25f,   0.5f,    0,       // h0 q3
    0.0625f, 0.0625f, 0.125f,  0.25f,   0.5f,    // h0 q4
    0.75f,   0.125f,  0.0625f, 0.0625f, 0,       // h1 q3
    0.25f,   0.25f,   0.125f,  0.125f,  0.25f,   // h1 q4
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;
  std::vector<float> values;
  std::string dtype = "F32";
};

// A safetensors file of the tensors, in order, with `metadata` (a JSON
// object, or empty for none).
std::string TensorsFile(const std::vector<TensorSpec>& tensors,
                        const std::string& metadata = "") {
  std::vector<std::string> entries;
  std::string data;
  for (const TensorSpec& t : tensors) {
    const std::string bytes = FloatBytes(t.values);
    entries.push_back(TensorJson(t.name, t.dtype, t.shape, data.size(),
                                 data.size() + bytes.size()));
    data += bytes;
  }
  if (!metadata.empty()) entries.push_back("\"__metadata__\":" + metadata);
  return Safetensors(Header(entries), data);
}

std::vector<TensorSpec> Chunks() {
  return {{"chunk.0.3", {2, 2, 3}, kChunk3}, {"chunk.0.5", {2, 2, 5}, kChunk5}};
}

const char kChunkMetadata[] =
    R"({"tokens":"5","window_rows":"2","prefill_chunk":"3",)"
    R"("num_attention_heads":"2","layout":"chunks"})";

TEST(Chunks, OnePrefillStepPerChunk) {
  // Written out of order: the ends order the steps.
  const std::string path = WriteInput(
      "chunks.safetensors",
      TensorsFile({Chunks()[1], Chunks()[0]}, kChunkMetadata));
  ImportOptions options;
  options.kv_heads = 2;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->query_heads(), 2u);
  EXPECT_EQ(scenario->kv_heads(), 2u);
  ASSERT_EQ(scenario->steps_size(), 2);
  for (const v1::Step& step : scenario->steps()) {
    EXPECT_FALSE(step.has_attention());
    EXPECT_EQ(step.heads_size(), 0);
  }
  EXPECT_EQ(scenario->steps(0).admit(), 3u);
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({0.25f, 0.75f}),
                  BitsOfAll({0.125f, 0.5f, 0.375f}),
                  BitsOfAll({0.5f, 0.5f}),
                  BitsOfAll({kSubnormal, 0.0f, 1})}));
  EXPECT_EQ(scenario->steps(1).admit(), 2u);
  EXPECT_EQ(QueryBits(scenario->steps(1)),
            (Rows{BitsOfAll({0.125f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f}),
                  BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f, 0.25f})}));

  // --window_rows=1: each chunk's last query.
  options.window_rows = 1;
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 2);
  EXPECT_EQ(scenario->steps(0).admit(), 3u);
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({0.125f, 0.5f, 0.375f}),
                  BitsOfAll({kSubnormal, 0.0f, 1})}));
  EXPECT_EQ(scenario->steps(1).admit(), 2u);
  EXPECT_EQ(QueryBits(scenario->steps(1)),
            (Rows{BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f, 0.25f})}));
  // --window_rows above a chunk's rows is capped by them.
  options.window_rows = 100;
  absl::StatusOr<v1::Scenario> capped = ImportAttention(path, options);
  options.window_rows.reset();
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->SerializeAsString(),
            ImportAttention(path, options)->SerializeAsString());
}

TEST(Chunks, DecodeStepsTakeTheLastChunksLastPositions) {
  const std::string path =
      WriteInput("chunkdecode.safetensors", TensorsFile(Chunks()));
  ImportOptions options;
  options.decode = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 3);
  EXPECT_EQ(scenario->steps(0).admit(), 3u);
  EXPECT_EQ(scenario->steps(0).queries_size(), 4);
  // The last chunk's prefill step admits position 3 only, with query 3.
  const v1::Step& last = scenario->steps(1);
  EXPECT_EQ(last.admit(), 1u);
  EXPECT_EQ(QueryBits(last),
            (Rows{BitsOfAll({0.125f, 0.125f, 0.25f, 0.5f}),
                  BitsOfAll({0.75f, 0.125f, 0.0625f, 0.0625f})}));
  // Position 4 is decoded: its row without the diagonal.
  const v1::Step& decode = scenario->steps(2);
  EXPECT_EQ(decode.admit(), 1u);
  EXPECT_EQ(decode.queries_size(), 0);
  EXPECT_EQ(RowBits(decode),
            (Rows{BitsOfAll({0.0625f, 0.0625f, 0.125f, 0.25f}),
                  BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f})}));

  // One head, swapped: its decode row in `attention`.
  options.heads = std::vector<uint32_t>{1};
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(QueryBits(scenario->steps(0)),
            (Rows{BitsOfAll({0.5f, 0.5f}), BitsOfAll({kSubnormal, 0.0f, 1})}));
  EXPECT_TRUE(scenario->steps(2).has_attention());
  EXPECT_EQ(RowBits(scenario->steps(2)),
            (Rows{BitsOfAll({0.25f, 0.25f, 0.125f, 0.125f})}));
}

TEST(Chunks, TheHarnessAcceptsTheScenarios) {
  const std::string path = WriteInput(
      "chunkharness.safetensors", TensorsFile(Chunks(), kChunkMetadata));
  for (uint32_t decode : {0u, 1u}) {
    for (uint32_t rows : {1u, 2u}) {
      ImportOptions options;
      options.decode = decode;
      options.window_rows = rows;
      options.kv_heads = 2;
      absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
      ASSERT_TRUE(scenario.ok()) << scenario.status();
      for (const PolicyConfig& config :
           {PolicyConfig{"h2o", {{"budget", 2}, {"recent_window", 0}}},
            PolicyConfig{"snapkv",
                         {{"budget", 2}, {"recent_window", 0},
                          {"ratio_ppm", 500000}}},
            PolicyConfig{"tova", {{"budget", 2}, {"recent_window", 0}}}}) {
        const RunResult result = RunScenario(config, FromProto(*scenario));
        ASSERT_TRUE(result.refusal.ok())
            << config.name << " decode " << decode << " rows " << rows << ": "
            << result.refusal;
        EXPECT_EQ(result.steps.size(), 2u + decode);
      }
    }
  }
}

TEST(Chunks, WhichTensors) {
  const std::vector<TensorSpec> chunks = Chunks();
  const TensorSpec window = {"window.0", {2, 3, 5}, kWindow};
  // chunk.0.<e> beside window.0: --layout chooses, nothing is guessed.
  const std::string both = WriteInput(
      "chunkwindow.safetensors", TensorsFile({chunks[0], chunks[1], window}));
  EXPECT_EQ(ImportAttention(both, {}).status().message(),
            both + ": layer 0 has tensors chunk.0.<e> and window.0: choose "
                   "which to read with --layout=chunks or --layout=window");
  // And beside a matrix too: three ways.
  const std::string three = WriteInput(
      "chunkwindowlayer.safetensors",
      TensorsFile({{"layer.0", {2, 5, 5}, Uniform(2, 5)}, chunks[0],
                   chunks[1], window}));
  EXPECT_EQ(ImportAttention(three, {}).status().message(),
            three + ": layer 0 has tensors chunk.0.<e> and layer.0 and "
                    "window.0: choose which to read with --layout=chunks, "
                    "--layout=matrix or --layout=window");
  ImportOptions options;
  options.layout = TensorLayout::kChunks;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(both, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->steps_size(), 2);
  options.layout = TensorLayout::kWindow;
  scenario = ImportAttention(both, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->steps_size(), 1);
  EXPECT_EQ(scenario->steps(0).queries_size(), 6);
  options.layout = TensorLayout::kMatrix;
  EXPECT_EQ(ImportAttention(both, options).status().message(),
            both + ": --layout=matrix: the file has no tensor layer.0 (it "
                   "holds window.0, chunk.0.3 .. chunk.0.5 (2 chunks))");
  // Without chunks, --layout=chunks is refused.
  options.layout = TensorLayout::kChunks;
  EXPECT_EQ(Refusal("nochunks.safetensors", TensorsFile({window}), options),
            "--layout=chunks: the file has no tensor chunk.0.<e> (it holds "
            "window.0)");
  // --layout=window reads a window as before.
  options.layout = TensorLayout::kWindow;
  EXPECT_EQ(Refusal("onlywindow.safetensors", TensorsFile({window}), options),
            "accepted");
  // A .npy file and step rows have no layout to choose.
  EXPECT_EQ(Refusal("layout.npy", NpyOf({2, 3, 3}, kExample), options),
            "--layout=window applies to .safetensors files; a .npy file "
            "holds a [heads, L, L] matrix");
  EXPECT_EQ(Refusal("layoutsteps.safetensors",
                    SafetensorsOf("step.0", {1, 1}, {1}), options),
            "--layout=window applies to layer.<n>, window.<n> and "
            "chunk.<n>.<e> tensors; the file holds per-step rows (step.<t>)");
  // Two layers' chunks: --layer chooses.
  const std::string two = WriteInput(
      "twolayers.safetensors",
      TensorsFile({chunks[0], chunks[1], {"chunk.2.5", {2, 2, 5}, kChunk5},
                   {"chunk.2.3", {2, 2, 3}, kChunk3}}));
  EXPECT_EQ(ImportAttention(two, {}).status().message(),
            two + ": the file holds 2 layers (chunk.0.3 .. chunk.0.5 (2 "
                  "chunks), chunk.2.3 .. chunk.2.5 (2 chunks)): choose one "
                  "with --layer");
  options = {};
  options.layer = 2;
  EXPECT_TRUE(ImportAttention(two, options).ok());
  options.layer = 1;
  EXPECT_EQ(ImportAttention(two, options).status().message(),
            two + ": --layer=1: the file has no tensor chunk.1.<e> (it holds "
                  "chunk.0.3 .. chunk.0.5 (2 chunks), chunk.2.3 .. chunk.2.5 "
                  "(2 chunks))");
  // Chunks and step rows together.
  EXPECT_EQ(Refusal("chunksteps.safetensors",
                    TensorsFile({chunks[0], {"step.0", {1, 1}, {1}}})),
            "the file holds both chunk.<n>.<e> and step.<t> tensors; it must "
            "hold one kind");
}

TEST(ChunkRefusals, Names) {
  EXPECT_EQ(Refusal("lead.safetensors",
                    TensorsFile({{"chunk.0.03", {2, 2, 3}, kChunk3}})),
            "tensor name \"chunk.0.03\" is not chunk.<n>.<e> with n and e "
            "decimal numbers");
  EXPECT_EQ(Refusal("noend.safetensors",
                    TensorsFile({{"chunk.0", {2, 2, 3}, kChunk3}})),
            "tensor name \"chunk.0\" is not chunk.<n>.<e> with n and e "
            "decimal numbers");
  EXPECT_EQ(Refusal("three.safetensors",
                    TensorsFile({{"chunk.0.3.1", {2, 2, 3}, kChunk3}})),
            "tensor name \"chunk.0.3.1\" is not chunk.<n>.<e> with n and e "
            "decimal numbers");
  EXPECT_EQ(Refusal("zero.safetensors",
                    TensorsFile({{"chunk.0.0", {2, 2, 3}, kChunk3}})),
            "tensor name \"chunk.0.0\": a chunk ends after at least one "
            "position (e >= 1)");
}

TEST(ChunkRefusals, ShapesAndDtypes) {
  std::vector<TensorSpec> chunks = Chunks();
  chunks[1].dtype = "F64";
  EXPECT_EQ(Refusal("f64.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5 has dtype F64; only F32 is supported");
  // Bytes that do not fill the shape.
  chunks = Chunks();
  chunks[1].values.pop_back();
  EXPECT_EQ(Refusal("short.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5: data_offsets [48, 124] hold 76 bytes but shape "
            "[2, 2, 5] of F32 needs 80");
  chunks = Chunks();
  chunks[1].shape = {2, 10};
  EXPECT_EQ(Refusal("rank.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5: shape [2, 10] is not [heads, m, e] (e = 5, the "
            "chunk's end)");
  chunks = Chunks();
  chunks[1].shape = {2, 2, 1, 5};
  EXPECT_EQ(Refusal("rank4.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5: shape [2, 2, 1, 5] is not [heads, m, e] (e = "
            "5, the chunk's end)");
  // A width that is not its end: [2, 2, 5] saved as chunk.0.6.
  chunks = Chunks();
  chunks[1].name = "chunk.0.6";
  EXPECT_EQ(Refusal("width.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.6: shape [2, 2, 5] has rows of 5 keys, but a chunk "
            "ending at 6 has rows over keys 0..5 (shape [heads, m, 6])");
  // More rows than the chunk admits: chunk.0.4 after chunk.0.3 admits 1.
  chunks = Chunks();
  chunks[1] = {"chunk.0.4", {2, 2, 4},
               std::vector<float>(16, 0.0f)};
  EXPECT_EQ(Refusal("tall.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.4: shape [2, 2, 4] has m = 2 rows, more than the 1 "
            "position its chunk admits (3..3, after chunk.0.3)");
  EXPECT_EQ(Refusal("tallfirst.safetensors",
                    TensorsFile({{"chunk.0.2", {1, 3, 2},
                                  std::vector<float>(6, 0.0f)}})),
            "tensor chunk.0.2: shape [1, 3, 2] has m = 3 rows, more than the 2 "
            "positions its chunk admits (0..1, the first chunk)");
  EXPECT_EQ(Refusal("norows.safetensors",
                    TensorsFile({{"chunk.0.3", {2, 0, 3}, {}}})),
            "tensor chunk.0.3: shape [2, 0, 3] has m = 0: no rows");
  EXPECT_EQ(Refusal("noheads.safetensors",
                    TensorsFile({{"chunk.0.3", {0, 2, 3}, {}}})),
            "tensor chunk.0.3: shape [0, 2, 3] has no heads");
  // Heads that differ between chunks.
  chunks = Chunks();
  chunks[1] = {"chunk.0.5", {1, 2, 5},
               std::vector<float>(kChunk5.begin(), kChunk5.begin() + 10)};
  EXPECT_EQ(Refusal("heads.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5 has 1 heads but chunk.0.3 has 2: every chunk "
            "holds the same heads");
  // Layers whose chunks end at different L.
  chunks = Chunks();
  chunks.push_back({"chunk.1.3", {2, 2, 3}, kChunk3});
  chunks.push_back({"chunk.1.4", {2, 1, 4}, std::vector<float>(8, 0.0f)});
  ImportOptions options;
  options.layer = 0;
  EXPECT_EQ(Refusal("ends.safetensors", TensorsFile(chunks), options),
            "layer 0's chunks end at 5 (chunk.0.5) but layer 1's at 4 "
            "(chunk.1.4): every layer's chunks end at the prompt's L");
}

TEST(ChunkRefusals, Metadata) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"tokens":"6"})",
       "__metadata__ says tokens = \"6\" but the last chunk tensor, "
       "chunk.0.5, ends at L = 5: the file contradicts itself"},
      {R"({"num_attention_heads":"4"})",
       "__metadata__ says num_attention_heads = \"4\" but the chunk tensors "
       "have 2 heads: the file contradicts itself"},
      // A missing chunk: chunks of 2 end at 2, 4 and 5.
      {R"({"prefill_chunk":"2"})",
       "__metadata__ says prefill_chunk = \"2\", so the chunks end at the "
       "multiples of 2 below L = 5 and at L, but the file has no tensor "
       "chunk.0.2: a chunk is missing (the first is chunk.0.3)"},
      {R"({"prefill_chunk":"4"})",
       "__metadata__ says prefill_chunk = \"4\", so the chunks end at the "
       "multiples of 4 below L = 5 and at L, but tensor chunk.0.3 ends at 3: "
       "the file contradicts itself"},
      // One chunk of 5 would hold everything: chunk.0.3 is one too many.
      {R"({"prefill_chunk":"5"})",
       "__metadata__ says prefill_chunk = \"5\", so the chunks end at the "
       "multiples of 5 below L = 5 and at L, but tensor chunk.0.3 ends at 3: "
       "the file contradicts itself"},
      {R"({"prefill_chunk":"0"})",
       "__metadata__ says prefill_chunk = \"0\": a chunk holds at least one "
       "position"},
      {R"({"window_rows":"1"})",
       "__metadata__ says window_rows = \"1\" but tensor chunk.0.3 has 2 "
       "rows, not min(1, the 3 positions its chunk admits) = 1: the file "
       "contradicts itself"},
      {R"({"window_rows":"3"})",
       "__metadata__ says window_rows = \"3\" but tensor chunk.0.3 has 2 "
       "rows, not min(3, the 3 positions its chunk admits) = 3: the file "
       "contradicts itself"},
      // Not numbers: not compared.
      {R"({"tokens":"five","prefill_chunk":"","window_rows":"-1"})",
       "accepted"},
      {kChunkMetadata, "accepted"},
  };
  for (const auto& [metadata, want] : cases) {
    EXPECT_EQ(Refusal("chunkmeta.safetensors", TensorsFile(Chunks(), metadata)),
              want)
        << metadata;
  }
  // A chunk missing in the middle: chunks of 2 over L = 6, chunk.0.4
  // absent.
  const std::vector<TensorSpec> gap = {
      {"chunk.0.2", {1, 1, 2}, {0.5f, 0.5f}},
      {"chunk.0.6", {1, 1, 6}, {0.25f, 0.25f, 0.125f, 0.125f, 0.125f, 0.125f}}};
  EXPECT_EQ(Refusal("gap.safetensors",
                    TensorsFile(gap, R"({"prefill_chunk":"2"})")),
            "__metadata__ says prefill_chunk = \"2\", so the chunks end at the "
            "multiples of 2 below L = 6 and at L, but the file has no tensor "
            "chunk.0.4: a chunk is missing (chunk.0.6 follows chunk.0.2)");
  // Without the metadata the same file is two chunks, of 2 and 4.
  EXPECT_EQ(Refusal("nogap.safetensors", TensorsFile(gap)), "accepted");
}

TEST(ChunkRefusals, FlagsAndWeights) {
  const std::string bytes = TensorsFile(Chunks());
  ImportOptions options;
  options.decode = 2;
  EXPECT_EQ(Refusal("d2.safetensors", bytes, options),
            "--decode=2: the decode steps take the rows of the last chunk's "
            "last queries, and its prefill step needs at least one: tensor "
            "chunk.0.5 holds 2 rows (queries 3..4); give --decode below 2");
  options.decode = 5;
  EXPECT_EQ(Refusal("d5.safetensors", bytes, options),
            "--decode=5: the prompt has L = 5 positions (the last chunk tensor "
            "is chunk.0.5); at most 4 can be decode steps, the prefill steps "
            "admit at least one");
  options.decode.reset();
  options.window_rows = 0;
  EXPECT_EQ(Refusal("m0.safetensors", bytes, options),
            "--window_rows=0: each prefill step needs at least 1 query row");

  // Not causal: head 1, query 1, column 2 of chunk.0.3.
  std::vector<TensorSpec> chunks = Chunks();
  chunks[0].values[2 * 3 + 2] = 0.25f;
  EXPECT_EQ(Refusal("noncausal.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.3, head 1, row 1 (chunk row 0), column 2: weight "
            "0.25 (bits 0x3e800000) above the diagonal, where a causal row has "
            "exactly +0.0: the file is not causal");
  // That row is not carried with --window_rows=1, nor head 1 with
  // --heads=0: not read.
  options = {};
  options.window_rows = 1;
  EXPECT_EQ(Refusal("unused.safetensors", TensorsFile(chunks), options),
            "accepted");
  options = {};
  options.heads = std::vector<uint32_t>{0};
  EXPECT_EQ(Refusal("unselected.safetensors", TensorsFile(chunks), options),
            "accepted");
  // -0.0 above the diagonal of the last chunk.
  chunks = Chunks();
  chunks[1].values[4] = -0.0f;  // head 0, query 3, column 4
  EXPECT_EQ(Refusal("minus.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5, head 0, row 3 (chunk row 0), column 4: weight "
            "-0 (bits 0x80000000) above the diagonal, where a causal row has "
            "exactly +0.0: the file is not causal");
  // A NaN in a carried weight; a diagonal -0.0 in a decoded row is not
  // carried.
  chunks = Chunks();
  chunks[0].values[1] = kNaN;  // head 0, query 1, column 1
  EXPECT_EQ(Refusal("nan.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.3, head 0, row 1 (chunk row 0), column 1: NaN");
  chunks = Chunks();
  chunks[1].values[19] = -0.0f;  // head 1, query 4, its diagonal
  EXPECT_EQ(Refusal("diag.safetensors", TensorsFile(chunks)),
            "tensor chunk.0.5, head 1, row 4 (chunk row 1), column 4: -0.0 "
            "(weights must have the sign bit clear, "
            "spec/harness.md#attention-weights)");
  options = {};
  options.decode = 1;
  EXPECT_EQ(Refusal("diagdecode.safetensors", TensorsFile(chunks), options),
            "accepted");
  // Every prefix of the file is refused cleanly.
  const std::string whole = TensorsFile(Chunks(), kChunkMetadata);
  for (size_t n = 0; n < whole.size(); n += 7) {
    EXPECT_NE(Refusal("chunkprefix.safetensors", whole.substr(0, n)),
              "accepted")
        << n;
  }
}

// Chunks of `chunk` positions over L = length, each holding the rows of its
// last min(rows, chunk) queries, uniform causal rows.
std::vector<TensorSpec> UniformChunks(int heads, int rows, int chunk,
                                      int length, int layer = 0) {
  std::vector<TensorSpec> tensors;
  for (int start = 0; start < length; start += chunk) {
    const int end = std::min(start + chunk, length);
    const int m = std::min(rows, end - start);
    std::vector<float> values;
    for (int h = 0; h < heads; ++h) {
      for (int r = 0; r < m; ++r) {
        const int q = end - m + r;
        for (int k = 0; k < end; ++k) {
          values.push_back(k <= q ? 1.0f / (q + 1) : 0.0f);
        }
      }
    }
    tensors.push_back({absl::StrCat("chunk.", layer, ".", end),
                       {static_cast<uint64_t>(heads),
                        static_cast<uint64_t>(m),
                        static_cast<uint64_t>(end)},
                       values});
  }
  return tensors;
}

TEST(Chunks, TheSizeFormulaIsByteSizeLong) {
  ExpectExactSize(WriteInput("chunksize1.safetensors",
                             TensorsFile(Chunks(), kChunkMetadata)),
                  {});
  // Rows crossing the 1- and 2-byte length varints, a short last chunk.
  const std::string path = WriteInput(
      "chunksize2.safetensors", TensorsFile(UniformChunks(2, 40, 64, 300)));
  for (std::optional<uint32_t> decode :
       {std::optional<uint32_t>(), std::optional<uint32_t>(5),
        std::optional<uint32_t>(39)}) {
    for (std::optional<uint32_t> rows :
         {std::optional<uint32_t>(), std::optional<uint32_t>(1),
          std::optional<uint32_t>(30)}) {
      ImportOptions options;
      options.decode = decode;
      options.window_rows = rows;
      ExpectExactSize(path, options);
      options.heads = std::vector<uint32_t>{1};
      ExpectExactSize(path, options);
    }
  }
  // Chunks of one position: L prefill steps of one query row each.
  ExpectExactSize(WriteInput("chunksize3.safetensors",
                             TensorsFile(UniformChunks(1, 64, 1, 50))),
                  {});
}

TEST(Chunks, LimitsAreCheckedBeforeAnythingIsRead) {
  // Two chunks [32, 128, 100000] and [32, 128, 200000]: 4.9 GB of data (a
  // hole), a 4.9 GB scenario.
  const uint64_t first = uint64_t{32} * 128 * 100000 * 4;
  const uint64_t second = uint64_t{32} * 128 * 200000 * 4;
  const std::string head = Safetensors(
      Header({TensorJson("chunk.4.100000", "F32", {32, 128, 100000}, 0, first),
              TensorJson("chunk.4.200000", "F32", {32, 128, 200000}, first,
                         first + second)}),
      "");
  const std::string path =
      WriteSparse("hugechunks.safetensors", head, head.size() + first + second);
  const long rss_before = MaxRssKib();
  ImportOptions options;
  options.kv_heads = 8;
  absl::StatusOr<ImportSize> size = MeasureImport(path, options);
  ASSERT_TRUE(size.ok()) << size.status();
  const uint64_t want = ScenarioWireBytes(
      22, 32, 8,
      std::vector<PrefillShape>{{100000, 100000, 128}, {100000, 200000, 128}},
      200000, 200000);
  EXPECT_EQ(size->scenario_bytes, want);
  // Over 32 heads x 128 rows x (100000 + 200000 - 2 x 128) weights.
  EXPECT_GT(want, uint64_t{32} * 128 * (300000 - 256) * 4);
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  const std::string message(scenario.status().message());
  EXPECT_EQ(scenario.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(StartsWith(
      message,
      absl::StrCat(path, ": the scenario would be ", want, " bytes (")))
      << message;
  EXPECT_TRUE(Contains(
      message,
      "serialized (32 heads, 2 prefill steps (one per chunk) carrying 256 "
      "query rows per head in all over a prompt of 200000 positions, 0 "
      "decode steps), over the 2147483647 bytes (2.00 GiB) limit of one "
      "protobuf message"))
      << message;
  EXPECT_TRUE(Contains(
      message,
      "Ways out: fewer heads (--heads), fewer query rows per chunk "
      "(--window_rows), fewer decode steps (--decode, now 0), fewer and "
      "larger chunks (capture_attention.py --prefill_chunk), or a shorter "
      "prompt"))
      << message;
  EXPECT_LT(MaxRssKib() - rss_before, 64 * 1024);

  // Memory: the small example with 1000 bytes available.
  const std::string small = WriteInput("chunkmemory.safetensors",
                                       TensorsFile(Chunks()));
  options = {};
  options.memory_available = 1000;
  scenario = ImportAttention(small, options);
  EXPECT_EQ(scenario.status().code(), absl::StatusCode::kResourceExhausted);
  // Input: 2 heads x (2 rows x 3 + 2 rows x 5) keys x 4 bytes = 128;
  // scenario: 28 weights (2 heads x (2 + 3 + 4 + 5)) x 4 + 8 rows x 128 +
  // 2 steps x 192 + the id's 23 bytes + 256 = 1799.
  EXPECT_EQ(scenario.status().message(),
            small + ": the import needs about 1927 bytes (0.00 GiB) of memory "
                    "(128 bytes (0.00 GiB) of the input read through its "
                    "mapping + about 1799 bytes (0.00 GiB) for the scenario's "
                    "28 weights in 8 rows) and 1000 bytes (0.00 GiB) is "
                    "available (the memory limit given): import fewer heads "
                    "(--heads), fewer window rows (--window_rows) or decode "
                    "steps (--decode), or free memory");
  options.memory_available = 1927;
  EXPECT_TRUE(ImportAttention(small, options).ok());
}
}  // namespace
}  // namespace kvspec
