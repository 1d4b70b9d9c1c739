// Tests of tools/attention/import_attention_lib.h: values
// (ImportOptions::values, spec/tensors.md): values.<n> beside a window, a
// matrix or chunks carried bit for bit on the steps that admit their
// positions, for the scenario's KV heads, with or without keys (value_dim e
// need not be head_dim d); lagkv's victims from the keys and values as its
// card gives them; their refusals and their size.
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

using Vectors = std::vector<std::vector<float>>;

// A tensor [K, L, dim] whose entry at [g, p, c] is base + 100 g + 10 p + c:
// every entry names its KV head, position and channel (base 0 for keys,
// 1000 for values, so that neither passes for the other).
std::vector<float> Named(int kv_heads, int length, int dim, float base) {
  std::vector<float> out;
  for (int g = 0; g < kv_heads; ++g) {
    for (int p = 0; p < length; ++p) {
      for (int c = 0; c < dim; ++c) {
        out.push_back(base + 100.0f * g + 10.0f * p + c);
      }
    }
  }
  return out;
}

Vectors Of(const google::protobuf::RepeatedPtrField<v1::HeadVectors>& field) {
  Vectors out;
  for (const v1::HeadVectors& entry : field) {
    out.emplace_back(entry.values().begin(), entry.values().end());
  }
  return out;
}
Vectors ValuesOf(const v1::Step& step) { return Of(step.values()); }
Vectors KeysOf(const v1::Step& step) { return Of(step.keys()); }

ImportOptions ValueOptions(bool keys = false) {
  ImportOptions options;
  options.kv_heads_from_file = true;
  options.values = true;
  options.keys = keys;
  return options;
}

// kWindow's file (window.0 [2, 3, 5]) with values.0 of `shape` holding
// `values` (and keys.0 [2, 5, 3], named, when `with_keys`), and `metadata`.
std::string WindowWithValues(const std::string& name,
                             const std::vector<float>& values,
                             const std::vector<uint64_t>& shape,
                             const std::string& metadata = kTwoKvHeads,
                             const std::string& dtype = "F32",
                             bool with_keys = false) {
  std::vector<TensorSpec> tensors = {{"window.0", {2, 3, 5}, kWindow}};
  if (with_keys) tensors.push_back({"keys.0", {2, 5, 3}, Named(2, 5, 3, 0)});
  tensors.push_back({"values.0", shape, values, dtype});
  return WriteInput(name, TensorsFile(tensors, metadata));
}

// The window with --decode=1 (import_attention_lib.h's window example and
// spec/tensors.md#the-fields): step 0 admits positions 0..3 and carries,
// per KV head, their 4 values of e = 4 channels, position by position;
// step 1 admits position 4 and carries its value per KV head. With --keys
// too, the keys (d = 3) beside them, each as without the other.
TEST(Values, CarriedOnTheStepsThatAdmitThem) {
  const std::string path =
      WindowWithValues("window-values.safetensors", Named(2, 5, 4, 1000),
                       {2, 5, 4}, kTwoKvHeads, "F32", /*with_keys=*/true);
  ImportOptions options = ValueOptions();
  options.decode = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->value_dim(), 4u);
  EXPECT_FALSE(scenario->has_head_dim());
  EXPECT_EQ(scenario->kv_heads(), 2u);
  ASSERT_EQ(scenario->steps_size(), 2);
  const Vectors step0 = {
      {1000, 1001, 1002, 1003, 1010, 1011, 1012, 1013, 1020, 1021, 1022, 1023,
       1030, 1031, 1032, 1033},
      {1100, 1101, 1102, 1103, 1110, 1111, 1112, 1113, 1120, 1121, 1122, 1123,
       1130, 1131, 1132, 1133}};
  const Vectors step1 = {{1040, 1041, 1042, 1043}, {1140, 1141, 1142, 1143}};
  EXPECT_EQ(ValuesOf(scenario->steps(0)), step0);
  EXPECT_EQ(ValuesOf(scenario->steps(1)), step1);
  EXPECT_EQ(scenario->steps(0).keys_size(), 0);
  ExpectExactSize(path, options);

  // With --keys: both, each on the steps that admit their positions.
  options.keys = true;
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->head_dim(), 3u);
  EXPECT_EQ(scenario->value_dim(), 4u);
  EXPECT_EQ(ValuesOf(scenario->steps(0)), step0);
  EXPECT_EQ(ValuesOf(scenario->steps(1)), step1);
  EXPECT_EQ(KeysOf(scenario->steps(1)),
            (Vectors{{40, 41, 42}, {140, 141, 142}}));
  ExpectExactSize(path, options);

  // Without --values the tensor is not read: no value_dim, no values.
  options.values = false;
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_FALSE(scenario->has_value_dim());
  EXPECT_EQ(scenario->head_dim(), 3u);
  EXPECT_EQ(scenario->steps(0).values_size(), 0);
}

