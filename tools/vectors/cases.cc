#include "tools/vectors/cases.h"
#include "tools/vectors/combination_cases.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_format.h"
#include "cc/presets.h"
#include "cc/registry.h"
#include "cc/rng.h"
#include "cc/trace.h"
#include "tools/vectors/bounds.h"

namespace kvspec {
namespace vectors {
namespace {

using Row = std::vector<float>;

ScenarioStep Null(uint32_t admit = 1) { return {admit, std::nullopt}; }
ScenarioStep WithRow(Row row, uint32_t admit = 1) {
  return {admit, std::move(row)};
}

Scenario Explicit(std::string id, std::vector<ScenarioStep> steps) {
  Scenario scenario;
  scenario.id = std::move(id);
  scenario.steps = std::move(steps);
  return scenario;
}

Scenario Chunks(std::string id, const std::vector<uint32_t>& chunks) {
  std::vector<ScenarioStep> steps;
  for (uint32_t admit : chunks) steps.push_back(Null(admit));
  return Explicit(std::move(id), std::move(steps));
}

Scenario Traced(std::string id, const TraceConfig& trace) {
  Scenario scenario;
  scenario.id = std::move(id);
  scenario.trace = trace;
  return scenario;
}

// Each position p has one weight, a multiple of 1/8 drawn once, at every
// step: attention is stationary and ties are frequent.
Scenario Stationary(std::string id, uint32_t steps, uint64_t seed) {
  Rng rng(seed);
  Row weights;
  std::vector<ScenarioStep> out;
  for (uint32_t step = 0; step < steps; ++step) {
    out.push_back(WithRow(weights));
    weights.push_back(static_cast<float>(rng.Uniform(8)) / 8.0f);
  }
  return Explicit(std::move(id), std::move(out));
}

// Chunks, null steps and fresh weights at every step.
Scenario Wandering(std::string id, uint32_t steps, uint64_t seed) {
  Rng rng(seed);
  std::vector<ScenarioStep> out;
  uint32_t admitted = 0;
  for (uint32_t step = 0; step < steps; ++step) {
    ScenarioStep s;
    s.admit = rng.Uniform(5) == 0 ? 1 + static_cast<uint32_t>(rng.Uniform(6)) : 1;
    if (rng.Uniform(7) != 0) {
      Row row(admitted);
      for (float& w : row) w = rng.UniformFloat();
      s.attention = std::move(row);
    }
    admitted += s.admit;
    out.push_back(std::move(s));
  }
  return Explicit(std::move(id), std::move(out));
}

PolicyConfig P(const char* name, std::vector<Parameter> parameters,
               uint64_t seed = 0) {
  return {name, std::move(parameters), seed};
}

class SuiteBuilder {
 public:
  void Add(Scenario scenario) { suite_.scenarios.push_back(std::move(scenario)); }
  // A traced scenario whose `absent` fields are left out on the wire.
  void AddAbsent(Scenario scenario, std::vector<std::string> absent) {
    suite_.absent_trace_fields[scenario.id] = std::move(absent);
    Add(std::move(scenario));
  }
  void Case(std::string id, std::vector<std::string> flags,
            std::string description, PolicyConfig policy,
            std::string scenario_id) {
    suite_.cases.push_back({std::move(id), std::move(flags),
                            std::move(description), std::move(policy),
                            std::move(scenario_id)});
  }
  Suite Build() { return std::move(suite_); }

