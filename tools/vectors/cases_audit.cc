// The cases of spec 0.4.0's outside audit (spec/vectors.md#bounds): two
// faults in one step, absent trace fields, every parameter's bounds, a
// chunk exactly as long as the budget.
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
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {

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
              p.name == "context_shift" || p.name == "discard" ||
              // and the triggers' (spec 0.12.0).
              p.name == "slack" || p.name == "interval" ||
              // and the blocks' (spec 0.13.0).
              p.name == "block" || p.name == "block_score" ||
              // and the pyramid's (spec 0.19.0).
              p.name == "pyramid" || p.name == "pyramid_beta" ||
              p.name == "layer" || p.name == "layers";
          // discard above 0 needs context_shift 1 (spec/spans.md); layer
          // below layers, and pyramid 2 window_budget 1
          // (spec/policies/pyramidkv.md#parameters).
          const bool companion =
              (parameter.name == "discard" && p.name == "context_shift") ||
              (parameter.name == "layer" && p.name == "layers") ||
              (parameter.name == "pyramid" && bound.value >= 1 &&
               (p.name == "window_budget" || p.name == "ratio_ppm"));
          // openvino's block defaults to 32: its small configuration
          // gives block 1 (spec/policies/openvino.md#parameters).
          const bool openvino_block = info.name == "openvino" && p.name == "block";
          if (head_parameter && p.name != parameter.name && !companion &&
              !openvino_block) {
            continue;
          }
          int64_t value = p.name == "budget"        ? 4
                          : p.name == "obs_window"  ? 2
                          : p.name == "pool_kernel" ? 3
                                                    : 1;
          // simlayerkv.md#parameters: n_last below n_recent, so n_recent
          // is 2, and the top n_recent where n_last is at its top.
          if (info.name == "simlayerkv" && p.name == "n_recent") {
            value = parameter.name == "n_last" && bound.value >= parameter.max
                        ? kTopBudget
                        : 2;
          }
          if (p.name == parameter.name) value = bound.value;
          if (p.name == "budget" && parameter.max == kTopBudget - 1 &&
              bound.value >= parameter.max) {
            value = kTopBudget;
          }
          if (parameter.name == "budget" && bound.value <= 1 &&
              (p.name == "recent_window" || p.name == "sinks")) {
            value = 0;  // recent_window / sinks below budget 1
          }
          // spec/blocks.md#rules: with block above 1, budget a multiple
          // of it (the block itself; at the bound above the range, the
          // range's top, so that the range alone refuses), recent_window
          // and sinks 0.
          if (parameter.name == "block" && bound.value > 1) {
            if (p.name == "budget") value = std::min(bound.value, parameter.max);
            if (p.name == "recent_window" || p.name == "sinks") value = 0;
          }
          // openvino.md#parameters, rule 1: sinks + recent_window below
          // budget, so the other area is 0 where one is at its top.
          if (info.name == "openvino" && bound.value >= parameter.max &&
              ((parameter.name == "sinks" && p.name == "recent_window") ||
               (parameter.name == "recent_window" && p.name == "sinks"))) {
            value = 0;
          }
          // pyramidkv.md#parameters: the top layer index needs the top
          // layer count; pyramid 2 needs the window outside.
          if (parameter.name == "layer" && p.name == "layers") value = 65536;
          // pyramid 1: a ratio and the window inside; 2 (and 3, whose
          // refusal counts when 2 is accepted): no ratio, the window outside;
          // both without a recent window.
          if (parameter.name == "pyramid" && bound.value >= 1) {
            if (p.name == "window_budget") value = bound.value >= 2 ? 1 : 0;
            if (p.name == "ratio_ppm") value = bound.value >= 2 ? 0 : 500000;
            if (p.name == "recent_window") value = 0;
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
               P(info.name.c_str(), parameters),
               // knorm and keydiff read keys, lagkv keys and values
               // (spec/tensors.md): a scenario with them.
               ReadsValues(info.name) ? "lk-drawn-1"
               : ReadsKeys(info.name) ? "kn-rows"
                                      : "rows-6");
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

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
