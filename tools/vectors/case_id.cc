// Spec: spec/vectors.md#cases
#include "tools/vectors/case_id.h"

#include <vector>

#include "absl/strings/str_split.h"

namespace kvspec {
namespace vectors {

bool WellFormedId(const std::string& id) {
  const std::vector<std::string> segments = absl::StrSplit(id, '/');
  if (segments.size() < 3) return false;
  for (const std::string& segment : segments) {
    if (segment.empty()) return false;
    for (char c : segment) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-';
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace vectors
}  // namespace kvspec
