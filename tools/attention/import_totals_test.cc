// Tests of tools/attention/import_attention_lib.h: column totals
// (ImportOptions::totals, spec/prefill.md#column-totals): totals.<n> beside
// a window carried bit for bit on the prefill step, h2o's log from them the
// same as from the rows they sum, their refusals and their size.
#include "tools/attention/import_attention_lib.h"

#include <algorithm>
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

}  // namespace
}  // namespace import_test
}  // namespace kvspec
