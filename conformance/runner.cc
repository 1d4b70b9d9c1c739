#include "conformance/runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cc/registry.h"
#include "cc/text.h"
#include "cc/version.h"
#include "conformance/port.h"
#include "conformance/port_text.h"
#include "conformance/precision_judge.h"
#include "tools/vectors/features.h"

namespace kvspec {
namespace conformance {
namespace {

// Elements shown either side of the first difference in a long list.
constexpr int kContext = 4;

// A hello's names (port, language, versions, each feature) are short; the
// runner keeps at most this much of each, and at most kMaxHelloNames
// features and policies (spec/protocol.md#what-the-runner-keeps).
constexpr size_t kPortNameBytes = 256;
constexpr int kMaxHelloNames = 1024;

// `items` as "[a b c]", with the element at `mark` (if >= 0) as ">>x<<";
// a list longer than 2 * kContext + 1 shows only the elements around the
// mark (or its start), with "..." for the rest and its length.
std::string MarkedList(const std::vector<std::string>& items, int mark,
                       const char* separator = " ") {
  const int n = static_cast<int>(items.size());
  const int centre = mark >= 0 ? mark : 0;
  int first = 0, last = n;
  if (n > 2 * kContext + 1) {
    first = std::max(0, centre - kContext);
    last = std::min(n, centre + kContext + 1);
  }
  std::vector<std::string> shown;
  if (first > 0) shown.push_back("...");
  for (int i = first; i < last; ++i) {
    shown.push_back(i == mark ? ">>" + items[i] + "<<" : items[i]);
  }
  if (last < n) shown.push_back("...");
  std::string text = "[" + absl::StrJoin(shown, separator) + "]";
  if (first > 0 || last < n) text += absl::StrFormat(" (%d in all)", n);
  return text;
}

std::vector<std::string> VictimItems(const kvspec::v1::StepResult& step) {
  std::vector<std::string> items;
  for (uint32_t v : step.victims()) items.push_back(std::to_string(v));
  return items;
}

std::vector<std::string> CutItems(const kvspec::v1::StepResult& step) {
  std::vector<std::string> items;
  for (const kvspec::v1::RankedPosition& r : step.cut()) {
    items.push_back(absl::StrFormat("%d: %s", r.position(), FloatText(r.score())));
  }
  return items;
}

// "budget=4, sinks=2; seed 7" (no parameters: "defaults").
std::string ConfigurationText(const kvspec::v1::PolicyConfig& policy) {
  std::vector<std::string> parameters;
  for (const kvspec::v1::Parameter& p : policy.parameters()) {
    parameters.push_back(absl::StrFormat("%s=%d", p.name(), p.value()));
  }
  std::string text = parameters.empty() ? "defaults" : absl::StrJoin(parameters, ", ");
  if (policy.seed() != 0) text += absl::StrFormat("; seed %d", policy.seed());
  return text;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

// Index of the first victim that differs (a missing one counts), or -1.
int FirstVictimDifference(const kvspec::v1::StepResult& a,
                          const kvspec::v1::StepResult& b) {
  const int n = std::max(a.victims_size(), b.victims_size());
  for (int i = 0; i < n; ++i) {
    if (i >= a.victims_size() || i >= b.victims_size() ||
        a.victims(i) != b.victims(i)) {
      return i;
    }
  }
  return -1;
}

// Rank of the first cut entry that differs in position or score bits, or -1.
int FirstCutDifference(const kvspec::v1::StepResult& a,
                       const kvspec::v1::StepResult& b) {
  const int n = std::max(a.cut_size(), b.cut_size());
  for (int i = 0; i < n; ++i) {
    if (i >= a.cut_size() || i >= b.cut_size() ||
        a.cut(i).position() != b.cut(i).position() ||
        !SameBits(a.cut(i).score(), b.cut(i).score())) {
      return i;
    }
  }
  return -1;
}

// spec/spans.md#the-log: index of the first query whose span differs (or
// that one side lacks), or -1.
int FirstSpanDifference(const kvspec::v1::StepResult& a,
                        const kvspec::v1::StepResult& b) {
  const int n = std::max(a.spans_size(), b.spans_size());
  for (int i = 0; i < n; ++i) {
    if (i >= a.spans_size() || i >= b.spans_size()) return i;
    const auto& x = a.spans(i).ranges();
    const auto& y = b.spans(i).ranges();
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end())) return i;
  }
  return -1;
}

bool SameHeld(const kvspec::v1::StepResult& a,
              const kvspec::v1::StepResult& b) {
  if (a.held_size() != b.held_size()) return false;
  for (int i = 0; i < a.held_size(); ++i) {
    if (a.held(i).first() != b.held(i).first() ||
        a.held(i).last() != b.held(i).last() ||
        a.held(i).id() != b.held(i).id()) {
      return false;
    }
  }
  return true;
}

std::string SpanText(const kvspec::v1::QuerySpan& span) {
  std::vector<std::string> runs;
  for (int i = 0; i + 1 < span.ranges_size(); i += 2) {
    runs.push_back(span.ranges(i) == span.ranges(i + 1)
                       ? absl::StrCat(span.ranges(i))
                       : absl::StrCat(span.ranges(i), "..", span.ranges(i + 1)));
  }
  if (span.ranges_size() % 2 == 1) runs.push_back("(odd)");
  return "{" + absl::StrJoin(runs, ", ") + "}";
}

std::string HeldText(const kvspec::v1::StepResult& step) {
  std::vector<std::string> runs;
  for (const kvspec::v1::HeldRun& run : step.held()) {
    runs.push_back(absl::StrFormat("%d..%d as %d..%d", run.first(), run.last(),
                                   run.id(),
                                   int64_t{run.id()} + run.last() - run.first()));
  }
  return "[" + absl::StrJoin(runs, ", ") + "]";
}

bool SameStep(const kvspec::v1::StepResult& a, const kvspec::v1::StepResult& b) {
  if (a.sets_size() != b.sets_size()) return false;
  for (int k = 0; k < a.sets_size(); ++k) {
    if (!SameStep(a.sets(k), b.sets(k))) return false;
  }
  return a.kept_count() == b.kept_count() &&
         a.query_cache_position() == b.query_cache_position() &&
         FirstVictimDifference(a, b) < 0 && FirstCutDifference(a, b) < 0 &&
         FirstSpanDifference(a, b) < 0 && SameHeld(a, b);
}

// "range budget"; "(none)" for a rejection without a subject. Port text:
// a port's check and names are capped and made safe, and at most
// kShownNames names are shown.
std::string SubjectLine(const kvspec::v1::Subject& subject) {
  constexpr int kShownNames = 8;
  if (subject.check().empty() && subject.names().empty()) return "(none)";
  std::vector<std::string> parts = {PortText(subject.check(), kPortNameBytes)};
  for (int i = 0; i < std::min(subject.names_size(), kShownNames); ++i) {
    parts.push_back(PortText(subject.names(i), kPortNameBytes));
  }
  if (subject.names_size() > kShownNames) {
    parts.push_back(absl::StrFormat("... (%d names)", subject.names_size()));
  }
  return absl::StrJoin(parts, " ");
}

bool SameSubject(const kvspec::v1::Subject& a, const kvspec::v1::Subject& b) {
  return a.check() == b.check() &&
         std::equal(a.names().begin(), a.names().end(), b.names().begin(),
                    b.names().end());
}

std::string CategoryText(const kvspec::v1::EvictionLog& log,
                         bool with_subject) {
  if (!log.has_rejection()) return "no rejection";
  return absl::StrFormat(
      "%s%s at step %d", kvspec::v1::ErrorCategory_Name(log.rejection().category()),
      with_subject ? " (" + SubjectLine(log.rejection().subject()) + ")" : "",
      log.rejection().step());
}

// Cases of an unregistered name (refusal cases) are always sent: the port
// must refuse them as UNKNOWN_POLICY whatever it implements.
bool IsRegistered(const std::string& name) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name == name) return true;
  }
  return false;
}

