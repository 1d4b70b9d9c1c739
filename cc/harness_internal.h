// What the harness's files share and nothing else calls: the scenario checks
// (cc/scenario_checks.cc), the kept-set runs (cc/kept_sets.cc) and the
// ranking view both runs report (cc/harness.cc). The public interface is
// cc/harness.h.
#ifndef KVSPEC_CC_HARNESS_INTERNAL_H_
#define KVSPEC_CC_HARNESS_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "cc/harness.h"
#include "cc/heads.h"

namespace kvspec {
namespace internal {

// The scenario's head counts: one query head and one KV head by default.
HeadCounts HeadsOf(const Scenario& scenario);

// The row of query head `head` at a step that has attention.
const std::vector<float>& RowOf(const ScenarioStep& step, uint32_t head);

// spec/tensors.md#the-fields: the largest head_dim (and value_dim).
inline constexpr uint32_t kMaxHeadDim = 1024;

// What a step's keys and values must look like (spec/tensors.md#checks):
// one list of admit x head_dim keys per KV head with a head_dim, none
// without; the same for values with value_dim.
struct TensorShape {
  uint32_t kv_heads = 1;
  std::optional<uint32_t> head_dim;
  std::optional<uint32_t> value_dim;
};

// What a policy needs of a scenario's tensors (spec/tensors.md#checks, the
// scenario's shape, checks 5 and 6).
struct TensorNeeds {
  bool keys = false;
  uint32_t least_head_dim = 1;
  bool values = false;
  uint32_t least_value_dim = 1;
};

// spec/harness.md#refusals, the checks of one step in the order the spec
// lists them; with several heads, spec/heads.md#rows-per-head; keys last
// (spec/tensors.md#checks).
absl::Status CheckScenarioStep(const ScenarioStep& step, int64_t index,
                               uint64_t next_position, uint32_t query_heads,
                               const TensorShape& tensor_shape);

// spec/harness.md#refusals, check 2, spec/heads.md#head-counts and
// spec/tensors.md#checks: steps and a trace are not both given, the head
// counts are valid, head_dim is in range and not beside a trace, and a
// policy that reads keys has them.
absl::Status CheckScenarioShape(const Scenario& scenario,
                                const TensorNeeds& needs);

// RunOptions::on_ranking's view of one set's own ranking.
RankingObservation ObservationOf(const EvictionDetail& detail, size_t set);

// A generated trace through kept sets (spec/trace.md#several-heads); the
// scenario's shape has been checked.
RunResult RunTraceSetsScenario(absl::Span<Policy* const> sets,
                               const std::vector<std::vector<uint32_t>>& covers,
                               const SharedBudget& shared,
                               const Scenario& scenario,
                               const RunOptions& options);

// Runs explicit steps through kept sets: `sets[s]` is a policy built for the
// query heads `covers[s]` (spec/heads.md#kept-sets). The scenario's shape
// has been checked.
RunResult RunSets(absl::Span<Policy* const> sets,
                  const std::vector<std::vector<uint32_t>>& covers,
                  const SharedBudget& shared, const Scenario& scenario,
                  const RunOptions& options);

}  // namespace internal
}  // namespace kvspec

#endif  // KVSPEC_CC_HARNESS_INTERNAL_H_
