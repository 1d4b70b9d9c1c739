// Tests of tools/attention/import_attention_lib.h: keys (ImportOptions::keys,
// spec/tensors.md): keys.<n> beside a window, a matrix or chunks carried bit
// for bit on the steps that admit their positions, for the scenario's KV
// heads; knorm's victims from them as the card gives them; their refusals
// and their size.
#include "tools/attention/import_attention_lib.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_test_util.h"

namespace kvspec {
namespace import_test {
namespace {

const std::string kTwoKvHeads = R"({"num_key_value_heads": "2"})";
const std::string kOneKvHead = R"({"num_key_value_heads": "1"})";

// keys.0 [K, L, d] whose value at [g, p, c] is 100 g + 10 p + c: every key
// names its KV head, position and channel.
std::vector<float> NamedKeys(int kv_heads, int length, int d) {
  std::vector<float> keys;
  for (int g = 0; g < kv_heads; ++g) {
    for (int p = 0; p < length; ++p) {
      for (int c = 0; c < d; ++c) keys.push_back(100.0f * g + 10.0f * p + c);
    }
  }
  return keys;
}

// The values of a step's keys, one list per entry.
std::vector<std::vector<float>> KeysOf(const v1::Step& step) {
  std::vector<std::vector<float>> keys;
  for (const v1::HeadVectors& entry : step.keys()) {
    keys.emplace_back(entry.values().begin(), entry.values().end());
  }
  return keys;
}

// kWindow's file (window.0 [2, 3, 5]) with keys.0 of `shape` holding
// `keys`, and `metadata`.
std::string WindowWithKeys(const std::string& name,
                           const std::vector<float>& keys,
                           const std::vector<uint64_t>& shape,
                           const std::string& metadata = kTwoKvHeads,
                           const std::string& dtype = "F32") {
  return WriteInput(name, TensorsFile({{"window.0", {2, 3, 5}, kWindow},
                                       {"keys.0", shape, keys, dtype}},
                                      metadata));
}

// The window with --decode=1 (hand-worked from import_attention_lib.h's
// window example and spec/tensors.md#the-fields): step 0 admits positions
// 0..3 and carries, per KV head, their 4 keys of d = 3 channels, position
// by position; step 1 admits position 4 and carries its key per KV head.
TEST(Keys, CarriedOnTheStepsThatAdmitThem) {
  const std::string path =
      WindowWithKeys("window-keys.safetensors", NamedKeys(2, 5, 3), {2, 5, 3});
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.keys = true;
  options.decode = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->head_dim(), 3u);
  EXPECT_EQ(scenario->kv_heads(), 2u);
  ASSERT_EQ(scenario->steps_size(), 2);
  using Keys = std::vector<std::vector<float>>;
  EXPECT_EQ(KeysOf(scenario->steps(0)),
            (Keys{{0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32},
                  {100, 101, 102, 110, 111, 112, 120, 121, 122, 130, 131,
                   132}}));
  EXPECT_EQ(KeysOf(scenario->steps(1)), (Keys{{40, 41, 42}, {140, 141, 142}}));
  ExpectExactSize(path, options);

  // Without --keys the tensor is not read: no head_dim, no keys.
  options.keys = false;
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_FALSE(scenario->has_head_dim());
  EXPECT_EQ(scenario->steps(0).keys_size(), 0);
}

// Keys are copied bit for bit: a subnormal, -0.0 and the largest float.
TEST(Keys, CopiedBitForBit) {
  const std::vector<float> odd = {kSubnormal, -0.0f, 3.4028235e38f,
                                  -1.0f,      0.1f,  -kSubnormal};
  std::vector<float> keys(10, 0.5f);
  keys.insert(keys.begin(), odd.begin(), odd.end());
  keys.resize(10);  // K = 2, L = 5, d = 1: positions 0..4 of each KV head
  const std::string path =
      WindowWithKeys("bits.safetensors", keys, {2, 5, 1});
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.keys = true;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps(0).keys_size(), 2);
  for (int g = 0; g < 2; ++g) {
    for (int p = 0; p < 5; ++p) {
      EXPECT_EQ(BitsOfAll({scenario->steps(0).keys(g).values(p)}),
                BitsOfAll({keys[g * 5 + p]}))
          << "KV head " << g << ", position " << p;
    }
  }
}

// Four query heads over two KV heads: --heads=2,3 keeps KV head 1 only, so
// the scenario's one KV head carries the file's KV head 1's keys; --heads=
// 0,2 keeps one head of each, the scenario's KV heads 0 and 1.
TEST(Keys, FollowTheSelectedHeadsKvHeads) {
  const std::string path = WriteInput(
      "four-heads.safetensors",
      TensorsFile({{"window.0", {4, 1, 3}, UniformWindow(4, 1, 3)},
                   {"keys.0", {2, 3, 1}, NamedKeys(2, 3, 1)}},
                  kTwoKvHeads));
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.keys = true;
  options.heads = std::vector<uint32_t>{2, 3};
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->kv_heads(), 1u);
  using Keys = std::vector<std::vector<float>>;
  EXPECT_EQ(KeysOf(scenario->steps(0)), (Keys{{100, 110, 120}}));
  ExpectExactSize(path, options);
  options.heads = std::vector<uint32_t>{0, 2};
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->kv_heads(), 2u);
  EXPECT_EQ(KeysOf(scenario->steps(0)), (Keys{{0, 10, 20}, {100, 110, 120}}));
  // Heads in the order given: KV head 1's head first.
  options.heads = std::vector<uint32_t>{3, 2};
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(KeysOf(scenario->steps(0)), (Keys{{100, 110, 120}}));
}

