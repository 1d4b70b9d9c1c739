// Spec 0.14.0: the openvino policy (spec/policies/openvino.md), OpenVINO
// GenAI 2026.3.0.0's cache eviction. The card's worked examples, GenAI's own
// table of low-scored blocks (tests/cpp/cache_eviction.cpp, transposed as
// the card's "Vectors from GenAI's tests" says), prompts with a SnapKV
// window (in one step, in chunks, as column totals), several heads, null
// steps and chunks, the preset, and the refusals.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "cc/trace.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {
namespace {

// One of GenAI's LOW_SCORE_BLOCK_EVICTION_TEST_CASES (T:844-894), one layer.
struct UpstreamRow {
  const char* test;
  int layer;
  uint32_t over;          // tokens_over_max_cache_size
  bool short_recent;      // SHORT_RECENT_EVICTION_CONFIG (budget 72)
  std::set<uint32_t> zeroed;  // logical blocks of 4 filled with 0.0
};

const std::vector<UpstreamRow>& UpstreamRows() {
  static const auto* rows = new std::vector<UpstreamRow>{
      {"one_block", 0, 1, false, {17}},
      {"one_block", 1, 1, false, {9}},
      {"three_blocks", 0, 2 * 4 + 2, false, {28, 10, 11}},
      {"three_blocks", 1, 2 * 4 + 2, false, {18, 8, 31}},
      {"four_zeroed_two_to_evict", 0, 1 * 4 + 2, false, {15, 36, 13, 10}},
      {"four_zeroed_two_to_evict", 1, 1 * 4 + 2, false, {9, 39, 31, 11}},
      {"less_zeroed_than_to_evict", 0, 5 * 4 + 2, false, {}},
      {"less_zeroed_than_to_evict", 1, 5 * 4 + 2, false, {30, 22}},
      {"zeros_also_in_non_evictable_areas", 0, 5 * 4 + 2, false,
       {0, 2, 7, 24, 31, 49}},
      {"zeros_also_in_non_evictable_areas", 1, 5 * 4 + 2, false,
       {5, 19, 27, 39, 50, 52}},
      {"more_overflow_than_eviction_blocks", 0, 4 * 4 + 1, true,
       {0, 9, 10, 11, 13}},
      {"more_overflow_than_eviction_blocks", 1, 4 * 4 + 1, true,
       {12, 11, 8, 9, 17}},
  };
  return *rows;
}

std::string UpstreamId(const UpstreamRow& row) {
  return absl::StrFormat("%s-%d", absl::StrReplaceAll(row.test, {{"_", "-"}}),
                         row.layer);
}

// The registration of L = budget + 4 - 1 + over scores, transposed: all but
// the last position with null attention, then a decode step whose row is
// the table's (1.0, or 0.0 in a zeroed block) for the positions before it.
Scenario UpstreamScenario(const UpstreamRow& row) {
  const uint32_t budget = row.short_recent ? 72 : 192;
  const uint32_t length = budget + 4 - 1 + row.over;
  Row weights(length - 1, 1.0f);
  for (uint32_t p = 0; p + 1 < length; ++p) {
    if (row.zeroed.count(p / 4) != 0) weights[p] = 0.0f;
  }
  return Explicit("ov-upstream-" + UpstreamId(row),
                  {Null(length - 1), WithRow(std::move(weights))});
}

// A prompt from the canonical generator's head 0 in prefill steps of
// `chunks` positions, step k carrying its last rows[k] query rows (0: null
// attention), then `decode` decode steps.
Scenario ChunkedPrompt(std::string id, const std::vector<uint32_t>& chunks,
                       const std::vector<uint32_t>& rows, uint32_t decode,
                       uint64_t seed) {
  uint32_t length = 0;
  for (uint32_t c : chunks) length += c;
  TraceConfig config;
  config.seed = seed;
  config.steps = length + decode + 1;
  TraceGenerator trace = *TraceGenerator::CreateForHead(config, 0);
  std::vector<Row> row_of;  // row_of[t]: the row of step t (t weights)
  while (trace.Advance()) row_of.push_back(trace.Row());
  std::vector<ScenarioStep> steps;
  uint32_t first = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const uint32_t end = first + chunks[k];
    if (rows[k] == 0) {
      steps.push_back(Null(chunks[k]));
    } else {
      std::vector<Row> queries;
      for (uint32_t q = end - rows[k]; q < end; ++q) queries.push_back(row_of[q + 1]);
      steps.push_back(QueryRows(chunks[k], std::move(queries)));
    }
    first = end;
  }
  for (uint32_t t = length; t < length + decode; ++t) steps.push_back(WithRow(row_of[t]));
  return Explicit(std::move(id), std::move(steps));
}

PolicyConfig Ov(std::vector<Parameter> parameters) {
  return P("openvino", std::move(parameters));
}

// The card's worked examples: sinks 1, recent_window 1, block 1.
PolicyConfig Small(int64_t budget, int64_t norm_sum, int64_t max_pool,
                   int64_t obs_window) {
  return Ov({{"budget", budget}, {"sinks", 1}, {"recent_window", 1}, {"block", 1},
             {"norm_sum", norm_sum}, {"max_pool", max_pool},
             {"obs_window", obs_window}});
}

}  // namespace

