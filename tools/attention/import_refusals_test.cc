// Tests of tools/attention/import_attention_lib.h: what a .npy or
// .safetensors file is refused for, in its structure (truncated, malformed
// header, JSON, offsets, names, shapes, dtypes) and in its weights (not
// causal, NaN, inf, negative, -0.0), and the heads and extension given.
#include "tools/attention/import_attention_lib.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_test_util.h"

namespace kvspec {
namespace import_test {
namespace {

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

}  // namespace
}  // namespace import_test
}  // namespace kvspec
