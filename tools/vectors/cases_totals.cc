// The column-totals cases (spec/prefill.md#column-totals, spec 0.10.0).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "cc/presets.h"
#include "cc/registry.h"
#include "cc/rng.h"
#include "cc/trace.h"
#include "tools/vectors/bounds.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {

namespace {

// A TracePrompt (whole causal matrix) whose prefill step carries its last
// `carried` rows and the totals of every query instead.
Scenario TracePromptTotals(std::string id, uint32_t length, uint32_t carried,
                           uint32_t decode, uint32_t query_heads,
                           uint32_t kv_heads, uint64_t seed) {
  Scenario scenario = TracePrompt(std::move(id), length, length, decode,
                                  query_heads, kv_heads, seed);
  scenario.steps[0] =
      WithTotals(std::move(scenario.steps[0]), query_heads, carried, length);
  return scenario;
}

}  // namespace

void AddTotalsScenarios(SuiteBuilder& b) {
  // The h2o card's second example (rows (0.5), (0.25, 0.75), (0.125, 0.25,
  // 0.625)): totals 0.875, 1.0, 0.625 beside the last row alone.
  b.Add(Explicit("totals-h2o-card",
                 {WithTotals(QueryRows(3, {{0.5f}, {0.25f, 0.75f},
                                           {0.125f, 0.25f, 0.625f}}),
                             1, 1, 3)}));
  // A prefill of 4 whose totals cover its last 2 queries, rows (0.25,
  // 0.2, 0.5) and (0.25, 0.2, 0.25, 0.3): totals 0.5, 0.4, 0.75, 0.3 (to
  // binary32's 0.2 and 0.3), both rows carried.
  b.Add(Explicit("totals-fewer-rows",
                 {WithTotals(QueryRows(4, {{0.25f, 0.2f, 0.5f},
                                           {0.25f, 0.2f, 0.25f, 0.3f}}),
                             1, 2, 2)}));
  // Three positions with null attention (budget 2 evicts 0), then a chunk
  // of 2 whose totals cover both queries, rows (4.5, 0.15, 0.125, 0.375)
  // and (4.5, 0.15, 0.125, 0.375, 0.2): totals 9.0, 0.3, 0.25, 0.75, 0.2;
  // only the last row carried.
  b.Add(Explicit("totals-gathered",
                 {Null(3),
                  WithTotals(QueryRows(2, {{4.5f, 0.15f, 0.125f, 0.375f},
                                           {4.5f, 0.15f, 0.125f, 0.375f, 0.2f}}),
                             1, 1, 2)}));
  // The kvpress check's prompt (prefill-causal-96) and the AdaKV prompt
  // (prefill-64-decode-16-h4) with the last 8 rows and every query's totals.
  b.Add(TracePromptTotals("totals-causal-96", 96, 8, 0, 4, 2, 2026113002));
  b.Add(TracePromptTotals("totals-64-decode-16-h4", 64, 8, 16, 4, 2,
                          2026113004));
  b.Add(TracePromptTotals("totals-64-decode-16", 64, 1, 16, 1, 1, 2026113003));
  // Refusals (prefill.md#their-checks), on the card's step.
  const ScenarioStep card = QueryRows(3, {{0.125f, 0.25f, 0.625f}});
  const auto with = [&](std::vector<std::vector<double>> totals, uint32_t rows) {
    ScenarioStep step = card;
    step.totals = std::move(totals);
    step.total_rows = rows;
    return step;
  };
  const std::vector<double> ok = {0.875, 1.0, 0.625};
  ScenarioStep bare = Null(3);
  bare.totals = {ok};
  bare.total_rows = 3;
  b.Add(Explicit("totals-refusal-without-rows", {bare}));
  b.Add(Explicit("totals-refusal-rows-zero", {with({ok}, 0)}));
  b.Add(Explicit("totals-refusal-rows-above-admit", {with({ok}, 4)}));
  b.Add(Explicit("totals-refusal-rows-without-totals", {with({}, 3)}));
  b.Add(Explicit("totals-refusal-not-per-head", {with({ok, ok}, 3)}));
  b.Add(Explicit("totals-refusal-short", {with({{0.875, 1.0}}, 3)}));
  b.Add(Explicit("totals-refusal-long", {with({{0.875, 1.0, 0.625, 0.0}}, 3)}));
  b.Add(Explicit("totals-refusal-nan",
                 {with({{0.875, std::numeric_limits<double>::quiet_NaN(), 0.625}}, 3)}));
  b.Add(Explicit("totals-refusal-infinite",
                 {with({{std::numeric_limits<double>::infinity(), 1.0, 0.625}}, 3)}));
  b.Add(Explicit("totals-refusal-minus-zero", {with({{0.875, 1.0, -0.0}}, 3)}));
  b.Add(Explicit("totals-refusal-negative", {with({{0.875, -1.0, 0.625}}, 3)}));
  // The same checks where only a later head is bad (issue 33: a port that
  // checks head 0 alone): two query heads, head 0's totals right.
  ScenarioStep two_heads = QueryRows(3, {{0.125f, 0.25f, 0.625f}, {0.25f, 0.25f, 0.5f}});
  two_heads.total_rows = 3;
  two_heads.totals = {ok, {0.875, 1.0}};
  b.Add(WithHeads(Explicit("totals-refusal-short-in-head-1", {two_heads}), 2, 1));
  two_heads.totals = {ok, {0.875, std::numeric_limits<double>::quiet_NaN(), 0.625}};
  b.Add(WithHeads(Explicit("totals-refusal-nan-in-head-1", {two_heads}), 2, 1));
  // Orders: short totals beside a NaN query weight; a NaN total beside a
  // short query row (both ATTENTION_LENGTH: shapes before values).
  ScenarioStep nan_row = QueryRows(3, {{0.125f, kNan, 0.625f}});
  nan_row.totals = {{0.875, 1.0}};
  nan_row.total_rows = 3;
  b.Add(Explicit("totals-order-short-totals-nan-row", {nan_row}));
  ScenarioStep short_row = QueryRows(3, {{0.125f, 0.25f}});
  short_row.totals = {{0.875, std::numeric_limits<double>::quiet_NaN(), 0.625}};
  short_row.total_rows = 3;
  b.Add(Explicit("totals-order-short-row-nan-totals", {short_row}));
  // A NaN query weight beside a NaN total: the query rows' weights first
  // (ATTENTION_VALUE either way; the message names the query row).
  // Totals on a non-prefill step with an attention row: refused.
  b.Add(Explicit("totals-refusal-beside-a-row",
                 {Null(2), [&] {
                    ScenarioStep step = WithRow({0.5f, 0.5f});
                    step.totals = {{0.5, 0.5, 0.5}};
                    step.total_rows = 1;
                    return step;
                  }()}));
}

