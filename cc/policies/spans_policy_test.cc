// Hand-worked cases from spec/spans.md through the harness: eviction before
// admission (evict_at), spans in the log, position ids, the parameter rules.
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using testing_util::ChunkScenario;
using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;
using Runs = std::vector<HeldRun>;
using Ranges = std::vector<Position>;

// spans.md#span-rules worked example: window budget 3, span_window 4,
// chunks 2, 5, 1.
TEST(Spans, WorkedExampleWindowBudgetThreeSpanWindowFour) {
  const RunResult result = RunScenario(
      {"window", {{"budget", 3}, {"span_window", 4}, {"spans", 1}}},
      ChunkScenario({2, 5, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  ASSERT_EQ(result.steps.size(), 3u);
  EXPECT_EQ(result.steps[0].spans, (std::vector<Ranges>{{0, 0}, {0, 1}}));
  EXPECT_EQ(result.steps[0].held, (Runs{{0, 1, 0}}));
  EXPECT_EQ(result.steps[1].spans,
            (std::vector<Ranges>{{0, 2}, {0, 3}, {1, 4}, {2, 5}, {3, 6}}));
  EXPECT_EQ(result.steps[1].held, (Runs{{0, 6, 0}}));
  EXPECT_EQ(result.steps[1].victims, (std::vector<Position>{0, 1, 2, 3}));
  EXPECT_EQ(result.steps[2].spans, (std::vector<Ranges>{{4, 7}}));
  EXPECT_EQ(result.steps[2].held, (Runs{{4, 7, 4}}));
}

// spans.md#when-room-is-made worked example: streamingllm budget 6, sinks 2,
// chunks 4, 3, 1, under each evict_at.
TEST(Spans, WorkedExampleEvictAt) {
  const std::vector<Runs> held_by_evict_at[3] = {
      {{{0, 3, 0}}, {{0, 6, 0}}, {{0, 1, 0}, {3, 7, 3}}},
      {{{0, 3, 0}}, {{0, 1, 0}, {3, 6, 3}}, {{0, 1, 0}, {4, 7, 4}}},
      {{{0, 3, 0}}, {{0, 6, 0}}, {{0, 1, 0}, {4, 7, 4}}}};
  const Victims victims_by_evict_at[3] = {
      {{}, {2}, {3}}, {{}, {2}, {3}}, {{}, {}, {2, 3}}};
  const uint32_t kept_by_evict_at[3][3] = {{4, 6, 6}, {4, 6, 6}, {4, 7, 6}};
  for (int evict_at = 0; evict_at < 3; ++evict_at) {
    SCOPED_TRACE(evict_at);
    const RunResult result = RunScenario(
        {"streamingllm",
         {{"budget", 6}, {"sinks", 2}, {"evict_at", evict_at}, {"spans", 1}}},
        ChunkScenario({4, 3, 1}));
    ASSERT_TRUE(result.refusal.ok()) << result.refusal;
    EXPECT_EQ(VictimsPerStep(result), victims_by_evict_at[evict_at]);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(result.steps[k].held, held_by_evict_at[evict_at][k]);
      EXPECT_EQ(result.steps[k].kept_count, kept_by_evict_at[evict_at][k]);
    }
    // query_cache_position: kept when the step started, before any eviction.
    EXPECT_EQ(result.steps[1].query_cache_position, 4u);
  }
}

// evict_at 1 with a chunk longer than budget - sinks: every non-sink goes
// before admission and the chunk stays whole (budget 4, sinks 1, chunks 3,
// 5): step 1 evicts 1, 2 and keeps 0 and 3..7, 6 positions.
TEST(Spans, RoomForTheStepKeepsALongChunkWhole) {
  const RunResult result = RunScenario(
      {"streamingllm", {{"budget", 4}, {"sinks", 1}, {"evict_at", 1}}},
      ChunkScenario({3, 5, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {1, 2}, {3, 4, 5}}));
  EXPECT_EQ(result.steps[1].kept_count, 6u);
  EXPECT_EQ(result.steps[2].kept_count, 4u);
}

// evict_at 2 never evicts at the first step: window budget 4, a first
// chunk of 7 is kept whole; the next decode step trims to 3 then admits.
TEST(Spans, DownToBudgetMinusOneKeepsAFirstChunkWhole) {
  const RunResult result = RunScenario(
      {"window", {{"budget", 4}, {"evict_at", 2}}}, ChunkScenario({7, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {0, 1, 2, 3}}));
  EXPECT_EQ(result.steps[0].kept_count, 7u);
  EXPECT_EQ(result.steps[1].kept_count, 4u);
}

// spans.md#position-ids: with position_ids 1 the ids are indices in the
// held set; the first query's id is the number kept after the eviction
// before admission. streamingllm budget 5, sinks 2, evict_at 1, single
// steps 0..6: at step 6 the held set is 0, 1, 4, 5, 6.
TEST(Spans, CacheRelativeIds) {
  const RunResult result =
      RunScenario({"streamingllm",
                   {{"budget", 5},
                    {"sinks", 2},
                    {"evict_at", 1},
                    {"position_ids", 1},
                    {"spans", 1}}},
                  ChunkScenario({1, 1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(result.steps[6].held, (Runs{{0, 1, 0}, {4, 6, 2}}));
  EXPECT_EQ(result.steps[6].spans, (std::vector<Ranges>{{0, 1, 4, 6}}));
  EXPECT_EQ(result.steps[6].victims, (std::vector<Position>{3}));
}

// Sinks are in every span: streamingllm budget 5, sinks 2, span_window 3,
// evict_at 2 (MLX's rule); chunks 5 then 3: the chunk's queries 5, 6, 7
// see the sinks and their own window of 3.
TEST(Spans, SinksInEveryChunkSpan) {
  const RunResult result = RunScenario({"streamingllm",
                                        {{"budget", 5},
                                         {"sinks", 2},
                                         {"span_window", 3},
                                         {"evict_at", 2},
                                         {"spans", 1}}},
                                       ChunkScenario({5, 3}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  // Before admitting 5..7, down to budget - 1 = 4: 2 goes (a non-sink).
  EXPECT_EQ(result.steps[1].victims, (std::vector<Position>{2}));
  EXPECT_EQ(result.steps[1].held, (Runs{{0, 1, 0}, {3, 7, 3}}));
  EXPECT_EQ(result.steps[1].spans,
            (std::vector<Ranges>{{0, 1, 3, 5}, {0, 1, 4, 6}, {0, 1, 5, 7}}));
}

// span_chunk with full: the cache keeps everything, the mask does not.
TEST(Spans, ChunkedSpansOverAFullCache) {
  const RunResult result =
      RunScenario({"full", {{"span_chunk", 3}, {"spans", 1}}},
                  ChunkScenario({4, 3}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(result.steps[0].spans,
            (std::vector<Ranges>{{0, 0}, {0, 1}, {0, 2}, {3, 3}}));
  EXPECT_EQ(result.steps[1].spans,
            (std::vector<Ranges>{{3, 4}, {3, 5}, {6, 6}}));
}

// Without `spans` 1 nothing is logged, whatever the span rule.
TEST(Spans, NothingLoggedWithoutSpans) {
  const RunResult result =
      RunScenario({"window", {{"budget", 2}, {"span_window", 2}}},
                  ChunkScenario({3, 1}));
  ASSERT_TRUE(result.refusal.ok());
  for (const StepRecord& step : result.steps) {
    EXPECT_TRUE(step.spans.empty());
    EXPECT_TRUE(step.held.empty());
  }
}

// spans.md#parameters: the rules between parameters.
TEST(Spans, RefusesBothSpanRules) {
  const RunResult result = RunScenario(
      {"window", {{"span_window", 2}, {"span_chunk", 2}}}, ChunkScenario({1}));
  EXPECT_EQ(CategoryOf(result.refusal), ErrorCategory::kInvalidParameter);
}

TEST(Spans, RefusesEvictBeforeWithPrefillBudgets) {
  EXPECT_EQ(CategoryOf(RunScenario({"streamingllm",
                                    {{"evict_at", 1}, {"prefill_only", 1}}},
                                   ChunkScenario({1}))
                           .refusal),
            ErrorCategory::kInvalidParameter);
  EXPECT_EQ(CategoryOf(RunScenario({"streamingllm",
                                    {{"evict_at", 2}, {"ratio_ppm", 5000}}},
                                   ChunkScenario({1}))
                           .refusal),
            ErrorCategory::kInvalidParameter);
}

TEST(Spans, OnlyPositionalPoliciesTakeThem) {
  EXPECT_EQ(CategoryOf(RunScenario({"full", {{"evict_at", 1}}},
                                   ChunkScenario({1}))
                           .refusal),
            ErrorCategory::kInvalidParameter);
  EXPECT_EQ(CategoryOf(RunScenario({"h2o", {{"spans", 1}}}, ChunkScenario({1}))
                           .refusal),
            ErrorCategory::kInvalidParameter);
}

// spans.md#context-shift worked example: streamingllm budget 7, sinks 2
// (llama.cpp n_ctx 8, n_keep 2), 21 decode steps: a shift before every
// second step from 7 on, each discarding the two oldest non-sinks.
TEST(ContextShift, WorkedExampleDecode) {
  const RunResult result = RunScenario(
      {"streamingllm",
       {{"budget", 7}, {"sinks", 2}, {"context_shift", 1},
        {"position_ids", 1}, {"spans", 1}}},
      ChunkScenario(std::vector<uint32_t>(21, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  Victims expected(21);
  expected[7] = {2, 3};
  expected[9] = {4, 5};
  expected[11] = {6, 7};
  expected[13] = {8, 9};
  expected[15] = {10, 11};
  expected[17] = {12, 13};
  expected[19] = {14, 15};
  EXPECT_EQ(VictimsPerStep(result), expected);
  EXPECT_EQ(result.steps[6].held, (Runs{{0, 6, 0}}));
  EXPECT_EQ(result.steps[7].held, (Runs{{0, 1, 0}, {4, 7, 2}}));
  EXPECT_EQ(result.steps[8].held, (Runs{{0, 1, 0}, {4, 8, 2}}));
  EXPECT_EQ(result.steps[9].held, (Runs{{0, 1, 0}, {6, 9, 2}}));
  EXPECT_EQ(result.steps[20].held, (Runs{{0, 1, 0}, {16, 20, 2}}));
  EXPECT_EQ(result.steps[20].kept_count, 7u);
  // Full causal spans: the query sees everything held up to itself.
  EXPECT_EQ(result.steps[7].spans, (std::vector<Ranges>{{0, 1, 4, 7}}));
}

// spans.md#context-shift, the chunk example: chunks 5, 3, 1; and with
// discard 4 the first shift is clamped to n_left - 1 and the last step fits.
TEST(ContextShift, WorkedExampleChunksAndDiscard) {
  const RunResult half = RunScenario(
      {"streamingllm",
       {{"budget", 7}, {"sinks", 2}, {"context_shift", 1},
        {"position_ids", 1}, {"spans", 1}}},
      ChunkScenario({5, 3, 1}));
  ASSERT_TRUE(half.refusal.ok()) << half.refusal;
  EXPECT_EQ(VictimsPerStep(half), (Victims{{}, {2}, {3, 4}}));
  EXPECT_EQ(half.steps[1].held, (Runs{{0, 1, 0}, {3, 7, 2}}));
  EXPECT_EQ(half.steps[2].held, (Runs{{0, 1, 0}, {5, 8, 2}}));
  EXPECT_EQ(half.steps[2].kept_count, 6u);

  const RunResult four = RunScenario(
      {"streamingllm",
       {{"budget", 7}, {"sinks", 2}, {"context_shift", 1}, {"discard", 4}}},
      ChunkScenario({5, 3, 1}));
  ASSERT_TRUE(four.refusal.ok()) << four.refusal;
  EXPECT_EQ(VictimsPerStep(four), (Victims{{}, {2, 3}, {}}));
  EXPECT_EQ(four.steps[1].kept_count, 6u);
  EXPECT_EQ(four.steps[2].kept_count, 7u);
}

// window: every kept position may go. Budget 4, decode: at 4 the cache is
// full (n_left 4, d 2: 0, 1 go); 5 fits; at 6, 2 and 3 go.
TEST(ContextShift, WindowDiscardsTheOldestHalf) {
  const RunResult result = RunScenario(
      {"window", {{"budget", 4}, {"context_shift", 1}}},
      ChunkScenario(std::vector<uint32_t>(7, 1)));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {0, 1}, {}, {2, 3}}));
}

// A chunk that does not fit after one shift is admitted whole: budget 7,
// sinks 2, chunks 3, 6 (n_left 1: d 0), kept 9; the next step shifts
// n_left 7, d 3 (2, 3, 4) and keeps 7.
TEST(ContextShift, ChunkThatDoesNotFitIsKeptWhole) {
  const RunResult result = RunScenario(
      {"streamingllm", {{"budget", 7}, {"sinks", 2}, {"context_shift", 1}}},
      ChunkScenario({3, 6, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {}, {2, 3, 4}}));
  EXPECT_EQ(result.steps[1].kept_count, 9u);
  EXPECT_EQ(result.steps[2].kept_count, 7u);
}

// spans.md#parameters: the context shift's rules.
TEST(ContextShift, RefusesItsRules) {
  const auto refused = [](PolicyConfig config) {
    return CategoryOf(RunScenario(config, ChunkScenario({1})).refusal) ==
           ErrorCategory::kInvalidParameter;
  };
  EXPECT_TRUE(refused({"window", {{"discard", 1}}}));
  EXPECT_TRUE(refused({"window", {{"budget", 1}, {"context_shift", 1}}}));
  EXPECT_FALSE(refused({"window", {{"budget", 2}, {"context_shift", 1}}}));
  EXPECT_TRUE(refused({"window", {{"context_shift", 1}, {"evict_at", 1}}}));
  EXPECT_TRUE(refused(
      {"streamingllm", {{"budget", 6}, {"sinks", 5}, {"context_shift", 1}}}));
  EXPECT_FALSE(refused(
      {"streamingllm", {{"budget", 6}, {"sinks", 4}, {"context_shift", 1}}}));
  EXPECT_TRUE(refused(
      {"streamingllm", {{"context_shift", 1}, {"prefill_only", 1}}}));
  EXPECT_TRUE(refused(
      {"streamingllm", {{"context_shift", 1}, {"ratio_ppm", 500000}}}));
  EXPECT_TRUE(refused({"full", {{"context_shift", 1}}}));
}

}  // namespace
}  // namespace kvspec
