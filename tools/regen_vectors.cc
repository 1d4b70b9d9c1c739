// regen_vectors: regenerates vectors/ from the reference and refreshes the
// flag table in spec/vectors.md.
//
//   bazel run //tools:regen_vectors
//
// The files are written to a fresh folder beside vectors/, which then takes
// vectors/' place in one atomic exchange (renameat2 RENAME_EXCHANGE): a run
// that is interrupted at any point leaves the old vectors/ whole.
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "tools/vectors/cases.h"
#include "tools/vectors/generate.h"
#include "tools/vectors/markdown_block.h"

ABSL_FLAG(std::string, root, "",
          "Checkout whose vectors/ and spec/vectors.md are rewritten. Default: "
          "$BUILD_WORKSPACE_DIRECTORY under `bazel run`, else the current "
          "directory.");

namespace kvspec {
namespace {

namespace fs = std::filesystem;

bool WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.flush();
  return static_cast<bool>(out);
}

int Main() {
  std::string root = absl::GetFlag(FLAGS_root);
  if (root.empty()) {
    const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    root = workspace != nullptr ? workspace : ".";
  }
  const absl::StatusOr<std::vector<vectors::GeneratedFile>> files =
      vectors::GenerateVectorFiles(vectors::BuildSuite());
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", std::string(files.status().message()).c_str());
    return 2;
  }

  const fs::path target = fs::path(root) / "vectors";
  const fs::path fresh =
      fs::path(root) / ("vectors.new-" + std::to_string(getpid()));
  std::error_code error;
  fs::remove_all(fresh, error);
  fs::create_directories(fresh, error);
  if (error) {
    std::fprintf(stderr, "cannot create %s: %s\n", fresh.c_str(),
                 error.message().c_str());
    return 2;
  }
  size_t total = 0;
  for (const vectors::GeneratedFile& file : *files) {
    if (!WriteFile(fresh / file.path, file.bytes)) {
      std::fprintf(stderr, "cannot write %s\n", (fresh / file.path).c_str());
      fs::remove_all(fresh, error);
      return 2;
    }
    total += file.bytes.size();
  }
  if (fs::exists(target)) {
    // Atomic swap: after it, `fresh` holds the old vectors.
    if (renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(),
                  RENAME_EXCHANGE) != 0) {
      std::perror("renameat2(RENAME_EXCHANGE)");
      fs::remove_all(fresh, error);
      return 2;
    }
    fs::remove_all(fresh, error);
  } else if (rename(fresh.c_str(), target.c_str()) != 0) {
    std::perror("rename");
    return 2;
  }
  std::printf("wrote %zu files, %zu bytes, to %s\n", files->size(), total,
              target.c_str());

  // The generated tables of the spec: flags (vectors.md), features
  // (features.md).
  for (const auto& [file, block, table] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"vectors.md", "flags", vectors::FlagTableMarkdown()},
           {"features.md", "features", vectors::FeatureTableMarkdown()}}) {
    const fs::path spec = fs::path(root) / "spec" / file;
    std::ifstream in(spec, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::string> updated =
        vectors::ReplaceBlock(text.str(), block, table, spec.string());
    if (!updated.ok()) {
      std::fprintf(stderr, "%s\n", std::string(updated.status().message()).c_str());
      return 2;
    }
    if (*updated != text.str()) {
      if (!WriteFile(spec, *updated)) {
        std::fprintf(stderr, "cannot write %s\n", spec.c_str());
        return 2;
      }
      std::printf("rewrote the %s table in %s\n", block.c_str(), spec.c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvspec

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Regenerates vectors/ from the reference (atomically), the flag "
      "table of spec/vectors.md and the feature table of spec/features.md.");
  absl::ParseCommandLine(argc, argv);
  return kvspec::Main();
}
