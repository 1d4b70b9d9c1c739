// Spec 0.17.0: the keydiff policy (spec/policies/keydiff.md), kvpress's
// KeyDiffPress: the card's worked examples, a zero key, several KV heads
// under each granularity and aggregation, a prefill compressed by a ratio
// (kvpress's preset), longer runs over knorm's drawn scenarios (their keys
// from the Rng), and its refusal without keys.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {
namespace {

using Keys = std::vector<float>;

// Two KV heads over `query_heads` query heads, one step admitting three
// positions (keydiff.md#several-kv-heads).
Scenario TwoKvHeads(std::string id, uint32_t query_heads) {
  Scenario scenario = Explicit(
      std::move(id), {KeyStep(3, {Keys{1, 0, 0, 1, 2, 1}, Keys{2, 1, 1, 2, -1, 1}})});
  scenario = WithHeads(std::move(scenario), query_heads, 2);
  scenario.head_dim = 2;
  return scenario;
}

PolicyConfig KeyDiff(std::vector<Parameter> parameters) {
  return P("keydiff", std::move(parameters));
}

}  // namespace

void AddKeyDiffScenarios(SuiteBuilder& b) {
  b.Add(OneHeadKeys("kd-basic", {{1, 0}, {0, 2}, {3, 0}}));
  b.Add(OneHeadKeys("kd-window", {{1, 0}, {0, 1}, {1, 0.125f}}));
  b.Add(OneHeadKeys("kd-move", {{1, 0}, {0, 1}, {0, 1}, {1, 0}}));
  b.Add(OneHeadKeys("kd-zero", {{0, 0}, {1, 0}, {1, 0}}));
  b.Add(OneHeadKeys("kd-all-zero", {{0, 0}, {0, -0.0f}}));
  b.Add(TwoKvHeads("kd-two-kv", 2));
  b.Add(TwoKvHeads("kd-two-kv-four-q", 4));
  {
    // keydiff.md#at-prefill: a prefill of 4 (one query row), then a decode step.
    ScenarioStep prefill = QueryRows(4, {Row{0.25f, 0.25f, 0.25f, 0.25f}});
    prefill.keys = {Keys{1, 0, 2, 0, 0, 1, 1, 1}};
    Scenario scenario =
        Explicit("kd-prefill", {std::move(prefill), KeyStep(1, {Keys{9, 9}})});
    scenario.head_dim = 2;
    b.Add(std::move(scenario));
  }
}

