#include "tools/files/files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"

namespace kvspec {
namespace files {
namespace {

std::string Kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

absl::Status CheckOutput(const std::string& flag, const std::string& path,
                         const std::vector<std::string>& inputs) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is empty", flag));
  }
  struct stat out;
  if (lstat(path.c_str(), &out) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%s: cannot inspect it: %s", flag, path, std::strerror(errno)));
  }
  if (!S_ISREG(out.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%s exists and is %s: refusing to replace it (give the path of a "
        "regular file, or of one that does not exist yet)",
        flag, path, Kind(out.st_mode)));
  }
  for (const std::string& input : inputs) {
    struct stat in;
    if (stat(input.c_str(), &in) != 0) continue;
    if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s=%s is the input %s: writing it would destroy the input", flag,
          path, input));
    }
  }
  return absl::OkStatus();
}

std::string WriteAll(int fd, absl::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::strerror(errno);
    }
    if (n == 0) return "write returned 0";
    done += static_cast<size_t>(n);
  }
  return "";
}

absl::Status WriteAtomically(const std::string& flag, const std::string& path,
                             const std::function<std::string(int fd)>& write,
                             const std::vector<std::string>& inputs) {
  if (absl::Status ok = CheckOutput(flag, path, inputs); !ok.ok()) return ok;
  std::string temp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(&temp[0]);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrFormat("%s=%s: cannot create a temporary file beside it: %s",
                        flag, path, std::strerror(errno)));
  }
  // mkstemp creates the file 0600; give it the usual permissions.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  std::string failure = write(fd);
  if (failure.empty() && fsync(fd) != 0) failure = std::strerror(errno);
  if (close(fd) != 0 && failure.empty()) failure = std::strerror(errno);
  // Checked again just before the rename: a path that became a FIFO or a
  // symlink meanwhile is still not replaced.
  if (failure.empty()) {
    if (absl::Status ok = CheckOutput(flag, path, inputs); !ok.ok()) {
      unlink(temp.c_str());
      return ok;
    }
  }
  if (failure.empty() && std::rename(temp.c_str(), path.c_str()) != 0) {
    failure = std::strerror(errno);
  }
  if (!failure.empty()) {
    unlink(temp.c_str());
    return absl::UnavailableError(
        absl::StrFormat("%s=%s: cannot write: %s", flag, path, failure));
  }
  return absl::OkStatus();
}

absl::Status WriteAtomically(const std::string& flag, const std::string& path,
                             absl::string_view content,
                             const std::vector<std::string>& inputs) {
  return WriteAtomically(
      flag, path, [content](int fd) { return WriteAll(fd, content); }, inputs);
}

namespace {

absl::Status CheckStat(const std::string& flag, const std::string& path,
                       const struct stat& st, uint64_t max_bytes) {
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%s is %s, not a regular file", flag, path, Kind(st.st_mode)));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%s is %d bytes, over the limit of %d bytes", flag, path,
        static_cast<uint64_t>(st.st_size), max_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckInputFile(const std::string& flag, const std::string& path,
                            uint64_t max_bytes) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrFormat("%s=%s: cannot read it: %s",
                                               flag, path, std::strerror(errno)));
  }
  return CheckStat(flag, path, st, max_bytes);
}

absl::StatusOr<std::string> ReadInputFile(const std::string& flag,
                                          const std::string& path,
                                          uint64_t max_bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrFormat("%s=%s: cannot read it: %s",
                                               flag, path, std::strerror(errno)));
  }
  struct stat st;
  absl::Status ok = fstat(fd, &st) == 0
                        ? CheckStat(flag, path, st, max_bytes)
                        : absl::InternalError(absl::StrFormat(
                              "%s=%s: fstat: %s", flag, path, std::strerror(errno)));
  std::string content;
  if (ok.ok()) {
    // A regular file: O_NONBLOCK has no effect on its reads.
    content.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = read(fd, &content[done], content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ok = absl::UnavailableError(absl::StrFormat(
            "%s=%s: read failed: %s", flag, path, std::strerror(errno)));
        break;
      }
      if (n == 0) break;  // the file shrank meanwhile: what is there
      done += static_cast<size_t>(n);
    }
    content.resize(done);
  }
  close(fd);
  if (!ok.ok()) return ok;
  return content;
}

namespace {

// The first number in `path` (a /proc or /sys file), or nullopt: absent,
// unreadable, or not a number ("max" in cgroup v2 means no limit).
std::optional<uint64_t> NumberIn(const char* path) {
  FILE* file = std::fopen(path, "r");
  if (file == nullptr) return std::nullopt;
  unsigned long long value = 0;
  const int read = std::fscanf(file, "%llu", &value);
  std::fclose(file);
  if (read != 1) return std::nullopt;
  return static_cast<uint64_t>(value);
}

std::optional<uint64_t> MemAvailableBytes() {
  FILE* file = std::fopen("/proc/meminfo", "r");
  if (file == nullptr) return std::nullopt;
  char line[256];
  std::optional<uint64_t> bytes;
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      bytes = static_cast<uint64_t>(kib) * 1024;
      break;
    }
  }
  std::fclose(file);
  return bytes;
}

}  // namespace

std::optional<Memory> MemoryAvailable() {
  std::optional<Memory> best;
  auto offer = [&best](std::optional<uint64_t> bytes, const char* source) {
    if (!bytes.has_value()) return;
    if (!best.has_value() || *bytes < best->bytes) best = Memory{*bytes, source};
  };
  offer(MemAvailableBytes(), "MemAvailable, /proc/meminfo");
  const struct {
    const char *limit, *usage, *source;
  } cgroups[] = {
      {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current",
       "the memory cgroup's limit, /sys/fs/cgroup/memory.max"},
      {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
       "/sys/fs/cgroup/memory/memory.usage_in_bytes",
       "the memory cgroup's limit, /sys/fs/cgroup/memory/memory.limit_in_bytes"}};
  for (const auto& cgroup : cgroups) {
    const std::optional<uint64_t> limit = NumberIn(cgroup.limit);
    const std::optional<uint64_t> usage = NumberIn(cgroup.usage);
    if (!limit.has_value() || !usage.has_value()) continue;
    offer(*limit > *usage ? *limit - *usage : 0, cgroup.source);
  }
  return best;
}

std::string BytesText(uint64_t bytes) {
  return absl::StrFormat("%d bytes (%.2f GiB)", bytes,
                         static_cast<double>(bytes) / (1 << 30));
}

}  // namespace files
}  // namespace kvspec
