#include "cc/harness.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"

namespace kvspec {
namespace {

HeadCounts HeadsOf(const Scenario& scenario) {
  return {scenario.query_heads.value_or(1), scenario.kv_heads.value_or(1)};
}

// The row of query head `head` at a step that has attention.
const std::vector<float>& RowOf(const ScenarioStep& step, uint32_t head) {
  return step.attention.has_value() ? *step.attention : step.heads[head];
}

// spec/harness.md#refusals, the checks of one step in the order the spec
// lists them; with several heads, spec/heads.md#rows-per-head.
absl::Status CheckScenarioStep(const ScenarioStep& step, int64_t index,
                               uint64_t next_position, uint32_t query_heads) {
  if (step.admit == 0) {
    return Refuse(ErrorCategory::kPosition, absl::StatusCode::kInvalidArgument,
                  absl::StrFormat("step %d: a step must admit at least one "
                                  "position, got admit 0",
                                  index));
  }
  const uint64_t last = next_position + step.admit - 1;
  if (last > std::numeric_limits<Position>::max()) {
    return Refuse(ErrorCategory::kPosition, absl::StatusCode::kOutOfRange,
                  absl::StrFormat("step %d: positions %d..%d run past the "
                                  "largest position 2^32 - 1",
                                  index, next_position, last));
  }
  // heads.md#rows-per-head: which field carries the rows, and how many.
  if (query_heads == 1 && !step.heads.empty()) {
    return Refuse(ErrorCategory::kAttentionLength,
                  absl::StrFormat("step %d: a scenario with one query head "
                                  "carries its row in `attention`; `heads` "
                                  "must be empty, got %d rows",
                                  index, step.heads.size()));
  }
  if (query_heads > 1 && step.attention.has_value()) {
    return Refuse(ErrorCategory::kAttentionLength,
                  absl::StrFormat("step %d: a scenario with %d query heads "
                                  "carries its rows in `heads`; `attention` "
                                  "must be absent",
                                  index, query_heads));
  }
  if (query_heads > 1 && !step.heads.empty() &&
      step.heads.size() != query_heads) {
    return Refuse(ErrorCategory::kAttentionLength,
                  absl::StrFormat("step %d: %d head rows for %d query heads; "
                                  "a step needs one row per query head",
                                  index, step.heads.size(), query_heads));
  }
  const bool has_rows = step.attention.has_value() || !step.heads.empty();
  if (!has_rows) return absl::OkStatus();
  // Every row's length, head 0 first, before any weight.
  for (uint32_t head = 0; head < query_heads; ++head) {
    const std::vector<float>& row = RowOf(step, head);
    if (row.size() != next_position) {
      return Refuse(
          ErrorCategory::kAttentionLength,
          absl::StrFormat("step %d: the attention row%s has %d weights but "
                          "%d positions were admitted before this step; it "
                          "needs one per position",
                          index,
                          query_heads == 1 ? ""
                                           : absl::StrFormat(" of head %d",
                                                             head),
                          row.size(), next_position));
    }
  }
  for (uint32_t head = 0; head < query_heads; ++head) {
    absl::Status status =
        CheckWeights(absl::MakeConstSpan(RowOf(step, head)), index,
                     [](size_t i) { return static_cast<Position>(i); });
    if (!status.ok()) {
      if (query_heads == 1) return status;
      return Refuse(CategoryOf(status),
                    absl::StrFormat("head %d: %s", head, status.message()));
    }
  }
  return absl::OkStatus();
}

RunResult RunTraceScenario(Policy& policy, const Scenario& scenario,
                           const RunOptions& options) {
  RunResult result;
  size_t kept_before = policy.kept().size();
  const absl::Status status = RunTrace(
      policy, *scenario.trace,
      [&](uint32_t, absl::Span<const Position> victims,
          const EvictionDetail& detail) {
        StepRecord record;
        record.victims.assign(victims.begin(), victims.end());
        if (options.record_cut && !victims.empty()) record.cut = CutOf(detail);
        record.kept_count = static_cast<uint32_t>(policy.kept().size());
        record.query_cache_position = static_cast<uint32_t>(kept_before);
        kept_before = policy.kept().size();
        result.steps.push_back(std::move(record));
      },
      options.record_cut);
  if (!status.ok()) {
    result.refusal = status;
    // A refused configuration refuses before step 0.
    result.refused_step = CategoryOf(status) == ErrorCategory::kInvalidTrace
                              ? -1
                              : static_cast<int64_t>(result.steps.size());
  }
  return result;
}

// spec/harness.md#refusals, check 2, and spec/heads.md#head-counts: steps
// and a trace are not both given, and the head counts are valid.
absl::Status CheckScenarioShape(const Scenario& scenario) {
  if (scenario.trace.has_value() && !scenario.steps.empty()) {
    return Refuse(ErrorCategory::kInvalidTrace,
                  "a scenario has either steps or a trace, not both");
  }
  return CheckHeadCounts(HeadsOf(scenario));
}

// A generated trace of several heads through kept sets
// (spec/trace.md#several-heads); the scenario's shape has been checked.
RunResult RunTraceSetsScenario(absl::Span<Policy* const> sets,
                               const std::vector<std::vector<uint32_t>>& covers,
                               const Scenario& scenario,
                               const RunOptions& options) {
  RunResult result;
  std::vector<StepRecord> records(sets.size());
  const absl::Status status = RunTraceSets(
      sets, covers, HeadsOf(scenario).query_heads, *scenario.trace,
      [&](uint32_t, size_t s, absl::Span<const Position> victims,
          const EvictionDetail& detail) {
        StepRecord& record = records[s];
        record.victims.assign(victims.begin(), victims.end());
        if (options.record_cut && !victims.empty()) record.cut = CutOf(detail);
        // The kept count before the step: after it, plus the victims, less
        // the one position the step admitted.
        record.kept_count = static_cast<uint32_t>(sets[s]->kept().size());
        record.query_cache_position = static_cast<uint32_t>(
            sets[s]->kept().size() + victims.size() - 1);
        if (s + 1 < sets.size()) return;
        if (records.size() == 1) {
          result.steps.push_back(std::move(records[0]));
        } else {
          StepRecord combined;
          combined.sets = std::move(records);
          result.steps.push_back(std::move(combined));
        }
        records.assign(sets.size(), StepRecord{});
      },
      options.record_cut);
  if (!status.ok()) {
    result.refusal = status;
    result.refused_step = CategoryOf(status) == ErrorCategory::kInvalidTrace
                              ? -1
                              : static_cast<int64_t>(result.steps.size());
  }
  return result;
}

// Runs explicit steps through kept sets: `sets[s]` is a policy built for the
// query heads `covers[s]` (spec/heads.md#kept-sets). The scenario's shape
// has been checked.
RunResult RunSets(absl::Span<Policy* const> sets,
                  const std::vector<std::vector<uint32_t>>& covers,
                  const Scenario& scenario, const RunOptions& options) {
  RunResult result;
  const uint32_t query_heads = HeadsOf(scenario).query_heads;
  uint64_t next_position = 0;
  std::vector<float> gathered;
  for (size_t index = 0; index < scenario.steps.size(); ++index) {
    const ScenarioStep& step = scenario.steps[index];
    absl::Status status = CheckScenarioStep(step, static_cast<int64_t>(index),
                                            next_position, query_heads);
    if (!status.ok()) {
      result.refusal = status;
      result.refused_step = static_cast<int64_t>(index);
      return result;
    }
    const bool has_rows = step.attention.has_value() || !step.heads.empty();
    std::vector<StepRecord> records(sets.size());
    for (size_t s = 0; s < sets.size(); ++s) {
      Policy& policy = *sets[s];
      // spec/harness.md#what-a-policy-sees: each covered head's weights of
      // the set's kept positions, in kept order, exactly as its row gives
      // them; heads in ascending order (spec/heads.md#what-each-head-records).
      StepInput input;
      input.first = static_cast<Position>(next_position);
      input.count = step.admit;
      if (has_rows) {
        gathered.clear();
        for (uint32_t head : covers[s]) {
          const std::vector<float>& row = RowOf(step, head);
          for (Position position : policy.kept()) {
            gathered.push_back(row[position]);
          }
        }
        input.attention = absl::MakeConstSpan(gathered);
      }
      StepRecord& record = records[s];
      record.query_cache_position = static_cast<uint32_t>(policy.kept().size());
      EvictionDetail detail;
      absl::StatusOr<std::vector<Position>> victims =
          policy.Step(input, options.record_cut ? &detail : nullptr);
      if (!victims.ok()) {
        // The scenario checks passed, so a policy cannot refuse; kept for
        // a policy's own checks all the same.
        result.refusal = victims.status();
        result.refused_step = static_cast<int64_t>(index);
        return result;
      }
      record.victims = *std::move(victims);
      if (options.record_cut && !record.victims.empty()) {
        record.cut = CutOf(detail);
      }
      record.kept_count = static_cast<uint32_t>(policy.kept().size());
    }
    // spec/heads.md#the-eviction-log: one set in the step's own fields,
    // several in `sets`.
    if (records.size() == 1) {
      result.steps.push_back(std::move(records[0]));
    } else {
      StepRecord combined;
      combined.sets = std::move(records);
      result.steps.push_back(std::move(combined));
    }
    next_position += step.admit;
  }
  return result;
}

}  // namespace

std::vector<RankedCandidate> CutOf(const EvictionDetail& detail) {
  const size_t end = std::min(detail.ranked.size(), detail.victims + kCutMargin);
  return std::vector<RankedCandidate>(detail.ranked.begin(),
                                      detail.ranked.begin() + end);
}

RunResult RunScenario(Policy& policy, const Scenario& scenario,
                      const RunOptions& options) {
  const absl::Status shape = CheckScenarioShape(scenario);
  if (!shape.ok()) {
    RunResult result;
    result.refusal = shape;
    return result;
  }
  const HeadCounts heads = HeadsOf(scenario);
  if (policy.heads() != heads.query_heads) {
    RunResult result;
    result.refusal = Refuse(
        ErrorCategory::kInvalidHeads,
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
    return RunTraceSetsScenario(sets, {every}, scenario, options);
  }
  return RunSets(sets, {every}, scenario, options);
}

RunResult RunScenario(const PolicyConfig& config, const Scenario& scenario,
                      const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) {
    RunResult result;
    result.refusal = policy.status();
    return result;
  }
  const absl::Status shape = CheckScenarioShape(scenario);
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
  if (scenario.trace.has_value()) {
    return RunTraceSetsScenario(sets, covers, scenario, options);
  }
  return RunSets(sets, covers, scenario, options);
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