void AddKeyDiffCases(SuiteBuilder& b) {
  b.Case("keydiff/basic/nearest-the-anchor-goes", {"tie.lower-position"},
         "keydiff.md#how-it-works: keys (1, 0), (0, 2), (3, 0), unit keys "
         "(1, 0), (0, 1), (1, 0), anchor (2, 1)/sqrt(5): scores -0.894.., "
         "-0.447.., -0.894..; budget 2: 0 and 2 tie, 0 goes",
         KeyDiff({{"budget", 2}}), "kd-basic");
  b.Case("keydiff/basic/recent-window-protects", {"recent-window.protected"},
         "keydiff.md#parameters: keys (1, 0), (0, 1), (1, 0.125): scores "
         "-0.870.., -0.491.., -0.925..; recent_window 1 protects 2 (its key "
         "still in the anchor): 0 goes",
         KeyDiff({{"budget", 2}, {"recent_window", 1}}), "kd-window");
  b.Case("keydiff/basic/no-recent-window", {},
         "keydiff.md#how-it-works: as keydiff/basic/recent-window-protects "
         "with recent_window 0: position 2 (-0.925..) goes",
         KeyDiff({{"budget", 2}}), "kd-window");
  b.Case("keydiff/basic/scores-move", {"tie.lower-position"},
         "keydiff.md#how-it-works: keys (1, 0), (0, 1), (0, 1), budget 2: 1 "
         "goes (tied with 2); then (1, 0): the anchor turns to (2, 1)/sqrt(5) "
         "and 0, the highest score a step before, goes (tied with 3)",
         KeyDiff({{"budget", 2}}), "kd-move");
  b.Case("keydiff/basic/zero-key", {},
         "keydiff.md#how-it-works: a zero key's unit is zeros, its score "
         "+0.0; keys (0, 0), (1, 0), (1, 0), anchor (1, 0): scores +0.0, -1, "
         "-1; budget 2: 1 goes",
         KeyDiff({{"budget", 2}}), "kd-zero");
  b.Case("keydiff/basic/all-keys-zero", {"tie.lower-position"},
         "keydiff.md#how-it-works: every key zero, the anchor zeros, every "
         "score +0.0; budget 1: 0 goes",
         KeyDiff({{"budget", 1}}), "kd-all-zero");
  b.Case("keydiff/basic/chunk", {},
         "a chunk of three over budget 2 (knorm/basic/chunk's keys (0, 1), "
         "then (2, 0), (0, 0.25), (1, 1)): the anchor over all four",
         KeyDiff({{"budget", 2}}), "kn-chunk");
  b.Case("keydiff/basic/rows-ignored", {},
         "tensors.md#policies-that-read-keys: attention rows are checked and "
         "ignored (knorm/basic/rows-ignored's scenario); budget 2",
         KeyDiff({{"budget", 2}}), "kn-rows");
  b.Case("keydiff/heads/layer-mean", {"heads.aggregation"},
         "keydiff.md#several-kv-heads: one layer set over two KV heads, "
         "scores (-0.794.., -0.607.., -0.982..) and (-0.691.., -0.986.., "
         "-0.466..); mean -0.743.., -0.796.., -0.724..; budget 2: 1 goes",
         KeyDiff({{"budget", 2}, {"granularity", 0}, {"aggregation", 0}}),
         "kd-two-kv");
  b.Case("keydiff/heads/layer-max", {"heads.aggregation"},
         "keydiff.md#several-kv-heads: max -0.691.., -0.607.., -0.466..: 0 "
         "goes",
         KeyDiff({{"budget", 2}, {"granularity", 0}, {"aggregation", 1}}),
         "kd-two-kv");
  b.Case("keydiff/heads/layer-sum", {},
         "keydiff.md#several-kv-heads: sum, as mean: 1 goes",
         KeyDiff({{"budget", 2}, {"granularity", 0}, {"aggregation", 2}}),
         "kd-two-kv");
  b.Case("keydiff/heads/kv-head-sets", {"heads.granularity"},
         "keydiff.md#several-kv-heads: one set per KV head, each with its own "
         "anchor: set 0 evicts 2 (-0.982..), set 1 evicts 1 (-0.986..)",
         KeyDiff({{"budget", 2}}), "kd-two-kv");
  b.Case("keydiff/heads/query-head-sets", {"heads.granularity"},
         "four query heads in two groups, granularity query_head: heads 0 "
         "and 1 rank by KV head 0 (evict 2), heads 2 and 3 by KV head 1 "
         "(evict 1)",
         KeyDiff({{"budget", 2}, {"granularity", 2}}), "kd-two-kv-four-q");
  b.Case("keydiff/heads/layer-four-query-heads-mean", {"defaults.decides"},
         "four query heads over two KV heads in one layer set: the mean of "
         "the 2 KV heads' scores (aggregation's default): 1 goes",
         KeyDiff({{"budget", 2}, {"granularity", 0}}), "kd-two-kv-four-q");
  // Each parameter's default decides a case (spec/vectors.md#defaults).
  b.Case("keydiff/defaults/drawn-gqa", {"defaults.decides"},
         "budget 5, every other parameter at its default, over "
         "knorm/decode/drawn-gqa's scenario (4 query heads over 2 KV heads, "
         "head_dim 8)",
         KeyDiff({{"budget", 5}}), "kn-drawn-gqa");
  b.Case("keydiff/defaults/prompt", {"defaults.decides"},
         "budget 20, every other parameter at its default, over the "
         "24-position prompt of prefill/keydiff/kvpress-ratio-*",
         KeyDiff({{"budget", 20}}), "kn-prompt");
  b.Case("keydiff/defaults/long", {"defaults.decides"},
         "every parameter at its default (budget 512) over 524 positions, "
         "the first 520 in one step, head_dim 1: every unit key is +1, -1 or 0",
         KeyDiff({}), "kn-long");
  b.Case("keydiff/decode/drawn", {},
         "knorm/decode/drawn's 40 steps (head_dim 4, keys from the Rng); "
         "budget 6, recent_window 2",
         KeyDiff({{"budget", 6}, {"recent_window", 2}}), "kn-drawn-1");
  b.Case("keydiff/decode/drawn-gqa-layer-max", {},
         "knorm/decode/drawn-gqa's scenario in one layer set, max over the "
         "2 KV heads; budget 5",
         KeyDiff({{"budget", 5}, {"granularity", 0}, {"aggregation", 1}}),
         "kn-drawn-gqa");
  b.Case("keydiff/decode/drawn-gqa-layer-sum", {},
         "as keydiff/decode/drawn-gqa-layer-max with sum",
         KeyDiff({{"budget", 5}, {"granularity", 0}, {"aggregation", 2}}),
         "kn-drawn-gqa");
  b.Case("prefill/keydiff/ratio", {"prefill.ratio"},
         "keydiff.md#at-prefill: a prefill of 4, ratio_ppm 500000: budget "
         "2; positions 3 (-0.975..) and 0 (-0.845.., tied with 1) go; the "
         "decode step after it evicts nothing (prefill_only 1)",
         KeyDiff({{"budget", 1}, {"prefill_only", 1}, {"ratio_ppm", 500000}}),
         "kd-prefill");
  for (const int64_t ratio : {250000, 500000, 750000}) {
    b.Case(absl::StrFormat("prefill/keydiff/kvpress-ratio-%d", ratio / 10000),
           {"preset.kvpress-0.5.5"},
           absl::StrFormat("keydiff:preset=kvpress-0.5.5 (KeyDiffPress) at "
                           "ratio %g over a 24-position prompt, 4 query heads "
                           "in 2 groups, head_dim 4; decode steps never evict",
                           ratio / 1e6),
           Preset("keydiff", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "kn-prompt");
  }
  b.Case("tensors/refusal/keydiff-without-keys", {"refusal.invalid-heads"},
         "tensors.md#checks: keydiff over a scenario without head_dim: "
         "INVALID_HEADS range head_dim at step -1",
         KeyDiff({{"budget", 2}}), "one-step");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