// spec/protocol.md#precision: a hello's precision; nullopt for a value the
// runner does not know.
std::optional<Precision> PrecisionOf(v1::Precision precision) {
  switch (precision) {
    case v1::PRECISION_UNSPECIFIED:
    case v1::BINARY64: return Precision::kBinary64;
    case v1::BINARY32: return Precision::kBinary32;
    case v1::BFLOAT16: return Precision::kBfloat16;
    case v1::FLOAT16: return Precision::kFloat16;
    default: return std::nullopt;
  }
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

std::string OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass: return "pass";
    case Outcome::kWithinPrecision: return "within precision";
    case Outcome::kMismatch: return "mismatch";
    case Outcome::kWrongAccept: return "wrong accept";
    case Outcome::kWrongReject: return "wrong reject";
    case Outcome::kSkipped: return "skipped";
    case Outcome::kError: return "error";
    case Outcome::kCrash: return "crash";
    case Outcome::kTimeout: return "timeout";
    case Outcome::kProtocolError: return "protocol error";
    case Outcome::kNotRun: return "not run";
    case Outcome::kNotReached: return "not reached";
  }
  return "unknown";
}

bool ParseOutcome(const std::string& text, Outcome& outcome) {
  std::string normal = text;
  for (char& c : normal) {
    if (c == '-' || c == '_') c = ' ';
  }
  for (Outcome o : {Outcome::kPass, Outcome::kWithinPrecision, Outcome::kMismatch, Outcome::kWrongAccept,
                    Outcome::kWrongReject, Outcome::kSkipped, Outcome::kError,
                    Outcome::kCrash, Outcome::kTimeout, Outcome::kProtocolError,
                    Outcome::kNotRun, Outcome::kNotReached}) {
    if (OutcomeName(o) == normal) {
      outcome = o;
      return true;
    }
  }
  return false;
}

