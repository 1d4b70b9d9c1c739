// Reading a scenario file: a binary kvspec.v1.Scenario (spec/kvspec.proto)
// into the reference's Scenario (cc/harness.h). Used by tools/simulate
// (--scenario) and fuzzed by tools/fuzz.sh (tools/fuzz/scenario_fuzzer.cc).
//
// The file is parsed straight from its descriptor (FileInputStream +
// CodedInputStream), never held in memory as bytes: protobuf parses at most
// INT_MAX bytes in one message, so a larger file is refused before parsing.
// The conversion frees each row of the message as soon as it is copied, so
// a scenario of 1.9 GB needs about its own size in memory, not twice it.
//
// Nothing here checks the scenario's content (admits, row lengths, weights,
// head counts): the harness does, step by step, and refuses what breaks
// spec/harness.md#refusals with a status (cc/harness.h, RunScenario).
//
// Example:
//   absl::StatusOr<Scenario> scenario = ReadScenarioFile("prompt.pb");
//   if (!scenario.ok()) ... scenario.status().message() ...
//   RunResult result = RunScenario(config, *scenario);
#ifndef KVSPEC_TOOLS_SIMULATE_SCENARIO_FILE_H_
#define KVSPEC_TOOLS_SIMULATE_SCENARIO_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "cc/harness.h"
#include "spec/kvspec.pb.h"

namespace kvspec {

// Reads the binary kvspec.v1.Scenario at `path` and converts it
// (ConvertReleasing). Refusals name the path:
//   NotFound         "cannot open 'PATH': REASON", "cannot read 'PATH': REASON"
//                    (fstat failed)
//   InvalidArgument  "'PATH' is a directory"; "'PATH' is a FIFO, not a
//                    regular file" (likewise a character device such as
//                    /dev/zero, a block device, a socket: the file is
//                    opened without blocking, so a FIFO with no writer is
//                    refused at once, never waited on); "'PATH' is N bytes;
//                    protobuf parses at most 2147483647 bytes ..." (a
//                    regular file over INT_MAX bytes); "cannot read 'PATH':
//                    REASON" (a read error while parsing); "'PATH' is not
//                    a binary kvspec.v1.Scenario (the protobuf is malformed
//                    or truncated)".
// A 0-byte file is accepted here (protobuf parses it as a scenario with
// nothing in it); tools/simulate refuses it.
absl::StatusOr<Scenario> ReadScenarioFile(const std::string& path);

// FromProto (cc/proto_convert.h) row by row: each row of `proto` is freed
// as soon as it is copied; `proto` is left without steps. The result is the
// same as FromProto(proto).
Scenario ConvertReleasing(v1::Scenario& proto);

}  // namespace kvspec

#endif  // KVSPEC_TOOLS_SIMULATE_SCENARIO_FILE_H_
