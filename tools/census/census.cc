#include "tools/census/census.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/presets.h"
#include "cc/registry.h"
#include "cc/spans.h"
#include "cc/text.h"
#include "cc/trace.h"
#include "cc/version.h"
#include "tools/census/combinations.h"
#include "tools/census/mutants.h"
#include "tools/vectors/bounds.h"
#include "tools/vectors/cases.h"
#include "tools/vectors/combination_cases.h"
#include "tools/vectors/features.h"
#include "tools/vectors/flags.h"

namespace kvspec {
namespace audit {
namespace {

const char* const kPolicies[] = {"full", "window", "streamingllm", "h2o",
                                 "tova", "snapkv", "random"};

// Everything a decider needs about one case.
struct CaseContext {
  const v1::Case* vector;
  const v1::Scenario* wire;  // the scenario as the file holds it
  PolicyConfig config;
  Scenario scenario;
  RunResult expected;
};

RunResult Run(absl::StatusOr<std::unique_ptr<Policy>> policy,
              const Scenario& scenario) {
  if (!policy.ok()) {
    RunResult result;
    result.refusal = policy.status();
    return result;
  }
  return RunScenario(**policy, scenario);
}

// The victims of a step, set by set (spec/heads.md#the-eviction-log).
std::vector<std::vector<Position>> VictimsOf(const StepRecord& step) {
  if (step.sets.empty()) return {step.victims};
  std::vector<std::vector<Position>> victims;
  for (const StepRecord& set : step.sets) victims.push_back(set.victims);
  return victims;
}

// Same outcome: the same victims at every step and the same refusal category.
bool SameVictims(const RunResult& a, const RunResult& b) {
  if (CategoryOf(a.refusal) != CategoryOf(b.refusal)) return false;
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    if (VictimsOf(a.steps[i]) != VictimsOf(b.steps[i])) return false;
  }
  return true;
}

bool Evicts(const RunResult& result) {
  for (const StepRecord& step : result.steps) {
    for (const std::vector<Position>& victims : VictimsOf(step)) {
      if (!victims.empty()) return true;
    }
  }
  return false;
}

PolicyConfig WithParameter(PolicyConfig config, const std::string& name,
                           int64_t value) {
  for (Parameter& p : config.parameters) {
    if (p.name == name) {
      p.value = value;
      return config;
    }
  }
  config.parameters.push_back({name, value});
  return config;
}

bool DiffersWith(const CaseContext& c, const PolicyConfig& config) {
  return !SameVictims(c.expected, RunScenario(config, c.scenario));
}

bool DiffersWith(const CaseContext& c, const Scenario& scenario) {
  return !SameVictims(c.expected, RunScenario(c.config, scenario));
}

// The whole log, spans and held sets included (spec/spans.md#the-log).
bool SameLog(const RunResult& a, const RunResult& b) {
  return CategoryOf(a.refusal) == CategoryOf(b.refusal) && a.steps == b.steps;
}

bool LogDiffersWith(const CaseContext& c, const PolicyConfig& config) {
  return !SameLog(c.expected, RunScenario(config, c.scenario));
}

bool LogDiffersWith(const CaseContext& c, const Scenario& scenario) {
  return !SameLog(c.expected, RunScenario(c.config, scenario));
}

// spec/spans.md#span-rules, "sinks are in every span": the spans the held
// sets give when the sinks obey the span rule like any other position.
bool SpansWithoutSinksDiffer(const CaseContext& c) {
  SpanRule rule;
  rule.window = static_cast<uint32_t>(EffectiveParameter(c.config, "span_window", 0));
  rule.chunk = static_cast<uint32_t>(EffectiveParameter(c.config, "span_chunk", 0));
  for (const StepRecord& step : c.expected.steps) {
    std::vector<Position> held;
    for (const HeldRun& run : step.held) {
      for (uint64_t p = run.first; p <= run.last; ++p) {
        held.push_back(static_cast<Position>(p));
      }
    }
    const Position first = held.empty() ? 0 : held.back() + 1 - step.spans.size();
    for (size_t q = 0; q < step.spans.size(); ++q) {
      if (SpanOf(rule, held, first + static_cast<Position>(q)) != step.spans[q]) {
        return true;
      }
    }
  }
  return false;
}

// Whether another value of `name` (a parameter of spec/heads.md#parameters)
// changes the victims of an accepted case on several heads.
bool HeadParameterDecides(const CaseContext& c, const std::string& name) {
  if (!c.expected.refusal.ok() || !c.scenario.query_heads.has_value() ||
      *c.scenario.query_heads < 2 || !ReadsAttention(c.config.name)) {
    return false;
  }
  const int64_t value = EffectiveParameter(c.config, name);
  for (int64_t other = 0; other <= 2; ++other) {
    if (other != value && DiffersWith(c, WithParameter(c.config, name, other))) {
      return true;
    }
  }
  return false;
}

// heads.md#why-combine-scores-not-rows' counterfactual: one head whose row
// is the mean of the heads' rows (binary64, rounded to binary32).
Scenario MeanRowScenario(const Scenario& scenario) {
  Scenario one = scenario;
  one.query_heads.reset();
  one.kv_heads.reset();
  for (ScenarioStep& step : one.steps) {
    if (step.heads.empty()) continue;
    std::vector<float> mean(step.heads[0].size());
    for (size_t p = 0; p < mean.size(); ++p) {
      double sum = 0.0;
      for (const std::vector<float>& row : step.heads) sum += row[p];
      mean[p] = static_cast<float>(sum / static_cast<double>(step.heads.size()));
    }
    step.attention = std::move(mean);
    step.heads.clear();
  }
  return one;
}

bool DiffersWithMutant(const CaseContext& c, Mutation mutation) {
  return !SameVictims(c.expected, Run(MakeMutant(c.config, mutation), c.scenario));
}

// First position admitted at each step of an explicit scenario.
std::vector<uint64_t> FirstPositions(const Scenario& scenario) {
  std::vector<uint64_t> first;
  uint64_t next = 0;
  for (const ScenarioStep& step : scenario.steps) {
    first.push_back(next);
    next += step.admit;
  }
  return first;
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

CaseContext ContextOf(const vectors::LoadedCase& loaded) {
  return {loaded.vector, loaded.scenario, FromProto(loaded.vector->policy()),
          FromProto(*loaded.scenario), FromProto(loaded.vector->expected())};
}

bool Accepted(const PolicyConfig& config) { return MakePolicy(config).ok(); }

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

// Values near a policy parameter's default, the census's counterfactuals for
// it (each used only if it lies in the parameter's range and is accepted).
std::vector<int64_t> NearbyValues(int64_t value) {
  return {value - 1, value + 1, value - 2, value + 2, value / 2, value * 2};
}

const PolicyInfo* InfoOf(const std::string& name) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// The policy's parameters that `config` leaves out (they take defaults).
std::vector<const ParameterInfo*> OmittedParameters(const PolicyConfig& config) {
  std::vector<const ParameterInfo*> omitted;
  const PolicyInfo* info = InfoOf(config.name);
  if (info == nullptr) return omitted;
  for (const ParameterInfo& p : info->parameters) {
    bool given = false;
    for (const Parameter& g : config.parameters) given = given || g.name == p.name;
    if (!given && p.default_value.has_value()) omitted.push_back(&p);
  }
  return omitted;
}

// Omitted parameters of `c` whose default decides the case: another valid
// value near it changes the victims.
std::set<std::string> DecidedDefaults(const CaseContext& c) {
  std::set<std::string> decided_names;
  for (const ParameterInfo* p : OmittedParameters(c.config)) {
    bool decided = false;
    for (int64_t value : NearbyValues(*p->default_value)) {
      if (value < p->min || value > p->max || value == *p->default_value) continue;
      const PolicyConfig other = WithParameter(c.config, p->name, value);
      // The whole log: a span parameter's default shows in the spans and
      // held sets only (spec/spans.md#the-log).
      if (Accepted(other) && LogDiffersWith(c, other)) {
        decided = true;
        break;
      }
    }
    if (decided) decided_names.insert(p->name);
  }
  return decided_names;
}

// Trace fields absent from `c`'s scenario whose default decides the case:
// another valid value changes the victims.
std::set<std::string> DecidedTraceDefaults(const CaseContext& c) {
  std::set<std::string> decided_names;
  const v1::TraceConfig& wire = c.wire->trace();
  // Every field spelled out, absent ones at their defaults.
  const v1::TraceConfig effective = ToProto(FromProto(wire));
  for (const std::string& name : vectors::TraceFieldNames()) {
    const auto* field = wire.GetDescriptor()->FindFieldByName(name);
    if (name == "steps" || wire.GetReflection()->HasField(wire, field)) continue;
    std::vector<TraceConfig> others;
    for (int64_t step : {-1, 1, 2}) {
      v1::TraceConfig changed = effective;
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
        const double d = effective.GetReflection()->GetDouble(effective, field);
        changed.GetReflection()->SetDouble(&changed, field,
                                           step == -1 ? d * 0.5 : d * 0.75 * step);
      } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
        const uint32_t v = effective.GetReflection()->GetUInt32(effective, field);
        changed.GetReflection()->SetUInt32(&changed, field,
                                           static_cast<uint32_t>(int64_t{v} + step));
      } else {
        const uint64_t v = effective.GetReflection()->GetUInt64(effective, field);
        changed.GetReflection()->SetUInt64(&changed, field, v + 1 + step);
      }
      others.push_back(FromProto(changed));
    }
    bool decided = false;
    for (const TraceConfig& other : others) {
      if (!ValidateTrace(other).ok()) continue;
      Scenario scenario = c.scenario;
      scenario.trace = other;
      if (DiffersWith(c, scenario)) {
        decided = true;
        break;
      }
    }
    if (decided) decided_names.insert(name);
  }
  return decided_names;
}

// Whether another value in [0, 1] of `name` (a parameter of
// spec/prefill.md or a card's "At prefill") changes the victims of an
// accepted case.
bool BinaryParameterDecides(const CaseContext& c, const std::string& name) {
  if (!c.expected.refusal.ok()) return false;
  const PolicyConfig other =
      WithParameter(c.config, name, 1 - EffectiveParameter(c.config, name));
  return Accepted(other) && DiffersWith(c, other);
}

// spec/prefill.md#presets: whether the case runs the preset `preset` of
// its policy: it gives every parameter the preset sets (at the preset's
// value, or overridden by name, as ExpandPreset does). A label, not a
// counterfactual: on a one-step prompt a preset may well evict as the
// card's defaults do (kvpress's StreamingLLM preset is the defaults plus
// prefill_only), and the case still checks the preset.
bool RunsPreset(const CaseContext& c, const std::string& preset) {
  for (const Preset& p : Presets()) {
    if (p.policy != c.config.name || p.name != preset) continue;
    for (const Parameter& q : p.parameters) {
      bool given = false;
      for (const Parameter& g : c.config.parameters) given = given || g.name == q.name;
      if (!given) return false;
    }
    return true;
  }
  return false;
}

// spec/heads.md#head-adaptive-budgets, step 4: the floor of `budget` at
// `permille`: budget * permille / 1000 (integer division), raised to 1 if it
// is 0 and permille > 0; 0 when permille is 0.
int64_t FloorOf(int64_t budget, int64_t permille) {
  if (permille == 0) return 0;
  return std::max<int64_t>(1, budget * permille / 1000);
}

// Whether `c` is an accepted case whose kept sets share a budget (adaptive 1
// and several sets), so that a floor is walked.
bool SharesBudget(const CaseContext& c) {
  if (!c.expected.refusal.ok() || !ReadsAttention(c.config.name) ||
      EffectiveParameter(c.config, "adaptive") != 1) {
    return false;
  }
  for (const StepRecord& step : c.expected.steps) {
    if (step.sets.size() >= 2) return true;
  }
  return false;
}

// The floor rules' counterfactual: the same run with the walk's floor set
// to `floor` (RunOptions::floor_override, census only) changes the log.
bool DiffersWithFloor(const CaseContext& c, int64_t floor) {
  RunOptions options;
  options.floor_override = static_cast<size_t>(floor);
  return !SameVictims(c.expected, RunScenario(c.config, c.scenario, options));
}

// heads.safeguard: a floor next to the case's (one less or one more), reached
// by some safeguard_permille in [0, 1000] at the case's budget, changes the
// log: the case's floor is where it binds. Sets `note` to which.
bool SafeguardFloorDecides(const CaseContext& c, std::string* note) {
  if (!SharesBudget(c)) return false;
  const int64_t budget = EffectiveParameter(c.config, "budget");
  const int64_t permille = EffectiveParameter(c.config, "safeguard_permille");
  const int64_t floor = FloorOf(budget, permille);
  for (int64_t other : {floor - 1, floor + 1}) {
    if (other < 0) continue;
    int64_t reached_by = -1;
    for (int64_t s = 0; s <= 1000 && reached_by < 0; ++s) {
      if (FloorOf(budget, s) == other) reached_by = s;
    }
    if (reached_by < 0 || !DiffersWithFloor(c, other)) continue;
    if (note != nullptr) {
      *note = absl::StrFormat(
          "heads.safeguard: floor %d (safeguard %d) in place of the case's "
          "floor %d (safeguard %d) changes the log",
          other, reached_by, floor, permille);
    }
    return true;
  }
  return false;
}

// Whether `flag` decided case `c` (spec/vectors.md#flags). `note`, when not
// null, may receive what decided it.
bool Decides(const std::string& flag, const CaseContext& c,
             std::string* note = nullptr) {
  const std::string& policy = c.config.name;
  const bool explicit_steps = !c.scenario.trace.has_value();
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
  if (flag == "prefill.only") return BinaryParameterDecides(c, "prefill_only");
  if (flag == "prefill.normalize") return BinaryParameterDecides(c, "normalize");
  if (flag == "prefill.totals") {
    // spec/prefill.md#column-totals: without the totals h2o reads the
    // query rows; the totals decide when that changes the log.
    if (!c.expected.refusal.ok() || !explicit_steps) return false;
    Scenario without = c.scenario;
    bool had = false;
    for (ScenarioStep& step : without.steps) {
      had = had || !step.totals.empty();
      step.totals.clear();
      step.total_rows = 0;
    }
    return had && DiffersWith(c, without);
  }
  if (flag == "prefill.protect-newest") {
    return BinaryParameterDecides(c, "protect_newest");
  }
  if (flag == "prefill.window-budget") {
    return BinaryParameterDecides(c, "window_budget");
  }
  if (flag == "prefill.pooling") return BinaryParameterDecides(c, "pooling");
  if (flag == "prefill.window-reduce") {
    return BinaryParameterDecides(c, "window_reduce");
  }
  if (flag == "prefill.ratio") {
    return c.expected.refusal.ok() &&
           EffectiveParameter(c.config, "ratio_ppm", 0) > 0 &&
           DiffersWith(c, WithParameter(c.config, "ratio_ppm", 0));
  }
  if (flag == "prefill.ratio-binary64") {
    // One prefill step first: n is its admit. The exact budget in place of
    // the ratio's.
    const int64_t ppm = EffectiveParameter(c.config, "ratio_ppm", 0);
    if (!c.expected.refusal.ok() || ppm == 0 || !explicit_steps ||
        c.scenario.steps.empty() || c.scenario.steps[0].queries.empty()) {
      return false;
    }
    const int64_t n = c.scenario.steps[0].admit;
    const int64_t exact = std::max<int64_t>(1, n * (1000000 - ppm) / 1000000);
    PolicyConfig other = WithParameter(c.config, "ratio_ppm", 0);
    other = WithParameter(other, "budget", exact);
    return Accepted(other) && DiffersWith(c, other);
  }
  if (flag == "prefill.sinks-last") {
    const int64_t sinks = EffectiveParameter(c.config, "sinks", 0);
    for (const StepRecord& step : c.expected.steps) {
      for (Position victim : step.victims) {
        if (victim < sinks) return true;
      }
    }
    return false;
  }
  if (flag == "preset.kvpress-0.5.5") return RunsPreset(c, "kvpress-0.5.5");
  if (flag == "preset.official") return RunsPreset(c, "official");
  if (flag == "preset.kvcache-factory") return RunsPreset(c, "kvcache-factory");
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
  if (flag == "heads.granularity") return HeadParameterDecides(c, "granularity");
  if (flag == "heads.aggregation") return HeadParameterDecides(c, "aggregation");
  if (flag == "heads.mean-rounding") {
    return c.expected.refusal.ok() && ReadsAttention(policy) &&
           EffectiveParameter(c.config, "aggregation") == 0 &&
           DiffersWith(c, WithParameter(c.config, "aggregation", 2));
  }
  if (flag == "heads.scores-then-combine") {
    return c.expected.refusal.ok() && explicit_steps &&
           c.scenario.query_heads.value_or(1) > 1 &&
           c.expected.steps.size() == c.scenario.steps.size() &&
           std::all_of(c.expected.steps.begin(), c.expected.steps.end(),
                       [](const StepRecord& s) { return s.sets.empty(); }) &&
           DiffersWith(c, MeanRowScenario(c.scenario));
  }
  if (flag == "heads.adaptive") {
    return c.expected.refusal.ok() && ReadsAttention(policy) &&
           EffectiveParameter(c.config, "adaptive") == 1 &&
           DiffersWith(c, WithParameter(c.config, "adaptive", 0));
  }
  if (flag == "heads.safeguard") {
    // Not "some other safeguard changes the log": safeguard 1000 changes it
    // through a high floor binding whatever the case's floor is. The floors
    // next to the case's must decide (SafeguardFloorDecides).
    return SafeguardFloorDecides(c, note);
  }
  // The floor's arithmetic (spec/heads.md#head-adaptive-budgets, step 4),
  // one rule per flag, each by the counterfactual of exactly that rule.
  if (flag == "heads.floor-at-least-one") {
    // budget * safeguard / 1000 is 0, raised to 1: floor 0 instead changes
    // the log.
    if (!SharesBudget(c)) return false;
    const int64_t budget = EffectiveParameter(c.config, "budget");
    const int64_t permille = EffectiveParameter(c.config, "safeguard_permille");
    return permille > 0 && budget * permille / 1000 == 0 && DiffersWithFloor(c, 0);
  }
  if (flag == "heads.floor-zero-when-safeguard-zero") {
    // Safeguard 0: floor 0; a floor of 1 (raised as for safeguard > 0)
    // instead changes the log.
    return SharesBudget(c) &&
           EffectiveParameter(c.config, "safeguard_permille") == 0 &&
           DiffersWithFloor(c, 1);
  }
  if (flag == "heads.floor-rounds-down") {
    // budget * safeguard / 1000 is not an integer and at least 1: the floor
    // rounded up instead changes the log.
    if (!SharesBudget(c)) return false;
    const int64_t budget = EffectiveParameter(c.config, "budget");
    const int64_t permille = EffectiveParameter(c.config, "safeguard_permille");
    const int64_t product = budget * permille;
    return product % 1000 != 0 && product / 1000 >= 1 &&
           DiffersWithFloor(c, product / 1000 + 1);
  }
  if (flag == "neighbour.adakv-fixed") {
    return c.expected.refusal.ok() && Evicts(c.expected) &&
           EffectiveParameter(c.config, "adaptive") == 1 &&
           EffectiveParameter(c.config, "safeguard_permille") == 1000 &&
           SameVictims(c.expected,
                       RunScenario(WithParameter(c.config, "adaptive", 0), c.scenario));
  }
  if (flag == "heads.one-set") {
    return c.expected.refusal.ok() && !ReadsAttention(policy) &&
           c.scenario.query_heads.value_or(1) > 1 &&
           std::all_of(c.expected.steps.begin(), c.expected.steps.end(),
                       [](const StepRecord& s) { return s.sets.empty(); });
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
  // spec/spans.md: the span rules, eviction before admission and position
  // ids, each decided by another value of its parameter changing the log.
  if (flag == "spans.window" || flag == "spans.chunk") {
    const std::string name = flag == "spans.window" ? "span_window" : "span_chunk";
    const int64_t value = EffectiveParameter(c.config, name, 0);
    if (!c.expected.refusal.ok() || value == 0) return false;
    for (int64_t other : {value - 1, value + 1, int64_t{0}}) {
      const PolicyConfig config = WithParameter(c.config, name, other);
      if (Accepted(config) && LogDiffersWith(c, config)) return true;
    }
    return false;
  }
  if (flag == "spans.evict-before-room" || flag == "spans.evict-before-one") {
    const int64_t value = flag == "spans.evict-before-room" ? 1 : 2;
    if (!c.expected.refusal.ok() ||
        EffectiveParameter(c.config, "evict_at", 0) != value) {
      return false;
    }
    for (int64_t other : {int64_t{0}, 3 - value}) {
      if (!LogDiffersWith(c, WithParameter(c.config, "evict_at", other))) return false;
    }
    return true;
  }
  if (flag == "spans.ids-cache-relative") {
    return c.expected.refusal.ok() &&
           EffectiveParameter(c.config, "position_ids", 0) == 1 &&
           LogDiffersWith(c, WithParameter(c.config, "position_ids", 0));
  }
  if (flag == "spans.sinks-in-span") {
    return c.expected.refusal.ok() && SpansWithoutSinksDiffer(c);
  }
  if (flag == "engine.chunk-longer-than-window") {
    // A chunk longer than the rule's window (span_window or span_chunk)
    // whose first query sees a position admitted before the chunk: a ring
    // of the window's size written in place has lost it.
    const int64_t window = std::max(EffectiveParameter(c.config, "span_window", 0),
                                    EffectiveParameter(c.config, "span_chunk", 0));
    const std::vector<uint64_t> first = FirstPositions(c.scenario);
    for (size_t i = 0; explicit_steps && window > 0 && i < c.expected.steps.size(); ++i) {
      const StepRecord& step = c.expected.steps[i];
      if (c.scenario.steps[i].admit > window && first[i] > 0 && !step.spans.empty() &&
          !step.spans[0].empty() && step.spans[0][0] < first[i]) {
        return true;
      }
    }
    return false;
  }
  if (flag == "engine.chunk-ends-on-wrap") {
    // A chunk (admit > 1) after which the cache holds exactly its budget
    // (a ring is full), and a later step that evicts.
    const int64_t budget = EffectiveParameter(c.config, "budget", 0);
    bool filled = false;
    for (size_t i = 0; explicit_steps && i < c.expected.steps.size(); ++i) {
      if (filled && !c.expected.steps[i].victims.empty()) return true;
      filled = filled || (c.scenario.steps[i].admit > 1 &&
                          c.expected.steps[i].kept_count == budget);
    }
    return false;
  }
  if (flag == "engine.short-prefill-then-wrap") {
    const int64_t budget = EffectiveParameter(c.config, "budget", 0);
    if (!explicit_steps || c.scenario.steps.empty() ||
        c.scenario.steps[0].admit >= budget) {
      return false;
    }
    for (size_t i = 1; i < c.expected.steps.size(); ++i) {
      if (c.scenario.steps[i].admit != 1) return false;
      if (!c.expected.steps[i].victims.empty()) return true;
    }
    return false;
  }
  if (flag == "engine.continuation-chunk") {
    // A chunk right after a decode step, once something was evicted.
    bool evicted = false;
    for (size_t i = 0; explicit_steps && i < c.expected.steps.size(); ++i) {
      if (i > 0 && evicted && c.scenario.steps[i].admit > 1 &&
          c.scenario.steps[i - 1].admit == 1) {
        return true;
      }
      evicted = evicted || !c.expected.steps[i].victims.empty();
    }
    return false;
  }
  // spec/spans.md#context-shift.
  if (flag == "shift.context-shift") {
    if (!c.expected.refusal.ok() ||
        EffectiveParameter(c.config, "context_shift", 0) != 1) {
      return false;
    }
    return LogDiffersWith(
        c, WithParameter(WithParameter(c.config, "context_shift", 0),
                         "discard", 0));
  }
  if (flag == "shift.discard-given") {
    return c.expected.refusal.ok() &&
           EffectiveParameter(c.config, "discard", 0) > 0 &&
           LogDiffersWith(c, WithParameter(c.config, "discard", 0));
  }
  if (flag == "shift.clamped" || flag == "shift.chunk-kept-whole") {
    // Recomputed from the log: at a step that does not fit, n_left is the
    // kept count less the sinks admitted so far (a shift never evicts one).
    if (!explicit_steps || !c.expected.refusal.ok() ||
        EffectiveParameter(c.config, "context_shift", 0) != 1) {
      return false;
    }
    const int64_t budget = EffectiveParameter(c.config, "budget", 0);
    const int64_t sinks = c.config.name == "streamingllm"
                              ? EffectiveParameter(c.config, "sinks", 0)
                              : 0;
    const int64_t discard = EffectiveParameter(c.config, "discard", 0);
    const std::vector<uint64_t> first = FirstPositions(c.scenario);
    for (size_t i = 0; i < c.expected.steps.size(); ++i) {
      const StepRecord& step = c.expected.steps[i];
      const int64_t kept = step.query_cache_position;
      const int64_t admit = c.scenario.steps[i].admit;
      if (kept + admit <= budget) continue;
      const int64_t n_left =
          kept - std::min<int64_t>(sinks, static_cast<int64_t>(first[i]));
      if (flag == "shift.clamped" && n_left >= 1 && discard > n_left - 1 &&
          static_cast<int64_t>(step.victims.size()) == n_left - 1) {
        return true;
      }
      if (flag == "shift.chunk-kept-whole" && step.kept_count > budget) {
        return true;
      }
    }
    return false;
  }
  if (flag == "engine.short-last-chunk") {
    // Counterfactual: the last chunk of the prompt (the last step with
    // admit > 1) padded to the length of the chunk before it.
    if (!explicit_steps || !c.expected.refusal.ok()) return false;
    for (size_t i = c.scenario.steps.size(); i-- > 1;) {
      const uint32_t admit = c.scenario.steps[i].admit;
      const uint32_t before = c.scenario.steps[i - 1].admit;
      if (admit <= 1) continue;
      if (admit >= before) return false;
      Scenario padded = c.scenario;
      padded.steps[i].admit = before;
      return LogDiffersWith(c, padded);
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



// spec/vectors.md#the-suite, the parameter matrix: for every policy and
// every parameter registered only for other policies, a case giving the
// policy that parameter alone, refused INVALID_PARAMETER at step -1.
void CheckForeignParameters(const vectors::VectorSet& set,
                            std::vector<std::string>& failures) {
  std::set<std::string> names;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) names.insert(p.name);
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const std::string& name : names) {
      bool takes = false;
      for (const ParameterInfo& own : info.parameters) takes |= own.name == name;
      if (takes) continue;
      bool found = false;
      for (const vectors::LoadedCase& loaded : set.cases) {
        const PolicyConfig config = FromProto(loaded.vector->policy());
        const v1::EvictionLog& expected = loaded.vector->expected();
        found = config.name == info.name && config.parameters.size() == 1 &&
                config.parameters[0].name == name && expected.has_rejection() &&
                expected.rejection().category() == v1::INVALID_PARAMETER &&
                expected.rejection().step() == -1;
        if (found) break;
      }
      if (!found) {
        failures.push_back(absl::StrFormat(
            "parameter matrix: no case gives %s the parameter '%s' (another "
            "policy's) and expects INVALID_PARAMETER at step -1",
            info.name, name));
      }
    }
  }
}

// spec/vectors.md#the-suite, later heads: every per-head input check
// (the attention rows, the query rows and the column totals, each for its
// length and for its values) has a refused case where only a head after
// head 0 is bad. A case counts for (field, category) when giving every
// later head head 0's data in that field at the refused step repairs the
// refusal: head 0's own data passed that check.
void CheckLaterHeads(const vectors::VectorSet& set,
                     std::vector<std::string>& failures) {
  enum Field { kRows, kQueries, kTotals };
  const struct {
    Field field;
    const char* name;
  } fields[] = {{kRows, "attention rows (`heads`)"},
                {kQueries, "query rows"},
                {kTotals, "column totals"}};
  const ErrorCategory categories[] = {ErrorCategory::kAttentionLength,
                                      ErrorCategory::kAttentionValue};
  std::set<std::pair<int, ErrorCategory>> covered;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const CaseContext c = ContextOf(loaded);
    const uint32_t query_heads = c.scenario.query_heads.value_or(1);
    if (query_heads < 2 || c.expected.refusal.ok() ||
        c.expected.refused_step < 0 || c.scenario.trace.has_value()) {
      continue;
    }
    const size_t index = static_cast<size_t>(c.expected.refused_step);
    for (const auto& f : fields) {
      Scenario repaired = c.scenario;
      ScenarioStep& step = repaired.steps[index];
      switch (f.field) {
        case kRows:
          if (step.heads.size() != query_heads) continue;
          for (uint32_t h = 1; h < query_heads; ++h) step.heads[h] = step.heads[0];
          break;
        case kQueries: {
          if (step.queries.empty() || step.queries.size() % query_heads != 0) continue;
          const size_t rows = step.queries.size() / query_heads;
          for (size_t i = rows; i < step.queries.size(); ++i) {
            step.queries[i] = step.queries[i % rows];
          }
          break;
        }
        case kTotals:
          if (step.totals.size() != query_heads) continue;
          for (uint32_t h = 1; h < query_heads; ++h) step.totals[h] = step.totals[0];
          break;
      }
      const RunResult after = RunScenario(c.config, repaired, RunOptions{});
      const bool same = !after.refusal.ok() &&
                        after.refused_step == c.expected.refused_step &&
                        CategoryOf(after.refusal) == CategoryOf(c.expected.refusal);
      if (!same) covered.insert({f.field, CategoryOf(c.expected.refusal)});
    }
  }
  for (const auto& f : fields) {
    for (ErrorCategory category : categories) {
      if (covered.count({f.field, category}) > 0) continue;
      failures.push_back(absl::StrFormat(
          "later heads: no case is refused %s for the %s of a head after head "
          "0 alone (head 0's data in that field passes)",
          std::string(CategoryName(category)), f.name));
    }
  }
}

// spec/vectors.md#bounds: every parameter at its lowest and highest valid
// value accepted, and one past each refused, by some case; a refusal counts
// when the same configuration at the bound itself is accepted.
void CheckBounds(const vectors::VectorSet& set, std::vector<std::string>& failures) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      const struct {
        const char* which;
        int64_t value, inside;
        bool accepted;
      } bounds[] = {{"lowest", p.min, p.min, true},
                    {"highest", p.max, p.max, true},
                    {"one below the lowest", p.min - 1, p.min, false},
                    {"one above the highest", p.max + 1, p.max, false}};
      for (const auto& bound : bounds) {
        bool found = false;
        for (const vectors::LoadedCase& loaded : set.cases) {
          const PolicyConfig config = FromProto(loaded.vector->policy());
          if (config.name != info.name) continue;
          bool at = false;
          for (const Parameter& g : config.parameters) {
            at = at || (g.name == p.name && g.value == bound.value);
          }
          if (!at) continue;
          const v1::EvictionLog& expected = loaded.vector->expected();
          if (bound.accepted) {
            found = !expected.has_rejection() ||
                    expected.rejection().step() >= 0;
          } else {
            found = expected.has_rejection() && expected.rejection().step() == -1 &&
                    expected.rejection().category() == v1::INVALID_PARAMETER &&
                    Accepted(WithParameter(config, p.name, bound.inside));
          }
          if (found) break;
        }
        if (!found) {
          failures.push_back(absl::StrFormat(
              "bound: no case has %s %s at its %s value %d %s", info.name, p.name,
              bound.which, bound.value, bound.accepted ? "accepted" : "refused"));
        }
      }
    }
  }
  for (const vectors::TraceBound& bound : vectors::TraceBounds()) {
    bool found = false;
    for (const vectors::LoadedCase& loaded : set.cases) {
      if (!loaded.scenario->has_trace()) continue;
      const v1::TraceConfig& wire = loaded.scenario->trace();
      const auto* field = wire.GetDescriptor()->FindFieldByName(bound.field);
      if (!wire.GetReflection()->HasField(wire, field)) continue;
      const TraceConfig config = FromProto(wire);
      if (!bound.holds(config) || !loaded.scenario->steps().empty()) continue;
      if (!MakePolicy(FromProto(loaded.vector->policy())).ok()) continue;
      const v1::EvictionLog& expected = loaded.vector->expected();
      if (bound.accepted) {
        found = !expected.has_rejection() || expected.rejection().step() >= 0;
      } else {
        // Decided when the same trace with the field at a valid value (the
        // canonical one's) is accepted.
        v1::TraceConfig reset = wire;
        v1::TraceConfig canonical = ToProto(vectors::CanonicalTrace(10));
        reset.GetReflection()->SwapFields(&reset, &canonical, {field});
        found = expected.has_rejection() &&
                expected.rejection().category() == v1::INVALID_TRACE &&
                ValidateTrace(FromProto(reset)).ok();
      }
      if (found) break;
    }
    if (!found) {
      failures.push_back(absl::StrFormat(
          "bound: no case has trace %s at %s %s", bound.field, bound.which,
          bound.accepted ? "accepted" : "refused"));
    }
  }
}

