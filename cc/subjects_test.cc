// The subject of every kind of refusal (spec/harness.md#subjects), worked by
// hand from the spec's two tables and its paragraph on lengths and values:
// each case breaks one rule and names the subject the spec gives it.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

struct Expected {
  ErrorCategory category;
  Subject subject;
};

void ExpectRefusal(const PolicyConfig& config, const Scenario& scenario,
                   const Expected& want, const std::string& what) {
  const RunResult result = RunScenario(config, scenario);
  EXPECT_EQ(CategoryOf(result.refusal), want.category) << what;
  EXPECT_EQ(SubjectText(SubjectOf(result.refusal)), SubjectText(want.subject))
      << what << ": " << result.refusal.message();
}

Scenario OneStep() { return {"s", {{1, std::nullopt}}}; }

TEST(Subjects, OfTheConfiguration) {
  const ErrorCategory p = ErrorCategory::kInvalidParameter;
  struct Row {
    PolicyConfig config;
    Expected want;
  };
  const std::vector<Row> rows = {
      {{"Window", {}}, {ErrorCategory::kUnknownPolicy, {"unknown", {"name"}}}},
      {{"window", {{"sinks", 1}}}, {p, {"unknown", {"sinks"}}}},
      {{"window", {{"budget", 2}, {"budget", 2}}}, {p, {"repeated", {"budget"}}}},
      {{"window", {{"budget", 0}}}, {p, {"range", {"budget"}}}},
      // Check 2 before check 3: the unknown name first, though budget is 0.
      {{"window", {{"budget", 0}, {"bogus", 1}}}, {p, {"unknown", {"bogus"}}}},
      {{"h2o", {{"budget", 4}, {"recent_window", 4}}},
       {p, {"rule", {"recent_window", "budget"}}}},
      {{"streamingllm", {{"budget", 4}, {"sinks", 4}}},
       {p, {"rule", {"sinks", "budget"}}}},
      {{"snapkv", {{"budget", 8}, {"recent_window", 0}, {"pool_kernel", 4}}},
       {p, {"rule", {"pool_kernel"}}}},
      {{"window", {{"budget", 4}, {"span_window", 2}, {"span_chunk", 2}}},
       {p, {"rule", {"span_window", "span_chunk"}}}},
      {{"streamingllm", {{"budget", 4}, {"sinks", 1}, {"evict_at", 1}, {"prefill_only", 1}}},
       {p, {"rule", {"evict_at", "prefill_only"}}}},
      {{"streamingllm", {{"budget", 4}, {"sinks", 1}, {"evict_at", 2}, {"ratio_ppm", 10}}},
       {p, {"rule", {"evict_at", "ratio_ppm"}}}},
      {{"window", {{"budget", 4}, {"discard", 3}}},
       {p, {"rule", {"discard", "context_shift"}}}},
      {{"window", {{"budget", 4}, {"context_shift", 1}, {"evict_at", 1}}},
       {p, {"rule", {"context_shift", "evict_at"}}}},
      {{"streamingllm", {{"budget", 4}, {"sinks", 1}, {"context_shift", 1}, {"ratio_ppm", 10}}},
       {p, {"rule", {"context_shift", "ratio_ppm"}}}},
      {{"streamingllm", {{"budget", 4}, {"sinks", 3}, {"context_shift", 1}}},
       {p, {"rule", {"context_shift", "budget", "sinks"}}}},
      {{"window", {{"budget", 1}, {"context_shift", 1}}},
       {p, {"rule", {"context_shift", "budget"}}}},
      {{"h2o", {{"budget", 4}, {"recent_window", 1}, {"ratio_ppm", 500000}}},
       {p, {"rule", {"ratio_ppm", "recent_window"}}}},
      // The first of prefill_only, ratio_ppm, window_budget that is not 0.
      {{"h2o", {{"budget", 4}, {"recent_window", 0}, {"adaptive", 1}, {"ratio_ppm", 10}}},
       {p, {"rule", {"adaptive", "ratio_ppm"}}}},
      {{"snapkv",
        {{"budget", 8}, {"recent_window", 0}, {"adaptive", 1}, {"window_budget", 1}}},
       {p, {"rule", {"adaptive", "window_budget"}}}},
      {{"tova",
        {{"budget", 8}, {"recent_window", 0}, {"adaptive", 1}, {"prefill_only", 1},
         {"ratio_ppm", 10}}},
       {p, {"rule", {"adaptive", "prefill_only"}}}},
  };
  for (const Row& row : rows) {
    ExpectRefusal(row.config, OneStep(), row.want, row.config.name);
  }
}

