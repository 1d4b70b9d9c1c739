#include "conformance/report.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cc/text.h"

namespace kvspec {
namespace conformance {
namespace {

std::string Json(const std::string& text);

// One truth in every output: with --require_all a case not run is a
// failure, in the tables, the closing line, the JSON and the JUnit alike.
struct Counts {
  explicit Counts(bool require_all) : require_all(require_all) {}
  bool require_all;
  int passed = 0, within = 0, failed = 0, skipped = 0, not_run = 0;
  void Add(Outcome outcome) {
    if (outcome == Outcome::kPass) {
      ++passed;
    } else if (outcome == Outcome::kWithinPrecision) {
      ++within;
    } else if (outcome == Outcome::kSkipped) {
      ++skipped;
    } else if (outcome == Outcome::kNotRun && !require_all) {
      ++not_run;
    } else {
      ++failed;
    }
  }
};

Counts Count(const RunReport& report, bool require_all) {
  Counts counts(require_all);
  for (const CaseReport& c : report.cases) counts.Add(c.outcome);
  return counts;
}

// A case's features beyond `decode`, as a row label: "heads + prefill", or
// "decode" for a case that needs nothing else.
std::string FeatureLabel(const CaseReport& c) {
  std::vector<std::string> rest;
  for (const std::string& feature : c.features) {
    if (feature != "decode") rest.push_back(feature);
  }
  return rest.empty() ? "decode" : absl::StrJoin(rest, " + ");
}

std::string JsonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(Json(item));
  return "[" + absl::StrJoin(quoted, ", ") + "]";
}

// XML 1.0 allows no control character but tab, newline and carriage
// return, not even escaped: any other is written as "\xNN" text. (Port text
// has none left, conformance/port_text.h; this keeps the XML valid whatever
// reaches it.)
std::string Xml(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += absl::StrFormat("\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string Json(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string StepJson(const kvspec::v1::StepResult& step) {
  std::vector<std::string> victims, cut;
  for (uint32_t v : step.victims()) victims.push_back(absl::StrCat(v));
  for (const kvspec::v1::RankedPosition& r : step.cut()) {
    cut.push_back(absl::StrFormat(
        "{\"position\": %d, \"score\": %s, \"bits\": %s}", r.position(),
        Json(ShortestDecimal(r.score())), Json(HexBits(r.score()))));
  }
  // spec/spans.md#the-log, when the case logs spans.
  std::vector<std::string> spans, held;
  for (const kvspec::v1::QuerySpan& span : step.spans()) {
    spans.push_back("[" + absl::StrJoin(span.ranges(), ", ") + "]");
  }
  for (const kvspec::v1::HeldRun& run : step.held()) {
    held.push_back(absl::StrFormat("{\"first\": %d, \"last\": %d, \"id\": %d}",
                                   run.first(), run.last(), run.id()));
  }
  std::string span_fields;
  if (!spans.empty() || !held.empty()) {
    span_fields = absl::StrFormat(", \"spans\": [%s], \"held\": [%s]",
                                  absl::StrJoin(spans, ", "),
                                  absl::StrJoin(held, ", "));
  }
  return absl::StrFormat(
      "{\"victims\": [%s], \"kept_count\": %d, \"query_cache_position\": %d, "
      "\"cut\": [%s]%s}",
      absl::StrJoin(victims, ", "), step.kept_count(), step.query_cache_position(),
      absl::StrJoin(cut, ", "), span_fields);
}

// spec/protocol.md: what a porter needs to triage a failing case from the
// JSON alone: the first divergent step, both records there, and where in
// the victims and the cut they first differ.
std::string DivergenceJson(const Divergence& d) {
  std::string json = absl::StrFormat(
      "\"divergence\": {\"first_divergent_step\": %d, \"expected_steps\": %d, "
      "\"actual_steps\": %d, \"expected_rejection\": %s, "
      "\"actual_rejection\": %s",
      d.step, d.expected_steps, d.actual_steps, Json(d.expected_rejection),
      Json(d.actual_rejection));
  if (d.step >= 0) {
    json += absl::StrFormat(
        ",\n       \"first_differing_set\": %d, "
        "\"first_differing_victim_index\": %d, "
        "\"first_differing_cut_rank\": %d,\n       \"expected\": %s,\n"
        "       \"actual\": %s",
        d.set, d.victim_index, d.cut_rank, StepJson(d.expected),
        StepJson(d.actual));
  }
  return json + "}";
}

}  // namespace

std::string TextReport(const RunReport& report, const Verdict& verdict) {
  std::string text = absl::StrFormat(
      "suite: kvspec vectors of spec %s\n"
      "port: %s (%s %s), protocol %d, spec %s\n",
      report.suite_spec_version, report.hello.port_name(),
      report.hello.language(), report.hello.port_version(),
      report.hello.protocol_version(), report.hello.spec_version());
  text += absl::StrFormat(
      "features: %s (%s)\n",
      absl::StrJoin(report.port_features.begin(), report.port_features.end(), ", "),
      report.features_source);
  if (!report.unknown_features.empty()) {
    text += absl::StrFormat("features this runner does not know: %s\n",
                            absl::StrJoin(report.unknown_features, ", "));
  }
  if (!report.cut_compared) {
    text += "cuts: not asked for and not compared (--nocut): a pass here says "
            "nothing of the scores a port ranks by\n";
  }
  if (report.judged_within_bound) {
    text += absl::StrFormat(
        "precision: %s, judged within its bound (spec/protocol.md#precision)\n",
        PortPrecisionName(report.precision));
  }
  text += "\n";
  const bool within = report.judged_within_bound;
  const auto table = [&text, within](const std::string& label,
                                     const std::map<std::string, Counts>& rows) {
    int width = static_cast<int>(label.size());
    for (const auto& [name, counts] : rows) {
      width = std::max(width, static_cast<int>(name.size()));
    }
    text += absl::StrFormat("| %-*s | %6s |%s %6s | %7s | %7s |\n", width, label,
                            "passed", within ? " within precision |" : "", "failed",
                            "skipped", "not run");
    text += "| " + std::string(static_cast<size_t>(width), '-') + " | -----: |" +
            (within ? " ---------------: |" : "") + " -----: | ------: | ------: |\n";
    for (const auto& [name, counts] : rows) {
      text += absl::StrFormat("| %-*s | %6d |%s %6d | %7d | %7d |\n", width, name,
                              counts.passed,
                              within ? absl::StrFormat(" %16d |", counts.within) : "",
                              counts.failed, counts.skipped, counts.not_run);
    }
    text += "\n";
  };
  std::map<std::string, Counts> by_policy, by_feature;
  for (const CaseReport& c : report.cases) {
    by_policy.try_emplace(c.policy, verdict.require_all).first->second.Add(c.outcome);
    by_feature.try_emplace(FeatureLabel(c), verdict.require_all)
        .first->second.Add(c.outcome);
  }
  table("policy", by_policy);
  table("features (beyond decode)", by_feature);
  std::map<std::string, int> not_run;
  for (const CaseReport& c : report.cases) {
    if (c.outcome == Outcome::kNotRun) {
      ++not_run[c.detail];
      continue;
    }
    if (c.outcome == Outcome::kPass) continue;
    text += absl::StrFormat("%s: %s\n", c.id, OutcomeName(c.outcome));
    if (c.outcome != Outcome::kSkipped && c.outcome != Outcome::kNotReached) {
      text += absl::StrFormat("  case: %s\n  flags: %s; features: %s; since %s\n"
                              "  policy: %s (%s)\n",
                              c.description,
                              c.flags.empty() ? "none" : absl::StrJoin(c.flags, ", "),
                              absl::StrJoin(c.features, ", "), c.since, c.policy,
                              c.configuration);
    }
    if (!c.detail.empty()) text += "  " + absl::StrReplaceAll(c.detail, {{"\n", "\n  "}}) + "\n";
  }
  for (const auto& [reason, n] : not_run) {
    text += absl::StrFormat("not run: %d %s %s\n", n, n == 1 ? "case" : "cases", reason);
  }
  std::map<std::string, int> reasons;
  for (const Exclusion& e : report.excluded) ++reasons[e.reason];
  for (const auto& [reason, n] : reasons) {
    text += absl::StrFormat("excluded: %d cases %s\n", n, reason);
  }
  for (const std::string& failure : verdict.failures) text += "FAIL: " + failure + "\n";
  const Counts all = Count(report, verdict.require_all);
  text += absl::StrFormat(
      "%d cases, %d excluded; %d failures expected by the expectation file, "
      "%d unexpected outcomes; %.1f s\n",
      report.cases.size(), report.excluded.size(), verdict.expected_failures,
      verdict.failures.size(), report.seconds);
  // spec/protocol.md#precision: the within-precision count appears only
  // for a port judged within its bound, so a binary64 port's line is as
  // it always was.
  if (report.judged_within_bound) {
    int within_bound = 0;
    for (const CaseReport& c : report.cases) within_bound += c.within_bound ? 1 : 0;
    text += absl::StrFormat(
        "judged within the bound of %s (spec/protocol.md#precision): %d passes "
        "with every cut score within the bound rather than bit for bit\n",
        PortPrecisionName(report.precision), within_bound);
    text += absl::StrFormat("%d passed, %d within precision, %d failed, %d skipped, "
                            "%d not run\n",
                            all.passed, all.within, all.failed, all.skipped, all.not_run);
  } else {
    text += absl::StrFormat("%d passed, %d failed, %d skipped, %d not run\n",
                            all.passed, all.failed, all.skipped, all.not_run);
  }
  return text;
}

std::string JUnitXml(const RunReport& report, const Verdict& verdict) {
  const Counts all = Count(report, verdict.require_all);
  double seconds = 0;
  for (const CaseReport& c : report.cases) seconds += c.seconds;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += absl::StrFormat(
      "<testsuites tests=\"%d\" failures=\"%d\" skipped=\"%d\" time=\"%.3f\">\n"
      "  <testsuite name=\"kvspec-conformance %s\" tests=\"%d\" failures=\"%d\" "
      "skipped=\"%d\" time=\"%.3f\">\n",
      report.cases.size(), all.failed, all.skipped + all.not_run, seconds,
      Xml(report.hello.port_name()), report.cases.size(), all.failed,
      all.skipped + all.not_run, seconds);
  for (const CaseReport& c : report.cases) {
    xml += absl::StrFormat("    <testcase name=\"%s\" classname=\"%s\" time=\"%.3f\"",
                           Xml(c.id), Xml(c.policy), c.seconds);
    if (c.outcome == Outcome::kPass) {
      xml += "/>\n";
    } else if (c.outcome == Outcome::kWithinPrecision) {
      // Not a failure; its detail kept as output.
      xml += absl::StrFormat("><system-out>%s: %s</system-out></testcase>\n",
                             Xml(OutcomeName(c.outcome)), Xml(c.detail));
    } else if (c.outcome == Outcome::kSkipped ||
               (c.outcome == Outcome::kNotRun && !verdict.require_all)) {
      xml += absl::StrFormat("><skipped message=\"%s: %s\"/></testcase>\n",
                             Xml(OutcomeName(c.outcome)), Xml(c.detail));
    } else {
      xml += absl::StrFormat("><failure message=\"%s\">%s</failure></testcase>\n",
                             Xml(OutcomeName(c.outcome)), Xml(c.detail));
    }
  }
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string JsonSummary(const RunReport& report, const Verdict& verdict) {
  const Counts all = Count(report, verdict.require_all);
  std::string json = "{\n";
  json += absl::StrFormat("  \"port\": %s,\n  \"language\": %s,\n",
                          Json(report.hello.port_name()),
                          Json(report.hello.language()));
  json += absl::StrFormat(
      "  \"suite_spec_version\": %s,\n  \"spec_version\": %s,\n"
      "  \"features\": %s,\n  \"features_source\": %s,\n  \"cut_compared\": %s,\n",
      Json(report.suite_spec_version), Json(report.hello.spec_version()),
      JsonList({report.port_features.begin(), report.port_features.end()}),
      Json(report.features_source), report.cut_compared ? "true" : "false");
  json += absl::StrFormat(
      "  \"precision\": %s,\n  \"judged_within_bound\": %s,\n"
      "  \"within_precision\": %d,\n"
      "  \"passed\": %d,\n  \"failed\": %d,\n  \"skipped\": %d,\n  \"not_run\": %d,\n"
      "  \"excluded\": %d,\n  \"unexpected\": %d,\n  \"require_all\": %s,\n"
      "  \"seconds\": %.3f,\n  \"cases\": [\n",
      Json(PortPrecisionName(report.precision)),
      report.judged_within_bound ? "true" : "false", all.within,
      all.passed, all.failed, all.skipped, all.not_run, report.excluded.size(),
      verdict.failures.size(), verdict.require_all ? "true" : "false",
      report.seconds);
  for (size_t i = 0; i < report.cases.size(); ++i) {
    const CaseReport& c = report.cases[i];
    json += absl::StrFormat(
        "    {\"id\": %s, \"policy\": %s, \"outcome\": %s, \"seconds\": %.6f,\n"
        "     \"features\": %s, \"since\": %s, \"flags\": %s,\n"
        "     \"description\": %s, \"configuration\": %s",
        Json(c.id), Json(c.policy), Json(OutcomeName(c.outcome)), c.seconds,
        JsonList(c.features), Json(c.since), JsonList(c.flags), Json(c.description),
        Json(c.configuration));
    if (c.outcome != Outcome::kPass) {
      json += absl::StrFormat(",\n     \"detail\": %s", Json(c.detail));
      if (!c.replay.empty()) {
        json += absl::StrFormat(",\n     \"replay\": %s", Json(c.replay));
      }
    }
    if (c.divergence.has_value()) json += ",\n     " + DivergenceJson(*c.divergence);
    json += absl::StrFormat("}%s\n", i + 1 < report.cases.size() ? "," : "");
  }
  json += "  ]\n}\n";
  return json;
}

}  // namespace conformance
}  // namespace kvspec