// Values are copied bit for bit: a subnormal, -0.0 and the largest float.
TEST(Values, CopiedBitForBit) {
  const std::vector<float> odd = {kSubnormal, -0.0f, 3.4028235e38f,
                                  -1.0f,      0.1f,  -kSubnormal};
  std::vector<float> values(10, 0.5f);
  values.insert(values.begin(), odd.begin(), odd.end());
  values.resize(10);  // K = 2, L = 5, e = 1: positions 0..4 of each KV head
  const std::string path =
      WindowWithValues("bits.safetensors", values, {2, 5, 1});
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(path, ValueOptions());
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps(0).values_size(), 2);
  for (int g = 0; g < 2; ++g) {
    for (int p = 0; p < 5; ++p) {
      EXPECT_EQ(BitsOfAll({scenario->steps(0).values(g).values(p)}),
                BitsOfAll({values[g * 5 + p]}))
          << "KV head " << g << ", position " << p;
    }
  }
}

// Four query heads over two KV heads: --heads=2,3 keeps KV head 1 only, so
// the scenario's one KV head carries the file's KV head 1's keys and
// values; --heads=0,2 keeps one head of each, the scenario's KV heads 0
// and 1; --heads=3,2 KV head 1's.
TEST(Values, FollowTheSelectedHeadsKvHeads) {
  const std::string path = WriteInput(
      "four-heads.safetensors",
      TensorsFile({{"window.0", {4, 1, 3}, UniformWindow(4, 1, 3)},
                   {"keys.0", {2, 3, 1}, Named(2, 3, 1, 0)},
                   {"values.0", {2, 3, 2}, Named(2, 3, 2, 1000)}},
                  kTwoKvHeads));
  ImportOptions options = ValueOptions(/*keys=*/true);
  options.heads = std::vector<uint32_t>{2, 3};
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->kv_heads(), 1u);
  EXPECT_EQ(ValuesOf(scenario->steps(0)),
            (Vectors{{1100, 1101, 1110, 1111, 1120, 1121}}));
  EXPECT_EQ(KeysOf(scenario->steps(0)), (Vectors{{100, 110, 120}}));
  ExpectExactSize(path, options);
  options.heads = std::vector<uint32_t>{0, 2};
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->kv_heads(), 2u);
  EXPECT_EQ(ValuesOf(scenario->steps(0)),
            (Vectors{{1000, 1001, 1010, 1011, 1020, 1021},
                     {1100, 1101, 1110, 1111, 1120, 1121}}));
  options.heads = std::vector<uint32_t>{3, 2};
  options.keys = false;  // values alone follow the heads the same way
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(ValuesOf(scenario->steps(0)),
            (Vectors{{1100, 1101, 1110, 1111, 1120, 1121}}));
  ExpectExactSize(path, options);
}

