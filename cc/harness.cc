#include "cc/harness.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"

namespace kvspec {
namespace {

// spec/harness.md#refusals, harness checks in the order the spec lists them.
absl::Status CheckScenarioStep(const ScenarioStep& step, int64_t index,
                               uint64_t next_position) {
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
  if (!step.attention.has_value()) return absl::OkStatus();
  const std::vector<float>& row = *step.attention;
  if (row.size() != next_position) {
    return Refuse(ErrorCategory::kAttentionLength,
                  absl::StrFormat("step %d: the attention row has %d weights "
                                  "but %d positions were admitted before "
                                  "this step; it needs one per position",
                                  index, row.size(), next_position));
  }
  return CheckWeights(absl::MakeConstSpan(row), index,
                      [](size_t i) { return static_cast<Position>(i); });
}

}  // namespace

namespace {
RunResult RunTraceScenario(Policy& policy, const Scenario& scenario,
                           const RunOptions& options) {
  RunResult result;
  if (!scenario.steps.empty()) {
    result.refusal = Refuse(ErrorCategory::kInvalidTrace,
                            "a scenario has either steps or a trace, not both");
    return result;
  }
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

}  // namespace

std::vector<RankedCandidate> CutOf(const EvictionDetail& detail) {
  const size_t end = std::min(detail.ranked.size(), detail.victims + kCutMargin);
  return std::vector<RankedCandidate>(detail.ranked.begin(),
                                      detail.ranked.begin() + end);
}

RunResult RunScenario(Policy& policy, const Scenario& scenario,
                      const RunOptions& options) {
  if (scenario.trace.has_value()) {
    return RunTraceScenario(policy, scenario, options);
  }
  RunResult result;
  uint64_t next_position = 0;
  std::vector<float> gathered;
  for (size_t index = 0; index < scenario.steps.size(); ++index) {
    const ScenarioStep& step = scenario.steps[index];
    absl::Status status =
        CheckScenarioStep(step, static_cast<int64_t>(index), next_position);
    if (!status.ok()) {
      result.refusal = status;
      result.refused_step = static_cast<int64_t>(index);
      return result;
    }

    // spec/harness.md#what-a-policy-sees: the weights of the kept positions,
    // in kept order, exactly as the row gives them.
    StepInput input;
    input.first = static_cast<Position>(next_position);
    input.count = step.admit;
    if (step.attention.has_value()) {
      gathered.clear();
      for (Position position : policy.kept()) {
        gathered.push_back((*step.attention)[position]);
      }
      input.attention = absl::MakeConstSpan(gathered);
    }

    StepRecord record;
    record.query_cache_position = static_cast<uint32_t>(policy.kept().size());
    EvictionDetail detail;
    absl::StatusOr<std::vector<Position>> victims =
        policy.Step(input, options.record_cut ? &detail : nullptr);
    if (!victims.ok()) {
      result.refusal = victims.status();
      result.refused_step = static_cast<int64_t>(index);
      return result;
    }
    record.victims = *std::move(victims);
    if (options.record_cut && !record.victims.empty()) {
      record.cut = CutOf(detail);
    }
    record.kept_count = static_cast<uint32_t>(policy.kept().size());
    result.steps.push_back(std::move(record));
    next_position += step.admit;
  }
  return result;
}

RunResult RunScenario(const PolicyConfig& config, const Scenario& scenario,
                      const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) {
    RunResult result;
    result.refusal = policy.status();
    return result;
  }
  return RunScenario(**policy, scenario, options);
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
