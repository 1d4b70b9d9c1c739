// Hand-worked from spec/spans.md: window 4, a prompt of 8 in chunks of 4,
// then 2 decode steps.
#include "tools/bench/engine_memory.h"

#include "gtest/gtest.h"

namespace kvspec {
namespace bench {
namespace {

TEST(EngineMemory, WorkedFromTheSpec) {
  absl::StatusOr<std::vector<EngineMemoryRun>> runs =
      MeasureEngineMemory(4, 8, 2, {4});
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 3u);  // no sinks preset in a cache of 4
  // hf-dynamic: budget 3; the second chunk is held with the 3 kept: 7.
  EXPECT_EQ((*runs)[0].peak_held, 7u);
  EXPECT_EQ((*runs)[0].peak_kept, 3u);
  // hf-static: budget 4; the second chunk with the 4 kept: 8.
  EXPECT_EQ((*runs)[1].peak_held, 8u);
  EXPECT_EQ((*runs)[1].peak_kept, 4u);
  // mlx-lm, keep 0: down to 3 before each step; after the second chunk
  // 3 + 4 = 7 are kept, and held.
  EXPECT_EQ((*runs)[2].peak_held, 7u);
  EXPECT_EQ((*runs)[2].peak_kept, 7u);
  EXPECT_EQ((*runs)[2].final_kept, 4u);
  // The three window presets give every query q - 3 .. q.
  EXPECT_TRUE((*runs)[0].spans_equal);
  EXPECT_TRUE((*runs)[1].spans_equal);
  EXPECT_TRUE((*runs)[2].spans_equal);
}

// With 4 sinks in a cache of 6 the sinks preset's spans differ (the sinks
// are in every span): chunks of 3, then a decode step.
TEST(EngineMemory, SinksChangeTheSpans) {
  absl::StatusOr<std::vector<EngineMemoryRun>> runs =
      MeasureEngineMemory(6, 9, 1, {3});
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 4u);
  EXPECT_FALSE((*runs)[3].spans_equal);
  // Down to 5 before each step: after the third chunk 5 + 3 = 8 kept.
  EXPECT_EQ((*runs)[3].peak_kept, 8u);
}

}  // namespace
}  // namespace bench
}  // namespace kvspec