// A matrix (2 heads sharing 1 KV head, L = 5, uniform rows): one decode
// step per position, each carrying its own key and value. lagkv with
// sinks 1, lag 2, budget 4 (spec/policies/lagkv.md, "Worked example": the
// card's one step of five positions is here five steps, the first four
// keeping everything) evicts at step 4 the position its example evicts:
// position 2 with the card's first values, position 1 with its "Equal
// judgements" values, over the same keys: the values decide.
TEST(Values, MatrixStepsCarryTheirPositionsValueAndLagkvReadsThem) {
  const std::vector<float> keys = {9, 9, 0, 1, 0.5f, 0.5f, 0, 0, 1, 1};
  const std::vector<std::vector<float>> values = {
      {9, 9, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 1, 1},  // flat-key-goes
      {9, 9, 1, 1, 0, 2, 0, 0, 2, 2},  // equal-judgement-older-ranks-lower
  };
  const uint32_t victim[] = {2, 1};
  for (int i = 0; i < 2; ++i) {
    const std::string path = WriteInput(
        absl::StrCat("matrix-values-", i, ".safetensors"),
        TensorsFile({{"layer.0", {2, 5, 5}, Uniform(2, 5)},
                     {"keys.0", {1, 5, 2}, keys},
                     {"values.0", {1, 5, 2}, values[i]}},
                    kOneKvHead));
    const ImportOptions options = ValueOptions(/*keys=*/true);
    absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    ASSERT_EQ(scenario->steps_size(), 5);
    for (int p = 0; p < 5; ++p) {
      EXPECT_EQ(ValuesOf(scenario->steps(p)),
                (Vectors{{values[i][2 * p], values[i][2 * p + 1]}}));
      EXPECT_EQ(KeysOf(scenario->steps(p)),
                (Vectors{{keys[2 * p], keys[2 * p + 1]}}));
    }
    ExpectExactSize(path, options);

    const PolicyConfig config = {"lagkv",
                                 {{"budget", 4}, {"sinks", 1}, {"lag", 2}}};
    const RunResult result = RunScenario(config, FromProto(*scenario), {});
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    ASSERT_EQ(result.steps.size(), 5u);
    for (int step = 0; step < 4; ++step) {
      EXPECT_TRUE(result.steps[step].victims.empty()) << step;
    }
    EXPECT_EQ(result.steps[4].victims, (std::vector<uint32_t>{victim[i]}));

    // Without --values lagkv refuses the scenario before its first step
    // (spec/tensors.md#checks: value_dim missing for a policy that reads
    // values).
    ImportOptions keys_only = options;
    keys_only.values = false;
    absl::StatusOr<v1::Scenario> without = ImportAttention(path, keys_only);
    ASSERT_TRUE(without.ok()) << without.status();
    const RunResult refused = RunScenario(config, FromProto(*without), {});
    EXPECT_FALSE(refused.refusal.ok());
    EXPECT_TRUE(Contains(std::string(refused.refusal.message()), "value_dim"))
        << refused.refusal;
  }
}

// Chunks: chunk.0.2 (one row) and chunk.0.4 (two): step 0 admits positions
// 0, 1 and carries their values; step 1 positions 2, 3; with --decode=1,
// step 1 position 2 and the decode step 2 position 3.
TEST(Values, ChunksCarryTheirPositionsValues) {
  const std::string path = WriteInput(
      "chunk-values.safetensors",
      TensorsFile({{"chunk.0.2", {1, 1, 2}, {0.5f, 0.5f}},
                   {"chunk.0.4", {1, 2, 4},
                    {0.25f, 0.25f, 0.5f, 0.0f, 0.25f, 0.25f, 0.25f, 0.25f}},
                   {"values.0", {1, 4, 3}, Named(1, 4, 3, 1000)}},
                  kOneKvHead));
  ImportOptions options = ValueOptions();
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 2);
  EXPECT_EQ(ValuesOf(scenario->steps(0)),
            (Vectors{{1000, 1001, 1002, 1010, 1011, 1012}}));
  EXPECT_EQ(ValuesOf(scenario->steps(1)),
            (Vectors{{1020, 1021, 1022, 1030, 1031, 1032}}));
  ExpectExactSize(path, options);
  options.decode = 1;  // the last chunk's last position decoded
  scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  ASSERT_EQ(scenario->steps_size(), 3);
  EXPECT_EQ(ValuesOf(scenario->steps(1)), (Vectors{{1020, 1021, 1022}}));
  EXPECT_EQ(ValuesOf(scenario->steps(2)), (Vectors{{1030, 1031, 1032}}));
  ExpectExactSize(path, options);
}

