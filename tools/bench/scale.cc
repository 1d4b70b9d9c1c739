#include "tools/bench/scale.h"

#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cc/registry.h"
#include "cc/trace.h"

namespace kvspec {
namespace bench {

int RunStreamChild(const std::string& name, uint32_t budget, uint32_t steps) {
  absl::StatusOr<std::unique_ptr<Policy>> policy =
      MakePolicy({name, {{"budget", budget}}, /*seed=*/1});
  if (!policy.ok()) {
    std::fprintf(stderr, "%s\n", policy.status().ToString().c_str());
    return 1;
  }
  TraceConfig trace;
  trace.steps = steps;
  size_t peak = 0;
  const uint32_t tenth = steps / 10;
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = RunTrace(
      **policy, trace,
      [&](uint32_t step, absl::Span<const Position>, const EvictionDetail&) {
        peak = std::max(peak, (*policy)->MemoryBytes());
        if (steps >= 1000000 && tenth > 0 && (step + 1) % tenth == 0) {
          std::fprintf(stderr, "  %s budget %u: %u of %u steps\n", name.c_str(),
                       budget, step + 1, steps);
        }
      });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("stream %.9g %zu\n", seconds, peak);
  return 0;
}

absl::StatusOr<StreamRun> RunStream(const std::string& program,
                                    const std::string& policy,
                                    uint32_t budget, uint32_t steps) {
  int out[2];
  if (pipe(out) != 0) return absl::InternalError("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    const std::string a = "--stream_child_policy=" + policy;
    const std::string b = absl::StrCat("--stream_child_budget=", budget);
    const std::string c = absl::StrCat("--stream_child_steps=", steps);
    execl(program.c_str(), program.c_str(), a.c_str(), b.c_str(), c.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[256];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  close(out[0]);
  int wstatus = 0;
  struct rusage usage {};
  if (wait4(pid, &wstatus, 0, &usage) != pid) {
    return absl::InternalError("wait4 failed");
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return absl::InternalError(absl::StrCat(
        "the stream child for ", policy, " (", steps, " steps) ",
        WIFEXITED(wstatus) ? absl::StrCat("exited with ", WEXITSTATUS(wstatus))
                           : absl::StrCat("died of signal ", WTERMSIG(wstatus))));
  }
  StreamRun run{policy, budget, steps, 0.0, 0, usage.ru_maxrss};
  const std::vector<std::string> fields =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(text), ' ');
  if (fields.size() != 3 || fields[0] != "stream" ||
      !absl::SimpleAtod(fields[1], &run.seconds) ||
      !absl::SimpleAtoi(fields[2], &run.peak_memory_bytes)) {
    return absl::InternalError("malformed line from the stream child: " + text);
  }
  return run;
}

}  // namespace bench
}  // namespace kvspec
