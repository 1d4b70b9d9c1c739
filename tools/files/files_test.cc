// Each rule of files.h on a real file system (the test's temporary
// directory): the refusals leave what the path named untouched.
#include "tools/files/files.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace kvspec {
namespace files {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string base = dir != nullptr ? dir : "/tmp";
  std::string path = base + "/files_test_XXXXXX";
  EXPECT_NE(mkdtemp(&path[0]), nullptr);
  return path;
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(WriteAtomically, WritesANewFileAndReplacesARegularOne) {
  const std::string dir = TempDir();
  const std::string path = dir + "/out";
  ASSERT_TRUE(WriteAtomically("--output", path, "first").ok());
  EXPECT_EQ(Read(path), "first");
  ASSERT_TRUE(WriteAtomically("--output", path, "second").ok());
  EXPECT_EQ(Read(path), "second");
}

TEST(WriteAtomically, RefusesAFifoWithoutOpeningIt) {
  const std::string dir = TempDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const absl::Status status = WriteAtomically("--json", fifo, "x");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--json="), std::string::npos) << status;
  EXPECT_NE(status.message().find("a FIFO"), std::string::npos) << status;
  struct stat st;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));  // still a FIFO
}

TEST(WriteAtomically, RefusesASymlinkAndLeavesItsTarget) {
  const std::string dir = TempDir();
  Write(dir + "/target", "keep");
  ASSERT_EQ(symlink((dir + "/target").c_str(), (dir + "/link").c_str()), 0);
  const absl::Status status = WriteAtomically("--output", dir + "/link", "x");
  EXPECT_NE(status.message().find("a symbolic link"), std::string::npos) << status;
  struct stat st;
  ASSERT_EQ(lstat((dir + "/link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Read(dir + "/target"), "keep");
}

TEST(WriteAtomically, RefusesADeviceAndADirectory) {
  EXPECT_NE(WriteAtomically("--output", "/dev/null", "x").message().find(
                "a character device"),
            std::string::npos);
  const std::string dir = TempDir();
  EXPECT_NE(WriteAtomically("--output", dir, "x").message().find("a directory"),
            std::string::npos);
}

TEST(WriteAtomically, RefusesTheInputUnderAnyName) {
  const std::string dir = TempDir();
  Write(dir + "/capture", "precious");
  ASSERT_EQ(link((dir + "/capture").c_str(), (dir + "/alias").c_str()), 0);
  for (const std::string& out : {dir + "/capture", dir + "/./capture", dir + "/alias"}) {
    const absl::Status status =
        WriteAtomically("--output", out, "x", {dir + "/capture"});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << out;
    EXPECT_NE(status.message().find("is the input"), std::string::npos) << status;
  }
  EXPECT_EQ(Read(dir + "/capture"), "precious");
}

TEST(WriteAtomically, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const std::string dir = TempDir();
  const std::string path = dir + "/out";
  Write(path, "old");
  const absl::Status status = WriteAtomically(
      "--output", path, [](int) { return std::string("disk full"); });
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("disk full"), std::string::npos);
  EXPECT_EQ(Read(path), "old");
  // Only the old file is left in the folder.
  EXPECT_EQ(system(("test $(ls -A " + dir + " | wc -l) -eq 1").c_str()), 0);
}

TEST(WriteAtomically, AMissingFolderIsNamed) {
  const absl::Status status =
      WriteAtomically("--junit", "/nonexistent-kvspec-dir/out.xml", "x");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--junit=/nonexistent-kvspec-dir/out.xml"),
            std::string::npos)
      << status;
}

TEST(ReadInputFile, ReadsARegularFile) {
  const std::string dir = TempDir();
  Write(dir + "/in", "abc");
  const absl::StatusOr<std::string> text = ReadInputFile("--scenario", dir + "/in");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "abc");
}

TEST(ReadInputFile, RefusesAFifoWithoutBlocking) {
  const std::string dir = TempDir();
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const absl::StatusOr<std::string> text = ReadInputFile("--scenario", fifo);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("--scenario="), std::string::npos);
  EXPECT_NE(text.status().message().find("a FIFO"), std::string::npos);
}

TEST(ReadInputFile, RefusesADeviceAndAnOversizedFile) {
  EXPECT_NE(ReadInputFile("--decode", "/dev/zero").status().message().find(
                "a character device"),
            std::string::npos);
  const std::string dir = TempDir();
  Write(dir + "/big", "0123456789");
  const absl::StatusOr<std::string> text = ReadInputFile("--decode", dir + "/big", 9);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("10 bytes, over the limit of 9"),
            std::string::npos)
      << text.status();
  EXPECT_TRUE(ReadInputFile("--decode", dir + "/big", 10).ok());
}

TEST(CheckInputFile, NamesAMissingFile) {
  const absl::Status status = CheckInputFile("--scenario", "/nonexistent-kvspec");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("--scenario=/nonexistent-kvspec"),
            std::string::npos);
}

}  // namespace
}  // namespace files
}  // namespace kvspec