 private:
  Suite suite_;
};

const float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kTopBudget = 4294967295;  // spec/harness.md#budget
const float kInf = std::numeric_limits<float>::infinity();

// Spec 0.4.0: scenarios for what an outside audit found unexercised
// (two faults in one step, absent trace fields, bounds, a chunk as long as
// the budget).
void AddAuditScenarios(SuiteBuilder& b) {
  // spec/harness.md#refusals: two faults, the check order decides.
  b.Add(Explicit("admit-zero-row-too-short", {Null(2), {0, Row{0.5f}}}));
  b.Add(Explicit("row-too-long-with-nan", {Null(2), WithRow({kNan, 0.25f, 0.5f})}));
  b.Add(Explicit("nan-then-admit-zero", {Null(2), WithRow({kNan, 0.5f}), Null(0)}));
  b.Add(Explicit("scenario-empty", {}));
  // spec/harness.md#scenarios: a present trace message with no field set.
  const std::vector<std::string> all_fields = TraceFieldNames();
  {
    Scenario empty = Traced("trace-empty", TraceConfig{});
    b.AddAbsent(empty, all_fields);
    Scenario with_steps = Chunks("trace-empty-and-steps", {1});
    with_steps.trace = TraceConfig{};
    b.AddAbsent(with_steps, all_fields);
    std::vector<std::string> no_steps = {"steps"};
    b.AddAbsent(Traced("trace-steps-absent", TraceConfig{}), no_steps);
    TraceConfig minus_zero_noise = CanonicalTrace(10);
    minus_zero_noise.noise = -0.0;
    b.Add(Traced("trace-noise-minus-zero", minus_zero_noise));
    // Every field but `steps` absent: the canonical trace by its defaults,
    // past the first epoch so heavy hitters count.
    std::vector<std::string> all_but_steps;
    for (const std::string& f : all_fields) {
      if (f != "steps") all_but_steps.push_back(f);
    }
    b.AddAbsent(Traced("trace-defaults-700", CanonicalTrace(700)), all_but_steps);
  }
  // Trace parameter bounds (spec/trace.md#parameters), on 10 steps.
  for (const TraceBound& bound : TraceBounds()) {
    TraceConfig config = CanonicalTrace(10);
    bound.set(config);
    b.Add(Traced(bound.scenario_id, config));
  }
  // Six single steps with rows: at budget 4, steps 4 and 5 evict.
  b.Add(Explicit("rows-6", {WithRow({}), WithRow({0.5f}), WithRow({0.25f, 0.5f}),
                            WithRow({0.125f, 0.5f, 0.25f}),
                            WithRow({0.0625f, 0.5f, 0.125f, 0.25f}),
                            WithRow({0.5f, 0.25f, 0.0625f, 0.125f, 0.75f})}));
  // Gaps mutation testing of the Rust port found (spec 0.4.0).
  // Positions are first + count - 1, never first * count: 65536 x 65536 would
  // pass 2^32 - 1 (spec/harness.md#refusals).
  b.Add(Chunks("chunks-65536-65537", {65536, 65537}));
  {
    // A seed whose position-1 salience has few significant bits, so that
    // salience(p) computed with `- 1` or `* 1` in place of `+ 1` moves a
    // weight by more than binary32 rounding (spec/trace.md#hashes).
    TraceConfig salience = CanonicalTrace(6);
    salience.seed = 1590569862383852635u;
    salience.sinks = 0;
    salience.recent_length = 0;
    salience.heavy_count = 0;
    b.Add(Traced("trace-salience-low-bits", salience));
    // No heavy hitters but an epoch past the sinks: the heavy part is absent
    // and adds no mass (spec/trace.md#steps-and-rows).
    TraceConfig no_heavy = CanonicalTrace(6);
    no_heavy.sinks = 1;
    no_heavy.epoch_length = 4;
    no_heavy.heavy_count = 0;
    b.Add(Traced("trace-no-heavy-hitters", no_heavy));
    // Light sinks that compete with the recent positions: the sink share
    // sink_mass / s decides which are kept (spec/trace.md#steps-and-rows).
    TraceConfig light_sinks = CanonicalTrace(20);
    light_sinks.sink_mass = 0.0625;
    b.Add(Traced("trace-light-sinks", light_sinks));
    // More draws than candidates: heavy hitters of multiplicity 2 and more,
    // whose share is (heavy_mass / heavy_count) * m.
    TraceConfig multiple = CanonicalTrace(8);
    multiple.sinks = 0;
    multiple.epoch_length = 4;
    multiple.heavy_count = 8;
    b.Add(Traced("trace-heavy-multiplicity", multiple));
  }
  // A chunk exactly as long as the budget (4): into an empty cache, then into
  // a full one, then one more step.
  b.Add(Explicit("chunks-4-4-1",
                 {WithRow({}, 4), WithRow({0.5f, 0.125f, 0.25f, 0.0625f}, 4),
                  WithRow({0.5f, 0.125f, 0.25f, 0.0625f, 0.375f, 0.0f, 0.1875f,
                           0.03125f})}));
}

void AddScenarios(SuiteBuilder& b) {
  b.Add(Chunks("one-step", {1}));
  b.Add(Chunks("singles-7", {1, 1, 1, 1, 1, 1, 1}));
  b.Add(Chunks("chunk-5-then-2", {5, 2}));
  b.Add(Chunks("chunk-1-then-4", {1, 4}));
  b.Add(Chunks("chunk-10", {10}));
  b.Add(Chunks("chunk-4-then-2", {4, 2}));
  b.Add(Chunks("chunk-5-then-4", {5, 4}));
  b.Add(Chunks("chunk-2-then-5", {2, 5}));
  b.Add(Chunks("chunk-600", {600}));
  b.Add(Chunks("mixed-chunks", {1, 7, 1, 1, 3, 1, 12, 1, 1, 2, 1, 5, 1}));
  b.Add(Chunks("singles-5", {1, 1, 1, 1, 1}));
  b.Add(Chunks("chunk-4", {4}));
  b.Add(Chunks("chunks-2-1-1-2-1", {2, 1, 1, 2, 1}));
  b.Add(Explicit("admit-zero", {Null(1), Null(0)}));
  b.Add(Explicit("positions-past-limit", {Null(2), Null(4294967295u)}));
  b.Add(Explicit("row-short-at-the-last-position",
                 {Null(2), WithRow({0.5f}, 4294967294u)}));
  b.Add(Explicit("row-too-short", {Null(3), WithRow({0.5f, 0.5f})}));
  b.Add(Explicit("row-too-long", {Null(2), WithRow({0.5f, 0.25f, 0.25f})}));
  b.Add(Explicit("weight-nan", {Null(3), WithRow({0.5f, kNan, 0.5f})}));
  b.Add(Explicit("weight-nan-evicted", {Null(3), WithRow({kNan, 0.5f, 0.5f})}));
  b.Add(Explicit("weight-inf", {Null(2), WithRow({kInf, 0.5f})}));
  b.Add(Explicit("weight-minus-inf", {Null(2), WithRow({0.5f, -kInf})}));
  b.Add(Explicit("weight-negative", {Null(2), WithRow({0.5f, -0.25f})}));
  b.Add(Explicit("weight-minus-zero", {Null(2), WithRow({-0.0f, 0.5f})}));
  {
    Scenario both = Chunks("trace-and-steps", {1});
    both.trace = CanonicalTrace(10);
    b.Add(both);
    TraceConfig bad = CanonicalTrace(10);
    bad.background_mass = 0.0;
    b.Add(Traced("trace-no-background", bad));
    TraceConfig minus_zero = CanonicalTrace(10);
    minus_zero.sink_mass = -0.0;
    b.Add(Traced("trace-minus-zero-mass", minus_zero));
  }
  // h2o, tova: four single steps whose last row varies.
  auto four = [](std::string id, Row last) {
    return Explicit(std::move(id), {Null(), WithRow({1.0f}),
                                    WithRow({0.25f, 0.5f}),
                                    WithRow(std::move(last))});
  };
  b.Add(four("four-distinct", {0.25f, 0.125f, 0.5f}));
  b.Add(four("four-tie-1-2", {0.25f, 0.25f, 0.75f}));
  b.Add(four("four-tie-latest", {0.5f, 0.25f, 0.25f}));
  b.Add(four("four-latest-only", {0.0f, 0.125f, 0.5f}));
  // harness.md#victims' and tova.md#tie-breaking's example, with tova
  // budget 3, recent_window 1: single steps whose rows give 0.5 to every
  // kept position but one planned victim (0.0), so that 4, 9 and 12 are
  // kept when 13 is admitted; then latest weights 0.5, 0.25, 0.25.
  {
    const std::map<uint32_t, uint32_t> victim = {{3, 0},  {4, 1},  {5, 2},  {6, 3},
                                                 {7, 5},  {8, 6},  {9, 7},  {10, 8},
                                                 {11, 10}, {12, 11}};
    std::vector<ScenarioStep> steps = {Null()};
    std::set<uint32_t> kept = {0};
    for (uint32_t t = 1; t <= 12; ++t) {
      Row row(t, 0.0f);
      for (uint32_t p : kept) row[p] = victim.count(t) > 0 && victim.at(t) == p ? 0.0f : 0.5f;
      steps.push_back(WithRow(row));
      kept.insert(t);
      if (victim.count(t) > 0) kept.erase(victim.at(t));
    }
    Row last(13, 0.0f);
    last[4] = 0.5f;
    last[9] = 0.25f;
    last[12] = 0.25f;
    steps.push_back(WithRow(last));
    b.Add(Explicit("tova-example-4-9-12", steps));
  }
  b.Add(Explicit("unobserved-new", {Null(), WithRow({0.5f}),
                                    WithRow({0.5f, 0.25f})}));
  b.Add(Explicit("null-then-row", {Null(), WithRow({0.5f}), Null(),
                                   WithRow({0.0f, 0.5f, 0.0f})}));
  b.Add(Explicit("null-last", {Null(), WithRow({1.0f}), WithRow({0.25f, 0.5f}),
                               Null()}));
  b.Add(Explicit("chunk-ranking", {WithRow({}, 2), WithRow({0.5f, 0.25f}, 3)}));
  b.Add(Explicit("recent-protects", {WithRow({}, 3), WithRow({1.0f, 0.5f, 0.0f})}));
  b.Add(Explicit("descending-chunk",
                 {WithRow({}, 4), WithRow({0.5f, 0.25f, 0.125f, 0.0625f}, 2)}));
  b.Add(Explicit("recent-zero-attention",
                 {WithRow({}, 3), WithRow({1.0f, 0.0f, 0.0f}),
                  WithRow({1.0f, 0.0f, 0.0f, 0.0f})}));
  {
    const float big = 16777216.0f;  // 2^24
    b.Add(Explicit("binary64-sums",
                   {WithRow({}, 2), WithRow({big, big}),
                    WithRow({1.0f, 1.0f, 2 * big}),
                    WithRow({1.0f, 0.0f, 2 * big, 0.0f})}));
  }
  {
    // Weights at the low edge of binary32 (issue 19): the smallest
    // subnormal 2^-149, the largest subnormal L = 2^-126 - 2^-149, the
    // smallest normal 2^-126 and the next above it. A port that flushes
    // subnormals to zero ties them with 0.0.
    const float tiny = std::ldexp(1.0f, -149);
    const float normal = std::ldexp(1.0f, -126);
    const float largest_subnormal = normal - tiny;
    const float above_normal = std::nextafter(normal, 1.0f);
    b.Add(Explicit("binary32-subnormals",
                   {Null(3), WithRow({tiny, 0.0f, 0.5f}),
                    WithRow({largest_subnormal, 0.0f, 0.5f, tiny}),
                    WithRow({normal, 0.0f, above_normal, 0.0f, normal})}));
  }
  b.Add(Explicit("no-renormalization",
                 {Null(4), WithRow({0.75f, 0.125f, 0.0f, 0.0f}),
                  WithRow({0.25f, 0.25f, 0.0f, 0.375f, 0.125f})}));
  b.Add(Explicit("tova-no-recent", {Null(2), WithRow({0.5f, 0.25f}),
                                    WithRow({0.5f, 0.0f, 0.75f})}));
  // snapkv.
  b.Add(Explicit("ring-wrap", {Null(), WithRow({0.5f}), WithRow({0.25f, 0.75f}),
                               WithRow({0.125f, 0.25f, 0.5f})}));
  b.Add(Explicit("null-ring", {Null(2), WithRow({0.5f, 0.0f}), Null(),
                               WithRow({0.125f, 0.25f, 1.0f, 0.0f})}));
  {
    const float t = 0x1.0p-53f;
    auto rounding = [t](std::string id, std::optional<Row> first) {
      return Explicit(std::move(id),
                      {{2, std::move(first)}, WithRow({0.5f, 0.0f}),
                       WithRow({t, 0.0f, 0.0f}),
                       WithRow({1.0f, 0.0f, 0.0f, 0.0f}),
                       WithRow({t, 1.0f, 0.0f, 0.0f, 0.0f})});
    };
    b.Add(rounding("ring-order-null-first", std::nullopt));
    b.Add(rounding("ring-order-empty-first", Row{}));
  }
  b.Add(Explicit("pool-high-end", {Null(3), WithRow({1.0f, 0.5f, 0.25f})}));
  b.Add(Explicit("pool-low-end", {Null(4), WithRow({0.25f, 0.5f, 1.0f, 0.75f})}));
  b.Add(Explicit("pool-defends", {Null(4), WithRow({0.5f, 0.125f, 1.0f, 0.25f})}));
  b.Add(Explicit("pool-protected", {Null(3), WithRow({0.5f, 0.25f, 1.0f})}));
  b.Add(Explicit("pool-protected-decides",
                 {Null(4), WithRow({0.5f, 0.125f, 0.25f, 1.0f})}));
  b.Add(Stationary("stationary-200", 200, 1));
  b.Add(Wandering("wandering-150", 150, 1));
  for (uint32_t budget : {256u, 512u, 1024u}) {
    b.Add(Traced("canonical-" + std::to_string(4 * budget),
                 CanonicalTrace(4 * budget)));
  }
  b.Add(Traced("canonical-300", CanonicalTrace(300)));
  AddAuditScenarios(b);
}

void AddHarnessCases(SuiteBuilder& b) {
  const PolicyConfig window4 = P("window", {{"budget", 4}});
  b.Case("harness/refusal/unknown-policy", {"refusal.unknown-policy"},
         "'lru' is not a registered policy", P("lru", {}), "one-step");
  b.Case("harness/refusal/unknown-parameter", {"refusal.invalid-parameter"},
         "window takes no parameter 'size'", P("window", {{"size", 4}}),
         "one-step");
  b.Case("harness/refusal/repeated-parameter", {"refusal.invalid-parameter"},
         "budget given twice", P("window", {{"budget", 4}, {"budget", 4}}),
         "one-step");
  b.Case("harness/refusal/admit-zero", {"refusal.position"},
         "step 1 admits no position", window4, "admit-zero");
  // A gap the whole-port mutation run of 2026-12-02 found (mutmut, Python
  // port): no vector reached the other POSITION check. It refuses before
  // admitting anything, so two steps reach it with two positions held.
  b.Case("harness/refusal/positions-past-limit", {"refusal.position"},
         "step 1 admits 2^32 - 1 positions after 2: the last would be 2^32, "
         "past 2^32 - 1: POSITION at step 1, before anything is admitted",
         window4, "positions-past-limit");
  // The same check at its boundary: a step whose last position is exactly
  // 2^32 - 1 passes it, so the next check (the row's length) decides. Still
  // nothing is admitted. A port that refuses this step as POSITION has the
  // bound off by one or two (issue 19: mutants of both ports once argued
  // untestable, as if such a step had to be admitted).
  b.Case("harness/refusal/row-short-at-the-last-position",
         {"refusal.attention-length"},
         "step 1 admits 2^32 - 2 positions after 2, the last exactly 2^32 - "
         "1: accepted by check 2; its row has 1 weight for 2 admitted "
         "positions: ATTENTION_LENGTH at step 1, before anything is admitted",
         window4, "row-short-at-the-last-position");
  b.Case("harness/refusal/row-too-short", {"refusal.attention-length"},
         "step 1's row has 2 weights for 3 admitted positions", window4,
         "row-too-short");
  b.Case("harness/refusal/row-too-long", {"refusal.attention-length"},
         "step 1's row has 3 weights for 2 admitted positions", window4,
         "row-too-long");
  b.Case("harness/refusal/weight-nan", {"refusal.attention-value"},
         "a NaN weight", window4, "weight-nan");
  b.Case("harness/refusal/weight-nan-at-evicted-position",
         {"refusal.attention-value"},
         "a NaN at a position the policy no longer keeps is still refused",
         P("window", {{"budget", 2}}), "weight-nan-evicted");
  b.Case("harness/refusal/weight-inf", {"refusal.attention-value"},
         "an infinite weight", window4, "weight-inf");
  b.Case("harness/refusal/weight-minus-inf", {"refusal.attention-value"},
         "a -inf weight", window4, "weight-minus-inf");
  b.Case("harness/refusal/weight-negative", {"refusal.attention-value"},
         "a negative weight", window4, "weight-negative");
  b.Case("harness/refusal/weight-minus-zero", {"refusal.attention-value"},
         "-0.0 is refused: its sign bit is set", window4, "weight-minus-zero");
  b.Case("harness/refusal/trace-and-steps", {"refusal.invalid-trace"},
         "a scenario with both steps and a trace", window4, "trace-and-steps");
  b.Case("harness/refusal/trace-no-background", {"refusal.invalid-trace"},
         "background_mass must be above 0", window4, "trace-no-background");
  b.Case("harness/refusal/trace-minus-zero-mass", {"refusal.invalid-trace"},
         "sink_mass -0.0 is refused: its sign bit is set", window4,
         "trace-minus-zero-mass");
  b.Case("harness/refusal/configuration-before-trace",
         {"refusal.invalid-parameter"},
         "a bad configuration and a bad trace: the configuration is reported",
         P("window", {{"budget", 0}}), "trace-no-background");
  b.Case("harness/gather/no-renormalization", {"renormalize.none"},
         "raw gathered weights tie positions 1 and 3 and 1 goes; "
         "renormalized ones would evict 3",
         P("h2o", {{"budget", 3}, {"recent_window", 2}}), "no-renormalization");
}

void AddPositionalCases(SuiteBuilder& b) {
  b.Case("full/basic/never-evicts", {}, "chunks and single steps, nothing goes",
         P("full", {}), "mixed-chunks");
  b.Case("full/refusal/budget", {"refusal.invalid-parameter"},
         "full takes no budget", P("full", {{"budget", 8}}), "one-step");
  b.Case("full/canonical/steps-300", {"canonical-trace"},
         "300 steps of the canonical trace, nothing goes", P("full", {}),
         "canonical-300");

  const PolicyConfig window3 = P("window", {{"budget", 3}});
  b.Case("window/basic/single-steps", {"null-attention.still-evicts"},
         "window.md worked example: budget 3: each step past the third evicts the oldest", window3,
         "singles-7");
  b.Case("window/chunk/evicts-in-one-step", {"chunk.one-ranking"},
         "window.md worked example and harness.md#chunked-admission: budget 3: a chunk of 5 evicts 0 and 1, then a chunk of 2 evicts 2, 3",
         window3, "chunk-5-then-2");
  b.Case("window/chunk/longer-than-budget", {"chunk.evicts-own", "chunk.one-ranking"},
         "window.md worked example: budget 2: a chunk of 4 evicts two of its own positions",
         P("window", {{"budget", 2}}), "chunk-1-then-4");
  b.Case("window/refusal/budget-zero", {"refusal.invalid-parameter"},
         "budget 0", P("window", {{"budget", 0}}), "one-step");
  b.Case("window/refusal/budget-above-2-32", {"refusal.invalid-parameter"},
         "budget 2^32", P("window", {{"budget", 4294967296}}), "one-step");
  b.Case("window/defaults/budget-512",
         {"defaults", "defaults.decides", "chunk.one-ranking"},
         "513 positions at the default budget: 0 goes", P("window", {}),
         "chunk-600");

  auto streaming = [](int64_t budget, int64_t sinks) {
    return P("streamingllm", {{"budget", budget}, {"sinks", sinks}});
  };
  b.Case("streamingllm/basic/sinks-and-rolling-window",
         {"sinks.protected", "cache-relative", "null-attention.still-evicts"},
         "streamingllm.md worked example: budget 5, sinks 2: 2 and 3 go; the query of step 6 sits at S + W = 5",
         streaming(5, 2), "singles-7");
  b.Case("streamingllm/chunk/first-exceeds-cache",
         {"chunk.first-exceeds-cache", "chunk.evicts-own", "sinks.protected"},
         "a first chunk of 10 keeps sinks 0, 1 and 7..9 (the seed's PyTorch "
         "cache loses the sinks)",
         streaming(5, 2), "chunk-10");
  b.Case("streamingllm/chunk/crosses-capacity", {"chunk.crosses-capacity"},
         "chunks of 4 then 2: 2 goes, 3 stays (the seed's cache loses 3)",
         streaming(5, 2), "chunk-4-then-2");
  b.Case("streamingllm/chunk/longer-than-window",
         {"chunk.longer-than-window", "chunk.evicts-own", "chunk.one-ranking"},
         "a chunk of 4 into a full cache with W = 3: 2..5 go, 5 its own",
         streaming(5, 2), "chunk-5-then-4");
  b.Case("streamingllm/chunk/holds-sinks", {"chunk.holds-sinks", "sinks.protected"},
         "budget 6, sinks 4: a chunk brings sinks 2, 3 and 4..6; 4 goes",
         streaming(6, 4), "chunk-2-then-5");
  for (int64_t budget : {1, 3, 5, 8}) {
    b.Case("streamingllm/neighbour/zero-sinks-is-window-" + std::to_string(budget),
           {"neighbour.streamingllm-window", "chunk.one-ranking"},
           "sinks 0 evicts exactly what window evicts at this budget",
           streaming(budget, 0), "mixed-chunks");
  }
  b.Case("streamingllm/refusal/sinks-equal-budget", {"refusal.invalid-parameter"},
         "sinks must be below budget", streaming(4, 4), "one-step");
  b.Case("streamingllm/refusal/sinks-negative", {"refusal.invalid-parameter"},
         "sinks -1", streaming(4, -1), "one-step");
  b.Case("streamingllm/defaults/budget-512-sinks-4",
         {"defaults", "defaults.decides", "sinks.protected", "chunk.evicts-own"},
         "600 positions at the defaults: 0..3 and 92..599 stay",
         P("streamingllm", {}), "chunk-600");

  for (uint32_t budget : {256u, 512u, 1024u}) {
    const std::string scenario = "canonical-" + std::to_string(4 * budget);
    const std::string b_text = std::to_string(budget);
    b.Case("window/canonical/budget-" + b_text, {"canonical-trace"},
           "canonical trace, 4 x budget steps",
           P("window", {{"budget", budget}}), scenario);
    b.Case("streamingllm/canonical/budget-" + b_text,
           {"canonical-trace", "sinks.protected"},
           "canonical trace, 4 x budget steps, 4 sinks",
           P("streamingllm", {{"budget", budget}}), scenario);
  }
}

void AddScoreCases(SuiteBuilder& b) {
  auto h2o = [](int64_t budget, int64_t recent) {
    return P("h2o", {{"budget", budget}, {"recent_window", recent}});
  };
  auto tova = [](int64_t budget, int64_t recent) {
    return P("tova", {{"budget", budget}, {"recent_window", recent}});
  };
  auto snapkv = [](int64_t budget, int64_t recent, int64_t obs, int64_t pool) {
    return P("snapkv", {{"budget", budget}, {"recent_window", recent},
                        {"obs_window", obs}, {"pool_kernel", pool}});
  };
  auto random = [](int64_t budget, int64_t recent, uint64_t seed) {
    return P("random", {{"budget", budget}, {"recent_window", recent}}, seed);
  };

  // h2o.
  b.Case("h2o/basic/lowest-sum", {"recent-window.protected"},
         "h2o.md worked example: sums 1.5, 0.625, 0.5: position 2 goes (tova would evict 1)",
         h2o(3, 1), "four-distinct");
  b.Case("h2o/ties/equal-sums-evict-lower", {"tie.lower-position"},
         "h2o.md#tie-breaking example: positions 1 and 2 both sum to 0.75: 1 goes", h2o(3, 1),
         "four-tie-1-2");
  b.Case("h2o/unobserved/new-position-scores-zero",
         {"unobserved.zero"},
         "no recent window: the new position 2 (+0.0) goes", h2o(2, 0),
         "unobserved-new");
  b.Case("h2o/null/still-evicts", {"null-attention.still-evicts"},
         "a null step adds nothing and still evicts", h2o(2, 1),
         "null-then-row");
  b.Case("h2o/chunk/one-ranking",
         {"chunk.one-ranking", "unobserved.zero"},
         "a chunk of 3 makes five kept: 2 and 3 (+0.0) go together", h2o(3, 1),
         "chunk-ranking");
  b.Case("h2o/recent-window/zero-attention-kept", {},
         "recent window 2 keeps zero-attention positions", h2o(3, 2),
         "recent-zero-attention");
  b.Case("h2o/recent-window/protected", {"recent-window.protected"},
         "recent window 2 protects position 2 (+0.0); 1 (0.5) goes instead",
         h2o(3, 2), "recent-protects");
  b.Case("h2o/victims/reported-ascending",
         {"victims.ascending", "chunk.one-ranking", "unobserved.zero"},
         "victims ranked 4, 3, 2 are reported 2, 3, 4", h2o(3, 1),
         "descending-chunk");
  b.Case("h2o/arithmetic/binary64-sums", {"h2o.binary64-sum"},
         "2^24 + 1 + 1 in binary64 ranks above 2^24 + 1; binary32 would tie",
         h2o(4, 2), "binary64-sums");
  // binary32-subnormals, budget 3, recent window 1: one victim a step among
  // the three oldest kept positions. Step 1: 0 (2^-149) ranks above 1
  // (0.0), so 1 goes (flushed to zero, 0 and 1 tie and 0 goes).
  b.Case("h2o/arithmetic/subnormal-weights", {},
         "step 1: 1 (0.0) goes, not 0 (2^-149); step 2: sums 0 = 2^-149 + "
         "(2^-126 - 2^-149) = 2^-126 exactly, 3 = 2^-149: 3 goes; step 3: 0 = "
         "2^-125, 2 = 1.0, 4 = 2^-126: 4 goes. Subnormals flushed to zero "
         "evict 0 at steps 1 and 2",
         h2o(3, 1), "binary32-subnormals");
  b.Case("tova/arithmetic/subnormal-weights", {},
         "step 1: 1 (0.0) goes, not 0 (2^-149); step 2: latest 0 = 2^-126 - "
         "2^-149, 3 = 2^-149: 3 goes (flushed: a tie, 0 goes); step 3: 0 and "
         "4 tie at 2^-126, 2 holds the next float up: 0 goes",
         P("tova", {{"budget", 3}, {"recent_window", 1}}), "binary32-subnormals");
  b.Case("snapkv/arithmetic/subnormal-weights", {},
         "obs_window 2, no pooling: step 1: 1 goes, not 0 (2^-149); step 2: "
         "window sums 0 = 2^-126, 3 = 2^-149: 3 goes; step 3: 0 = 2^-126 + "
         "(2^-126 - 2^-149), 4 = 2^-126: 4 goes. Flushed to zero, 0 goes at "
         "every step",
         P("snapkv", {{"budget", 3}, {"recent_window", 1}, {"obs_window", 2},
                      {"pool_kernel", 1}}),
         "binary32-subnormals");
  b.Case("h2o/refusal/recent-window-equal-budget", {"refusal.invalid-parameter"},
         "recent_window must be below budget", h2o(4, 4), "one-step");
  b.Case("h2o/refusal/recent-window-negative", {"refusal.invalid-parameter"},
         "recent_window -1", h2o(4, -1), "one-step");
  b.Case("h2o/refusal/default-recent-window-above-budget",
         {"refusal.invalid-parameter"},
         "budget 16 with the default recent_window 16 is refused",
         P("h2o", {{"budget", 16}}), "one-step");
  b.Case("h2o/defaults/budget-512",
         {"defaults", "defaults.decides", "unobserved.zero", "tie.lower-position"},
         "600 unobserved positions at the defaults: 0..87 go", P("h2o", {}),
         "chunk-600");

  // tova.
  b.Case("tova/basic/lowest-latest", {"recent-window.protected"},
         "tova.md and h2o.md worked examples: latest weights 0.25, 0.125, 0.5: 1 goes", tova(3, 1), "four-distinct");
  b.Case("tova/ties/equal-latest-evict-lower", {"tie.lower-position"},
         "tova.md#tie-breaking: latest 0.5, 0.25, 0.25: 1 goes", tova(3, 1), "four-tie-latest");
  b.Case("tova/ties/example-4-9-12", {"tie.lower-position"},
         "harness.md#victims and tova.md#tie-breaking example: 4, 9, 12 and 13 "
         "kept after 13 is admitted; latest 0.5, 0.25, 0.25: 9 and 12 tie and 9 goes",
         tova(3, 1), "tova-example-4-9-12");
  b.Case("tova/basic/only-latest-counts", {},
         "tova.md worked example: position 0's earlier 1.0 is forgotten: its latest 0.0 goes",
         tova(3, 1), "four-latest-only");
  b.Case("tova/null/keeps-latest",
         {"null-attention.inert", "unobserved.zero", "null-attention.still-evicts"},
         "a null last step keeps step 2's weights; the unobserved 2 goes",
         tova(3, 1), "null-last");
  b.Case("tova/unobserved/no-recent-window",
         {"unobserved.zero", "tie.lower-position"},
         "no recent window: new positions score +0.0 and tie with 0.0",
         tova(2, 0), "tova-no-recent");
  b.Case("tova/victims/reported-ascending",
         {"victims.ascending", "chunk.one-ranking", "unobserved.zero"},
         "victims ranked 4, 3, 2 are reported 2, 3, 4", tova(3, 1),
         "descending-chunk");
  b.Case("tova/chunk/one-ranking", {"chunk.one-ranking"},
         "a chunk of 3 makes five kept; two go from one ranking", tova(3, 1),
         "chunk-ranking");
  b.Case("tova/refusal/recent-window-equal-budget", {"refusal.invalid-parameter"},
         "recent_window must be below budget", tova(2, 2), "one-step");
  b.Case("tova/defaults/budget-512",
         {"defaults", "defaults.decides", "unobserved.zero"},
         "600 unobserved positions at the defaults", P("tova", {}), "chunk-600");

  // snapkv.
  b.Case("snapkv/ring/wrap-forgets-oldest",
         {"snapkv.ring-wrap", "recent-window.protected"},
         "snapkv.md worked example: obs_window 2: position 0's first weight is overwritten; 0 goes",
         snapkv(3, 1, 2, 1), "ring-wrap");
  b.Case("snapkv/ties/equal-pooled-evict-lower",
         {"tie.lower-position"},
         "snapkv.md#tie-breaking example: pool_kernel 3 pools three candidates to 1.0: 0 goes",
         snapkv(3, 1, 2, 3), "ring-wrap");
  b.Case("snapkv/null/does-not-advance-ring", {"null-attention.inert"},
         "the null step leaves the cursor: step 3 writes index 1 and 1 goes",
         snapkv(4, 2, 2, 1), "null-ring");
  b.Case("snapkv/ring/index-order-sum", {"snapkv.ring-index-order"},
         "ring (t, t, 1.0) sums to 1 + 2^-52 from index 0: position 1 goes",
         snapkv(5, 4, 3, 1), "ring-order-null-first");
  b.Case("snapkv/ring/empty-first-row-advances",
         {"empty-row.recorded", "tie.lower-position"},
         "the empty first row moves the cursor; the sums tie and 0 goes",
         snapkv(5, 4, 3, 1), "ring-order-empty-first");
  b.Case("snapkv/pool/clamp-high-end", {"snapkv.pool-clamp", "unobserved.zero"},
         "snapkv.md worked example: clamped pooling evicts the new position; wrapping would evict 2",
         snapkv(3, 0, 4, 3), "pool-high-end");
  b.Case("snapkv/pool/clamp-low-end", {},
         "slot 0 pools over slots 0 and 1 only; 0 goes", snapkv(4, 1, 4, 3),
         "pool-low-end");
  b.Case("snapkv/pool/defends-neighbour", {"snapkv.pool-defends"},
         "snapkv.md worked example: position 2 defends 1; 0 goes instead", snapkv(4, 1, 4, 3),
         "pool-defends");
  b.Case("snapkv/pool/no-pooling-control", {},
         "snapkv.md worked example: pool_kernel 1 on the same rows: 1 goes", snapkv(4, 1, 4, 1),
         "pool-defends");
  b.Case("snapkv/pool/protected-neighbour", {"snapkv.pool-defends"},
         "protected position 2 defends candidate 1; 0 goes",
         snapkv(3, 2, 4, 3), "pool-protected");
  b.Case("snapkv/pool/protected-neighbour-decides",
         {"snapkv.pool-protected-neighbour", "snapkv.pool-defends",
          "tie.lower-position"},
         "protected 3 lifts candidate 2 to 1.0; 0 and 1 tie at 0.5 and 0 "
         "goes (pooling among candidates only would evict 2)",
         snapkv(4, 2, 4, 3), "pool-protected-decides");
  b.Case("snapkv/chunk/one-ranking",
         {"chunk.one-ranking", "victims.ascending", "unobserved.zero"},
         "a chunk of 3 makes five kept; two go from one ranking",
         snapkv(3, 1, 4, 3), "chunk-ranking");
  for (int64_t obs : {1, 4, 16}) {
    b.Case("snapkv/neighbour/tova-stationary-obs-" + std::to_string(obs),
           {"neighbour.snapkv-tova", "tie.lower-position"},
           "stationary rows: pool_kernel 1 evicts what tova evicts",
           snapkv(24, 16, obs, 1), "stationary-200");
  }
  b.Case("snapkv/neighbour/tova-obs-1-canonical",
         {"neighbour.snapkv-tova", "canonical-trace"},
         "a one-step window without pooling is tova on any scenario",
         snapkv(512, 16, 1, 1), "canonical-2048");
  b.Case("snapkv/neighbour/h2o-long-window",
         {"neighbour.snapkv-h2o", "null-attention.still-evicts",
          "chunk.one-ranking"},
         "obs_window past the scenario, pool_kernel 1: what h2o evicts",
         snapkv(8, 3, 400, 1), "wandering-150");
  b.Case("snapkv/neighbour/h2o-canonical",
         {"neighbour.snapkv-h2o", "canonical-trace"},
         "canonical trace, obs_window past the run, pool_kernel 1: h2o's victims",
         snapkv(512, 16, 2049, 1), "canonical-2048");
  b.Case("snapkv/refusal/obs-window-zero", {"refusal.invalid-parameter"},
         "obs_window 0", snapkv(4, 1, 0, 1), "one-step");
  b.Case("snapkv/refusal/obs-window-too-large", {"refusal.invalid-parameter"},
         "obs_window 65537", snapkv(4, 1, 65537, 1), "one-step");
  b.Case("snapkv/refusal/pool-kernel-even", {"refusal.invalid-parameter"},
         "pool_kernel 4 has no centre", snapkv(4, 1, 4, 4), "one-step");
  b.Case("snapkv/refusal/pool-kernel-zero", {"refusal.invalid-parameter"},
         "pool_kernel 0", snapkv(4, 1, 4, 0), "one-step");
  b.Case("snapkv/refusal/recent-window-equal-budget", {"refusal.invalid-parameter"},
         "recent_window must be below budget", snapkv(4, 4, 4, 1), "one-step");
  b.Case("snapkv/defaults/budget-512",
         {"defaults", "defaults.decides", "unobserved.zero"},
         "600 unobserved positions at the defaults", P("snapkv", {}),
         "chunk-600");

  // random.
  b.Case("random/draws/follow-the-rng", {"random.draw-order"},
         "random.md worked example: seed 42, budget 2: Uniform(3) draws 0, 1, 2 evict 0, 2, 4",
         random(2, 0, 42), "singles-5");
  b.Case("random/draws/several-without-replacement",
         {"random.draw-order", "chunk.one-ranking"},
         "random.md worked example: seed 42, a chunk of 4: Uniform(4) then Uniform(3) evict 0 and 2",
         random(2, 0, 42), "chunk-4");
  b.Case("random/draws/continue-across-steps",
         {"random.draw-order", "recent-window.protected", "chunk.one-ranking"},
         "the Rng lives as long as the policy", random(2, 1, 42),
         "chunks-2-1-1-2-1");
  b.Case("random/null/still-evicts", {"null-attention.still-evicts", "random.draw-order"},
         "null steps evict by draws as any other", random(3, 1, 7), "singles-7");
  b.Case("random/refusal/recent-window-equal-budget", {"refusal.invalid-parameter"},
         "recent_window must be below budget", random(3, 3, 0), "one-step");
  b.Case("random/defaults/budget-512",
         {"defaults", "defaults.decides", "random.draw-order"},
         "600 positions at the defaults, seed 0", P("random", {}), "chunk-600");

  for (uint32_t budget : {256u, 512u, 1024u}) {
    const std::string scenario = "canonical-" + std::to_string(4 * budget);
    const std::string b_text = std::to_string(budget);
    b.Case("h2o/canonical/budget-" + b_text, {"canonical-trace"},
           "canonical trace, 4 x budget steps", P("h2o", {{"budget", budget}}),
           scenario);
    b.Case("tova/canonical/budget-" + b_text, {"canonical-trace"},
           "canonical trace, 4 x budget steps", P("tova", {{"budget", budget}}),
           scenario);
    b.Case("snapkv/canonical/budget-" + b_text, {"canonical-trace"},
           "canonical trace, 4 x budget steps",
           P("snapkv", {{"budget", budget}}), scenario);
    b.Case("random/canonical/budget-" + b_text, {"canonical-trace"},
           "canonical trace, 4 x budget steps, seed 1",
           P("random", {{"budget", budget}}, 1), scenario);
  }
}


// Spec 0.4.0: what an outside audit found unexercised.
void AddAuditCases(SuiteBuilder& b) {
  const PolicyConfig window4 = P("window", {{"budget", 4}});
  const PolicyConfig bad_window = P("window", {{"budget", 0}});
  // Names are case-sensitive (spec/harness.md#configuration).
  b.Case("harness/refusal/policy-name-case-sensitive", {"refusal.unknown-policy"},
         "'Window' is not 'window': names are case-sensitive",
         P("Window", {{"budget", 4}}), "one-step");
  // Check orders, each decided by two faults (spec/harness.md#refusals).
  b.Case("harness/order/name-before-parameters",
         {"refusal.unknown-policy", "order.name-before-parameters"},
         "an unknown name with a bad budget: UNKNOWN_POLICY",
         P("lru", {{"budget", 0}}), "one-step");
  b.Case("harness/order/configuration-before-scenario-shape",
         {"refusal.invalid-parameter", "order.configuration-before-scenario"},
         "a bad budget and a scenario with both steps and a trace: "
         "INVALID_PARAMETER at step -1",
         bad_window, "trace-and-steps");
  b.Case("harness/order/configuration-before-trace",
         {"refusal.invalid-parameter", "order.configuration-before-scenario"},
         "a bad budget and a present, empty trace: INVALID_PARAMETER at step -1",
         bad_window, "trace-empty");
  b.Case("harness/order/configuration-before-steps",
         {"refusal.invalid-parameter", "order.configuration-before-scenario"},
         "a bad budget and a step admitting nothing: INVALID_PARAMETER at -1",
         bad_window, "admit-zero");
  b.Case("harness/order/position-before-length",
         {"refusal.position", "order.position-before-length"},
         "step 1 admits nothing and its row is short: POSITION",
         window4, "admit-zero-row-too-short");
  b.Case("harness/order/length-before-value",
         {"refusal.attention-length", "order.length-before-value"},
         "step 1's row is too long and holds a NaN: ATTENTION_LENGTH",
         window4, "row-too-long-with-nan");
  b.Case("harness/order/steps-in-sequence",
         {"refusal.attention-value", "order.steps-in-sequence"},
         "a NaN at step 1 and nothing admitted at step 2: ATTENTION_VALUE at 1",
         window4, "nan-then-admit-zero");
  // What "has steps" and "has a trace" mean on the wire
  // (spec/harness.md#scenarios).
  b.Case("harness/scenario/neither-steps-nor-trace", {},
         "no steps and no trace: an empty log", window4, "scenario-empty");
  b.Case("harness/refusal/trace-empty", {"refusal.invalid-trace"},
         "a present trace with no field set has no steps: INVALID_TRACE",
         window4, "trace-empty");
  b.Case("harness/refusal/trace-empty-and-steps", {"refusal.invalid-trace"},
         "steps and a present, empty trace: both, INVALID_TRACE",
         window4, "trace-empty-and-steps");
  b.Case("harness/refusal/trace-steps-absent", {"refusal.invalid-trace"},
         "every field but steps given: steps is required", window4,
         "trace-steps-absent");
  b.Case("harness/refusal/trace-noise-minus-zero", {"refusal.invalid-trace"},
         "noise -0.0 is refused: its sign bit is set", window4,
         "trace-noise-minus-zero");
  // Absent trace fields take the canonical defaults (spec/trace.md#parameters).
  b.Case("h2o/trace/absent-fields-are-defaults", {"trace.defaults"},
         "only steps on the wire: the canonical trace", P("h2o", {{"budget", 64}}),
         "trace-defaults-700");
  b.Case("tova/trace/absent-fields-are-defaults", {"trace.defaults"},
         "only steps on the wire: the canonical trace",
         P("tova", {{"budget", 64}, {"recent_window", 4}}), "trace-defaults-700");
  b.Case("tova/trace/absent-fields-budget-16", {"trace.defaults"},
         "only steps on the wire; recent and heavy hitters compete",
         P("tova", {{"budget", 16}, {"recent_window", 1}}), "trace-defaults-700");
  b.Case("tova/trace/absent-fields-budget-4", {"trace.defaults"},
         "only steps on the wire; the sinks compete with the recent positions",
         P("tova", {{"budget", 4}, {"recent_window", 1}}), "trace-defaults-700");
  b.Case("tova/trace/absent-fields-budget-512", {"trace.defaults"},
         "only steps on the wire; the epoch's heavy hitters are still kept "
         "when drawn",
         P("tova", {{"budget", 512}}), "trace-defaults-700");
  b.Case("snapkv/trace/absent-fields-are-defaults", {"trace.defaults"},
         "only steps on the wire: the canonical trace",
         P("snapkv", {{"budget", 64}, {"recent_window", 4}}), "trace-defaults-700");
  // Trace bounds (spec/trace.md#parameters).
  for (const TraceBound& bound : TraceBounds()) {
    std::string id = "harness/trace-bounds/" + bound.scenario_id.substr(12);
    b.Case(id, bound.accepted
                   ? std::vector<std::string>{"bounds.trace"}
                   : std::vector<std::string>{"refusal.invalid-trace", "bounds.trace"},
           bound.field + " at " + bound.which +
               (bound.accepted ? ": accepted" : ": refused"),
           P("h2o", {{"budget", 4}, {"recent_window", 1}}), bound.scenario_id);
  }
  // Policy parameter bounds (spec/vectors.md#bounds), from the registry.
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& parameter : info.parameters) {
      const struct {
        const char* which;
        int64_t value;
        bool accepted;
      } bounds[] = {{"min", parameter.min, true},
                    {"max", parameter.max, true},
                    {"below-min", parameter.min - 1, false},
                    {"above-max", parameter.max + 1, false}};
      for (const auto& bound : bounds) {
        // A small valid configuration, then the bound; a window or sinks at
        // its top needs the top budget, and budget 1 leaves no room for them.
        std::vector<Parameter> parameters;
        for (const ParameterInfo& p : info.parameters) {
          // The head parameters (spec 0.5.0) appear only in their own
          // bounds cases, so the cases of spec 0.4.0 keep their bytes.
          // Likewise the prefill parameters (spec 0.6.0) and the span
          // parameters (spec 0.8.0).
          const bool head_parameter =
              p.name == "granularity" || p.name == "aggregation" ||
              p.name == "adaptive" || p.name == "safeguard_permille" ||
              p.name == "prefill_only" || p.name == "ratio_ppm" ||
              p.name == "normalize" || p.name == "protect_newest" ||
              p.name == "window_reduce" || p.name == "pooling" ||
              p.name == "window_budget" ||
              // and the span parameters (spec 0.8.0).
              p.name == "spans" || p.name == "span_window" ||
              p.name == "span_chunk" || p.name == "evict_at" ||
              p.name == "position_ids" ||
              // and the context shift's (spec 0.9.0).
              p.name == "context_shift" || p.name == "discard";
          // discard above 0 needs context_shift 1 (spec/spans.md).
          const bool companion =
              parameter.name == "discard" && p.name == "context_shift";
          if (head_parameter && p.name != parameter.name && !companion) {
            continue;
          }
          int64_t value = p.name == "budget"        ? 4
                          : p.name == "obs_window"  ? 2
                          : p.name == "pool_kernel" ? 3
                                                    : 1;
          if (p.name == parameter.name) value = bound.value;
          if (p.name == "budget" && parameter.max == kTopBudget - 1 &&
              bound.value >= parameter.max) {
            value = kTopBudget;
          }
          if (parameter.name == "budget" && bound.value <= 1 &&
              (p.name == "recent_window" || p.name == "sinks")) {
            value = 0;  // recent_window / sinks below budget 1
          }
          // spec/prefill.md: a ratio requires recent_window 0.
          if (parameter.name == "ratio_ppm" && p.name == "recent_window") {
            value = 0;
          }
          parameters.push_back({p.name, value});
        }
        std::string name = parameter.name;
        for (char& c : name) {
          if (c == '_') c = '-';
        }
        b.Case(info.name + "/bounds/" + name + "-" + bound.which,
               bound.accepted ? std::vector<std::string>{"bounds.accepted"}
                              : std::vector<std::string>{"refusal.invalid-parameter"},
               parameter.name + " at " + bound.which + " (" +
                   std::to_string(bound.value) + "): " +
                   (bound.accepted ? "accepted" : "refused"),
               P(info.name.c_str(), parameters), "rows-6");
      }
    }
  }
  // Gaps mutation testing of the Rust port found.
  b.Case("full/chunk/positions-add-up", {},
         "chunks of 65536 and 65537: positions run to 131072, far below 2^32 - 1, "
         "and every one is kept",
         P("full", {}), "chunks-65536-65537");
  b.Case("h2o/trace/salience-low-bits", {},
         "a seed whose salience(1) is (1000 + 1) * 2^-53: the +1 of "
         "spec/trace.md#hashes shows in the cut's scores",
         P("h2o", {{"budget", 4}, {"recent_window", 1}}), "trace-salience-low-bits");
  b.Case("h2o/trace/no-heavy-hitters", {},
         "heavy_count 0 past the first epoch: the heavy part is absent and adds "
         "no mass to M_t",
         P("h2o", {{"budget", 4}, {"recent_window", 1}}), "trace-no-heavy-hitters");
  // Trace rules mutation testing caught only through the cut's scores; these
  // make them change the victims too.
  b.Case("tova/trace/sink-share-decides", {},
         "sink_mass 0.0625 over 4 sinks: each sink's 1/64 competes with the "
         "recent positions' weights",
         P("tova", {{"budget", 4}, {"recent_window", 1}}), "trace-light-sinks");
  b.Case("tova/trace/heavy-multiplicity-decides", {},
         "8 draws among 4 candidates: a heavy hitter drawn m times gets m "
         "shares, and that decides which are kept",
         P("tova", {{"budget", 3}, {"recent_window", 1}}), "trace-heavy-multiplicity");
  // A chunk exactly as long as the budget (spec/harness.md#chunked-admission).
  const std::vector<std::pair<std::string, PolicyConfig>> chunked = {
      {"window", P("window", {{"budget", 4}})},
      {"streamingllm", P("streamingllm", {{"budget", 4}, {"sinks", 1}})},
      {"h2o", P("h2o", {{"budget", 4}, {"recent_window", 1}})},
      {"tova", P("tova", {{"budget", 4}, {"recent_window", 1}})},
      {"snapkv", P("snapkv", {{"budget", 4}, {"recent_window", 1},
                              {"obs_window", 2}, {"pool_kernel", 3}})},
      {"random", P("random", {{"budget", 4}, {"recent_window", 1}}, 5)},
  };
  for (const auto& [policy, config] : chunked) {
    b.Case(policy + "/budget/chunk-as-long-as-budget",
           {"chunk.exactly-budget", "chunk.one-ranking"},
           "budget 4: a chunk of 4 fills the cache and evicts nothing; the next "
           "chunk of 4 evicts four from one ranking",
           config, "chunks-4-4-1");
  }
  // Each parameter's default decides a case (spec/vectors.md#defaults).
  for (const char* policy : {"h2o", "tova", "snapkv", "random"}) {
    b.Case(std::string(policy) + "/defaults/budget-24",
           {"defaults.decides"},
           "budget 24, every other parameter at its default",
           P(policy, {{"budget", 24}}, 3), "wandering-150");
  }
}



// Spec 0.5.0: several attention heads (spec/heads.md).
Scenario WithHeads(Scenario scenario, std::optional<uint32_t> query_heads,
                   std::optional<uint32_t> kv_heads) {
  scenario.query_heads = query_heads;
  scenario.kv_heads = kv_heads;
  return scenario;
}

ScenarioStep HeadRows(std::vector<Row> rows, uint32_t admit = 1) {
  ScenarioStep step;
  step.admit = admit;
  step.heads = std::move(rows);
  return step;
}

// Four query heads in two groups, each head with a role (spec/heads.md):
// head 0 dumps mass on the first two positions, head 1 looks at the latest
// three, head 2 follows three heavy hitters, head 3 is noise; head h's
// background noise is uniform in [0, 8 * 2^h) / 64, so the heads of a group
// differ in scale. Chunks and null steps as in Wandering. Weights are
// multiples of 1/64, so ties occur.
Scenario Roles(std::string id, uint32_t steps, uint64_t seed) {
  Rng rng(seed);
  std::vector<ScenarioStep> out;
  uint32_t admitted = 0;
  for (uint32_t step = 0; step < steps; ++step) {
    ScenarioStep s;
    s.admit = rng.Uniform(6) == 0 ? 1 + static_cast<uint32_t>(rng.Uniform(4)) : 1;
    if (rng.Uniform(8) != 0) {
      for (uint32_t head = 0; head < 4; ++head) {
        Row row(admitted);
        for (uint32_t p = 0; p < admitted; ++p) {
          uint64_t weight = rng.Uniform(uint64_t{8} << head);
          if (head == 0 && p < 2) weight += 48;
          if (head == 1 && p + 3 >= admitted) weight += 40;
          if (head == 2 && (p == 3 || p == 7 || p == 11)) weight += 44;
          row[p] = static_cast<float>(weight) / 64.0f;
        }
        s.heads.push_back(std::move(row));
      }
    }
    admitted += s.admit;
    out.push_back(std::move(s));
  }
  return WithHeads(Explicit(std::move(id), std::move(out)), 4, 2);
}

void AddHeadScenarios(SuiteBuilder& b) {
  b.Add(Roles("heads-roles", 48, 2026113001));
  // Mean and sum rank differently only through rounding: positions 0 and 1
  // sum to 1.5 + 2^-51 and 1.5 + 2^-52 over three heads, and both means
  // round to the same binary64 value (spec/heads.md).
  const float u = std::ldexp(1.0f, -52);
  b.Add(WithHeads(Explicit("heads-mean-rounding",
                           {Null(2), HeadRows({{1.5f, 1.5f}, {2 * u, u}, {0, 0}})}),
                  3, 1));
  // Max-pooling then averaging the heads is not max-pooling the mean row.
  b.Add(WithHeads(
      Explicit("heads-pool-then-combine",
               {Null(4), HeadRows({{0, 0, 0, 0.5f}, {0, 1, 0.5f, 0}})}),
      2, 1));
  // spec/heads.md#head-adaptive-budgets, worked by hand: two heads, one
  // set each; head 1 pays little to positions 0 and 1, head 0 much.
  b.Add(WithHeads(Explicit("adakv-two-heads",
                           {Null(2), HeadRows({{0.5f, 0.25f}, {0.0625f, 0.125f}}),
                            HeadRows({{0.5f, 0.25f, 0.25f}, {0.0f, 0.0f, 0.5f}})}),
                  2, 2));
  // Head 1 pays nothing to any position, head 0 pays 1 to every one: with a
  // shared budget head 1's set loses two positions a step until its floor.
  {
    std::vector<ScenarioStep> steps = {Null(10)};
    for (uint32_t t = 1; t < 12; ++t) {
      const uint32_t admitted = 9 + t;
      steps.push_back(HeadRows({Row(admitted, 1.0f), Row(admitted, 0.0f)}));
    }
    b.Add(WithHeads(Explicit("adakv-floor", std::move(steps)), 2, 2));
  }
  // The same with the heads' roles swapped: head 0 pays nothing, head 1
  // pays 1. At equal score and position the joint ranking evicts the lower
  // set first, so with no recent window head 0's set can be emptied: at
  // step 10 it holds {18, 19}, and the score-0 pairs rank (18, set 0),
  // (19, set 0), (19, set 1). (On "adakv-floor" the silent set is set 1,
  // and (19, set 0) ranks before (19, set 1): set 1 never falls below 1
  // whatever the floor, 0 or 1.)
  {
    std::vector<ScenarioStep> steps = {Null(10)};
    for (uint32_t t = 1; t < 12; ++t) {
      const uint32_t admitted = 9 + t;
      steps.push_back(HeadRows({Row(admitted, 0.0f), Row(admitted, 1.0f)}));
    }
    b.Add(WithHeads(Explicit("adakv-floor-silent-head-0", std::move(steps)), 2, 2));
  }
  // Sets of 3, 5, 6 and 7 heads (issue 19): dividing by the head count is
  // inexact and the order of the heads' sum shows. One row step after 5
  // positions; in each set of m heads, head h's weights on positions 0..4:
  //   0: head 0 1.0, heads 1 and 2 2^-53 (ascending: 1 + 2^-53 rounds to
  //      1.0 twice; any other order adds 2^-52 first and gets 1 + 2^-52),
  //   1: head 0 1.0,
  //   2: head 0 1.0, heads 1 and 2 2^-24 (binary64: 1 + 2^-23; binary32
  //      accumulation: 1.0),
  //   3: head 0 1 + 2^-23,
  //   4: head 0 1.5009765625 (its mean s / m differs from s * (1 / m) for
  //      m = 3, 5, 6, 7),
  // every other weight 0.0.
  {
    const float u = std::ldexp(1.0f, -53);
    const float v = std::ldexp(1.0f, -24);
    auto odd = [&](std::string id, uint32_t query_heads, uint32_t kv_heads,
                   uint32_t per_set) {
      std::vector<Row> rows;
      for (uint32_t h = 0; h < query_heads; ++h) {
        const uint32_t k = h % per_set;
        rows.push_back({k == 0 ? 1.0f : k <= 2 ? u : 0.0f,
                        k == 0 ? 1.0f : 0.0f,
                        k == 0 ? 1.0f : k <= 2 ? v : 0.0f,
                        k == 0 ? 1.0f + 2 * std::ldexp(1.0f, -24) : 0.0f,
                        k == 0 ? 1.5009765625f : 0.0f});
      }
      b.Add(WithHeads(Explicit(std::move(id), {Null(5), HeadRows(std::move(rows))}),
                      query_heads, kv_heads));
    };
    odd("heads-odd-3-per-group", 6, 2, 3);  // kv_head sets of 3
    odd("heads-odd-5", 5, 1, 5);
    odd("heads-odd-6", 6, 1, 6);
    odd("heads-odd-7-layer", 7, 7, 7);  // with granularity 0: one set of 7
  }
  // Refusals (spec/heads.md#head-counts, #rows-per-head).
  b.Add(WithHeads(Chunks("heads-query-zero", {1}), 0, 1));
  b.Add(WithHeads(Chunks("heads-query-above", {1}), 1025, 1));
  b.Add(WithHeads(Chunks("heads-query-top", {1, 1}), 1024, 1024));
  b.Add(WithHeads(Chunks("heads-kv-zero", {1}), 4, 0));
  b.Add(WithHeads(Chunks("heads-kv-above", {1}), 4, 1025));
  b.Add(WithHeads(Chunks("heads-kv-not-dividing", {1}), 4, 3));
  b.Add(WithHeads(Chunks("heads-kv-above-query", {1}), 2, 4));
  b.Add(WithHeads(Chunks("heads-both-zero", {1}), 0, 0));
  b.Add(WithHeads(Chunks("heads-declared-one", {1, 1, 1}), 1, 1));
  {
    // spec/trace.md#several-heads: the canonical trace with four query
    // heads in two groups (head 0, a sink head | a local head, a heavy-
    // hitter head); epoch 1 (from step 512) has heavy hitters.
    b.Add(WithHeads(Traced("heads-canonical-768", CanonicalTrace(768)), 4, 2));
    // Five heads: head 4 takes role 0 again (a sink head).
    b.Add(WithHeads(Traced("heads-canonical-five-300", CanonicalTrace(300)), 5, 1));
    Scenario both = Chunks("heads-trace-and-steps", {1});
    both.trace = CanonicalTrace(8);
    b.Add(WithHeads(both, 0, 1));
    TraceConfig bad = CanonicalTrace(8);
    bad.sink_mass = 2.0;  // masses lie in [0, 1]
    b.Add(WithHeads(Traced("heads-bad-trace", bad), 0, 1));
  }
  b.Add(WithHeads(Explicit("heads-attention-field", {Null(1), WithRow({0.5f})}),
                  2, 1));
  b.Add(Explicit("heads-rows-with-one-head", {Null(1), HeadRows({{0.5f}})}));
  b.Add(WithHeads(Explicit("heads-row-count", {Null(1), HeadRows({{0.5f}})}), 2,
                  1));
  b.Add(WithHeads(Explicit("heads-row-short",
                           {Null(2), HeadRows({{0.5f, 0.5f}, {0.5f, 0.5f},
                                               {0.5f}, {0.5f, 0.5f}})}),
                  4, 2));
  b.Add(WithHeads(Explicit("heads-weight-nan",
                           {Null(2), HeadRows({{0.5f, 0.5f}, {0.5f, 0.5f},
                                               {0.5f, 0.5f}, {0.5f, kNan}})}),
                  4, 2));
  b.Add(WithHeads(Explicit("heads-nan-and-short",
                           {Null(2), HeadRows({{kNan, 0.5f}, {0.5f}})}),
                  2, 2));
  b.Add(WithHeads(Explicit("heads-bad-weight-then-short",
                           {Null(2), HeadRows({{-1.0f, 0.5f}, {0.5f, 0.5f}}),
                            HeadRows({{0.5f}, {0.5f, 0.5f, 0.5f}})}),
                  2, 1));
}

void AddHeadCases(SuiteBuilder& b) {
  const char* const granularities[] = {"layer", "kv-head", "query-head"};
  const char* const aggregations[] = {"mean", "max", "sum"};
  struct Scored {
    const char* name;
    std::vector<Parameter> own;
  };
  const Scored scored[] = {
      {"h2o", {{"budget", 8}, {"recent_window", 2}}},
      {"tova", {{"budget", 8}, {"recent_window", 2}}},
      {"snapkv", {{"budget", 8}, {"recent_window", 2}, {"obs_window", 4},
                  {"pool_kernel", 3}}},
  };
  for (const Scored& policy : scored) {
    const std::string group = std::string(policy.name) + "/heads/";
    b.Case(group + "defaults", {"defaults.decides"},
           "granularity and aggregation at their defaults (kv_head, mean) on "
           "four heads in two groups",
           P(policy.name, policy.own), "heads-roles");
    for (int g = 0; g < 3; ++g) {
      for (int a = 0; a < 3; ++a) {
        if (g == 2 && a != 0) continue;  // one head per set: nothing to combine
        std::vector<Parameter> parameters = policy.own;
        parameters.push_back({"granularity", g});
        parameters.push_back({"aggregation", a});
        std::vector<std::string> flags = {"heads.granularity"};
        // One head per set combines nothing. For h2o with every head in one
        // set, head 3's noise (the largest scale) decides every combination
        // alike on this scenario: the census found that aggregation changes
        // no victim there, so those cases do not claim it.
        const bool h2o_layer = std::string(policy.name) == "h2o" && g == 0;
        if (g != 2 && !h2o_layer) flags.push_back("heads.aggregation");
        b.Case(group + "roles-" + granularities[g] + "-" + aggregations[a],
               flags,
               std::string("four heads with different roles, granularity ") +
                   granularities[g] + ", aggregation " + aggregations[a],
               P(policy.name, parameters), "heads-roles");
      }
    }
  }
  // The multi-head canonical trace at a realistic budget: every
  // granularity and aggregation decides (spec/trace.md#several-heads).
  for (const Scored& policy : scored) {
    const std::string group = std::string(policy.name) + "/heads/canonical-";
    struct Choice {
      const char* name;
      int64_t granularity, aggregation;
      std::vector<std::string> flags;
    };
    const Choice choices[] = {
        {"layer-mean", 0, 0, {"heads.granularity", "heads.aggregation", "canonical-trace"}},
        {"kv-head-mean", 1, 0, {"heads.granularity", "heads.aggregation", "canonical-trace"}},
        {"kv-head-max", 1, 1, {"heads.granularity", "heads.aggregation", "canonical-trace"}},
        {"query-head", 2, 0, {"heads.granularity", "canonical-trace"}},
    };
    for (const Choice& choice : choices) {
      std::vector<Parameter> parameters = {{"budget", 128}};
      if (std::string(policy.name) == "snapkv") {
        parameters.push_back({"pool_kernel", 5});
      }
      parameters.push_back({"granularity", choice.granularity});
      parameters.push_back({"aggregation", choice.aggregation});
      b.Case(group + choice.name, choice.flags,
             std::string("the canonical trace, 768 steps, four query heads "
                         "in two groups, budget 128, ") + choice.name,
             P(policy.name, parameters), "heads-canonical-768");
    }
  }
  // Head-adaptive budgets (spec/heads.md#head-adaptive-budgets).
  const std::vector<Parameter> two_sets = {
      {"budget", 2}, {"recent_window", 1}, {"granularity", 2}};
  auto with = [](std::vector<Parameter> parameters, Parameter more) {
    parameters.push_back(more);
    return parameters;
  };
  b.Case("h2o/adakv/joint-ranking", {"heads.adaptive"},
         "adakv.md worked example: layer budget 4 over two sets: both victims of step 1 come from head "
         "1's set (0.0625, 0.125), head 0's set keeps 3",
         P("h2o", with(two_sets, {"adaptive", 1})), "adakv-two-heads");
  b.Case("h2o/adakv/fixed-per-set", {"heads.granularity"},
         "the same without adaptive: each set evicts its own lowest",
         P("h2o", two_sets), "adakv-two-heads");
  b.Case("h2o/adakv/safeguard-1000-is-fixed", {"neighbour.adakv-fixed"},
         "safeguard 1000: the floor is the budget, so each set evicts as "
         "without adaptive",
         P("h2o", with(with(two_sets, {"adaptive", 1}), {"safeguard_permille", 1000})),
         "adakv-two-heads");
  b.Case("h2o/adakv/floor-binds", {"heads.safeguard"},
         "safeguard 500 (floor 1): head 1's set stops at one position",
         P("h2o", with(with(two_sets, {"adaptive", 1}), {"safeguard_permille", 500})),
         "adakv-two-heads");
  for (const char* name : {"h2o", "tova", "snapkv"}) {
    b.Case(std::string(name) + "/adakv/floor-at-default",
           {"defaults.decides", "heads.safeguard", "heads.adaptive"},
           "budget 10 per set shared by two sets: head 1's set (all weights "
           "0) loses two positions a step until it holds the default floor, "
           "10 * 200 / 1000 = 2",
           P(name, {{"budget", 10}, {"recent_window", 1}, {"granularity", 2},
                    {"adaptive", 1}}),
           "adakv-floor");
  }
  // The floor's arithmetic (mutation testing of the Python port found
  // these unpinned): raised to 1, 0 when safeguard is 0, integer division.
  // These two have one log: on "adakv-floor" neither floor, 0 or 1, ever
  // binds (see the scenario), so neither pins the raise to one or the
  // floor 0 of safeguard 0; the census (CheckIdenticalLogs) refuses both
  // claiming heads.safeguard. Their IDs stay, with honest descriptions; the
  // rules are pinned on "adakv-floor-silent-head-0" below.
  b.Case("h2o/adakv/floor-raised-to-one", {"heads.safeguard"},
         "no recent window, safeguard 50: the floor 10 * 50 / 1000 = 0 is "
         "raised to 1 and head 1's set goes down to one position (floor 2 "
         "would stop it at two); floor 0 evicts the same here, since head "
         "0's newest ranks before head 1's last (same score and position, "
         "lower set): the raise is pinned by h2o/adakv/floor-one-binds",
         P("h2o", {{"budget", 10}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}, {"safeguard_permille", 50}}),
         "adakv-floor");
  b.Case("h2o/adakv/safeguard-zero-empties", {},
         "no recent window, safeguard 0 (floor 0): head 1's set goes down to "
         "one position and is never emptied, since head 0's newest ranks "
         "before head 1's last; the same log as floor-raised-to-one. Floor 0 "
         "emptying a set: h2o/adakv/safeguard-zero-empties-head-0",
         P("h2o", {{"budget", 10}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}, {"safeguard_permille", 0}}),
         "adakv-floor");
  // Head 0's set loses its two lowest positions at steps 1..9 and holds
  // {18} after step 9; at step 10 it holds {18, 19} and the ranking starts
  // (18, set 0), (19, set 0), (19, set 1), all at score 0.
  b.Case("h2o/adakv/floor-one-binds",
         {"heads.floor-at-least-one", "heads.safeguard"},
         "no recent window, safeguard 50: floor 10 * 50 / 1000 = 0 raised to "
         "1; at step 10 head 0's set evicts 18 and keeps 19, head 1's set "
         "evicts 19 (floor 0 would evict 18 and 19 from head 0's set); at "
         "step 11, 19 from head 0's set and 20 from head 1's",
         P("h2o", {{"budget", 10}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}, {"safeguard_permille", 50}}),
         "adakv-floor-silent-head-0");
  // mutmut 3.8.1 found `safeguard_permille > 0` becoming `> 1` unpinned:
  // the smallest safeguard above 0 raises its floor too.
  b.Case("h2o/adakv/floor-one-binds-at-safeguard-one",
         {"heads.floor-at-least-one", "heads.safeguard"},
         "safeguard 1, the smallest above 0: floor 10 * 1 / 1000 = 0 is raised "
         "to 1 as well, so the victims are those of floor-one-binds (floor 0 "
         "would evict 18 and 19 from head 0's set at step 10)",
         P("h2o", {{"budget", 10}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}, {"safeguard_permille", 1}}),
         "adakv-floor-silent-head-0");
  b.Case("h2o/adakv/safeguard-zero-empties-head-0",
         {"heads.floor-zero-when-safeguard-zero", "heads.safeguard"},
         "no recent window, safeguard 0 (floor 0): at step 10 head 0's set "
         "evicts 18 and 19 and is emptied (floor 1 would keep 19 and evict "
         "19 from head 1's set); at step 11 both sets evict 20",
         P("h2o", {{"budget", 10}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}, {"safeguard_permille", 0}}),
         "adakv-floor-silent-head-0");
  b.Case("h2o/adakv/floor-rounds-down", {"heads.floor-rounds-down", "heads.safeguard"},
         "budget 7, safeguard 500: the floor is 7 * 500 / 1000 = 3 (not 3.5): "
         "at step 4 head 1's set evicts 9 and 10 and stops at 3 (floor 4 "
         "would evict 9 from it and 12 from head 0's set)",
         P("h2o", {{"budget", 7}, {"recent_window", 1}, {"granularity", 2},
                   {"adaptive", 1}, {"safeguard_permille", 500}}),
         "adakv-floor");
  for (const Scored& policy : scored) {
    std::vector<Parameter> parameters = {{"budget", 128}, {"adaptive", 1}};
    b.Case(std::string(policy.name) + "/adakv/canonical-kv-head",
           {"heads.adaptive", "defaults.decides", "canonical-trace"},
           "the multi-head canonical trace, budget 128 per KV head shared by "
           "the layer (AdaKV), safeguard 200 (floor 25)",
           P(policy.name, parameters), "heads-canonical-768");
  }
  // Sets of 3, 5, 6, 7 heads, aggregation mean (issue 19), worked by hand:
  // budget 5, recent window 1, so one of positions 0..4 goes at step 1.
  // Summed in ascending head order, 0 and 1 both sum to 1.0 and tie at
  // 1.0 / m, so 0 goes (summed in another order, or as x_h / m, 0 ranks
  // above 1 and 1 goes); the cut lists 1.0 / m, then (1 + 2^-23) / m twice
  // (2 and 3; binary32 accumulation gives 2 1.0 / m) and 1.5009765625 / m
  // (s * (1 / m) differs in its last bit).
  {
    struct Odd {
      const char* name;
      const char* scenario;
      int64_t granularity;
      const char* sets;
    };
    const Odd odds[] = {
        {"odd-3-heads-mean", "heads-odd-3-per-group", 1, "two kv_head sets of 3 heads"},
        {"odd-5-heads-mean", "heads-odd-5", 1, "one kv_head set of 5 heads"},
        {"odd-6-heads-mean", "heads-odd-6", 1, "one kv_head set of 6 heads"},
        {"odd-7-heads-mean", "heads-odd-7-layer", 0,
         "one layer set of 7 heads (7 KV heads)"},
    };
    for (const Scored& policy : scored) {
      for (const Odd& odd : odds) {
        std::vector<Parameter> parameters = {{"budget", 5}, {"recent_window", 1}};
        if (std::string(policy.name) == "snapkv") {
          parameters.push_back({"obs_window", 1});
          parameters.push_back({"pool_kernel", 1});
        }
        parameters.push_back({"granularity", odd.granularity});
        b.Case(std::string(policy.name) + "/heads/" + odd.name, {},
               std::string(odd.sets) +
                   ", mean: 0 and 1 sum to 1.0 in ascending head order and tie, "
                   "0 goes (another order or x_h / m: 1 goes); the cut's means "
                   "are s / m of binary64 sums",
               P(policy.name, parameters), odd.scenario);
      }
    }
  }
  b.Case("h2o/heads/mean-rounding-ties", {"heads.mean-rounding", "tie.lower-position"},
         "sums 1.5 + 2^-51 and 1.5 + 2^-52 have one mean: the tie evicts 0 "
         "(sum would evict 1)",
         P("h2o", {{"budget", 2}, {"recent_window", 1}}), "heads-mean-rounding");
  b.Case("h2o/heads/sum-no-tie", {"heads.aggregation"},
         "the same sums ranked as sums: 1 goes",
         P("h2o", {{"budget", 2}, {"recent_window", 1}, {"aggregation", 2}}),
         "heads-mean-rounding");
  b.Case("snapkv/heads/scores-then-combine", {"heads.scores-then-combine"},
         "each head pools its own sums, then the mean: 0 goes (pooling the "
         "mean row would evict 3)",
         P("snapkv", {{"budget", 4}, {"recent_window", 1}, {"obs_window", 1},
                      {"pool_kernel", 3}}),
         "heads-pool-then-combine");
  // Policies that do not read attention keep one set (heads.md).
  b.Case("window/heads/one-set", {"heads.one-set"},
         "four heads, one kept set: the log has no per-set records",
         P("window", {{"budget", 8}}), "heads-roles");
  b.Case("streamingllm/heads/one-set", {"heads.one-set"},
         "four heads, one kept set", P("streamingllm", {{"budget", 8}, {"sinks", 2}}),
         "heads-roles");
  b.Case("random/heads/one-set", {"heads.one-set"},
         "four heads, one kept set and one Rng",
         P("random", {{"budget", 8}, {"recent_window", 2}}, 7), "heads-roles");
  b.Case("full/heads/one-set", {"heads.one-set"}, "four heads, one kept set",
         P("full", {}), "heads-roles");
  b.Case("window/heads/canonical-one-set", {"heads.one-set", "canonical-trace"},
         "the multi-head canonical trace: one kept set, the single-head log",
         P("window", {{"budget", 128}}), "heads-canonical-768");
  b.Case("h2o/heads/canonical-five-heads", {"heads.granularity", "canonical-trace"},
         "the canonical trace with five query heads, one set each: head 4 "
         "is a sink head (role 0) with its own seed",
         P("h2o", {{"budget", 32}, {"granularity", 2}}), "heads-canonical-five-300");
  b.Case("window/heads/granularity-refused", {"refusal.invalid-parameter"},
         "window does not take granularity",
         P("window", {{"budget", 8}, {"granularity", 1}}), "heads-roles");
  b.Case("streamingllm/heads/aggregation-refused", {"refusal.invalid-parameter"},
         "streamingllm does not take aggregation",
         P("streamingllm", {{"budget", 8}, {"aggregation", 0}}), "heads-roles");
  // Head counts and rows (spec/heads.md#head-counts, #rows-per-head).
  const PolicyConfig h2o = P("h2o", {{"budget", 4}, {"recent_window", 1}});
  const struct {
    const char* id;
    std::vector<std::string> flags;
    const char* description;
    const char* scenario;
  } refusals[] = {
      {"harness/heads/query-heads-zero", {"refusal.invalid-heads"},
       "query_heads 0", "heads-query-zero"},
      {"harness/heads/query-heads-above-max", {"refusal.invalid-heads"},
       "query_heads 1025", "heads-query-above"},
      {"harness/heads/query-heads-max", {},
       "query_heads 1024 and kv_heads 1024 are accepted", "heads-query-top"},
      {"harness/heads/kv-heads-zero", {"refusal.invalid-heads"}, "kv_heads 0",
       "heads-kv-zero"},
      {"harness/heads/kv-heads-above-max", {"refusal.invalid-heads"},
       "kv_heads 1025", "heads-kv-above"},
      {"harness/heads/kv-heads-not-dividing", {"refusal.invalid-heads"},
       "kv_heads 3 does not divide query_heads 4", "heads-kv-not-dividing"},
      {"harness/heads/kv-heads-above-query-heads", {"refusal.invalid-heads"},
       "kv_heads 4 does not divide query_heads 2", "heads-kv-above-query"},
      {"harness/heads/order-query-before-kv", {"refusal.invalid-heads"},
       "both counts 0: query_heads is checked first (same category)",
       "heads-both-zero"},
      {"harness/heads/declared-one", {},
       "query_heads 1 and kv_heads 1 declared: as if absent",
       "heads-declared-one"},
      {"harness/heads/order-trace-and-steps-before-heads",
       {"refusal.invalid-trace", "order.shape-before-heads"},
       "steps and a trace, and query_heads 0: INVALID_TRACE",
       "heads-trace-and-steps"},
      {"harness/heads/order-heads-before-trace-parameters",
       {"refusal.invalid-heads", "order.heads-before-trace"},
       "query_heads 0 and a trace with too many sinks: INVALID_HEADS",
       "heads-bad-trace"},
      {"harness/heads/attention-field-with-two-heads",
       {"refusal.attention-length"},
       "two query heads and a row in `attention`", "heads-attention-field"},
      {"harness/heads/heads-field-with-one-head", {"refusal.attention-length"},
       "one query head and a row in `heads`", "heads-rows-with-one-head"},
      {"harness/heads/row-count", {"refusal.attention-length"},
       "one row for two query heads", "heads-row-count"},
      {"harness/heads/row-short-in-head-2", {"refusal.attention-length"},
       "head 2's row is one weight short", "heads-row-short"},
      {"harness/heads/nan-in-head-3", {"refusal.attention-value"},
       "head 3 holds a NaN", "heads-weight-nan"},
      {"harness/heads/order-length-before-weights",
       {"refusal.attention-length", "order.heads-length-before-weights"},
       "head 0 holds a NaN and head 1 is one weight short: ATTENTION_LENGTH",
       "heads-nan-and-short"},
      {"harness/heads/order-steps-in-sequence",
       {"refusal.attention-value", "order.steps-in-sequence"},
       "a negative weight at step 1, short rows at step 2: ATTENTION_VALUE at 1",
       "heads-bad-weight-then-short"},
  };
  for (const auto& r : refusals) {
    b.Case(r.id, r.flags, r.description, h2o, r.scenario);
  }
  b.Case("harness/heads/order-configuration-before-heads",
         {"refusal.invalid-parameter", "order.configuration-before-scenario"},
         "a bad budget and query_heads 0: INVALID_PARAMETER at step -1",
         P("h2o", {{"budget", 0}}), "heads-query-zero");
}