// A matrix (kExample: 2 heads sharing 1 KV head, L = 3): one decode step
// per position, each carrying its own key. knorm with budget 2
// (spec/policies/knorm.md: score +0.0 - norm(key), the lowest evicted) on
// keys of norms 5, 2 and 1 evicts position 0 at step 2.
TEST(Keys, MatrixStepsCarryTheirPositionsKeyAndKnormReadsThem) {
  const std::string path = WriteInput(
      "matrix-keys.safetensors",
      TensorsFile({{"layer.0", {2, 3, 3}, kExample},
                   {"keys.0", {1, 3, 2}, {3, 4, 0, 2, 1, 0}}},
                  kOneKvHead));
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.keys = true;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 3);
  using Keys = std::vector<std::vector<float>>;
  EXPECT_EQ(KeysOf(scenario->steps(0)), (Keys{{3, 4}}));
  EXPECT_EQ(KeysOf(scenario->steps(1)), (Keys{{0, 2}}));
  EXPECT_EQ(KeysOf(scenario->steps(2)), (Keys{{1, 0}}));
  ExpectExactSize(path, options);

  const PolicyConfig config = {"knorm", {{"budget", 2}}};
  const RunResult result = RunScenario(config, FromProto(*scenario), {});
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 3u);
  EXPECT_TRUE(result.steps[0].victims.empty());
  EXPECT_TRUE(result.steps[1].victims.empty());
  EXPECT_EQ(result.steps[2].victims, (std::vector<uint32_t>{0}));
}

// Chunks: chunk.0.2 (one row) and chunk.0.4 (two): step 0 admits positions
// 0, 1 and carries their keys; step 1 positions 2, 3; with --decode=1,
// step 1 position 2 and the decode step 2 position 3.
TEST(Keys, ChunksCarryTheirPositionsKeys) {
  const std::string path = WriteInput(
      "chunk-keys.safetensors",
      TensorsFile({{"chunk.0.2", {1, 1, 2}, {0.5f, 0.5f}},
                   {"chunk.0.4", {1, 2, 4},
                    {0.25f, 0.25f, 0.5f, 0.0f, 0.25f, 0.25f, 0.25f, 0.25f}},
                   {"keys.0", {1, 4, 2}, NamedKeys(1, 4, 2)}},
                  kOneKvHead));
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.keys = true;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 2);
  using Keys = std::vector<std::vector<float>>;
  EXPECT_EQ(KeysOf(scenario->steps(0)), (Keys{{0, 1, 10, 11}}));
  EXPECT_EQ(KeysOf(scenario->steps(1)), (Keys{{20, 21, 30, 31}}));
  ExpectExactSize(path, options);
  options.decode = 1;  // the last chunk's last position decoded
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 3);
  EXPECT_EQ(KeysOf(scenario->steps(1)), (Keys{{20, 21}}));
  EXPECT_EQ(KeysOf(scenario->steps(2)), (Keys{{30, 31}}));
  ExpectExactSize(path, options);
}

