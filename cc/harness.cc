#include "cc/harness.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/heads.h"
#include "cc/text.h"

namespace kvspec {
namespace {

HeadCounts HeadsOf(const Scenario& scenario) {
  return {scenario.query_heads.value_or(1), scenario.kv_heads.value_or(1)};
}

// The row of query head `head` at a step that has attention.
const std::vector<float>& RowOf(const ScenarioStep& step, uint32_t head) {
  return step.attention.has_value() ? *step.attention : step.heads[head];
}

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

// spec/harness.md#refusals, the checks of one step in the order the spec
// lists them; with several heads, spec/heads.md#rows-per-head.
absl::Status CheckScenarioStep(const ScenarioStep& step, int64_t index,
                               uint64_t next_position, uint32_t query_heads) {
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
    KVSPEC_RETURN_IF_ERROR(
        CheckQueryWeights(step, index, next_position, query_heads));
    return CheckTotalsValues(step, index);
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
  return CheckTotalsValues(step, index);
}

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
                             ObservationOf(detail, 0));
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

// spec/harness.md#refusals, check 2, and spec/heads.md#head-counts: steps
// and a trace are not both given, and the head counts are valid.
absl::Status CheckScenarioShape(const Scenario& scenario) {
  if (scenario.trace.has_value() && !scenario.steps.empty()) {
    return Refuse(ErrorCategory::kInvalidTrace, {"rule", {"steps", "trace"}},
                  "a scenario has either steps or a trace, not both");
  }
  return CheckHeadCounts(HeadsOf(scenario));
}

}  // namespace

SharedBudget SharedBudgetOf(const PolicyConfig& config, size_t sets) {
  SharedBudget shared;
  if (sets < 2 || !ReadsAttention(config.name) ||
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

// A generated trace through kept sets (spec/trace.md#several-heads); the
// scenario's shape has been checked.
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

// Runs explicit steps through kept sets: `sets[s]` is a policy built for the
// query heads `covers[s]` (spec/heads.md#kept-sets). The scenario's shape
// has been checked.
RunResult RunSets(absl::Span<Policy* const> sets,
                  const std::vector<std::vector<uint32_t>>& covers,
                  const SharedBudget& shared, const Scenario& scenario,
                  const RunOptions& options) {
  RunResult result;
  const uint32_t query_heads = HeadsOf(scenario).query_heads;
  uint64_t next_position = 0;
  std::vector<std::vector<float>> gathered(sets.size());
  std::vector<std::vector<float>> gathered_queries(sets.size());
  std::vector<std::vector<double>> gathered_totals(sets.size());
  std::vector<StepInput> inputs(sets.size());
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