// Spec 0.6.0: prefill (spec/prefill.md).
ScenarioStep QueryRows(uint32_t admit, std::vector<Row> queries) {
  ScenarioStep step;
  step.admit = admit;
  step.queries = std::move(queries);
  return step;
}

// A prompt of `length` positions as one prefill step carrying the causal
// rows of its last `rows` queries for each of `query_heads` heads, then
// `decode` decode steps with one row per head. The rows come from the
// several-heads trace (spec/trace.md#several-heads) with `seed`: the
// query at position q attends as the trace's step q + 1 does (q + 1
// weights), and decode step t's row is the trace's step t.
Scenario TracePrompt(std::string id, uint32_t length, uint32_t rows,
                     uint32_t decode, uint32_t query_heads, uint32_t kv_heads,
                     uint64_t seed) {
  TraceConfig config;
  config.seed = seed;
  config.steps = length + decode + 1;
  std::vector<std::vector<Row>> per_head(query_heads);  // row of step t
  for (uint32_t h = 0; h < query_heads; ++h) {
    TraceGenerator trace = *TraceGenerator::CreateForHead(config, h);
    while (trace.Advance()) per_head[h].push_back(trace.Row());
  }
  std::vector<ScenarioStep> steps;
  std::vector<Row> queries;
  for (uint32_t h = 0; h < query_heads; ++h) {
    for (uint32_t q = length - rows; q < length; ++q) {
      queries.push_back(per_head[h][q + 1]);
    }
  }
  steps.push_back(QueryRows(length, std::move(queries)));
  for (uint32_t t = length; t < length + decode; ++t) {
    ScenarioStep step;
    if (query_heads == 1) {
      step.attention = per_head[0][t];
    } else {
      for (uint32_t h = 0; h < query_heads; ++h) step.heads.push_back(per_head[h][t]);
    }
    steps.push_back(std::move(step));
  }
  Scenario scenario = Explicit(std::move(id), std::move(steps));
  if (query_heads > 1) scenario = WithHeads(std::move(scenario), query_heads, kv_heads);
  return scenario;
}