TEST(Values, Refusals) {
  const ImportOptions options = ValueOptions();
  const auto refused = [&](const std::string& path, const std::string& text,
                           const ImportOptions& o) {
    absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, o);
    EXPECT_FALSE(scenario.ok()) << path;
    if (!scenario.ok()) {
      EXPECT_TRUE(Contains(std::string(scenario.status().message()), text))
          << scenario.status();
    }
  };
  refused(WindowFile("no-values.safetensors", kWindow, kTwoKvHeads),
          "--values: the file has no tensor values.0 (capture_attention.py "
          "--values writes it; it holds window.0)",
          options);
  const std::vector<float> ten(10, 1.0f);
  refused(
      WindowWithValues("f16.safetensors", ten, {2, 5, 1}, kTwoKvHeads, "F16"),
      "tensor values.0 has dtype F16; values are F32", options);
  refused(WindowWithValues("length.safetensors", ten, {2, 10, 1}),
          "tensor values.0: shape [2, 10, 1] is not [KV heads, L, value_dim] "
          "= [1.., 5, 1..1024]: every position's value, value_dim in [1, "
          "1024]",
          options);
  refused(WindowWithValues("two-dims.safetensors", ten, {2, 5}),
          "shape [2, 5] is not [KV heads, L, value_dim]", options);
  refused(WindowWithValues("zero-e.safetensors", {}, {2, 5, 0}),
          "shape [2, 5, 0] is not", options);
  refused(WindowWithValues("wide.safetensors",
                           std::vector<float>(5 * 1025, 1.0f), {1, 5, 1025}),
          "shape [1, 5, 1025] is not", options);
  refused(WindowWithValues("no-kv.safetensors", {}, {0, 5, 1}),
          "shape [0, 5, 1] is not", options);
  // K against the metadata: missing, or another number.
  refused(WindowWithValues("no-metadata.safetensors", ten, {2, 5, 1}, ""),
          "--values: tensor values.0 holds 2 KV heads' values, and the "
          "file's __metadata__ has no num_key_value_heads",
          [&] {
            ImportOptions o = options;
            o.kv_heads = 2;
            return o;
          }());
  refused(WindowWithValues("one-kv.safetensors", std::vector<float>(5, 1.0f),
                           {1, 5, 1}),
          "--values: tensor values.0 holds 1 KV heads' values but "
          "__metadata__ says num_key_value_heads = \"2\": the file "
          "contradicts itself",
          options);
  // Entries (spec/tensors.md#checks): finite only; the first bad one named.
  for (float bad : {std::nanf(""), HUGE_VALF, -HUGE_VALF}) {
    std::vector<float> values = Named(2, 5, 4, 1000);
    values[(1 * 5 + 3) * 4 + 2] = bad;  // KV head 1, position 3, channel 2
    values[(1 * 5 + 4) * 4 + 0] = bad;  // a later one, not named
    refused(WindowWithValues("bad.safetensors", values, {2, 5, 4}),
            "tensor values.0, KV head 1, position 3, channel 2: value",
            options);
    // With keys: the values are still checked, after the keys.
    refused(WindowWithValues("bad-with-keys.safetensors", values, {2, 5, 4},
                             kTwoKvHeads, "F32", /*with_keys=*/true),
            "tensor values.0, KV head 1, position 3, channel 2: value",
            ValueOptions(/*keys=*/true));
  }
  {
    // A bad key and a bad value: the key is named (keys before values).
    std::vector<float> keys = Named(2, 5, 3, 0);
    std::vector<float> values = Named(2, 5, 4, 1000);
    keys[(1 * 5 + 4) * 3 + 1] = std::nanf("");  // KV head 1, position 4
    values[0] = std::nanf("");                  // KV head 0, position 0
    refused(WriteInput("bad-both.safetensors",
                       TensorsFile({{"window.0", {2, 3, 5}, kWindow},
                                    {"keys.0", {2, 5, 3}, keys},
                                    {"values.0", {2, 5, 4}, values}},
                                   kTwoKvHeads)),
            "tensor keys.0, KV head 1, position 4, channel 1: key",
            ValueOptions(/*keys=*/true));
    // Missing values with good keys: values.0 named; missing keys with
    // good values: keys.0 named.
    refused(WriteInput("keys-only.safetensors",
                       TensorsFile({{"window.0", {2, 3, 5}, kWindow},
                                    {"keys.0", {2, 5, 3}, Named(2, 5, 3, 0)}},
                                   kTwoKvHeads)),
            "--values: the file has no tensor values.0",
            ValueOptions(/*keys=*/true));
    refused(WindowWithValues("values-only.safetensors", Named(2, 5, 4, 1000),
                             {2, 5, 4}),
            "--keys: the file has no tensor keys.0",
            ValueOptions(/*keys=*/true));
  }
  // Not a layer's tensors: a .npy file, step rows.
  refused(WriteInput("values.npy", NpyOf({2, 3, 3}, kExample)),
          "--values reads values.<n> beside a layer's tensors of a "
          ".safetensors file",
          options);
  refused(WriteInput("steps.safetensors",
                     TensorsFile({{"step.0", {1, 1}, {1.0f}},
                                  {"step.1", {1, 2}, {0.5f, 0.5f}}})),
          "--values reads values.<n> beside a layer's tensors; the file "
          "holds per-step rows",
          options);
  // The bytes the header says against the shape.
  const std::string rows = FloatBytes(kWindow);
  const std::string values = FloatBytes(ten);
  refused(WriteInput("offsets.safetensors",
                     Safetensors("{" +
                                     TensorJson("window.0", "F32", {2, 3, 5},
                                                0, rows.size()) +
                                     "," +
                                     TensorJson("values.0", "F32", {2, 5, 2},
                                                rows.size(),
                                                rows.size() + values.size()) +
                                     R"(,"__metadata__":{"num_key_value_heads":"2"}})",
                                 rows + values)),
          "tensor values.0: data_offsets", options);
}

