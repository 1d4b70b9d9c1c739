// Builds every file of vectors/ in memory from the suite definition
// (cases.h), computing each case's expected log with the reference.
// tools/vectors/regen_vectors writes the result; the drift test compares it with the
// committed files byte for byte.
//
// Spec: spec/vectors.md
#ifndef KVSPEC_TOOLS_VECTORS_GENERATE_H_
#define KVSPEC_TOOLS_VECTORS_GENERATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/vectors/cases.h"

namespace kvspec {
namespace vectors {

inline constexpr char kVectorSchema[] = "kvspec.vectors.v1";
inline constexpr char kManifestSchema[] = "kvspec.manifest.v1";

// The most bytes the committed suite may take, every file of vectors/
// together (spec/vectors.md#files): regen_vectors refuses to write more and
// drift_test fails. Search corpora and vectors_from_scenarios are not held
// to it.
inline constexpr size_t kMaxSuiteBytes = 40000000;

struct GeneratedFile {
  std::string path;  // relative to vectors/
  std::string bytes;
};

// Every file, in a fixed order: per group "<group>.pb" and
// "<group>.textproto", then "MANIFEST.json". Refuses (FailedPrecondition) a
// suite with a duplicate or malformed case ID, an unknown flag, a duplicate
// scenario ID or a case whose scenario does not exist.
absl::StatusOr<std::vector<GeneratedFile>> GenerateVectorFiles(
    const Suite& suite);

// The markdown table of flags for spec/vectors.md's generated block.
std::string FlagTableMarkdown();

// spec/features.md's generated table: each feature, its version, section and
// parameters.
std::string FeatureTableMarkdown();

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_GENERATE_H_
