// Hand-worked cases from spec/policies/streamingllm.md, including each
// chunked-admission case the card lists and the cache-relative re-indexing.
#include <vector>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/policies/testing.h"
#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace {

using testing_util::ChunkScenario;
using testing_util::KeptAfter;
using testing_util::VictimsPerStep;
using Victims = std::vector<std::vector<Position>>;

PolicyConfig Streaming(int64_t budget, int64_t sinks) {
  return {"streamingllm", {{"budget", budget}, {"sinks", sinks}}};
}

TEST(StreamingLlmPolicy, KeepsSinksAndRollsTheWindow) {
  // budget 5, sinks 2, so W = 3. Positions 0..4 fit; position 5 pushes out
  // 2 (the oldest non-sink), position 6 pushes out 3.
  const RunResult result =
      RunScenario(Streaming(5, 2), ChunkScenario({1, 1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok()) << result.refusal;
  EXPECT_EQ(VictimsPerStep(result),
            (Victims{{}, {}, {}, {}, {}, {2}, {3}}));
  EXPECT_EQ(KeptAfter(Streaming(5, 2), ChunkScenario({1, 1, 1, 1, 1, 1, 1})),
            (std::vector<Position>{0, 1, 4, 5, 6}));
}

TEST(StreamingLlmPolicy, CacheRelativePositionsFollowTheSeedFormula) {
  // After step t = 6 with S = 2, W = 3: sinks keep 0..S-1; window position j
  // gets S + (j - (t - W + 1)) = 2 + (j - 4); the next query gets S + W = 5.
  auto policy = MakePolicy(Streaming(5, 2));
  ASSERT_TRUE(policy.ok());
  const RunResult result =
      RunScenario(**policy, ChunkScenario({1, 1, 1, 1, 1, 1, 1}));
  ASSERT_TRUE(result.refusal.ok());
  const auto kept = (*policy)->kept();
  EXPECT_EQ(CacheRelativePosition(kept, 0), 0u);
  EXPECT_EQ(CacheRelativePosition(kept, 1), 1u);
  EXPECT_EQ(CacheRelativePosition(kept, 4), 2u);
  EXPECT_EQ(CacheRelativePosition(kept, 5), 3u);
  EXPECT_EQ(CacheRelativePosition(kept, 6), 4u);
  EXPECT_EQ(CacheRelativePosition(kept, 2), std::nullopt);
  // The query of step 6 saw a full cache (S + W = 5 kept) and sat at 5.
  EXPECT_EQ(result.steps[6].query_cache_position, 5u);
  // Before the cache filled, the query sat at the number of kept positions.
  EXPECT_EQ(result.steps[3].query_cache_position, 3u);
}

TEST(StreamingLlmPolicy, FirstChunkLongerThanCapacityKeepsSinks) {
  // budget 5, sinks 2: one prefill chunk of 10 (0..9) keeps the sinks 0, 1
  // and the latest W = 3, 7..9. The seed's PyTorch cache writes only the
  // last W tokens here and leaves the sink slots unwritten.
  const RunResult result = RunScenario(Streaming(5, 2), ChunkScenario({10}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{2, 3, 4, 5, 6}}));
  EXPECT_EQ(KeptAfter(Streaming(5, 2), ChunkScenario({10})),
            (std::vector<Position>{0, 1, 7, 8, 9}));
}

TEST(StreamingLlmPolicy, ChunkCrossingCapacityOfAPartlyFilledCache) {
  // budget 5, sinks 2: a chunk of 4 (0..3) fits; a chunk of 2 (4, 5) makes
  // six, so the oldest window position, 2, goes and 3, 4, 5 stay. The seed's
  // PyTorch cache shifts from slot 4 as if the cache were full and keeps an
  // unwritten slot in place of position 3.
  const RunResult result =
      RunScenario(Streaming(5, 2), ChunkScenario({4, 2}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {2}}));
  EXPECT_EQ(KeptAfter(Streaming(5, 2), ChunkScenario({4, 2})),
            (std::vector<Position>{0, 1, 3, 4, 5}));
}

