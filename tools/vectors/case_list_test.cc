// Case lists (spec/vectors.md#case-lists), worked by hand from the format.
#include "tools/vectors/case_list.h"

#include "gtest/gtest.h"

namespace kvspec {
namespace vectors {
namespace {

TEST(CaseList, ReadsCasesSkippingCommentsAndBlankLines) {
  absl::StatusOr<std::vector<ListedCase>> cases = ParseCaseList(
      "# model cases\n"
      "\n"
      "model/eager/a  layer0.pb\th2o budget=6,sinks=-1\n"
      "model/eager/b /abs/l1.pb full -\r\n"
      "model/x/c l.pb random seed=18446744073709551615,budget=3\n"
      "model/x/d l.pb snapkv preset=kvpress-0.5.5,ratio_ppm=500000\n");
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 4u);
  EXPECT_EQ((*cases)[0].id, "model/eager/a");
  EXPECT_EQ((*cases)[0].scenario_file, "layer0.pb");
  EXPECT_EQ((*cases)[0].policy.name, "h2o");
  ASSERT_EQ((*cases)[0].policy.parameters.size(), 2u);
  EXPECT_EQ((*cases)[0].policy.parameters[0].name, "budget");
  EXPECT_EQ((*cases)[0].policy.parameters[0].value, 6);
  EXPECT_EQ((*cases)[0].policy.parameters[1].name, "sinks");
  EXPECT_EQ((*cases)[0].policy.parameters[1].value, -1);  // the registry refuses it, not the list
  EXPECT_EQ((*cases)[1].scenario_file, "/abs/l1.pb");
  EXPECT_TRUE((*cases)[1].policy.parameters.empty());
  EXPECT_EQ((*cases)[2].policy.seed, 18446744073709551615u);
  ASSERT_EQ((*cases)[2].policy.parameters.size(), 1u);  // seed is not a parameter
  EXPECT_TRUE((*cases)[2].preset.empty());
  EXPECT_EQ((*cases)[3].preset, "kvpress-0.5.5");  // nor is preset
  ASSERT_EQ((*cases)[3].policy.parameters.size(), 1u);
  EXPECT_EQ((*cases)[3].policy.parameters[0].name, "ratio_ppm");
}

TEST(CaseList, RefusalsNameTheLine) {
  struct Refused {
    const char* text;
    const char* message;
  };
  for (const Refused& r : {
           Refused{"g/t/a b c\n", "line 1: expected 4 fields"},
           Refused{"# c\ng/t/a b c d e\n", "line 2: expected 4 fields"},
           Refused{"g/t/a b h2o budget\n", "line 1: 'budget' is not name=integer"},
           Refused{"g/t/a b h2o =3\n", "line 1: '=3' is not name=integer"},
           Refused{"g/t/a b h2o budget=x\n", "line 1: 'budget=x' is not name=integer"},
           Refused{"g/t/a b h2o budget=9223372036854775808\n", "the value must fit int64"},
           Refused{"g/t/a b h2o budget=1,budget=2\n", "line 1: 'budget' is given twice"},
           Refused{"g/t/a b h2o seed=-1\n", "line 1: seed '-1' is not an integer"},
           Refused{"g/t/a b h2o budget=1,,sinks=2\n", "line 1: '' is not name=integer"},
           Refused{"g/t/a b h2o preset=\n", "line 1: preset names no preset"},
           Refused{"g/t/a b h2o preset=x,preset=y\n", "line 1: 'preset' is given twice"},
           Refused{"a b h2o -\n", "line 1: case id 'a' is not <group>/<topic>/<name>"},
           Refused{"g/t/\u00e9 b h2o -\n", "case id 'g/t/\u00e9' is not"},
           Refused{"g//a b h2o -\n", "line 1: case id 'g//a' is not"},
           Refused{"G/t/a b h2o -\n", "line 1: case id 'G/t/a' is not"},
       }) {
    absl::StatusOr<std::vector<ListedCase>> cases = ParseCaseList(r.text);
    ASSERT_FALSE(cases.ok()) << r.text;
    EXPECT_EQ(cases.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(cases.status().message().find(r.message), absl::string_view::npos)
        << cases.status().message() << " lacks " << r.message;
  }
}

TEST(CaseList, AnEmptyTextIsAnEmptyList) {
  absl::StatusOr<std::vector<ListedCase>> cases = ParseCaseList("");
  ASSERT_TRUE(cases.ok());
  EXPECT_TRUE(cases->empty());
}

}  // namespace
}  // namespace vectors
}  // namespace kvspec
