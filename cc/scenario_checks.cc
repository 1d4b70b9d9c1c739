// The checks of a scenario before and at each step (spec/harness.md#refusals,
// spec/prefill.md#checks, spec/heads.md#rows-per-head): which refusal a
// malformed scenario or step gets, in the order the spec lists the checks.
// Declared in cc/harness_internal.h; RunScenario (cc/harness.cc) and the
// kept-set runs (cc/kept_sets.cc) call them.
#include "cc/harness_internal.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/text.h"

namespace kvspec {
namespace internal {
namespace {

// spec/prefill.md#checks, step check 3's second half: the query rows'
// shape and every row's length, after the rows' lengths.
absl::Status CheckQueryShape(const ScenarioStep& step, int64_t index,
                            uint64_t next_position, uint32_t query_heads) {
  if (step.queries.empty()) return absl::OkStatus();
  if (step.attention.has_value() || !step.heads.empty()) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {"queries"}},
                  absl::StrFormat("step %d: a step with query rows carries "
                                  "no other row (`attention` absent, `heads` "
                                  "empty)",
                                  index));
  }
  if (step.queries.size() % query_heads != 0 ||
      step.queries.size() / query_heads > step.admit) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {"queries"}},
                  absl::StrFormat("step %d: %d query rows for %d query heads; "
                                  "a step carries m rows per head, 1 <= m <= "
                                  "its admit (%d)",
                                  index, step.queries.size(), query_heads,
                                  step.admit));
  }
  const size_t rows = step.queries.size() / query_heads;
  const uint64_t first_query = next_position + step.admit - rows;
  for (size_t i = 0; i < step.queries.size(); ++i) {
    const uint64_t query = first_query + i % rows;
    if (step.queries[i].size() != query + 1) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {"queries"}},
                    absl::StrFormat("step %d: the query row of head %d for "
                                    "position %d has %d weights; a query row "
                                    "covers positions 0..q: %d",
                                    index, i / rows, query,
                                    step.queries[i].size(), query + 1));
    }
  }
  return absl::OkStatus();
}

// spec/prefill.md#checks, step check 4's second half: every weight of the
// query rows, after the rows' weights. Requires CheckQueryShape passed.
absl::Status CheckQueryWeights(const ScenarioStep& step, int64_t index,
                               uint64_t next_position, uint32_t query_heads) {
  if (step.queries.empty()) return absl::OkStatus();
  const size_t rows = step.queries.size() / query_heads;
  const uint64_t first_query = next_position + step.admit - rows;
  for (size_t i = 0; i < step.queries.size(); ++i) {
    absl::Status status =
        CheckWeights(absl::MakeConstSpan(step.queries[i]), index,
                     [](size_t k) { return static_cast<Position>(k); },
                     "queries");
    if (!status.ok()) {
      return Rephrase(status,
                    absl::StrFormat("query row of head %d for position %d: %s",
                                    i / rows, first_query + i % rows,
                                    status.message()));
    }
  }
  return absl::OkStatus();
}

// spec/prefill.md#their-checks, step check 3's last part: the column
// totals' shape, after the query rows' shape (which passed).
absl::Status CheckTotalsShape(const ScenarioStep& step, int64_t index,
                              uint64_t next_position, uint32_t query_heads) {
  if (step.totals.empty() && step.total_rows == 0) return absl::OkStatus();
  if (step.queries.empty() || step.totals.size() != query_heads ||
      step.total_rows == 0 || step.total_rows > step.admit) {
    // In the spec's order: query rows beside, one list per head, then
    // total_rows in 1..admit.
    const char* field =
        step.queries.empty() || step.totals.size() != query_heads
            ? "totals"
            : "total_rows";
    return Refuse(ErrorCategory::kAttentionLength, {"length", {field}},
                  absl::StrFormat("step %d: column totals need query rows "
                                  "beside them, one list per query head (%d) "
                                  "and total_rows 1..admit (%d); got %d "
                                  "lists, total_rows %d%s",
                                  index, query_heads, step.admit,
                                  step.totals.size(), step.total_rows,
                                  step.queries.empty() ? ", no query rows"
                                                       : ""));
  }
  const uint64_t positions = next_position + step.admit;
  for (size_t head = 0; head < step.totals.size(); ++head) {
    if (step.totals[head].size() != positions) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {"totals"}},
                    absl::StrFormat("step %d: the column totals of head %d "
                                    "hold %d values; they need one per "
                                    "position 0..%d: %d",
                                    index, head, step.totals[head].size(),
                                    positions - 1, positions));
    }
  }
  return absl::OkStatus();
}

