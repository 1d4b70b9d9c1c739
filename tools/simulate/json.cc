#include "tools/simulate/json.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/registry.h"
#include "cc/version.h"

namespace kvspec {
namespace simulate {
namespace {

const char* KeptModeName(KeptMode mode) {
  switch (mode) {
    case KeptMode::kNone: return "none";
    case KeptMode::kFinal: return "final";
    case KeptMode::kEvicting: return "evicting";
    case KeptMode::kEvery: return "every";
  }
  return "final";
}

// One set's record at one step; `kept` is written when given, and the
// budget a ratio gave the set at this step when there is one.
void WriteSet(JsonWriter& json, size_t set, const StepRecord& record,
              const std::vector<Position>* kept,
              std::optional<size_t> ratio_budget) {
  json.BeginObject();
  json.UintField("set", set);
  json.Key("victims");
  json.Positions(record.victims);
  json.UintField("kept_count", record.kept_count);
  if (ratio_budget.has_value()) json.UintField("ratio_budget", *ratio_budget);
  json.UintField("query_cache_position", record.query_cache_position);
  if (!record.cut.empty()) {
    json.Key("cut");
    json.BeginArray();
    for (size_t i = 0; i < record.cut.size(); ++i) {
      json.BeginObject();
      json.UintField("position", record.cut[i].position);
      json.DoubleField("score", record.cut[i].score);
      json.BoolField("evicted", i < record.victims.size());
      json.EndObject();
    }
    json.EndArray();
  }
  if (!record.spans.empty() || !record.held.empty()) {
    // spec/spans.md#the-log, with `spans` 1.
    json.Key("spans");
    json.BeginArray();
    for (const std::vector<Position>& span : record.spans) json.Positions(span);
    json.EndArray();
    json.Key("held");
    json.BeginArray();
    for (const HeldRun& run : record.held) {
      json.BeginObject();
      json.UintField("first", run.first);
      json.UintField("last", run.last);
      json.UintField("id", run.id);
      json.EndObject();
    }
    json.EndArray();
  }
  if (kept != nullptr) {
    json.Key("kept");
    json.Positions(*kept);
  }
  json.EndObject();
}

// Each kept set's positions, rebuilt from the log: after a step, the
// positions kept before it, plus the ones it admitted, minus its victims
// (spec/harness.md#the-decode-step). Checked against each record's
// kept_count. O(admitted) per step, and O(kept) at a step with victims.
class KeptTracker {
 public:
  explicit KeptTracker(size_t sets) : kept_(sets) {}

  absl::Status Apply(const Admitted& admitted, const StepRecord& record,
                     size_t step) {
    const std::vector<const StepRecord*> sets = SetRecords(record);
    if (sets.size() != kept_.size()) {
      return absl::InternalError(absl::StrFormat(
          "step %d logs %d kept sets, expected %d", step, sets.size(),
          kept_.size()));
    }
    for (size_t s = 0; s < sets.size(); ++s) {
      std::vector<Position>& kept = kept_[s];
      for (uint64_t p = admitted.first; p < admitted.first + admitted.count;
           ++p) {
        kept.push_back(static_cast<Position>(p));
      }
      const std::vector<Position>& victims = sets[s]->victims;
      if (!victims.empty()) {
        size_t v = 0;
        auto keep = kept.begin();
        for (Position p : kept) {
          if (v < victims.size() && victims[v] == p) {
            ++v;
          } else {
            *keep++ = p;
          }
        }
        kept.erase(keep, kept.end());
        if (v != victims.size()) {
          return absl::InternalError(absl::StrFormat(
              "step %d, set %d: a victim was not kept", step, s));
        }
      }
      if (kept.size() != sets[s]->kept_count) {
        return absl::InternalError(absl::StrFormat(
            "step %d, set %d: rebuilt %d kept positions, the log says %d",
            step, s, kept.size(), sets[s]->kept_count));
      }
    }
    return absl::OkStatus();
  }
  const std::vector<std::vector<Position>>& kept() const { return kept_; }