TEST(Subjects, OfTheScenarioShapeHeadsAndTrace) {
  const PolicyConfig window{"window", {{"budget", 2}}};
  Scenario both = OneStep();
  both.trace = TraceConfig{};
  both.trace->steps = 3;
  ExpectRefusal(window, both, {ErrorCategory::kInvalidTrace, {"rule", {"steps", "trace"}}},
                "steps and a trace");
  Scenario trace{"t", {}, TraceConfig{}};
  trace.trace->steps = 0;
  ExpectRefusal(window, trace, {ErrorCategory::kInvalidTrace, {"range", {"trace.steps"}}},
                "no steps");
  trace.trace->steps = 3;
  trace.trace->noise = -0.0;
  ExpectRefusal(window, trace, {ErrorCategory::kInvalidTrace, {"range", {"trace.noise"}}},
                "noise -0.0");
  Scenario heads = OneStep();
  heads.query_heads = 0;
  ExpectRefusal(window, heads, {ErrorCategory::kInvalidHeads, {"range", {"query_heads"}}},
                "query_heads 0");
  heads.query_heads = 4;
  heads.kv_heads = 1025;
  ExpectRefusal(window, heads, {ErrorCategory::kInvalidHeads, {"range", {"kv_heads"}}},
                "kv_heads 1025");
  heads.query_heads = 3;
  heads.kv_heads = 2;
  ExpectRefusal(window, heads,
                {ErrorCategory::kInvalidHeads, {"rule", {"kv_heads", "query_heads"}}},
                "2 does not divide 3");
}

TEST(Subjects, OfAStepsRows) {
  const PolicyConfig full{"full", {}};
  const ErrorCategory length = ErrorCategory::kAttentionLength;
  const ErrorCategory value = ErrorCategory::kAttentionValue;
  // Step 1 admits one position after one: its row has one weight.
  const auto single = [](std::optional<std::vector<float>> row) {
    return Scenario{"s", {{1, std::nullopt}, {1, std::move(row)}}};
  };
  ExpectRefusal(full, single(std::vector<float>{}), {length, {"length", {"attention"}}},
                "short row");
  ExpectRefusal(full, single(std::vector<float>{kNan}), {value, {"value", {"attention"}}},
                "NaN");
  ExpectRefusal(full, {"s", {{1, std::nullopt}, {0, std::nullopt}}},
                {ErrorCategory::kPosition, {"range", {"admit"}}}, "admit 0");
  Scenario one_head_heads = single(std::nullopt);
  one_head_heads.steps[1].heads = {{0.5f}};
  ExpectRefusal(full, one_head_heads, {length, {"length", {"heads"}}},
                "one head, rows in heads");

  // Two query heads: rows in `heads`, one per head.
  Scenario two = single(std::nullopt);
  two.query_heads = 2;
  two.steps[1].attention = std::vector<float>{0.5f};
  ExpectRefusal(full, two, {length, {"length", {"attention"}}}, "two heads, attention");
  two.steps[1].attention.reset();
  two.steps[1].heads = {{0.5f}};
  ExpectRefusal(full, two, {length, {"length", {"heads"}}}, "one row for two heads");
  two.steps[1].heads = {{0.5f}, {}};
  ExpectRefusal(full, two, {length, {"length", {"heads"}}}, "head 1 short");
  two.steps[1].heads = {{0.5f}, {kNan}};
  ExpectRefusal(full, two, {value, {"value", {"heads"}}}, "NaN in head 1");
}

TEST(Subjects, OfQueryRowsAndTotals) {
  const PolicyConfig h2o{"h2o", {{"budget", 4}, {"recent_window", 0}}};
  const ErrorCategory length = ErrorCategory::kAttentionLength;
  const ErrorCategory value = ErrorCategory::kAttentionValue;
  // A first step admitting 2 with both query rows (q = 0: 1 weight, q = 1:
  // 2 weights) and, beside them, totals over the last row: 2 positions.
  const auto prefill = [] {
    ScenarioStep step;
    step.admit = 2;
    step.queries = {{1.0f}, {0.5f, 0.5f}};
    step.totals = {{0.5, 0.5}};
    step.total_rows = 1;
    return Scenario{"p", {step}};
  };
  Scenario s = prefill();
  s.steps[0].queries[1] = {0.5f};
  ExpectRefusal(h2o, s, {length, {"length", {"queries"}}}, "query row short");
  s = prefill();
  s.steps[0].queries.push_back({1.0f});  // 3 rows for an admit of 2
  ExpectRefusal(h2o, s, {length, {"length", {"queries"}}}, "three query rows");
  s = prefill();
  s.steps[0].queries[1][0] = -0.0f;
  ExpectRefusal(h2o, s, {value, {"value", {"queries"}}}, "query weight -0.0");
  s = prefill();
  s.steps[0].total_rows = 3;  // above admit, totals otherwise in place
  ExpectRefusal(h2o, s, {length, {"length", {"total_rows"}}}, "total_rows 3");
  s = prefill();
  s.steps[0].total_rows = 0;
  ExpectRefusal(h2o, s, {length, {"length", {"total_rows"}}}, "total_rows 0");
  s = prefill();
  s.steps[0].totals.clear();  // total_rows 1 and no list
  ExpectRefusal(h2o, s, {length, {"length", {"totals"}}}, "no totals");
  s = prefill();
  s.steps[0].totals[0].pop_back();
  ExpectRefusal(h2o, s, {length, {"length", {"totals"}}}, "totals short");
  s = prefill();
  s.steps[0].totals[0][1] = std::nan("");
  ExpectRefusal(h2o, s, {value, {"value", {"totals"}}}, "total NaN");
}

}  // namespace
}  // namespace kvspec
