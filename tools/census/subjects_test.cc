// Reading the rule subjects from harness.md's table, on small markdown
// written here (the census reads spec/ itself: //tools/census:census_test).
#include "tools/census/subjects.h"

#include "gtest/gtest.h"

namespace kvspec {
namespace audit {
namespace {

TEST(RuleSubjects, ReadsEachRowAndItsAlternatives) {
  const std::string md =
      "# H\n\n## Subjects\n\ntext `unknown x`\n\n"
      "| rule | subject |\n| --- | --- |\n"
      "| `a < b` ([x.md](x.md)) | `rule a b` |\n"
      "| `c` needs `d`, `e` 0 (the first not 0) | `rule c d` (or `e`, `f`) |\n"
      "\nafter the table `rule not this`\n\n## Next\n| rule | subject |\n"
      "| z | `rule z` |\n";
  EXPECT_EQ(RuleSubjects(md),
            (std::set<std::string>{"rule a b", "rule c d", "rule c e", "rule c f"}));
}

TEST(RuleSubjects, NothingWithoutTheSectionOrTheTable) {
  EXPECT_TRUE(RuleSubjects("| rule | subject |\n| --- | --- |\n| x | `rule x` |\n")
                  .empty());
  EXPECT_TRUE(RuleSubjects("## Subjects\n\nno table\n").empty());
}

TEST(SpecSubjects, CoversParametersTraceFieldsAndRows) {
  const std::set<std::string> all = SpecSubjects("");
  for (const char* s : {"unknown name", "range budget", "unknown sinks",
                        "range trace.noise", "range trace.steps", "length total_rows",
                        "value heads", "rule admit"}) {
    EXPECT_EQ(all.count(s), 1u) << s;
  }
  EXPECT_EQ(all.count("range trace.seed"), 0u);
}

}  // namespace
}  // namespace audit
}  // namespace kvspec
