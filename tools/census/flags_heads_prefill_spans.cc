// The flag table (spec/vectors.md#flags), continued: the counterfactual
// checks of the flags of several heads and head-adaptive budgets
// (spec/heads.md), prefill and presets (spec/prefill.md and the cards' "At
// prefill"), and spans, engines and context shift (spec/spans.md). Decides
// (flags.cc) asks here first.
#include <algorithm>

#include "absl/strings/str_format.h"
#include "cc/harness.h"
#include "cc/presets.h"
#include "cc/registry.h"
#include "cc/spans.h"
#include "tools/census/census_internal.h"
#include "tools/census/mutants.h"

namespace kvspec {
namespace audit {
namespace internal {
namespace {

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

}  // namespace

std::optional<bool> DecidesHeadsPrefillSpans(const std::string& flag,
                                             const CaseContext& c,
                                             std::string* note) {
  const std::string& policy = c.config.name;
  const bool explicit_steps = !c.scenario.trace.has_value();
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
  if (flag == "preset.kvpress-0.5.5-decoding") {
    return RunsPreset(c, "kvpress-0.5.5-decoding");
  }
  if (flag == "preset.official") return RunsPreset(c, "official");
  if (flag == "preset.kvcache-factory") return RunsPreset(c, "kvcache-factory");
  if (flag == "preset.kvpress-0.5.5-pyramidkv") {
    return RunsPreset(c, "kvpress-0.5.5-pyramidkv");
  }
  if (flag == "preset.kvcache-factory-pyramidkv") {
    return RunsPreset(c, "kvcache-factory-pyramidkv");
  }
  // spec/policies/simlayerkv.md: never lazy, the threshold's last ppm, and
  // one position fewer in the first region.
  if (flag == "simlayerkv.lazy") {
    return c.expected.refusal.ok() &&
           EffectiveParameter(c.config, "lazy_threshold_ppm") != 1000000 &&
           DiffersWith(c, WithParameter(c.config, "lazy_threshold_ppm", 1000000));
  }
  if (flag == "simlayerkv.threshold-strict") {
    const int64_t threshold = EffectiveParameter(c.config, "lazy_threshold_ppm");
    return c.expected.refusal.ok() && threshold >= 1 &&
           DiffersWith(c, WithParameter(c.config, "lazy_threshold_ppm", threshold - 1));
  }
  if (flag == "simlayerkv.short") {
    if (!c.expected.refusal.ok()) return false;
    for (const StepRecord& step : c.expected.steps) {
      if (!step.victims.empty()) return false;
    }
    const int64_t n_initial = EffectiveParameter(c.config, "n_initial");
    return n_initial >= 1 &&
           DiffersWith(c, WithParameter(c.config, "n_initial", n_initial - 1));
  }
  // spec/policies/pyramidkv.md: the mode off, or a neighbouring layer.
  if (flag == "prefill.pyramid") {
    return c.expected.refusal.ok() &&
           EffectiveParameter(c.config, "pyramid") != 0 &&
           DiffersWith(c, WithParameter(c.config, "pyramid", 0));
  }
  if (flag == "prefill.pyramid-layer") {
    if (!c.expected.refusal.ok() || EffectiveParameter(c.config, "pyramid") == 0) {
      return false;
    }
    const int64_t layer = EffectiveParameter(c.config, "layer");
    const int64_t layers = EffectiveParameter(c.config, "layers");
    for (int64_t other : {layer - 1, layer + 1}) {
      if (other < 0 || other >= layers) continue;
      if (DiffersWith(c, WithParameter(c.config, "layer", other))) return true;
    }
    return false;
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
  return std::nullopt;
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
