// The attention importer's writer: WriteScenarioFile
// (import_attention_lib.h), the scenario serialized straight into a file
// written atomically.
#include "tools/attention/import_attention_lib.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "spec/kvspec.pb.h"
#include "tools/files/files.h"

namespace kvspec {
namespace {

absl::Status OutOfMemoryWriting(const std::string& path) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--output=%s: out of memory while writing the scenario "
      "(std::bad_alloc)",
      path));
}

absl::Status WriteScenarioFileOrThrow(const v1::Scenario& scenario,
                                      const std::string& path,
                                      const std::vector<std::string>& inputs) {
  const size_t bytes = scenario.ByteSizeLong();
  if (bytes > kMaxScenarioBytes) {
    return absl::OutOfRangeError(absl::StrFormat(
        "--output=%s: the scenario is %d bytes, over the %d-byte limit of "
        "one protobuf message",
        path, bytes, kMaxScenarioBytes));
  }
  // files::WriteAtomically refuses a path that is not a regular file or is
  // one of the inputs, then writes a temporary file beside it and renames
  // it over `path`. An exception must not escape the writer (the temporary
  // file would be left behind): out of memory is a failed write.
  bool out_of_memory = false;
  const absl::Status written = files::WriteAtomically(
      "--output", path,
      [&](int fd) -> std::string {
        try {
          // Serialized straight into the stream's buffers and written: no
          // copy of the whole message in memory.
          google::protobuf::io::FileOutputStream stream(fd);
          const bool serialized = scenario.SerializeToZeroCopyStream(&stream);
          const bool flushed = stream.Flush();
          if (serialized && flushed) return "";
          return stream.GetErrno() != 0 ? std::strerror(stream.GetErrno())
                                        : "cannot serialize the scenario";
        } catch (const std::bad_alloc&) {
          out_of_memory = true;
          return "out of memory";
        }
      },
      inputs);
  if (out_of_memory) return OutOfMemoryWriting(path);
  return written;
}

}  // namespace

absl::Status WriteScenarioFile(const v1::Scenario& scenario,
                               const std::string& path,
                               const std::vector<std::string>& inputs) {
  try {
    return WriteScenarioFileOrThrow(scenario, path, inputs);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryWriting(path);
  }
}

}  // namespace kvspec
