// A port running as a subprocess: its stdin and stdout carry frames, its
// stderr is kept as a rolling tail for reports. Every wait has a deadline;
// nothing here blocks forever on a misbehaving port. The port runs in a
// process group of its own, and Kill ends the whole group: children it
// started do not outlive it, and a child still holding its stdout does not
// keep a port that exited looking alive.
#ifndef KVSPEC_CONFORMANCE_PORT_H_
#define KVSPEC_CONFORMANCE_PORT_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "conformance/frame.h"

namespace kvspec {
namespace conformance {

class PortProcess {
 public:
  // Starts `command` as `/bin/sh -c 'exec <command>'`, in a new process
  // group.
  static absl::StatusOr<std::unique_ptr<PortProcess>> Start(
      const std::string& command, size_t max_frame_bytes);
  ~PortProcess();

  enum class Received {
    kFrame,     // `frame` holds one payload
    kEof,       // stdout closed, or the port exited (what it wrote before
                // exiting is read first)
    kTimeout,   // nothing complete before the deadline
    kTooLarge,  // a frame declared more than the cap
  };
  // Waits for one frame, draining stderr meanwhile: up to `timeout_seconds`
  // of wall time, and beyond it while the port keeps computing and has used
  // less than `timeout_seconds` of CPU time (its process group's), up to 10
  // times `timeout_seconds` (spec/protocol.md#outcomes). After kTimeout,
  // timeout_detail() says which limit ended the wait.
  Received Receive(double timeout_seconds, std::string& frame);
  const std::string& timeout_detail() const { return timeout_detail_; }

  enum class Sent {
    kSent,
    kClosed,   // the port closed stdin or died (EPIPE)
    kTimeout,  // the port is alive but did not read the frame in time
  };
  // Writes one frame to the port's stdin within `timeout_seconds`.
  Sent Send(const std::string& payload, double timeout_seconds);

  // Whether the port has written to stdout without being asked: bytes
  // already buffered, or readable now.
  bool HasOutputOutOfTurn();

  // Kills the port's process group (SIGKILL): the port if it is still
  // running, and every process it started that is still in its group; then
  // reaps the port.
  void Kill();

  // "exited with status 3", "killed by signal 9", or "running".
  std::string ExitDescription();

  // The last few KB the port wrote to stderr, made safe for reports
  // (conformance/port_text.h: starting on a character boundary, control
  // bytes and invalid UTF-8 escaped).
  std::string stderr_tail() const;

  size_t declared_length() const { return static_cast<size_t>(decoder_.declared_length()); }

 private:
  PortProcess(pid_t pid, int in, int out, int err, size_t max)
      : pid_(pid), stdin_(in), stdout_(out), stderr_(err), decoder_(max) {}
  void DrainStderr();
  void Reap(bool wait);
  // One read of what stdout has now, into the decoder; false if nothing.
  bool ReadSome();

  pid_t pid_;
  int stdin_, stdout_, stderr_;
  FrameDecoder decoder_;
  std::string stderr_tail_;
  std::string timeout_detail_;
  bool reaped_ = false;
  bool group_killed_ = false;
  int wait_status_ = 0;
};

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_PORT_H_