void AddPrefillScenarios(SuiteBuilder& b) {
  // The kvpress check's inputs: a 96-position prompt, four heads in two
  // groups, its whole causal matrix (H2O needs every row).
  b.Add(TracePrompt("prefill-causal-96", 96, 96, 0, 4, 2, 2026113002));
  // A prompt and decode steps after it, one head and four.
  b.Add(TracePrompt("prefill-64-decode-16", 64, 64, 16, 1, 1, 2026113003));
  b.Add(TracePrompt("prefill-64-decode-16-h4", 64, 64, 16, 4, 2, 2026113004));
  // A window's rows only: 8 rows of a 64-position prompt.
  b.Add(TracePrompt("prefill-64-window-8", 64, 8, 8, 1, 1, 2026113005));
  // The cards' worked examples (h2o.md, tova.md, snapkv.md "At prefill").
  b.Add(Explicit("prefill-h2o-card", {QueryRows(3, {{0.5f}, {0.25f, 0.75f},
                                                    {0.125f, 0.25f, 0.625f}})}));
  b.Add(Explicit("prefill-h2o-card-decode",
                 {QueryRows(3, {{0.5f}, {0.25f, 0.75f}, {0.5f, 0.25f, 0.25f}}),
                  WithRow({0.0f, 0.5f, 0.0f})}));
  b.Add(Explicit("prefill-tova-card", {QueryRows(3, {{0.25f, 0.5f, 0.125f}})}));
  b.Add(Explicit("prefill-snapkv-card",
                 {QueryRows(5, {{0.25f, 0.125f, 0.5f, 0.125f},
                                {0.5f, 0.125f, 0.25f, 0.0625f, 0.0625f}})}));
  // Window sums 1.500244140625 + 2^-52 (position 0) and 1.500244140625
  // (position 1) over a window of 3: the two means round to one binary64
  // value (snapkv.md#at-prefill).
  const float x = 1.500244140625f;
  const float u = std::ldexp(1.0f, -52);
  b.Add(Explicit("prefill-snapkv-mean-rounding",
                 {QueryRows(5, {{x, x, 0.25f},
                                {u, 0.0f, 0.25f, 0.25f},
                                {0.0f, 0.0f, 0.25f, 0.25f, 0.25f}})}));
  // Ratio budgets (prefill.md#budgets-from-a-ratio): 20 and 10 positions.
  b.Add(Explicit("prefill-20", {QueryRows(20, {Row(20, 0.0f)})}));
  b.Add(Explicit("prefill-10", {QueryRows(10, {Row(10, 0.0f)})}));
  // Two heads in one group (prefill_test.cc, HeadsCombineAfterEachHeadSums).
  b.Add(WithHeads(Explicit("prefill-h2o-two-heads",
                           {QueryRows(3, {{0.5f}, {0.25f, 0.75f},
                                          {0.5f, 0.25f, 0.25f}, {1.0f},
                                          {0.0f, 0.25f}, {0.0f, 0.0f, 1.0f}})}),
                  2, 1));
  // A prompt, decode steps, then a second chunk with its query rows: the
  // rows are gathered at kept positions that earlier steps thinned.
  {
    Scenario first = TracePrompt("", 32, 32, 8, 1, 1, 2026113006);
    Scenario second = TracePrompt("", 56, 16, 0, 1, 1, 2026113006);
    std::vector<ScenarioStep> steps = first.steps;
    ScenarioStep chunk = second.steps[0];
    chunk.admit = 16;  // positions 40..55, rows of queries 40..55
    steps.push_back(std::move(chunk));
    b.Add(Explicit("prefill-second-chunk", std::move(steps)));
  }
  // A ratio budget below the sinks, then decode steps (streamingllm.md).
  {
    std::vector<ScenarioStep> steps = {QueryRows(10, {Row(10, 0.0f)})};
    for (int i = 0; i < 8; ++i) steps.push_back(Null());
    b.Add(Explicit("prefill-10-then-decode", std::move(steps)));
  }
  // H2O's prefill contribution is summed first, then added once
  // (h2o.md#at-prefill): positions 0 and 1 hold 1.0 from a decode row;
  // the prompt's two rows give 0 another 2^-53 each. Summed first, 0 has
  // 1 + 2^-52; added row by row, 1 + 2^-53 rounds back to 1.0 twice.
  {
    const float h = std::ldexp(1.0f, -53);
    b.Add(Explicit("prefill-h2o-summed-first",
                   {Null(2), WithRow({1.0f, 1.0f}),
                    QueryRows(2, {{h, 0.0f, 0.5f, 2.0f},
                                  {h, 0.0f, 0.5f, 2.0f, 2.0f}})}));
  }
  // Issue 19: a prefill step on a cache that decode steps filled and
  // thinned, then decoding from the state it left (one head). Step 1
  // (decode) row (0.25, 0.125, 0.5); step 2 admits 4 and 5 with the rows of
  // queries 4 and 5; step 3 (decode) row (0.125, 0, 0.125, 0, 0.25, 0.5).
  b.Add(Explicit("prefill-between-decodes",
                 {Null(3), WithRow({0.25f, 0.125f, 0.5f}),
                  QueryRows(2, {{0.5f, 0.0f, 0.0f, 0.25f, 0.125f},
                                {0.25f, 0.0f, 0.0625f, 0.125f, 0.25f, 0.25f}}),
                  WithRow({0.125f, 0.0f, 0.125f, 0.0f, 0.25f, 0.5f})}));
  // SnapKV with fewer query rows (2) than obs_window (3): the window is
  // min(obs_window, m) = 2 (positions 3 and 4), the prefix 0, 1, 2.
  b.Add(Explicit("prefill-snapkv-short-window",
                 {QueryRows(5, {{0.25f, 0.25f, 0.125f, 0.5f},
                                {0.5f, 0.25f, 0.0625f, 0.0625f, 0.0625f}})}));
  // TOVA's protect_newest beside a recent window, then a decode step.
  b.Add(Explicit("prefill-tova-newest-and-window",
                 {QueryRows(4, {{0.5f, 0.25f, 0.125f, 0.0625f}}),
                  WithRow({0.5f, 0.375f, 0.0f, 0.25f})}));
  // The largest finite binary32 weight M accumulated: 2M and 3M are finite
  // in binary64, infinite in binary32. Then a prefill step (one query row).
  {
    const float m = std::numeric_limits<float>::max();
    b.Add(Explicit("prefill-max-finite-weights",
                   {Null(2), WithRow({m, m}), WithRow({m, m, 0.0f}),
                    WithRow({m, 0.0f, 0.0f, 0.0f}),
                    QueryRows(1, {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, m}})}));
  }
  // Refusals and their order (prefill.md#checks).
  b.Add(Explicit("prefill-refusal-noncausal",
                 {QueryRows(2, {{0.5f, 0.5f, 0.5f}})}));
  b.Add(Explicit("prefill-refusal-too-many-rows",
                 {QueryRows(2, {{0.5f}, {0.5f}, {0.5f}})}));
  ScenarioStep both = QueryRows(1, {{0.5f, 0.5f}});
  both.attention = Row{kNan};
  b.Add(Explicit("prefill-order-both-rows-before-weights", {Null(), both}));
  b.Add(Explicit("prefill-order-length-before-weights",
                 {QueryRows(2, {{kNan}, {0.5f}})}));
  b.Add(Explicit("prefill-refusal-minus-zero",
                 {QueryRows(2, {{0.5f}, {0.5f, -0.0f}})}));
  b.Add(WithHeads(Explicit("prefill-refusal-rows-not-per-head",
                           {QueryRows(2, {{0.5f}, {0.5f, 0.5f}, {0.5f}})}),
                  2, 1));
  // The query rows' checks where only a later head is bad (issue 33: a
  // port that checks head 0 alone): two query heads, head 0's rows right.
  b.Add(WithHeads(Explicit("prefill-refusal-noncausal-in-head-1",
                           {QueryRows(2, {{0.5f}, {0.5f, 0.5f}, {0.5f}, {0.25f, 0.5f, 0.25f}})}),
                  2, 1));
  b.Add(WithHeads(Explicit("prefill-refusal-minus-zero-in-head-1",
                           {QueryRows(2, {{0.5f}, {0.5f, 0.5f}, {0.5f}, {0.5f, -0.0f}})}),
                  2, 1));
}

