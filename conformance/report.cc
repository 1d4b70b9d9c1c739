#include "conformance/report.h"

#include <map>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace kvspec {
namespace conformance {
namespace {

struct Counts {
  int passed = 0, failed = 0, skipped = 0;
};

Counts Count(const RunReport& report, const std::string& policy) {
  Counts counts;
  for (const CaseReport& c : report.cases) {
    if (!policy.empty() && c.policy != policy) continue;
    if (c.outcome == Outcome::kPass) {
      ++counts.passed;
    } else if (c.outcome == Outcome::kSkipped) {
      ++counts.skipped;
    } else {
      ++counts.failed;
    }
  }
  return counts;
}

std::string Xml(const std::string& text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"},
                                    {"\"", "&quot;"}, {"'", "&apos;"}});
}

std::string Json(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string TextReport(const RunReport& report, const Verdict& verdict) {
  std::string text = absl::StrFormat(
      "port: %s (%s %s), protocol %d, spec %s\n\n", report.hello.port_name(),
      report.hello.language(), report.hello.port_version(),
      report.hello.protocol_version(), report.hello.spec_version());
  std::map<std::string, bool> policies;
  for (const CaseReport& c : report.cases) policies[c.policy] = true;
  text += absl::StrFormat("| %-14s | %6s | %6s | %7s |\n", "policy", "passed",
                          "failed", "skipped");
  text += "| -------------- | -----: | -----: | ------: |\n";
  for (const auto& [policy, unused] : policies) {
    const Counts counts = Count(report, policy);
    text += absl::StrFormat("| %-14s | %6d | %6d | %7d |\n", policy, counts.passed,
                            counts.failed, counts.skipped);
  }
  text += "\n";
  for (const CaseReport& c : report.cases) {
    if (c.outcome == Outcome::kPass) continue;
    text += absl::StrFormat("%s: %s\n", c.id, OutcomeName(c.outcome));
    if (!c.detail.empty()) text += "  " + absl::StrReplaceAll(c.detail, {{"\n", "\n  "}}) + "\n";
  }
  std::map<std::string, int> reasons;
  for (const Exclusion& e : report.excluded) ++reasons[e.reason];
  for (const auto& [reason, n] : reasons) {
    text += absl::StrFormat("excluded: %d cases %s\n", n, reason);
  }
  for (const std::string& failure : verdict.failures) text += "FAIL: " + failure + "\n";
  const Counts all = Count(report, "");
  text += absl::StrFormat(
      "%d cases run, %d excluded; %d failures expected by the expectation file, "
      "%d unexpected outcomes\n",
      report.cases.size(), report.excluded.size(), verdict.expected_failures,
      verdict.failures.size());
  text += absl::StrFormat("%d passed, %d failed, %d skipped\n", all.passed,
                          all.failed, all.skipped);
  return text;
}

std::string JUnitXml(const RunReport& report) {
  const Counts all = Count(report, "");
  double seconds = 0;
  for (const CaseReport& c : report.cases) seconds += c.seconds;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += absl::StrFormat(
      "<testsuites tests=\"%d\" failures=\"%d\" skipped=\"%d\" time=\"%.3f\">\n"
      "  <testsuite name=\"kvspec-conformance %s\" tests=\"%d\" failures=\"%d\" "
      "skipped=\"%d\" time=\"%.3f\">\n",
      report.cases.size(), all.failed, all.skipped, seconds,
      Xml(report.hello.port_name()), report.cases.size(), all.failed, all.skipped,
      seconds);
  for (const CaseReport& c : report.cases) {
    xml += absl::StrFormat("    <testcase name=\"%s\" classname=\"%s\" time=\"%.3f\"",
                           Xml(c.id), Xml(c.policy), c.seconds);
    if (c.outcome == Outcome::kPass) {
      xml += "/>\n";
    } else if (c.outcome == Outcome::kSkipped) {
      xml += absl::StrFormat("><skipped message=\"%s\"/></testcase>\n", Xml(c.detail));
    } else {
      xml += absl::StrFormat("><failure message=\"%s\">%s</failure></testcase>\n",
                             Xml(OutcomeName(c.outcome)), Xml(c.detail));
    }
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string JsonSummary(const RunReport& report, const Verdict& verdict) {
  const Counts all = Count(report, "");
  std::string json = "{\n";
  json += absl::StrFormat("  \"port\": %s,\n  \"language\": %s,\n",
                          Json(report.hello.port_name()),
                          Json(report.hello.language()));
  json += absl::StrFormat(
      "  \"passed\": %d,\n  \"failed\": %d,\n  \"skipped\": %d,\n  \"excluded\": %d,\n"
      "  \"unexpected\": %d,\n  \"cases\": [\n",
      all.passed, all.failed, all.skipped, report.excluded.size(),
      verdict.failures.size());
  for (size_t i = 0; i < report.cases.size(); ++i) {
    const CaseReport& c = report.cases[i];
    json += absl::StrFormat(
        "    {\"id\": %s, \"policy\": %s, \"outcome\": %s, \"seconds\": %.6f}%s\n",
        Json(c.id), Json(c.policy), Json(OutcomeName(c.outcome)), c.seconds,
        i + 1 < report.cases.size() ? "," : "");
  }
  json += "  ]\n}\n";
  return json;
}

}  // namespace conformance
}  // namespace kvspec