TEST(StreamingLlmPolicy, ChunkLongerThanWindowAfterTheCacheFilled) {
  // budget 5, sinks 2, W = 3: 0..4 fill the cache, then a chunk of 4 (5..8)
  // keeps only its own last three; its first, 5, is admitted and evicted in
  // the same step.
  const RunResult result =
      RunScenario(Streaming(5, 2), ChunkScenario({5, 4}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {2, 3, 4, 5}}));
}

TEST(StreamingLlmPolicy, ChunkThatHoldsSomeSinks) {
  // budget 6, sinks 4, W = 2: a chunk of 2 (0, 1) then a chunk of 5 (2..6).
  // Sinks are the first four positions ever admitted, 0..3, whichever chunk
  // brought them; 4 is the only non-sink outside the latest two.
  const RunResult result = RunScenario(Streaming(6, 4), ChunkScenario({2, 5}));
  EXPECT_EQ(VictimsPerStep(result), (Victims{{}, {4}}));
  EXPECT_EQ(KeptAfter(Streaming(6, 4), ChunkScenario({2, 5})),
            (std::vector<Position>{0, 1, 2, 3, 5, 6}));
}

TEST(StreamingLlmPolicy, ZeroSinksEvictsExactlyWhatWindowEvicts) {
  const Scenario scenario =
      ChunkScenario({1, 7, 1, 1, 3, 1, 12, 1, 1, 2, 1, 5, 1});
  for (int64_t budget : {1, 2, 3, 5, 8, 13, 40}) {
    const RunResult streaming = RunScenario(Streaming(budget, 0), scenario);
    const RunResult window =
        RunScenario({"window", {{"budget", budget}}}, scenario);
    ASSERT_TRUE(streaming.refusal.ok());
    EXPECT_EQ(streaming.steps, window.steps) << "budget " << budget;
  }
}

TEST(StreamingLlmPolicy, DefaultsAreBudget512AndFourSinks) {
  // 600 positions in one chunk: keep 0..3 and the latest 508 (92..599).
  const std::vector<Position> kept =
      KeptAfter({"streamingllm", {}}, ChunkScenario({600}));
  ASSERT_EQ(kept.size(), 512u);
  EXPECT_EQ(kept[3], 3u);
  EXPECT_EQ(kept[4], 92u);
  EXPECT_EQ(kept.back(), 599u);
}

TEST(StreamingLlmPolicy, RefusesSinksNotBelowBudget) {
  for (int64_t sinks : {4, 5}) {
    const auto policy = MakePolicy(Streaming(4, sinks));
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
    EXPECT_NE(policy.status().message().find("sinks must be below budget"),
              absl::string_view::npos)
        << policy.status();
  }
}

TEST(StreamingLlmPolicy, RefusesNegativeSinks) {
  const auto policy = MakePolicy(Streaming(4, -1));
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(CategoryOf(policy.status()), ErrorCategory::kInvalidParameter);
  EXPECT_NE(policy.status().message().find("sinks"), absl::string_view::npos);
}

TEST(StreamingLlmPolicy, IgnoresAttention) {
  // The same chunks with and without attention evict the same positions.
  Scenario with_attention = ChunkScenario({3, 1, 1, 1});
  with_attention.steps[1].attention = std::vector<float>{0.9f, 0.05f, 0.05f};
  with_attention.steps[3].attention =
      std::vector<float>{0.f, 0.f, 1.f, 0.f, 0.f};
  const RunResult a = RunScenario(Streaming(4, 1), with_attention);
  const RunResult b = RunScenario(Streaming(4, 1), ChunkScenario({3, 1, 1, 1}));
  ASSERT_TRUE(a.refusal.ok()) << a.refusal;
  EXPECT_EQ(a.steps, b.steps);
}

}  // namespace
}  // namespace kvspec