bool MatchesPattern(const std::string& id, const std::string& pattern) {
  if (pattern.size() >= 2 && pattern.compare(pattern.size() - 2, 2, "/*") == 0) {
    const std::string prefix = pattern.substr(0, pattern.size() - 1);
    return id.compare(0, prefix.size(), prefix) == 0;
  }
  return id == pattern;
}

std::string ShellQuote(const std::string& text) {
  return "'" + absl::StrReplaceAll(text, {{"'", "'\\''"}}) + "'";
}

bool ComparesSubjects(const std::string& port_spec_version) {
  return vectors::ParseVersion(port_spec_version).has_value() &&
         vectors::CompareVersions(port_spec_version, kSubjectsSince) >= 0;
}

Outcome CompareLogs(const kvspec::v1::EvictionLog& expected,
                    const kvspec::v1::EvictionLog& actual,
                    const std::string& replay, std::string& detail,
                    Divergence* divergence, bool compare_subjects) {
  Divergence d;
  d.expected_rejection = CategoryText(expected, compare_subjects);
  d.actual_rejection = CategoryText(actual, compare_subjects);
  d.expected_steps = expected.steps_size();
  d.actual_steps = actual.steps_size();
  const int steps = std::min(expected.steps_size(), actual.steps_size());
  for (int i = 0; i < steps; ++i) {
    const auto& e = expected.steps(i);
    const auto& a = actual.steps(i);
    if (SameStep(e, a)) continue;
    d.step = i;
    d.expected = e;
    d.actual = a;
    detail = absl::StrFormat("first divergent step: %d\n", i);
    // spec/heads.md#the-eviction-log: one record per kept set.
    if (e.sets_size() != a.sets_size()) {
      detail += absl::StrFormat(
          "  expected %d per-set records (0: one kept set), the port gave %d\n"
          "  replay: %s",
          e.sets_size(), a.sets_size(), replay);
      if (divergence != nullptr) *divergence = d;
      return Outcome::kMismatch;
    }
    for (int k = 0; k < e.sets_size(); ++k) {
      if (SameStep(e.sets(k), a.sets(k))) continue;
      d.set = k;
      d.expected = e.sets(k);
      d.actual = a.sets(k);
      detail += absl::StrFormat("  kept set %d differs first\n", k);
      break;
    }
    d.victim_index = FirstVictimDifference(d.expected, d.actual);
    d.cut_rank = FirstCutDifference(d.expected, d.actual);
    if (d.victim_index >= 0) {
      detail += absl::StrFormat("  victims differ first at index %d (marked >>x<<)\n",
                                d.victim_index);
    }
    detail += absl::StrFormat(
        "  expected victims %s, kept %d, query at %d\n"
        "  actual   victims %s, kept %d, query at %d\n",
        MarkedList(VictimItems(d.expected), d.victim_index),
        d.expected.kept_count(), d.expected.query_cache_position(),
        MarkedList(VictimItems(d.actual), d.victim_index),
        d.actual.kept_count(), d.actual.query_cache_position());
    if (d.expected.cut_size() > 0 || d.actual.cut_size() > 0) {
      if (d.cut_rank >= 0) {
        detail += absl::StrFormat("  cut differs first at rank %d (marked >>x<<)\n",
                                  d.cut_rank);
      }
      detail += absl::StrFormat("  expected cut: %s\n  actual cut:   %s\n",
                                MarkedList(CutItems(d.expected), d.cut_rank, ", "),
                                MarkedList(CutItems(d.actual), d.cut_rank, ", "));
    }
    const int span_index = FirstSpanDifference(d.expected, d.actual);
    if (span_index >= 0) {
      const auto span_at = [span_index](const kvspec::v1::StepResult& step) {
        return span_index < step.spans_size() ? SpanText(step.spans(span_index))
                                              : std::string("(none)");
      };
      detail += absl::StrFormat(
          "  spans differ first at query %d of the step (spec/spans.md)\n"
          "  expected span %s (%d spans)\n  actual   span %s (%d spans)\n",
          span_index, span_at(d.expected), d.expected.spans_size(),
          span_at(d.actual), d.actual.spans_size());
    }
    if (!SameHeld(d.expected, d.actual)) {
      detail += absl::StrFormat(
          "  held sets or position ids differ (spec/spans.md)\n"
          "  expected held %s\n  actual   held %s\n",
          HeldText(d.expected), HeldText(d.actual));
    }
    detail += "  replay: " + replay;
    if (divergence != nullptr) *divergence = d;
    return Outcome::kMismatch;
  }
  const bool expect_reject = expected.has_rejection();
  const bool did_reject = actual.has_rejection();
  if (expected.steps_size() == actual.steps_size() && expect_reject == did_reject &&
      (!expect_reject ||
       (expected.rejection().category() == actual.rejection().category() &&
        expected.rejection().step() == actual.rejection().step() &&
        (!compare_subjects || SameSubject(expected.rejection().subject(),
                                          actual.rejection().subject()))))) {
    return Outcome::kPass;
  }
  // Both refusals' messages: the reference's says which rule refused (a
  // wrong accept's first clue), the port's is its own text, kept safe.
  detail = absl::StrFormat(
      "expected %d steps and %s%s; the port ran %d steps and gave %s%s\n  replay: %s",
      expected.steps_size(), d.expected_rejection,
      expect_reject ? " (the reference: \"" + expected.rejection().message() + "\")"
                    : "",
      actual.steps_size(), d.actual_rejection,
      did_reject ? " (\"" + PortText(actual.rejection().message()) + "\")" : "",
      replay);
  if (divergence != nullptr) *divergence = d;
  if (expect_reject && !did_reject) return Outcome::kWrongAccept;
  if (!expect_reject && did_reject) return Outcome::kWrongReject;
  return Outcome::kMismatch;
}