TEST(Keys, Refusals) {
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.keys = true;
  const auto refused = [&](const std::string& path, const std::string& text,
                           const ImportOptions& o) {
    absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, o);
    EXPECT_FALSE(scenario.ok()) << path;
    if (!scenario.ok()) {
      EXPECT_TRUE(Contains(std::string(scenario.status().message()), text))
          << scenario.status();
    }
  };
  refused(WindowFile("no-keys.safetensors", kWindow, kTwoKvHeads),
          "--keys: the file has no tensor keys.0 (capture_attention.py "
          "--keys writes it; it holds window.0)",
          options);
  const std::vector<float> ten(10, 1.0f);
  refused(WindowWithKeys("f16.safetensors", ten, {2, 5, 1}, kTwoKvHeads, "F16"),
          "tensor keys.0 has dtype F16; keys are F32", options);
  refused(WindowWithKeys("length.safetensors", ten, {2, 10, 1}),
          "tensor keys.0: shape [2, 10, 1] is not [KV heads, L, head_dim] = "
          "[1.., 5, 1..1024]",
          options);
  refused(WindowWithKeys("two-dims.safetensors", ten, {2, 5}),
          "shape [2, 5] is not [KV heads, L, head_dim]", options);
  refused(WindowWithKeys("zero-d.safetensors", {}, {2, 5, 0}),
          "shape [2, 5, 0] is not", options);
  refused(WindowWithKeys("wide.safetensors", std::vector<float>(5 * 1025, 1.0f),
                         {1, 5, 1025}),
          "shape [1, 5, 1025] is not", options);
  refused(WindowWithKeys("no-kv.safetensors", {}, {0, 5, 1}),
          "shape [0, 5, 1] is not", options);
  // K against the metadata: missing, or another number.
  refused(WindowWithKeys("no-metadata.safetensors", ten, {2, 5, 1}, ""),
          "--keys: tensor keys.0 holds 2 KV heads' keys, and the file's "
          "__metadata__ has no num_key_value_heads",
          [&] {
            ImportOptions o = options;
            o.kv_heads = 2;
            return o;
          }());
  refused(WindowWithKeys("one-kv.safetensors", std::vector<float>(5, 1.0f),
                         {1, 5, 1}),
          "--keys: tensor keys.0 holds 1 KV heads' keys but __metadata__ says "
          "num_key_value_heads = \"2\": the file contradicts itself",
          options);
  // Values (spec/tensors.md#checks): finite only; the first bad one named.
  for (float bad : {std::nanf(""), HUGE_VALF, -HUGE_VALF}) {
    std::vector<float> keys = NamedKeys(2, 5, 3);
    keys[(1 * 5 + 3) * 3 + 2] = bad;  // KV head 1, position 3, channel 2
    refused(WindowWithKeys("bad.safetensors", keys, {2, 5, 3}),
            "tensor keys.0, KV head 1, position 3, channel 2: key", options);
  }
  // Not a layer's tensors: a .npy file, step rows.
  refused(WriteInput("keys.npy", NpyOf({2, 3, 3}, kExample)),
          "--keys reads keys.<n> beside a layer's tensors of a .safetensors "
          "file",
          options);
  refused(WriteInput("steps.safetensors",
                     TensorsFile({{"step.0", {1, 1}, {1.0f}},
                                  {"step.1", {1, 2}, {0.5f, 0.5f}}})),
          "--keys reads keys.<n> beside a layer's tensors; the file holds "
          "per-step rows",
          options);
  // The bytes the header says against the shape.
  const std::string rows = FloatBytes(kWindow);
  const std::string keys = FloatBytes(ten);
  refused(WriteInput("offsets.safetensors",
                     Safetensors("{" +
                                     TensorJson("window.0", "F32", {2, 3, 5},
                                                0, rows.size()) +
                                     "," +
                                     TensorJson("keys.0", "F32", {2, 5, 2},
                                                rows.size(),
                                                rows.size() + keys.size()) +
                                     R"(,"__metadata__":{"num_key_value_heads":"2"}})",
                                 rows + keys)),
          "tensor keys.0: data_offsets", options);
}

TEST(Keys, TheSizeFormulaCountsThem) {
  // admit x d across the 1- and 2-byte varints of the packed values (4 a d
  // >= 128 from a d = 32) and of the HeadVectors and Step messages, and d
  // across head_dim's varint (128).
  for (int d : {1, 2, 31, 32, 33, 127, 128, 129}) {
    for (int decode : {0, 1, 2}) {
      const int length = 5;
      const std::string path = WindowWithKeys(
          absl::StrCat("size-", d, "-", decode, ".safetensors"),
          std::vector<float>(static_cast<size_t>(2 * length * d), 0.5f),
          {2, static_cast<uint64_t>(length), static_cast<uint64_t>(d)});
      ImportOptions options;
      options.kv_heads_from_file = true;
      options.keys = true;
      options.decode = decode;
      options.window_rows = 1;
      ExpectExactSize(path, options);
      absl::StatusOr<ImportSize> size = MeasureImport(path, options);
      ASSERT_TRUE(size.ok()) << size.status();
      // The input read: the used rows' weights and every carried key.
      EXPECT_GE(size->input_bytes, uint64_t{2} * length * d * 4);
    }
  }
}

}  // namespace
}  // namespace import_test
}  // namespace kvspec
