// Generated blocks in markdown files: the text between
//   <!-- BEGIN GENERATED: NAME -->
//   <!-- END GENERATED: NAME -->
// belongs to a tool, which rewrites it; tests compare it with what the tool
// would write now.
#ifndef KVSPEC_TOOLS_VECTORS_MARKDOWN_BLOCK_H_
#define KVSPEC_TOOLS_VECTORS_MARKDOWN_BLOCK_H_

#include <string>

#include "absl/status/statusor.h"

namespace kvspec {
namespace vectors {

// `text` with block `name`'s content replaced by `content`. Refuses
// (FailedPrecondition, naming `path`) text without exactly one such block.
absl::StatusOr<std::string> ReplaceBlock(const std::string& text,
                                         const std::string& name,
                                         const std::string& content,
                                         const std::string& path);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_MARKDOWN_BLOCK_H_
