// import_attention: see import_attention_lib.h for what it reads and writes.
//
// The file is mapped into memory (mmap, read-only), never copied. A reader
// for each format (.npy, .safetensors) checks the file's structure and
// returns a Layout: where, in the file's bytes, each head's row for each
// query position starts. A Plan then says what the scenario will hold (its
// heads, its prefill step, its decode steps); from the Plan alone the
// scenario's exact serialized size and the import's memory are computed and
// checked against their limits before anything is allocated. One pass then
// checks every weight the scenario will carry (and the causal zeros), and a
// second pass copies the carried weights straight from the mapping into the
// scenario's rows. Floats are decoded from their four little-endian bytes,
// so every bit pattern travels unchanged whatever the host.
//
// This file maps the file and runs those stages; import_internal.h lists
// the files that hold them.
#include "tools/attention/import_attention_lib.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "spec/kvspec.pb.h"
#include "tools/attention/import_internal.h"

namespace kvspec {
namespace import_attention {
namespace {

// ---------------------------------------------------------------------------
// The input file, mapped read-only.

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(data_, size_);
  }

  // The file at `path`, or why it cannot be mapped.
  static absl::StatusOr<MappedFile> Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(
          absl::StrFormat("cannot open: %s", std::strerror(errno)));
    }
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      close(fd);
      return Invalid("not a regular file");
    }
    MappedFile file;
    if (info.st_size > 0) {
      void* data = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ,
                        MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        const std::string why = std::strerror(errno);
        close(fd);
        return absl::ResourceExhaustedError(absl::StrFormat(
            "cannot map the file (%d bytes): %s", info.st_size, why));
      }
      file.data_ = data;
      file.size_ = static_cast<size_t>(info.st_size);
    }
    close(fd);
    return file;
  }

  absl::string_view bytes() const {
    return data_ == nullptr
               ? absl::string_view()
               : absl::string_view(static_cast<const char*>(data_), size_);
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// `text` with every byte outside printable ASCII written as \xNN: messages
// echo names and strings from the file, which may hold any bytes.
std::string Printable(absl::string_view text) {
  std::string out;
  for (const char c : text) {
    const unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F) {
      out += absl::StrFormat("\\x%02x", byte);
    } else {
      out += c;
    }
  }
  return out;
}

// The last component of `path`.
std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The mapped file, its layout and the plan: everything but the weights.
struct Prepared {
  MappedFile file;
  Layout layout;
  Plan plan;
  ImportSize size;
};

absl::StatusOr<Prepared> Prepare(const std::string& path,
                                 const ImportOptions& options) {
  const bool npy = absl::EndsWithIgnoreCase(path, ".npy");
  const bool safetensors = absl::EndsWithIgnoreCase(path, ".safetensors");
  if (!npy && !safetensors) {
    return Invalid("unknown extension: expected .npy or .safetensors");
  }
  if (npy && options.layer.has_value()) {
    return Invalid(
        "--layer applies to .safetensors files; a .npy file holds one layer");
  }
  if (npy && options.layout.has_value()) {
    return Invalid(absl::StrFormat(
        "--layout=%s applies to .safetensors files; a .npy file holds a "
        "[heads, L, L] matrix",
        LayoutName(*options.layout)));
  }
  if (npy && WindowFlagsGiven(options)) {
    return Invalid(absl::StrFormat(
        "%s to window.<n> and chunk.<n>.<e> tensors of a .safetensors file; "
        "a .npy file holds a [heads, L, L] matrix",
        WindowFlagsText(options)));
  }
  if (npy && (options.keys || options.values)) {
    const char* flag = options.keys ? "keys" : "values";
    return Invalid(absl::StrFormat(
        "--%s reads %s.<n> beside a layer's tensors of a .safetensors "
        "file; a .npy file holds a [heads, L, L] matrix",
        flag, flag));
  }
  Prepared prepared;
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  prepared.file = std::move(*file);
  const absl::string_view bytes = prepared.file.bytes();
  absl::StatusOr<Layout> layout =
      npy ? ReadNpy(bytes) : ReadSafetensors(bytes, options);
  if (!layout.ok()) return layout.status();
  prepared.layout = std::move(*layout);
  absl::StatusOr<Plan> plan =
      MakePlan(prepared.layout, options, BaseName(path));
  if (!plan.ok()) return plan.status();
  prepared.plan = std::move(*plan);
  prepared.size = MeasurePlan(prepared.layout, prepared.plan);
  return prepared;
}

absl::StatusOr<v1::Scenario> ImportWithoutName(const std::string& path,
                                               const ImportOptions& options) {
  absl::StatusOr<Prepared> prepared = Prepare(path, options);
  if (!prepared.ok()) return prepared.status();
  const Layout& layout = prepared->layout;
  const Plan& plan = prepared->plan;
  KVSPEC_RETURN_IF_ERROR(CheckLimits(layout, plan, prepared->size, options));
  const absl::string_view bytes = prepared->file.bytes();
  std::vector<bool> selected(layout.heads, false);
  for (uint32_t h : plan.heads) selected[h] = true;
  if (layout.kind == Kind::kWindow || layout.kind == Kind::kChunks) {
    KVSPEC_RETURN_IF_ERROR(CheckChunkWeights(bytes, layout, plan, selected));
    KVSPEC_RETURN_IF_ERROR(CheckTotals(bytes, layout, plan));
  } else {
    KVSPEC_RETURN_IF_ERROR(CheckWeights(bytes, layout, selected));
  }
  KVSPEC_RETURN_IF_ERROR(CheckKeysAndValues(bytes, layout, plan));
  return BuildScenario(bytes, layout, plan);
}

// `status` with the path in front of its message: every refusal names the
// file.
absl::Status Named(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(path, ": ", Printable(status.message())));
}

absl::Status OutOfMemory(const std::string& path, absl::string_view doing) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s: out of memory while %s (std::bad_alloc): import fewer heads "
      "(--heads), fewer rows, or free memory",
      path, doing));
}

}  // namespace
}  // namespace import_attention

using import_attention::ImportWithoutName;
using import_attention::Invalid;
using import_attention::Named;
using import_attention::OutOfMemory;
using import_attention::Prepare;
using import_attention::Prepared;

absl::StatusOr<v1::Scenario> ImportAttention(const std::string& path,
                                             const ImportOptions& options) {
  try {
    absl::StatusOr<v1::Scenario> scenario = ImportWithoutName(path, options);
    if (!scenario.ok()) return Named(path, scenario.status());
    return scenario;
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, "importing");
  }
}

absl::StatusOr<ImportSize> MeasureImport(const std::string& path,
                                         const ImportOptions& options) {
  try {
    absl::StatusOr<Prepared> prepared = Prepare(path, options);
    if (!prepared.ok()) return Named(path, prepared.status());
    return prepared->size;
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path, "reading the header");
  }
}

absl::StatusOr<std::vector<uint32_t>> ParseHeadList(absl::string_view text) {
  std::vector<uint32_t> heads;
  if (absl::StripAsciiWhitespace(text).empty()) return heads;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t head = 0;
    if (!absl::SimpleAtoi(part, &head)) {
      return Invalid(absl::StrFormat(
          "--heads: '%s' is not a head number (e.g. --heads=0,2,5)", part));
    }
    heads.push_back(head);
  }
  return heads;
}

}  // namespace kvspec
