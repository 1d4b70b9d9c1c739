#include "tools/vectors/load.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "cc/sha256.h"
#include "cc/version.h"
#include "google/protobuf/util/json_util.h"
#include "tools/files/files.h"
#include "tools/vectors/generate.h"

namespace kvspec {
namespace vectors {
namespace {

// The manifest is a few KB; anything near this is not one.
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 20;

// files:: names the flag ("vectors=DIR/x.pb is a FIFO, ..."); here the
// path alone reads better ("DIR/x.pb is a FIFO, ...").
absl::Status WithoutFlag(const absl::Status& status) {
  std::string message(status.message());
  const std::string prefix = "vectors=";
  if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
  return absl::Status(status.code(), message);
}

// A regular file of at most `max_bytes` (a FIFO, device or directory is
// refused before it is read).
absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path,
                                     uint64_t max_bytes) {
  absl::StatusOr<std::string> bytes =
      files::ReadInputFile("vectors", path.string(), max_bytes);
  if (!bytes.ok()) return WithoutFlag(bytes.status());
  return bytes;
}

// Why a manifest entry's path is not a plain relative path inside the
// folder ("" when it is): no absolute path, no "..", no empty part.
std::string BadEntryPath(const std::string& path) {
  if (path.empty()) return "an empty path";
  if (path[0] == '/') return "an absolute path";
  for (const auto& part : std::filesystem::path(path)) {
    if (part == "..") return "a path with '..'";
    if (part == ".") return "a path with '.'";
  }
  return "";
}

}  // namespace

absl::StatusOr<VectorSet> LoadVectorSet(const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path root(directory);
  VectorSet set;
  const fs::path manifest_path = root / "MANIFEST.json";
  absl::StatusOr<std::string> manifest_text =
      ReadFile(manifest_path, kMaxManifestBytes);
  if (!manifest_text.ok()) return manifest_text.status();
  google::protobuf::util::JsonParseOptions options;
  if (!google::protobuf::util::JsonStringToMessage(*manifest_text, &set.manifest,
                                                   options)
           .ok()) {
    return absl::DataLossError(absl::StrFormat(
        "%s: not a kvspec.v1.Manifest in JSON", manifest_path.string()));
  }
  if (set.manifest.schema() != kManifestSchema) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: unknown schema '%s' (this reader knows '%s')",
        manifest_path.string(), set.manifest.schema(), kManifestSchema));
  }
  // The suite's spec version decides which features and `since` versions
  // its cases carry: judged by a runner of another version, they would be
  // misread (spec/vectors.md#manifest).
  if (set.manifest.spec_version() != kSpecVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: spec_version '%s', but this build implements spec %s: use the "
        "vectors of the same checkout as the runner",
        manifest_path.string(), set.manifest.spec_version(), kSpecVersion));
  }
  if (set.manifest.files().empty()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: lists no files", manifest_path.string()));
  }
  std::set<std::string> ids, paths;
  for (const v1::ManifestEntry& entry : set.manifest.files()) {
    if (const std::string bad = BadEntryPath(entry.path()); !bad.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: entry '%s' is %s; entries are paths inside the vectors folder",
          manifest_path.string(), entry.path(), bad));
    }
    if (!paths.insert(entry.path()).second) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: entry '%s' is listed twice", manifest_path.string(), entry.path()));
    }
    const fs::path path = root / entry.path();
    // Checked before it is read: a file larger than the manifest says is
    // never read whole.
    if (absl::Status ok = files::CheckInputFile("vectors", path.string());
        !ok.ok()) {
      return WithoutFlag(ok);
    }
    std::error_code error;
    const uintmax_t size = fs::file_size(path, error);
    if (!error && size != entry.bytes()) {
      return absl::DataLossError(absl::StrFormat(
          "%s: %d bytes, but the manifest lists %d (%s)", path.string(), size,
          entry.bytes(), size < entry.bytes() ? "truncated or edited?" : "edited?"));
    }
    absl::StatusOr<std::string> bytes = ReadFile(path, entry.bytes());
    if (!bytes.ok()) return bytes.status();
    if (bytes->size() != entry.bytes()) {
      return absl::DataLossError(absl::StrFormat(
          "%s: %d bytes, but the manifest lists %d (truncated or edited?)",
          path.string(), bytes->size(), entry.bytes()));
    }
    const std::string digest = Sha256Hex(*bytes);
    if (digest != entry.sha256()) {
      return absl::DataLossError(absl::StrFormat(
          "%s: SHA-256 %s does not match the manifest's %s", path.string(),
          digest, entry.sha256()));
    }
    if (path.extension() != ".pb") continue;
    v1::VectorFile file;
    if (!file.ParseFromString(*bytes)) {
      return absl::DataLossError(absl::StrFormat(
          "%s: not a binary kvspec.v1.VectorFile", path.string()));
    }
    if (file.schema() != kVectorSchema) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: unknown schema '%s' (this reader knows '%s')", path.string(),
          file.schema(), kVectorSchema));
    }
    if (file.cases_size() != static_cast<int>(entry.cases())) {
      return absl::DataLossError(absl::StrFormat(
          "%s: %d cases, but the manifest lists %d", path.string(),
          file.cases_size(), entry.cases()));
    }
    set.files.push_back(std::move(file));
  }
  // Index the cases only once every file is in place (pointers stay valid).
  size_t file_index = 0;
  for (const v1::ManifestEntry& entry : set.manifest.files()) {
    if (fs::path(entry.path()).extension() != ".pb") continue;
    const v1::VectorFile& file = set.files[file_index++];
    for (const v1::Case& c : file.cases()) {
      const v1::Scenario* scenario = nullptr;
      for (const v1::Scenario& s : file.scenarios()) {
        if (s.id() == c.scenario_id()) scenario = &s;
      }
      if (scenario == nullptr) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: case '%s' names scenario '%s', which the file lacks",
            entry.path(), c.id(), c.scenario_id()));
      }
      if (!ids.insert(c.id()).second) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "%s: duplicate case id '%s'", entry.path(), c.id()));
      }
      set.cases.push_back({&c, scenario, entry.path()});
    }
  }
  if (set.cases.size() != set.manifest.cases()) {
    return absl::DataLossError(absl::StrFormat(
        "%s: %d cases in the files, but the manifest lists %d",
        manifest_path.string(), set.cases.size(), set.manifest.cases()));
  }
  return set;
}

const LoadedCase* FindCase(const VectorSet& set, const std::string& id) {
  for (const LoadedCase& c : set.cases) {
    if (c.vector->id() == id) return &c;
  }
  return nullptr;
}

}  // namespace vectors
}  // namespace kvspec