std::string RequestPayload(const vectors::LoadedCase& loaded, uint64_t seq,
                           bool want_cut) {
  v1::RunnerMessage message;
  v1::Request* request = message.mutable_request();
  request->set_seq(seq);
  request->set_case_id(loaded.vector->id());
  *request->mutable_policy() = loaded.vector->policy();
  *request->mutable_scenario() = *loaded.scenario;
  request->set_want_cut(want_cut);
  return message.SerializeAsString();
}

kvspec::v1::EvictionLog WithoutCuts(kvspec::v1::EvictionLog log) {
  for (kvspec::v1::StepResult& step : *log.mutable_steps()) {
    step.clear_cut();
    for (kvspec::v1::StepResult& set : *step.mutable_sets()) set.clear_cut();
  }
  return log;
}

namespace {

// One port process and its handshake.
class Session {
 public:
  explicit Session(const RunnerOptions& options) : options_(options) {}

  // Starts the port and shakes hands; a failure is fatal for the run.
  absl::Status Start(v1::HelloReply* hello) {
    auto port = PortProcess::Start(options_.port_command, options_.max_frame_bytes);
    if (!port.ok()) return port.status();
    port_ = *std::move(port);
    seq_ = 0;
    v1::RunnerMessage message;
    message.mutable_hello()->set_protocol_version(kProtocolVersion);
    message.mutable_hello()->set_spec_version(kSpecVersion);
    switch (port_->Send(message.SerializeAsString(), options_.timeout_seconds)) {
      case PortProcess::Sent::kSent:
        break;
      case PortProcess::Sent::kClosed:
        return Fail("it closed stdin before taking the hello");
      case PortProcess::Sent::kTimeout:
        return Fail("it did not read the hello within the timeout");
    }
    std::string frame;
    const PortProcess::Received got = port_->Receive(options_.timeout_seconds, frame);
    if (got != PortProcess::Received::kFrame) {
      return Fail(got == PortProcess::Received::kTimeout
                      ? "no hello reply within the timeout"
                      : "no hello reply (the port exited or sent an oversized frame)");
    }
    v1::PortMessage reply;
    if (!reply.ParseFromString(frame) || !reply.has_hello()) {
      return Fail("the first frame is not a HelloReply (or one of its strings is "
                  "not valid UTF-8, which proto3 refuses)");
    }
    if (reply.hello().protocol_version() != kProtocolVersion) {
      return Fail(absl::StrFormat(
          "the port speaks protocol version %d; this runner speaks only %d",
          reply.hello().protocol_version(), kProtocolVersion));
    }
    *hello = reply.hello();
    compare_subjects_ = ComparesSubjects(hello->spec_version());
    // spec/protocol.md#precision: a value this runner does not know is
    // refused, never taken for binary64.
    const std::optional<Precision> score = PrecisionOf(hello->score_precision());
    const std::optional<Precision> accumulate =
        hello->accumulate_precision() == v1::PRECISION_UNSPECIFIED
            ? score
            : PrecisionOf(hello->accumulate_precision());
    if (!score.has_value() || !accumulate.has_value()) {
      return Fail(absl::StrFormat(
          "its hello declares score_precision %d and accumulate_precision %d; "
          "this runner knows 0 to 4 (spec/protocol.md#precision)",
          static_cast<int>(hello->score_precision()),
          static_cast<int>(hello->accumulate_precision())));
    }
    precision_ = PortPrecision{*score, *accumulate};
    judged_within_bound_ =
        !(precision_ == PortPrecision{} && options_.strict_binary64);
    // What the port names itself is port text: kept safe for the reports.
    hello->set_port_name(PortText(hello->port_name(), kPortNameBytes));
    hello->set_language(PortText(hello->language(), kPortNameBytes));
    hello->set_port_version(PortText(hello->port_version(), kPortNameBytes));
    hello->set_spec_version(PortText(hello->spec_version(), kPortNameBytes));
    if (hello->features_size() > kMaxHelloNames ||
        hello->policies_size() > kMaxHelloNames) {
      return Fail(absl::StrFormat(
          "its hello lists %d features and %d policies; a hello lists at most "
          "%d of each",
          hello->features_size(), hello->policies_size(), kMaxHelloNames));
    }
    for (std::string& name : *hello->mutable_features()) {
      name = PortText(name, kPortNameBytes);
    }
    return absl::OkStatus();
  }

