// Expectation files (spec/protocol.md#expectations): which cases a port is
// known to fail, and why. A new failure, an unexpected pass and a stale
// entry each fail the run.
#ifndef KVSPEC_CONFORMANCE_EXPECTATIONS_H_
#define KVSPEC_CONFORMANCE_EXPECTATIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "conformance/runner.h"

namespace kvspec {
namespace conformance {

struct Expectation {
  std::string pattern;  // a case ID, or a prefix ending in "/*"
  Outcome outcome = Outcome::kPass;
  std::string reason;
  int line = 0;
};

// Parses `text` (the contents of `path`). Refuses (InvalidArgument, naming
// the file and line) an entry without an outcome or a reason, an unknown
// outcome, or a pattern given twice.
absl::StatusOr<std::vector<Expectation>> ParseExpectations(
    const std::string& text, const std::string& path);

struct Verdict {
  // Each problem that fails the run.
  std::vector<std::string> failures;
  // Cases whose (non-pass) outcome an entry expected.
  int expected_failures = 0;
  // Cases not run, and whether they count as failures (--require_all).
  int not_run = 0;
  bool require_all = false;
};

// Judges a run against the expectations. Cases excluded by the selection
// are neither checked nor counted, and so are cases `not run` because the
// port lacks what they need (spec/protocol.md#features), unless
// `require_all`: then each is a failure. An entry that matches no case that
// ran, or was not run, is stale.
Verdict Judge(const RunReport& report, const std::vector<Expectation>& expectations,
              bool require_all = false);

}  // namespace conformance
}  // namespace kvspec

#endif  // KVSPEC_CONFORMANCE_EXPECTATIONS_H_
