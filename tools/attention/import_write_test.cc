// Tests of WriteScenarioFile (tools/attention/import_attention_lib.h): the
// scenario written whole and read back, and the outputs it refuses and
// leaves as they were (a FIFO, a symlink, a device, the input).
#include "tools/attention/import_attention_lib.h"

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_test_util.h"

namespace kvspec {
namespace import_test {
namespace {

TEST(ImportAttention, OutputFileIsWrittenWhole) {
  const std::string path = WriteInput("write.npy", NpyOf({2, 3, 3}, kExample));
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, {});
  ASSERT_TRUE(scenario.ok());
  const std::string out = ::testing::TempDir() + "/write.pb";
  ASSERT_TRUE(WriteScenarioFile(*scenario, out).ok());
  std::ifstream in(out, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  v1::Scenario read;
  ASSERT_TRUE(read.ParseFromString(bytes.str()));
  EXPECT_EQ(read.SerializeAsString(), scenario->SerializeAsString());

  const std::string nowhere = ::testing::TempDir() + "/no/such/dir/x.pb";
  const absl::Status status = WriteScenarioFile(*scenario, nowhere);
  EXPECT_TRUE(StartsWith(std::string(status.message()),
                         "--output=" + nowhere +
                             ": cannot create a temporary file"))
      << status;
  struct stat info;
  EXPECT_NE(stat(nowhere.c_str(), &info), 0);
}

// A fresh directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name + "-XXXXXX";
  EXPECT_NE(mkdtemp(&path[0]), nullptr) << path;
  return path;
}

// The names in `dir` that contain ".tmp-" (WriteScenarioFile's temporary
// files).
std::vector<std::string> TempFiles(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return {"cannot list " + dir};
  while (const dirent* entry = readdir(d)) {
    if (Contains(entry->d_name, ".tmp-")) names.push_back(entry->d_name);
  }
  closedir(d);
  return names;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The output is written only over a regular file: an existing FIFO, symlink
// or device node is refused and left as it was (issue 33: the temporary
// file used to be renamed over whatever the path named).
TEST(WriteScenarioFile, RefusesAFifoAndLeavesIt) {
  const std::string dir = FreshDir("fifo");
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(WriteInput("fifo.npy", NpyOf({2, 3, 3}, kExample)), {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string fifo = dir + "/out.pb";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(WriteScenarioFile(*scenario, fifo).message(),
            "--output=" + fifo +
                " exists and is a FIFO: refusing to replace it (give the path "
                "of a regular file, or of one that does not exist yet)");
  struct stat info;
  ASSERT_EQ(lstat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(TempFiles(dir), std::vector<std::string>{});
}

TEST(WriteScenarioFile, RefusesASymlinkAndLeavesItsTarget) {
  const std::string dir = FreshDir("symlink");
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(WriteInput("link.npy", NpyOf({2, 3, 3}, kExample)), {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string target = dir + "/target.pb";
  const std::string link = dir + "/link.pb";
  std::ofstream(target, std::ios::binary) << "keep";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(WriteScenarioFile(*scenario, link).message(),
            "--output=" + link +
                " exists and is a symbolic link: refusing to replace it (give "
                "the path of a regular file, or of one that does not exist "
                "yet)");
  struct stat info;
  ASSERT_EQ(lstat(link.c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode)) << "the symlink was replaced";
  EXPECT_EQ(ReadAll(target), "keep");
  EXPECT_EQ(TempFiles(dir), std::vector<std::string>{});
}

// (As root the old code replaced the machine's /dev/null with the
// scenario.)
TEST(WriteScenarioFile, RefusesADeviceAndLeavesIt) {
  absl::StatusOr<v1::Scenario> scenario =
      ImportAttention(WriteInput("null.npy", NpyOf({2, 3, 3}, kExample)), {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(WriteScenarioFile(*scenario, "/dev/null").message(),
            "--output=/dev/null exists and is a character device: refusing "
            "to replace it (give the path of a regular file, or of one that "
            "does not exist yet)");
  struct stat info;
  ASSERT_EQ(lstat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode)) << "/dev/null is no longer a device";
  EXPECT_EQ(TempFiles("/dev"), std::vector<std::string>{});
}

// The output is the input under another name ("dir/./x.npy"): refused, and
// the input is left whole (it used to be replaced by the scenario).
TEST(WriteScenarioFile, RefusesTheInputUnderAnotherName) {
  const std::string dir = FreshDir("input");
  const std::string bytes = NpyOf({2, 3, 3}, kExample);
  const std::string input = dir + "/capture.npy";
  std::ofstream(input, std::ios::binary) << bytes;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(input, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string alias = dir + "/./capture.npy";
  EXPECT_EQ(WriteScenarioFile(*scenario, alias, {input}).message(),
            "--output=" + alias + " is the input " + input +
                ": writing it would destroy the input");
  EXPECT_EQ(ReadAll(input), bytes) << "the input was overwritten";
  EXPECT_EQ(TempFiles(dir), std::vector<std::string>{});
  // A hard link to it is the same file too.
  const std::string hard = dir + "/hard.pb";
  ASSERT_EQ(link(input.c_str(), hard.c_str()), 0);
  EXPECT_EQ(WriteScenarioFile(*scenario, hard, {input}).message(),
            "--output=" + hard + " is the input " + input +
                ": writing it would destroy the input");
  EXPECT_EQ(ReadAll(input), bytes);
  // Another file is written as usual.
  EXPECT_TRUE(WriteScenarioFile(*scenario, dir + "/out.pb", {input}).ok());
  EXPECT_EQ(ReadAll(dir + "/out.pb"), scenario->SerializeAsString());
}

TEST(Window, WrittenAndReadBack) {
  const std::string path = WindowFile("written.safetensors");
  ImportOptions options;
  options.decode = 1;
  absl::StatusOr<v1::Scenario> scenario = ImportAttention(path, options);
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const std::string out = ::testing::TempDir() + "/written.pb";
  ASSERT_TRUE(WriteScenarioFile(*scenario, out).ok());
  std::ifstream in(out, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(), scenario->SerializeAsString());
}

}  // namespace
}  // namespace import_test
}  // namespace kvspec
