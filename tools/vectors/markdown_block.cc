#include "tools/vectors/markdown_block.h"

#include "absl/strings/str_format.h"

namespace kvspec {
namespace vectors {

absl::StatusOr<std::string> ReplaceBlock(const std::string& text,
                                         const std::string& name,
                                         const std::string& content,
                                         const std::string& path) {
  const std::string begin = "<!-- BEGIN GENERATED: " + name + " -->";
  const std::string end = "<!-- END GENERATED: " + name + " -->";
  const size_t b = text.find(begin);
  const size_t e = text.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b ||
      text.find(begin, b + 1) != std::string::npos) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: needs exactly one block between '%s' and '%s'", path, begin, end));
  }
  const size_t content_start = b + begin.size();
  return text.substr(0, content_start) + "\n" + content + text.substr(e);
}

}  // namespace vectors
}  // namespace kvspec
