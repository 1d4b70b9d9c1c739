// Spec: spec/vectors.md#cases
#ifndef KVSPEC_TOOLS_VECTORS_CASE_ID_H_
#define KVSPEC_TOOLS_VECTORS_CASE_ID_H_

#include <string>

namespace kvspec {
namespace vectors {

// True when `id` is at least three '/'-separated segments of [a-z0-9.-],
// none empty (spec/vectors.md#cases).
bool WellFormedId(const std::string& id);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_CASE_ID_H_