  // Runs one case; the outcome and detail go into `report`. Returns whether
  // the port must be restarted afterwards.
  bool RunCase(const vectors::LoadedCase& loaded, CaseReport& report) {
    // The replay line: the runner binary itself where it is known (it runs
    // as printed, in or out of a checkout), and the `bazel run` form. Case
    // IDs need no quoting: they are [a-z0-9/.-] (spec/vectors.md#cases).
    const std::string in_checkout =
        absl::StrFormat("bazel run -c opt //conformance:runner -- --port=%s --case=%s",
                        ShellQuote(options_.port_command),
                        loaded.vector->id());
    report.replay = options_.replay_prefix.empty()
                        ? in_checkout
                        : options_.replay_prefix + " --case=" + loaded.vector->id();
    const std::string replay =
        options_.replay_prefix.empty()
            ? in_checkout
            : report.replay + "\n  in a checkout: " + in_checkout;
    if (port_->HasOutputOutOfTurn()) {
      return Broken(report, Outcome::kProtocolError,
                    "the port wrote to stdout out of turn before this case");
    }
    const uint64_t seq = ++seq_;
    switch (port_->Send(RequestPayload(loaded, seq, options_.compare_cut),
                        options_.timeout_seconds)) {
      case PortProcess::Sent::kSent:
        break;
      case PortProcess::Sent::kClosed:
        return Broken(report, Outcome::kCrash,
                      "the port closed stdin or exited before taking the request");
      case PortProcess::Sent::kTimeout:
        // Alive but not reading: it is stuck, not dead.
        return Broken(report, Outcome::kTimeout,
                      absl::StrFormat("the port did not read the request within %g s",
                                      options_.timeout_seconds));
    }
    std::string frame;
    switch (port_->Receive(options_.timeout_seconds, frame)) {
      case PortProcess::Received::kFrame:
        break;
      case PortProcess::Received::kEof:
        return Broken(report, Outcome::kCrash,
                      "the port exited or closed stdout before replying");
      case PortProcess::Received::kTimeout:
        return Broken(report, Outcome::kTimeout,
                      port_->timeout_detail());
      case PortProcess::Received::kTooLarge:
        return Broken(report, Outcome::kProtocolError,
                      absl::StrFormat("a frame declared %d bytes, over the cap of %d "
                                      "(an oversized reply, garbage, or bytes "
                                      "written out of turn)",
                                      port_->declared_length(),
                                      options_.max_frame_bytes));
    }
    v1::PortMessage reply;
    if (!reply.ParseFromString(frame)) {
      return Broken(report, Outcome::kProtocolError,
                    absl::StrFormat("a %d-byte frame that is not a PortMessage "
                                    "(or one of its strings is not valid UTF-8, "
                                    "which proto3 refuses)",
                                    frame.size()));
    }
    if (!reply.has_response()) {
      return Broken(report, Outcome::kProtocolError,
                    "a frame of the wrong type (expected a Response)");
    }
    const v1::Response& response = reply.response();
    if (response.seq() != seq) {
      return Broken(report, Outcome::kProtocolError,
                    absl::StrFormat("a response with sequence number %d, expected %d",
                                    response.seq(), seq));
    }
    switch (response.result_case()) {
      case v1::Response::kLog: {
        Divergence divergence;
        // --nocut: both sides without cuts (a port asked for none may
        // still send some; they are not judged either).
        report.outcome =
            options_.compare_cut
                ? CompareLogs(loaded.vector->expected(), response.log(), replay,
                              report.detail, &divergence, compare_subjects_)
                : CompareLogs(WithoutCuts(loaded.vector->expected()),
                              WithoutCuts(response.log()), replay, report.detail,
                              &divergence, compare_subjects_);
        // spec/protocol.md#precision: a difference at a step, from a port
        // judged within its bound.
        if (report.outcome != Outcome::kPass && judged_within_bound_ &&
            divergence.step >= 0) {
          JudgePrecision(loaded, response.log(), report);
        }
        if (report.outcome == Outcome::kPass) {
          report.replay.clear();
        } else {
          report.divergence = divergence;
        }
        return false;
      }
      case v1::Response::kSkipped:
        report.outcome = Outcome::kSkipped;
        report.detail = PortText(response.skipped().reason());
        return false;
      case v1::Response::kError:
        report.outcome = Outcome::kError;
        report.detail = PortText(response.error().message()) + "\n  replay: " + replay;
        return false;
      case v1::Response::RESULT_NOT_SET:
        break;
    }
    return Broken(report, Outcome::kProtocolError, "a response with no result");
  }