// spec/vectors.md#bounds: every default decides some case. A policy
// parameter's in a case flagged defaults.decides, a trace field's in a case
// flagged trace.defaults: another value changes that case's victims.
void CheckDefaults(const vectors::VectorSet& set, std::vector<std::string>& failures) {
  std::set<std::pair<std::string, std::string>> parameters;  // (policy, name)
  std::set<std::string> fields;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const auto& flags = loaded.vector->flags();
    const bool defaults =
        std::find(flags.begin(), flags.end(), "defaults.decides") != flags.end();
    const bool trace =
        std::find(flags.begin(), flags.end(), "trace.defaults") != flags.end();
    if (!defaults && !trace) continue;
    const CaseContext c = ContextOf(loaded);
    if (defaults) {
      for (const std::string& name : DecidedDefaults(c)) {
        parameters.insert({c.config.name, name});
      }
    }
    if (trace && c.scenario.trace.has_value()) {
      for (const std::string& name : DecidedTraceDefaults(c)) fields.insert(name);
    }
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      if (p.default_value.has_value() && parameters.count({info.name, p.name}) == 0) {
        failures.push_back(absl::StrFormat(
            "default: %s's %s decides no defaults.decides case", info.name, p.name));
      }
    }
  }
  for (const std::string& name : vectors::TraceFieldNames()) {
    if (name != "steps" && fields.count(name) == 0) {  // steps has no default
      failures.push_back("default: trace field " + name +
                         " decides no trace.defaults case");
    }
  }
}

}  // namespace

