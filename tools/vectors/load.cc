#include "tools/vectors/load.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "cc/sha256.h"
#include "google/protobuf/util/json_util.h"
#include "tools/vectors/generate.h"

namespace kvspec {
namespace vectors {
namespace {

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrFormat("%s: cannot be read", path.string()));
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

absl::StatusOr<VectorSet> LoadVectorSet(const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path root(directory);
  VectorSet set;
  const fs::path manifest_path = root / "MANIFEST.json";
  absl::StatusOr<std::string> manifest_text = ReadFile(manifest_path);
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
  std::set<std::string> ids;
  for (const v1::ManifestEntry& entry : set.manifest.files()) {
    const fs::path path = root / entry.path();
    absl::StatusOr<std::string> bytes = ReadFile(path);
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