// A preset's configuration with `extra` parameters (spec/prefill.md#presets).
PolicyConfig Preset(const char* policy, const char* preset,
                    std::vector<Parameter> extra) {
  return *ExpandPreset(P(policy, std::move(extra)), preset);
}

void AddPrefillCases(SuiteBuilder& b) {
  // kvpress 0.5.5's presses on one prompt (tools/kvpress_check.py runs
  // kvpress itself on these).
  const std::vector<std::string> kvpress = {"preset.kvpress-0.5.5"};
  for (int64_t ratio : {250000, 500000, 750000}) {
    const std::string r = std::to_string(ratio / 10000);
    b.Case("prefill/kvpress/h2o-ratio-" + r, kvpress,
           "ObservedAttentionPress's rule, ratio 0." + r + ", 4 heads in 2 groups",
           Preset("h2o", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "prefill-causal-96");
    b.Case("prefill/kvpress/tova-ratio-" + r, kvpress,
           "TOVAPress's rule, ratio 0." + r + ", 4 heads in 2 groups",
           Preset("tova", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "prefill-causal-96");
    b.Case("prefill/kvpress/snapkv-ratio-" + r, kvpress,
           "SnapKVPress's rule (window 64, kernel 5), ratio 0." + r,
           Preset("snapkv", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "prefill-causal-96");
    b.Case("prefill/kvpress/snapkv-window-16-ratio-" + r, kvpress,
           "SnapKVPress's rule with window 16, ratio 0." + r,
           Preset("snapkv", "kvpress-0.5.5",
                  {{"ratio_ppm", ratio}, {"obs_window", 16}}),
           "prefill-causal-96");
    b.Case("prefill/kvpress/streamingllm-ratio-" + r, kvpress,
           "StreamingLLMPress's rule, ratio 0." + r,
           Preset("streamingllm", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "prefill-causal-96");
  }
  b.Case("prefill/kvpress/streamingllm-ratio-below-sinks",
         {"preset.kvpress-0.5.5", "prefill.sinks-last"},
         "ratio 0.99 on 96 positions: 96 x 0.01000000000000001 floors to 0, "
         "B = 1, below the 4 sinks: the highest sink stays",
         Preset("streamingllm", "kvpress-0.5.5", {{"ratio_ppm", 990000}}),
         "prefill-causal-96");
  // Budgets from a ratio (prefill.md#budgets-from-a-ratio).
  b.Case("prefill/ratio/binary64-rounding", {"prefill.ratio-binary64"},
         "20 positions at ratio 0.9: 20 x (1 - 0.9) is 1.9999999999999996 in "
         "binary64, so 1 is kept where exact arithmetic keeps 2",
         P("streamingllm", {{"budget", 4}, {"sinks", 0}, {"ratio_ppm", 900000},
                            {"prefill_only", 1}}),
         "prefill-20");
  b.Case("prefill/streamingllm/ratio-below-sinks", {"prefill.sinks-last"},
         "10 positions at ratio 0.8 keep 1, below 4 sinks: sink 3 stays",
         P("streamingllm", {{"budget", 5}, {"sinks", 4}, {"ratio_ppm", 800000},
                            {"prefill_only", 1}}),
         "prefill-10");
  // The cards' examples.
  b.Case("prefill/h2o/raw", {"prefill.normalize", "defaults.decides"},
         "h2o.md#at-prefill: raw sums 0.875, 1.0, 0.625: 2 goes",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}), "prefill-h2o-card");
  b.Case("prefill/h2o/normalized", {"prefill.normalize"},
         "h2o.md#at-prefill: normalized 0.2916..., 0.5, 0.625: 0 goes",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"normalize", 1}}),
         "prefill-h2o-card");
  b.Case("prefill/h2o/decode-continues", {},
         "h2o.md#at-prefill: the decode step adds onto the prefill sums "
         "(1.25 against 0.25): 2 goes, not 0",
         P("h2o", {{"budget", 2}, {"recent_window", 1}}),
         "prefill-h2o-card-decode");
  b.Case("prefill/h2o/heads-combine", {},
         "two heads in one group: each head sums its rows, then the mean; 1 "
         "and 2 tie at 0.625 and 1 goes",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}), "prefill-h2o-two-heads");
  b.Case("prefill/tova/newest-is-a-candidate",
         {"prefill.protect-newest", "defaults.decides"},
         "tova.md#at-prefill: the last row scores the newest 0.125: 2 goes",
         P("tova", {{"budget", 2}, {"recent_window", 0}}), "prefill-tova-card");
  b.Case("prefill/tova/protect-newest", {"prefill.protect-newest"},
         "tova.md#at-prefill: the newest is not a candidate: 0 goes",
         P("tova", {{"budget", 2}, {"recent_window", 0}, {"protect_newest", 1}}),
         "prefill-tova-card");
  const std::vector<Parameter> snap = {{"recent_window", 0}, {"obs_window", 2},
                                       {"pool_kernel", 1}};
  const auto with = [](std::vector<Parameter> base,
                       std::vector<Parameter> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  b.Case("prefill/snapkv/window-inside", {"prefill.window-budget", "defaults.decides"},
         "snapkv.md#at-prefill: budget 3, the window 3, 4 ranks last: 0 and "
         "1 go",
         P("snapkv", with(snap, {{"budget", 3}})), "prefill-snapkv-card");
  b.Case("prefill/snapkv/window-inside-budget-below-window",
         {"prefill.window-budget"},
         "snapkv.md#at-prefill: budget 1: the prefix goes, then the lower window position",
         P("snapkv", with(snap, {{"budget", 1}})), "prefill-snapkv-card");
  b.Case("prefill/snapkv/window-outside", {"prefill.window-budget"},
         "snapkv.md#at-prefill: budget 2 outside the window: 1 goes, 4 kept",
         P("snapkv", with(snap, {{"budget", 2}, {"window_budget", 1}})),
         "prefill-snapkv-card");
  b.Case("prefill/snapkv/max-pooling", {"prefill.pooling", "defaults.decides"},
         "kernel 3, max: 0.75 everywhere, 0 and 1 go",
         P("snapkv", {{"recent_window", 0}, {"obs_window", 2},
                      {"pool_kernel", 3}, {"budget", 3}}),
         "prefill-snapkv-card");
  b.Case("prefill/snapkv/avg-zero-padding", {"prefill.pooling"},
         "kernel 3, avg: 1.0/3, 1.75/3, 1.0/3 (the ends divided by 3): 0 and "
         "2 go",
         P("snapkv", {{"recent_window", 0}, {"obs_window", 2},
                      {"pool_kernel", 3}, {"budget", 3}, {"pooling", 1}}),
         "prefill-snapkv-card");
  b.Case("prefill/snapkv/sum-no-rounding-tie",
         {"prefill.window-reduce", "defaults.decides"},
         "window sums 1.500244140625 + 2^-52 and 1.500244140625: 1 goes",
         P("snapkv", {{"recent_window", 0}, {"obs_window", 3},
                      {"pool_kernel", 1}, {"budget", 4}}),
         "prefill-snapkv-mean-rounding");
  b.Case("prefill/snapkv/mean-rounding-ties", {"prefill.window-reduce"},
         "the two means round to one value: the tie evicts 0",
         P("snapkv", {{"recent_window", 0}, {"obs_window", 3},
                      {"pool_kernel", 1}, {"budget", 4}, {"window_reduce", 1}}),
         "prefill-snapkv-mean-rounding");
  // A prompt, then decoding, per policy: prefill_only and the ratio decide.
  struct Decoding {
    const char* policy;
    std::vector<Parameter> parameters;
  };
  const Decoding decoding[] = {
      {"streamingllm", {{"budget", 24}, {"sinks", 4}}},
      {"h2o", {{"budget", 24}, {"recent_window", 0}}},
      {"tova", {{"budget", 24}, {"recent_window", 0}}},
      {"snapkv", {{"budget", 24}, {"recent_window", 0}, {"obs_window", 4},
                  {"pool_kernel", 3}}},
  };
  for (const Decoding& d : decoding) {
    const std::string group = std::string("prefill/") + d.policy + "/";
    b.Case(group + "prompt-then-decode", {"defaults.decides", "prefill.only"},
           "a 64-position prompt (its whole causal matrix), budget 24, then "
           "16 decode steps that evict",
           P(d.policy, d.parameters), "prefill-64-decode-16");
    b.Case(group + "prompt-then-decode-prefill-only", {"prefill.only"},
           "as prompt-then-decode with prefill_only 1: decode steps keep "
           "everything",
           P(d.policy, with(d.parameters, {{"prefill_only", 1}})),
           "prefill-64-decode-16");
    b.Case(group + "prompt-ratio-then-decode", {"prefill.ratio"},
           "ratio 0.5 at the prompt (32 kept), then decode steps at budget 24",
           P(d.policy, with(d.parameters, {{"ratio_ppm", 500000}})),
           "prefill-64-decode-16");
    b.Case(group + "four-heads", {"defaults.decides"},
           "a 64-position prompt on four heads in two groups, then 16 decode "
           "steps",
           P(d.policy, d.parameters), "prefill-64-decode-16-h4");
    b.Case(group + "window-rows", {},
           "only the last 8 queries' rows: the window, not the square",
           P(d.policy, d.parameters), "prefill-64-window-8");
  }
  // The presets that are not kvpress's, on the prompt with decoding.
  b.Case("prefill/presets/snapkv-official", {"preset.official"},
         "snapkv:preset=official with budget 16 (capacity 16 + window) and "
         "window 8 on a 64-position prompt",
         Preset("snapkv", "official", {{"budget", 16}, {"obs_window", 8}}),
         "prefill-64-decode-16-h4");
  b.Case("prefill/presets/snapkv-kvcache-factory", {"preset.kvcache-factory"},
         "snapkv:preset=kvcache-factory with budget 16 on a 64-position prompt",
         Preset("snapkv", "kvcache-factory", {{"budget", 16}}),
         "prefill-64-decode-16-h4");
  b.Case("prefill/presets/h2o-official", {"preset.official"},
         "h2o:preset=official scaled to budget 20, recent window 16",
         Preset("h2o", "official", {{"budget", 20}, {"recent_window", 16}}),
         "prefill-64-decode-16-h4");
  b.Case("prefill/presets/h2o-kvcache-factory", {"preset.kvcache-factory"},
         "h2o:preset=kvcache-factory scaled to budget 24",
         Preset("h2o", "kvcache-factory", {{"budget", 24}}),
         "prefill-64-decode-16-h4");
  b.Case("prefill/presets/tova-official", {"preset.official"},
         "tova:preset=official scaled to cache size 24: after the prompt and "
         "at every step",
         Preset("tova", "official", {{"budget", 24}}), "prefill-64-decode-16-h4");
  b.Case("prefill/presets/streamingllm-official", {"preset.official"},
         "streamingllm:preset=official scaled to budget 20",
         Preset("streamingllm", "official", {{"budget", 20}}),
         "prefill-64-decode-16-h4");
  // What the Rust port's helper found no vector deciding.
  b.Case("prefill/streamingllm/sinks-stay-after-ratio", {"prefill.sinks-last"},
         "ratio 0.8 keeps sink 3 alone; at the decode steps after, 3 is still "
         "a sink (one of the first 4 ever admitted) and later positions are "
         "not",
         P("streamingllm", {{"budget", 5}, {"sinks", 4}, {"ratio_ppm", 800000}}),
         "prefill-10-then-decode");
  b.Case("prefill/streamingllm/held-runs-after-ratio", {"prefill.sinks-last"},
         "the same with spans 1: after the prefill keeps sinks 2, 3 alone, "
         "the held set of the next step is {2, 3} and {10}, two runs of which "
         "the first does not start at 0 (the full mutmut run of 2026-12-02: "
         "the Python port's _slot_ranges with last + first for a run's last "
         "slot survived every vector and the search)",
         P("streamingllm", {{"budget", 5}, {"sinks", 4}, {"ratio_ppm", 800000},
                            {"spans", 1}}),
         "prefill-10-then-decode");
  b.Case("prefill/snapkv/outside-with-ratio", {"prefill.window-budget"},
         "window outside and ratio 0.5: B = floor(5 x 0.5) = 2 from the whole "
         "kept count, so one prefix position goes",
         P("snapkv", with(snap, {{"budget", 4}, {"window_budget", 1},
                                 {"ratio_ppm", 500000}, {"prefill_only", 1}})),
         "prefill-snapkv-card");
  b.Case("prefill/h2o/normalize-window-rows", {},
         "8 query rows of a 64-position prompt: each key's sum divided by the "
         "carried rows that see it (8 for the prefix)",
         P("h2o", {{"budget", 24}, {"recent_window", 0}, {"normalize", 1}}),
         "prefill-64-window-8");
  for (const char* policy : {"h2o", "tova", "snapkv"}) {
    std::vector<Parameter> parameters = {{"budget", 24}, {"recent_window", 0}};
    if (std::string(policy) == "snapkv") parameters.push_back({"obs_window", 4});
    b.Case(std::string("prefill/") + policy + "/second-chunk", {},
           "a 32-position prompt, 8 decode steps, then a chunk of 16 with its "
           "16 query rows, gathered at the positions still kept",
           P(policy, parameters), "prefill-second-chunk");
  }
  b.Case("prefill/h2o/summed-first", {},
         "the prompt's rows summed first (2^-52) then added: position 0 ends "
         "at 1 + 2^-52, 1 at 1.0, and 1 goes; row by row 0 would tie at 1.0 "
         "and go",
         P("h2o", {{"budget", 4}, {"recent_window", 0}}), "prefill-h2o-summed-first");
  for (const char* policy : {"h2o", "tova", "snapkv"}) {
    std::vector<Parameter> parameters = {{"budget", 24}, {"recent_window", 0},
                                         {"granularity", 2}, {"adaptive", 1}};
    if (std::string(policy) == "tova") parameters.push_back({"protect_newest", 1});
    if (std::string(policy) == "snapkv") {
      parameters.push_back({"obs_window", 8});
      parameters.push_back({"pool_kernel", 3});
    }
    b.Case(std::string("prefill/adakv/") + policy, {"heads.adaptive"},
           "the shared budget at a prefill step: one joint ranking of the "
           "heads' prefill scores, then decoding",
           P(policy, parameters), "prefill-64-decode-16-h4");
  }
  // Issue 19: prefill on a non-empty cache, then decoding (budget 3,
  // recent window 1; worked by hand, spec/prefill.md#the-prefill-step).
  // Step 1 evicts 1 (0.125) in all three. Step 2 keeps {0, 2, 3} + {4, 5},
  // evicts 2 of 0, 2, 3, 4.
  b.Case("prefill/h2o/prefill-between-decodes", {},
         "step 2 adds the query rows' sums (0.75, 0.0625, 0.375, 0.375) onto "
         "the decode sums (0.25, 0.5, 0, 0): 0 1.0, 2 0.5625, 3 and 4 0.375, "
         "so 3 and 4 go (sums restarted at prefill: 2 and 3); step 3 adds its "
         "row onto them: 0 1.125, 2 0.6875, 5 0.75, 2 goes",
         P("h2o", {{"budget", 3}, {"recent_window", 1}}), "prefill-between-decodes");
  b.Case("prefill/tova/prefill-between-decodes", {},
         "step 2: the last query row (0.25, 0.0625, 0.125, 0.25) over 0, 2, 3, "
         "4: 2 and 3 go; step 3: the decode row replaces it, 0 0.125, 4 0.25, "
         "5 0.5: 0 goes",
         P("tova", {{"budget", 3}, {"recent_window", 1}}), "prefill-between-decodes");
  b.Case("prefill/snapkv/prefill-between-decodes", {},
         "obs_window 2, no pooling: step 2's window is 4, 5, the prefix sums 0 "
         "0.75, 2 0.0625, 3 0.375: 2 and 3 go, and the ring keeps step 1's "
         "row; step 3's sums over steps 1 and 3: 0 0.375, 4 0.25, 5 0.5: 4 "
         "goes (a ring cleared or written by the prefill: 0 goes)",
         P("snapkv", {{"budget", 3}, {"recent_window", 1}, {"obs_window", 2},
                      {"pool_kernel", 1}}),
         "prefill-between-decodes");
  // Issue 19: m = 2 query rows, obs_window 3 (snapkv.md#at-prefill: w =
  // min(obs_window, m) = 2, prefix 0, 1, 2, sums 0.75, 0.5, 0.1875).
  const std::vector<Parameter> short_window = {{"recent_window", 0}, {"obs_window", 3},
                                               {"pool_kernel", 1}};
  b.Case("prefill/snapkv/short-window-mean", {"prefill.window-budget"},
         "window inside, mean over w = 2 rows: 0.375, 0.25, 0.09375; budget 3 "
         "evicts 2 and 1 (a window of 3 would make 2 a window position and "
         "evict 0 and 1; dividing by 3 changes the cut)",
         P("snapkv", with(short_window, {{"budget", 3}, {"window_reduce", 1}})),
         "prefill-snapkv-short-window");
  b.Case("prefill/snapkv/short-window-outside", {"prefill.window-budget"},
         "window outside, budget 2: (5 - 2) - 2 = 1 prefix position goes, 2 "
         "(0.1875); a window of 3 would evict nothing",
         P("snapkv", with(short_window, {{"budget", 2}, {"window_budget", 1}})),
         "prefill-snapkv-short-window");
  b.Case("prefill/snapkv/short-window-outside-mean", {"prefill.window-budget"},
         "window outside and mean: 2 goes at 0.1875 / 2 = 0.09375",
         P("snapkv", with(short_window, {{"budget", 2}, {"window_budget", 1},
                                         {"window_reduce", 1}})),
         "prefill-snapkv-short-window");
  // Issue 19: protect_newest 1 with recent_window 1: the newest is already
  // protected, nothing more is (tova.md#at-prefill).
  b.Case("prefill/tova/protect-newest-with-window", {},
         "recent window 1 and protect_newest 1, budget 3: the last row scores "
         "0 0.5, 1 0.25, 2 0.125: 2 goes (protecting one more position would "
         "evict 1); the decode step: 0 0.5, 1 0.375, 3 0.25: 3 goes",
         P("tova", {{"budget", 3}, {"recent_window", 1}, {"protect_newest", 1}}),
         "prefill-tova-newest-and-window");
  // Issue 19: the largest finite weight M, budget 2, no recent window. The
  // decode steps evict the newest (0.0) and sum 0 to 3M and 1 to 2M; the
  // prefill step's ratio 0.5 keeps max(1, floor(3 x 0.5)) = 1 of 0, 1, 5.
  b.Case("prefill/h2o/max-finite-weights", {"prefill.ratio"},
         "sums 3M, 2M and M (5's query row): 5 and 1 go; in binary32 2M and "
         "3M are both infinite, tie, and 0 goes instead of 1",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"ratio_ppm", 500000}}),
         "prefill-max-finite-weights");
  b.Case("prefill/snapkv/max-finite-weights", {},
         "obs_window 3, no pooling: window sums reach 2M and 3M, finite in "
         "binary64 (the cut lists them; binary32 accumulation gives "
         "infinities); the prefill step's window is 5 (+infinity), the prefix "
         "sums 0.0: 0 and 1 go",
         P("snapkv", {{"budget", 2}, {"recent_window", 0}, {"obs_window", 3},
                      {"pool_kernel", 1}, {"ratio_ppm", 500000}}),
         "prefill-max-finite-weights");
  // Refusals (prefill.md#checks).
  const PolicyConfig h2o = P("h2o", {{"budget", 2}, {"recent_window", 0}});
  b.Case("prefill/refusal/noncausal-row", {"refusal.attention-length"},
         "the row of query 1 has 3 weights: it covers a later position",
         h2o, "prefill-refusal-noncausal");
  b.Case("prefill/refusal/more-rows-than-admitted", {"refusal.attention-length"},
         "3 query rows for a step admitting 2", h2o,
         "prefill-refusal-too-many-rows");
  b.Case("prefill/refusal/minus-zero", {"refusal.attention-value"},
         "a query row holds -0.0", h2o, "prefill-refusal-minus-zero");
  b.Case("prefill/refusal/rows-not-per-head", {"refusal.attention-length"},
         "3 query rows for 2 heads", h2o, "prefill-refusal-rows-not-per-head");
  b.Case("prefill/refusal/noncausal-row-in-head-1", {"refusal.attention-length"},
         "two heads, head 0's rows right; head 1's row of query 1 has 3 "
         "weights: ATTENTION_LENGTH at step 0",
         h2o, "prefill-refusal-noncausal-in-head-1");
  b.Case("prefill/refusal/minus-zero-in-head-1", {"refusal.attention-value"},
         "two heads, head 0's rows right; head 1's query row holds -0.0: "
         "ATTENTION_VALUE at step 0",
         h2o, "prefill-refusal-minus-zero-in-head-1");
  b.Case("prefill/order/both-rows-before-weights",
         {"refusal.attention-length", "order.query-shape-before-weights"},
         "a NaN in the step's row and query rows beside it: the shape "
         "(ATTENTION_LENGTH) first",
         h2o, "prefill-order-both-rows-before-weights");
  b.Case("prefill/order/length-before-weights",
         {"refusal.attention-length", "order.query-shape-before-weights"},
         "a NaN in the first query row, the second too short: ATTENTION_LENGTH",
         h2o, "prefill-order-length-before-weights");
  b.Case("prefill/window/positional-policy-reads-no-row", {},
         "window on a prompt with query rows: they are checked, not read",
         P("window", {{"budget", 24}}), "prefill-64-decode-16");
  // Rules relating the parameters (prefill.md#when-a-policy-evicts).
  b.Case("prefill/refusal/ratio-with-recent-window", {"refusal.invalid-parameter"},
         "ratio_ppm 500000 with recent_window 16: refused",
         P("h2o", {{"ratio_ppm", 500000}}), "prefill-h2o-card");
  b.Case("prefill/refusal/adaptive-prefill-only", {"refusal.invalid-parameter"},
         "adaptive 1 with prefill_only 1: refused",
         P("tova", {{"adaptive", 1}, {"prefill_only", 1}}), "prefill-tova-card");
  b.Case("prefill/refusal/adaptive-window-outside", {"refusal.invalid-parameter"},
         "adaptive 1 with window_budget 1: refused",
         P("snapkv", {{"adaptive", 1}, {"window_budget", 1}}), "prefill-snapkv-card");
}

