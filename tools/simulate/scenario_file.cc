#include "tools/simulate/scenario_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cc/proto_convert.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"

namespace kvspec {
namespace {

// A row's weights, and the row's own copy freed.
std::vector<float> TakeRow(v1::AttentionRow& row) {
  std::vector<float> weights(row.weights().begin(), row.weights().end());
  google::protobuf::RepeatedField<float>().Swap(row.mutable_weights());
  return weights;
}

// What a file that is not a regular one is, for a refusal.
const char* Kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

// The rows are moved out of each step and the rest of the step (its admit)
// is converted by FromProto itself.
Scenario ConvertReleasing(v1::Scenario& proto) {
  google::protobuf::RepeatedPtrField<v1::Step> steps;
  steps.Swap(proto.mutable_steps());
  Scenario scenario = FromProto(proto);  // id, trace, head counts
  scenario.steps.reserve(steps.size());
  for (v1::Step& step : steps) {
    std::optional<v1::AttentionRow> attention;
    if (step.has_attention()) {
      attention.emplace();
      attention->Swap(step.mutable_attention());
      step.clear_attention();
    }
    google::protobuf::RepeatedPtrField<v1::AttentionRow> heads;
    google::protobuf::RepeatedPtrField<v1::AttentionRow> queries;
    heads.Swap(step.mutable_heads());
    queries.Swap(step.mutable_queries());
    v1::Scenario one;
    one.add_steps()->Swap(&step);  // no arena: moves, never copies
    ScenarioStep converted = std::move(FromProto(one).steps[0]);
    if (attention.has_value()) converted.attention = TakeRow(*attention);
    for (v1::AttentionRow& row : heads) converted.heads.push_back(TakeRow(row));
    for (v1::AttentionRow& row : queries) {
      converted.queries.push_back(TakeRow(row));
    }
    scenario.steps.push_back(std::move(converted));
  }
  return scenario;
}

absl::StatusOr<Scenario> ReadScenarioFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
  // writer, forever; it is refused below. It changes nothing for a regular
  // file's reads.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrFormat(
        "cannot open '%s': %s", path, std::strerror(errno)));
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat info;
  if (fstat(fd, &info) != 0) {
    return absl::NotFoundError(absl::StrFormat(
        "cannot read '%s': %s", path, std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is a directory", path));
  }
  // A FIFO would block the parse until a writer came, /dev/zero would never
  // end: a scenario file is a regular file.
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is %s, not a regular file", path, Kind(info.st_mode)));
  }
  if (info.st_size > INT_MAX) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is %d bytes; protobuf parses at most %d bytes "
        "(2 GiB - 1) in one message, so a scenario file must be smaller "
        "(fewer steps, fewer heads or a shorter prompt)",
        path, static_cast<int64_t>(info.st_size), INT_MAX));
  }
  v1::Scenario proto;
  {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream coded(&file);
    coded.SetTotalBytesLimit(INT_MAX);
    const bool parsed =
        proto.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
    if (file.GetErrno() != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cannot read '%s': %s", path,
                          std::strerror(file.GetErrno())));
    }
    if (!parsed) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "'%s' is not a binary kvspec.v1.Scenario (the "
          "protobuf is malformed or truncated)",
          path));
    }
  }
  return ConvertReleasing(proto);
}

}  // namespace kvspec