// spec/prefill.md#their-checks, step check 4's last part: every total is
// finite with its sign bit clear, head 0 first, position 0 up.
absl::Status CheckTotalsValues(const ScenarioStep& step, int64_t index) {
  for (size_t head = 0; head < step.totals.size(); ++head) {
    const std::vector<double>& totals = step.totals[head];
    for (size_t position = 0; position < totals.size(); ++position) {
      if (TotalValid(totals[position])) continue;
      return Refuse(ErrorCategory::kAttentionValue, {"value", {"totals"}},
                    absl::StrFormat("step %d: the column total of head %d for "
                                    "position %d is %s; totals must be finite "
                                    "and >= +0.0",
                                    index, head, position,
                                    FloatText(totals[position])));
    }
  }
  return absl::OkStatus();
}

// spec/tensors.md#checks, step check 3's last part: the keys' shape, after
// the column totals' shape: one list per KV head in a scenario with keys
// (none in one without), then each list's length, KV head 0 first.
absl::Status CheckKeysShape(const ScenarioStep& step, int64_t index,
                            const KeyShape& shape) {
  const size_t lists = shape.head_dim.has_value() ? shape.kv_heads : 0;
  if (step.keys.size() != lists) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {"keys"}},
                  shape.head_dim.has_value()
                      ? absl::StrFormat("step %d: %d key lists for %d KV "
                                        "heads; a scenario with head_dim "
                                        "carries one per KV head",
                                        index, step.keys.size(), lists)
                      : absl::StrFormat("step %d: %d key lists in a scenario "
                                        "without head_dim, which carries none",
                                        index, step.keys.size()));
  }
  for (size_t head = 0; head < step.keys.size(); ++head) {
    const uint64_t want = uint64_t{step.admit} * *shape.head_dim;
    if (step.keys[head].size() != want) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {"keys"}},
                    absl::StrFormat("step %d: the keys of KV head %d hold %d "
                                    "values; admit x head_dim is %d x %d = %d",
                                    index, head, step.keys[head].size(),
                                    step.admit, *shape.head_dim, want));
    }
  }
  return absl::OkStatus();
}

// spec/tensors.md#checks, step check 4's last part: every key entry is
// finite (keys are signed: negative values and -0.0 are accepted), KV head 0
// first, index 0 up.
absl::Status CheckKeysValues(const ScenarioStep& step, int64_t index) {
  for (size_t head = 0; head < step.keys.size(); ++head) {
    const std::vector<float>& keys = step.keys[head];
    for (size_t i = 0; i < keys.size(); ++i) {
      if (std::isfinite(keys[i])) continue;
      return Refuse(ErrorCategory::kAttentionValue, {"value", {"keys"}},
                    absl::StrFormat("step %d: key entry %d of KV head %d is "
                                    "%s; key entries must be finite",
                                    index, i, head, FloatText(keys[i])));
    }
  }
  return absl::OkStatus();
}

}  // namespace

HeadCounts HeadsOf(const Scenario& scenario) {
  return {scenario.query_heads.value_or(1), scenario.kv_heads.value_or(1)};
}

const std::vector<float>& RowOf(const ScenarioStep& step, uint32_t head) {
  return step.attention.has_value() ? *step.attention : step.heads[head];
}

