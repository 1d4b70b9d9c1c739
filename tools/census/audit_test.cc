// The tie audit (tools/census/census.h AuditCase) runs every case of
// vectors/ as the harness does: its victims, step by step and set by set,
// and its rejection are the case's expected ones. And, on cases worked by
// hand, it reports the ties that decided victims and no others (issue 18:
// the audit used to rerun cases without their heads or query rows).
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tools/census/census.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace audit {
namespace {

// vectors/ is loaded once per test process (shard).
const vectors::VectorSet& Vectors() {
  static const vectors::VectorSet* set = [] {
    absl::StatusOr<vectors::VectorSet> loaded = vectors::LoadVectorSet("vectors");
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
      std::abort();
    }
    return new vectors::VectorSet(*std::move(loaded));
  }();
  return *set;
}

CaseAudit AuditOf(const std::string& id) {
  const vectors::LoadedCase* found = vectors::FindCase(Vectors(), id);
  if (found == nullptr) {
    ADD_FAILURE() << "no case " << id;
    return {};
  }
  return AuditCase(*found);
}

// Every case, in kParts parts (case index modulo kParts), so that Bazel's
// shards share the suite.
constexpr int kParts = 8;

class EveryCase : public ::testing::TestWithParam<int> {};

TEST_P(EveryCase, EvictsAndRejectsAsExpected) {
  const vectors::VectorSet& set = Vectors();
  ASSERT_GT(set.cases.size(), 0u);
  size_t audited = 0;
  for (size_t i = GetParam(); i < set.cases.size(); i += kParts) {
    const vectors::LoadedCase& c = set.cases[i];
    const CaseAudit audit = AuditCase(c);
    const std::vector<std::string> problems = ExpectedLogProblems(c, audit);
    EXPECT_TRUE(problems.empty())
        << c.vector->id() << ":\n  " << absl::StrJoin(problems, "\n  ");
    for (const AuditStep& step : audit.steps) {
      for (const AuditTie& tie : step.deciding) {
        // A deciding tie has a victim and a survivor at one score.
        EXPECT_FALSE(tie.evicted.empty() || tie.kept.empty()) << c.vector->id();
        EXPECT_TRUE(tie.by_position || tie.by_set) << c.vector->id();
      }
    }
    ++audited;
  }
  EXPECT_GT(audited, 0u);
}

INSTANTIATE_TEST_SUITE_P(Parts, EveryCase, ::testing::Range(0, kParts));

std::vector<std::vector<Position>> StepVictims(const CaseAudit& audit,
                                               int64_t step) {
  for (const AuditStep& s : audit.steps) {
    if (s.step == step) return s.victims;
  }
  return {};
}

// Built to have no tie: the summed scores of positions 1 and 0 differ in
// their last bit (1.5000000000000002 and 1.5000000000000004 in its expected
// cut); the old audit, running one head only, saw a tie.
TEST(AuditTest, SumNoTieHasNoDecidingTie) {
  const CaseAudit audit = AuditOf("h2o/heads/sum-no-tie");
  EXPECT_TRUE(audit.problems.empty());
  EXPECT_EQ(audit.deciding_ties, 0u);
  ASSERT_EQ(audit.steps.size(), 1u);
  EXPECT_EQ(StepVictims(audit, 1), (std::vector<std::vector<Position>>{{1}}));
}

// A prefill step (query rows) with the window outside the budget: one
// victim, position 1 at 0.25 (its expected cut); 0 and 2 tie at 0.75, both
// kept: a tie that decides nothing. The old audit, without query rows,
// reported 3 positions evicted by ties at score 0.
TEST(AuditTest, WindowOutsideEvictsOneWithoutTie) {
  const CaseAudit audit = AuditOf("prefill/snapkv/window-outside");
  EXPECT_TRUE(audit.problems.empty());
  ASSERT_EQ(audit.steps.size(), 1u);
  EXPECT_EQ(StepVictims(audit, 0), (std::vector<std::vector<Position>>{{1}}));
  EXPECT_EQ(audit.deciding_ties, 0u);
  EXPECT_EQ(audit.undecisive_ties, 1u);
  for (const AuditStep& step : audit.steps) {
    for (const AuditTie& tie : step.deciding) EXPECT_NE(tie.score, 0.0);
  }
}

// Flagged tie.lower-position. Its expected log's step 3 cut reads
// {1, 0.75}, {2, 0.75}, {0, 1.5} with victims [1]: positions 1 and 2 tie
// at 0.75 across the cut, and the lower, 1, goes.
TEST(AuditTest, EqualSumsTieDecidesByLowerPosition) {
  const CaseAudit audit = AuditOf("h2o/ties/equal-sums-evict-lower");
  EXPECT_TRUE(audit.problems.empty());
  ASSERT_EQ(audit.steps.size(), 1u);
  const AuditStep& step = audit.steps[0];
  EXPECT_EQ(step.step, 3);
  ASSERT_EQ(step.deciding.size(), 1u);
  const AuditTie& tie = step.deciding[0];
  EXPECT_FALSE(tie.joint);
  EXPECT_EQ(tie.score, 0.75);
  ASSERT_EQ(tie.evicted.size(), 1u);
  ASSERT_EQ(tie.kept.size(), 1u);
  EXPECT_EQ(tie.evicted[0].position, 1u);
  EXPECT_EQ(tie.kept[0].position, 2u);
  EXPECT_TRUE(tie.by_position);
  EXPECT_EQ(audit.deciding_ties, 1u);
}

// AdaKV (two query heads, one set each, budget 2, recent_window 1, floor
// 1). At step 2 set 0 (head 0) ranks 2 at 0.25, 1 at 0.5, 0 at 1 (sums of
// its rows [0.5, 0.25] and [0.5, 0.25, 0.25]); set 1 keeps 2 and 3 and
// ranks 2 at 0.5 (head 1's row [0, 0, 0.5]). Two of the 6 pairs go:
// set 0's 2 at 0.25, then at 0.5 set 0's 1 before set 1's 2 by position.
// The expected log shows set 0's victims [1 2] and set 1's none; its
// per-set cuts cannot show this tie across sets.
TEST(AuditTest, JointRankingTieDecidesByPosition) {
  const CaseAudit audit = AuditOf("h2o/adakv/joint-ranking");
  EXPECT_TRUE(audit.problems.empty());
  EXPECT_EQ(audit.set_names,
            (std::vector<std::string>{"query head 0", "query head 1"}));
  EXPECT_EQ(StepVictims(audit, 2),
            (std::vector<std::vector<Position>>{{1, 2}, {}}));
  ASSERT_EQ(audit.deciding_ties, 1u);
  const AuditTie* tie = nullptr;
  for (const AuditStep& step : audit.steps) {
    if (!step.deciding.empty()) {
      EXPECT_EQ(step.step, 2);
      tie = &step.deciding[0];
    }
  }
  ASSERT_NE(tie, nullptr);
  EXPECT_TRUE(tie->joint);
  EXPECT_EQ(tie->score, 0.5);
  ASSERT_EQ(tie->evicted.size(), 1u);
  ASSERT_EQ(tie->kept.size(), 1u);
  EXPECT_EQ(tie->evicted[0].set, 0u);
  EXPECT_EQ(tie->evicted[0].position, 1u);
  EXPECT_EQ(tie->kept[0].set, 1u);
  EXPECT_EQ(tie->kept[0].position, 2u);
  EXPECT_TRUE(tie->by_position);
  EXPECT_FALSE(tie->by_set);
}

}  // namespace
}  // namespace audit
}  // namespace kvspec
