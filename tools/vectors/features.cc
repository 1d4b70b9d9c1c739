#include "tools/vectors/features.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace kvspec {
namespace vectors {

// spec/features.md#the-list
const std::vector<FeatureInfo>& Features() {
  static const auto* features = new std::vector<FeatureInfo>{
      {"decode", "0.1.0", "harness.md",
       "one query head: explicit steps (an attention row or null attention), "
       "chunked admission, eviction, refusals, the eviction log; every case "
       "needs it"},
      {"trace", "0.3.0", "trace.md",
       "a generated trace of one head (Scenario.trace)"},
      {"heads", "0.5.0", "heads.md",
       "several heads: Scenario.query_heads and kv_heads, Step.heads, kept "
       "sets (granularity), aggregation, the per-set log (StepResult.sets)"},
      {"trace-heads", "0.5.0", "trace.md#several-heads",
       "a generated trace of several heads (a trace with query_heads)"},
      {"adaptive", "0.5.0", "heads.md#head-adaptive-budgets",
       "head-adaptive budgets, AdaKV (adaptive, safeguard_permille)"},
      {"prefill", "0.6.0", "prefill.md",
       "query rows (Step.queries) and prefill steps, prefill_only, ratio_ppm "
       "and each policy's prefill parameters"},
      {"spans", "0.8.0", "spans.md",
       "spans and position ids of full, window and streamingllm: span rules "
       "(span_window, span_chunk), eviction before admission (evict_at), "
       "position_ids, and the per-step spans and held set (StepResult.spans, "
       "held)"},
      {"contextshift", "0.9.0", "spans.md#context-shift",
       "llama.cpp's context shift for window and streamingllm: room made "
       "before a step that does not fit, in one block (context_shift), "
       "the block's size (discard)"},
      {"totals", "0.10.0", "prefill.md#column-totals",
       "column totals beside query rows (Step.totals, Step.total_rows), read "
       "by h2o's and openvino's prefill rules instead of the rows"},
      {"triggers", "0.12.0", "triggers.md",
       "when a decode step evicts: only past budget + slack (slack), or at "
       "every interval-th decode step (interval), then down to budget"},
      {"blocks", "0.13.0", "blocks.md",
       "whole blocks of positions evicted, as paged caches do: block (closed "
       "blocks past budget go, the open one stays) and block_score (a "
       "block's score: sum, mean, max)"},
      {"tensors", "0.16.0", "tensors.md",
       "keys in a scenario (Scenario.head_dim, Step.keys): their shape and "
       "checks, and what a policy that reads them sees"},
      {"values", "0.18.0", "tensors.md",
       "values in a scenario (Scenario.value_dim, Step.values): their shape "
       "and checks, what a policy that reads them sees, and the parameters "
       "of lagkv, the first policy reading them"},
      {"pyramid", "0.19.0", "policies/pyramidkv.md",
       "per-layer budgets at a prefill step, PyramidKV, a mode of snapkv: "
       "kvpress's and KVCache-Factory's formulas (pyramid, pyramid_beta, "
       "layer, layers)"},
  };
  return *features;
}

const FeatureInfo* FindFeature(const std::string& name) {
  for (const FeatureInfo& feature : Features()) {
    if (feature.name == name) return &feature;
  }
  return nullptr;
}

// spec/features.md#what-a-case-needs: every parameter any version of the
// spec has, the feature it belongs to and the version that introduced it.
const std::vector<ParameterInfo>& Parameters() {
  static const auto* parameters = new std::vector<ParameterInfo>{
      {"budget", "decode", "0.1.0"},
      {"sinks", "decode", "0.1.0"},
      {"recent_window", "decode", "0.2.0"},
      {"obs_window", "decode", "0.2.0"},
      {"pool_kernel", "decode", "0.2.0"},
      {"granularity", "heads", "0.5.0"},
      {"aggregation", "heads", "0.5.0"},
      {"adaptive", "adaptive", "0.5.0"},
      {"safeguard_permille", "adaptive", "0.5.0"},
      {"prefill_only", "prefill", "0.6.0"},
      {"ratio_ppm", "prefill", "0.6.0"},
      {"normalize", "prefill", "0.6.0"},
      {"protect_newest", "prefill", "0.6.0"},
      {"window_budget", "prefill", "0.6.0"},
      {"pooling", "prefill", "0.6.0"},
      {"window_reduce", "prefill", "0.6.0"},
      {"spans", "spans", "0.8.0"},
      {"span_window", "spans", "0.8.0"},
      {"span_chunk", "spans", "0.8.0"},
      {"evict_at", "spans", "0.8.0"},
      {"position_ids", "spans", "0.8.0"},
      {"context_shift", "contextshift", "0.9.0"},
      {"discard", "contextshift", "0.9.0"},
      {"slack", "triggers", "0.12.0"},
      {"interval", "triggers", "0.12.0"},
      {"block", "blocks", "0.13.0"},
      {"block_score", "blocks", "0.13.0"},
      {"norm_sum", "decode", "0.14.0"},
      {"max_pool", "decode", "0.14.0"},
      {"lag", "values", "0.18.0"},
      {"cross_scoring", "values", "0.18.0"},
      {"pyramid", "pyramid", "0.19.0"},
      {"pyramid_beta", "pyramid", "0.19.0"},
      {"layer", "pyramid", "0.19.0"},
      {"layers", "pyramid", "0.19.0"},
      {"n_initial", "prefill", "0.20.0"},
      {"n_recent", "prefill", "0.20.0"},
      {"n_last", "prefill", "0.20.0"},
      {"lazy_threshold_ppm", "prefill", "0.20.0"},
  };
  return *parameters;
}

const ParameterInfo* FindParameter(const std::string& name) {
  for (const ParameterInfo& parameter : Parameters()) {
    if (parameter.name == name) return &parameter;
  }
  return nullptr;
}

std::string PolicySince(const std::string& policy) {
  // spec/README.md#changes: 0.1.0 full, window, streamingllm; 0.2.0 the rest.
  for (const char* name : {"h2o", "tova", "snapkv", "random"}) {
    if (policy == name) return "0.2.0";
  }
  if (policy == "openvino") return "0.14.0";
  if (policy == "knorm") return "0.16.0";
  if (policy == "keydiff") return "0.17.0";
  if (policy == "lagkv") return "0.18.0";
  if (policy == "simlayerkv") return "0.20.0";
  return "0.1.0";
}

std::optional<Version> ParseVersion(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '.');
  if (parts.size() != 3) return std::nullopt;
  Version version;
  for (int i = 0; i < 3; ++i) {
    if (parts[i].empty() || parts[i].size() > 6 ||
        !std::all_of(parts[i].begin(), parts[i].end(),
                     [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    version[i] = std::atoi(parts[i].c_str());
  }
  return version;
}

int CompareVersions(const std::string& a, const std::string& b) {
  const Version x = ParseVersion(a).value_or(Version{0, 0, 0});
  const Version y = ParseVersion(b).value_or(Version{0, 0, 0});
  return x < y ? -1 : (y < x ? 1 : 0);
}

std::set<std::string> FeaturesOfVersion(const std::string& spec_version) {
  std::set<std::string> features;
  if (!ParseVersion(spec_version).has_value()) return features;
  for (const FeatureInfo& feature : Features()) {
    if (CompareVersions(feature.since, spec_version) <= 0) features.insert(feature.name);
  }
  return features;
}

namespace {

bool HasHeads(const v1::Scenario& scenario) {
  if (scenario.has_query_heads() || scenario.has_kv_heads()) return true;
  for (const v1::Step& step : scenario.steps()) {
    if (step.heads_size() > 0) return true;
  }
  return false;
}

bool HasQueryRows(const v1::Scenario& scenario) {
  for (const v1::Step& step : scenario.steps()) {
    if (step.queries_size() > 0) return true;
  }
  return false;
}

bool HasKeys(const v1::Scenario& scenario) {
  if (scenario.has_head_dim()) return true;
  for (const v1::Step& step : scenario.steps()) {
    if (step.keys_size() > 0) return true;
  }
  return false;
}

bool HasValues(const v1::Scenario& scenario) {
  if (scenario.has_value_dim()) return true;
  for (const v1::Step& step : scenario.steps()) {
    if (step.values_size() > 0) return true;
  }
  return false;
}

bool HasTotals(const v1::Scenario& scenario) {
  for (const v1::Step& step : scenario.steps()) {
    if (step.totals_size() > 0 || step.total_rows() != 0) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> CaseFeatures(const v1::PolicyConfig& policy,
                                      const v1::Scenario& scenario) {
  std::set<std::string> needed = {"decode"};
  if (scenario.has_trace()) needed.insert("trace");
  if (HasHeads(scenario)) needed.insert("heads");
  if (scenario.has_trace() && HasHeads(scenario)) needed.insert("trace-heads");
  if (HasQueryRows(scenario)) needed.insert("prefill");
  // Totals travel beside query rows: a port reads them only with prefill.
  if (HasTotals(scenario)) needed.insert({"prefill", "totals"});
  if (HasKeys(scenario)) needed.insert("tensors");
  if (HasValues(scenario)) needed.insert("values");
  for (const v1::Parameter& parameter : policy.parameters()) {
    if (const ParameterInfo* info = FindParameter(parameter.name())) {
      needed.insert(info->feature);
    }
  }
  std::vector<std::string> ordered;
  for (const FeatureInfo& feature : Features()) {
    if (needed.count(feature.name) != 0) ordered.push_back(feature.name);
  }
  return ordered;
}

std::string CaseSince(const v1::PolicyConfig& policy, const v1::Scenario& scenario,
                      const std::vector<std::string>& flag_versions) {
  std::string since = PolicySince(policy.name());
  const auto later = [&since](const std::string& version) {
    if (CompareVersions(version, since) > 0) since = version;
  };
  for (const std::string& name : CaseFeatures(policy, scenario)) {
    later(FindFeature(name)->since);
  }
  for (const v1::Parameter& parameter : policy.parameters()) {
    if (const ParameterInfo* info = FindParameter(parameter.name())) later(info->since);
  }
  for (const std::string& version : flag_versions) later(version);
  return since;
}

v1::Scenario StripScenario(const v1::Scenario& scenario,
                           const std::set<std::string>& features) {
  v1::Scenario stripped = scenario;
  if (features.count("trace") == 0) stripped.clear_trace();
  if (features.count("heads") == 0) {
    stripped.clear_query_heads();
    stripped.clear_kv_heads();
    for (v1::Step& step : *stripped.mutable_steps()) step.clear_heads();
  }
  if (features.count("prefill") == 0) {
    for (v1::Step& step : *stripped.mutable_steps()) step.clear_queries();
  }
  if (features.count("totals") == 0) {
    for (v1::Step& step : *stripped.mutable_steps()) {
      step.clear_totals();
      step.clear_total_rows();
    }
  }
  if (features.count("tensors") == 0) {
    stripped.clear_head_dim();
    for (v1::Step& step : *stripped.mutable_steps()) step.clear_keys();
  }
  if (features.count("values") == 0) {
    stripped.clear_value_dim();
    for (v1::Step& step : *stripped.mutable_steps()) step.clear_values();
  }
  return stripped;
}

std::string UnknownParameter(const v1::PolicyConfig& policy,
                             const std::set<std::string>& features,
                             const std::string& spec_version) {
  for (const v1::Parameter& parameter : policy.parameters()) {
    const ParameterInfo* info = FindParameter(parameter.name());
    if (info == nullptr) continue;
    if (features.count(info->feature) == 0 ||
        CompareVersions(info->since, spec_version) > 0) {
      return parameter.name();
    }
  }
  return "";
}

}  // namespace vectors
}  // namespace kvspec