namespace {

// The members of `ranking` the walk of spec/heads.md#head-adaptive-budgets
// evicts when it reads the ranking in `order`: `excess` pairs, none from a
// set at its floor. An own ranking is the same walk with floor 0.
std::vector<bool> Walk(const RankingObservation& o,
                       const std::vector<size_t>& order, size_t excess) {
  std::vector<size_t> counts = o.kept_before;
  std::vector<bool> taken(o.ranking.size(), false);
  for (size_t index : order) {
    if (excess == 0) break;
    const size_t set = o.ranking[index].set;
    if (set < counts.size() && counts[set] <= o.floor) continue;
    taken[index] = true;
    if (set < counts.size()) --counts[set];
    --excess;
  }
  return taken;
}

// The ties of one observed ranking: each group of equal scores, deciding or
// not (AuditTie). Returns false if the walk, replayed, does not evict what
// the harness evicted.
bool AuditRanking(const RankingObservation& o, AuditStep& step) {
  const std::vector<RankedPair>& r = o.ranking;
  size_t excess = 0;
  for (const RankedPair& pair : r) excess += pair.evicted;
  // Whether the victims are the first `excess` in rank order (always so for
  // an own ranking; for a joint one, unless the floor passed a pair over).
  bool prefix = true;
  for (size_t i = 0; i < r.size(); ++i) prefix = prefix && r[i].evicted == (i < excess);
  std::vector<size_t> order(r.size());
  for (size_t i = 0; i < r.size(); ++i) order[i] = i;
  const std::vector<bool> replayed = Walk(o, order, excess);
  for (size_t i = 0; i < r.size(); ++i) {
    if (replayed[i] != r[i].evicted) return false;
  }
  for (size_t begin = 0; begin < r.size();) {
    size_t end = begin + 1;
    while (end < r.size() && r[end].score == r[begin].score) ++end;
    if (end - begin >= 2) {
      AuditTie tie;
      tie.joint = o.joint;
      tie.set = o.set;
      tie.score = r[begin].score;
      std::vector<bool> in_evicted(end - begin, false), in_kept(end - begin, false);
      if (prefix) {
        // Every victim and survivor of the group straddle one cut: each
        // pair decides. By position unless at one position (two sets).
        std::set<Position> evicted_at, kept_at;
        for (size_t i = begin; i < end; ++i) {
          in_evicted[i - begin] = r[i].evicted;
          in_kept[i - begin] = !r[i].evicted;
          (r[i].evicted ? evicted_at : kept_at).insert(r[i].position);
        }
        if (!evicted_at.empty() && !kept_at.empty()) {
          std::set<Position> both = evicted_at;
          both.insert(kept_at.begin(), kept_at.end());
          tie.by_position = both.size() > 1;
          for (Position p : kept_at) tie.by_set = tie.by_set || evicted_at.count(p) > 0;
        }
      }
      for (size_t a = begin; a < end && !prefix; ++a) {
        if (!r[a].evicted) continue;
        for (size_t b = begin; b < end; ++b) {
          if (r[b].evicted) continue;
          // The floor passed a pair over: the counterfactual is the two
          // exchanging places in the ranking.
          std::vector<size_t> swapped = order;
          std::swap(swapped[a], swapped[b]);
          const std::vector<bool> taken = Walk(o, swapped, excess);
          bool decides = false;
          for (size_t i = 0; i < r.size() && !decides; ++i) {
            decides = taken[i] != r[i].evicted;
          }
          if (!decides) continue;
          in_evicted[a - begin] = in_kept[b - begin] = true;
          if (r[a].position != r[b].position) {
            tie.by_position = true;
          } else {
            tie.by_set = true;
          }
        }
      }
      for (size_t i = begin; i < end; ++i) {
        if (in_evicted[i - begin]) tie.evicted.push_back({r[i].set, r[i].position});
        if (in_kept[i - begin]) tie.kept.push_back({r[i].set, r[i].position});
      }
      if (tie.evicted.empty() || tie.kept.empty()) {
        ++step.undecisive;
      } else {
        step.deciding.push_back(std::move(tie));
      }
    }
    begin = end;
  }
  return true;
}

std::string PolicyText(const PolicyConfig& config) {
  std::vector<std::string> parameters;
  for (const Parameter& p : config.parameters) {
    parameters.push_back(absl::StrCat(p.name, "=", p.value));
  }
  std::string text = config.name;
  if (!parameters.empty()) text += ":" + absl::StrJoin(parameters, ",");
  if (config.seed != 0) text += absl::StrFormat(" (seed %d)", config.seed);
  return text;
}

std::string ScoreText(double score) {
  return absl::StrFormat("%a (%.17g)", score, score);
}

std::string MemberText(const CaseAudit& audit, const AuditTie& tie,
                       const TieMember& member) {
  if (!tie.joint) return absl::StrCat(member.position);
  const std::string& name = member.set < audit.set_names.size()
                                ? audit.set_names[member.set]
                                : absl::StrCat("set ", member.set);
  return absl::StrCat(name, " @ ", member.position);
}

}  // namespace

