// Reading and writing the files kvspec's tools are pointed at, so that no
// tool destroys data or hangs on a path it was given:
// - an output is written whole or not at all (a temporary file beside it,
//   synced, then renamed over it), and only over a regular file: an existing
//   symlink, FIFO, device node or directory is refused, never replaced, and
//   so is an output that is one of the tool's own inputs;
// - an input that must be a file is a regular file (a FIFO would block the
//   reader forever, /dev/zero would never end) no larger than the caller's
//   limit, checked before anything is read.
// Every refusal names the flag and the path.
#ifndef KVSPEC_TOOLS_FILES_FILES_H_
#define KVSPEC_TOOLS_FILES_FILES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvspec {
namespace files {

// OK when `path` (given as `flag`) may be written: it does not exist, or it
// is a regular file (lstat: a symlink is refused, not followed) that is none
// of `inputs` (compared by device and inode, so another name for the same
// file is caught too).
absl::Status CheckOutput(const std::string& flag, const std::string& path,
                         const std::vector<std::string>& inputs = {});

// Writes `path` through `write`, which writes the whole content to the open
// descriptor and returns an empty string, or says why it could not. First
// CheckOutput; then a temporary file beside `path` (same file system, so
// the rename is atomic), fsync, rename. On any failure the temporary file
// is removed and `path` is untouched. Permissions are the usual 0666 less
// the umask.
absl::Status WriteAtomically(const std::string& flag, const std::string& path,
                             const std::function<std::string(int fd)>& write,
                             const std::vector<std::string>& inputs = {});

// The same, for content already in memory.
absl::Status WriteAtomically(const std::string& flag, const std::string& path,
                             absl::string_view content,
                             const std::vector<std::string>& inputs = {});

// Writes all of `bytes` to `fd` (retrying short writes and EINTR): an empty
// string, or strerror of the failure.
std::string WriteAll(int fd, absl::string_view bytes);

// OK when `path` (given as `flag`) names a regular file (following
// symlinks) of at most `max_bytes` bytes.
absl::Status CheckInputFile(const std::string& flag, const std::string& path,
                            uint64_t max_bytes = UINT64_MAX);

// CheckInputFile, then the whole file. Reads from the one descriptor it
// checked (fstat after open), so a path swapped between check and read is
// caught too; never blocks on a FIFO (opened O_NONBLOCK, then refused).
absl::StatusOr<std::string> ReadInputFile(const std::string& flag,
                                          const std::string& path,
                                          uint64_t max_bytes = UINT64_MAX);

// The memory a tool may still allocate, in bytes, and where the figure
// comes from: the least of MemAvailable (/proc/meminfo) and what the
// process's memory cgroup leaves below its limit (v2 memory.max minus
// memory.current, or v1 memory.limit_in_bytes minus memory.usage_in_bytes,
// as mounted under /sys/fs/cgroup), so that a tool refuses a run before the
// OOM killer ends it. nullopt when none of them can be read.
struct Memory {
  uint64_t bytes = 0;
  std::string source;
};
std::optional<Memory> MemoryAvailable();

// "1148846080 bytes (1.07 GiB)".
std::string BytesText(uint64_t bytes);

}  // namespace files
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_FILES_FILES_H_
