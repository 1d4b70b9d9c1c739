#include "conformance/expectations.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kvspec {
namespace conformance {

absl::StatusOr<std::vector<Expectation>> ParseExpectations(
    const std::string& text, const std::string& path) {
  std::vector<Expectation> entries;
  std::set<std::string> patterns;
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    std::string line(raw.substr(0, raw.find('#')));
    absl::StripAsciiWhitespace(&line);
    if (line.empty()) continue;
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    // The outcome may be two words ("wrong accept"); try two, then one.
    Expectation entry;
    entry.pattern = words[0];
    entry.line = line_number;
    size_t reason_start = 0;
    if (words.size() >= 3 && ParseOutcome(words[1] + " " + words[2], entry.outcome)) {
      reason_start = 3;
    } else if (words.size() >= 2 && ParseOutcome(words[1], entry.outcome)) {
      reason_start = 2;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: expected '<case id or prefix/*> <outcome> <reason>', with an "
          "outcome such as mismatch, wrong-accept or skipped",
          path, line_number));
    }
    if (reason_start >= words.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: the entry for %s has no reason", path, line_number, entry.pattern));
    }
    if (entry.outcome == Outcome::kPass) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: 'pass' is what every case is expected to do; remove the entry",
          path, line_number));
    }
    std::vector<std::string> reason(words.begin() + static_cast<long>(reason_start),
                                    words.end());
    entry.reason = absl::StrJoin(reason, " ");
    if (!patterns.insert(entry.pattern).second) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: %s is given twice", path, line_number, entry.pattern));
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Verdict Judge(const RunReport& report, const std::vector<Expectation>& expectations,
              bool require_all) {
  Verdict verdict;
  verdict.require_all = require_all;
  std::vector<bool> used(expectations.size(), false);
  for (const CaseReport& c : report.cases) {
    if (c.outcome == Outcome::kNotRun) {
      // spec/protocol.md#features: not the port's fault, unless every case
      // must run. An entry that matches it is not stale.
      ++verdict.not_run;
      for (size_t i = 0; i < expectations.size(); ++i) {
        if (MatchesPattern(c.id, expectations[i].pattern)) used[i] = true;
      }
      if (require_all) {
        verdict.failures.push_back(
            absl::StrFormat("not run: %s: %s (--require_all)", c.id, c.detail));
      }
      continue;
    }
    // An exact ID wins over a pattern; among patterns, the longest.
    int best = -1;
    for (size_t i = 0; i < expectations.size(); ++i) {
      if (!MatchesPattern(c.id, expectations[i].pattern)) continue;
      if (best < 0 || expectations[i].pattern.size() >
                          expectations[static_cast<size_t>(best)].pattern.size()) {
        best = static_cast<int>(i);
      }
    }
    const Outcome expected =
        best < 0 ? Outcome::kPass : expectations[static_cast<size_t>(best)].outcome;
    if (best >= 0) used[static_cast<size_t>(best)] = true;
    if (c.outcome == expected) {
      if (expected != Outcome::kPass) ++verdict.expected_failures;
      continue;
    }
    // spec/protocol.md#precision: counted apart, never a failure.
    if (c.outcome == Outcome::kWithinPrecision && expected == Outcome::kPass) continue;
    if (expected == Outcome::kPass) {
      verdict.failures.push_back(absl::StrFormat(
          "new failure: %s: %s", c.id, OutcomeName(c.outcome)));
    } else if (c.outcome == Outcome::kPass) {
      verdict.failures.push_back(absl::StrFormat(
          "unexpected pass: %s (line %d expected %s: %s)", c.id,
          expectations[static_cast<size_t>(best)].line, OutcomeName(expected),
          expectations[static_cast<size_t>(best)].reason));
    } else {
      verdict.failures.push_back(absl::StrFormat(
          "changed failure: %s: %s, but line %d expected %s", c.id,
          OutcomeName(c.outcome), expectations[static_cast<size_t>(best)].line,
          OutcomeName(expected)));
    }
  }
  // A run that judged nothing proves nothing: every case not run (a hello
  // declaring spec 0.0.0 or no policies) or skipped is an error, not a pass.
  int judged = 0, skipped = 0;
  for (const CaseReport& c : report.cases) {
    if (c.outcome == Outcome::kSkipped) {
      ++skipped;
    } else if (c.outcome != Outcome::kNotRun) {
      ++judged;
    }
  }
  if (judged == 0) {
    verdict.failures.push_back(absl::StrFormat(
        "no case was judged: of %d cases selected, %d not run and %d skipped by "
        "the port",
        report.cases.size(), verdict.not_run, skipped));
  }
  for (size_t i = 0; i < expectations.size(); ++i) {
    if (!used[i]) {
      verdict.failures.push_back(absl::StrFormat(
          "stale entry: line %d (%s) matches no case that ran",
          expectations[i].line, expectations[i].pattern));
    }
  }
  return verdict;
}

}  // namespace conformance
}  // namespace kvspec
