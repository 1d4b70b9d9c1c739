// The harness: runs one policy over one scenario, step by step, exactly as
// spec/harness.md describes, and logs what each step evicted.
//
// A scenario gives each step's full-cache attention row: one float32 weight
// for every position admitted before the step, whether or not the policy
// still keeps it. The harness validates the row, hands the policy the weights
// of its kept positions in kept order (spec/harness.md#what-a-policy-sees:
// gathered, never renormalized), and lets the policy admit and evict.
//
// A refused step stops the run; the log holds the steps before it and the
// refusal.
//
// Example:
//   RunResult result = RunScenario(
//       {"streamingllm", {{"budget", 8}, {"sinks", 4}}}, scenario);
//   for (const StepRecord& step : result.steps) ... step.victims ...
//
// Spec: spec/harness.md
#ifndef KVSPEC_CC_HARNESS_H_
#define KVSPEC_CC_HARNESS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cc/policy.h"
#include "cc/registry.h"
#include "cc/trace.h"

namespace kvspec {

// spec/harness.md#scenarios.
struct ScenarioStep {
  // Number of positions admitted (the chunk); at least 1.
  uint32_t admit = 1;
  // Full-cache attention row: one weight per position admitted before this
  // step. nullopt is null attention. With one query head only.
  std::optional<std::vector<float>> attention;
  // With several query heads (spec/heads.md#rows-per-head): one full-cache
  // row per query head, head 0 first; empty (and `attention` nullopt) is
  // null attention.
  std::vector<std::vector<float>> heads;
  // Query rows (spec/prefill.md#query-rows): query_heads x m rows, head 0's
  // first, each head's in ascending query position; the row of query q has
  // q + 1 weights. Non-empty makes the step a prefill step.
  std::vector<std::vector<float>> queries;
  // Column totals (spec/prefill.md#column-totals), only beside query rows:
  // query_heads lists, head 0 first, each with one binary64 per position
  // 0 .. the step's last, summed over the step's last `total_rows` queries.
  // Empty (and total_rows 0): no totals.
  std::vector<std::vector<double>> totals;
  uint32_t total_rows = 0;
  // Keys (spec/tensors.md#the-fields), in a scenario with head_dim d: one
  // list per KV head, KV head 0 first, each admit x d binary32 values, the
  // admitted positions' keys in position order. Empty without head_dim.
  std::vector<std::vector<float>> keys;
  // Values (spec/tensors.md#the-fields), in a scenario with value_dim e: as
  // keys, admit x e values per KV head. Empty without value_dim.
  std::vector<std::vector<float>> values;
};

// Either explicit steps or a generated trace (spec/trace.md), not both.
struct Scenario {
  std::string id;
  std::vector<ScenarioStep> steps;
  std::optional<TraceConfig> trace;
  // spec/heads.md#head-counts; absent is 1.
  std::optional<uint32_t> query_heads;
  std::optional<uint32_t> kv_heads;
  // spec/tensors.md#the-fields: the length of every key; present makes
  // every step carry keys.
  std::optional<uint32_t> head_dim;
  // spec/tensors.md#the-fields: the length of every value; present makes
  // every step carry values.
  std::optional<uint32_t> value_dim;
};

// spec/harness.md#eviction-log.
struct StepRecord {
  std::vector<Position> victims;  // ascending
  uint32_t kept_count = 0;        // after the step
  uint32_t query_cache_position = 0;  // kept count before the step
  // spec/vectors.md#the-cut: recorded only when RunOptions::record_cut.
  std::vector<RankedCandidate> cut;
  // spec/heads.md#the-eviction-log: with more than one kept set, one record
  // per set (each with `sets` empty) and the fields above left empty.
  std::vector<StepRecord> sets;
  // spec/spans.md#the-log: with `spans` 1, one span per query (each as
  // `first, last` pairs) and the held set as runs with position ids.
  std::vector<std::vector<Position>> spans;
  std::vector<HeldRun> held;
  bool operator==(const StepRecord& other) const {
    return victims == other.victims && kept_count == other.kept_count &&
           query_cache_position == other.query_cache_position &&
           cut == other.cut && sets == other.sets && spans == other.spans &&
           held == other.held;
  }
};

// For audits (tools/census: `audit`): one ranking the harness evicted by,
// in full, where the cut (spec/vectors.md#the-cut) keeps only 4 survivors.
struct RankedPair {
  Position position = 0;
  double score = 0.0;
  size_t set = 0;  // the kept set, numbered as spec/heads.md#kept-sets
  bool evicted = false;
};
struct RankingObservation {
  // false: kept set `set`'s own ranking (spec/harness.md#victims); its
  // evicted candidates are the first ones. true: the joint ranking of sets
  // sharing a budget (spec/heads.md#head-adaptive-budgets), walked with
  // `floor` from the sets' kept counts `kept_before` (after admission).
  bool joint = false;
  size_t set = 0;
  // Every candidate, lowest rank first: by (score, position), and for the
  // joint ranking by (score, position, set).
  std::vector<RankedPair> ranking;
  size_t floor = 0;
  std::vector<size_t> kept_before;
};
// Called with the index of the step in the log.
using RankingObserver =
    std::function<void(int64_t step, const RankingObservation& observation)>;

struct RunOptions {
  // Record each score-based eviction's cut (spec/vectors.md#the-cut).
  bool record_cut = false;
  // When set, called at every eviction of a policy that ranks by score, for
  // each set that ranked by its own (or once for a joint ranking). It only
  // observes: the log is the same with or without it.
  RankingObserver on_ranking;
  // Census counterfactuals only (tools/census: the heads.floor-* flags);
  // never used for vectors. When set and the sets share a budget
  // (spec/heads.md#head-adaptive-budgets), the walk uses this floor in place
  // of the one SharedBudgetOf computes from budget and safeguard_permille.
  std::optional<size_t> floor_override;
};

// spec/vectors.md#the-cut: the victims, then up to this many of the
// lowest-ranked survivors, in rank order.
inline constexpr size_t kCutMargin = 4;

// The cut of one eviction, from its full ranking.
std::vector<RankedCandidate> CutOf(const EvictionDetail& detail);

// For test failure messages: "{victims [0 1], kept 3, query 2}".
std::ostream& operator<<(std::ostream& out, const StepRecord& record);

struct RunResult {
  std::vector<StepRecord> steps;
  // OK, or the refusal that stopped the run (a category from cc/errors.h).
  absl::Status refusal;
  // Index of the refused step; -1 when nothing was refused or when the
  // configuration itself was refused.
  int64_t refused_step = -1;
};

// Runs `scenario` through `policy`, a freshly built policy, as one kept set
// covering every query head (policy.heads() must be the scenario's
// query_heads; INVALID_HEADS otherwise). A scenario with a trace is streamed
// (RunTrace); one with both steps and a trace is refused, INVALID_TRACE.
RunResult RunScenario(Policy& policy, const Scenario& scenario,
                      const RunOptions& options = {});

// Builds the policy from `config` and runs `scenario`: one kept set per unit
// of the policy's granularity (spec/heads.md#kept-sets), each a policy built
// for its heads. A refused configuration gives an empty log with that
// refusal.
RunResult RunScenario(const PolicyConfig& config, const Scenario& scenario,
                      const RunOptions& options = {});

// spec/heads.md#head-adaptive-budgets: with `adaptive` 1 and several kept
// sets, the sets share one budget, `layer_budget` (budget x sets), and keep
// at least `floor` positions each; `on` is false otherwise.
struct SharedBudget {
  bool on = false;
  size_t layer_budget = 0;
  size_t floor = 0;
};
SharedBudget SharedBudgetOf(const PolicyConfig& config, size_t sets);

// One step of a layer's kept sets, each handed its own inputs (its heads'
// weights of its kept positions, head by head): each set's own Step(), or,
// with a shared budget, every set admits and then the layer evicts by one
// joint ranking (spec/heads.md#head-adaptive-budgets). One record per set.
// `on_ranking`, when set, observes each ranking as RunOptions::on_ranking
// does, with `step` as the step's index.
absl::StatusOr<std::vector<StepRecord>> StepSets(
    absl::Span<Policy* const> sets, absl::Span<const StepInput> inputs,
    const SharedBudget& shared, bool record_cut,
    const RankingObserver& on_ranking = nullptr, int64_t step = -1);

// spec/harness.md#cache-relative-positions: the cache-relative position of
// a kept position is its index in kept order; nullopt if not kept.
std::optional<uint32_t> CacheRelativePosition(absl::Span<const Position> kept,
                                              Position position);

}  // namespace kvspec

#endif  // KVSPEC_CC_HARNESS_H_
