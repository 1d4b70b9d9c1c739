// A deliberately misbehaving port, for the runner's own tests: it answers
// like the reference testee, except on the case named by --on_case (or every
// case, with --on_case='*'), where it misbehaves as --mode says.
//
//   fake_port --mode=crash --on_case=window/basic/single-steps
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <time.h>

#include "conformance/testee/reference_answer.h"
#include "conformance/testee/stdio_frames.h"

namespace {

std::string Arg(int argc, char** argv, const char* name) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return argv[i] + prefix.size();
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using kvspec::testee::WriteAll;
  using kvspec::testee::WriteFrame;
  const std::string mode = Arg(argc, argv, "mode");
  const std::string on_case = Arg(argc, argv, "on_case");
  std::fprintf(stderr, "fake port: mode %s on %s\n", mode.c_str(), on_case.c_str());
  if (mode == "exit_at_start") return 7;
  // --cpu=N: runs on CPU N only (a test shares that CPU with a busy loop).
  if (const std::string cpu = Arg(argc, argv, "cpu"); !cpu.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(std::atoi(cpu.c_str()), &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::perror("fake port: sched_setaffinity");
      return 8;
    }
  }
  // --restart_fails=FILE: once the target case has created FILE, every
  // later start of the port fails (a port that cannot be restarted).
  const std::string restart_fails = Arg(argc, argv, "restart_fails");
  struct stat ignored;
  if (!restart_fails.empty() && stat(restart_fails.c_str(), &ignored) == 0) {
    std::fprintf(stderr, "fake port: cannot start again (%s exists)\n",
                 restart_fails.c_str());
    return 9;
  }
  std::string payload;
  while (kvspec::testee::ReadFrame(STDIN_FILENO, payload)) {
    kvspec::conformance::v1::RunnerMessage message;
    if (!message.ParseFromString(payload)) return 1;
    kvspec::conformance::v1::PortMessage reply = kvspec::Answer(message);
    if (message.has_hello()) {
      // --spec_version=X: declares that spec version instead of the
      // reference's (an older port's refusals are judged without subjects).
      if (const std::string v = Arg(argc, argv, "spec_version"); !v.empty()) {
        reply.mutable_hello()->set_spec_version(v);
      }
      if (mode == "bad_version") reply.mutable_hello()->set_protocol_version(2);
      // --precision=S/A: declares score and accumulate precisions by their
      // enum numbers (spec/protocol.md#precision), known or not.
      if (const std::string p = Arg(argc, argv, "precision"); !p.empty()) {
        const size_t slash = p.find('/');
        reply.mutable_hello()->set_score_precision(
            static_cast<kvspec::conformance::v1::Precision>(std::atoi(p.c_str())));
        if (slash != std::string::npos) {
          reply.mutable_hello()->set_accumulate_precision(
              static_cast<kvspec::conformance::v1::Precision>(
                  std::atoi(p.c_str() + slash + 1)));
        }
      }
      if (mode == "nasty_text") {
        // A NUL and control bytes in its name (proto3 strings are UTF-8:
        // invalid UTF-8 would not parse at all, so it goes to stderr).
        reply.mutable_hello()->set_port_name(std::string("fake\0port\x01\x1b[31m", 15));
      }
      if (mode == "no_tova") {
        auto* policies = reply.mutable_hello()->mutable_policies();
        for (int i = 0; i < policies->size(); ++i) {
          if (policies->Get(i) == "tova") policies->DeleteSubrange(i, 1);
        }
      }
      WriteFrame(STDOUT_FILENO, reply.SerializeAsString());
      continue;
    }
    const bool target = on_case == "*" || message.request().case_id() == on_case;
    if (!target) {
      WriteFrame(STDOUT_FILENO, reply.SerializeAsString());
      continue;
    }
    auto* response = reply.mutable_response();
    std::fprintf(stderr, "fake port: misbehaving on %s\n",
                 message.request().case_id().c_str());
    if (mode == "crash") {
      std::fprintf(stderr, "fake port: about to abort\n");
      abort();
    } else if (mode == "exit") {
      return 3;
    } else if (mode == "hang") {
      pause();
    } else if (mode == "garbage") {
      WriteFrame(STDOUT_FILENO, std::string("\xff\xff\xff\xff\x0f not a message", 20));
      continue;
    } else if (mode == "oversize") {
      WriteAll(STDOUT_FILENO, std::string("\xff\xff\xff\x7f", 4));
      pause();
    } else if (mode == "wrong_seq") {
      response->set_seq(response->seq() + 7);
    } else if (mode == "wrong_type") {
      kvspec::conformance::v1::PortMessage hello;
      hello.mutable_hello()->set_protocol_version(1);
      WriteFrame(STDOUT_FILENO, hello.SerializeAsString());
      continue;
    } else if (mode == "chatter") {
      WriteFrame(STDOUT_FILENO, reply.SerializeAsString());
      WriteAll(STDOUT_FILENO, "debug: chatty port\n");
      continue;
    } else if (mode == "restart_fails") {
      FILE* flag = std::fopen(restart_fails.c_str(), "w");
      if (flag != nullptr) std::fclose(flag);
      return 4;
    } else if (mode == "orphan") {
      // Exits, leaving a child that holds stdout and stderr open.
      const pid_t child = fork();
      if (child == 0) {
        sleep(600);
        _exit(0);
      }
      std::fprintf(stderr, "fake port: child pid %d\n", static_cast<int>(child));
      return 5;
    } else if (mode == "huge_error") {
      response->mutable_error()->set_message(std::string(8 << 20, 'x'));
    } else if (mode == "nasty_text") {
      // The error message holds a NUL and an escape sequence.
      response->mutable_error()->set_message(std::string("before\0after\x1b[2J end", 20));
    } else if (mode == "nasty_stderr") {
      // Invalid UTF-8, then euro signs, the last 4,096 bytes starting
      // inside one; then a crash, so the tail is reported.
      std::string euros;
      for (int i = 0; i < 2000; ++i) euros += "\xe2\x82\xac";
      std::fprintf(stderr, "bad \xff\xc3 bytes\n%sx\n", euros.c_str());
      std::fflush(stderr);
      abort();
    } else if (mode == "error") {
      response->mutable_error()->set_message("fake port: simulated failure");
    } else if (mode == "skip") {
      response->mutable_skipped()->set_reason("fake port: not implemented");
    } else if (mode == "wrong_victims") {
      auto* log = response->mutable_log();
      for (auto& step : *log->mutable_steps()) {
        if (step.victims_size() > 0) {
          step.set_victims(0, step.victims(0) + 1);
          break;
        }
      }
    } else if (mode == "wrong_late_victim") {
      // A long list wrong deep inside: the seventh victim of the first step
      // that evicts at least ten.
      auto* log = response->mutable_log();
      for (auto& step : *log->mutable_steps()) {
        if (step.victims_size() >= 10) {
          step.set_victims(6, step.victims(6) + 100000);
          break;
        }
      }
    } else if (mode == "wrong_span") {
      // spec/spans.md#the-log: the last query of the second step sees one
      // position more.
      auto* log = response->mutable_log();
      if (log->steps_size() > 1 && log->steps(1).spans_size() > 0) {
        auto* step = log->mutable_steps(1);
        auto* span = step->mutable_spans(step->spans_size() - 1);
        span->set_ranges(0, span->ranges(0) - 1);
      }
    } else if (mode == "wrong_held_id") {
      auto* log = response->mutable_log();
      for (auto& step : *log->mutable_steps()) {
        if (step.held_size() > 0) {
          step.mutable_held(0)->set_id(step.held(0).id() + 1);
          break;
        }
      }
    } else if (mode == "compute") {
      // Computes, a busy loop, for --compute_seconds of its own CPU time
      // (default 1), then answers as the reference: slow, not stuck.
      const std::string text = Arg(argc, argv, "compute_seconds");
      const double seconds = text.empty() ? 1.0 : std::atof(text.c_str());
      timespec start, now;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
      volatile uint64_t spin = 0;
      do {
        for (int i = 0; i < 100000; ++i) spin = spin + i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
      } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    } else if (mode == "unknown_subject") {
      // A port that ignores a parameter it declares: it refuses every
      // INVALID_PARAMETER case as an unknown parameter (the category is
      // right; spec/harness.md#subjects says what is wrong).
      auto* log = response->mutable_log();
      if (log->has_rejection() &&
          log->rejection().category() == kvspec::v1::INVALID_PARAMETER) {
        auto* subject = log->mutable_rejection()->mutable_subject();
        const std::string name =
            subject->names().empty() ? "" : subject->names(0);
        subject->set_check("unknown");
        subject->clear_names();
        subject->add_names(name);
      }
    } else if (mode == "drop_cuts") {
      // An engine that ranks nothing it could report: no cut anywhere.
      for (auto& step : *response->mutable_log()->mutable_steps()) {
        step.clear_cut();
        for (auto& set : *step.mutable_sets()) set.clear_cut();
      }
    } else if (mode == "error_unless_cut_wanted") {
      // Shows what the request asked: an error when want_cut is false.
      if (!message.request().want_cut()) {
        response->mutable_error()->set_message("fake port: asked for no cut");
      }
    } else if (mode == "accept_all") {
      response->mutable_log()->clear_rejection();
    } else if (mode == "reject_all") {
      auto* rejection = response->mutable_log()->mutable_rejection();
      rejection->set_category(kvspec::v1::ATTENTION_VALUE);
      rejection->set_step(0);
      rejection->set_message("fake port: refuses everything");
      response->mutable_log()->clear_steps();
    }
    WriteFrame(STDOUT_FILENO, reply.SerializeAsString());
  }
  return 0;
}
