#include "conformance/port.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"
#include "conformance/port_text.h"

namespace kvspec {
namespace conformance {
namespace {

constexpr size_t kStderrTailBytes = 4096;

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The CPU time, in clock ticks, of every process in process group `group`
// (user and system time, with that of the children each has reaped), from
// /proc/<pid>/stat; -1 when /proc cannot be read.
int64_t GroupCpuTicks(pid_t group) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  int64_t total = 0;
  while (const dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + entry->d_name + "/stat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the process ended meanwhile
    char text[1024];
    const ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    // The command name (field 2) is in parentheses and may hold anything:
    // the fields after its last ')' are state, ppid, pgrp, ...
    const char* rest = std::strrchr(text, ')');
    if (rest == nullptr) continue;
    char state;
    long long ppid, pgrp, session, tty, tpgid;
    unsigned long long flags, minflt, cminflt, majflt, cmajflt, utime, stime;
    long long cutime, cstime;
    if (std::sscanf(rest + 1,
                    " %c %lld %lld %lld %lld %lld %llu %llu %llu %llu %llu "
                    "%llu %llu %lld %lld",
                    &state, &ppid, &pgrp, &session, &tty, &tpgid, &flags,
                    &minflt, &cminflt, &majflt, &cmajflt, &utime, &stime,
                    &cutime, &cstime) != 15) {
      continue;
    }
    if (pgrp != group) continue;
    total += static_cast<int64_t>(utime + stime) + cutime + cstime;
  }
  closedir(proc);
  return total;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PortProcess>> PortProcess::Start(
    const std::string& command, size_t max_frame_bytes) {
  // A write to a port that died must fail with EPIPE, not kill the runner.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0) {
    return absl::InternalError(absl::StrFormat("pipe: %s", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    return absl::InternalError(absl::StrFormat("fork: %s", std::strerror(errno)));
  }
  if (pid == 0) {
    // A process group of its own, so Kill reaches everything it starts.
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    // `exec` makes the port the child itself, so its exit status (or the
    // signal that killed it) is reported as its own, not the shell's.
    const std::string line = "exec " + command;
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Also from this side, so the group exists before Kill can be called
  // (whichever of the two runs first; the other fails harmlessly).
  setpgid(pid, pid);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  for (int fd : {in[1], out[0], err[0]}) {
    SetNonBlocking(fd);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  return std::unique_ptr<PortProcess>(
      new PortProcess(pid, in[1], out[0], err[0], max_frame_bytes));
}

PortProcess::~PortProcess() {
  if (stdin_ >= 0) close(stdin_);
  stdin_ = -1;
  // Give a well-behaved port a moment to exit on EOF, then kill it.
  const int64_t deadline = NowMillis() + 1000;
  while (!reaped_ && NowMillis() < deadline) {
    Reap(false);
    if (!reaped_) usleep(10000);
  }
  Kill();
  if (stdout_ >= 0) close(stdout_);
  if (stderr_ >= 0) close(stderr_);
}

std::string PortProcess::stderr_tail() const {
  // Escapes can make the text up to four times its bytes.
  return PortText(stderr_tail_, 4 * kStderrTailBytes);
}

void PortProcess::DrainStderr() {
  char buffer[4096];
  while (stderr_ >= 0) {
    const ssize_t n = read(stderr_, buffer, sizeof(buffer));
    if (n > 0) {
      stderr_tail_.append(buffer, static_cast<size_t>(n));
      if (stderr_tail_.size() > kStderrTailBytes) {
        stderr_tail_ = TailOnBoundary(stderr_tail_, kStderrTailBytes);
      }
      continue;
    }
    if (n == 0) {
      close(stderr_);
      stderr_ = -1;
    }
    return;  // EAGAIN or error: nothing more now
  }
}

PortProcess::Received PortProcess::Receive(double timeout_seconds,
                                           std::string& frame) {
  // spec/protocol.md#outcomes, `timeout`: the wait ends at the timeout in
  // wall time only if the port has by then used the timeout in CPU time,
  // or uses no CPU time for a while (min(1 s, the timeout): it waits for
  // something, it is not computing); a port slowed by a loaded machine is
  // waited for, up to 10 times the timeout in wall time.
  const int64_t start = NowMillis();
  const int64_t timeout_ms = static_cast<int64_t>(timeout_seconds * 1000.0);
  const int64_t deadline = start + timeout_ms;
  const int64_t hard_deadline = start + 10 * timeout_ms;
  const int64_t idle_ms = std::min<int64_t>(1000, timeout_ms);
  const int64_t cpu_start = GroupCpuTicks(pid_);
  const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  int64_t cpu_seen = -1, cpu_changed_at = 0;
  timeout_detail_.clear();
  while (true) {
    switch (decoder_.Next(frame)) {
      case FrameDecoder::State::kFrame:
        return Received::kFrame;
      case FrameDecoder::State::kTooLarge:
        return Received::kTooLarge;
      case FrameDecoder::State::kNeedMore:
        break;
    }
    if (stdout_ < 0) return Received::kEof;
    // The port exited, but stdout is still open (a child it started holds
    // it): what it wrote before exiting is in the pipe; read that, and then
    // it is an end of file, not a wait for the timeout.
    // (Each pass decodes what it read; the cap bounds a flood.)
    Reap(false);
    if (reaped_) {
      if (ReadSome()) continue;
      DrainStderr();
      close(stdout_);
      stdout_ = -1;
      return Received::kEof;
    }
    const int64_t now = NowMillis();
    int64_t left = deadline - now;
    if (left <= 0) {
      const int64_t cpu = GroupCpuTicks(pid_);
      const double wall = (now - start) / 1000.0;
      if (cpu < 0 || cpu_start < 0 || ticks_per_second <= 0) {
        timeout_detail_ = absl::StrFormat("no reply within %g s", timeout_seconds);
        return Received::kTimeout;
      }
      const double used = (cpu - cpu_start) / ticks_per_second;
      if (used >= timeout_seconds) {
        timeout_detail_ = absl::StrFormat(
            "no reply within %g s of the port's CPU time (%.1f s of wall time)",
            timeout_seconds, wall);
        return Received::kTimeout;
      }
      if (now >= hard_deadline) {
        timeout_detail_ = absl::StrFormat(
            "no reply within %.1f s of wall time (10 x --timeout_seconds %g), "
            "the port having used %.1f s of CPU time",
            wall, timeout_seconds, used);
        return Received::kTimeout;
      }
      if (cpu != cpu_seen) {
        cpu_seen = cpu;
        cpu_changed_at = now;
      } else if (now - cpu_changed_at >= idle_ms) {
        timeout_detail_ = absl::StrFormat(
            "no reply within %g s, the port idle (no CPU time) for the last "
            "%.1f s",
            timeout_seconds, (now - cpu_changed_at) / 1000.0);
        return Received::kTimeout;
      }
      left = 100;
    }
    pollfd fds[2] = {{stdout_, POLLIN, 0}, {stderr_, POLLIN, 0}};
    const int nfds = stderr_ >= 0 ? 2 : 1;
    // Short waits, so an exit is seen within a tenth of a second.
    const int ready = poll(fds, static_cast<nfds_t>(nfds),
                           static_cast<int>(std::min<int64_t>(left, 100)));
    if (ready < 0 && errno != EINTR) return Received::kEof;
    if (nfds == 2 && fds[1].revents != 0) DrainStderr();
    if (fds[0].revents != 0) {
      char buffer[65536];
      const ssize_t n = read(stdout_, buffer, sizeof(buffer));
      if (n > 0) {
        decoder_.Feed(absl::string_view(buffer, static_cast<size_t>(n)));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        DrainStderr();
        close(stdout_);
        stdout_ = -1;
      }
    }
  }
}

bool PortProcess::ReadSome() {
  if (stdout_ < 0) return false;
  char buffer[65536];
  const ssize_t n = read(stdout_, buffer, sizeof(buffer));
  if (n <= 0) return false;  // EAGAIN (a child holds the pipe open), EOF, error
  decoder_.Feed(absl::string_view(buffer, static_cast<size_t>(n)));
  return true;
}

PortProcess::Sent PortProcess::Send(const std::string& payload,
                                    double timeout_seconds) {
  const std::string frame = EncodeFrame(payload);
  const int64_t deadline =
      NowMillis() + static_cast<int64_t>(timeout_seconds * 1000.0);
  size_t written = 0;
  while (written < frame.size()) {
    if (stdin_ < 0) return Sent::kClosed;
    const ssize_t n = write(stdin_, frame.data() + written, frame.size() - written);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return Sent::kClosed;  // EPIPE
    const int64_t left = deadline - NowMillis();
    if (left <= 0) {
      Reap(false);
      return reaped_ ? Sent::kClosed : Sent::kTimeout;
    }
    // Keep draining stderr so a port blocked on a full stderr pipe can read.
    pollfd fds[2] = {{stdin_, POLLOUT, 0}, {stderr_, POLLIN, 0}};
    poll(fds, stderr_ >= 0 ? 2 : 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (stderr_ >= 0 && fds[1].revents != 0) DrainStderr();
  }
  return Sent::kSent;
}

bool PortProcess::HasOutputOutOfTurn() {
  if (decoder_.buffered() > 0) return true;
  if (stdout_ < 0) return false;
  pollfd fd = {stdout_, POLLIN, 0};
  if (poll(&fd, 1, 0) <= 0) return false;
  char byte;
  const ssize_t n = read(stdout_, &byte, 1);
  if (n == 1) {
    decoder_.Feed(absl::string_view(&byte, 1));
    return true;
  }
  return false;  // EOF is not output; the next Receive reports it
}

void PortProcess::Reap(bool wait) {
  if (reaped_) return;
  const pid_t done = waitpid(pid_, &wait_status_, wait ? 0 : WNOHANG);
  if (done == pid_) reaped_ = true;
}

void PortProcess::Kill() {
  Reap(false);
  // The group first: the port's children too, whether or not the port
  // itself is still running. Until the port is reaped its pid cannot be
  // reused, so the group is still the port's.
  if (!group_killed_) {
    kill(-pid_, SIGKILL);
    group_killed_ = true;
  }
  if (!reaped_) {
    kill(pid_, SIGKILL);
    Reap(true);
  }
  DrainStderr();
}

std::string PortProcess::ExitDescription() {
  Reap(false);
  if (!reaped_) return "running";
  if (WIFEXITED(wait_status_)) {
    return absl::StrFormat("exited with status %d", WEXITSTATUS(wait_status_));
  }
  if (WIFSIGNALED(wait_status_)) {
    return absl::StrFormat("killed by signal %d", WTERMSIG(wait_status_));
  }
  return "stopped";
}

}  // namespace conformance
}  // namespace kvspec