absl::Status CheckScenarioStep(const ScenarioStep& step, int64_t index,
                               uint64_t next_position, uint32_t query_heads,
                               const KeyShape& key_shape) {
  if (step.admit == 0) {
    return Refuse(ErrorCategory::kPosition, absl::StatusCode::kInvalidArgument,
                  {"range", {"admit"}},
                  absl::StrFormat("step %d: a step must admit at least one "
                                  "position, got admit 0",
                                  index));
  }
  const uint64_t last = next_position + step.admit - 1;
  if (last > std::numeric_limits<Position>::max()) {
    return Refuse(ErrorCategory::kPosition, absl::StatusCode::kOutOfRange,
                  {"rule", {"admit"}},
                  absl::StrFormat("step %d: positions %d..%d run past the "
                                  "largest position 2^32 - 1",
                                  index, next_position, last));
  }
  // heads.md#rows-per-head: which field carries the rows, and how many.
  if (query_heads == 1 && !step.heads.empty()) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {"heads"}},
                  absl::StrFormat("step %d: a scenario with one query head "
                                  "carries its row in `attention`; `heads` "
                                  "must be empty, got %d rows",
                                  index, step.heads.size()));
  }
  if (query_heads > 1 && step.attention.has_value()) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {"attention"}},
                  absl::StrFormat("step %d: a scenario with %d query heads "
                                  "carries its rows in `heads`; `attention` "
                                  "must be absent",
                                  index, query_heads));
  }
  if (query_heads > 1 && !step.heads.empty() &&
      step.heads.size() != query_heads) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {"heads"}},
                  absl::StrFormat("step %d: %d head rows for %d query heads; "
                                  "a step needs one row per query head",
                                  index, step.heads.size(), query_heads));
  }
  const bool has_rows = step.attention.has_value() || !step.heads.empty();
  if (!has_rows) {
    KVSPEC_RETURN_IF_ERROR(
        CheckQueryShape(step, index, next_position, query_heads));
    KVSPEC_RETURN_IF_ERROR(
        CheckTotalsShape(step, index, next_position, query_heads));
    KVSPEC_RETURN_IF_ERROR(CheckKeysShape(step, index, key_shape));
    KVSPEC_RETURN_IF_ERROR(
        CheckQueryWeights(step, index, next_position, query_heads));
    KVSPEC_RETURN_IF_ERROR(CheckTotalsValues(step, index));
    return CheckKeysValues(step, index);
  }
  // Every row's length, head 0 first, before any weight.
  for (uint32_t head = 0; head < query_heads; ++head) {
    const std::vector<float>& row = RowOf(step, head);
    if (row.size() != next_position) {
      return Refuse(
          ErrorCategory::kAttentionLength,
          {"length", {query_heads == 1 ? "attention" : "heads"}},
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
  KVSPEC_RETURN_IF_ERROR(CheckQueryShape(step, index, next_position, query_heads));
  KVSPEC_RETURN_IF_ERROR(
      CheckTotalsShape(step, index, next_position, query_heads));
  KVSPEC_RETURN_IF_ERROR(CheckKeysShape(step, index, key_shape));
  for (uint32_t head = 0; head < query_heads; ++head) {
    absl::Status status =
        CheckWeights(absl::MakeConstSpan(RowOf(step, head)), index,
                     [](size_t i) { return static_cast<Position>(i); },
                     query_heads == 1 ? "attention" : "heads");
    if (!status.ok()) {
      if (query_heads == 1) return status;
      return Rephrase(status,
                      absl::StrFormat("head %d: %s", head, status.message()));
    }
  }
  KVSPEC_RETURN_IF_ERROR(
      CheckQueryWeights(step, index, next_position, query_heads));
  KVSPEC_RETURN_IF_ERROR(CheckTotalsValues(step, index));
  return CheckKeysValues(step, index);
}

absl::Status CheckScenarioShape(const Scenario& scenario,
                                bool policy_reads_keys) {
  if (scenario.trace.has_value() && !scenario.steps.empty()) {
    return Refuse(ErrorCategory::kInvalidTrace, {"rule", {"steps", "trace"}},
                  "a scenario has either steps or a trace, not both");
  }
  KVSPEC_RETURN_IF_ERROR(CheckHeadCounts(HeadsOf(scenario)));
  // spec/tensors.md#checks, the scenario's shape, in its order.
  if (scenario.head_dim.has_value() &&
      (*scenario.head_dim < 1 || *scenario.head_dim > kMaxHeadDim)) {
    return Refuse(ErrorCategory::kInvalidHeads, {"range", {"head_dim"}},
                  absl::StrFormat("head_dim must be in [1, %d], got %d",
                                  kMaxHeadDim, *scenario.head_dim));
  }
  if (scenario.head_dim.has_value() && scenario.trace.has_value()) {
    return Refuse(ErrorCategory::kInvalidTrace, {"rule", {"head_dim", "trace"}},
                  "a generated trace has no keys: head_dim cannot be given "
                  "beside a trace");
  }
  if (policy_reads_keys && !scenario.head_dim.has_value()) {
    return Refuse(ErrorCategory::kInvalidHeads, {"range", {"head_dim"}},
                  "the policy reads keys, and the scenario has none: give "
                  "head_dim and each step's keys (spec/tensors.md)");
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace kvspec