void AddTotalsCases(SuiteBuilder& b) {
  const std::vector<std::string> totals = {"prefill.totals"};
  b.Case("prefill/totals/h2o-raw", {"prefill.totals"},
         "totals 0.875, 1.0, 0.625 beside the last query row: 2 goes (the "
         "row alone, 0.125, 0.25, 0.625, would make 0 go)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}), "totals-h2o-card");
  b.Case("prefill/totals/h2o-normalized", {"prefill.normalize"},
         "normalized by the 3, 2, 1 queries of the totals that see each key "
         "(not the 1 row carried): 0.2916..., 0.5, 0.625, 0 goes",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"normalize", 1}}),
         "totals-h2o-card");
  b.Case("prefill/totals/normalize-by-their-rows", {"prefill.normalize"},
         "a prefill of 4 with totals over its last 2 queries: divisors 2, 2, "
         "2, 1 (min(R, a + c - p)), 0.25, 0.2, 0.375, 0.3: 1 goes (divisors "
         "from the chunk, 4, 3, 2, 1, would make 0 go)",
         P("h2o", {{"budget", 3}, {"recent_window", 0}, {"normalize", 1}}),
         "totals-fewer-rows");
  b.Case("prefill/totals/gathered-raw", {"prefill.totals"},
         "totals gathered at the kept positions 1..4 (position 0's 9.0 is "
         "not read): 0.3, 0.25, 0.75, 0.2: 2 and 4 go (the last row alone "
         "would make 1 and 2 go)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}), "totals-gathered");
  b.Case("prefill/totals/gathered-normalized", {"prefill.normalize"},
         "the same, normalized by min(2, 5 - p): 0.15, 0.125, 0.375, 0.2: 1 "
         "and 2 go",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"normalize", 1}}),
         "totals-gathered");
  for (int64_t ratio : {250000, 500000, 750000}) {
    const std::string r = std::to_string(ratio / 10000);
    b.Case("prefill/totals/kvpress-h2o-ratio-" + r, totals,
           "as prefill/kvpress/h2o-ratio-" + r + " with the 96 queries' totals "
           "and 8 rows in place of the whole matrix: the same log, cut "
           "scores included",
           Preset("h2o", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "totals-causal-96");
  }
  b.Case("prefill/totals/h2o-raw-query-heads", totals,
         "raw sums, one kept set per query head: each set gathers its own "
         "head's totals",
         P("h2o", {{"budget", 40}, {"recent_window", 0}, {"granularity", 2}}),
         "totals-causal-96");
  for (const char* policy : {"tova", "snapkv"}) {
    b.Case(std::string("prefill/totals/") + policy + "-reads-the-rows", {},
           std::string(policy) + " on the 96-position prompt with totals: it "
           "reads the 8 carried rows, never the totals",
           Preset(policy, "kvpress-0.5.5", {{"ratio_ppm", 500000}}),
           "totals-causal-96");
  }
  b.Case("prefill/totals/adakv-h2o", {"heads.adaptive"},
         "as prefill/adakv/h2o with the 64 queries' totals and 8 rows: the "
         "same log",
         P("h2o", {{"budget", 24}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}}),
         "totals-64-decode-16-h4");
  b.Case("prefill/totals/decode-continues", totals,
         "a 64-position prompt's totals and its last row, then 16 decode "
         "steps accumulating onto the prefill sums",
         P("h2o", {{"budget", 24}, {"recent_window", 4}}),
         "totals-64-decode-16");
  // Refusals and orders.
  const PolicyConfig h2o = P("h2o", {{"budget", 2}, {"recent_window", 0}});
  const struct {
    const char* id;
    const char* flag;
    const char* description;
    const char* scenario;
  } refusals[] = {
      {"without-query-rows", "refusal.attention-length",
       "totals on a step with null attention and no query rows",
       "totals-refusal-without-rows"},
      {"beside-a-row", "refusal.attention-length",
       "totals on a decode step carrying an attention row",
       "totals-refusal-beside-a-row"},
      {"total-rows-zero", "refusal.attention-length",
       "totals with total_rows 0", "totals-refusal-rows-zero"},
      {"total-rows-above-admit", "refusal.attention-length",
       "total_rows 4 on a step admitting 3", "totals-refusal-rows-above-admit"},
      {"total-rows-without-totals", "refusal.attention-length",
       "total_rows 3 and no totals", "totals-refusal-rows-without-totals"},
      {"not-per-head", "refusal.attention-length",
       "two lists of totals for one query head", "totals-refusal-not-per-head"},
      {"short", "refusal.attention-length",
       "2 totals for positions 0..2", "totals-refusal-short"},
      {"long", "refusal.attention-length",
       "4 totals for positions 0..2", "totals-refusal-long"},
      {"nan", "refusal.attention-value", "a NaN total", "totals-refusal-nan"},
      {"infinite", "refusal.attention-value", "an infinite total",
       "totals-refusal-infinite"},
      {"minus-zero", "refusal.attention-value", "a total of -0.0",
       "totals-refusal-minus-zero"},
      {"negative", "refusal.attention-value", "a total of -1.0",
       "totals-refusal-negative"},
  };
  for (const auto& r : refusals) {
    b.Case(std::string("prefill/refusal/totals-") + r.id, {r.flag},
           r.description, h2o, r.scenario);
  }
  b.Case("prefill/refusal/totals-short-in-head-1", {"refusal.attention-length"},
         "two heads, head 0's totals right; head 1's are 2 for positions "
         "0..2: ATTENTION_LENGTH at step 0",
         h2o, "totals-refusal-short-in-head-1");
  b.Case("prefill/refusal/totals-nan-in-head-1", {"refusal.attention-value"},
         "two heads, head 0's totals right; head 1 has a NaN total: "
         "ATTENTION_VALUE at step 0",
         h2o, "totals-refusal-nan-in-head-1");
  b.Case("prefill/order/totals-shape-before-query-weights",
         {"refusal.attention-length"},
         "short totals beside a NaN query weight: the totals' shape "
         "(ATTENTION_LENGTH) before the rows' weights",
         h2o, "totals-order-short-totals-nan-row");
  b.Case("prefill/order/query-shape-before-totals-values",
         {"refusal.attention-length"},
         "a short query row beside a NaN total: ATTENTION_LENGTH",
         h2o, "totals-order-short-row-nan-totals");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