CaseAudit AuditCase(const vectors::LoadedCase& loaded) {
  CaseAudit audit;
  const CaseContext c = ContextOf(loaded);
  audit.id = loaded.vector->id();
  audit.description = loaded.vector->description();
  audit.policy = PolicyText(c.config);
  // The harness itself runs the case; each ranking is audited as it is
  // observed (a long multi-head case ranks too much to keep), and keeps
  // what it evicts per set, to check against the log.
  struct Observed {
    AuditStep ties;
    std::map<size_t, std::vector<Position>> evicted;  // per ranked set
  };
  std::map<int64_t, Observed> observed;
  RunOptions options;
  options.on_ranking = [&](int64_t step, const RankingObservation& o) {
    Observed& at = observed[step];
    if (!o.joint) at.evicted[o.set];
    for (const RankedPair& pair : o.ranking) {
      std::vector<Position>& evicted = at.evicted[pair.set];
      if (pair.evicted) evicted.push_back(pair.position);
    }
    if (!AuditRanking(o, at.ties)) {
      audit.problems.push_back(absl::StrFormat(
          "step %d: replaying the walk of the ranking evicts otherwise", step));
    }
  };
  audit.run = RunScenario(c.config, c.scenario, options);
  // Kept sets, named as spec/heads.md#kept-sets numbers them.
  size_t sets = 1;
  for (const StepRecord& step : audit.run.steps) {
    sets = std::max<size_t>(sets, step.sets.size());
  }
  const int64_t granularity = sets > 1 ? EffectiveParameter(c.config, "granularity") : 0;
  for (size_t s = 0; s < sets; ++s) {
    audit.set_names.push_back(sets == 1 ? "layer"
                              : granularity == 2 ? absl::StrCat("query head ", s)
                                                 : absl::StrCat("KV head ", s));
  }
  for (size_t i = 0; i < audit.run.steps.size(); ++i) {
    const std::vector<std::vector<Position>> victims = VictimsOf(audit.run.steps[i]);
    const bool evicts = std::any_of(victims.begin(), victims.end(),
                                    [](const auto& v) { return !v.empty(); });
    const auto it = observed.find(static_cast<int64_t>(i));
    if (!evicts) {
      if (it != observed.end()) {
        audit.problems.push_back(absl::StrFormat(
            "step %d: a ranking was observed but the log has no victims", i));
      }
      continue;
    }
    AuditStep step;
    if (it != observed.end()) {
      step = std::move(it->second.ties);
      // The observed rankings must evict exactly the logged victims.
      for (auto& [s, evicted] : it->second.evicted) {
        std::sort(evicted.begin(), evicted.end());
        if (s >= victims.size() || evicted != victims[s]) {
          audit.problems.push_back(absl::StrFormat(
              "step %d, set %d: the ranking evicts [%s], the log [%s]", i, s,
              absl::StrJoin(evicted, " "),
              s < victims.size() ? absl::StrJoin(victims[s], " ") : "no such set"));
        }
      }
    }
    step.step = static_cast<int64_t>(i);
    step.victims = victims;
    audit.deciding_ties += step.deciding.size();
    audit.undecisive_ties += step.undecisive;
    audit.steps.push_back(std::move(step));
  }
  return audit;
}

