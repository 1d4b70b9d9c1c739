// The committed vectors/ are exactly what the reference generates now.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
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

// The suite as the reference generates it now, once for the tests below.
const absl::StatusOr<std::vector<GeneratedFile>>& Generated() {
  static const auto* files =
      new absl::StatusOr<std::vector<GeneratedFile>>(
          GenerateVectorFiles(BuildSuite()));
  return *files;
}

TEST(Vectors, CommittedFilesMatchTheReferenceByteForByte) {
  const auto& files = Generated();
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

// spec/vectors.md#files: each group's text copy reads back as its .pb's
// cases, except that a summarised case's expected log holds its first 8
// and last 8 steps, and its comment line says how many there were.
TEST(Vectors, TheTextCopiesAreThePbsCasesWithLongLogsSummarised) {
  const auto& files = Generated();
  ASSERT_TRUE(files.ok()) << files.status();
  std::map<std::string, std::string> bytes;
  for (const GeneratedFile& file : *files) bytes[file.path] = file.bytes;
  int summarised = 0;
  for (const auto& [path, text] : bytes) {
    if (path.size() < 10 || path.substr(path.size() - 10) != ".textproto") {
      continue;
    }
    const std::string group = path.substr(0, path.size() - 10);
    v1::VectorFile shown, full;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &shown))
        << path;
    ASSERT_TRUE(full.ParseFromString(bytes.at(group + ".pb"))) << group;
    ASSERT_EQ(shown.cases_size(), full.cases_size()) << path;
    for (int i = 0; i < full.cases_size(); ++i) {
      v1::Case want = full.cases(i);
      const v1::Case& got = shown.cases(i);
      const int steps = want.expected().steps_size();
      const std::string note = absl::StrCat(
          "  id: \"", want.id(), "\"\n  # expected: ", steps, " steps; steps 8 .. ",
          steps - 9, " are left out of this text copy");
      if (got.expected().steps_size() != steps) {
        ++summarised;
        ASSERT_GT(steps, 16) << want.id();
        EXPECT_NE(text.find(note), std::string::npos) << want.id();
        want.mutable_expected()->mutable_steps()->DeleteSubrange(8, steps - 16);
      } else {
        EXPECT_EQ(text.find(note), std::string::npos) << want.id();
      }
      EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString()) << want.id();
    }
  }
  EXPECT_GT(summarised, 0) << "no long log was summarised";
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
