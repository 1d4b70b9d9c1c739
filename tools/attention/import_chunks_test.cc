// Tests of tools/attention/import_attention_lib.h: the chunks layout
// (chunk.<n>.<e> tensors, one per chunk of a chunked prefill): a prefill
// step per chunk, decode steps, which tensors are read, what is refused,
// the size formula and the limits.
#include "tools/attention/import_attention_lib.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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
}  // namespace import_test
}  // namespace kvspec