std::vector<std::string> ExpectedLogProblems(const vectors::LoadedCase& loaded,
                                             const CaseAudit& audit) {
  std::vector<std::string> problems = audit.problems;
  const RunResult expected = FromProto(loaded.vector->expected());
  const auto text = [](const std::vector<std::vector<Position>>& sets) {
    std::vector<std::string> parts;
    for (const std::vector<Position>& v : sets) {
      parts.push_back("[" + absl::StrJoin(v, " ") + "]");
    }
    return absl::StrJoin(parts, " ");
  };
  if (expected.steps.size() != audit.run.steps.size()) {
    problems.push_back(absl::StrFormat("%d steps logged, %d expected",
                                       audit.run.steps.size(),
                                       expected.steps.size()));
  }
  for (size_t i = 0; i < std::min(expected.steps.size(), audit.run.steps.size());
       ++i) {
    const auto want = VictimsOf(expected.steps[i]);
    const auto got = VictimsOf(audit.run.steps[i]);
    if (want != got) {
      problems.push_back(absl::StrFormat("step %d: victims %s, expected %s", i,
                                         text(got), text(want)));
    }
  }
  if (CategoryOf(expected.refusal) != CategoryOf(audit.run.refusal) ||
      expected.refused_step != audit.run.refused_step) {
    problems.push_back(absl::StrFormat(
        "rejection %s at step %d, expected %s at step %d",
        CategoryName(CategoryOf(audit.run.refusal)), audit.run.refused_step,
        CategoryName(CategoryOf(expected.refusal)), expected.refused_step));
  }
  return problems;
}