// Spec 0.10.0: column totals (spec/prefill.md#column-totals). The totals of
// a prefill step's last `total_rows` queries, formed from their rows as the
// spec pins it: per head, per position, binary64 from +0.0 in ascending
// query order. `queries` are every query's rows of the step (head-major, m
// per head, ascending), `first` the step's first position, `admit` its
// length.
std::vector<std::vector<double>> TotalsOf(const std::vector<Row>& queries,
                                          uint32_t heads, uint32_t total_rows) {
  const size_t per_head = queries.size() / heads;
  std::vector<std::vector<double>> totals(heads);
  for (uint32_t h = 0; h < heads; ++h) {
    const size_t positions = queries[h * per_head + per_head - 1].size();
    totals[h].assign(positions, 0.0);
    for (size_t j = per_head - total_rows; j < per_head; ++j) {
      const Row& row = queries[h * per_head + j];
      for (size_t p = 0; p < row.size(); ++p) {
        totals[h][p] += static_cast<double>(row[p]);
      }
    }
  }
  return totals;
}

// A prefill step (every query's rows given) carrying its last `carried`
// rows per head and the totals of its last `total_rows` queries.
ScenarioStep WithTotals(ScenarioStep step, uint32_t heads, uint32_t carried,
                        uint32_t total_rows) {
  step.totals = TotalsOf(step.queries, heads, total_rows);
  step.total_rows = total_rows;
  const size_t per_head = step.queries.size() / heads;
  std::vector<Row> kept;
  for (uint32_t h = 0; h < heads; ++h) {
    for (size_t j = per_head - carried; j < per_head; ++j) {
      kept.push_back(step.queries[h * per_head + j]);
    }
  }
  step.queries = std::move(kept);
  return step;
}

// A TracePrompt (whole causal matrix) whose prefill step carries its last
// `carried` rows and the totals of every query instead.
Scenario TracePromptTotals(std::string id, uint32_t length, uint32_t carried,
                           uint32_t decode, uint32_t query_heads,
                           uint32_t kv_heads, uint64_t seed) {
  Scenario scenario = TracePrompt(std::move(id), length, length, decode,
                                  query_heads, kv_heads, seed);
  scenario.steps[0] =
      WithTotals(std::move(scenario.steps[0]), query_heads, carried, length);
  return scenario;
}

void AddTotalsScenarios(SuiteBuilder& b) {
  // The h2o card's second example (rows (0.5), (0.25, 0.75), (0.125, 0.25,
  // 0.625)): totals 0.875, 1.0, 0.625 beside the last row alone.
  b.Add(Explicit("totals-h2o-card",
                 {WithTotals(QueryRows(3, {{0.5f}, {0.25f, 0.75f},
                                           {0.125f, 0.25f, 0.625f}}),
                             1, 1, 3)}));
  // A prefill of 4 whose totals cover its last 2 queries, rows (0.25,
  // 0.2, 0.5) and (0.25, 0.2, 0.25, 0.3): totals 0.5, 0.4, 0.75, 0.3 (to
  // binary32's 0.2 and 0.3), both rows carried.
  b.Add(Explicit("totals-fewer-rows",
                 {WithTotals(QueryRows(4, {{0.25f, 0.2f, 0.5f},
                                           {0.25f, 0.2f, 0.25f, 0.3f}}),
                             1, 2, 2)}));
  // Three positions with null attention (budget 2 evicts 0), then a chunk
  // of 2 whose totals cover both queries, rows (4.5, 0.15, 0.125, 0.375)
  // and (4.5, 0.15, 0.125, 0.375, 0.2): totals 9.0, 0.3, 0.25, 0.75, 0.2;
  // only the last row carried.
  b.Add(Explicit("totals-gathered",
                 {Null(3),
                  WithTotals(QueryRows(2, {{4.5f, 0.15f, 0.125f, 0.375f},
                                           {4.5f, 0.15f, 0.125f, 0.375f, 0.2f}}),
                             1, 1, 2)}));
  // The kvpress check's prompt (prefill-causal-96) and the AdaKV prompt
  // (prefill-64-decode-16-h4) with the last 8 rows and every query's totals.
  b.Add(TracePromptTotals("totals-causal-96", 96, 8, 0, 4, 2, 2026113002));
  b.Add(TracePromptTotals("totals-64-decode-16-h4", 64, 8, 16, 4, 2,
                          2026113004));
  b.Add(TracePromptTotals("totals-64-decode-16", 64, 1, 16, 1, 1, 2026113003));
  // Refusals (prefill.md#their-checks), on the card's step.
  const ScenarioStep card = QueryRows(3, {{0.125f, 0.25f, 0.625f}});
  const auto with = [&](std::vector<std::vector<double>> totals, uint32_t rows) {
    ScenarioStep step = card;
    step.totals = std::move(totals);
    step.total_rows = rows;
    return step;
  };
  const std::vector<double> ok = {0.875, 1.0, 0.625};
  ScenarioStep bare = Null(3);
  bare.totals = {ok};
  bare.total_rows = 3;
  b.Add(Explicit("totals-refusal-without-rows", {bare}));
  b.Add(Explicit("totals-refusal-rows-zero", {with({ok}, 0)}));
  b.Add(Explicit("totals-refusal-rows-above-admit", {with({ok}, 4)}));
  b.Add(Explicit("totals-refusal-rows-without-totals", {with({}, 3)}));
  b.Add(Explicit("totals-refusal-not-per-head", {with({ok, ok}, 3)}));
  b.Add(Explicit("totals-refusal-short", {with({{0.875, 1.0}}, 3)}));
  b.Add(Explicit("totals-refusal-long", {with({{0.875, 1.0, 0.625, 0.0}}, 3)}));
  b.Add(Explicit("totals-refusal-nan",
                 {with({{0.875, std::numeric_limits<double>::quiet_NaN(), 0.625}}, 3)}));
  b.Add(Explicit("totals-refusal-infinite",
                 {with({{std::numeric_limits<double>::infinity(), 1.0, 0.625}}, 3)}));
  b.Add(Explicit("totals-refusal-minus-zero", {with({{0.875, 1.0, -0.0}}, 3)}));
  b.Add(Explicit("totals-refusal-negative", {with({{0.875, -1.0, 0.625}}, 3)}));
  // The same checks where only a later head is bad (issue 33: a port that
  // checks head 0 alone): two query heads, head 0's totals right.
  ScenarioStep two_heads = QueryRows(3, {{0.125f, 0.25f, 0.625f}, {0.25f, 0.25f, 0.5f}});
  two_heads.total_rows = 3;
  two_heads.totals = {ok, {0.875, 1.0}};
  b.Add(WithHeads(Explicit("totals-refusal-short-in-head-1", {two_heads}), 2, 1));
  two_heads.totals = {ok, {0.875, std::numeric_limits<double>::quiet_NaN(), 0.625}};
  b.Add(WithHeads(Explicit("totals-refusal-nan-in-head-1", {two_heads}), 2, 1));
  // Orders: short totals beside a NaN query weight; a NaN total beside a
  // short query row (both ATTENTION_LENGTH: shapes before values).
  ScenarioStep nan_row = QueryRows(3, {{0.125f, kNan, 0.625f}});
  nan_row.totals = {{0.875, 1.0}};
  nan_row.total_rows = 3;
  b.Add(Explicit("totals-order-short-totals-nan-row", {nan_row}));
  ScenarioStep short_row = QueryRows(3, {{0.125f, 0.25f}});
  short_row.totals = {{0.875, std::numeric_limits<double>::quiet_NaN(), 0.625}};
  short_row.total_rows = 3;
  b.Add(Explicit("totals-order-short-row-nan-totals", {short_row}));
  // A NaN query weight beside a NaN total: the query rows' weights first
  // (ATTENTION_VALUE either way; the message names the query row).
  // Totals on a non-prefill step with an attention row: refused.
  b.Add(Explicit("totals-refusal-beside-a-row",
                 {Null(2), [&] {
                    ScenarioStep step = WithRow({0.5f, 0.5f});
                    step.totals = {{0.5, 0.5, 0.5}};
                    step.total_rows = 1;
                    return step;
                  }()}));
}

