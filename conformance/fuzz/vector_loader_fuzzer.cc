// libFuzzer target: the vector loader refuses malformed input with a status,
// never a crash. Each input is written as a vector file whose manifest entry
// matches its size and SHA-256 (so the parser and the case index are
// reached), and separately as a manifest. Built and run by tools/fuzz.sh.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/str_format.h"
#include "cc/sha256.h"
#include "cc/version.h"
#include "tools/vectors/load.h"

namespace {

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

const std::string& Directory() {
  static const std::string* dir = [] {
    auto* d = new std::string(absl::StrFormat("/dev/shm/kvspec-fuzz-%d", getpid()));
    mkdir(d->c_str(), 0700);
    return d;
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string& dir = Directory();
  // 1. The input as a vector file listed correctly in a manifest.
  Write(dir + "/x.pb", bytes);
  Write(dir + "/MANIFEST.json",
        absl::StrFormat("{\"schema\": \"kvspec.manifest.v1\", \"spec_version\": \"%s\", "
                        "\"cases\": 0, "
                        "\"files\": [{\"path\": \"x.pb\", \"sha256\": \"%s\", "
                        "\"bytes\": \"%d\", \"cases\": 0}]}",
                        kvspec::kSpecVersion, kvspec::Sha256Hex(bytes), size));
  (void)kvspec::vectors::LoadVectorSet(dir);
  // 2. The input as the manifest itself.
  Write(dir + "/MANIFEST.json", bytes);
  (void)kvspec::vectors::LoadVectorSet(dir);
  return 0;
}