std::string AuditText(const CaseAudit& audit, bool deciding_only) {
  std::string text = absl::StrFormat("%s: %s\n", audit.id, audit.policy);
  if (!audit.description.empty()) text += "  " + audit.description + "\n";
  for (const AuditStep& step : audit.steps) {
    if (deciding_only && step.deciding.empty()) continue;
    std::vector<std::string> per_set;
    for (size_t s = 0; s < step.victims.size(); ++s) {
      if (step.victims[s].empty()) continue;
      per_set.push_back(absl::StrCat(audit.set_names[s], " evicts ",
                                     absl::StrJoin(step.victims[s], " ")));
    }
    text += absl::StrFormat("  step %d: %s\n", step.step, absl::StrJoin(per_set, "; "));
    for (const AuditTie& tie : step.deciding) {
      std::vector<std::string> evicted, kept;
      for (const TieMember& m : tie.evicted) evicted.push_back(MemberText(audit, tie, m));
      for (const TieMember& m : tie.kept) kept.push_back(MemberText(audit, tie, m));
      std::string rule;
      if (!tie.joint) {
        rule = "the lower position goes (spec/harness.md#victims)";
      } else {
        rule = absl::StrCat(
            "decided by ",
            tie.by_position && tie.by_set ? "position and set"
            : tie.by_set                  ? "set (same position: the lower set goes)"
                                          : "position (the lower goes)",
            " in the joint order score, position, set "
            "(spec/heads.md#head-adaptive-budgets)");
      }
      text += absl::StrFormat(
          "    deciding tie in %s at score %s: evicted %s, kept %s; %s\n",
          tie.joint ? std::string("the joint ranking")
                    : audit.set_names[std::min(tie.set, audit.set_names.size() - 1)] +
                          "'s ranking",
          ScoreText(tie.score), absl::StrJoin(evicted, ", "),
          absl::StrJoin(kept, ", "), rule);
    }
  }
  if (!audit.run.refusal.ok()) {
    text += absl::StrFormat("  rejected: %s at step %d\n",
                            CategoryName(CategoryOf(audit.run.refusal)),
                            audit.run.refused_step);
  }
  for (const std::string& problem : audit.problems) {
    text += "  PROBLEM: " + problem + "\n";
  }
  text += absl::StrFormat("  %d evicting steps, %d deciding ties, %d undecisive\n",
                          audit.steps.size(), audit.deciding_ties,
                          audit.undecisive_ties);
  return text;
}