void AddOpenVinoScenarios(SuiteBuilder& b) {
  b.Add(Explicit("ov-four-rows", {WithRow({}), WithRow({1.0f}), WithRow({0.5f, 0.5f}),
                                  WithRow({0.25f, 0.125f, 0.5f})}));
  b.Add(Explicit("ov-window",
                 {QueryRows(4, {{0.25f, 0.5f, 0.25f}, {0.25f, 0.125f, 0.125f, 0.5f}}),
                  WithRow({0.125f, 0.25f, 0.375f, 0.25f})}));
  b.Add(Explicit("ov-deferred",
                 {QueryRows(6, {{0.5f, 0.25f, 0.0f, 0.125f, 0.0625f, 0.0625f}}),
                  WithRow({0.25f, 0.0f, 0.5f, 0.125f, 0.0625f, 0.0625f})}));
  for (const UpstreamRow& row : UpstreamRows()) b.Add(UpstreamScenario(row));
  // A prompt of 96 with its last 8 query rows, then 64 decode steps; the
  // same on 4 query heads and 2 KV heads; the same with column totals over
  // the last 8 queries in place of the rows.
  b.Add(TracePrompt("ov-prompt-96", 96, 8, 64, 1, 1, 2026120611));
  b.Add(TracePrompt("ov-prompt-96-h4", 96, 8, 64, 4, 2, 2026120612));
  {
    Scenario all = TracePrompt("ov-prompt-96-totals", 96, 96, 64, 1, 1, 2026120611);
    all.steps[0] = WithTotals(std::move(all.steps[0]), 1, 1, 8);
    b.Add(std::move(all));
  }
  // A prompt in three chunks: 8 before the window (null), 4 with their
  // last 3 rows, 4 with all 4 (a window of 7 across two steps), then 40
  // decode steps.
  b.Add(ChunkedPrompt("ov-chunked-prompt", {8, 4, 4}, {0, 3, 4}, 40, 2026120613));
  // GenAI's defaults need a prompt past 704: 800 positions with the last 8
  // rows, then 8 decode steps (the first cuts 4 blocks of 32 at once).
  b.Add(TracePrompt("ov-prompt-800", 800, 8, 8, 1, 1, 2026120614));
}

