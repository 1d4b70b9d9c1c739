#include "tools/census/examples.h"

#include "gtest/gtest.h"

namespace kvspec {
namespace audit {
namespace {

TEST(FindExamples, AParagraphWithItsCases) {
  const auto found = FindExamples(
      "policies/x.md",
      "# Title\n\nSome rule.\n\nWorked example (`budget` 3): 2 goes.\n"
      "(Vector `h2o/basic/lowest-sum`, see `cc/policies/h2o_test.cc`.)\n\nMore.\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 5);
  EXPECT_EQ(found[0].cases, (std::vector<std::string>{"h2o/basic/lowest-sum"}));
}

TEST(FindExamples, ExampleMidParagraphAndWithoutCases) {
  const auto found = FindExamples(
      "a.md", "Equal sums evict the lower. Example: sums 1, 1.\nThe end.\n\n"
              "For example, nothing here counts.\n\nExamples of nothing.\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 1);
  EXPECT_TRUE(found[0].cases.empty());
}

TEST(FindExamples, AQuotedNameIsNotAnExample) {
  EXPECT_TRUE(FindExamples("a.md", "An example is a paragraph with \"Worked example\") in it.\n")
                  .empty());
  EXPECT_EQ(FindExamples("a.md", "Worked example\nover two lines.\n").size(), 1u);
}

TEST(FindExamples, ListItemsAreExamplesEach) {
  const auto found = FindExamples(
      "a.md",
      "Worked examples (all from a test):\n- *One*: 0 goes (`snapkv/a/one`).\n"
      "  still one.\n- *Two*: 1 goes.\n\nAfter.\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].line, 2);
  EXPECT_EQ(found[0].cases, (std::vector<std::string>{"snapkv/a/one"}));
  EXPECT_NE(found[0].text.find("still one"), std::string::npos);
  EXPECT_EQ(found[1].line, 4);
  EXPECT_TRUE(found[1].cases.empty());
}

TEST(FindExamples, CodeAndTablesAreSkipped) {
  const auto found = FindExamples(
      "a.md", "```\nExample: in code\n\nExample: still code\n```\n\n| Example: a cell |\n");
  EXPECT_TRUE(found.empty());
}

}  // namespace
}  // namespace audit
}  // namespace kvspec
