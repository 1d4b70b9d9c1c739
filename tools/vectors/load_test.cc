// The loader accepts the committed vectors and refuses each kind of bad set
// with a message naming the file and the problem.
#include "tools/vectors/load.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/stat.h>

#include <functional>

#include "cc/sha256.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace vectors {
namespace {

namespace fs = std::filesystem;

// A writable copy of the committed vectors/.
fs::path CopyVectors(const std::string& name) {
  const fs::path copy = fs::path(std::getenv("TEST_TMPDIR")) / name;
  fs::remove_all(copy);
  fs::create_directories(copy);
  for (const auto& entry : fs::directory_iterator("vectors")) {
    fs::copy_file(entry.path(), copy / entry.path().filename());
  }
  return copy;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void Write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST(LoadVectorSet, AcceptsTheCommittedVectors) {
  const auto set = LoadVectorSet("vectors");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->cases.size(), set->manifest.cases());
  EXPECT_NE(FindCase(*set, "h2o/ties/equal-sums-evict-lower"), nullptr);
  EXPECT_EQ(FindCase(*set, "no/such/case"), nullptr);
}

TEST(LoadVectorSet, RefusesATruncatedFile) {
  const fs::path dir = CopyVectors("truncated");
  const std::string bytes = Read(dir / "tova.pb");
  Write(dir / "tova.pb", bytes.substr(0, bytes.size() / 2));
  const auto set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(set.status().message().find("tova.pb"), absl::string_view::npos);
  EXPECT_NE(set.status().message().find("truncated"), absl::string_view::npos)
      << set.status();
}

TEST(LoadVectorSet, RefusesAFileWhoseDigestDiffers) {
  const fs::path dir = CopyVectors("edited");
  std::string bytes = Read(dir / "window.textproto");
  bytes[bytes.size() / 2] ^= 1;
  Write(dir / "window.textproto", bytes);
  const auto set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("window.textproto: SHA-256"),
            absl::string_view::npos)
      << set.status();
}

TEST(LoadVectorSet, RefusesAMissingFileOrManifest) {
  fs::path dir = CopyVectors("missing-file");
  fs::remove(dir / "random.pb");
  auto set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(set.status().message().find("random.pb"), absl::string_view::npos);

  dir = CopyVectors("missing-manifest");
  fs::remove(dir / "MANIFEST.json");
  set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("MANIFEST.json"), absl::string_view::npos);
}

TEST(LoadVectorSet, RefusesAMalformedManifestOrUnknownSchema) {
  fs::path dir = CopyVectors("bad-json");
  Write(dir / "MANIFEST.json", "{ not json");
  auto set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("not a kvspec.v1.Manifest"),
            absl::string_view::npos);

  dir = CopyVectors("future-schema");
  std::string manifest = Read(dir / "MANIFEST.json");
  const std::string from = "kvspec.manifest.v1";
  manifest.replace(manifest.find(from), from.size(), "kvspec.manifest.v9");
  Write(dir / "MANIFEST.json", manifest);
  set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(set.status().message().find("unknown schema 'kvspec.manifest.v9'"),
            absl::string_view::npos)
      << set.status();
}

TEST(LoadVectorSet, RefusesGarbageWithAMatchingDigest) {
  // A file replaced by garbage whose digest the manifest also lists: it is
  // caught by the parser, not only by the digest.
  const fs::path dir = CopyVectors("garbage");
  const std::string garbage = "\xff\xff\xff\xff garbage";
  Write(dir / "full.pb", garbage);
  std::string manifest = Read(dir / "MANIFEST.json");
  // Rewrite full.pb's entry (size and digest) to match the garbage.
  const auto set_before = LoadVectorSet("vectors");
  ASSERT_TRUE(set_before.ok());
  for (const auto& entry : set_before->manifest.files()) {
    if (entry.path() != "full.pb") continue;
    manifest.replace(manifest.find(entry.sha256()), entry.sha256().size(),
                     Sha256Hex(garbage));
    const std::string size = "\"" + std::to_string(entry.bytes()) + "\"";
    manifest.replace(manifest.find(size), size.size(),
                     "\"" + std::to_string(garbage.size()) + "\"");
  }
  Write(dir / "MANIFEST.json", manifest);
  const auto set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(set.status().message().find(
                "full.pb: not a binary kvspec.v1.VectorFile"),
            absl::string_view::npos)
      << set.status();
}

