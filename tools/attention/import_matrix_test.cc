// Tests of tools/attention/import_attention_lib.h: the matrix layout (a .npy
// file, layer.<n> tensors) and step rows, carried bit for bit; the layer,
// the heads and kv_heads chosen (KvHeads: from the file's
// num_key_value_heads); ParseHeadList.
#include "tools/attention/import_attention_lib.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
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

TEST(ParseHeadList, Numbers) {
  EXPECT_EQ(*ParseHeadList("0,2,5"), (std::vector<uint32_t>{0, 2, 5}));
  EXPECT_TRUE(ParseHeadList("")->empty());
  EXPECT_TRUE(Contains(std::string(ParseHeadList("0,x").status().message()),
                       "'x' is not a head number"));
  EXPECT_FALSE(ParseHeadList("0,,1").ok());
  EXPECT_FALSE(ParseHeadList("-1").ok());
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

}  // namespace
}  // namespace import_test
}  // namespace kvspec
