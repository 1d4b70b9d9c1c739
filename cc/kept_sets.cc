// Runs through several kept sets (spec/heads.md): a layer's query heads
// split into sets, each with its own policy, stepped together; with
// head-adaptive budgets one shared budget and one joint ranking across them
// (spec/heads.md#head-adaptive-budgets), and the log of a step with several
// sets (spec/heads.md#the-eviction-log). A one-set run over explicit steps
// goes through RunSets too, with one set covering every head.
#include "cc/harness_internal.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/text.h"

namespace kvspec {

using internal::CheckScenarioStep;
using internal::HeadsOf;
using internal::ObservationOf;
using internal::RowOf;

SharedBudget SharedBudgetOf(const PolicyConfig& config, size_t sets) {
  SharedBudget shared;
  if (sets < 2 || !TakesParameter(config.name, "adaptive") ||
      EffectiveParameter(config, "adaptive") == 0) {
    return shared;
  }
  const int64_t budget = EffectiveParameter(config, "budget");
  const int64_t permille = EffectiveParameter(config, "safeguard_permille");
  shared.on = true;
  shared.layer_budget = static_cast<size_t>(budget) * sets;
  shared.floor =
      permille == 0 ? 0
                    : static_cast<size_t>(std::max<int64_t>(1, budget * permille / 1000));
  return shared;
}

namespace {

// One candidate of the joint ranking: a kept slot of one set.
struct Pair {
  double score;
  Position position;
  size_t set;
  size_t slot;
};

// spec/heads.md#head-adaptive-budgets: after every set has admitted, the
// layer evicts its excess over the shared budget by one joint ranking
// (score, then position, then set), skipping a pair whose set is at its
// floor. Fills each record's victims and, when asked, its cut.
void EvictShared(absl::Span<Policy* const> sets, const SharedBudget& shared,
                 bool record_cut, const RankingObserver& on_ranking,
                 int64_t step, std::vector<StepRecord>& records) {
  size_t total = 0;
  for (Policy* policy : sets) total += policy->kept().size();
  if (total <= shared.layer_budget) return;
  size_t excess = total - shared.layer_budget;
  std::vector<Pair> pairs;
  std::vector<double> scores;
  for (size_t s = 0; s < sets.size(); ++s) {
    size_t candidate_end = 0;
    const bool scored = sets[s]->ScoreSlots(scores, candidate_end);
    assert(scored);
    (void)scored;
    for (size_t slot = 0; slot < candidate_end; ++slot) {
      pairs.push_back({scores[slot], sets[s]->kept()[slot], s, slot});
    }
  }
  const auto ranks_lower = [](const Pair& a, const Pair& b) {
    if (a.score != b.score) return a.score < b.score;
    if (a.position != b.position) return a.position < b.position;
    return a.set < b.set;
  };
  // The walk below reads the ranking from its lowest pair. Without a cut to
  // record it usually needs only the lowest `excess` pairs: select those
  // (O(pairs)) and sort them; if a floor made the walk skip one, rank
  // everything. The order is total, so both give the same victims.
  size_t ranked_end = pairs.size();
  if (!record_cut && !on_ranking && excess < pairs.size()) {
    std::nth_element(pairs.begin(), pairs.begin() + excess, pairs.end(),
                     ranks_lower);
    std::sort(pairs.begin(), pairs.begin() + excess, ranks_lower);
    std::vector<size_t> counts(sets.size());
    for (size_t s = 0; s < sets.size(); ++s) counts[s] = sets[s]->kept().size();
    bool floor_binds = false;
    for (size_t i = 0; i < excess && !floor_binds; ++i) {
      floor_binds = counts[pairs[i].set] <= shared.floor;
      --counts[pairs[i].set];
    }
    ranked_end = floor_binds ? pairs.size() : excess;
  }
  if (ranked_end == pairs.size()) {
    std::sort(pairs.begin(), pairs.end(), ranks_lower);
  }
  pairs.resize(ranked_end);
  std::vector<size_t> counts;
  for (Policy* policy : sets) counts.push_back(policy->kept().size());
  std::vector<std::vector<size_t>> slots(sets.size());
  std::vector<std::vector<RankedCandidate>> ranked(sets.size());
  RankingObservation observation;
  if (on_ranking) {
    observation.joint = true;
    observation.floor = shared.floor;
    observation.kept_before = counts;
  }
  for (const Pair& pair : pairs) {
    const bool take = excess > 0 && counts[pair.set] > shared.floor;
    if (on_ranking) {
      observation.ranking.push_back({pair.position, pair.score, pair.set, take});
    }
    if (take) {
      slots[pair.set].push_back(pair.slot);
      --counts[pair.set];
      --excess;
    }
    // spec/vectors.md#the-cut, per set: the set's victims, then up to
    // kCutMargin of its next candidates, in the joint order.
    std::vector<RankedCandidate>& cut = ranked[pair.set];
    if (record_cut && (take || (!slots[pair.set].empty() &&
                                cut.size() < slots[pair.set].size() + kCutMargin))) {
      cut.push_back({pair.position, pair.score});
    }
  }
  assert(excess == 0);
  if (on_ranking) on_ranking(step, observation);
  for (size_t s = 0; s < sets.size(); ++s) {
    std::sort(slots[s].begin(), slots[s].end());
    records[s].victims = sets[s]->EvictSlots(slots[s]);
    if (record_cut && !records[s].victims.empty()) records[s].cut = ranked[s];
  }
}

}  // namespace

absl::StatusOr<std::vector<StepRecord>> StepSets(
    absl::Span<Policy* const> sets, absl::Span<const StepInput> inputs,
    const SharedBudget& shared, bool record_cut,
    const RankingObserver& on_ranking, int64_t step) {
  std::vector<StepRecord> records(sets.size());
  for (size_t s = 0; s < sets.size(); ++s) {
    Policy& policy = *sets[s];
    StepRecord& record = records[s];
    record.query_cache_position = static_cast<uint32_t>(policy.kept().size());
    if (shared.on) {
      KVSPEC_RETURN_IF_ERROR(policy.AdmitStep(inputs[s]));
      continue;
    }
    EvictionDetail detail;
    absl::StatusOr<std::vector<Position>> victims = policy.Step(
        inputs[s], record_cut || on_ranking ? &detail : nullptr);
    if (!victims.ok()) return victims.status();
    record.victims = *std::move(victims);
    record.spans = policy.step_spans();  // spec/spans.md#the-log
    record.held = policy.step_held();
    if (record_cut && !record.victims.empty()) record.cut = CutOf(detail);
    if (on_ranking && !record.victims.empty() && !detail.ranked.empty()) {
      on_ranking(step, ObservationOf(detail, s));
    }
  }
  if (shared.on) EvictShared(sets, shared, record_cut, on_ranking, step, records);
  for (size_t s = 0; s < sets.size(); ++s) {
    records[s].kept_count = static_cast<uint32_t>(sets[s]->kept().size());
  }
  return records;
}

namespace {

// spec/heads.md#the-eviction-log: one set in the step's own fields,
// several in `sets`.
StepRecord LogRecord(std::vector<StepRecord> records) {
  if (records.size() == 1) return std::move(records[0]);
  StepRecord combined;
  combined.sets = std::move(records);
  return combined;
}

}  // namespace

namespace internal {

RunResult RunTraceSetsScenario(absl::Span<Policy* const> sets,
                               const std::vector<std::vector<uint32_t>>& covers,
                               const SharedBudget& shared,
                               const Scenario& scenario,
                               const RunOptions& options) {
  RunResult result;
  std::vector<TraceGenerator> heads;
  for (uint32_t h = 0; h < HeadsOf(scenario).query_heads; ++h) {
    absl::StatusOr<TraceGenerator> head =
        TraceGenerator::CreateForHead(*scenario.trace, h);
    if (!head.ok()) {
      result.refusal = head.status();  // INVALID_TRACE, step -1
      return result;
    }
    heads.push_back(*std::move(head));
  }
  std::vector<std::vector<float>> gathered(sets.size());
  std::vector<StepInput> inputs(sets.size());
  while (true) {
    bool more = true;
    for (TraceGenerator& head : heads) more = head.Advance() && more;
    if (!more) break;
    const uint32_t step = heads[0].step();
    for (size_t s = 0; s < sets.size(); ++s) {
      gathered[s].clear();
      for (uint32_t h : covers[s]) {
        for (Position position : sets[s]->kept()) {
          gathered[s].push_back(heads[h].Weight(position));
        }
      }
      inputs[s] = {step, 1, absl::MakeConstSpan(gathered[s])};
    }
    absl::StatusOr<std::vector<StepRecord>> records =
        StepSets(sets, inputs, shared, options.record_cut, options.on_ranking,
                 static_cast<int64_t>(result.steps.size()));
    if (!records.ok()) {
      result.refusal = records.status();
      result.refused_step = step;
      return result;
    }
    result.steps.push_back(LogRecord(*std::move(records)));
  }
  return result;
}

RunResult RunSets(absl::Span<Policy* const> sets,
                  const std::vector<std::vector<uint32_t>>& covers,
                  const SharedBudget& shared, const Scenario& scenario,
                  const RunOptions& options) {
  RunResult result;
  const HeadCounts counts = HeadsOf(scenario);
  const uint32_t query_heads = counts.query_heads;
  const TensorShape tensor_shape{counts.kv_heads, scenario.head_dim,
                                 scenario.value_dim};
  // spec/tensors.md#what-a-policy-sees: the KV heads of each set's query
  // heads, ascending and once each.
  std::vector<std::vector<uint32_t>> key_heads(sets.size());
  for (size_t s = 0; s < sets.size(); ++s) {
    const uint32_t group = counts.query_heads / counts.kv_heads;
    for (uint32_t head : covers[s]) {
      if (key_heads[s].empty() || key_heads[s].back() != head / group) {
        key_heads[s].push_back(head / group);
      }
    }
  }
  uint64_t next_position = 0;
  std::vector<std::vector<float>> gathered(sets.size());
  std::vector<std::vector<float>> gathered_queries(sets.size());
  std::vector<std::vector<double>> gathered_totals(sets.size());
  std::vector<std::vector<float>> gathered_keys(sets.size());
  std::vector<std::vector<float>> gathered_values(sets.size());
  std::vector<StepInput> inputs(sets.size());
  for (size_t index = 0; index < scenario.steps.size(); ++index) {
    const ScenarioStep& step = scenario.steps[index];
    absl::Status status =
        CheckScenarioStep(step, static_cast<int64_t>(index), next_position,
                          query_heads, tensor_shape);
    if (!status.ok()) {
      result.refusal = status;
      result.refused_step = static_cast<int64_t>(index);
      return result;
    }
    const bool has_rows = step.attention.has_value() || !step.heads.empty();
    const size_t query_rows = step.queries.size() / query_heads;
    for (size_t s = 0; s < sets.size(); ++s) {
      if (query_rows > 0) {
        // spec/prefill.md#what-a-policy-sees: each covered head's query
        // rows at the set's kept positions after admission: the positions
        // kept before the step, then the chunk's up to the row's query.
        gathered_queries[s].clear();
        for (uint32_t head : covers[s]) {
          for (size_t j = 0; j < query_rows; ++j) {
            const std::vector<float>& row = step.queries[head * query_rows + j];
            for (Position position : sets[s]->kept()) {
              gathered_queries[s].push_back(row[position]);
            }
            for (uint64_t position = next_position; position < row.size();
                 ++position) {
              gathered_queries[s].push_back(row[position]);
            }
          }
        }
      }
      // spec/harness.md#what-a-policy-sees: each covered head's weights of
      // the set's kept positions, in kept order, exactly as its row gives
      // them; heads in ascending order (spec/heads.md#what-each-head-records).
      inputs[s] = StepInput{static_cast<Position>(next_position), step.admit,
                            std::nullopt};
      if (query_rows > 0) {
        inputs[s].queries = absl::MakeConstSpan(gathered_queries[s]);
        inputs[s].query_rows = static_cast<uint32_t>(query_rows);
      }
      if (!step.totals.empty()) {
        // spec/prefill.md#column-totals: each covered head's totals at the
        // set's kept positions after admission, as the rows are gathered.
        gathered_totals[s].clear();
        for (uint32_t head : covers[s]) {
          const std::vector<double>& totals = step.totals[head];
          for (Position position : sets[s]->kept()) {
            gathered_totals[s].push_back(totals[position]);
          }
          for (uint64_t position = next_position; position < totals.size();
               ++position) {
            gathered_totals[s].push_back(totals[position]);
          }
        }
        inputs[s].totals = absl::MakeConstSpan(gathered_totals[s]);
        inputs[s].total_rows = step.total_rows;
      }
      if (!step.keys.empty() && sets[s]->reads_keys()) {
        // spec/tensors.md#what-a-policy-sees: the set's KV heads' keys of
        // the admitted positions, KV head ascending.
        gathered_keys[s].clear();
        for (uint32_t head : key_heads[s]) {
          gathered_keys[s].insert(gathered_keys[s].end(),
                                  step.keys[head].begin(),
                                  step.keys[head].end());
        }
        inputs[s].keys = absl::MakeConstSpan(gathered_keys[s]);
        inputs[s].key_heads = static_cast<uint32_t>(key_heads[s].size());
        inputs[s].head_dim = *scenario.head_dim;
      }
      if (!step.values.empty() && sets[s]->reads_values()) {
        // spec/tensors.md#what-a-policy-sees: the values, as the keys.
        gathered_values[s].clear();
        for (uint32_t head : key_heads[s]) {
          gathered_values[s].insert(gathered_values[s].end(),
                                    step.values[head].begin(),
                                    step.values[head].end());
        }
        inputs[s].values = absl::MakeConstSpan(gathered_values[s]);
        inputs[s].key_heads = static_cast<uint32_t>(key_heads[s].size());
        inputs[s].value_dim = *scenario.value_dim;
      }
      if (!has_rows) continue;
      gathered[s].clear();
      for (uint32_t head : covers[s]) {
        const std::vector<float>& row = RowOf(step, head);
        for (Position position : sets[s]->kept()) {
          gathered[s].push_back(row[position]);
        }
      }
      inputs[s].attention = absl::MakeConstSpan(gathered[s]);
    }
    absl::StatusOr<std::vector<StepRecord>> records =
        StepSets(sets, inputs, shared, options.record_cut, options.on_ranking,
                 static_cast<int64_t>(result.steps.size()));
    if (!records.ok()) {
      // The scenario checks passed, so a policy cannot refuse; kept for a
      // policy's own checks all the same.
      result.refusal = records.status();
      result.refused_step = static_cast<int64_t>(index);
      return result;
    }
    result.steps.push_back(LogRecord(*std::move(records)));
    next_position += step.admit;
  }
  return result;
}

}  // namespace internal
}  // namespace kvspec
