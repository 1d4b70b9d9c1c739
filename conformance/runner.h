// The conformance runner: runs vector cases against a port over the protocol
// of spec/protocol.md and gives each case one outcome. A misbehaving port
// costs the case it misbehaved on, never the run: the port is restarted,
// and abandoned only after --max_restarts failures in a row.
#ifndef KVSPEC_CONFORMANCE_RUNNER_H_
#define KVSPEC_CONFORMANCE_RUNNER_H_

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/precision.h"
#include "spec/conformance.pb.h"
#include "tools/vectors/load.h"

namespace kvspec {
namespace conformance {

inline constexpr uint32_t kProtocolVersion = 1;

// spec/protocol.md#outcomes.
enum class Outcome {
  kPass,
  // spec/protocol.md#precision: a port of lower precision whose log first
  // departs from the vector's where its precision cannot decide, by
  // exchanging positions inside the band. Counted apart; not a failure.
  kWithinPrecision,
  kMismatch,
  kWrongAccept,
  kWrongReject,
  kSkipped,
  kError,
  kCrash,
  kTimeout,
  kProtocolError,
  // Not sent: the case needs a feature the port does not declare, or its
  // outcome was set in a spec version after the port's
  // (spec/protocol.md#features). Counted apart; a failure only with
  // --require_all.
  kNotRun,
  // Not sent: the port was abandoned, or the run stopped
  // (--stop_after_failures), before this case. A failure.
  kNotReached,
};

// "pass", "mismatch", "wrong accept", ... as in the spec's table.
std::string OutcomeName(Outcome outcome);
// The inverse, for expectation files ("wrong-accept" and "wrong accept" both
// parse). False for an unknown name.
bool ParseOutcome(const std::string& text, Outcome& outcome);

struct RunnerOptions {
  std::string port_command;
  // The command that reruns one case, with "--case=<id>" appended: the
  // runner binary by its absolute path, the vectors folder and the port, in
  // the directory the port command is resolved from. Empty: a `bazel run`
  // line (for callers that are not the runner binary).
  std::string replay_prefix;
  double timeout_seconds = 60.0;
  size_t max_frame_bytes = size_t{64} << 20;
  int max_restarts = 3;
  // Run only cases whose ID matches (exact, or a prefix ending in "/*").
  std::string case_pattern;
  // Run only cases of this policy.
  std::string policy;
  // Sharding (Bazel's TEST_TOTAL_SHARDS / TEST_SHARD_INDEX): case i of the
  // selected list runs when i % shard_total == shard_index.
  int shard_total = 1;
  int shard_index = 0;
  // Stop after this many cases that did not pass (0: never); the rest are
  // reported as not run. For mutant runs, where one failure is the answer.
  int stop_after_failures = 0;
  // Every case the port cannot run (kNotRun) is a failure
  // (spec/protocol.md#features). The bundled ports run with it.
  bool require_all = false;
  // Ask for and compare each score-based eviction's cut
  // (spec/protocol.md#outcomes). false (--nocut): requests carry
  // `want_cut` false and logs are compared with every cut left out, for an
  // engine adapter whose engine computes no ranking it could report
  // (conformance/engines/README.md); the reports say so.
  bool compare_cut = true;
  // spec/protocol.md#precision: a port that declares binary64 (or nothing)
  // is judged bit for bit, and never `within precision`. false
  // (--nostrict_binary64): judged within binary64's bound, like a port of
  // lower precision, for one that sums in another order.
  bool strict_binary64 = true;
  // Called after each case (progress reports).
  std::function<void(size_t done, size_t total)> progress;
};

// Where a port's log first departs from the vector's (spec/protocol.md's
// `pass` rule), for reports a porter triages from.
struct Divergence {
  // The first step whose record differs, or -1 when every step both ran
  // agrees and the difference is in the number of steps or the rejection.
  int step = -1;
  kvspec::v1::StepResult expected, actual;  // that step's records
  // With several kept sets (spec/heads.md#the-eviction-log): the first set
  // whose records differ, and `expected`/`actual` are that set's records;
  // -1 otherwise (or when the numbers of sets differ).
  int set = -1;
  // Index of the first differing victim, or -1 if the victims agree.
  int victim_index = -1;
  // Rank of the first differing cut entry (position or score bits), or -1.
  int cut_rank = -1;
  // "INVALID_PARAMETER (range budget) at step -1", or "no rejection"; the
  // subject only when subjects are compared.
  std::string expected_rejection, actual_rejection;
  int expected_steps = 0, actual_steps = 0;
};

struct CaseReport {
  std::string id;
  std::string policy;
  Outcome outcome = Outcome::kNotRun;
  // Empty for a pass; otherwise what went wrong, several lines.
  std::string detail;
  double seconds = 0.0;
  // For a mismatch, wrong accept or wrong reject: where the logs part.
  std::optional<Divergence> divergence;
  // The command line that reruns this case alone (empty for a pass).
  std::string replay;
  // The case's features and `since` (spec/features.md), for reports.
  std::vector<std::string> features;
  std::string since;
  // What a porter triaging a failure reads first: the case's description,
  // flags, and policy configuration ("budget=4, sinks=2; seed 7").
  std::string description;
  std::vector<std::string> flags;
  std::string configuration;
  // A pass whose cut scores agree within the port's bound, not bit for bit
  // (spec/protocol.md#precision).
  bool within_bound = false;
};

struct Exclusion {
  std::string id;
  std::string reason;
};

struct RunReport {
  // The spec version of the vectors that were run (their manifest's).
  std::string suite_spec_version;
  // The port's hello, its names made safe (conformance/port_text.h).
  v1::HelloReply hello;
  // The features the runner takes the port to implement: its hello's list,
  // or, when that is empty, those of its spec version
  // (spec/protocol.md#features); how it got them, for the report; and the
  // names in its hello that spec/features.md does not have.
  std::set<std::string> port_features;
  std::string features_source;
  std::vector<std::string> unknown_features;
  // RunnerOptions::compare_cut: false when the run left cuts out (--nocut).
  bool cut_compared = true;
  // spec/protocol.md#precision: what the port declared, and whether the
  // run judged it within its bound (a precision below binary64, or
  // --nostrict_binary64) rather than bit for bit.
  PortPrecision precision;
  bool judged_within_bound = false;
  // Wall time of the whole run, port start-up included.
  double seconds = 0.0;
  std::vector<CaseReport> cases;
  std::vector<Exclusion> excluded;
};

// Matches a case ID against a pattern: exact, or a prefix ending in "/*".
bool MatchesPattern(const std::string& id, const std::string& pattern);

// Compares a port's log with a vector's expected log (spec/protocol.md's
// `pass` rule) and explains the first difference: the step, the first
// differing victim and cut entry marked, long lists cut around them. `replay`
// is the one-line command that reruns the case alone. `divergence`, when
// given, receives the same in structured form (unchanged on a pass).
// `compare_subjects`: compare a rejection's subject too
// (spec/harness.md#subjects), for a port of spec 0.11.0 or later.
Outcome CompareLogs(const kvspec::v1::EvictionLog& expected,
                    const kvspec::v1::EvictionLog& actual,
                    const std::string& replay, std::string& detail,
                    Divergence* divergence = nullptr,
                    bool compare_subjects = true);

// The spec version since which a rejection carries its subject
// (spec/harness.md#subjects), and whether a port declaring
// `port_spec_version` is judged on it: false for an older or malformed one.
inline constexpr char kSubjectsSince[] = "0.11.0";
bool ComparesSubjects(const std::string& port_spec_version);

// `text` quoted for /bin/sh: in single quotes, each ' written as '\''.
std::string ShellQuote(const std::string& text);

// spec/protocol.md#features: the features a port implements, its hello's
// list, or those of its spec version when the list is empty.
std::set<std::string> PortFeatures(const v1::HelloReply& hello);

// Why a case is not run against a port (its policy not in the hello, a
// feature the port does not implement, an outcome set in a later spec than
// the port's), or "" when it is run. The runner's rule; the search
// generates only cases for which it is "".
std::string NotRunReason(const v1::HelloReply& hello,
                         const std::set<std::string>& port_features,
                         const std::string& policy,
                         const std::vector<std::string>& features,
                         const std::string& since);

// Runs the selected cases. Refuses (FailedPrecondition) a port that cannot
// be started, fails the handshake, or speaks another protocol version:
// nothing is run then.
absl::StatusOr<RunReport> RunConformance(const vectors::VectorSet& set,
                                         const RunnerOptions& options);

// The request frame payload the runner would send for `loaded` (with
// sequence number 1), for --dump.
std::string RequestPayload(const vectors::LoadedCase& loaded, uint64_t seq,
                           bool want_cut = true);

// `log` with every cut left out (each step's, each kept set's): what a log
// is compared as when cuts are not (RunnerOptions::compare_cut false).
kvspec::v1::EvictionLog WithoutCuts(kvspec::v1::EvictionLog log);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_RUNNER_H_
