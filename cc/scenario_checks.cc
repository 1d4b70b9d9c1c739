// The checks of a scenario before and at each step (spec/harness.md#refusals,
// spec/prefill.md#checks, spec/heads.md#rows-per-head): which refusal a
// malformed scenario or step gets, in the order the spec lists the checks.
// Declared in cc/harness_internal.h; RunScenario (cc/harness.cc) and the
// kept-set runs (cc/kept_sets.cc) call them.
#include "cc/harness_internal.h"

#include <algorithm>
#include <array>
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

// One of a step's tensors (spec/tensors.md#the-fields): its field, the
// noun its messages use, the scenario field giving its length, and that
// length (absent in a scenario without it).
struct Tensor {
  const char* field;     // "keys", "values"
  const char* noun;      // "key", "value"
  const char* dim_name;  // "head_dim", "value_dim"
  std::optional<uint32_t> dim;
  const std::vector<std::vector<float>>& lists;
};

std::array<Tensor, 2> TensorsOf(const ScenarioStep& step,
                                const TensorShape& shape) {
  return {Tensor{"keys", "key", "head_dim", shape.head_dim, step.keys},
          Tensor{"values", "value", "value_dim", shape.value_dim, step.values}};
}

// spec/tensors.md#checks, step check 3's last part: the keys' shape, then
// the values', after the column totals' shape: one list per KV head in a
// scenario with the tensor (none in one without), then each list's length,
// KV head 0 first.
absl::Status CheckTensorShape(const Tensor& tensor, const ScenarioStep& step,
                              int64_t index, uint32_t kv_heads) {
  const size_t lists = tensor.dim.has_value() ? kv_heads : 0;
  if (tensor.lists.size() != lists) {
    return Refuse(ErrorCategory::kAttentionLength, {"length", {tensor.field}},
                  tensor.dim.has_value()
                      ? absl::StrFormat("step %d: %d %s lists for %d KV "
                                        "heads; a scenario with %s "
                                        "carries one per KV head",
                                        index, tensor.lists.size(), tensor.noun,
                                        lists, tensor.dim_name)
                      : absl::StrFormat("step %d: %d %s lists in a scenario "
                                        "without %s, which carries none",
                                        index, tensor.lists.size(), tensor.noun,
                                        tensor.dim_name));
  }
  for (size_t head = 0; head < tensor.lists.size(); ++head) {
    const uint64_t want = uint64_t{step.admit} * *tensor.dim;
    if (tensor.lists[head].size() != want) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {tensor.field}},
                    absl::StrFormat("step %d: the %s of KV head %d hold %d "
                                    "values; admit x %s is %d x %d = %d",
                                    index, tensor.field, head,
                                    tensor.lists[head].size(), tensor.dim_name,
                                    step.admit, *tensor.dim, want));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTensorsShape(const ScenarioStep& step, int64_t index,
                               const TensorShape& shape) {
  for (const Tensor& tensor : TensorsOf(step, shape)) {
    KVSPEC_RETURN_IF_ERROR(CheckTensorShape(tensor, step, index, shape.kv_heads));
  }
  return absl::OkStatus();
}

// spec/tensors.md#checks, step check 4's last part: every key entry is
// finite (keys are signed: negative values and -0.0 are accepted), KV head 0
// first, index 0 up; then every value entry the same way.
absl::Status CheckTensorsValues(const ScenarioStep& step, int64_t index,
                                const TensorShape& shape) {
  for (const Tensor& tensor : TensorsOf(step, shape)) {
    for (size_t head = 0; head < tensor.lists.size(); ++head) {
      const std::vector<float>& entries = tensor.lists[head];
      for (size_t i = 0; i < entries.size(); ++i) {
        if (std::isfinite(entries[i])) continue;
        return Refuse(ErrorCategory::kAttentionValue, {"value", {tensor.field}},
                      absl::StrFormat("step %d: %s entry %d of KV head %d is "
                                      "%s; %s entries must be finite",
                                      index, tensor.noun, i, head,
                                      FloatText(entries[i]), tensor.noun));
      }
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
                               const TensorShape& tensor_shape) {
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
    KVSPEC_RETURN_IF_ERROR(CheckTensorsShape(step, index, tensor_shape));
    KVSPEC_RETURN_IF_ERROR(
        CheckQueryWeights(step, index, next_position, query_heads));
    KVSPEC_RETURN_IF_ERROR(CheckTotalsValues(step, index));
    return CheckTensorsValues(step, index, tensor_shape);
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
  KVSPEC_RETURN_IF_ERROR(CheckTensorsShape(step, index, tensor_shape));
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
  return CheckTensorsValues(step, index, tensor_shape);
}

absl::Status CheckScenarioShape(const Scenario& scenario,
                                const TensorNeeds& needs) {
  if (scenario.trace.has_value() && !scenario.steps.empty()) {
    return Refuse(ErrorCategory::kInvalidTrace, {"rule", {"steps", "trace"}},
                  "a scenario has either steps or a trace, not both");
  }
  KVSPEC_RETURN_IF_ERROR(CheckHeadCounts(HeadsOf(scenario)));
  // spec/tensors.md#checks, the scenario's shape, in its order: 1 and 2.
  const std::pair<const char*, std::optional<uint32_t>> dims[] = {
      {"head_dim", scenario.head_dim}, {"value_dim", scenario.value_dim}};
  for (const auto& [name, dim] : dims) {
    if (dim.has_value() && (*dim < 1 || *dim > kMaxHeadDim)) {
      return Refuse(ErrorCategory::kInvalidHeads, {"range", {name}},
                    absl::StrFormat("%s must be in [1, %d], got %d", name,
                                    kMaxHeadDim, *dim));
    }
  }
  // 3 and 4: a generated trace has no tensors.
  for (const auto& [name, dim] : dims) {
    if (dim.has_value() && scenario.trace.has_value()) {
      return Refuse(ErrorCategory::kInvalidTrace, {"rule", {name, "trace"}},
                    absl::StrFormat("a generated trace has no %s: %s cannot "
                                    "be given beside a trace",
                                    std::string(name) == "head_dim" ? "keys"
                                                                    : "values",
                                    name));
    }
  }
  // 5 and 6: what the policy reads is there, and long enough.
  const struct {
    bool reads;
    const char* tensor;
    const char* name;
    std::optional<uint32_t> dim;
    uint32_t least;
  } needed[] = {
      {needs.keys, "keys", "head_dim", scenario.head_dim, needs.least_head_dim},
      {needs.values, "values", "value_dim", scenario.value_dim,
       needs.least_value_dim}};
  for (const auto& need : needed) {
    if (!need.reads) continue;
    if (!need.dim.has_value()) {
      return Refuse(ErrorCategory::kInvalidHeads, {"range", {need.name}},
                    absl::StrFormat("the policy reads %s, and the scenario "
                                    "has none: give %s and each step's %s "
                                    "(spec/tensors.md)",
                                    need.tensor, need.name, need.tensor));
    }
    if (*need.dim < need.least) {
      return Refuse(ErrorCategory::kInvalidHeads, {"range", {need.name}},
                    absl::StrFormat("the policy needs %s of at least %d "
                                    "entries (its card), got %s %d",
                                    need.tensor, need.least, need.name,
                                    *need.dim));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace kvspec
