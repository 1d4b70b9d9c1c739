#include "cc/proto_convert.h"

#include "cc/errors.h"

namespace kvspec {

TraceConfig FromProto(const v1::TraceConfig& proto) {
  TraceConfig config;
  if (proto.has_seed()) config.seed = proto.seed();
  if (proto.has_steps()) config.steps = proto.steps();
  if (proto.has_sinks()) config.sinks = proto.sinks();
  if (proto.has_sink_mass()) config.sink_mass = proto.sink_mass();
  if (proto.has_recent_length()) config.recent_length = proto.recent_length();
  if (proto.has_recent_mass()) config.recent_mass = proto.recent_mass();
  if (proto.has_recent_decay()) config.recent_decay = proto.recent_decay();
  if (proto.has_heavy_count()) config.heavy_count = proto.heavy_count();
  if (proto.has_heavy_mass()) config.heavy_mass = proto.heavy_mass();
  if (proto.has_epoch_length()) config.epoch_length = proto.epoch_length();
  if (proto.has_background_mass()) {
    config.background_mass = proto.background_mass();
  }
  if (proto.has_noise()) config.noise = proto.noise();
  return config;
}

v1::TraceConfig ToProto(const TraceConfig& config) {
  v1::TraceConfig proto;
  proto.set_seed(config.seed);
  proto.set_steps(config.steps);
  proto.set_sinks(config.sinks);
  proto.set_sink_mass(config.sink_mass);
  proto.set_recent_length(config.recent_length);
  proto.set_recent_mass(config.recent_mass);
  proto.set_recent_decay(config.recent_decay);
  proto.set_heavy_count(config.heavy_count);
  proto.set_heavy_mass(config.heavy_mass);
  proto.set_epoch_length(config.epoch_length);
  proto.set_background_mass(config.background_mass);
  proto.set_noise(config.noise);
  return proto;
}

Scenario FromProto(const v1::Scenario& proto) {
  Scenario scenario;
  scenario.id = proto.id();
  if (proto.has_trace()) scenario.trace = FromProto(proto.trace());
  if (proto.has_query_heads()) scenario.query_heads = proto.query_heads();
  if (proto.has_kv_heads()) scenario.kv_heads = proto.kv_heads();
  if (proto.has_head_dim()) scenario.head_dim = proto.head_dim();
  if (proto.has_value_dim()) scenario.value_dim = proto.value_dim();
  for (const v1::Step& step : proto.steps()) {
    ScenarioStep converted;
    converted.admit = step.admit();
    if (step.has_attention()) {
      converted.attention.emplace(step.attention().weights().begin(),
                                  step.attention().weights().end());
    }
    for (const v1::AttentionRow& row : step.heads()) {
      converted.heads.emplace_back(row.weights().begin(), row.weights().end());
    }
    for (const v1::AttentionRow& row : step.queries()) {
      converted.queries.emplace_back(row.weights().begin(), row.weights().end());
    }
    for (const v1::ColumnTotals& totals : step.totals()) {
      converted.totals.emplace_back(totals.sums().begin(), totals.sums().end());
    }
    converted.total_rows = step.total_rows();
    for (const v1::HeadVectors& keys : step.keys()) {
      converted.keys.emplace_back(keys.values().begin(), keys.values().end());
    }
    for (const v1::HeadVectors& values : step.values()) {
      converted.values.emplace_back(values.values().begin(),
                                    values.values().end());
    }
    scenario.steps.push_back(std::move(converted));
  }
  return scenario;
}

v1::Scenario ToProto(const Scenario& scenario) {
  v1::Scenario proto;
  proto.set_id(scenario.id);
  if (scenario.trace.has_value()) {
    *proto.mutable_trace() = ToProto(*scenario.trace);
  }
  if (scenario.query_heads.has_value()) {
    proto.set_query_heads(*scenario.query_heads);
  }
  if (scenario.kv_heads.has_value()) proto.set_kv_heads(*scenario.kv_heads);
  if (scenario.head_dim.has_value()) proto.set_head_dim(*scenario.head_dim);
  if (scenario.value_dim.has_value()) proto.set_value_dim(*scenario.value_dim);
  for (const ScenarioStep& step : scenario.steps) {
    v1::Step* converted = proto.add_steps();
    converted->set_admit(step.admit);
    if (step.attention.has_value()) {
      v1::AttentionRow* row = converted->mutable_attention();
      for (float weight : *step.attention) row->add_weights(weight);
    }
    for (const std::vector<float>& head : step.heads) {
      v1::AttentionRow* row = converted->add_heads();
      for (float weight : head) row->add_weights(weight);
    }
    for (const std::vector<float>& query : step.queries) {
      v1::AttentionRow* row = converted->add_queries();
      for (float weight : query) row->add_weights(weight);
    }
    for (const std::vector<double>& totals : step.totals) {
      v1::ColumnTotals* sums = converted->add_totals();
      for (double total : totals) sums->add_sums(total);
    }
    converted->set_total_rows(step.total_rows);
    for (const std::vector<float>& keys : step.keys) {
      v1::HeadVectors* vectors = converted->add_keys();
      for (float value : keys) vectors->add_values(value);
    }
    for (const std::vector<float>& values : step.values) {
      v1::HeadVectors* vectors = converted->add_values();
      for (float value : values) vectors->add_values(value);
    }
  }
  return proto;
}

PolicyConfig FromProto(const v1::PolicyConfig& proto) {
  PolicyConfig config;
  config.name = proto.name();
  for (const v1::Parameter& parameter : proto.parameters()) {
    config.parameters.push_back({parameter.name(), parameter.value()});
  }
  config.seed = proto.seed();
  return config;
}

v1::PolicyConfig ToProto(const PolicyConfig& config) {
  v1::PolicyConfig proto;
  proto.set_name(config.name);
  for (const Parameter& parameter : config.parameters) {
    v1::Parameter* converted = proto.add_parameters();
    converted->set_name(parameter.name);
    converted->set_value(parameter.value);
  }
  proto.set_seed(config.seed);
  return proto;
}

namespace {

void FillStep(const StepRecord& record, v1::StepResult* step) {
  for (Position victim : record.victims) step->add_victims(victim);
  step->set_kept_count(record.kept_count);
  step->set_query_cache_position(record.query_cache_position);
  for (const RankedCandidate& candidate : record.cut) {
    v1::RankedPosition* ranked = step->add_cut();
    ranked->set_position(candidate.position);
    ranked->set_score(candidate.score);
  }
  for (const StepRecord& set : record.sets) FillStep(set, step->add_sets());
  for (const std::vector<Position>& span : record.spans) {
    v1::QuerySpan* converted = step->add_spans();
    for (Position p : span) converted->add_ranges(p);
  }
  for (const HeldRun& run : record.held) {
    v1::HeldRun* converted = step->add_held();
    converted->set_first(run.first);
    converted->set_last(run.last);
    converted->set_id(run.id);
  }
}

StepRecord RecordOf(const v1::StepResult& step) {
  StepRecord record;
  record.victims.assign(step.victims().begin(), step.victims().end());
  record.kept_count = step.kept_count();
  record.query_cache_position = step.query_cache_position();
  for (const v1::RankedPosition& ranked : step.cut()) {
    record.cut.push_back({ranked.position(), ranked.score()});
  }
  for (const v1::StepResult& set : step.sets()) {
    record.sets.push_back(RecordOf(set));
  }
  for (const v1::QuerySpan& span : step.spans()) {
    record.spans.emplace_back(span.ranges().begin(), span.ranges().end());
  }
  for (const v1::HeldRun& run : step.held()) {
    record.held.push_back({run.first(), run.last(), run.id()});
  }
  return record;
}

}  // namespace

v1::EvictionLog ToProto(const RunResult& result) {
  v1::EvictionLog log;
  for (const StepRecord& record : result.steps) FillStep(record, log.add_steps());
  if (!result.refusal.ok()) {
    v1::Rejection* rejection = log.mutable_rejection();
    rejection->set_category(
        static_cast<v1::ErrorCategory>(CategoryOf(result.refusal)));
    rejection->set_step(static_cast<int32_t>(result.refused_step));
    rejection->set_message(std::string(result.refusal.message()));
    const Subject subject = SubjectOf(result.refusal);
    rejection->mutable_subject()->set_check(subject.check);
    for (const std::string& name : subject.names) {
      rejection->mutable_subject()->add_names(name);
    }
  }
  return log;
}

}  // namespace kvspec

namespace kvspec {

RunResult FromProto(const v1::EvictionLog& log) {
  RunResult result;
  for (const v1::StepResult& step : log.steps()) {
    result.steps.push_back(RecordOf(step));
  }
  if (log.has_rejection()) {
    const v1::Subject& subject = log.rejection().subject();
    result.refusal = Refuse(
        static_cast<ErrorCategory>(log.rejection().category()),
        Subject{subject.check(),
                {subject.names().begin(), subject.names().end()}},
        log.rejection().message());
    result.refused_step = log.rejection().step();
  }
  return result;
}

}  // namespace kvspec
