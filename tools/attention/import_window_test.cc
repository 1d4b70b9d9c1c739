// Tests of tools/attention/import_attention_lib.h: the window layout
// (window.<n> [heads, R, L], the example kWindow in import_test_util.h): one
// prefill step with query rows, decode steps, heads, which tensor is read,
// and the flags, weights, shapes and metadata it refuses.
#include "tools/attention/import_attention_lib.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_test_util.h"

namespace kvspec {
namespace import_test {
namespace {

void SetWindow(std::vector<float>& values, int rows, int length, int h, int r,
               int k, float value) {
  values[(h * rows + r) * length + k] = value;
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

}  // namespace
}  // namespace import_test
}  // namespace kvspec
