// Spec 0.18.0: values in a scenario (spec/tensors.md) and the lagkv policy
// (spec/policies/lagkv.md), kvpress's LagKVPress: the card's worked
// examples, several KV heads under each granularity and aggregation,
// decode runs whose partitions move with the cache, a prompt compressed by a
// ratio (kvpress's preset), every default deciding, the values' refusals and
// their order beside the keys'.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {
namespace {

using Vectors = std::vector<float>;

// One step admitting every position, d = e = 2, one KV head per entry
// (as many query heads as KV heads unless `query_heads` says more).
Scenario OneStep(std::string id, std::vector<Vectors> keys,
                 std::vector<Vectors> values, uint32_t query_heads = 0) {
  const uint32_t admit = static_cast<uint32_t>(keys[0].size() / 2);
  const uint32_t kv_heads = static_cast<uint32_t>(keys.size());
  ScenarioStep step = KeyStep(admit, std::move(keys));
  step.values = std::move(values);
  Scenario scenario = Explicit(std::move(id), {std::move(step)});
  if (kv_heads > 1 || query_heads > 1) {
    scenario = WithHeads(std::move(scenario),
                         query_heads == 0 ? kv_heads : query_heads, kv_heads);
  }
  scenario.head_dim = 2;
  scenario.value_dim = 2;
  return scenario;
}

// One head, d = e = 2, one position a step with these keys and values.
Scenario OneHeadSteps(std::string id, const std::vector<Vectors>& keys,
                      const std::vector<Vectors>& values) {
  Scenario scenario = OneHeadKeys(std::move(id), keys);
  for (size_t t = 0; t < values.size(); ++t) scenario.steps[t].values = {values[t]};
  scenario.value_dim = 2;
  return scenario;
}

// lagkv.md#how-it-works, the worked example's keys and values.
const Vectors kKeys = {9, 9, 0, 1, 0.5f, 0.5f, 0, 0, 1, 1};
const Vectors kFlatValues = {9, 9, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 1, 1};
const Vectors kEqualValues = {9, 9, 1, 1, 0, 2, 0, 0, 2, 2};

PolicyConfig LagKv(std::vector<Parameter> parameters) {
  return P("lagkv", std::move(parameters));
}

}  // namespace

