// Spec 0.19.0: PyramidKV's per-layer prefill budgets, a mode of snapkv
// (spec/policies/pyramidkv.md): the card's worked examples layer by layer
// under both formulas, the two presets at their libraries' sizes, several
// heads, decode steps after the pyramid, and the mode's rules and their
// order beside the others.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {
namespace {

// The last `w` query rows of an `n`-position prompt for one head: query q
// pays position i the weight (i + 1) / scale (rising) or (n - i) / scale
// (falling), so the prefix ranks by position, the lowest (rising) or the
// highest (falling) first. Exact in binary32; each row sums below 1 for
// n up to 90 at the default scale 4096.
std::vector<Row> WindowRows(uint32_t n, uint32_t w, bool rising,
                            float scale = 4096.0f) {
  std::vector<Row> rows;
  for (uint32_t q = n - w; q < n; ++q) {
    Row row(q + 1);
    for (uint32_t i = 0; i <= q; ++i) {
      row[i] = static_cast<float>(rising ? i + 1 : n - i) / scale;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

Scenario RisingPrompt(std::string id, uint32_t n, uint32_t w) {
  return Explicit(std::move(id), {QueryRows(n, WindowRows(n, w, true))});
}

// kvpress's formula on snapkv (inside, no pooling, prefill only).
PolicyConfig Kvpress(int64_t ratio_ppm, int64_t obs_window, int64_t beta,
                     int64_t layer, int64_t layers) {
  return P("snapkv", {{"recent_window", 0}, {"prefill_only", 1},
                      {"pool_kernel", 1}, {"ratio_ppm", ratio_ppm},
                      {"obs_window", obs_window}, {"pyramid", 1},
                      {"pyramid_beta", beta}, {"layer", layer},
                      {"layers", layers}});
}

// KVCache-Factory's (outside, no pooling, prefill only).
PolicyConfig Factory(int64_t budget, int64_t obs_window, int64_t beta,
                     int64_t layer, int64_t layers) {
  return P("snapkv", {{"budget", budget}, {"recent_window", 0},
                      {"prefill_only", 1}, {"pool_kernel", 1},
                      {"window_budget", 1}, {"obs_window", obs_window},
                      {"pyramid", 2}, {"pyramid_beta", beta},
                      {"layer", layer}, {"layers", layers}});
}

}  // namespace

void AddPyramidScenarios(SuiteBuilder& b) {
  b.Add(RisingPrompt("pk-40-w4", 40, 4));
  b.Add(RisingPrompt("pk-10-w1", 10, 1));
  b.Add(RisingPrompt("pk-20-w2", 20, 2));
  b.Add(RisingPrompt("pk-7-w4", 7, 4));
  b.Add(RisingPrompt("pk-30-w2", 30, 2));
  b.Add(RisingPrompt("pk-15-w2", 15, 2));
  b.Add(RisingPrompt("pk-11-w2", 11, 2));
  b.Add(RisingPrompt("pk-22-w6", 22, 6));
  b.Add(RisingPrompt("pk-40-w2", 40, 2));
  b.Add(RisingPrompt("pk-6-w1", 6, 1));
  b.Add(RisingPrompt("pk-25-w3", 25, 3));
  b.Add(RisingPrompt("pk-2-w1", 2, 1));
  // 100 positions: weights (i + 1) / 2^14 keep each row below 1.
  b.Add(Explicit("pk-100-w4", {QueryRows(100, WindowRows(100, 4, true, 16384.0f))}));
  // The presets' own sizes: kvpress's window of 64 over 256 positions,
  // KVCache-Factory's 8 over 1,100 (its budget 504 compresses from 1,008).
  b.Add(RisingPrompt("pk-256-w64", 256, 64));
  // Weights (i + 1) / 2^20 keep 1,100-position rows below 1.
  b.Add(Explicit("pk-1100-w8", {QueryRows(1100, WindowRows(1100, 8, true, 1048576.0f))}));
  {
    // Two query heads, one KV head: head 0 rising, head 1 falling.
    std::vector<Row> rows = WindowRows(30, 2, true);
    for (Row& row : WindowRows(30, 2, false)) rows.push_back(std::move(row));
    b.Add(WithHeads(Explicit("pk-30-w2-two-heads", {QueryRows(30, std::move(rows))}),
                    2, 1));
  }
  {
    // Ten positions by a decode step, then a prompt of 30 whose last four
    // queries' rows cover all 40 positions.
    b.Add(Explicit("pk-10-then-30-w4", {Null(10), QueryRows(30, WindowRows(40, 4, true))}));
  }
  {
    // The prompt of pk-40-w4, then four decode steps of null attention.
    b.Add(Explicit("pk-40-w4-decode", {QueryRows(40, WindowRows(40, 4, true)),
                                       Null(), Null(), Null(), Null()}));
  }
}

void AddPyramidCases(SuiteBuilder& b) {
  const std::vector<std::string> pyramid = {"prefill.pyramid"};
  const std::vector<std::string> layered = {"prefill.pyramid",
                                            "prefill.pyramid-layer"};
  // Example 1 (pyramidkv.md#worked-examples): 30, 20, 10 of 40. Layer 0
  // is left at its default; layer 1 keeps what the plain ratio keeps.
  for (int64_t layer = 0; layer < 3; ++layer) {
    PolicyConfig config = Kvpress(500000, 4, 2, layer, 3);
    std::vector<std::string> flags = layered;
    if (layer == 0) {
      config.parameters.erase(config.parameters.end() - 2);  // layer
      flags.push_back("defaults.decides");
    }
    if (layer == 1) flags = {"prefill.pyramid-layer"};
    b.Case(absl::StrFormat("prefill/pyramidkv/kvpress-layer-%d", layer), flags,
           absl::StrFormat("pyramidkv.md example 1: n 40, ratio 0.5, window 4, "
                           "beta 2, layer %d of 3 keeps %d%s",
                           layer, 30 - 10 * layer,
                           layer == 1 ? " (as the plain ratio does)" : ""),
           config, "pk-40-w4");
  }
  // Example 2: 7.5 and 2.5 round to even, 8 and 2.
  for (int64_t layer = 0; layer < 2; ++layer) {
    b.Case(absl::StrFormat("prefill/pyramidkv/kvpress-half-even-layer-%d", layer),
           layered,
           absl::StrFormat("pyramidkv.md example 2: n 10, window 1, beta 2, "
                           "layer %d of 2: %s rounds half to even, %d kept",
                           layer, layer == 0 ? "7.5" : "2.5", layer == 0 ? 8 : 2),
           Kvpress(500000, 1, 2, layer, 2), "pk-10-w1");
  }
  // Example 3: hi clipped to n - w, 18 down to 12.
  for (int64_t layer : {0, 3}) {
    b.Case(absl::StrFormat("prefill/pyramidkv/kvpress-clip-layer-%d", layer), layered,
           absl::StrFormat("pyramidkv.md example 3: n 20, ratio 0.25, window 2, "
                           "beta 20: hi 29.25 clipped to 18, lo 12; layer %d of "
                           "4 keeps %d",
                           layer, 18 - 2 * layer),
           Kvpress(250000, 2, 20, layer, 4), "pk-20-w2");
  }
  // Example 4: the fallback rounds 3.5 to 4 where the plain ratio floors.
  b.Case("prefill/pyramidkv/kvpress-fallback", pyramid,
         "pyramidkv.md example 4: n 7, ratio 0.5, window 4: hi 3 below lo 4, "
         "the fallback keeps round(3.5) = 4 (the plain ratio keeps 3)",
         Kvpress(500000, 4, 20, 1, 3), "pk-7-w4");
  b.Case("prefill/pyramidkv/kvpress-one-layer", pyramid,
         "layers 1: steps 0, the one layer keeps hi = 30 of 40 (the plain "
         "ratio keeps 20)",
         Kvpress(500000, 4, 2, 0, 1), "pk-40-w4");
  // Example 5: floor-division steps 16 // 3 = 5: 18, 13, 8, 3 prefix kept.
  for (int64_t layer = 0; layer < 4; ++layer) {
    b.Case(absl::StrFormat("prefill/pyramidkv/factory-layer-%d", layer), layered,
           absl::StrFormat("pyramidkv.md example 5: budget 10, n 30, window 2 "
                           "outside, beta 4: steps 16 // 3 = 5, layer %d of 4 "
                           "keeps %d prefix positions and the window",
                           layer, 18 - 5 * layer),
           Factory(10, 2, 4, layer, 4), "pk-30-w2");
  }
  b.Case("prefill/pyramidkv/factory-below-twice-budget", {},
         "example 5 at n 15, below 2 x budget: layer 3 keeps budget 10 prefix "
         "positions as plain SnapKV does, not the pyramid's 3",
         Factory(10, 2, 4, 3, 4), "pk-15-w2");
  b.Case("prefill/pyramidkv/factory-below-capacity", {},
         "example 5 at n 11, below budget + window: nothing goes",
         Factory(10, 2, 4, 3, 4), "pk-11-w2");
  // Example 6: hi 18 clipped to n - w = 16, lo 4, steps 6.
  for (int64_t layer = 0; layer < 3; ++layer) {
    // Layer 1 keeps budget 10, as plain SnapKV does.
    b.Case(absl::StrFormat("prefill/pyramidkv/factory-clip-layer-%d", layer),
           layer == 1 ? std::vector<std::string>{"prefill.pyramid-layer"} : layered,
           absl::StrFormat("pyramidkv.md example 6: budget 10, n 22, window 6, "
                           "beta 4: hi 16, lo 4, layer %d of 3 keeps %d prefix "
                           "positions",
                           layer, 16 - 6 * layer),
           Factory(10, 6, 4, layer, 3), "pk-22-w6");
  }
  b.Case("prefill/pyramidkv/factory-zero-budget", layered,
         "budget 10, beta 20: lo = 10 // 20 = 0, hi 20, steps 10; the last of "
         "3 layers keeps 0 prefix positions: the window alone (38, 39)",
         Factory(10, 2, 20, 2, 3), "pk-40-w2");
  b.Case("prefill/pyramidkv/factory-one-layer", pyramid,
         "layers 1 (KVCache-Factory divides by zero): steps 0, the layer keeps "
         "hi = 20 - 2 = 18 prefix positions",
         Factory(10, 2, 4, 0, 1), "pk-30-w2");
  // The presets at their libraries' sizes.
  for (int64_t layer : {0, 3, 15, 29}) {
    b.Case(absl::StrFormat("prefill/pyramidkv/kvpress-preset-layer-%d", layer),
           {"preset.kvpress-0.5.5-pyramidkv", "prefill.pyramid"},
           absl::StrFormat("PyramidKVPress's defaults (window 64, beta 20), "
                           "ratio 0.5, 256 positions, layer %d of 30: hi 249.6 "
                           "clipped to 192, lo 64 (= the window: the check "
                           "holds), steps 128 / 29",
                           layer),
           Preset("snapkv", "kvpress-0.5.5-pyramidkv",
                  {{"ratio_ppm", 500000}, {"layer", layer}, {"layers", 30}}),
           "pk-256-w64");
  }
  for (int64_t layer : {0, 31}) {
    b.Case(absl::StrFormat("prefill/pyramidkv/factory-preset-layer-%d", layer),
           {"preset.kvcache-factory-pyramidkv", "prefill.pyramid"},
           absl::StrFormat("PyramidKVCluster with run_longbench.py's settings "
                           "(capacity 512, window 8), 1,100 positions, layer %d "
                           "of 32: lo 25, hi 983, steps 958 // 31 = 30, %d "
                           "prefix positions kept",
                           layer, 983 - 30 * layer),
           Preset("snapkv", "kvcache-factory-pyramidkv",
                  {{"layer", layer}, {"layers", 32}}),
           "pk-1100-w8");
  }
  // Several heads: each query head's set gets the layer's budget.
  b.Case("prefill/pyramidkv/factory-two-query-heads", {"prefill.pyramid", "heads.granularity"},
         "example 5's layer 1 with two query heads, granularity query_head: "
         "head 0 (rising) keeps 15..27, head 1 (falling) 0..12, each with the "
         "window 28, 29",
         P("snapkv", {{"budget", 10}, {"recent_window", 0}, {"prefill_only", 1},
                      {"pool_kernel", 1}, {"window_budget", 1}, {"obs_window", 2},
                      {"granularity", 2}, {"pyramid", 2}, {"pyramid_beta", 4},
                      {"layer", 1}, {"layers", 4}}),
         "pk-30-w2-two-heads");
  // Decode steps after the pyramid evict down to budget.
  b.Case("prefill/pyramidkv/decode-after-pyramid", {"prefill.pyramid"},
         "example 1's layer 0 keeps 30 at the prompt (budget 28 would keep "
         "28); the four decode steps evict down to budget 28, three and then "
         "one a step",
         P("snapkv", {{"budget", 28}, {"recent_window", 0}, {"pool_kernel", 1},
                      {"ratio_ppm", 500000}, {"obs_window", 4}, {"pyramid", 1},
                      {"pyramid_beta", 2}, {"layer", 0}, {"layers", 3}}),
         "pk-40-w4-decode");
  // Gaps the Python port's mutation testing found (each kills a mutant of
  // a rule above; budgets by the card's formulas).
  b.Case("prefill/pyramidkv/factory-two-layers", layered,
         "example 5 with layers 2: steps (18 - 2) // 1 = 16, layer 1 keeps 2 "
         "prefix positions",
         Factory(10, 2, 4, 1, 2), "pk-30-w2");
  b.Case("prefill/pyramidkv/factory-at-twice-budget", layered,
         "example 5 at n 20 = 2 x budget, layer 0: the pyramid applies "
         "(n < 2 x budget is false): hi 18 prefix positions, nothing goes",
         Factory(10, 2, 4, 0, 4), "pk-20-w2");
  b.Case("prefill/pyramidkv/factory-window-is-obs-window", {},
         "budget 2, obs_window 10, one query row, n 6: n < budget + obs_window, "
         "B = budget; the step's window is 1, so (6 - 1) - 2 = 3 go (w in the "
         "formula is obs_window, not the rows' window)",
         Factory(2, 10, 4, 1, 2), "pk-6-w1");
  b.Case("prefill/pyramidkv/kvpress-fallback-layer-0", pyramid,
         "example 4 at layer 0: the fallback's 4 (without it hi 3 would be "
         "kept)",
         Kvpress(500000, 4, 20, 0, 3), "pk-7-w4");
  b.Case("prefill/pyramidkv/kvpress-fallback-lo-below-window", {},
         "n 100, ratio 0.75, window 4, beta 20: lo 1.25 is below the window 4, "
         "the fallback keeps round(25) = 25 (the pyramid's layer 0 would keep "
         "49)",
         Kvpress(750000, 4, 20, 0, 3), "pk-100-w4");
  b.Case("prefill/pyramidkv/kvpress-a-is-not-u", {},
         "n 25, ratio 0.42, window 3, beta 1: u = 25 x 0.58 is 14.499999999999998 "
         "but a = (3 + u) - 3 is 14.5, which rounds half to even to 14",
         Kvpress(420000, 3, 1, 0, 1), "pk-25-w3");
  b.Case("prefill/pyramidkv/kvpress-fallback-at-least-one", {},
         "n 2, ratio 0.9, window 1: the fallback's round(0.19999999999999996) "
         "is 0, raised to 1",
         Kvpress(900000, 1, 20, 0, 1), "pk-2-w1");
  b.Case("prefill/pyramidkv/kvpress-clip-recomputes-lo", layered,
         "n 10, ratio 0.46, window 1, beta 3, layer 65 of 73: hi clipped to 9, "
         "lo = 2a - hi = 1.8000000000000007, and hi - 65 x steps is "
         "2.500000000000001, which rounds to 3",
         Kvpress(460000, 1, 3, 65, 73), "pk-10-w1");
  // A cache before the prompt: n counts it (pyramidkv.md#how-it-works).
  b.Case("prefill/pyramidkv/cache-before-prefill", {"prefill.pyramid"},
         "10 positions admitted by a decode step (prefill_only 1: kept), then "
         "a prefill of 30: n is 40, as in example 1, and layer 2 of 3 keeps "
         "10 (a prompt of 30 alone would keep 8)",
         Kvpress(500000, 4, 2, 2, 3), "pk-10-then-30-w4");
  // A trigger at the decode steps after the pyramid (spec/triggers.md).
  b.Case("prefill/pyramidkv/slack-after-pyramid", {"prefill.pyramid"},
         "example 1's layer 0 keeps 30 at the prompt; budget 28 with slack 2: "
         "the first decode step (31 kept) evicts down to 28, the next two "
         "evict nothing, the fourth (31) down to 28 again",
         P("snapkv", {{"budget", 28}, {"recent_window", 0}, {"pool_kernel", 1},
                      {"ratio_ppm", 500000}, {"obs_window", 4}, {"pyramid", 1},
                      {"pyramid_beta", 2}, {"layer", 0}, {"layers", 3},
                      {"slack", 2}}),
         "pk-40-w4-decode");
  // pyramid 0: beta, layer and layers change nothing.
  b.Case("prefill/pyramidkv/off-ignores-layers", {"defaults.decides"},
         "pyramid 0 with layer 2 of 3 and beta 2: the plain ratio, 20 of 40",
         P("snapkv", {{"recent_window", 0}, {"prefill_only", 1}, {"pool_kernel", 1},
                      {"ratio_ppm", 500000}, {"obs_window", 4}, {"pyramid_beta", 2},
                      {"layer", 2}, {"layers", 3}}),
         "pk-40-w4");
  // The rules (pyramidkv.md#parameters) and their order.
  const std::vector<std::string> refused = {"refusal.invalid-parameter"};
  b.Case("prefill/pyramidkv/refusal-layer-not-below-layers", refused,
         "layer 3 of layers 3: rule layer layers",
         P("snapkv", {{"layer", 3}, {"layers", 3}}), "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-layer-before-ratio", refused,
         "pyramid 1 without a ratio and layer 1 of 1: the layer rule first",
         P("snapkv", {{"pyramid", 1}, {"layer", 1}, {"layers", 1}}), "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-kvpress-without-ratio", refused,
         "pyramid 1 with ratio_ppm 0: rule pyramid ratio_ppm",
         P("snapkv", {{"recent_window", 0}, {"pyramid", 1}}), "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-factory-with-ratio", refused,
         "pyramid 2 with ratio_ppm 500000: rule pyramid ratio_ppm",
         P("snapkv", {{"recent_window", 0}, {"ratio_ppm", 500000},
                      {"window_budget", 1}, {"pyramid", 2}}),
         "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-factory-window-inside", refused,
         "pyramid 2 with window_budget 0: rule pyramid window_budget",
         P("snapkv", {{"pyramid", 2}}), "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-kvpress-window-outside", refused,
         "pyramid 1 with window_budget 1: rule pyramid window_budget",
         P("snapkv", {{"recent_window", 0}, {"ratio_ppm", 500000},
                      {"window_budget", 1}, {"pyramid", 1}}),
         "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-factory-recent-window", refused,
         "pyramid 2 with the default recent_window 16: rule pyramid "
         "recent_window",
         P("snapkv", {{"window_budget", 1}, {"pyramid", 2}}), "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-ratio-window-before-pyramid", refused,
         "pyramid 1 with a ratio and recent_window 16: the prefill rule "
         "(rule ratio_ppm recent_window) comes first",
         P("snapkv", {{"ratio_ppm", 500000}, {"pyramid", 1}}), "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-adaptive-before-pyramid", refused,
         "pyramid 2 with adaptive 1 and window_budget 1: rule adaptive "
         "window_budget comes first",
         P("snapkv", {{"adaptive", 1}, {"window_budget", 1}, {"pyramid", 2}}),
         "pk-40-w4");
  b.Case("prefill/pyramidkv/refusal-pyramid-before-blocks", refused,
         "pyramid 2, window_budget 0 and block 2: the pyramid's rule (rule "
         "pyramid window_budget) before the blocks'",
         P("snapkv", {{"budget", 4}, {"recent_window", 0}, {"block", 2},
                      {"pyramid", 2}}),
         "pk-40-w4");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