  void Stop() { port_.reset(); }

  const PortPrecision& precision() const { return precision_; }
  bool judged_within_bound() const { return judged_within_bound_; }

 private:
  absl::Status Fail(const std::string& why) {
    port_->Kill();
    return absl::FailedPreconditionError(absl::StrFormat(
        "port '%s': %s; it %s. Its stderr ended with:\n%s", options_.port_command,
        why, port_->ExitDescription(), port_->stderr_tail()));
  }

  void JudgePrecision(const vectors::LoadedCase& loaded, const kvspec::v1::EvictionLog& log,
                      CaseReport& report) {
    const PrecisionJudgement judged =
        JudgeWithinPrecision(loaded, log, precision_, options_.compare_cut);
    switch (judged.verdict) {
      case PrecisionVerdict::kExact:
        report.detail += absl::StrFormat(
            "\n  the case is exact at %s (spec/arithmetic.md#exact-cases): judged bit "
            "for bit", PortPrecisionName(precision_));
        return;
      case PrecisionVerdict::kPass:
        report.outcome = Outcome::kPass;
        report.within_bound = true;
        report.detail.clear();
        return;
      case PrecisionVerdict::kWithin:
        report.outcome = Outcome::kWithinPrecision;
        report.detail = judged.detail + "\n  replay: " + report.replay;
        return;
      case PrecisionVerdict::kMismatch:
        report.detail += "\n  judged within the bound of " +
                         PortPrecisionName(precision_) + ": " + judged.detail;
        return;
    }
  }

