// The harness's entry points (cc/harness.h, spec/harness.md): RunScenario
// checks the scenario's shape, builds the kept sets a configuration asks for
// (spec/heads.md#kept-sets) and runs them. One kept set over a generated
// trace streams it here (spec/harness.md#resources); everything else runs
// through kept sets (cc/kept_sets.cc), whose steps are checked by
// cc/scenario_checks.cc.
#include "cc/harness.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/harness_internal.h"
#include "cc/heads.h"
#include "cc/text.h"

namespace kvspec {

using internal::CheckScenarioShape;
using internal::HeadsOf;
using internal::RunSets;
using internal::RunTraceSetsScenario;

namespace internal {

// RunOptions::on_ranking's view of one set's own ranking.
RankingObservation ObservationOf(const EvictionDetail& detail, size_t set) {
  RankingObservation observation;
  observation.set = set;
  for (size_t i = 0; i < detail.ranked.size(); ++i) {
    observation.ranking.push_back({detail.ranked[i].position,
                                   detail.ranked[i].score, set,
                                   i < detail.victims});
  }
  return observation;
}

}  // namespace internal

namespace {

RunResult RunTraceScenario(Policy& policy, const Scenario& scenario,
                           const RunOptions& options) {
  RunResult result;
  size_t kept_before = policy.kept().size();
  const absl::Status status = RunTrace(
      policy, *scenario.trace,
      [&](uint32_t, absl::Span<const Position> victims,
          const EvictionDetail& detail) {
        if (options.on_ranking && !victims.empty() && !detail.ranked.empty()) {
          options.on_ranking(static_cast<int64_t>(result.steps.size()),
                             internal::ObservationOf(detail, 0));
        }
        StepRecord record;
        record.victims.assign(victims.begin(), victims.end());
        if (options.record_cut && !victims.empty()) record.cut = CutOf(detail);
        record.kept_count = static_cast<uint32_t>(policy.kept().size());
        record.query_cache_position = static_cast<uint32_t>(kept_before);
        record.spans = policy.step_spans();
        record.held = policy.step_held();
        kept_before = policy.kept().size();
        result.steps.push_back(std::move(record));
      },
      options.record_cut || options.on_ranking != nullptr);
  if (!status.ok()) {
    result.refusal = status;
    // A refused configuration refuses before step 0.
    result.refused_step = CategoryOf(status) == ErrorCategory::kInvalidTrace
                              ? -1
                              : static_cast<int64_t>(result.steps.size());
  }
  return result;
}

// spec/tensors.md#checks, checks 5 and 6: what the policy reads.
internal::TensorNeeds NeedsOf(const Policy& policy) {
  return {policy.reads_keys(), policy.least_head_dim(), policy.reads_values(),
          policy.least_value_dim()};
}

}  // namespace

std::vector<RankedCandidate> CutOf(const EvictionDetail& detail) {
  const size_t end = std::min(detail.ranked.size(), detail.victims + kCutMargin);
  return std::vector<RankedCandidate>(detail.ranked.begin(),
                                      detail.ranked.begin() + end);
}

RunResult RunScenario(Policy& policy, const Scenario& scenario,
                      const RunOptions& options) {
  const absl::Status shape = CheckScenarioShape(scenario, NeedsOf(policy));
  if (!shape.ok()) {
    RunResult result;
    result.refusal = shape;
    return result;
  }
  const HeadCounts heads = HeadsOf(scenario);
  if (policy.heads() != heads.query_heads) {
    RunResult result;
    result.refusal = Refuse(
        ErrorCategory::kInvalidHeads, {"rule", {"query_heads"}},
        absl::StrFormat("the policy covers %d query heads but the scenario "
                        "has %d; build it with MakePolicy(config, %d)",
                        policy.heads(), heads.query_heads, heads.query_heads));
    return result;
  }
  if (scenario.trace.has_value() && heads.query_heads == 1) {
    return RunTraceScenario(policy, scenario, options);
  }
  std::vector<uint32_t> every(heads.query_heads);
  for (uint32_t h = 0; h < heads.query_heads; ++h) every[h] = h;
  Policy* const sets[] = {&policy};
  if (scenario.trace.has_value()) {
    return RunTraceSetsScenario(sets, {every}, SharedBudget{}, scenario,
                                options);
  }
  return RunSets(sets, {every}, SharedBudget{}, scenario, options);
}

RunResult RunScenario(const PolicyConfig& config, const Scenario& scenario,
                      const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) {
    RunResult result;
    result.refusal = policy.status();
    return result;
  }
  const absl::Status shape = CheckScenarioShape(scenario, NeedsOf(**policy));
  if (!shape.ok()) {
    RunResult result;
    result.refusal = shape;
    return result;
  }
  const HeadCounts heads = HeadsOf(scenario);
  const bool reads_attention = ReadsAttention(config.name);
  const Granularity granularity =
      reads_attention
          ? static_cast<Granularity>(EffectiveParameter(config, "granularity"))
          : Granularity::kLayer;
  const std::vector<std::vector<uint32_t>> covers =
      SetsOf(granularity, heads, reads_attention);
  if (covers.size() == 1) {
    if (heads.query_heads == 1) return RunScenario(**policy, scenario, options);
    absl::StatusOr<std::unique_ptr<Policy>> layer =
        MakePolicy(config, heads.query_heads);
    return RunScenario(**layer, scenario, options);
  }
  std::vector<std::unique_ptr<Policy>> owned;
  std::vector<Policy*> sets;
  for (const std::vector<uint32_t>& cover : covers) {
    owned.push_back(*MakePolicy(config, cover.size()));
    sets.push_back(owned.back().get());
  }
  SharedBudget shared = SharedBudgetOf(config, sets.size());
  // Census counterfactuals only (RunOptions::floor_override).
  if (shared.on && options.floor_override.has_value()) {
    shared.floor = *options.floor_override;
  }
  if (scenario.trace.has_value()) {
    return RunTraceSetsScenario(sets, covers, shared, scenario, options);
  }
  return RunSets(sets, covers, shared, scenario, options);
}

std::ostream& operator<<(std::ostream& out, const StepRecord& record) {
  out << "{victims [";
  for (size_t i = 0; i < record.victims.size(); ++i) {
    out << (i == 0 ? "" : " ") << record.victims[i];
  }
  return out << "], kept " << record.kept_count << ", query "
             << record.query_cache_position << "}";
}

std::optional<uint32_t> CacheRelativePosition(absl::Span<const Position> kept,
                                              Position position) {
  const auto it = std::lower_bound(kept.begin(), kept.end(), position);
  if (it == kept.end() || *it != position) return std::nullopt;
  return static_cast<uint32_t>(it - kept.begin());
}

}  // namespace kvspec
