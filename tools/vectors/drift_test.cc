// The committed vectors/ are exactly what the reference generates now.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tools/vectors/cases.h"
#include "tools/vectors/generate.h"
#include "tools/vectors/markdown_block.h"

namespace kvspec {
namespace vectors {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(Vectors, CommittedFilesMatchTheReferenceByteForByte) {
  const auto files = GenerateVectorFiles(BuildSuite());
  ASSERT_TRUE(files.ok()) << files.status();
  size_t suite_bytes = 0;
  for (const GeneratedFile& file : *files) suite_bytes += file.bytes.size();
  EXPECT_LE(suite_bytes, kMaxSuiteBytes)
      << "the suite is over the size spec/vectors.md#files allows";
  std::set<std::string> generated;
  for (const GeneratedFile& file : *files) {
    generated.insert(file.path);
    const fs::path committed = fs::path("vectors") / file.path;
    ASSERT_TRUE(fs::exists(committed))
        << file.path << " is missing; run `bazel run -c opt //tools:regen_vectors`";
    EXPECT_TRUE(Read(committed) == file.bytes)
        << file.path << " differs from what the reference generates; run "
        << "`bazel run -c opt //tools:regen_vectors` and review the diff";
  }
  for (const auto& entry : fs::directory_iterator("vectors")) {
    EXPECT_EQ(generated.count(entry.path().filename().string()), 1u)
        << entry.path() << " is in vectors/ but the generator does not write it";
  }
}

TEST(Vectors, FlagTableInTheSpecIsCurrent) {
  const std::string text = Read("spec/vectors.md");
  const auto updated =
      ReplaceBlock(text, "flags", FlagTableMarkdown(), "spec/vectors.md");
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_TRUE(*updated == text)
      << "spec/vectors.md's flag table is stale; run "
      << "`bazel run -c opt //tools:regen_vectors`";
}

TEST(Vectors, FeatureTableInTheSpecIsCurrent) {
  const std::string text = Read("spec/features.md");
  const auto updated =
      ReplaceBlock(text, "features", FeatureTableMarkdown(), "spec/features.md");
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_TRUE(*updated == text)
      << "spec/features.md's feature table is stale; run "
      << "`bazel run -c opt //tools:regen_vectors`";
}

TEST(Vectors, TheGeneratorRefusesADuplicateCaseId) {
  Suite suite = BuildSuite();
  suite.cases.push_back(suite.cases.front());
  const auto files = GenerateVectorFiles(suite);
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("duplicate case id"),
            absl::string_view::npos);
}

TEST(Vectors, TheGeneratorRefusesAnUnknownFlagOrScenario) {
  Suite suite = BuildSuite();
  suite.cases.front().flags.push_back("no-such-rule");
  EXPECT_FALSE(GenerateVectorFiles(suite).ok());
  suite = BuildSuite();
  suite.cases.front().scenario_id = "no-such-scenario";
  EXPECT_FALSE(GenerateVectorFiles(suite).ok());
  suite = BuildSuite();
  suite.cases.front().id = "Not/A/Valid ID";
  EXPECT_FALSE(GenerateVectorFiles(suite).ok());
}

}  // namespace
}  // namespace vectors
}  // namespace kvspec