  bool Broken(CaseReport& report, Outcome outcome, const std::string& why) {
    port_->Kill();
    report.outcome = outcome;
    report.detail = absl::StrFormat("%s; the port %s. Tail of its stderr:\n%s", why,
                                    port_->ExitDescription(), port_->stderr_tail());
    return true;
  }

  const RunnerOptions& options_;
  std::unique_ptr<PortProcess> port_;
  uint64_t seq_ = 0;
  // spec/harness.md#subjects: judged for a port of 0.11.0 or later.
  bool compare_subjects_ = true;
  // spec/protocol.md#precision: from the hello.
  PortPrecision precision_;
  bool judged_within_bound_ = false;
};

}  // namespace


std::set<std::string> PortFeatures(const v1::HelloReply& hello) {
  if (hello.features().empty()) return vectors::FeaturesOfVersion(hello.spec_version());
  return std::set<std::string>(hello.features().begin(), hello.features().end());
}

std::string NotRunReason(const v1::HelloReply& hello,
                         const std::set<std::string>& port_features,
                         const std::string& policy,
                         const std::vector<std::string>& features,
                         const std::string& since) {
  const auto& supported = hello.policies();
  if (std::find(supported.begin(), supported.end(), policy) == supported.end() &&
      IsRegistered(policy)) {
    return "needs policy " + policy + ", which the port's hello does not list";
  }
  std::vector<std::string> missing;
  for (const std::string& feature : features) {
    if (port_features.count(feature) == 0) missing.push_back(feature);
  }
  if (!missing.empty()) {
    return absl::StrFormat("needs %s %s, which the port does not implement",
                           missing.size() == 1 ? "feature" : "features",
                           absl::StrJoin(missing, ", "));
  }
  if (vectors::CompareVersions(since, hello.spec_version()) > 0) {
    return absl::StrFormat("its outcome was set in spec %s; the port follows spec %s",
                           since, hello.spec_version());
  }
  return "";
}