TEST(Values, TheSizeFormulaCountsThem) {
  // admit x e across the 1- and 2-byte varints of the packed values (4 a e
  // >= 128 from a e = 32) and of the HeadVectors and Step messages, and e
  // across value_dim's varint (128); alone and beside keys of another d.
  for (int e : {1, 2, 31, 32, 33, 127, 128, 129}) {
    for (int decode : {0, 1, 2}) {
      for (bool keys : {false, true}) {
        const int length = 5;
        const std::string path = WriteInput(
            absl::StrCat("size-", e, "-", decode, "-", keys, ".safetensors"),
            TensorsFile(
                {{"window.0", {2, 3, 5}, kWindow},
                 {"keys.0", {2, 5, 31}, std::vector<float>(2 * 5 * 31, -1.5f)},
                 {"values.0",
                  {2, static_cast<uint64_t>(length), static_cast<uint64_t>(e)},
                  std::vector<float>(static_cast<size_t>(2 * length * e),
                                     0.5f)}},
                kTwoKvHeads));
        ImportOptions options = ValueOptions(keys);
        options.decode = decode;
        options.window_rows = 1;
        ExpectExactSize(path, options);
        absl::StatusOr<ImportSize> size = MeasureImport(path, options);
        ASSERT_TRUE(size.ok()) << size.status();
        // The input read: the used rows' weights and every carried key and
        // value.
        EXPECT_GE(size->input_bytes,
                  uint64_t{2} * length * (e + (keys ? 31 : 0)) * 4);
      }
    }
  }
}

}  // namespace
}  // namespace import_test
}  // namespace kvspec