// A copy of the vectors whose manifest `edit` changed.
fs::path CopyWithManifest(const std::string& name,
                          const std::function<void(v1::Manifest&)>& edit) {
  const fs::path dir = CopyVectors(name);
  v1::Manifest manifest;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(
                  Read(dir / "MANIFEST.json"), &manifest)
                  .ok());
  edit(manifest);
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(manifest, &json).ok());
  Write(dir / "MANIFEST.json", json);
  return dir;
}

void ExpectRefusal(const fs::path& dir, const std::string& words) {
  const auto set = LoadVectorSet(dir.string());
  ASSERT_FALSE(set.ok()) << dir;
  EXPECT_NE(set.status().message().find(words), absl::string_view::npos)
      << set.status();
}

TEST(LoadVectorSet, RefusesAFifoOrADirectoryWithoutReadingIt) {
  // A FIFO would block a reader forever; a directory is not "truncated".
  fs::path dir = CopyVectors("fifo");
  fs::remove(dir / "tova.pb");
  ASSERT_EQ(mkfifo((dir / "tova.pb").c_str(), 0600), 0);
  ExpectRefusal(dir, "tova.pb is a FIFO, not a regular file");

  dir = CopyVectors("directory");
  fs::remove(dir / "tova.pb");
  fs::create_directory(dir / "tova.pb");
  ExpectRefusal(dir, "tova.pb is a directory, not a regular file");

  dir = CopyVectors("fifo-manifest");
  fs::remove(dir / "MANIFEST.json");
  ASSERT_EQ(mkfifo((dir / "MANIFEST.json").c_str(), 0600), 0);
  ExpectRefusal(dir, "MANIFEST.json is a FIFO");
}

TEST(LoadVectorSet, RefusesAFileLargerThanListedBeforeReadingIt) {
  const fs::path dir = CopyVectors("grown");
  Write(dir / "tova.pb", Read(dir / "tova.pb") + "extra");
  ExpectRefusal(dir, "but the manifest lists");
}

TEST(LoadVectorSet, RefusesAnotherSpecVersion) {
  const fs::path dir = CopyWithManifest(
      "old-version", [](v1::Manifest& m) { m.set_spec_version("0.9.0"); });
  ExpectRefusal(dir, "spec_version '0.9.0', but this build implements spec");
}

TEST(LoadVectorSet, RefusesAManifestListingNoFiles) {
  const fs::path dir = CopyWithManifest("no-files", [](v1::Manifest& m) {
    m.clear_files();
    m.set_cases(0);
  });
  ExpectRefusal(dir, "lists no files");
}

TEST(LoadVectorSet, RefusesPathsOutsideTheFolderAndRepeatedEntries) {
  for (const auto& [path, words] : std::vector<std::pair<std::string, std::string>>{
           {"../vectors/tova.pb", "a path with '..'"},
           {"/etc/passwd", "an absolute path"},
           {"./tova.pb", "a path with '.'"},
           {"", "an empty path"}}) {
    const fs::path dir = CopyWithManifest("outside", [&path = path](v1::Manifest& m) {
      m.mutable_files(0)->set_path(path);
    });
    ExpectRefusal(dir, words);
  }
  const fs::path dir = CopyWithManifest("twice", [](v1::Manifest& m) {
    *m.add_files() = m.files(0);
  });
  ExpectRefusal(dir, "is listed twice");
}

}  // namespace
}  // namespace vectors
}  // namespace kvspec
