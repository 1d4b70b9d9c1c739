#include "cc/proto_convert.h"

#include "cc/errors.h"

namespace kvspec {

Scenario FromProto(const v1::Scenario& proto) {
  Scenario scenario;
  scenario.id = proto.id();
  for (const v1::Step& step : proto.steps()) {
    ScenarioStep converted;
    converted.admit = step.admit();
    if (step.has_attention()) {
      converted.attention.emplace(step.attention().weights().begin(),
                                  step.attention().weights().end());
    }
    scenario.steps.push_back(std::move(converted));
  }
  return scenario;
}

v1::Scenario ToProto(const Scenario& scenario) {
  v1::Scenario proto;
  proto.set_id(scenario.id);
  for (const ScenarioStep& step : scenario.steps) {
    v1::Step* converted = proto.add_steps();
    converted->set_admit(step.admit);
    if (step.attention.has_value()) {
      v1::AttentionRow* row = converted->mutable_attention();
      for (float weight : *step.attention) row->add_weights(weight);
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

v1::EvictionLog ToProto(const RunResult& result) {
  v1::EvictionLog log;
  for (const StepRecord& record : result.steps) {
    v1::StepResult* step = log.add_steps();
    for (Position victim : record.victims) step->add_victims(victim);
    step->set_kept_count(record.kept_count);
    step->set_query_cache_position(record.query_cache_position);
  }
  if (!result.refusal.ok()) {
    v1::Rejection* rejection = log.mutable_rejection();
    rejection->set_category(
        static_cast<v1::ErrorCategory>(CategoryOf(result.refusal)));
    rejection->set_step(static_cast<int32_t>(result.refused_step));
    rejection->set_message(std::string(result.refusal.message()));
  }
  return log;
}

}  // namespace kvspec
