// Loads and checks vectors/: the manifest first, then every file it lists,
// each against its SHA-256 and schema. Nothing is returned half-loaded: any
// problem refuses the whole set, with a message naming the file and what is
// wrong with it.
//
// Spec: spec/vectors.md#manifest
#ifndef KVSPEC_TOOLS_VECTORS_LOAD_H_
#define KVSPEC_TOOLS_VECTORS_LOAD_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "spec/kvspec.pb.h"

namespace kvspec {
namespace vectors {

struct LoadedCase {
  const v1::Case* vector;        // owned by VectorSet::files
  const v1::Scenario* scenario;  // owned by VectorSet::files
  std::string file;              // e.g. "h2o.pb"
};

struct VectorSet {
  v1::Manifest manifest;
  std::vector<v1::VectorFile> files;
  // Every case, in file order and then case order.
  std::vector<LoadedCase> cases;
};

// Reads `directory` (a vectors/ folder). Refusals: NotFound for a missing
// manifest or file; DataLoss for a SHA-256 or size mismatch or a file that
// does not parse; FailedPrecondition for an unknown schema, a case naming a
// scenario its file lacks, or a duplicate case ID.
absl::StatusOr<VectorSet> LoadVectorSet(const std::string& directory);

// The case with `id`, or nullptr.
const LoadedCase* FindCase(const VectorSet& set, const std::string& id);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_LOAD_H_