void AddTotalsCases(SuiteBuilder& b) {
  const std::vector<std::string> totals = {"prefill.totals"};
  b.Case("prefill/totals/h2o-raw", {"prefill.totals"},
         "totals 0.875, 1.0, 0.625 beside the last query row: 2 goes (the "
         "row alone, 0.125, 0.25, 0.625, would make 0 go)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}), "totals-h2o-card");
  b.Case("prefill/totals/h2o-normalized", {"prefill.normalize"},
         "normalized by the 3, 2, 1 queries of the totals that see each key "
         "(not the 1 row carried): 0.2916..., 0.5, 0.625, 0 goes",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"normalize", 1}}),
         "totals-h2o-card");
  b.Case("prefill/totals/normalize-by-their-rows", {"prefill.normalize"},
         "a prefill of 4 with totals over its last 2 queries: divisors 2, 2, "
         "2, 1 (min(R, a + c - p)), 0.25, 0.2, 0.375, 0.3: 1 goes (divisors "
         "from the chunk, 4, 3, 2, 1, would make 0 go)",
         P("h2o", {{"budget", 3}, {"recent_window", 0}, {"normalize", 1}}),
         "totals-fewer-rows");
  b.Case("prefill/totals/gathered-raw", {"prefill.totals"},
         "totals gathered at the kept positions 1..4 (position 0's 9.0 is "
         "not read): 0.3, 0.25, 0.75, 0.2: 2 and 4 go (the last row alone "
         "would make 1 and 2 go)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}), "totals-gathered");
  b.Case("prefill/totals/gathered-normalized", {"prefill.normalize"},
         "the same, normalized by min(2, 5 - p): 0.15, 0.125, 0.375, 0.2: 1 "
         "and 2 go",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"normalize", 1}}),
         "totals-gathered");
  for (int64_t ratio : {250000, 500000, 750000}) {
    const std::string r = std::to_string(ratio / 10000);
    b.Case("prefill/totals/kvpress-h2o-ratio-" + r, totals,
           "as prefill/kvpress/h2o-ratio-" + r + " with the 96 queries' totals "
           "and 8 rows in place of the whole matrix: the same log, cut "
           "scores included",
           Preset("h2o", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "totals-causal-96");
  }
  b.Case("prefill/totals/h2o-raw-query-heads", totals,
         "raw sums, one kept set per query head: each set gathers its own "
         "head's totals",
         P("h2o", {{"budget", 40}, {"recent_window", 0}, {"granularity", 2}}),
         "totals-causal-96");
  for (const char* policy : {"tova", "snapkv"}) {
    b.Case(std::string("prefill/totals/") + policy + "-reads-the-rows", {},
           std::string(policy) + " on the 96-position prompt with totals: it "
           "reads the 8 carried rows, never the totals",
           Preset(policy, "kvpress-0.5.5", {{"ratio_ppm", 500000}}),
           "totals-causal-96");
  }
  b.Case("prefill/totals/adakv-h2o", {"heads.adaptive"},
         "as prefill/adakv/h2o with the 64 queries' totals and 8 rows: the "
         "same log",
         P("h2o", {{"budget", 24}, {"recent_window", 0}, {"granularity", 2},
                   {"adaptive", 1}}),
         "totals-64-decode-16-h4");
  b.Case("prefill/totals/decode-continues", totals,
         "a 64-position prompt's totals and its last row, then 16 decode "
         "steps accumulating onto the prefill sums",
         P("h2o", {{"budget", 24}, {"recent_window", 4}}),
         "totals-64-decode-16");
  // Refusals and orders.
  const PolicyConfig h2o = P("h2o", {{"budget", 2}, {"recent_window", 0}});
  const struct {
    const char* id;
    const char* flag;
    const char* description;
    const char* scenario;
  } refusals[] = {
      {"without-query-rows", "refusal.attention-length",
       "totals on a step with null attention and no query rows",
       "totals-refusal-without-rows"},
      {"beside-a-row", "refusal.attention-length",
       "totals on a decode step carrying an attention row",
       "totals-refusal-beside-a-row"},
      {"total-rows-zero", "refusal.attention-length",
       "totals with total_rows 0", "totals-refusal-rows-zero"},
      {"total-rows-above-admit", "refusal.attention-length",
       "total_rows 4 on a step admitting 3", "totals-refusal-rows-above-admit"},
      {"total-rows-without-totals", "refusal.attention-length",
       "total_rows 3 and no totals", "totals-refusal-rows-without-totals"},
      {"not-per-head", "refusal.attention-length",
       "two lists of totals for one query head", "totals-refusal-not-per-head"},
      {"short", "refusal.attention-length",
       "2 totals for positions 0..2", "totals-refusal-short"},
      {"long", "refusal.attention-length",
       "4 totals for positions 0..2", "totals-refusal-long"},
      {"nan", "refusal.attention-value", "a NaN total", "totals-refusal-nan"},
      {"infinite", "refusal.attention-value", "an infinite total",
       "totals-refusal-infinite"},
      {"minus-zero", "refusal.attention-value", "a total of -0.0",
       "totals-refusal-minus-zero"},
      {"negative", "refusal.attention-value", "a total of -1.0",
       "totals-refusal-negative"},
  };
  for (const auto& r : refusals) {
    b.Case(std::string("prefill/refusal/totals-") + r.id, {r.flag},
           r.description, h2o, r.scenario);
  }
  b.Case("prefill/refusal/totals-short-in-head-1", {"refusal.attention-length"},
         "two heads, head 0's totals right; head 1's are 2 for positions "
         "0..2: ATTENTION_LENGTH at step 0",
         h2o, "totals-refusal-short-in-head-1");
  b.Case("prefill/refusal/totals-nan-in-head-1", {"refusal.attention-value"},
         "two heads, head 0's totals right; head 1 has a NaN total: "
         "ATTENTION_VALUE at step 0",
         h2o, "totals-refusal-nan-in-head-1");
  b.Case("prefill/order/totals-shape-before-query-weights",
         {"refusal.attention-length"},
         "short totals beside a NaN query weight: the totals' shape "
         "(ATTENTION_LENGTH) before the rows' weights",
         h2o, "totals-order-short-totals-nan-row");
  b.Case("prefill/order/query-shape-before-totals-values",
         {"refusal.attention-length"},
         "a short query row beside a NaN total: ATTENTION_LENGTH",
         h2o, "totals-order-short-row-nan-totals");
}