 private:
  std::vector<std::vector<Position>> kept_;
};

bool AnyVictims(const StepRecord& record) {
  for (const StepRecord* set : SetRecords(record)) {
    if (!set->victims.empty()) return true;
  }
  return false;
}

}  // namespace

std::optional<KeptMode> ParseKeptMode(absl::string_view text) {
  if (text == "none") return KeptMode::kNone;
  if (text == "final") return KeptMode::kFinal;
  if (text == "evicting") return KeptMode::kEvicting;
  if (text == "every") return KeptMode::kEvery;
  return std::nullopt;
}

void DescribeSets(JsonHeader& header) {
  header.covers.clear();
  if (!header.accepted) return;
  const HeadCounts heads{header.query_heads, header.kv_heads};
  if (!CheckHeadCounts(heads).ok()) return;  // refused: INVALID_HEADS
  const bool reads = ReadsAttention(header.config.name);
  const Granularity granularity =
      reads ? static_cast<Granularity>(
                  EffectiveParameter(header.config, "granularity"))
            : Granularity::kLayer;
  header.covers = SetsOf(granularity, heads, reads);
  header.shared = SharedBudgetOf(header.config, header.covers.size());
}

void WriteHeader(JsonWriter& json, const JsonHeader& header) {
  json.BeginObject();
  json.StringField("format", "kvspec-simulate");
  json.IntField("format_version", 1);
  json.StringField("spec_version", kSpecVersion);
  json.Newline();
  json.StringField("policy", header.config.name);
  json.Key("preset");
  if (header.preset.empty()) {
    json.Null();
  } else {
    json.String(header.preset);
  }
  json.Key("parameters");
  json.BeginArray();
  for (const Parameter& p : header.config.parameters) {
    json.BeginObject();
    json.StringField("name", p.name);
    json.IntField("value", p.value);
    json.EndObject();
  }
  json.EndArray();
  // Every parameter of the card with its value (given or default), in the
  // card's order; then the names of the values that have one
  // (granularity, aggregation): {"granularity": "kv_head", ...}.
  std::vector<std::pair<std::string, int64_t>> effective;
  if (header.accepted) {
    for (const PolicyInfo& info : RegisteredPolicies()) {
      if (info.name != header.config.name) continue;
      for (const ParameterInfo& p : info.parameters) {
        effective.emplace_back(p.name, EffectiveParameter(header.config, p.name));
      }
    }
  }
  json.Key("effective_parameters");
  if (!header.accepted) {
    json.Null();
  } else {
    json.BeginObject();
    for (const auto& [name, value] : effective) {
      json.Key(name);
      json.Int(value);
    }
    json.EndObject();
  }
  json.Key("parameter_names");
  if (!header.accepted) {
    json.Null();
  } else {
    json.BeginObject();
    for (const auto& [name, value] : effective) {
      const std::optional<std::string> word = HeadParameterName(name, value);
      if (word.has_value()) json.StringField(name, *word);
    }
    json.EndObject();
  }
  json.UintField("seed", header.config.seed);
  json.BoolField("score_based", ReadsAttention(header.config.name));
  json.Newline();
  json.Key("scenario");
  json.BeginObject();
  json.StringField("source", header.scenario_source);
  json.Key("path");
  if (header.scenario_path.empty()) {
    json.Null();
  } else {
    json.String(header.scenario_path);
  }
  json.StringField("id", header.scenario_id);
  json.EndObject();
  json.UintField("query_heads", header.query_heads);
  json.UintField("kv_heads", header.kv_heads);
  json.UintField("step_count", header.step_count);
  json.UintField("prefill_steps", header.prefill_steps);
  json.Newline();
  json.Key("kept_sets");
  json.BeginArray();
  const uint32_t group =
      header.kv_heads == 0 ? 1 : header.query_heads / header.kv_heads;
  for (size_t s = 0; s < header.covers.size(); ++s) {
    json.BeginObject();
    json.UintField("set", s);
    json.Key("query_heads");
    json.BeginArray();
    for (uint32_t h : header.covers[s]) json.Uint(h);
    json.EndArray();
    json.Key("kv_heads");
    json.BeginArray();
    int64_t last = -1;
    for (uint32_t h : header.covers[s]) {
      const int64_t kv = group == 0 ? 0 : h / group;
      if (kv != last) json.Uint(kv);
      last = kv;
    }
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
  json.Key("shared_budget");
  if (!header.shared.on) {
    json.Null();
  } else {
    json.BeginObject();
    json.UintField("layer_budget", header.shared.layer_budget);
    json.UintField("floor", header.shared.floor);
    json.EndObject();
  }
  json.StringField("json_kept", KeptModeName(header.kept_mode));
  json.Newline();
  json.Key("warnings");
  json.BeginArray();
  for (const Warning& warning : header.warnings) {
    json.BeginObject();
    json.StringField("code", warning.code);
    json.Key("parameters");
    json.BeginArray();
    for (const std::string& p : warning.parameters) json.String(p);
    json.EndArray();
    json.StringField("message", warning.message);
    json.EndObject();
  }
  json.EndArray();
  json.Newline();
  json.Key("steps");
  json.BeginArray();
}

void WriteStep(JsonWriter& json, size_t index, const Admitted& admitted,
               bool prefill, const char* attention, const StepRecord& record,
               const std::vector<std::vector<Position>>* kept,
               const PolicyConfig* config) {
  json.Newline();
  json.BeginObject();
  json.UintField("index", index);
  json.Key("admitted");
  json.BeginObject();
  json.UintField("first", admitted.first);
  json.UintField("count", admitted.count);
  json.EndObject();
  json.BoolField("prefill", prefill);
  json.StringField("attention", attention);
  json.Key("sets");
  json.BeginArray();
  const std::vector<const StepRecord*> sets = SetRecords(record);
  for (size_t s = 0; s < sets.size(); ++s) {
    WriteSet(json, s, *sets[s],
             kept != nullptr && s < kept->size() ? &(*kept)[s] : nullptr,
             config == nullptr ? std::nullopt
                               : RatioBudget(*config, prefill, *sets[s]));
  }
  json.EndArray();
  json.EndObject();
}

void WriteFooter(JsonWriter& json, KeptMode mode,
                 const std::vector<std::vector<Position>>& kept_at_end,
                 const RunResult& result) {
  json.Newline();
  json.EndArray();  // steps
  json.Newline();
  if (mode != KeptMode::kNone) {
    json.Key("kept_at_end");
    json.BeginArray();
    for (size_t s = 0; s < kept_at_end.size(); ++s) {
      json.BeginObject();
      json.UintField("set", s);
      json.Key("kept");
      json.Positions(kept_at_end[s]);
      json.EndObject();
    }
    json.EndArray();
    json.Newline();
  }
  json.Key("refusal");
  if (result.refusal.ok()) {
    json.Null();
  } else {
    json.BeginObject();
    json.IntField("step", result.refused_step);
    json.StringField("category", CategoryName(CategoryOf(result.refusal)));
    json.StringField("subject", SubjectText(SubjectOf(result.refusal)));
    json.StringField("message", result.refusal.message());
    json.EndObject();
  }
  json.EndObject();
  json.Finish();
}

absl::Status WriteScenarioJson(JsonWriter& json, const JsonHeader& header,
                               const Scenario& scenario,
                               const RunResult& result,
                               const std::vector<Position>* policy_kept) {
  WriteHeader(json, header);
  KeptTracker tracker(header.covers.size());
  AdmittedWalk walk(scenario);
  for (size_t i = 0; i < result.steps.size(); ++i) {
    const Admitted admitted = walk.Next(i);
    const StepRecord& record = result.steps[i];
    KVSPEC_RETURN_IF_ERROR(tracker.Apply(admitted, record, i));
    const bool write_kept =
        header.kept_mode == KeptMode::kEvery ||
        (header.kept_mode == KeptMode::kEvicting && AnyVictims(record));
    WriteStep(json, i, admitted, IsPrefillStep(scenario, i),
              AttentionKind(scenario, i), record,
              write_kept ? &tracker.kept() : nullptr, &header.config);
  }
  if (policy_kept != nullptr && tracker.kept().size() == 1 &&
      tracker.kept()[0] != *policy_kept) {
    return absl::InternalError(
        "the kept set rebuilt from the log is not the policy's");
  }
  WriteFooter(json, header.kept_mode, tracker.kept(), result);
  return absl::OkStatus();
}

}  // namespace simulate
}  // namespace kvspec
