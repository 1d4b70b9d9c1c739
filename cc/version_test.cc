#include "cc/version.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace kvspec {
namespace {

TEST(SpecVersion, MatchesSpecReadme) {
  std::ifstream in("spec/README.md");
  ASSERT_TRUE(in) << "spec/README.md is not in the test's runfiles";
  std::stringstream text;
  text << in.rdbuf();
  const std::string line =
      std::string("Spec version: **") + kSpecVersion + "**";
  EXPECT_NE(text.str().find(line), std::string::npos)
      << "spec/README.md does not say '" << line << "'";
}

}  // namespace
}  // namespace kvspec