// Cases the differential search found (tools/README.md#search): each is
// the search's shrunk scenario for a mutant of a bundled port that the
// vectors let through and only the search killed (tools/mutation.sh
// --search). Its description names the mutant and the rule; the mutation
// run is its check (the mutant is killed by the vectors from then on).
void AddSearchCases(SuiteBuilder& b) {
  {
    // search --seed=1, case 116, shrunk in 16 rounds against the Python
    // port with mutmut 3.8.1's trace.xǁHeadsTraceǁweights_matrix__mutmut_8.
    TraceConfig trace = CanonicalTrace(2);
    trace.seed = 190;
    trace.sinks = 2;
    trace.recent_length = 9;
    trace.heavy_count = 1;
    trace.epoch_length = 58;
    trace.noise = 0.0;
    b.Add(WithHeads(Traced("search-trace-heads-one-position", trace), 2, 2));
  }
  b.Case("search/trace-heads/one-position-rows", {"search.found"},
         "found by tools/search (seed 1, case 116, shrunk): a two-head trace "
         "whose sets keep one position at step 1; each row holds that "
         "position's generated weight, not zero, so tova evicts the new "
         "position 1 and keeps 0 (the Python port's weights_matrix with "
         "`== 1` in place of `== 0` read a one-position row as zeros, and the "
         "tie evicted 0)",
         P("tova", {{"budget", 1}, {"recent_window", 0}}),
         "search-trace-heads-one-position");

  // The full mutmut run of the Python port with the search as kill test
  // (issue 19, 2026-12-01, slices 0 and 1 of 8 at commit 5abcd81): four
  // mutants the vectors let through and search --seed=1 killed, each case
  // its shrunk scenario.
  // The search shrank these two to a prefill of one position whose one
  // query row makes the observation window the whole prompt, so the pooled
  // prefix is empty. Here the prompt has two positions and both rows, so
  // the prefix is still empty and the step evicts (budget 1): every score
  // is the window's +infinity, and the lower position, 0, goes.
  b.Add(Explicit("search-prefill-two-positions", {QueryRows(2, {{1.0f, 1.0f}})}));
  b.Add(Explicit("search-prefill-all-window", {QueryRows(2, {{1.0f}, {0.5f, 0.5f}})}));
  b.Case("search/prefill/snapkv-avg-pool-empty-prefix", {"search.found"},
         "found by tools/search (seed 1, case 36, shrunk in 27 rounds to a "
         "one-position prefill): the observation window is the whole prompt, "
         "so SnapKV's average pooling runs over no score; 0 goes among equal "
         "window scores (the Python port's avg_pool with `n == 1` in place "
         "of `n == 0` indexed an empty list and crashed)",
         P("snapkv", {{"budget", 1}, {"recent_window", 0}, {"pooling", 1}}),
         "search-prefill-all-window");
  b.Case("search/prefill/snapkv-max-pool-empty-prefix", {"search.found"},
         "found by tools/search (seed 1, case 68, shrunk in 33 rounds to a "
         "one-position prefill): the same under max pooling, the default "
         "(the Python port's max_pool with `n == 1` in place of `n == 0` "
         "crashed)",
         P("snapkv", {{"budget", 1}, {"recent_window", 0}}),
         "search-prefill-all-window");
  b.Case("search/prefill/ratio-ppm-one", {"search.found"},
         "found by tools/search (seed 1, case 74, shrunk in 11 rounds): "
         "ratio_ppm 1 is a ratio: a prefill of 2 keeps max(1, floor(2 x "
         "0.999999)) = 1 and evicts 0 (the Python port's step_budget with "
         "`ratio_ppm > 1` read 1 as no ratio and kept both)",
         P("snapkv", {{"recent_window", 0}, {"ratio_ppm", 1}}),
         "search-prefill-two-positions");
  {
    // search --seed=1, case 116, shrunk in 27 rounds against
    // trace.xǁTraceGeneratorǁbegin_step__mutmut_64 (one head).
    TraceConfig trace = CanonicalTrace(59);
    trace.seed = 190;
    trace.sinks = 2;
    trace.recent_length = 9;
    trace.heavy_count = 1;
    trace.epoch_length = 58;
    trace.noise = 0.0;
    b.Add(Traced("search-trace-one-heavy-hitter", trace));
  }
  b.Case("search/trace/one-heavy-hitter", {"search.found"},
         "found by tools/search (seed 1, case 116, shrunk in 27 rounds): a "
         "one-head trace with exactly one heavy hitter, whose mass decides "
         "tova's victims (the Python port's TraceGenerator.begin_step with "
         "`heavy_count > 1` in place of `> 0` dropped a lone heavy hitter)",
         P("tova", {{"budget", 1}, {"recent_window", 0}}),
         "search-trace-one-heavy-hitter");

  // mutmut 3.8.1 over the Python port's spans.py, window.py and
  // streamingllm.py with the search as kill test (issue 19, 2026-12-02, at
  // commit 08868fe: 456 mutants, 13 killed by the search only): each case
  // the search's shrunk scenario (search --seed=1), lengthened where
  // needed so that it evicts.
  b.Add(Chunks("search-decode-4", {1, 1, 1, 1}));
  b.Add(Chunks("search-decode-7", std::vector<uint32_t>(7, 1)));
  b.Add(Chunks("search-chunks-1-2-1", {1, 2, 1}));
  b.Add(Chunks("search-chunk-2", {2}));
  b.Add(Chunks("search-chunk-3", {3}));
  b.Case("search/spans/window-room-for-the-step", {"search.found"},
         "found by tools/search (seed 1, case 184, shrunk in 16-22 rounds): "
         "window with evict_at 1 makes room for each decode step: budget 2, "
         "0 goes before 2 is admitted, 1 before 3 (the Python port's "
         "WindowPolicy.evict_before with kept + count + budget, kept - count "
         "- budget, or no count at all; no vector ran window with evict_at 1)",
         P("window", {{"budget", 2}, {"evict_at", 1}}), "search-decode-4");
  b.Case("search/contextshift/budget-minus-sinks-two", {"search.found"},
         "found by tools/search (seed 1, case 17, shrunk in 14 rounds): "
         "budget - sinks exactly 2 is accepted (budget 5, sinks 3); the "
         "shift at position 5 discards 3, one of the two that may go (the "
         "Python port with `<= 2` or `< 3` refused it)",
         P("streamingllm", {{"budget", 5}, {"sinks", 3}, {"context_shift", 1}}),
         "search-decode-7");
  b.Case("search/contextshift/window-budget-two", {"search.found"},
         "found by tools/search (seed 1, case 233, shrunk in 9 rounds): "
         "window takes context_shift 1 at budget 2 (it has no sinks: the "
         "Python port's check_context_shift_relations defaulting sinks to 1 "
         "refused it)",
         P("window", {{"budget", 2}, {"context_shift", 1}}), "search-decode-4");
  b.Case("search/contextshift/discard-one-without-shift", {"search.found"},
         "found by tools/search (seed 1, case 502, shrunk in 15 rounds): "
         "discard 1 with context_shift 0 is refused (the Python port with "
         "`discard > 1` accepted it)",
         P("streamingllm", {{"discard", 1}}), "one-step");
  b.Case("search/contextshift/nothing-may-go", {"search.found"},
         "found by tools/search (seed 1, case 336, shrunk in 9 rounds): "
         "window budget 2, discard 1, chunks 1, 2, 1: before the chunk of 2 "
         "one position is kept, n_left 1, so d = min(1, max(0, 0)) = 0 and "
         "the chunk is kept whole (3); the next step discards 1 (the Python "
         "port's context_shift_discard with max(1, n_left - 1) discarded 0)",
         P("window", {{"budget", 2}, {"context_shift", 1}, {"discard", 1}}),
         "search-chunks-1-2-1");
  b.Case("search/spans/both-rules-at-one", {"search.found"},
         "found by tools/search (seed 1, case 601, shrunk in 24 rounds): "
         "span_window 1 and span_chunk 1 are both set, and refused (the "
         "Python port with `span_chunk > 1` accepted them)",
         P("window", {{"span_window", 1}, {"span_chunk", 1}}), "one-step");
  b.Case("search/spans/window-of-one", {"search.found"},
         "found by tools/search (seed 1, case 208, shrunk in 25 rounds): "
         "span_window 1: each query attends to itself alone (the Python "
         "port's step_record with `w > 1` took a window of 1 as none)",
         P("window", {{"budget", 2}, {"spans", 1}, {"span_window", 1}}),
         "search-decode-4");
  b.Case("search/spans/chunk-of-one", {"search.found"},
         "found by tools/search (seed 1, case 541, shrunk in 12 rounds): "
         "streamingllm without sinks, span_chunk 1, a chunk of 2: query 1 "
         "attends to 1 alone (the Python port's step_record with `c > 1` "
         "took a chunk of 1 as none)",
         P("streamingllm", {{"budget", 4}, {"sinks", 0}, {"spans", 1},
                            {"span_chunk", 1}}),
         "search-chunk-2");
  b.Case("search/spans/one-sink-in-span", {"search.found"},
         "found by tools/search (seed 1, case 105, shrunk in 26 rounds): "
         "one sink, span_chunk 1, a chunk of 3: query 2 attends to the sink "
         "0 and to 2 (the Python port's step_record with `s > 1`, or with "
         "min(sinks_held, slot - 1) sinks, left a lone sink out)",
         P("streamingllm", {{"budget", 4}, {"sinks", 1}, {"spans", 1},
                            {"span_chunk", 1}}),
         "search-chunk-3");

  // The whole-port mutmut run of the Python port (issue 19, 2026-12-02, at
  // commit 09d490d, first chunk): five mutants the vectors let through, each
  // case the shrunk scenario its triage gave.
  b.Case("search/prefill/adaptive-with-ratio", {"search.found",
                                                "refusal.invalid-parameter"},
         "found by tools/search (seed 1, shrunk): adaptive 1 with ratio_ppm "
         "666667 (recent_window 0, so rule 1 holds) is refused by rule 2 of "
         "prefill.md#when-a-policy-evicts (the Python port's "
         "check_prefill_relations without ratio_ppm in rule 2's list "
         "accepted it; the vectors refused adaptive with prefill_only and "
         "with window_budget only)",
         P("tova", {{"adaptive", 1}, {"recent_window", 0}, {"ratio_ppm", 666667}}),
         "prefill-tova-card");
  b.Case("search/prefill/ratio-one-with-recent-window", {"search.found",
                                                         "refusal.invalid-parameter"},
         "found by tools/search (seed 2, shrunk): ratio_ppm 1, the least "
         "ratio, with h2o's default recent_window 16 is refused by rule 1 "
         "(the Python port with `ratio_ppm > 1` accepted it)",
         P("h2o", {{"ratio_ppm", 1}}), "prefill-h2o-card");
  // The first step of two query heads: two heads rows of no weights (one
  // per position admitted before, none) are well formed, so only the query
  // rows beside them make the step wrong.
  b.Add(WithHeads(Explicit("search-prefill-heads-beside-queries",
                           {[] {
                             ScenarioStep step = QueryRows(
                                 2, {{0.5f, 0.5f}, {0.25f, 0.75f}});
                             step.heads = {Row{}, Row{}};
                             return step;
                           }()}),
                  2, 2));
  b.Case("search/prefill/heads-rows-beside-queries", {"search.found",
                                                       "refusal.attention-length"},
         "a first step of two query heads carries two empty heads rows (well "
         "formed: no position was admitted before) and query rows: "
         "ATTENTION_LENGTH by check 3 of prefill.md#checks (a step with "
         "query rows has no heads row; the Python port that checked only "
         "for an attention row ran it as a prefill)",
         P("h2o", {{"budget", 1}, {"recent_window", 0}}),
         "search-prefill-heads-beside-queries");
  {
    // Subnormal masses: the recent shares mass x d^k / norm are exact only
    // when the powers d^k start at d^0 = 1 (trace.md#steps-and-rows).
    TraceConfig trace = CanonicalTrace(4);
    trace.sinks = 0;
    trace.heavy_count = 0;
    trace.recent_mass = 2.5e-323;
    trace.background_mass = 5e-324;
    b.Add(Traced("search-trace-subnormal-masses", trace));
  }
  b.Case("search/trace/subnormal-masses", {"search.found"},
         "found by tools/search (shrunk): recent_mass 2.5e-323 and "
         "background_mass 5e-324 (subnormal binary64), no sinks and no heavy "
         "hitters; the shares round in the subnormal range, so the powers "
         "must start at d^0 = 1.0 (the Python port's TraceGenerator with "
         "the powers started at another value gave other weights)",
         P("tova", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-subnormal-masses");
  {
    // The seed 2^64 - 0x9E3779B97F4A7C15 makes head 0's salience hash of
    // position 0 mix64(0) = 0, so salience(0) = (0 + 1) x 2^-53, the least.
    TraceConfig trace = CanonicalTrace(4);
    trace.seed = 7046029254386353131ULL;
    b.Add(WithHeads(Traced("search-trace-heads-zero-hash", trace), 2, 2));
    b.Add(Traced("search-trace-zero-hash", trace));
  }
  {
    // A several-heads trace without sinks: no step has a sink part.
    TraceConfig trace = CanonicalTrace(6);
    trace.sinks = 0;
    b.Add(WithHeads(Traced("search-trace-heads-no-sinks", trace), 3, 1));
  }
  b.Case("search/trace-heads/no-sinks", {"search.found"},
         "found by tools/search (seed 1; the whole-port run's slice 1): a "
         "trace of three query heads with sinks 0, so no step has a sink "
         "part (the Python port's HeadsTrace.weights_matrix adding the sink "
         "part when there are no sinks, `s >= 0` for `s > 0`, read a share "
         "that was never set and crashed; every several-heads trace of the "
         "vectors had sinks)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-heads-no-sinks");
  b.Add(Explicit("search-two-positions-one-row", {Null(1), WithRow({0.125f})}));
  b.Case("search/snapkv/avg-pool-kernel-wider-than-kept", {"search.found"},
         "found by tools/search (seed 1, case 129; the whole-port run's "
         "slice 6): avg pooling with pool_kernel 5 (r = 2) over n = 2 "
         "kept slots, so each slot's neighbourhood j = i - 2 .. i + 2 "
         "clipped to 0 <= j < 2 is both slots: sums 0.125 and 0 pool to "
         "0.125 / 5 = 0.025 each, a tie, and 0 goes (the Python port's "
         "avg_pool with the radius clamped to n - 2 for n - 1 pooled "
         "nothing, scored 0.025 and 0, and evicted 1; no vector had avg "
         "pooling over fewer kept slots than the kernel's radius + 2)",
         P("snapkv", {{"budget", 1}, {"recent_window", 0}, {"pooling", 1}}),
         "search-two-positions-one-row");
  b.Add(Explicit("search-totals-one-row",
                 {WithTotals(QueryRows(2, {{0.25f, 0.75f}}), 1, 1, 1)}));
  b.Case("search/totals/total-rows-one", {"search.found"},
         "found by tools/search (seed 1, case 7, shrunk to one position and "
         "total_rows 1; the mutation run of the functions spec 0.10.0 "
         "changed), here with a second position so that h2o reads the "
         "totals and evicts: a two-position prefill whose column totals "
         "cover its last query only, total_rows 1, the least that check 3 "
         "of prefill.md#their-checks accepts: totals 0.25, 0.75, 0 goes "
         "(the Python port's _check_totals with 1 <= total_rows made "
         "2 <= total_rows refused the step ATTENTION_LENGTH; every "
         "accepted totals vector had total_rows 2 or more, and the one "
         "with total_rows 1 is refused for its missing query rows)",
         P("h2o", {{"budget", 1}, {"recent_window", 0}}),
         "search-totals-one-row");
  b.Case("search/trace/zero-hash", {},
         "the same seed with one head (TraceGenerator's own salience, not "
         "HeadsTrace's): salience(0) is 2^-53; with the hash's +1 changed, "
         "position 0's background share changes and h2o keeps other "
         "positions",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-zero-hash");
  b.Case("search/trace-heads/zero-hash", {"search.found"},
         "found by tools/search (shrunk): a two-head trace whose seed makes "
         "head 0's salience hash of position 0 zero, so salience(0) is 2^-53 "
         "(the +1 of trace.md#hashes decides it; the Python port's "
         "HeadsTrace.weights_matrix with the hash's +1 changed agreed with "
         "the reference on every other hash)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-heads-zero-hash");
}

// Spec 0.8.0: spans and position ids (spec/spans.md), the engines' presets
// and a vector for each bug class engines have shipped in positional caches
// under chunked prefill (issue 20): each case is flagged with the rule it
// exists for and the engine.* class it reproduces.
PolicyConfig EnginePreset(const char* policy, const char* preset,
                          std::vector<Parameter> given) {
  absl::StatusOr<PolicyConfig> config =
      ExpandPreset({policy, std::move(given)}, preset);
  assert(config.ok());
  return *config;
}

void AddSpanCases(SuiteBuilder& b) {
  // The bug classes, each a chunking of a cache of window (or max_size) 4.
  const struct {
    const char* name;       // scenario id suffix and case id part
    std::vector<uint32_t> chunks;
    const char* flag;       // engine.* class
    const char* what;       // what an engine gets wrong here
  } classes[] = {
      {"chunk-longer-than-window", {2, 1, 6, 1}, "engine.chunk-longer-than-window",
       "a chunk of 6 after 3 positions: its first queries need keys admitted "
       "before the chunk, which a ring of the window's size has overwritten "
       "(pytorch/executorch#20346), and no query may see more than the "
       "window (pytorch/executorch#21857)"},
      {"chunk-ends-on-wrap", {2, 2, 1}, "engine.chunk-ends-on-wrap",
       "a chunk that ends exactly when the ring is full, then a decode step "
       "(the read/write start after a wrap, huggingface/transformers#47708)"},
      {"short-prefill-then-wrap", {2, 1, 1, 1, 1, 1, 1},
       "engine.short-prefill-then-wrap",
       "a prefill shorter than the window, then decode steps across the wrap "
       "(huggingface/transformers#47708)"},
      {"continuation-chunk", {3, 1, 1, 1, 1, 5, 1}, "engine.continuation-chunk",
       "a chunk after decoding has begun, into a cache that has wrapped "
       "(lablup/mlxcel#678, #418; sgl-project/sglang#8649)"},
      {"short-last-chunk", {4, 4, 2, 1}, "engine.short-last-chunk",
       "a prompt of 10 in chunks of 4: the last chunk holds 2 real "
       "positions; padding it to 4 would evict real ones "
       "(cactus-compute/cactus#716)"},
      {"first-chunk-longer-than-window", {7, 2, 1}, nullptr,
       "a first chunk of 7, longer than the window, then a chunk and a "
       "decode step"},
  };
  for (const auto& c : classes) {
    b.Add(Chunks(std::string("span-") + c.name, c.chunks));
  }
  // A cache of 6 (the sinks' preset) is full after chunks of 2 and 4.
  b.Add(Chunks("span-chunk-ends-on-wrap-6", {2, 4, 1}));
  const struct {
    const char* id;  // case id prefix
    PolicyConfig config;
    std::vector<std::string> flags;
    const char* rule;
  } engines[] = {
      {"window/spans/hf-dynamic-5.2.0",
       EnginePreset("window", "hf-dynamic-5.2.0", {{"span_window", 4}}),
       {"spans.window"},
       "transformers 5.2.0's dynamic sliding layer: keeps W - 1 = 3 between "
       "steps, each query sees q - 3 .. q"},
      {"window/spans/hf-static-5.2.0",
       EnginePreset("window", "hf-static-5.2.0", {{"span_window", 4}}),
       {"spans.window"},
       "transformers 5.2.0's static sliding layer: keeps W = 4, each query "
       "sees q - 3 .. q"},
      {"window/spans/hf-dynamic-5.2.0-chunked",
       EnginePreset("window", "hf-dynamic-5.2.0", {{"span_chunk", 4}}),
       {"spans.chunk"},
       "chunked local attention of 4 (Llama 4) on transformers' dynamic "
       "layer: keeps 3, each query sees its own chunk of 4"},
      {"window/spans/mlx-lm-0.32.2",
       EnginePreset("window", "mlx-lm-0.32.2", {{"budget", 4}}),
       {"spans.window", "spans.evict-before-one"},
       "mlx-lm 0.32.2's RotatingKVCache(4, keep=0): down to 3 before each "
       "step, each query sees q - 3 .. q"},
      {"streamingllm/spans/mlx-lm-0.32.2",
       EnginePreset("streamingllm", "mlx-lm-0.32.2",
                    {{"budget", 6}, {"sinks", 2}}),
       {"spans.sinks-in-span", "spans.evict-before-one"},
       "mlx-lm 0.32.2's RotatingKVCache(6, keep=2): down to 5 before each "
       "step, keeping sinks 0 and 1; each query sees the sinks and q - 3 .. q"},
  };
  for (const auto& e : engines) {
    for (const auto& c : classes) {
      std::vector<std::string> flags;
      // spans.md#when-room-is-made: the two rules before admission agree
      // unless a chunk after the first is longer than the room rule 1
      // leaves, so these classes do not tell them apart.
      const bool decode_only = std::string(c.name) == "short-prefill-then-wrap" ||
                               std::string(c.name) == "chunk-ends-on-wrap";
      for (const std::string& flag : e.flags) {
        if (decode_only && flag.rfind("spans.evict-before", 0) == 0) continue;
        flags.push_back(flag);
      }
      if (c.flag != nullptr) flags.push_back(c.flag);
      std::string scenario = std::string("span-") + c.name;
      if (scenario == "span-chunk-ends-on-wrap" &&
          e.config.name == "streamingllm") {
        scenario = "span-chunk-ends-on-wrap-6";
      }
      b.Case(std::string(e.id) + "/" + c.name, flags,
             std::string(e.rule) + "; " + c.what, e.config, scenario);
    }
  }

  // spec/spans.md's worked examples.
  b.Add(Chunks("span-chunks-2-5-1", {2, 5, 1}));
  b.Add(Chunks("span-chunks-4-3-1", {4, 3, 1}));
  b.Case("window/spans/worked-example", {"spans.window", "defaults.decides"},
         "spans.md#span-rules: budget 3, span_window 4, chunks 2, 5, 1: query "
         "4 sees 1..4, query 6 sees 3..6, query 7 sees 4..7",
         P("window", {{"budget", 3}, {"span_window", 4}, {"spans", 1}}),
         "span-chunks-2-5-1");
  for (int64_t evict_at : {0, 1, 2}) {
    std::vector<std::string> flags = {"defaults.decides"};
    if (evict_at == 1) flags = {"spans.evict-before-room", "sinks.protected"};
    if (evict_at == 2) flags = {"spans.evict-before-one", "sinks.protected"};
    b.Case("streamingllm/spans/evict-at-" + std::to_string(evict_at), flags,
           "spans.md#when-room-is-made: budget 6, sinks 2, chunks 4, 3, 1 "
           "with evict_at " + std::to_string(evict_at),
           P("streamingllm", {{"budget", 6},
                              {"sinks", 2},
                              {"evict_at", evict_at},
                              {"spans", 1}}),
           "span-chunks-4-3-1");
  }
  // StreamingLLM's official code: room for the step (evict_for_space) and
  // keys re-rotated by their place in the cache (pos_shift).
  b.Case("streamingllm/spans/official-room-and-cache-ids",
         {"spans.ids-cache-relative"},
         "budget 5, sinks 2, evict_at 1, position_ids 1, single steps: at "
         "step 6 the held set is 0, 1, 4, 5, 6 with ids 0..4",
         P("streamingllm", {{"budget", 5},
                            {"sinks", 2},
                            {"evict_at", 1},
                            {"position_ids", 1},
                            {"spans", 1}}),
         "singles-7");
  b.Case("streamingllm/spans/official-continuation-chunk",
         {"spans.evict-before-room", "spans.ids-cache-relative",
          "engine.continuation-chunk"},
         "budget 5, sinks 2, evict_at 1, position_ids 1: a chunk of 5 after "
         "decoding takes every non-sink (4, 5, 6) before admission and stays "
         "whole (7 kept), with ids 0..6",
         P("streamingllm", {{"budget", 5},
                            {"sinks", 2},
                            {"evict_at", 1},
                            {"position_ids", 1},
                            {"spans", 1}}),
         "span-continuation-chunk");
  b.Case("streamingllm/spans/cache-ids-after-admission",
         {"spans.ids-cache-relative", "cache-relative"},
         "budget 5, sinks 2, evicting after admission, position_ids 1: the "
         "first query's id is query_cache_position",
         P("streamingllm",
           {{"budget", 5}, {"sinks", 2}, {"position_ids", 1}, {"spans", 1}}),
         "span-continuation-chunk");
  // A cache that keeps everything under a sliding-window mask
  // (transformers' DynamicCache built without a config).
  b.Case("full/spans/sliding-window-over-full-cache", {"spans.window"},
         "full with span_window 3: nothing is evicted, each query sees q - 2 "
         ".. q",
         P("full", {{"span_window", 3}, {"spans", 1}}),
         "span-chunk-longer-than-window");
  b.Case("full/spans/chunked-over-full-cache", {"spans.chunk"},
         "full with span_chunk 3: each query sees its own chunk of 3",
         P("full", {{"span_chunk", 3}, {"spans", 1}}),
         "span-short-last-chunk");
  b.Case("full/spans/spans-off", {"defaults.decides"},
         "full with span_window 3 and spans at its default 0: nothing is "
         "logged beyond the victims",
         P("full", {{"span_window", 3}}), "span-chunks-2-5-1");
  b.Case("window/spans/causal", {"defaults.decides"},
         "window budget 3, spans 1, no span rule: each query sees every held "
         "position up to itself",
         P("window", {{"budget", 3}, {"spans", 1}}), "span-chunks-2-5-1");
  b.Case("full/spans/causal", {"defaults.decides"},
         "full, spans 1, no span rule: each query sees 0 .. q",
         P("full", {{"spans", 1}}), "span-chunks-2-5-1");
  // Refusals of spec/spans.md#parameters.
  b.Case("window/refusal/span-window-one-and-span-chunk",
         {"refusal.invalid-parameter"},
         "span_window 1 and span_chunk 2: both set, whatever their values "
         "(the full mutmut run of 2026-12-02: a Python port refusing only "
         "span_window > 1 survived every vector and the search)",
         P("window", {{"budget", 4}, {"span_window", 1}, {"span_chunk", 2}}),
         "one-step");
  b.Case("window/refusal/span-window-and-span-chunk",
         {"refusal.invalid-parameter"}, "span_window and span_chunk both set",
         P("window", {{"budget", 4}, {"span_window", 4}, {"span_chunk", 4}}),
         "one-step");
  b.Case("streamingllm/refusal/evict-at-with-prefill-only",
         {"refusal.invalid-parameter"}, "evict_at 1 with prefill_only 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"evict_at", 1},
                            {"prefill_only", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/evict-at-with-ratio",
         {"refusal.invalid-parameter"}, "evict_at 2 with ratio_ppm 500000",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"evict_at", 2},
                            {"ratio_ppm", 500000}}),
         "one-step");
  b.Case("full/refusal/evict-at", {"refusal.invalid-parameter"},
         "full takes no evict_at", P("full", {{"evict_at", 1}}), "one-step");
  b.Case("h2o/refusal/spans", {"refusal.invalid-parameter"},
         "h2o takes no span parameters", P("h2o", {{"spans", 1}}), "one-step");
}

// Spec 0.9.0: llama.cpp's context shift (spec/spans.md#context-shift), its
// worked examples, each of its rules deciding a case, the preset at
// llama.cpp's own sizes, and the refusals.
void AddContextShiftCases(SuiteBuilder& b) {
  b.Add(Chunks("shift-decode-21", std::vector<uint32_t>(21, 1)));
  b.Add(Chunks("shift-chunks-5-3-1", {5, 3, 1}));
  b.Add(Chunks("shift-chunks-3-6-1", {3, 6, 1}));
  b.Add(Chunks("shift-decode-12", std::vector<uint32_t>(12, 1)));
  b.Add(Chunks("shift-continuation", {4, 1, 1, 1, 1, 5, 1, 1}));
  {
    // A server slot of n_ctx 256: a prompt of 200, then 400 decode steps.
    std::vector<uint32_t> chunks(401, 1);
    chunks[0] = 200;
    b.Add(Chunks("shift-prompt-200-decode-400", chunks));
  }
  const auto llama = [](int64_t budget, int64_t sinks,
                        std::vector<Parameter> more = {}) {
    std::vector<Parameter> given = {{"budget", budget}, {"sinks", sinks}};
    for (Parameter& p : more) given.push_back(p);
    return EnginePreset("streamingllm", "llama.cpp-0c1e570", given);
  };
  b.Case("streamingllm/contextshift/worked-example-decode",
         {"shift.context-shift", "spans.ids-cache-relative",
          "defaults.decides"},
         "spans.md#context-shift worked example (llama.cpp n_ctx 8, n_keep "
         "2): budget 7, sinks 2, 21 decode steps; a shift before every "
         "second step from 7 on discards the two oldest non-sinks, and the "
         "survivors' ids close the gap",
         llama(7, 2), "shift-decode-21");
  b.Case("streamingllm/contextshift/worked-example-chunks",
         {"shift.context-shift", "spans.ids-cache-relative"},
         "spans.md#context-shift: chunks 5, 3, 1 with budget 7, sinks 2: "
         "the chunk of 3 does not fit (n_left 3, d 1), then the decode step "
         "(n_left 5, d 2)",
         llama(7, 2), "shift-chunks-5-3-1");
  b.Case("streamingllm/contextshift/discard-clamped",
         {"shift.discard-given", "shift.clamped"},
         "spans.md#context-shift: discard 4 where 3 may go: d is clamped to "
         "n_left - 1 = 2, and the last step then fits",
         llama(7, 2, {{"discard", 4}}), "shift-chunks-5-3-1");
  b.Case("streamingllm/contextshift/chunk-kept-whole",
         {"shift.chunk-kept-whole"},
         "spans.md#context-shift: a chunk of 6 after 3 with budget 7, sinks "
         "2: one shift makes no room (n_left 1, d 0), the chunk is admitted "
         "whole (kept 9), the next step shifts 3",
         llama(7, 2), "shift-chunks-3-6-1");
  b.Case("streamingllm/contextshift/no-sinks",
         {"shift.context-shift", "spans.ids-cache-relative"},
         "llama.cpp with n_keep 0 and no BOS: budget 7, sinks 0, 12 decode "
         "steps; half of everything kept goes at each shift",
         llama(7, 0), "shift-decode-12");
  b.Case("streamingllm/contextshift/continuation-chunk",
         {"shift.context-shift", "engine.continuation-chunk"},
         "a chunk of 5 after decoding has shifted the cache: budget 6, "
         "sinks 1",
         llama(6, 1), "shift-continuation");
  b.Case("streamingllm/contextshift/llama.cpp-n-ctx-256",
         {"shift.context-shift", "spans.ids-cache-relative"},
         "the server's smallest slot: n_ctx 256 (budget 255), n_keep 0 plus "
         "BOS (sinks 1), a prompt of 200, then 400 decode steps",
         llama(255, 1), "shift-prompt-200-decode-400");
  b.Case("streamingllm/contextshift/discard-one",
         {"shift.discard-given"},
         "n_discard 1: the oldest non-sink goes at every step once full, a "
         "StreamingLLM window made by shifts",
         llama(7, 2, {{"discard", 1}}), "shift-decode-12");
  b.Case("window/contextshift/half",
         {"shift.context-shift", "defaults.decides"},
         "window budget 4: at 4 the oldest two go (0, 1), 5 fits, at 6 "
         "2 and 3 go",
         P("window", {{"budget", 4}, {"context_shift", 1}}), "shift-decode-12");
  b.Case("window/contextshift/discard-given",
         {"shift.context-shift", "shift.discard-given"},
         "window budget 5, discard 3, chunks 5, 3, 1",
         P("window", {{"budget", 5}, {"context_shift", 1}, {"discard", 3}}),
         "shift-chunks-5-3-1");
  b.Case("window/contextshift/clamped-chunk-kept-whole",
         {"shift.discard-given", "shift.clamped", "shift.chunk-kept-whole"},
         "window budget 4, discard 5, chunks 3, 6, 1: the first shift is "
         "clamped to n_left - 1 = 2 and the chunk of 6 is kept whole (7 "
         "kept); the next shift discards 5",
         P("window", {{"budget", 4}, {"context_shift", 1}, {"discard", 5}}),
         "shift-chunks-3-6-1");
  // Refusals of spec/spans.md#parameters.
  b.Case("window/refusal/discard-without-shift", {"refusal.invalid-parameter"},
         "discard 2 with context_shift 0",
         P("window", {{"budget", 4}, {"discard", 2}}), "one-step");
  b.Case("window/refusal/shift-budget-one", {"refusal.invalid-parameter"},
         "context_shift 1 with budget 1: nothing could be kept and discarded",
         P("window", {{"budget", 1}, {"context_shift", 1}}), "one-step");
  b.Case("streamingllm/refusal/shift-no-room", {"refusal.invalid-parameter"},
         "context_shift 1 with budget 6, sinks 5 (budget - sinks 1)",
         P("streamingllm",
           {{"budget", 6}, {"sinks", 5}, {"context_shift", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/shift-with-evict-at",
         {"refusal.invalid-parameter"}, "context_shift 1 with evict_at 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"context_shift", 1},
                            {"evict_at", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/shift-with-prefill-only",
         {"refusal.invalid-parameter"}, "context_shift 1 with prefill_only 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"context_shift", 1},
                            {"prefill_only", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/shift-with-ratio",
         {"refusal.invalid-parameter"}, "context_shift 1 with ratio_ppm 500000",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"context_shift", 1},
                            {"ratio_ppm", 500000}}),
         "one-step");
  b.Case("full/refusal/context-shift", {"refusal.invalid-parameter"},
         "full takes no context_shift", P("full", {{"context_shift", 1}}),
         "one-step");
  b.Case("tova/refusal/context-shift", {"refusal.invalid-parameter"},
         "tova takes no context_shift", P("tova", {{"context_shift", 1}}),
         "one-step");
}

}  // namespace

// spec/vectors.md#the-suite, the parameter matrix: for every policy and
// every parameter registered for some other policy but not for it, a case
// that gives it that parameter (at its default where it is taken, a valid
// value there) and expects INVALID_PARAMETER at step -1
// (harness.md#configuration: unknown names are refused first). A port that
// accepts another policy's parameter, or refuses it only for some
// policies, fails one of them. The census checks the matrix is complete.
void AddForeignParameterCases(SuiteBuilder& b) {
  std::vector<const ParameterInfo*> all;
  std::vector<std::string> seen;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      if (std::find(seen.begin(), seen.end(), p.name) != seen.end()) continue;
      seen.push_back(p.name);
      all.push_back(&p);
    }
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo* p : all) {
      bool takes = false;
      for (const ParameterInfo& own : info.parameters) takes |= own.name == p->name;
      if (takes) continue;
      std::string name = p->name;
      std::replace(name.begin(), name.end(), '_', '-');
      const int64_t value = p->default_value.value_or(p->min);
      b.Case(absl::StrFormat("harness/foreign-parameter/%s-%s", info.name, name),
             {"refusal.invalid-parameter"},
             absl::StrFormat("%s takes no parameter '%s' (another policy's, "
                             "given at its default %d): INVALID_PARAMETER at "
                             "step -1",
                             info.name, p->name, value),
             P(info.name.c_str(), {{p->name, value}}), "one-step");
    }
  }
}

TraceConfig CanonicalTrace(uint32_t steps) {
  TraceConfig config;
  config.steps = steps;
  return config;
}

Suite BuildSuite() {
  SuiteBuilder builder;
  AddScenarios(builder);
  AddHarnessCases(builder);
  AddPositionalCases(builder);
  AddScoreCases(builder);
  AddAuditCases(builder);
  AddHeadScenarios(builder);
  AddHeadCases(builder);
  AddPrefillScenarios(builder);
  AddPrefillCases(builder);
  AddTotalsScenarios(builder);
  AddTotalsCases(builder);
  AddSearchCases(builder);
  AddSpanCases(builder);
  AddContextShiftCases(builder);
  AddForeignParameterCases(builder);
  for (CombinationCase& c : CombinationCases()) {  // combination_cases.h
    builder.Add(std::move(c.scenario));
    builder.Case(std::move(c.spec.id), std::move(c.spec.flags),
                 std::move(c.spec.description), std::move(c.spec.policy),
                 std::move(c.spec.scenario_id));
  }
  return builder.Build();
}

}  // namespace vectors
}  // namespace kvspec
