// regen_vectors: regenerates vectors/ from the reference and refreshes the
// generated tables of spec/vectors.md (flags) and spec/features.md
// (features).
//
//   bazel run -c opt //tools:regen_vectors
//   bazel run -c opt //tools:regen_vectors -- --root=/tmp/copy   # a copy's files
//
// Every output is produced and checked before anything a reader sees
// changes: the files of vectors/ are written to a fresh folder beside it,
// vectors.new-<pid>/, and the spec files' new text is made in memory (each
// must hold its generated block). Then the spec files that change are
// written, each whole or not at all (tools/files/files.h: a temporary file
// beside it, synced, renamed over it), and last the fresh folder takes
// vectors/' place in one atomic exchange (renameat2 RENAME_EXCHANGE). A
// failure at any point, a full disk included, leaves the old vectors/ and
// the old spec files: a spec file already rewritten is written back.
//
// A run that is killed can leave vectors.new-<pid>/ and a spec file's
// temporary *.tmp-XXXXXX behind (both ignored by git). Each run first
// removes every vectors.new-<pid>/ whose process is no longer running, and
// says so on stderr.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "tools/files/files.h"
#include "tools/vectors/cases.h"
#include "tools/vectors/generate.h"
#include "tools/vectors/markdown_block.h"

ABSL_FLAG(std::string, root, "",
          "Checkout whose vectors/, spec/vectors.md and spec/features.md are "
          "rewritten. Default: $BUILD_WORKSPACE_DIRECTORY under `bazel run`, "
          "else the current directory.");

namespace kvspec {
namespace {

namespace fs = std::filesystem;

constexpr char kFreshPrefix[] = "vectors.new-";

// Removes the vectors.new-<pid>/ folders under `root` that runs killed
// before they finished left behind: those whose process is no longer
// running. A folder whose process runs (another regen_vectors) is left.
void RemoveStaleFolders(const fs::path& root) {
  std::error_code error;
  std::vector<std::pair<fs::path, int>> stale;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    if (name.rfind(kFreshPrefix, 0) != 0 ||
        !absl::SimpleAtoi(name.substr(sizeof(kFreshPrefix) - 1), &pid) ||
        pid <= 0 || !entry.is_directory(error) || entry.is_symlink(error)) {
      continue;
    }
    if (kill(pid, 0) == 0 || errno != ESRCH) {
      std::fprintf(stderr,
                   "regen_vectors: leaving %s: process %d is running\n",
                   entry.path().c_str(), pid);
      continue;
    }
    stale.emplace_back(entry.path(), pid);
  }
  for (const auto& [path, pid] : stale) {
    fs::remove_all(path, error);
    if (error) {
      std::fprintf(stderr, "regen_vectors: cannot remove %s: %s\n",
                   path.c_str(), error.message().c_str());
    } else {
      std::fprintf(stderr,
                   "regen_vectors: removed %s, left by process %d, which is "
                   "no longer running\n",
                   path.c_str(), pid);
    }
  }
}

// A spec file with a generated table: its text now and with the table
// regenerated.
struct SpecFile {
  fs::path path;
  std::string block;
  std::string old_text;
  std::string new_text;
};

// Writes back the spec files in `written` (all of them had `new_text`
// written over `old_text`). Says so for any it cannot.
void RestoreSpecFiles(const std::vector<const SpecFile*>& written) {
  for (const SpecFile* spec : written) {
    const absl::Status restored =
        files::WriteAtomically("output", spec->path.string(), spec->old_text);
    if (!restored.ok()) {
      std::fprintf(stderr,
                   "regen_vectors: cannot write back the old %s (%s): it "
                   "holds the new %s table while vectors/ is the old one; "
                   "run regen_vectors again\n",
                   spec->path.c_str(), std::string(restored.message()).c_str(),
                   spec->block.c_str());
    }
  }
}

int Main() {
  std::string root = absl::GetFlag(FLAGS_root);
  if (root.empty()) {
    const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    root = workspace != nullptr ? workspace : ".";
  }
  RemoveStaleFolders(root);
  const absl::StatusOr<std::vector<vectors::GeneratedFile>> files =
      vectors::GenerateVectorFiles(vectors::BuildSuite());
  if (!files.ok()) {
    std::fprintf(stderr, "%s\n", std::string(files.status().message()).c_str());
    return 2;
  }
  size_t suite_bytes = 0;
  for (const vectors::GeneratedFile& file : *files) suite_bytes += file.bytes.size();
  if (suite_bytes > vectors::kMaxSuiteBytes) {
    std::fprintf(stderr,
                 "the suite would take %zu bytes, over the %zu bytes "
                 "spec/vectors.md#files allows; vectors/ is unchanged\n",
                 suite_bytes, vectors::kMaxSuiteBytes);
    return 2;
  }

  // The generated tables of the spec, made and checked before anything is
  // written: flags (vectors.md), features (features.md).
  std::vector<SpecFile> specs = {
      {fs::path(root) / "spec" / "vectors.md", "flags", "", ""},
      {fs::path(root) / "spec" / "features.md", "features", "", ""}};
  for (SpecFile& spec : specs) {
    absl::StatusOr<std::string> text =
        files::ReadInputFile("input", spec.path.string());
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", std::string(text.status().message()).c_str());
      return 2;
    }
    spec.old_text = *std::move(text);
    absl::StatusOr<std::string> updated = vectors::ReplaceBlock(
        spec.old_text, spec.block,
        spec.block == "flags" ? vectors::FlagTableMarkdown()
                              : vectors::FeatureTableMarkdown(),
        spec.path.string());
    if (!updated.ok()) {
      std::fprintf(stderr, "%s\n", std::string(updated.status().message()).c_str());
      return 2;
    }
    spec.new_text = *std::move(updated);
    if (spec.new_text == spec.old_text) continue;
    if (absl::Status ok = files::CheckOutput("output", spec.path.string());
        !ok.ok()) {
      std::fprintf(stderr, "%s\n", std::string(ok.message()).c_str());
      return 2;
    }
  }

