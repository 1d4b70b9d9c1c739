// The blocks section's rows keep the promises its table states
// (spec/blocks.md#how-many-blocks-go): every row at or under the peak, the
// budget the largest multiple of B with budget + B - 1 under it, whole
// blocks per eviction.
#include "tools/bench/blocks.h"

#include "gtest/gtest.h"

namespace kvspec {
namespace bench {
namespace {

int64_t Budget(const BlockRun& run) {
  for (const Parameter& p : run.policy.parameters) {
    if (p.name == "budget") return p.value;
  }
  return -1;
}

TEST(BlocksTest, RowsStayUnderThePeakAndEvictWholeBlocks) {
  BlocksConfig config;
  config.steps = 1536;
  config.from = 1024;
  absl::StatusOr<std::vector<BlockRun>> runs = MeasureBlocks(config);
  ASSERT_TRUE(runs.ok()) << runs.status();
  // 5 policies: 2 positional x 3 sizes + 3 scored x (1 + 2 x 2), and
  // OpenVINO's two rows.
  ASSERT_EQ(runs->size(), 2u * 3 + 3u * 5 + 2);
  for (size_t i = 0; i + 2 < runs->size(); ++i) {
    const BlockRun& run = (*runs)[i];
    // 512 - 16 + 1 = 497 -> 496; 512 - 32 + 1 = 481 -> 480.
    const int64_t want = run.block == 1 ? 512 : run.block == 16 ? 496 : 480;
    EXPECT_EQ(Budget(run), want) << run.policy.name << " block " << run.block;
    EXPECT_LE(run.peak_kept, config.peak) << run.policy.name << " block " << run.block;
    EXPECT_GE(run.peak_kept, want) << run.policy.name << " block " << run.block;
    // Past step 1024 the cache is full: each evicting step removes one
    // block of B positions.
    EXPECT_DOUBLE_EQ(run.victims_per_eviction, run.block) << run.policy.name;
    EXPECT_NEAR(run.evictions_per_1000, 1000.0 / run.block, 1000.0 / 512)
        << run.policy.name << " block " << run.block;
  }
  const BlockRun& ov = (*runs)[runs->size() - 2];
  const BlockRun& one = runs->back();
  EXPECT_EQ(Budget(ov), 672);
  EXPECT_EQ(ov.peak_kept, 703u);  // 672 + 32 - 1
  EXPECT_EQ(Budget(one), 703);
  EXPECT_EQ(one.peak_kept, 703u);
}

}  // namespace
}  // namespace bench
}  // namespace kvspec