void AddLagKvScenarios(SuiteBuilder& b) {
  b.Add(OneStep("lk-basic", {kKeys}, {kFlatValues}));
  b.Add(OneStep("lk-equal", {kKeys}, {kEqualValues}));
  b.Add(OneStep("lk-constant", {kKeys}, {Vectors{9, 9, 7, 2, -3, 0, 1, 0, 1, 2}}));
  b.Add(OneStep("lk-short", {Vectors{9, 9, 0, 1, 0.5f, 0.5f, 0, 0}},
                {Vectors{9, 9, 7, 2, -3, 0, 1, 0}}));
  b.Add(OneStep("lk-nine",
                {Vectors{0, 0, 0, 0, 0, 4, 0, 0, 1, 1, 0.5f, 0.5f, 0, 0, 1, 1, 0, 0}},
                {Vectors(18, 0.0f)}));
  b.Add(OneStep("lk-two-kv", {kKeys, kKeys}, {kFlatValues, kEqualValues}));
  // lagkv.md#several-kv-heads: lag 3, sinks 0, six positions, values all
  // (0, 0); KV head 0's keys rank positions 0, 1, 2 as 0, 1, 2, KV head
  // 1's as 2, 1, 0.
  b.Add(OneStep("lk-aggregation",
                {Vectors{0.5f, 0.5f, 0, 0.5f, 0, 1, 0, 0, 1, 1, 0, 0},
                 Vectors{0, 1, 0, 0.5f, 0.5f, 0.5f, 0, 0, 1, 1, 0, 0}},
                {Vectors(12, 0.0f), Vectors(12, 0.0f)}));
  {
    // tensors.md: keys and values on a prefill step that follows a decode
    // step (a cache before the prefill): two positions, then a prefill of
    // three with one query row.
    ScenarioStep prefill = QueryRows(3, {Row{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}});
    prefill.keys = {Vectors{0, 3, 1, 1, 2, 2}};
    prefill.values = {Vectors{1, 0, 0, 1, 1, 1}};
    ScenarioStep first = KeyStep(2, {Vectors{1, 0, 0, 0.5f}});
    first.values = {Vectors{0, 0, 1, 1}};
    Scenario scenario = Explicit("lk-cache-then-prefill", {std::move(first), std::move(prefill)});
    scenario.head_dim = 2;
    scenario.value_dim = 2;
    b.Add(std::move(scenario));
  }
  b.Add(OneStep("lk-two-kv-four-q", {kKeys, kKeys}, {kFlatValues, kEqualValues}, 4));
  {
    // One position a step, keys (i, i) and values (i, -i): with lag 1 every
    // reference channel is constant (lagkv.md#how-it-works, step 3).
    std::vector<Vectors> keys, values;
    for (int i = 0; i < 5; ++i) {
      const float x = static_cast<float>(i);
      keys.push_back({x, x});
      values.push_back({x, -x});
    }
    b.Add(OneHeadSteps("lk-steps", keys, values));
  }
  // Drawn runs: knorm's drawn keys with values from the Rng.
  b.Add(WithDrawnValues(DrawnKeys("lk-drawn-1", 40, 1, 1, 4, 1801), 4, 1802));
  b.Add(WithDrawnValues(DrawnKeys("lk-drawn-gqa", 40, 4, 2, 8, 1803), 6, 1804));
  {
    // A prefill of 64 positions, four query heads in two groups, head_dim 4,
    // value_dim 4, one query row per head, then 4 decode steps: with
    // sinks 4 and lag 16, two judged partitions and 28 newest slots.
    Scenario prompt = DrawnKeys("lk-prompt", 5, 4, 2, 4, 1805);
    prompt.steps[0].admit = 64;
    Rng rng(1806);
    for (Vectors& keys : prompt.steps[0].keys) {
      keys.resize(64 * 4);
      for (float& k : keys) k = DrawnEntry(rng);
    }
    prompt.steps[0].heads.clear();
    prompt.steps[0].attention.reset();
    for (uint32_t h = 0; h < 4; ++h) prompt.steps[0].queries.push_back(Row(64, 1.0f / 64));
    uint32_t admitted = 64;
    for (size_t t = 1; t < prompt.steps.size(); ++t) {
      for (Row& row : prompt.steps[t].heads) row.assign(admitted, 0.5f);
      admitted += prompt.steps[t].admit;
    }
    b.Add(WithDrawnValues(std::move(prompt), 4, 1807));
  }
  {
    // Past every default (budget 512, sinks 4, lag 128): 600 positions in
    // one step, then 4 decode steps of one, head_dim 2, value_dim 3.
    Scenario long_run = DrawnKeys("lk-long", 5, 1, 1, 2, 1808);
    Rng rng(1809);
    for (size_t t = 0; t < long_run.steps.size(); ++t) {
      ScenarioStep& step = long_run.steps[t];
      step.attention.reset();
      step.admit = t == 0 ? 600 : 1;
      step.keys[0].resize(size_t{step.admit} * 2);
      for (float& k : step.keys[0]) k = DrawnEntry(rng);
    }
    b.Add(WithDrawnValues(std::move(long_run), 3, 1810));
  }
  {
    // value_dim 1024, the top of the range: accepted.
    ScenarioStep step = KeyStep(2, {Vectors{1, 0, 0, 1}});
    step.values = {Vectors(2 * 1024, 0.0f)};
    step.values[0][0] = 1.0f;
    step.values[0][1024 + 1] = -2.0f;
    Scenario wide = Explicit("vl-dim-1024", {std::move(step)});
    wide.head_dim = 2;
    wide.value_dim = 1024;
    b.Add(std::move(wide));
  }
  // Refusals and their order (tensors.md#checks).
  {
    Scenario zero = OneStep("vl-dim-zero", {kKeys}, {kFlatValues});
    zero.value_dim = 0;
    b.Add(std::move(zero));
    Scenario wide = OneStep("vl-dim-1025", {kKeys}, {kFlatValues});
    wide.value_dim = 1025;
    b.Add(std::move(wide));
    Scenario traced = Traced("vl-dim-trace", CanonicalTrace(4));
    traced.value_dim = 2;
    b.Add(std::move(traced));
    Scenario keys_only = OneHeadKeys("vl-keys-only", {{1, 0}, {0, 1}, {1, 1}});
    b.Add(std::move(keys_only));
    Scenario narrow_keys = Explicit("vl-head-dim-1", {KeyStep(3, {Vectors{1, 2, 3}})});
    narrow_keys.steps[0].values = {Vectors{1, 2, 3, 4, 5, 6}};
    narrow_keys.head_dim = 1;
    narrow_keys.value_dim = 2;
    b.Add(std::move(narrow_keys));
    Scenario narrow_values = OneStep("vl-value-dim-1", {kKeys}, {Vectors{1, 2, 3, 4, 5}});
    narrow_values.value_dim = 1;
    b.Add(std::move(narrow_values));
    Scenario lists = OneHeadSteps("vl-lists", {{1, 0}, {0, 1}}, {{1, 0}, {0, 1}});
    lists.steps[1].values.push_back({1, 0});
    b.Add(std::move(lists));
    b.Add(OneHeadSteps("vl-length", {{1, 0}, {0, 1}}, {{1, 0}, {0, 1, 2}}));
    Scenario undeclared = OneHeadKeys("vl-undeclared", {{1, 0}, {0, 1}});
    undeclared.steps[0].values = {Vectors{1, 0}};
    b.Add(std::move(undeclared));
    b.Add(OneHeadSteps("vl-nan", {{1, 0}, {0, 1}}, {{1, 0}, {0, kNan}}));
    b.Add(OneHeadSteps("vl-inf", {{1, 0}}, {{kInf, 0}}));
    // A bad key and a short value list in one step: both shapes come
    // before any entry, so the values' length is reported.
    b.Add(OneHeadSteps("vl-key-entry-then-value-length", {{1, 0}, {kNan, 1}},
                       {{1, 0}, {0}}));
    // A NaN key and a NaN value: the key is reported.
    b.Add(OneHeadSteps("vl-key-then-value", {{1, 0}, {kNan, 1}}, {{1, 0}, {kNan, 0}}));
    // Keys of the wrong length and values of the wrong length: the keys.
    b.Add(OneHeadSteps("vl-key-length-first", {{1, 0}, {1}}, {{1, 0}, {0}}));
  }
}

