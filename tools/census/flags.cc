// The flag table (spec/vectors.md#flags): for each flag on a case, the
// counterfactual check that the flag's rule decided the case. Here the flags
// of spec/harness.md (ties, victims, protected positions, null attention,
// unobserved positions, chunked admission, refusals and their check order),
// the policy cards (spec/policies/), spec/trace.md and the suite's own
// (search, bounds, defaults); the flags of spec/heads.md, spec/prefill.md and
// spec/spans.md are in flags_heads_prefill_spans.cc.
#include <algorithm>
#include <functional>

#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "tools/census/census_internal.h"
#include "tools/census/combinations.h"
#include "tools/census/mutants.h"
#include "tools/vectors/bounds.h"
#include "tools/vectors/combination_cases.h"

namespace kvspec {
namespace audit {
namespace internal {
namespace {

RunResult Run(absl::StatusOr<std::unique_ptr<Policy>> policy,
              const Scenario& scenario) {
  if (!policy.ok()) {
    RunResult result;
    result.refusal = policy.status();
    return result;
  }
  return RunScenario(**policy, scenario);
}

bool DiffersWithMutant(const CaseContext& c, Mutation mutation) {
  return !SameVictims(c.expected, Run(MakeMutant(c.config, mutation), c.scenario));
}

// harness.md#what-a-policy-sees' counterfactual: the gathered weights
// renormalized to sum to 1 over the kept positions.
RunResult RunRenormalized(const CaseContext& c) {
  RunResult result;
  auto policy = MakePolicy(c.config);
  if (!policy.ok()) {
    result.refusal = policy.status();
    return result;
  }
  uint64_t next = 0;
  for (const ScenarioStep& step : c.scenario.steps) {
    StepInput input{static_cast<Position>(next), step.admit, std::nullopt};
    std::vector<float> gathered;
    if (step.attention.has_value()) {
      double sum = 0.0;
      for (Position p : (*policy)->kept()) sum += (*step.attention)[p];
      for (Position p : (*policy)->kept()) {
        const double w = (*step.attention)[p];
        gathered.push_back(sum > 0.0 ? static_cast<float>(w / sum) : 0.0f);
      }
      input.attention = absl::MakeConstSpan(gathered);
    }
    auto victims = (*policy)->Step(input);
    if (!victims.ok()) {
      result.refusal = victims.status();
      return result;
    }
    result.steps.push_back({*victims, 0, 0, {}});
    next += step.admit;
  }
  return result;
}

// The kept sets of the source document's PyTorch StreamingKVCache (section 6
// of shared/seeds' StreamingLLM document), step by step: -1 marks a slot that
// was never written.
std::vector<std::vector<int64_t>> SeedPyTorchCache(const Scenario& scenario,
                                                   int64_t sinks,
                                                   int64_t window) {
  const int64_t capacity = sinks + window;
  std::vector<int64_t> slots(static_cast<size_t>(capacity), -1);
  int64_t current = 0;
  int64_t next = 0;
  std::vector<std::vector<int64_t>> kept_per_step;
  for (const ScenarioStep& step : scenario.steps) {
    const int64_t n = step.admit;
    int64_t active;
    if (current + n <= capacity) {
      for (int64_t i = 0; i < n; ++i) slots[current + i] = next + i;
      active = current + n;
    } else {
      const int64_t keep = window - n;
      if (keep > 0) {
        std::vector<int64_t> moved(slots.begin() + sinks + n, slots.end());
        std::copy(moved.begin(), moved.end(), slots.begin() + sinks);
      }
      const int64_t start = sinks + std::max<int64_t>(0, keep);
      const int64_t take = std::min(n, window);
      for (int64_t i = 0; i < capacity - start; ++i) {
        slots[start + i] = next + n - take + i;
      }
      active = capacity;
    }
    current = std::min(current + n, capacity);
    std::vector<int64_t> kept(slots.begin(), slots.begin() + active);
    std::sort(kept.begin(), kept.end());
    kept_per_step.push_back(kept);
    next += n;
  }
  return kept_per_step;
}

// Kept sets of the reference, step by step.
std::vector<std::vector<int64_t>> ReferenceKept(const CaseContext& c) {
  std::vector<std::vector<int64_t>> kept_per_step;
  auto policy = MakePolicy(c.config);
  if (!policy.ok()) return kept_per_step;
  uint64_t next = 0;
  for (const ScenarioStep& step : c.scenario.steps) {
    if (!(*policy)->Step({static_cast<Position>(next), step.admit, std::nullopt}).ok()) {
      break;
    }
    kept_per_step.emplace_back((*policy)->kept().begin(), (*policy)->kept().end());
    next += step.admit;
  }
  return kept_per_step;
}

bool DiffersFromSeedCache(const CaseContext& c) {
  const int64_t budget = EffectiveParameter(c.config, "budget", 0);
  const int64_t sinks = EffectiveParameter(c.config, "sinks", 0);
  return ReferenceKept(c) != SeedPyTorchCache(c.scenario, sinks, budget - sinks);
}

bool IsCanonical(const Scenario& scenario) {
  if (!scenario.trace.has_value()) return false;
  TraceConfig canonical;
  canonical.steps = scenario.trace->steps;
  const TraceConfig& t = *scenario.trace;
  return t.seed == canonical.seed && t.sinks == canonical.sinks &&
         t.sink_mass == canonical.sink_mass &&
         t.recent_length == canonical.recent_length &&
         t.recent_mass == canonical.recent_mass &&
         t.recent_decay == canonical.recent_decay &&
         t.heavy_count == canonical.heavy_count &&
         t.heavy_mass == canonical.heavy_mass &&
         t.epoch_length == canonical.epoch_length &&
         t.background_mass == canonical.background_mass &&
         t.noise == canonical.noise;
}

bool RefusedWith(const CaseContext& c, ErrorCategory category) {
  return CategoryOf(c.expected.refusal) == category;
}

// The refusal of `c` after `repair` changes its scenario: whether the run is
// then refused with another category or at another step. A fault the check
// order hid shows itself once the reported one is repaired.
bool RepairRevealsAnother(const CaseContext& c,
                          const std::function<void(Scenario&, size_t)>& repair) {
  if (c.expected.refusal.ok() || c.expected.refused_step < 0) return false;
  Scenario repaired = c.scenario;
  repair(repaired, static_cast<size_t>(c.expected.refused_step));
  const RunResult after = RunScenario(c.config, repaired, RunOptions{});
  return !after.refusal.ok() &&
         (CategoryOf(after.refusal) != CategoryOf(c.expected.refusal) ||
          after.refused_step != c.expected.refused_step);
}

}  // namespace

// The flags of heads, prefill and spans first (flags_heads_prefill_spans.cc),
// then the rest of the table.
bool Decides(const std::string& flag, const CaseContext& c, std::string* note) {
  const std::string& policy = c.config.name;
  const bool explicit_steps = !c.scenario.trace.has_value();
  if (const std::optional<bool> decided = DecidesHeadsPrefillSpans(flag, c, note)) {
    return *decided;
  }
  if (const std::optional<bool> decided = DecidesTriggers(flag, c, note)) {
    return *decided;
  }
  if (const std::optional<bool> decided = DecidesBlocks(flag, c, note)) {
    return *decided;
  }
  if (flag == "tie.lower-position") {
    for (const StepRecord& step : c.expected.steps) {
      const size_t v = step.victims.size();
      if (v > 0 && step.cut.size() > v && step.cut[v - 1].score == step.cut[v].score) {
        return true;
      }
    }
    return false;
  }
  if (flag == "victims.ascending") {
    for (const StepRecord& step : c.expected.steps) {
      for (size_t i = 1; i < step.victims.size() && i < step.cut.size(); ++i) {
        if (step.cut[i].position < step.cut[i - 1].position) return true;
      }
    }
    return false;
  }
  if (flag == "recent-window.protected") {
    const int64_t r = EffectiveParameter(c.config, "recent_window", 0);
    return r > 0 && DiffersWith(c, WithParameter(c.config, "recent_window", r - 1));
  }
  if (flag == "sinks.protected") {
    const int64_t s = EffectiveParameter(c.config, "sinks", 0);
    return s > 0 && DiffersWith(c, WithParameter(c.config, "sinks", s - 1));
  }
  if (flag == "null-attention.inert") {
    if (!explicit_steps) return false;
    Scenario zeroed = c.scenario;
    uint64_t admitted = 0;
    bool any = false;
    for (ScenarioStep& step : zeroed.steps) {
      if (!step.attention.has_value() && admitted > 0) {
        step.attention = std::vector<float>(admitted, 0.0f);
        any = true;
      }
      admitted += step.admit;
    }
    return any && DiffersWith(c, zeroed);
  }
  if (flag == "null-attention.still-evicts") {
    if (!explicit_steps) return false;
    for (size_t i = 0; i < c.expected.steps.size(); ++i) {
      if (!c.scenario.steps[i].attention.has_value() &&
          !c.expected.steps[i].victims.empty()) {
        return true;
      }
    }
    return false;
  }
  if (flag == "empty-row.recorded") {
    if (!explicit_steps) return false;
    Scenario nulled = c.scenario;
    bool any = false;
    for (ScenarioStep& step : nulled.steps) {
      if (step.attention.has_value() && step.attention->empty()) {
        step.attention.reset();
        any = true;
      }
    }
    return any && DiffersWith(c, nulled);
  }
  if (flag == "unobserved.zero") {
    if (!explicit_steps) return false;
    const std::vector<uint64_t> first = FirstPositions(c.scenario);
    for (size_t i = 0; i < c.expected.steps.size(); ++i) {
      for (Position victim : c.expected.steps[i].victims) {
        bool observed = false;
        for (size_t j = 0; j <= i; ++j) {
          if (c.scenario.steps[j].attention.has_value() && first[j] > victim) {
            observed = true;
          }
        }
        if (!observed) return true;
      }
    }
    return false;
  }
  if (flag == "renormalize.none") {
    return explicit_steps && !SameVictims(c.expected, RunRenormalized(c));
  }
  if (flag == "chunk.one-ranking") {
    for (const StepRecord& step : c.expected.steps) {
      if (step.victims.size() >= 2) return true;
    }
    return false;
  }
  if (flag == "chunk.evicts-own") {
    if (!explicit_steps) return false;
    const std::vector<uint64_t> first = FirstPositions(c.scenario);
    for (size_t i = 0; i < c.expected.steps.size(); ++i) {
      for (Position victim : c.expected.steps[i].victims) {
        if (victim >= first[i]) return true;
      }
    }
    return false;
  }
  if (flag == "chunk.first-exceeds-cache" || flag == "chunk.crosses-capacity") {
    return explicit_steps && policy == "streamingllm" && DiffersFromSeedCache(c);
  }
  if (flag == "chunk.longer-than-window") {
    const int64_t budget = EffectiveParameter(c.config, "budget", 0);
    const int64_t window = budget - EffectiveParameter(c.config, "sinks", 0);
    for (size_t i = 0; explicit_steps && i < c.expected.steps.size(); ++i) {
      if (c.scenario.steps[i].admit > window &&
          c.expected.steps[i].query_cache_position == budget) {
        return true;
      }
    }
    return false;
  }
  if (flag == "chunk.holds-sinks") {
    const int64_t sinks = EffectiveParameter(c.config, "sinks", 0);
    const std::vector<uint64_t> first = FirstPositions(c.scenario);
    for (size_t i = 0; explicit_steps && i < c.expected.steps.size(); ++i) {
      const uint64_t last = first[i] + c.scenario.steps[i].admit - 1;
      if (first[i] > 0 && first[i] < uint64_t(sinks) && last >= uint64_t(sinks) &&
          !c.expected.steps[i].victims.empty()) {
        return true;
      }
    }
    return false;
  }
  if (flag == "cache-relative") {
    const int64_t budget = EffectiveParameter(c.config, "budget", 0);
    for (const StepRecord& step : c.expected.steps) {
      if (step.query_cache_position == budget) return true;
    }
    return false;
  }
  if (flag == "h2o.binary64-sum") {
    return DiffersWithMutant(c, Mutation::kBinary32Sums);
  }
  if (flag == "snapkv.ring-wrap") {
    return DiffersWith(c, WithParameter(c.config, "obs_window", 65536));
  }
  if (flag == "snapkv.ring-index-order") {
    return DiffersWithMutant(c, Mutation::kChronologicalRingSum);
  }
  if (flag == "snapkv.pool-defends") {
    return DiffersWith(c, WithParameter(c.config, "pool_kernel", 1));
  }
  if (flag == "snapkv.pool-clamp") {
    return DiffersWithMutant(c, Mutation::kWrappedPooling);
  }
  if (flag == "snapkv.pool-protected-neighbour") {
    return DiffersWithMutant(c, Mutation::kCandidatesOnlyPooling);
  }
  if (flag == "random.draw-order") {
    return DiffersWithMutant(c, Mutation::kDescendingDraws);
  }
  if (flag == "neighbour.streamingllm-window") {
    const PolicyConfig window{
        "window", {{"budget", EffectiveParameter(c.config, "budget", 0)}}};
    return Evicts(c.expected) && SameVictims(c.expected, Run(MakePolicy(window), c.scenario));
  }
  if (flag == "neighbour.snapkv-tova" || flag == "neighbour.snapkv-h2o") {
    const PolicyConfig other{
        flag == "neighbour.snapkv-tova" ? "tova" : "h2o",
        {{"budget", EffectiveParameter(c.config, "budget", 0)},
         {"recent_window", EffectiveParameter(c.config, "recent_window", 0)}}};
    return Evicts(c.expected) && SameVictims(c.expected, Run(MakePolicy(other), c.scenario));
  }
  if (flag == "refusal.unknown-policy") return RefusedWith(c, ErrorCategory::kUnknownPolicy);
  if (flag == "refusal.invalid-parameter") return RefusedWith(c, ErrorCategory::kInvalidParameter);
  if (flag == "refusal.position") return RefusedWith(c, ErrorCategory::kPosition);
  if (flag == "refusal.attention-length") return RefusedWith(c, ErrorCategory::kAttentionLength);
  if (flag == "refusal.attention-value") return RefusedWith(c, ErrorCategory::kAttentionValue);
  if (flag == "refusal.invalid-trace") return RefusedWith(c, ErrorCategory::kInvalidTrace);
  if (flag == "refusal.invalid-heads") return RefusedWith(c, ErrorCategory::kInvalidHeads);
  if (flag == "order.query-shape-before-weights") {
    return RefusedWith(c, ErrorCategory::kAttentionLength) &&
           RepairRevealsAnother(c, [](Scenario& s, size_t i) {
             ScenarioStep& step = s.steps[i];
             if (step.attention.has_value() || !step.heads.empty()) {
               step.queries.clear();
               return;
             }
             uint64_t admitted = 0;
             for (size_t j = 0; j <= i; ++j) admitted += s.steps[j].admit;
             const uint32_t heads = s.query_heads.value_or(1);
             const size_t rows = step.queries.size() / heads;
             for (size_t k = 0; k < step.queries.size(); ++k) {
               const uint64_t query = admitted - rows + k % rows;
               step.queries[k].resize(query + 1, 0.5f);
             }
           });
  }
  if (flag == "order.shape-before-heads") {
    Scenario repaired = c.scenario;
    repaired.steps.clear();
    return RefusedWith(c, ErrorCategory::kInvalidTrace) &&
           CategoryOf(RunScenario(c.config, repaired).refusal) ==
               ErrorCategory::kInvalidHeads;
  }
  if (flag == "order.heads-before-trace") {
    Scenario repaired = c.scenario;
    repaired.query_heads.reset();
    repaired.kv_heads.reset();
    return RefusedWith(c, ErrorCategory::kInvalidHeads) &&
           CategoryOf(RunScenario(c.config, repaired).refusal) ==
               ErrorCategory::kInvalidTrace;
  }
  if (flag == "order.heads-length-before-weights") {
    return RefusedWith(c, ErrorCategory::kAttentionLength) &&
           RepairRevealsAnother(c, [](Scenario& s, size_t i) {
             uint64_t admitted = 0;
             for (size_t j = 0; j < i; ++j) admitted += s.steps[j].admit;
             for (std::vector<float>& row : s.steps[i].heads) {
               row.resize(admitted, 0.5f);
             }
           });
  }
  if (flag == "order.name-before-parameters") {
    PolicyConfig known = c.config;
    known.name = "window";
    return RefusedWith(c, ErrorCategory::kUnknownPolicy) &&
           CategoryOf(MakePolicy(known).status()) == ErrorCategory::kInvalidParameter;
  }
  if (flag == "order.configuration-before-scenario") {
    PolicyConfig defaults = c.config;
    defaults.parameters.clear();
    const RunResult after = RunScenario(defaults, c.scenario, RunOptions{});
    return RefusedWith(c, ErrorCategory::kInvalidParameter) &&
           c.expected.refused_step == -1 && !after.refusal.ok() &&
           CategoryOf(after.refusal) != ErrorCategory::kInvalidParameter;
  }
  if (flag == "order.position-before-length") {
    return RefusedWith(c, ErrorCategory::kPosition) &&
           RepairRevealsAnother(c, [](Scenario& s, size_t i) { s.steps[i].admit = 1; });
  }
  if (flag == "order.length-before-value") {
    return RefusedWith(c, ErrorCategory::kAttentionLength) &&
           RepairRevealsAnother(c, [](Scenario& s, size_t i) {
             uint64_t admitted = 0;
             for (size_t j = 0; j < i; ++j) admitted += s.steps[j].admit;
             s.steps[i].attention->resize(admitted, 0.5f);
           });
  }
  if (flag == "order.steps-in-sequence") {
    return explicit_steps && RepairRevealsAnother(c, [](Scenario& s, size_t i) {
             s.steps[i] = ScenarioStep{std::max<uint32_t>(1, s.steps[i].admit),
                                       std::nullopt};
           });
  }
  if (flag == "chunk.exactly-budget") {
    const int64_t budget = EffectiveParameter(c.config, "budget", 0);
    for (size_t i = 0; explicit_steps && i < c.expected.steps.size(); ++i) {
      if (c.scenario.steps[i].admit == budget &&
          c.expected.steps[i].victims.size() ==
              std::min<size_t>(c.expected.steps[i].query_cache_position, budget)) {
        return true;
      }
    }
    return false;
  }
  if (flag == "search.found") {
    // The counterfactual is the port mutant the case was found against
    // (tools/mutation.sh checks that the vectors now kill it); here, only
    // that the case is a witness at all: it evicts, it is refused, or it
    // logs spans (spec/spans.md#the-log, what a span rule decides).
    bool spans = false;
    for (const StepRecord& step : c.expected.steps) {
      spans = spans || !step.spans.empty();
    }
    return Evicts(c.expected) || !c.expected.refusal.ok() || spans;
  }
  if (flag == "search.combination") {
    // The combination its ID names is one the case decides
    // (tools/census/combinations.h); CheckCombinations asks that every
    // combination the search's cases decide has such a case.
    const std::string combination = vectors::CombinationOfCase(c.vector->id());
    if (combination.empty()) return false;
    for (const std::string& d :
         Combinations(DecidedFeatures(c.vector->policy(), *c.wire, c.vector->expected()),
                      Properties(c.vector->policy(), *c.wire))) {
      if (d == combination) return true;
    }
    return false;
  }
  if (flag == "trace.defaults") {
    // Decided when some absent field's default decides; CheckDefaults asks
    // that every field's does, in some case.
    if (!c.scenario.trace.has_value() || !c.expected.refusal.ok()) return false;
    return !DecidedTraceDefaults(c).empty();
  }
  if (flag == "bounds.trace") {
    // The case's scenario holds one trace bound's value, and the run is
    // accepted or refused (INVALID_TRACE, before any step) as the bound says.
    if (!c.scenario.trace.has_value()) return false;
    for (const vectors::TraceBound& bound : vectors::TraceBounds()) {
      if (bound.scenario_id != c.vector->scenario_id() || !bound.holds(*c.scenario.trace)) {
        continue;
      }
      return bound.accepted ? c.expected.refusal.ok()
                            : RefusedWith(c, ErrorCategory::kInvalidTrace) &&
                                  c.expected.refused_step == -1;
    }
    return false;
  }
  if (flag == "bounds.accepted") {
    if (!c.expected.refusal.ok()) return false;
    for (const PolicyInfo& info : RegisteredPolicies()) {
      if (info.name != policy) continue;
      for (const ParameterInfo& p : info.parameters) {
        for (const Parameter& given : c.config.parameters) {
          if (given.name == p.name && (given.value == p.min || given.value == p.max)) {
            return true;
          }
        }
      }
    }
    return false;
  }
  if (flag == "defaults.decides") {
    return c.expected.refusal.ok() && !DecidedDefaults(c).empty();
  }
  if (flag == "canonical-trace") return IsCanonical(c.scenario) && c.expected.refusal.ok();
  if (flag == "defaults") {
    return c.config.parameters.empty() && c.expected.refusal.ok() && Evicts(c.expected);
  }
  return false;
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
