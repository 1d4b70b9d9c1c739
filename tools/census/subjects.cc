#include "tools/census/subjects.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cc/errors.h"
#include "cc/registry.h"
#include "spec/kvspec.pb.h"

namespace kvspec {
namespace audit {
namespace {

// The backticked tokens of `text`, in order.
std::vector<std::string> Backticked(absl::string_view text) {
  std::vector<std::string> tokens;
  const std::vector<absl::string_view> parts = absl::StrSplit(text, '`');
  for (size_t i = 1; i < parts.size(); i += 2) tokens.emplace_back(parts[i]);
  return tokens;
}

// The reference's text of a subject ("range budget"), cc/errors.h.
std::string TextOf(const v1::Subject& subject) {
  return SubjectText(
      Subject{subject.check(), {subject.names().begin(), subject.names().end()}});
}

}  // namespace

std::set<std::string> RuleSubjects(const std::string& harness_md) {
  std::set<std::string> subjects;
  const size_t section = harness_md.find("\n## Subjects\n");
  if (section == std::string::npos) return subjects;
  const size_t end = harness_md.find("\n## ", section + 1);
  const std::string text = harness_md.substr(section, end - section);
  // The table whose header is "| rule | subject |".
  const size_t table = text.find("| rule | subject |");
  if (table == std::string::npos) return subjects;
  std::istringstream lines(text.substr(table));
  std::string line;
  std::getline(lines, line);  // header
  std::getline(lines, line);  // | --- | --- |
  while (std::getline(lines, line) && absl::StartsWith(line, "|")) {
    const std::vector<std::string> cells = absl::StrSplit(line, '|');
    if (cells.size() < 4) continue;
    const std::string& cell = cells[2];
    const size_t alternatives = cell.find("(or ");
    const std::vector<std::string> main =
        Backticked(absl::string_view(cell).substr(0, alternatives));
    if (main.empty()) continue;
    subjects.insert(main[0]);
    if (alternatives == std::string::npos) continue;
    const size_t last_space = main[0].rfind(' ');
    for (const std::string& other :
         Backticked(absl::string_view(cell).substr(alternatives))) {
      subjects.insert(main[0].substr(0, last_space + 1) + other);
    }
  }
  return subjects;
}

std::set<std::string> SpecSubjects(const std::string& harness_md) {
  std::set<std::string> subjects = RuleSubjects(harness_md);
  // The first table, rows about the configuration: a policy name, and a
  // parameter unknown, repeated (the suite's case repeats budget) or out of
  // range, for every parameter of every registered policy.
  subjects.insert("unknown name");
  subjects.insert("repeated budget");
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      subjects.insert("unknown " + p.name);
      subjects.insert("range " + p.name);
    }
  }
  // A trace parameter out of its range: every TraceConfig field but seed.
  const auto* trace = v1::TraceConfig::descriptor();
  for (int i = 0; i < trace->field_count(); ++i) {
    if (trace->field(i)->name() == "seed") continue;
    subjects.insert("range trace." + trace->field(i)->name());
  }
  // The scenario's and the step's rows.
  for (const char* s :
       {"rule steps trace", "range query_heads", "range kv_heads",
        "rule kv_heads query_heads", "range admit", "rule admit",
        "length attention", "length heads", "length queries", "length totals",
        "length total_rows", "value attention", "value heads", "value queries",
        "value totals",
        // spec/tensors.md#checks (0.16.0).
        "range head_dim", "rule head_dim trace", "length keys", "value keys",
        // spec/tensors.md#checks (0.18.0).
        "range value_dim", "rule value_dim trace", "length values",
        "value values"}) {
    subjects.insert(s);
  }
  return subjects;
}

int CheckSubjects(const vectors::VectorSet& set, const std::string& spec_dir,
                  std::vector<std::string>& failures) {
  const std::string path = spec_dir + "/harness.md";
  std::ifstream in(path);
  if (!in) {
    failures.push_back("subjects: cannot read " + path);
    return 0;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string harness = buffer.str();
  if (RuleSubjects(harness).empty()) {
    failures.push_back("subjects: " + path +
                       " has no \"## Subjects\" section with a \"| rule | "
                       "subject |\" table");
    return 0;
  }
  const std::set<std::string> spec = SpecSubjects(harness);
  std::set<std::string> seen;
  for (const vectors::LoadedCase& c : set.cases) {
    const v1::EvictionLog& log = c.vector->expected();
    if (!log.has_rejection()) continue;
    const std::string subject = TextOf(log.rejection().subject());
    seen.insert(subject);
    // Any name can be unknown: `bogus`, `Budget`, another policy's.
    const bool unknown_parameter =
        log.rejection().category() == v1::INVALID_PARAMETER &&
        log.rejection().subject().check() == "unknown" &&
        log.rejection().subject().names_size() == 1;
    if (spec.count(subject) == 0 && !unknown_parameter) {
      failures.push_back(absl::StrFormat(
          "subjects: case %s is refused with subject `%s`, which "
          "spec/harness.md#subjects does not give",
          c.vector->id(), subject));
    }
  }
  for (const std::string& subject : spec) {
    if (seen.count(subject) == 0) {
      failures.push_back(absl::StrFormat(
          "subjects: no case is refused with subject `%s` "
          "(spec/harness.md#subjects)",
          subject));
    }
  }
  return static_cast<int>(seen.size());
}

}  // namespace audit
}  // namespace kvspec