  // The new vectors/, in a fresh folder beside it.
  const fs::path target = fs::path(root) / "vectors";
  const fs::path fresh =
      fs::path(root) / (kFreshPrefix + std::to_string(getpid()));
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
    const absl::Status written = files::WriteAtomically(
        "output", (fresh / file.path).string(), file.bytes);
    if (!written.ok()) {
      std::fprintf(stderr, "%s; vectors/ and the spec files are unchanged\n",
                   std::string(written.message()).c_str());
      fs::remove_all(fresh, error);
      return 2;
    }
    total += file.bytes.size();
  }

  // The spec files that change, each whole or not at all.
  std::vector<const SpecFile*> rewritten;
  for (const SpecFile& spec : specs) {
    if (spec.new_text == spec.old_text) continue;
    const absl::Status written =
        files::WriteAtomically("output", spec.path.string(), spec.new_text);
    if (!written.ok()) {
      std::fprintf(stderr, "%s; vectors/ and the spec files are unchanged\n",
                   std::string(written.message()).c_str());
      fs::remove_all(fresh, error);  // first: it frees the space
      RestoreSpecFiles(rewritten);
      return 2;
    }
    rewritten.push_back(&spec);
  }

  // Last, the atomic swap: after it, `fresh` holds the old vectors.
  const bool swapped =
      fs::exists(target)
          ? renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(),
                      RENAME_EXCHANGE) == 0
          : rename(fresh.c_str(), target.c_str()) == 0;
  if (!swapped) {
    std::fprintf(stderr,
                 "cannot move %s to %s: %s; vectors/ and the spec files are "
                 "unchanged\n",
                 fresh.c_str(), target.c_str(), std::strerror(errno));
    fs::remove_all(fresh, error);
    RestoreSpecFiles(rewritten);
    return 2;
  }
  fs::remove_all(fresh, error);
  std::printf("wrote %zu files, %zu bytes, to %s\n", files->size(), total,
              target.c_str());
  for (const SpecFile* spec : rewritten) {
    std::printf("rewrote the %s table in %s\n", spec->block.c_str(),
                spec->path.c_str());
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
