// Tests of tools/import_attention_lib.h. Every input file is built here byte
// by byte (the .npy and .safetensors layouts written out in full) and
// written to the test's temporary directory, so the test needs no NumPy and
// no model.
#include "tools/import_attention_lib.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
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
                         nowhere + ": cannot create a temporary file"))
      << status;
  struct stat info;
  EXPECT_NE(stat(nowhere.c_str(), &info), 0);
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
      "the file holds no tensor layer.<n> (a [heads, L, L] matrix) and no "
      "tensor step.<t> (per-step rows)");
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

}  // namespace
}  // namespace kvspec
