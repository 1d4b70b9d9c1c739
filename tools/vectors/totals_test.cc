// spec/prefill.md#column-totals: totals formed from a prompt's rows as the
// spec pins them give, bit for bit, the log those rows give. The committed
// vectors claim it for two pairs of cases (their descriptions say "the same
// log"); this test holds them to it, cut scores included.
#include <string>

#include "gtest/gtest.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace {

void ExpectSameLog(const vectors::VectorSet& set, const std::string& rows,
                   const std::string& totals) {
  const vectors::LoadedCase* a = vectors::FindCase(set, rows);
  const vectors::LoadedCase* b = vectors::FindCase(set, totals);
  ASSERT_NE(a, nullptr) << rows;
  ASSERT_NE(b, nullptr) << totals;
  // The totals' scenario really carries fewer rows (not the same step).
  ASSERT_GT(a->scenario->steps(0).queries_size(),
            b->scenario->steps(0).queries_size());
  ASSERT_GT(b->scenario->steps(0).totals_size(), 0);
  EXPECT_EQ(a->vector->expected().SerializeAsString(),
            b->vector->expected().SerializeAsString())
      << rows << " against " << totals;
  EXPECT_GT(a->vector->expected().steps_size(), 0);
}

TEST(ColumnTotals, GiveTheLogOfTheRowsTheyCameFrom) {
  const auto set = vectors::LoadVectorSet("vectors");
  ASSERT_TRUE(set.ok()) << set.status();
  for (const char* r : {"25", "50", "75"}) {
    ExpectSameLog(*set, std::string("prefill/kvpress/h2o-ratio-") + r,
                  std::string("prefill/totals/kvpress-h2o-ratio-") + r);
  }
  ExpectSameLog(*set, "prefill/adakv/h2o", "prefill/totals/adakv-h2o");
}

}  // namespace
}  // namespace kvspec