// spec/features.md: each case declares at least the features it uses, in
// the list's order, and a `since` no earlier than its policy's, features',
// parameters' and flags' versions; and a port of spec `since` that has only
// the declared features (the fields of the others dropped, their
// parameters refused) gets the expected log.
void CheckFeatures(const vectors::VectorSet& set, std::vector<std::string>& failures) {
  for (const vectors::LoadedCase& loaded : set.cases) {
    const v1::Case& vector = *loaded.vector;
    const std::string& id = vector.id();
    const std::set<std::string> declared(vector.features().begin(),
                                         vector.features().end());
    const std::vector<std::string> needed =
        vectors::CaseFeatures(vector.policy(), *loaded.scenario);
    for (const std::string& feature : needed) {
      if (declared.count(feature) == 0) {
        failures.push_back(absl::StrFormat(
            "case %s: uses feature %s but does not declare it", id, feature));
      }
    }
    for (const std::string& feature : vector.features()) {
      if (vectors::FindFeature(feature) == nullptr) {
        failures.push_back(absl::StrFormat("case %s: unknown feature %s", id, feature));
      }
    }
    std::vector<std::string> flag_versions;
    for (const std::string& flag : vector.flags()) {
      if (const vectors::FlagInfo* info = vectors::FindFlag(flag)) {
        flag_versions.push_back(info->since);
      }
    }
    const std::string least = vectors::CaseSince(vector.policy(), *loaded.scenario,
                                                 flag_versions);
    if (!vectors::ParseVersion(vector.since()).has_value() ||
        vectors::CompareVersions(vector.since(), least) < 0 ||
        vectors::CompareVersions(vector.since(), kSpecVersion) > 0) {
      failures.push_back(absl::StrFormat(
          "case %s: since '%s', but its policy, features, parameters and flags "
          "are of %s (and the spec is %s)", id, vector.since(), least, kSpecVersion));
    }
    // The port that has exactly what the case declares.
    v1::EvictionLog got;
    const std::string unknown =
        vectors::UnknownParameter(vector.policy(), declared, vector.since());
    if (!unknown.empty()) {
      got.mutable_rejection()->set_category(v1::INVALID_PARAMETER);
      got.mutable_rejection()->set_step(-1);
    } else {
      got = ToProto(RunScenario(FromProto(vector.policy()),
                                FromProto(vectors::StripScenario(*loaded.scenario, declared)),
                                RunOptions{/*record_cut=*/true}));
    }
    v1::EvictionLog expected = vector.expected();
    got.mutable_rejection()->clear_message();
    expected.mutable_rejection()->clear_message();
    if (!got.has_rejection() || got.rejection().category() == 0) got.clear_rejection();
    if (!expected.has_rejection() || expected.rejection().category() == 0) {
      expected.clear_rejection();
    }
    if (got.SerializeAsString() != expected.SerializeAsString()) {
      failures.push_back(absl::StrFormat(
          "case %s: a port of spec %s with only features %s gets another log: "
          "the case uses more than it declares",
          id, vector.since(), absl::StrJoin(vector.features(), ", ")));
    }
  }
}

