// The decode cases of the vector suite (spec/vectors.md#the-suite): the
// shared scenarios, the harness's own cases (refusals, check orders), the
// positional policies (full, window, streamingllm, random) and the
// score-based ones (h2o, tova, snapkv) on single-head decoding.
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

namespace {

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

}  // namespace

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
  // Dyadic weights: exact at every precision (spec/arithmetic.md#exact-cases).
  b.Case("snapkv/neighbour/tova-dyadic", {"neighbour.snapkv-tova"},
         "a one-step window without pooling is tova: 1 (0.125) goes",
         snapkv(4, 1, 1, 1), "pool-defends");
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

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