void AddLagKvCases(SuiteBuilder& b) {
  b.Case("lagkv/basic/flat-key-goes", {},
         "lagkv.md#how-it-works: sinks 1, lag 2, m = 5: positions 1 and 2 "
         "judged against 3 and 4; key spreads 0.7071.. and 0 (softmax "
         "0.6697.., 0.3302..), value spreads 0 and 0 (0.5 each); judgements "
         "0.5848.., 0.4151..: ranks 1 and 0, scores 0.5 and 0; budget 4: 2 "
         "goes",
         LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}), "lk-basic");
  b.Case("lagkv/basic/equal-judgement-older-ranks-lower", {},
         "lagkv.md#how-it-works: the values' softmax 0.3302.., 0.6697.., the "
         "keys' the other way round: both judgements 0.5; position 1, the "
         "older, ranks 0 and goes",
         LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}), "lk-equal");
  b.Case("lagkv/basic/constant-channel", {},
         "lagkv.md#how-it-works, step 3: value channel 0 is 1 in both "
         "reference values, so it scales to +0.0 (kvpress divides by zero); "
         "spreads 0.7071.. and 0: position 2 goes",
         LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}), "lk-constant");
  b.Case("lagkv/basic/short-cache", {},
         "lagkv.md#how-it-works, step 1: m = 4 < sinks + 2 lag = 5: scores "
         "1, 0, 1/3, 2/3; budget 3: position 1 goes",
         LagKv({{"budget", 3}, {"sinks", 1}, {"lag", 2}}), "lk-short");
  b.Case("lagkv/basic/ranks-per-partition", {},
         "lagkv.md#how-it-works: sinks 0, lag 3, nine positions, values all "
         "(0, 0): partition 0's judgements 0.1930.., 0.1930.., 0.6138.., "
         "partition 1's 1/3 each; ranks give 0, 1/3, 2/3 in each; budget 7: "
         "0 and 3 go",
         LagKv({{"budget", 7}, {"sinks", 0}, {"lag", 3}}), "lk-nine");
  b.Case("lagkv/basic/cross-scoring", {},
         "lagkv.md#how-it-works, step 6: cross_scoring 1 scores the "
         "judgements: 0.1930.., 0.1930.., 0.6138.., 1/3 x 3, 1 x 3; budget 7: "
         "0 and 1 go",
         LagKv({{"budget", 7}, {"sinks", 0}, {"lag", 3}, {"cross_scoring", 1}}),
         "lk-nine");
  b.Case("lagkv/basic/cross-scoring-worked-example", {},
         "lagkv.md#how-it-works with cross_scoring 1: scores (0.6697.. + 0.5) "
         "/ 2 and (0.3302.. + 0.5) / 2 for positions 1 and 2; 2 goes",
         LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}, {"cross_scoring", 1}}),
         "lk-basic");
  b.Case("lagkv/basic/sinks-go-when-the-budget-is-smaller", {"tie.lower-position"},
         "lagkv.md#how-it-works: budget 1 over the worked example: the judged "
         "positions 2 (0) and 1 (0.5) go, then two of the three scored 1.0, "
         "the lower positions first (the sink 0, then 3): 4 stays",
         LagKv({{"budget", 1}, {"sinks", 1}, {"lag", 2}}), "lk-basic");
  b.Case("lagkv/decode/partitions-follow-the-cache", {"tie.lower-position"},
         "lagkv.md#how-it-works: sinks 0, lag 1, budget 2, one position a "
         "step: every reference is one vector, so every channel is constant "
         "and the judged slot 0 ranks 0; the oldest kept goes at each step",
         LagKv({{"budget", 2}, {"sinks", 0}, {"lag", 1}}), "lk-steps");
  b.Case("lagkv/heads/layer-mean", {"heads.aggregation", "tie.lower-position"},
         "lagkv.md#several-kv-heads: KV head 0 scores positions 0, 1, 2 as "
         "0, 1/3, 2/3, KV head 1 as 2/3, 1/3, 0; mean 1/3 for all three: 0 "
         "goes",
         LagKv({{"budget", 5}, {"sinks", 0}, {"lag", 3}, {"granularity", 0},
                {"aggregation", 0}}),
         "lk-aggregation");
  b.Case("lagkv/heads/layer-max", {"heads.aggregation"},
         "lagkv.md#several-kv-heads: max 2/3, 1/3, 2/3: 1 goes",
         LagKv({{"budget", 5}, {"sinks", 0}, {"lag", 3}, {"granularity", 0},
                {"aggregation", 1}}),
         "lk-aggregation");
  b.Case("lagkv/heads/layer-sum", {"tie.lower-position"},
         "lagkv.md#several-kv-heads: sum 2/3 for all three: 0 goes",
         LagKv({{"budget", 5}, {"sinks", 0}, {"lag", 3}, {"granularity", 0},
                {"aggregation", 2}}),
         "lk-aggregation");
  b.Case("lagkv/heads/aggregation-kv-head-sets", {},
         "lagkv.md#several-kv-heads: lagkv/heads/layer-mean's scenario, one "
         "set per KV head: set 0 evicts 0, set 1 evicts 2",
         LagKv({{"budget", 5}, {"sinks", 0}, {"lag", 3}}), "lk-aggregation");
  b.Case("lagkv/heads/kv-head-sets", {"heads.granularity"},
         "lagkv.md#several-kv-heads: one set per KV head: set 0 evicts 2, "
         "set 1 evicts 1",
         LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}}), "lk-two-kv");
  b.Case("lagkv/heads/query-head-sets", {"heads.granularity"},
         "four query heads in two groups, granularity query_head: heads 0 "
         "and 1 rank by KV head 0 (evict 2), heads 2 and 3 by KV head 1 "
         "(evict 1)",
         LagKv({{"budget", 4}, {"sinks", 1}, {"lag", 2}, {"granularity", 2}}),
         "lk-two-kv-four-q");
  // Longer runs: partitions move as the cache does.
  b.Case("lagkv/decode/drawn", {},
         "40 steps of 1 to 3 positions, head_dim 4 and value_dim 4 from the "
         "Rng; budget 12, sinks 2, lag 3",
         LagKv({{"budget", 12}, {"sinks", 2}, {"lag", 3}}), "lk-drawn-1");
  b.Case("lagkv/decode/drawn-cross-scoring", {},
         "as lagkv/decode/drawn with cross_scoring 1",
         LagKv({{"budget", 12}, {"sinks", 2}, {"lag", 3}, {"cross_scoring", 1}}),
         "lk-drawn-1");
  b.Case("lagkv/decode/drawn-gqa-layer-mean", {},
         "4 query heads over 2 KV heads, head_dim 8, value_dim 6, one layer "
         "set, mean; budget 10, sinks 1, lag 4",
         LagKv({{"budget", 10}, {"sinks", 1}, {"lag", 4}, {"granularity", 0}}),
         "lk-drawn-gqa");
  b.Case("lagkv/decode/drawn-gqa-layer-max", {},
         "as lagkv/decode/drawn-gqa-layer-mean with max",
         LagKv({{"budget", 10}, {"sinks", 1}, {"lag", 4}, {"granularity", 0},
                {"aggregation", 1}}),
         "lk-drawn-gqa");
  b.Case("lagkv/decode/drawn-gqa-kv-head-sets", {},
         "as lagkv/decode/drawn-gqa-layer-mean, one set per KV head",
         LagKv({{"budget", 10}, {"sinks", 1}, {"lag", 4}}), "lk-drawn-gqa");
  // Each parameter's default decides a case (spec/vectors.md#defaults).
  b.Case("lagkv/defaults/long", {"defaults.decides"},
         "every parameter at its default (budget 512, sinks 4, lag 128, "
         "cross_scoring 0, granularity 1, aggregation 0, prefill_only 0, "
         "ratio_ppm 0) over 600 positions in one step, then 4 decode steps",
         LagKv({}), "lk-long");
  b.Case("lagkv/defaults/drawn-gqa", {"defaults.decides"},
         "budget 10, sinks 1, lag 4 over lagkv/decode/drawn-gqa's scenario, "
         "every other parameter at its default",
         LagKv({{"budget", 10}, {"sinks", 1}, {"lag", 4}}), "lk-drawn-gqa");
  b.Case("lagkv/defaults/prompt", {"defaults.decides"},
         "budget 40, lag 16 over the 64-position prompt of "
         "prefill/lagkv/kvpress-ratio-*, every other parameter at its default",
         LagKv({{"budget", 40}, {"lag", 16}}), "lk-prompt");
  b.Case("prefill/lagkv/ratio", {"prefill.ratio"},
         "lagkv.md#at-prefill: the 64-position prompt, sinks 4, lag 16, "
         "ratio_ppm 250000: budget 48; decode steps never evict "
         "(prefill_only 1)",
         LagKv({{"budget", 1}, {"lag", 16}, {"prefill_only", 1},
                {"ratio_ppm", 250000}}),
         "lk-prompt");
  for (const int64_t ratio : {250000, 500000, 750000}) {
    b.Case(absl::StrFormat("prefill/lagkv/kvpress-ratio-%d", ratio / 10000),
           {"preset.kvpress-0.5.5"},
           absl::StrFormat("lagkv:preset=kvpress-0.5.5 (LagKVPress) with lag "
                           "16 at ratio %g over a 64-position prompt, 4 query "
                           "heads in 2 groups, head_dim 4, value_dim 4; decode "
                           "steps never evict",
                           ratio / 1e6),
           Preset("lagkv", "kvpress-0.5.5", {{"lag", 16}, {"ratio_ppm", ratio}}),
           "lk-prompt");
  }
  b.Case("tensors/values/cache-then-prefill", {},
         "tensors.md#what-a-policy-sees: keys and values on a prefill step "
         "after a decode step; knorm budget 3 evicts the two largest norms, "
         "positions 2 (-3) and 4 (-2.83..)",
         P("knorm", {{"budget", 3}}), "lk-cache-then-prefill");
  b.Case("tensors/values/lagkv-cache-then-prefill", {},
         "lagkv sinks 0, lag 2, budget 4 over the same: m = 5 >= 4, one judged "
         "partition (positions 0 and 1)",
         LagKv({{"budget", 4}, {"sinks", 0}, {"lag", 2}}), "lk-cache-then-prefill");
  // Every other policy runs a scenario with values as without them.
  b.Case("tensors/values/knorm-ignores-values", {},
         "tensors.md#policies-that-read-keys: knorm over keys and values; the "
         "values change nothing",
         P("knorm", {{"budget", 6}, {"recent_window", 2}}), "lk-drawn-1");
  b.Case("tensors/values/tova-ignores-values", {},
         "tova over a scenario with keys, values and rows",
         P("tova", {{"budget", 6}, {"recent_window", 2}}), "lk-drawn-1");
  b.Case("tensors/values/h2o-gqa", {},
         "tensors.md#policies-that-read-keys: h2o over 4 query heads in 2 "
         "groups with keys, values and rows: the values change nothing",
         P("h2o", {{"budget", 5}, {"recent_window", 1}}), "lk-drawn-gqa");
  b.Case("tensors/values/snapkv-gqa-layer", {},
         "snapkv over the same in one layer set: the values change nothing",
         P("snapkv", {{"budget", 6}, {"recent_window", 1}, {"obs_window", 2},
                      {"pool_kernel", 1}, {"granularity", 0}}),
         "lk-drawn-gqa");
  b.Case("tensors/bounds/value-dim-1024", {},
         "tensors.md#checks: value_dim 1024, the top of [1, 1024], is "
         "accepted; lagkv budget 1, sinks 0, lag 1 over two positions: "
         "position 0 judged against 1 (a one-vector reference, every channel "
         "constant) scores 0, 1 scores 1.0: position 0 goes",
         LagKv({{"budget", 1}, {"sinks", 0}, {"lag", 1}}), "vl-dim-1024");
  b.Case("tensors/values/window-gqa", {},
         "window over 4 query heads in 2 groups with keys and values",
         P("window", {{"budget", 5}}), "lk-drawn-gqa");
  // Refusals.
  const std::vector<std::string> heads = {"refusal.invalid-heads"};
  b.Case("tensors/refusal/value-dim-zero", heads,
         "tensors.md#checks: value_dim 0 is outside [1, 1024]: INVALID_HEADS "
         "range value_dim at step -1",
         LagKv({{"budget", 4}}), "vl-dim-zero");
  b.Case("tensors/refusal/value-dim-1025", heads,
         "tensors.md#checks: value_dim 1025: INVALID_HEADS range value_dim",
         P("window", {{"budget", 2}}), "vl-dim-1025");
  b.Case("tensors/refusal/value-dim-beside-trace", {"refusal.invalid-trace"},
         "tensors.md#checks: value_dim beside a trace: INVALID_TRACE rule "
         "value_dim trace at step -1",
         P("window", {{"budget", 2}}), "vl-dim-trace");
  b.Case("tensors/refusal/lagkv-without-values", heads,
         "tensors.md#checks: lagkv over keys without values: INVALID_HEADS "
         "range value_dim at step -1",
         LagKv({{"budget", 2}}), "vl-keys-only");
  b.Case("tensors/refusal/lagkv-without-keys", heads,
         "tensors.md#checks: lagkv over a scenario without head_dim: "
         "INVALID_HEADS range head_dim at step -1",
         LagKv({{"budget", 2}}), "one-step");
  b.Case("tensors/refusal/lagkv-head-dim-1", heads,
         "tensors.md#checks, check 5: lagkv needs head_dim 2 at least (a "
         "standard deviation with correction 1): INVALID_HEADS range "
         "head_dim at step -1",
         LagKv({{"budget", 2}}), "vl-head-dim-1");
  b.Case("tensors/refusal/lagkv-value-dim-1", heads,
         "tensors.md#checks, check 6: value_dim 1: INVALID_HEADS range "
         "value_dim at step -1",
         LagKv({{"budget", 2}}), "vl-value-dim-1");
  b.Case("tensors/bounds/value-dim-1-for-knorm", {},
         "tensors.md#checks: value_dim 1 is in range for a policy that reads "
         "no values; knorm budget 4 over the worked example's keys",
         P("knorm", {{"budget", 4}}), "vl-value-dim-1");
  const std::vector<std::string> length = {"refusal.attention-length"};
  b.Case("tensors/refusal/value-lists", length,
         "tensors.md#checks: two value lists for one KV head at step 1: "
         "ATTENTION_LENGTH length values",
         LagKv({{"budget", 2}}), "vl-lists");
  b.Case("tensors/refusal/value-length", length,
         "tensors.md#checks: 3 values for admit 1 x value_dim 2 at step 1: "
         "ATTENTION_LENGTH length values",
         P("window", {{"budget", 2}}), "vl-length");
  b.Case("tensors/refusal/values-without-value-dim", length,
         "tensors.md#checks: values in a scenario without value_dim: "
         "ATTENTION_LENGTH length values at step 0",
         P("knorm", {{"budget", 2}}), "vl-undeclared");
  b.Case("tensors/refusal/value-length-before-key-entry", length,
         "tensors.md#checks: a NaN key and a value list of the wrong length "
         "at step 1: both shapes come before any entry: length values",
         LagKv({{"budget", 2}}), "vl-key-entry-then-value-length");
  b.Case("tensors/refusal/key-length-before-value-length", length,
         "tensors.md#checks: keys and values of the wrong length at step 1: "
         "the keys are reported (length keys)",
         LagKv({{"budget", 2}}), "vl-key-length-first");
  const std::vector<std::string> value = {"refusal.attention-value"};
  b.Case("tensors/refusal/value-nan", value,
         "tensors.md#checks: a NaN value entry at step 1: ATTENTION_VALUE "
         "value values",
         LagKv({{"budget", 2}}), "vl-nan");
  b.Case("tensors/refusal/value-infinite", value,
         "tensors.md#checks: +infinity at step 0: ATTENTION_VALUE value "
         "values",
         P("window", {{"budget", 2}}), "vl-inf");
  b.Case("tensors/refusal/key-before-value", value,
         "tensors.md#checks: a NaN key and a NaN value at step 1: the key is "
         "reported (value keys)",
         LagKv({{"budget", 2}}), "vl-key-then-value");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