absl::StatusOr<RunReport> RunConformance(const vectors::VectorSet& set,
                                         const RunnerOptions& options) {
  RunReport report;
  report.suite_spec_version = set.manifest.spec_version();
  report.cut_compared = options.compare_cut;
  std::vector<const vectors::LoadedCase*> selected;
  for (const vectors::LoadedCase& c : set.cases) {
    const std::string& id = c.vector->id();
    if (!options.case_pattern.empty() && !MatchesPattern(id, options.case_pattern)) {
      report.excluded.push_back({id, "not selected by --case=" + options.case_pattern});
    } else if (!options.policy.empty() && c.vector->policy().name() != options.policy) {
      report.excluded.push_back({id, "not selected by --policy=" + options.policy});
    } else {
      selected.push_back(&c);
    }
  }
  // A run that can judge nothing is a mistake in its options, said before
  // the port is started.
  if (options.shard_total < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_total) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shard %d of %d: the shard index must be in [0, %d) "
        "(TEST_SHARD_INDEX, TEST_TOTAL_SHARDS)",
        options.shard_index, options.shard_total, options.shard_total));
  }
  if (selected.empty()) {
    std::vector<std::string> by;
    if (!options.case_pattern.empty()) by.push_back("--case=" + options.case_pattern);
    if (!options.policy.empty()) by.push_back("--policy=" + options.policy);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s selects none of the %d cases; nothing to run",
        by.empty() ? std::string("the selection") : absl::StrJoin(by, " with "),
        set.cases.size()));
  }
  std::vector<const vectors::LoadedCase*> mine;
  for (size_t i = 0; i < selected.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(options.shard_total)) ==
        options.shard_index) {
      mine.push_back(selected[i]);
    } else {
      report.excluded.push_back({selected[i]->vector->id(),
                                 absl::StrFormat("in another shard (of %d)",
                                                 options.shard_total)});
    }
  }
  const auto run_start = std::chrono::steady_clock::now();
  Session session(options);
  if (absl::Status status = session.Start(&report.hello); !status.ok()) return status;
  report.precision = session.precision();
  report.judged_within_bound = session.judged_within_bound();
  // spec/protocol.md#features: what the port implements.
  const std::string& port_version = report.hello.spec_version();
  if (!vectors::ParseVersion(port_version).has_value()) {
    session.Stop();
    return absl::FailedPreconditionError(absl::StrFormat(
        "port '%s': its hello declares spec version '%s', which is not "
        "MAJOR.MINOR.PATCH (spec/README.md#versioning); nothing was run",
        options.port_command, port_version));
  }
  report.port_features = PortFeatures(report.hello);
  if (report.hello.features().empty()) {
    report.features_source = "none declared: those of spec " + port_version;
  } else {
    for (const std::string& name : report.hello.features()) {
      if (vectors::FindFeature(name) == nullptr) report.unknown_features.push_back(name);
    }
    report.features_source = "declared by the port";
  }
  int failures_in_a_row = 0;
  int failures = 0;
  bool abandoned = false;
  // Why the port was abandoned: failures in a row, or a restart that failed.
  std::string abandoned_because;
  bool stopped = false;
  for (size_t i = 0; i < mine.size(); ++i) {
    const vectors::LoadedCase& loaded = *mine[i];
    CaseReport case_report;
    case_report.id = loaded.vector->id();
    case_report.policy = loaded.vector->policy().name();
    case_report.features.assign(loaded.vector->features().begin(),
                                loaded.vector->features().end());
    case_report.since = loaded.vector->since();
    case_report.description = loaded.vector->description();
    case_report.flags.assign(loaded.vector->flags().begin(), loaded.vector->flags().end());
    case_report.configuration = ConfigurationText(loaded.vector->policy());
    const std::string not_run =
        NotRunReason(report.hello, report.port_features, case_report.policy,
                     case_report.features, case_report.since);
    const auto start = std::chrono::steady_clock::now();
    if (abandoned) {
      case_report.outcome = Outcome::kNotReached;
      case_report.detail = abandoned_because;
    } else if (stopped) {
      case_report.outcome = Outcome::kNotReached;
      case_report.detail = absl::StrFormat(
          "stopped after %d failures (--stop_after_failures)", failures);
    } else if (!not_run.empty()) {
      case_report.outcome = Outcome::kNotRun;
      case_report.detail = not_run;
    } else if (session.RunCase(loaded, case_report)) {
      ++failures_in_a_row;
      if (failures_in_a_row >= options.max_restarts) {
        abandoned = true;
        abandoned_because = absl::StrFormat(
            "the port was abandoned after %d failures in a row", failures_in_a_row);
        session.Stop();
      } else {
        v1::HelloReply again;
        if (absl::Status restarted = session.Start(&again); !restarted.ok()) {
          abandoned = true;
          abandoned_because = absl::StrFormat(
              "the port was abandoned: its restart after case %s failed: %s",
              case_report.id, restarted.message());
          session.Stop();
        }
      }
    } else {
      failures_in_a_row = 0;
    }
    case_report.seconds = Seconds(start);
    if (case_report.outcome != Outcome::kPass &&
        case_report.outcome != Outcome::kWithinPrecision &&
        case_report.outcome != Outcome::kSkipped &&
        case_report.outcome != Outcome::kNotRun &&
        case_report.outcome != Outcome::kNotReached) {
      ++failures;
      if (options.stop_after_failures > 0 && failures >= options.stop_after_failures) {
        stopped = true;
      }
    }
    report.cases.push_back(std::move(case_report));
    if (options.progress) options.progress(i + 1, mine.size());
  }
  session.Stop();
  report.seconds = Seconds(run_start);
  return report;
}

}  // namespace conformance
}  // namespace kvspec