namespace {

// The flags whose rule a parameter feeds: a case claiming one of them claims
// that the parameter's value, through that rule, shows in its log.
const std::map<std::string, std::set<std::string>>& FlagsFedBy() {
  static const auto* fed = new std::map<std::string, std::set<std::string>>{
      {"safeguard_permille",
       {"heads.safeguard", "heads.floor-at-least-one",
        "heads.floor-zero-when-safeguard-zero", "heads.floor-rounds-down"}},
      {"adaptive", {"heads.adaptive"}},
      {"granularity", {"heads.granularity"}},
      {"aggregation", {"heads.aggregation", "heads.mean-rounding"}},
      {"recent_window", {"recent-window.protected"}},
      {"sinks", {"sinks.protected"}},
      {"obs_window", {"snapkv.ring-wrap"}},
      {"pool_kernel",
       {"snapkv.pool-defends", "snapkv.pool-clamp", "snapkv.pool-protected-neighbour"}},
      {"prefill_only", {"prefill.only"}},
      {"ratio_ppm", {"prefill.ratio", "prefill.ratio-binary64"}},
      {"normalize", {"prefill.normalize"}},
      {"protect_newest", {"prefill.protect-newest"}},
      {"window_budget", {"prefill.window-budget"}},
      {"pooling", {"prefill.pooling"}},
      {"window_reduce", {"prefill.window-reduce"}},
  };
  return *fed;
}

}  // namespace

// Two accepted cases on the same scenario, same policy and seed, whose
// configurations differ only in parameters that feed flag F's rule, and
// whose expected logs are byte-identical, must not both claim F (unless F is
// a neighbour.* flag, which claims an equality): the log cannot tell their
// two inputs to F's rule apart, so at most one of them shows F deciding
// anything the other does not; the other's claim is the one that fooled the
// census before (h2o/adakv/floor-raised-to-one and safeguard-zero-empties,
// both heads.safeguard, one log).
void CheckIdenticalLogs(const vectors::VectorSet& set,
                        std::vector<std::string>& failures) {
  std::map<std::pair<std::string, std::string>, std::vector<const vectors::LoadedCase*>>
      by_scenario;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const v1::EvictionLog& log = loaded.vector->expected();
    if (log.has_rejection() && log.rejection().category() != 0) continue;
    by_scenario[{loaded.file, loaded.vector->scenario_id()}].push_back(&loaded);
  }
  for (const auto& [key, cases] : by_scenario) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const v1::Case& a = *cases[i]->vector;
      const std::string a_log = a.expected().SerializeAsString();
      for (size_t j = i + 1; j < cases.size(); ++j) {
        const v1::Case& b = *cases[j]->vector;
        const PolicyConfig ca = FromProto(a.policy()), cb = FromProto(b.policy());
        if (ca.name != cb.name || ca.seed != cb.seed ||
            b.expected().SerializeAsString() != a_log) {
          continue;
        }
        std::set<std::string> names;
        for (const Parameter& p : ca.parameters) names.insert(p.name);
        for (const Parameter& p : cb.parameters) names.insert(p.name);
        std::vector<std::string> differing;
        for (const std::string& name : names) {
          if (EffectiveParameter(ca, name, -1) != EffectiveParameter(cb, name, -1)) {
            differing.push_back(name);
          }
        }
        if (differing.empty()) continue;
        for (const std::string& flag : a.flags()) {
          if (flag.rfind("neighbour.", 0) == 0 ||
              std::find(b.flags().begin(), b.flags().end(), flag) == b.flags().end()) {
            continue;
          }
          bool all_feed = true;
          for (const std::string& name : differing) {
            const auto it = FlagsFedBy().find(name);
            all_feed = all_feed && it != FlagsFedBy().end() && it->second.count(flag) > 0;
          }
          if (!all_feed) continue;
          // A rule that maps both configurations to the same input (the
          // floor flags: the same floor) requires the identical logs: each
          // case then pins its own value's mapping, as a neighbour flag
          // pins an equality (h2o/adakv/floor-one-binds-at-safeguard-one).
          const bool floor_flag =
              flag == "heads.safeguard" || flag.rfind("heads.floor-", 0) == 0;
          if (floor_flag) {
            const SharedBudget fa = SharedBudgetOf(ca, 2), fb = SharedBudgetOf(cb, 2);
            if (fa.on && fb.on && fa.floor == fb.floor) continue;
          }
          failures.push_back(absl::StrFormat(
              "cases %s and %s: both claim %s, but their expected logs are "
              "byte-identical and their configurations differ only in %s, "
              "which feeds that rule: at most one may claim it",
              a.id(), b.id(), flag, absl::StrJoin(differing, ", ")));
        }
      }
    }
  }
}

CensusResult RunCensus(const vectors::VectorSet& set) {
  CensusResult result;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const CaseContext c = ContextOf(loaded);
    for (const std::string& flag : loaded.vector->flags()) {
      std::string note;
      if (Decides(flag, c, &note)) {
        ++result.decided[{flag, c.config.name}];
        ++result.decided_total[flag];
        if (!note.empty()) {
          result.notes.push_back(absl::StrCat("case ", loaded.vector->id(), ": ", note));
        }
      } else {
        result.failures.push_back(absl::StrFormat(
            "case %s: flag %s did not decide it", loaded.vector->id(), flag));
      }
    }
  }
  CheckBounds(set, result.failures);
  CheckForeignParameters(set, result.failures);
  CheckLaterHeads(set, result.failures);
  CheckDefaults(set, result.failures);
  CheckFeatures(set, result.failures);
  CheckIdenticalLogs(set, result.failures);
  for (const vectors::FlagInfo& flag : vectors::Flags()) {
    if (flag.required_for.empty() && result.decided_total[flag.name] == 0) {
      result.failures.push_back(absl::StrFormat(
          "flag %s decided no case in the suite", flag.name));
    }
    for (const std::string& policy : flag.required_for) {
      if (result.decided[{flag.name, policy}] == 0) {
        result.failures.push_back(absl::StrFormat(
            "flag %s decided no %s case", flag.name, policy));
      }
    }
  }
  return result;
}

std::string CensusTable(const CensusResult& result) {
  std::string table = "| flag |";
  for (const char* policy : kPolicies) table += absl::StrFormat(" %s |", policy);
  table += "\n| --- |";
  for (size_t i = 0; i < std::size(kPolicies); ++i) table += " ---: |";
  table += "\n";
  for (const vectors::FlagInfo& flag : vectors::Flags()) {
    table += absl::StrFormat("| `%s` |", flag.name);
    for (const char* policy : kPolicies) {
      const auto it = result.decided.find({flag.name, policy});
      const int n = it == result.decided.end() ? 0 : it->second;
      const bool required =
          std::find(flag.required_for.begin(), flag.required_for.end(), policy) !=
          flag.required_for.end();
      table += n > 0 ? absl::StrFormat(" %d |", n) : (required ? " **0** |" : " |");
    }
    table += "\n";
  }
  return table;
}

}  // namespace audit
}  // namespace kvspec