void AddOpenVinoCases(SuiteBuilder& b) {
  // openvino.md#worked-examples.
  b.Case("openvino/decode/norm-sum", {"openvino.norm-sum"},
         "openvino.md worked example: sinks 1, recent_window 1, budget 3, "
         "block 1; step 3: acc 0.625, 0.5 over counts 3, 2: position 1 goes",
         Small(3, 1, 1, 0), "ov-four-rows");
  b.Case("openvino/decode/sum", {},
         "openvino.md worked example, as openvino/decode/norm-sum with "
         "norm_sum 0: 0.625 against 0.5, position 2 goes",
         Small(3, 0, 1, 0), "ov-four-rows");
  b.Case("openvino/decode/max-pool", {"openvino.norm-sum", "openvino.max-pool"},
         "openvino.md worked example, as openvino/decode/norm-sum with "
         "max_pool 2: the forward pool gives "
         "acc 1.0, 0.5; position 2 goes",
         Small(3, 1, 2, 0), "ov-four-rows");
  b.Case("openvino/prefill/window-counts", {"openvino.norm-sum", "openvino.window-counts"},
         "openvino.md worked example: budget 4, obs_window 2; counts 3, 3, 2 "
         "at step 1: position 2 goes",
         Small(4, 1, 1, 2), "ov-window");
  b.Case("openvino/prefill/every-query-counts", {"openvino.norm-sum"},
         "openvino.md worked example, as openvino/prefill/window-counts with "
         "obs_window 0: counts 4, 3, 2, "
         "position 1 goes",
         Small(4, 1, 1, 0), "ov-window");
  b.Case("openvino/prefill/deferred", {},
         "openvino.md worked example, budget 4: a prefill of 6 evicts "
         "nothing; the first decode step "
         "keeps 7 and evicts 3 at once",
         Small(4, 1, 1, 0), "ov-deferred");
  // GenAI's own table, one vector per test and layer.
  for (const UpstreamRow& row : UpstreamRows()) {
    std::string zeroed;
    for (uint32_t block : row.zeroed) {
      zeroed += (zeroed.empty() ? "" : ", ") + std::to_string(block);
    }
    b.Case("openvino/upstream/" + UpstreamId(row), {},
           absl::StrFormat(
               "openvino.md#vectors-from-genais-tests: OpenVINO GenAI 2026.3.0.0 "
               "tests/cpp/cache_eviction.cpp, "
               "LOW_SCORE_BLOCK_EVICTION_TEST_CASES '%s', layer %d: start 32, "
               "recent 32, max %d, block 4, NORM_SUM, max pool 1; blocks {%s} "
               "zeroed",
               row.test, row.layer, row.short_recent ? 72 : 192, zeroed),
           Ov({{"budget", row.short_recent ? 72 : 192}, {"sinks", 32},
               {"recent_window", 32}, {"block", 4}, {"norm_sum", 1},
               {"max_pool", 1}, {"obs_window", 0}}),
           "ov-upstream-" + UpstreamId(row));
  }
  // Blocks past a start area, decode from 0 (the notes' probe 1 shape).
  const std::vector<Parameter> probe = {{"budget", 32}, {"sinks", 8},
                                        {"recent_window", 8}, {"block", 4},
                                        {"norm_sum", 1}, {"max_pool", 7},
                                        {"obs_window", 0}};
  b.Case("openvino/decode/canonical", {"openvino.norm-sum", "openvino.max-pool"},
         "sinks 8, recent_window 8, budget 32, block 4, max_pool 7 on the "
         "canonical trace: a block goes every 4 steps from step 35",
         Ov(probe), "block-canonical-80");
  {
    std::vector<Parameter> sum = probe;
    sum[4] = {"norm_sum", 0};
    b.Case("openvino/decode/canonical-sum", {"openvino.max-pool"},
           "as openvino/decode/canonical with norm_sum 0 (SUM)", Ov(sum),
           "block-canonical-80");
  }
  b.Case("openvino/decode/wandering", {"openvino.norm-sum"},
         "sinks 4, recent_window 4, budget 16, block 4, max_pool 3: chunks, "
         "null steps (no registration, no eviction) and fresh rows",
         Ov({{"budget", 16}, {"sinks", 4}, {"recent_window", 4}, {"block", 4},
             {"norm_sum", 1}, {"max_pool", 3}, {"obs_window", 0}}),
         "block-wandering-48");
  b.Case("openvino/heads/layer-sum", {"openvino.norm-sum"},
         "4 query heads, 2 KV heads: one set, every head's row summed per "
         "slot before the pool; sinks 4, recent_window 8, budget 32, block 4",
         Ov({{"budget", 32}, {"sinks", 4}, {"recent_window", 8}, {"block", 4},
             {"norm_sum", 1}, {"max_pool", 7}, {"obs_window", 0}}),
         "block-heads-64");
  // Prompts with a SnapKV window.
  const std::vector<Parameter> prompt = {{"budget", 64}, {"sinks", 8},
                                         {"recent_window", 16}, {"block", 8},
                                         {"norm_sum", 1}, {"max_pool", 7},
                                         {"obs_window", 8}};
  b.Case("openvino/prompt/window", {"openvino.norm-sum", "openvino.window-counts"},
         "a prompt of 96 with its last 8 rows (obs_window 8), then 64 decode "
         "steps; sinks 8, recent_window 16, budget 64, block 8: the first "
         "decode step cuts the prompt",
         Ov(prompt), "ov-prompt-96");
  b.Case("openvino/prompt/window-h4", {"openvino.norm-sum"},
         "as openvino/prompt/window on 4 query heads and 2 KV heads",
         Ov(prompt), "ov-prompt-96-h4");
  b.Case("openvino/prompt/totals", {"openvino.norm-sum"},
         "as openvino/prompt/window with the prompt's column totals over its "
         "last 8 queries (total_rows 8) beside its last row: the same log",
         Ov(prompt), "ov-prompt-96-totals");
  {
    std::vector<Parameter> chunked = prompt;
    chunked[0] = {"budget", 16};
    chunked[1] = {"sinks", 4};
    chunked[2] = {"recent_window", 4};
    chunked[3] = {"block", 4};
    chunked[6] = {"obs_window", 7};
    b.Case("openvino/prompt/chunked-window",
           {"openvino.norm-sum", "openvino.window-counts"},
           "a prompt of 16 in chunks of 8 (null: before the window), 4 (last "
           "3 rows) and 4 (4 rows), obs_window 7; sinks 4, recent_window 4, "
           "budget 16, block 4, then 40 decode steps",
           Ov(chunked), "ov-chunked-prompt");
  }
  b.Case("openvino/preset/genai-2026.3.0", {"openvino.norm-sum"},
         "openvino:preset=openvino-genai-2026.3.0 (budget 672, sinks 32, "
         "recent_window 128, block 32, max_pool 7, obs_window 8) on a prompt "
         "of 800: the first decode step evicts 4 blocks at once",
         Preset("openvino", "openvino-genai-2026.3.0", {}), "ov-prompt-800");
  // Every parameter at its default (GenAI's): each decides the log.
  b.Case("openvino/defaults/prompt-800", {"defaults", "defaults.decides"},
         "every parameter at its default (the preset's values) on the prompt "
         "of 800",
         Ov({}), "ov-prompt-800");
  // openvino.md#parameters.
  b.Case("openvino/refusal/areas", {"refusal.invalid-parameter"},
         "sinks 32 + recent_window 128 is not below budget 160: "
         "INVALID_PARAMETER",
         Ov({{"budget", 160}}), "one-step");
  b.Case("openvino/refusal/block-budget", {"refusal.invalid-parameter"},
         "budget 680 is not a multiple of block 32: INVALID_PARAMETER",
         Ov({{"budget", 680}}), "one-step");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
