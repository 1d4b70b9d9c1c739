// A port running as a subprocess: its stdin and stdout carry frames, its
// stderr is kept as a rolling tail for reports. Every wait has a deadline;
// nothing here blocks forever on a misbehaving port.
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
  // Starts `command` as `/bin/sh -c 'exec <command>'`.
  static absl::StatusOr<std::unique_ptr<PortProcess>> Start(
      const std::string& command, size_t max_frame_bytes);
  ~PortProcess();

  enum class Received {
    kFrame,     // `frame` holds one payload
    kEof,       // stdout closed (the port exited or closed it)
    kTimeout,   // nothing complete before the deadline
    kTooLarge,  // a frame declared more than the cap
  };
  // Waits up to `timeout_seconds` for one frame, draining stderr meanwhile.
  Received Receive(double timeout_seconds, std::string& frame);

  // Writes one frame to the port's stdin within `timeout_seconds`. False if
  // the port closed stdin, died, or did not read in time.
  bool Send(const std::string& payload, double timeout_seconds);

  // Whether the port has written to stdout without being asked: bytes
  // already buffered, or readable now.
  bool HasOutputOutOfTurn();

  // Kills the port (SIGKILL) if it is still running, and reaps it.
  void Kill();

  // "exited with status 3", "killed by signal 9", or "running".
  std::string ExitDescription();

  // The last few KB the port wrote to stderr.
  const std::string& stderr_tail() const { return stderr_tail_; }

  size_t declared_length() const { return static_cast<size_t>(decoder_.declared_length()); }

 private:
  PortProcess(pid_t pid, int in, int out, int err, size_t max)
      : pid_(pid), stdin_(in), stdout_(out), stderr_(err), decoder_(max) {}
  void DrainStderr();
  void Reap(bool wait);

  pid_t pid_;
  int stdin_, stdout_, stderr_;
  FrameDecoder decoder_;
  std::string stderr_tail_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_PORT_H_
