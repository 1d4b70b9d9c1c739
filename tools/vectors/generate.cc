#include "tools/vectors/generate.h"

#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cc/precision.h"
#include "cc/proto_convert.h"
#include "cc/sha256.h"
#include "cc/version.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "spec/kvspec.pb.h"
#include "tools/vectors/case_id.h"
#include "tools/vectors/features.h"
#include "tools/vectors/flags.h"

namespace kvspec {
namespace vectors {
namespace {

absl::Status Malformed(const std::string& message) {
  return absl::FailedPreconditionError("vector suite: " + message);
}

std::string GroupOf(const std::string& id) {
  return id.substr(0, id.find('/'));
}

absl::Status CheckSuite(const Suite& suite) {
  std::set<std::string> scenario_ids;
  for (const Scenario& scenario : suite.scenarios) {
    if (!scenario_ids.insert(scenario.id).second) {
      return Malformed("duplicate scenario id '" + scenario.id + "'");
    }
  }
  std::set<std::string> case_ids;
  for (const CaseSpec& c : suite.cases) {
    if (!WellFormedId(c.id)) {
      return Malformed("case id '" + c.id +
                       "' is not <group>/<topic>/<name> of [a-z0-9.-]");
    }
    if (!case_ids.insert(c.id).second) {
      return Malformed("duplicate case id '" + c.id + "'");
    }
    for (const std::string& flag : c.flags) {
      if (FindFlag(flag) == nullptr) {
        return Malformed("case '" + c.id + "' has unknown flag '" + flag + "'");
      }
    }
    if (scenario_ids.count(c.scenario_id) == 0) {
      return Malformed("case '" + c.id + "' names unknown scenario '" +
                       c.scenario_id + "'");
    }
  }
  return absl::OkStatus();
}

std::string Serialize(const google::protobuf::Message& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

std::string Render(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  // Repeated numbers on one line, `weights: [0.5, 0.25]`: the text copy
  // stays readable and diffable at about 4.5 MB less than one value a line
  // (spec/vectors.md#files).
  printer.SetUseShortRepeatedPrimitives(true);
  printer.PrintToString(message, &text);
  return text;
}

// spec/vectors.md#files: the text copy of a group, for review. A case
// whose expected log renders to more than kSummaryBytes of text shows its
// first and last kSummarySteps steps only, and a comment line under its id
// says which steps are left out; the .pb holds every step. (The long logs,
// of the canonical traces' thousands of steps, made about 25 of the
// suite's 39 MB of text: spec/vectors.md#files.)
constexpr size_t kSummaryBytes = 65536;
constexpr int kSummarySteps = 8;

absl::StatusOr<std::string> RenderForReview(const v1::VectorFile& file) {
  v1::VectorFile shown = file;
  std::map<std::string, std::string> notes;  // case id -> its comment line
  for (v1::Case& c : *shown.mutable_cases()) {
    const int steps = c.expected().steps_size();
    if (steps <= 2 * kSummarySteps) continue;
    if (Render(c.expected()).size() <= kSummaryBytes) continue;
    c.mutable_expected()->mutable_steps()->DeleteSubrange(
        kSummarySteps, steps - 2 * kSummarySteps);
    notes[c.id()] = absl::StrFormat(
        "  # expected: %d steps; steps %d .. %d are left out of this text "
        "copy (over %d bytes of text): %s.pb has them all\n",
        steps, kSummarySteps, steps - kSummarySteps - 1, kSummaryBytes,
        GroupOf(c.id()));
  }
  std::string text = Render(shown);
  for (const auto& [id, note] : notes) {
    const std::string head = absl::StrCat("cases {\n  id: \"", id, "\"\n");
    const size_t at = text.find(head);
    if (at == std::string::npos) {
      return absl::InternalError("the text copy has no case '" + id +
                                 "' to put its summary's comment under");
    }
    text.insert(at + head.size(), note);
  }
  return text;
}

}  // namespace

absl::StatusOr<std::vector<GeneratedFile>> GenerateVectorFiles(
    const Suite& suite) {
  if (absl::Status status = CheckSuite(suite); !status.ok()) return status;
  // Each scenario as it goes on the wire, and as a reader decodes it: the
  // expected logs are computed from the decoded scenario, so an absent trace
  // field means exactly its default.
  std::map<std::string, v1::Scenario> wire;
  std::map<std::string, Scenario> scenarios;
  for (const Scenario& scenario : suite.scenarios) {
    v1::Scenario proto = ToProto(scenario);
    const auto absent = suite.absent_trace_fields.find(scenario.id);
    if (absent != suite.absent_trace_fields.end()) {
      v1::TraceConfig* trace = proto.mutable_trace();
      for (const std::string& name : absent->second) {
        const auto* field = trace->GetDescriptor()->FindFieldByName(name);
        if (field == nullptr) {
          return Malformed("scenario '" + scenario.id + "': no trace field '" +
                           name + "'");
        }
        trace->GetReflection()->ClearField(trace, field);
      }
      if (Serialize(ToProto(FromProto(proto))) != Serialize(ToProto(scenario))) {
        return Malformed("scenario '" + scenario.id +
                         "': a trace field left absent does not hold its default");
      }
    }
    scenarios[scenario.id] = FromProto(proto);
    wire[scenario.id] = std::move(proto);
  }

  // Groups in order of first appearance.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<const CaseSpec*>> by_group;
  for (const CaseSpec& c : suite.cases) {
    const std::string group = GroupOf(c.id);
    if (by_group.count(group) == 0) groups.push_back(group);
    by_group[group].push_back(&c);
  }

  std::vector<GeneratedFile> files;
  v1::Manifest manifest;
  manifest.set_schema(kManifestSchema);
  manifest.set_spec_version(kSpecVersion);
  manifest.set_generator_version(kGeneratorVersion);
  std::set<std::string> all_scenarios_used;
  for (const std::string& group : groups) {
    v1::VectorFile file;
    file.set_schema(kVectorSchema);
    file.set_spec_version(kSpecVersion);
    std::set<std::string> used;
    for (const CaseSpec* c : by_group[group]) used.insert(c->scenario_id);
    for (const Scenario& scenario : suite.scenarios) {
      if (used.count(scenario.id) != 0) *file.add_scenarios() = wire[scenario.id];
    }
    for (const CaseSpec* c : by_group[group]) {
      v1::Case* out = file.add_cases();
      out->set_id(c->id);
      for (const std::string& flag : c->flags) out->add_flags(flag);
      out->set_description(c->description);
      *out->mutable_policy() = ToProto(c->policy);
      out->set_scenario_id(c->scenario_id);
      // spec/features.md: what the case needs, and when its outcome was set.
      for (const std::string& feature :
           CaseFeatures(out->policy(), wire[c->scenario_id])) {
        out->add_features(feature);
      }
      std::vector<std::string> flag_versions;
      for (const std::string& flag : c->flags) {
        flag_versions.push_back(FindFlag(flag)->since);
      }
      out->set_since(CaseSince(out->policy(), wire[c->scenario_id], flag_versions));
      // spec/vectors.md#precision: the score terms, and the smallest margin
      // of the decisions the reference's rankings make.
      std::optional<double> min_margin;
      RunOptions options{/*record_cut=*/true};
      options.on_ranking = [&min_margin](int64_t, const RankingObservation& o) {
        const std::optional<Decision> decision = DecisionOf(o);
        if (!decision.has_value()) return;
        const double margin = RelativeMargin(*decision);
        if (!min_margin.has_value() || margin < *min_margin) min_margin = margin;
      };
      const RunResult result = RunScenario(c->policy, scenarios[c->scenario_id], options);
      *out->mutable_expected() = ToProto(result);
      out->set_score_terms(ScoreTerms(c->policy, scenarios[c->scenario_id]));
      if (min_margin.has_value()) out->set_min_margin(*min_margin);
    }
    all_scenarios_used.insert(used.begin(), used.end());
    absl::StatusOr<std::string> text = RenderForReview(file);
    if (!text.ok()) return text.status();
    for (const auto& [suffix, bytes] :
         std::vector<std::pair<std::string, std::string>>{
             {".pb", Serialize(file)}, {".textproto", *text}}) {
      v1::ManifestEntry* entry = manifest.add_files();
      entry->set_path(group + suffix);
      entry->set_sha256(Sha256Hex(bytes));
      entry->set_bytes(bytes.size());
      entry->set_cases(suffix == ".pb" ? file.cases_size() : 0);
      files.push_back({group + suffix, bytes});
    }
  }
  manifest.set_cases(static_cast<uint32_t>(suite.cases.size()));
  manifest.set_scenarios(static_cast<uint32_t>(all_scenarios_used.size()));
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(manifest, &json, options)
           .ok()) {
    return absl::InternalError("cannot render the manifest as JSON");
  }
  files.push_back({"MANIFEST.json", json});
  return files;
}

std::string FlagTableMarkdown() {
  std::string table =
      "| flag | rule | what a case with it shows | must decide a case for | since |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const FlagInfo& flag : Flags()) {
    table += absl::StrFormat(
        "| `%s` | [%s](%s) | %s | %s | %s |\n", flag.name, flag.rule, flag.rule,
        flag.note,
        flag.required_for.empty() ? "any one policy"
                                  : absl::StrJoin(flag.required_for, ", "),
        flag.since);
  }
  return table;
}

std::string FeatureTableMarkdown() {
  std::string table =
      "| feature | since | defined in | what it covers | its parameters |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const FeatureInfo& feature : Features()) {
    std::vector<std::string> parameters;
    for (const ParameterInfo& parameter : Parameters()) {
      if (parameter.feature == feature.name) {
        parameters.push_back(absl::StrFormat("`%s` (%s)", parameter.name,
                                             parameter.since));
      }
    }
    table += absl::StrFormat("| `%s` | %s | [%s](%s) | %s | %s |\n", feature.name,
                             feature.since, feature.section, feature.section,
                             feature.summary,
                             parameters.empty() ? "none" : absl::StrJoin(parameters, ", "));
  }
  return table;
}

}  // namespace vectors
}  // namespace kvspec
