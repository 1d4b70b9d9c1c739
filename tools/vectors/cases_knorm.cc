// Spec 0.16.0: keys in a scenario (spec/tensors.md) and the knorm policy
// (spec/policies/knorm.md): the card's worked examples, several KV heads
// under each granularity and aggregation, a prefill compressed by a ratio
// (kvpress's preset), binary64 sums of squares, longer runs from the Rng,
// every other policy over a scenario with keys, and the refusals.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cc/rng.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {
namespace {

using Keys = std::vector<float>;

// Two KV heads, two query heads, one step admitting 0 and 1
// (knorm.md#several-kv-heads).
Scenario TwoKvHeads(std::string id, uint32_t query_heads) {
  Scenario scenario = Explicit(
      std::move(id), {KeyStep(2, {Keys{3, 4, 0, 1}, Keys{0, 1, 6, 8}})});
  scenario = WithHeads(std::move(scenario), query_heads, 2);
  scenario.head_dim = 2;
  return scenario;
}

PolicyConfig Knorm(std::vector<Parameter> parameters) {
  return P("knorm", std::move(parameters));
}

}  // namespace

void AddKnormScenarios(SuiteBuilder& b) {
  b.Add(OneHeadKeys("kn-basic", {{3, 4}, {1, 0}, {0, 2}}));
  b.Add(OneHeadKeys("kn-window", {{3, 4}, {1, 0}, {6, 8}}));
  b.Add(OneHeadKeys("kn-tie", {{0, 1}, {1, 0}, {0, 0.5f}}));
  b.Add(OneHeadKeys("kn-zero", {{0, 0}, {-0.0f, -0.0f}, {-3, 4}, {3, -4}}));
  // (1, 2^-12): its square sum 1 + 2^-24 is exact in binary64 and ties
  // with (1, 0)'s 1 when rounded to binary32 (to even).
  b.Add(OneHeadKeys("kn-squares", {{1, 0}, {1, 0x1p-12f}, {0, 0.5f}}));
  {
    // A chunk over the budget: three positions in one step, one kept
    // before them.
    Scenario chunk = Explicit("kn-chunk", {KeyStep(1, {Keys{0, 1}}),
                                           KeyStep(3, {Keys{2, 0, 0, 0.25f, 1, 1}})});
    chunk.head_dim = 2;
    b.Add(std::move(chunk));
  }
  {
    // Attention rows that would decide h2o or tova: knorm ignores them.
    Scenario rows = OneHeadKeys("kn-rows", {{1, 0}, {0, 2}, {0, 1}, {0.5f, 0}});
    rows.steps[1].attention = Row{0.0f};
    rows.steps[2].attention = Row{0.0f, 1.0f};
    rows.steps[3].attention = Row{1.0f, 0.0f, 0.0f};
    b.Add(std::move(rows));
  }
  b.Add(TwoKvHeads("kn-two-kv", 2));
  b.Add(TwoKvHeads("kn-two-kv-four-q", 4));
  {
    // knorm.md#at-prefill: a prefill of 4 (one query row), then a decode step.
    ScenarioStep prefill = QueryRows(4, {Row{0.25f, 0.25f, 0.25f, 0.25f}});
    prefill.keys = {Keys{1, 0, 0, 3, 2, 0, 0, 0}};
    Scenario scenario =
        Explicit("kn-prefill", {std::move(prefill), KeyStep(1, {Keys{9, 9}})});
    scenario.head_dim = 2;
    b.Add(std::move(scenario));
  }
  b.Add(DrawnKeys("kn-drawn-1", 40, 1, 1, 4, 1601));
  {
    // Past the default budget of 512: a step of 520 positions, then 4
    // decode steps, head_dim 1, keys from the Rng (seed 1605).
    Scenario long_run = DrawnKeys("kn-long", 5, 1, 1, 1, 1605);
    for (ScenarioStep& step : long_run.steps) {
      step.attention.reset();
      step.admit = 1;
    }
    long_run.steps[0].admit = 520;
    Rng rng(1605);
    for (ScenarioStep& step : long_run.steps) {
      step.keys[0].resize(step.admit);
      for (float& k : step.keys[0]) {
        k = static_cast<float>(static_cast<int64_t>(rng.Uniform(2047)) - 1023) / 1024.0f;
      }
    }
    b.Add(std::move(long_run));
  }
  b.Add(DrawnKeys("kn-drawn-gqa", 40, 4, 2, 8, 1602));
  {
    // A prefill of 24 positions from the Rng, four query heads in two
    // groups, one query row per head, then 4 decode steps.
    Scenario prompt = DrawnKeys("kn-prompt", 5, 4, 2, 4, 1603);
    prompt.steps[0].admit = 24;
    Rng rng(1604);
    for (Keys& keys : prompt.steps[0].keys) {
      keys.resize(24 * 4);
      for (float& k : keys) {
        k = static_cast<float>(static_cast<int64_t>(rng.Uniform(2047)) - 1023) / 1024.0f;
      }
    }
    prompt.steps[0].heads.clear();
    prompt.steps[0].attention.reset();
    for (uint32_t h = 0; h < 4; ++h) prompt.steps[0].queries.push_back(Row(24, 1.0f / 24));
    // The decode steps' rows follow the prompt's 24 positions.
    uint32_t admitted = 24;
    for (size_t t = 1; t < prompt.steps.size(); ++t) {
      for (Row& row : prompt.steps[t].heads) row.assign(admitted, 0.5f);
      admitted += prompt.steps[t].admit;
    }
    b.Add(std::move(prompt));
  }
  // Refusals (tensors.md#checks).
  {
    Scenario s = OneHeadKeys("tn-dim-zero", {{1, 0}});
    s.head_dim = 0;
    b.Add(std::move(s));
    // head_dim 1024, the top of the range: accepted.
    Scenario top = Explicit("kn-dim-1024", {KeyStep(1, {Keys(1024, 0.5f)}),
                                            KeyStep(1, {Keys(1024, 0.25f)})});
    top.head_dim = 1024;
    b.Add(std::move(top));
    // A one-set policy (window) over keys of 2 KV heads (spec/heads.md:
    // one kept set, whatever Hkv): two lists a step.
    Scenario gqa = Explicit("kn-gqa-one-set", {KeyStep(2, {Keys{1, 0, 0, 1}, Keys{2, 0, 0, 2}}),
                                               KeyStep(1, {Keys{1, 1}, Keys{3, 3}})});
    gqa = WithHeads(std::move(gqa), 4, 2);
    gqa.head_dim = 2;
    b.Add(std::move(gqa));
    Scenario big = OneHeadKeys("tn-dim-1025", {{1, 0}});
    big.head_dim = 1025;
    b.Add(std::move(big));
    Scenario traced = Traced("tn-dim-trace", CanonicalTrace(4));
    traced.head_dim = 2;
    b.Add(std::move(traced));
    Scenario lists = OneHeadKeys("tn-lists", {{1, 0}, {1, 0}});
    lists.steps[1].keys.push_back({1, 0});
    b.Add(std::move(lists));
    Scenario length = OneHeadKeys("tn-length", {{1, 0}, {1, 0, 0}});
    b.Add(std::move(length));
    Scenario undeclared = OneHeadKeys("tn-undeclared", {{1, 0}});
    undeclared.head_dim.reset();
    b.Add(std::move(undeclared));
    Scenario empty = OneHeadKeys("tn-empty-entry", {{}});
    empty.head_dim.reset();
    b.Add(std::move(empty));
    b.Add(OneHeadKeys("tn-nan", {{1, 0}, {0, kNan}}));
    b.Add(OneHeadKeys("tn-inf", {{-kInf, 0}}));
    // A bad row length and bad keys in one step: the row is reported.
    Scenario both = OneHeadKeys("tn-row-then-keys", {{1, 0}, {1, 0, 0}});
    both.steps[1].attention = Row{0.5f, 0.5f};
    b.Add(std::move(both));
    // A NaN weight and a NaN key in one step: the weight is reported.
    Scenario values = OneHeadKeys("tn-weight-then-key", {{1, 0}, {kNan, 0}});
    values.steps[1].attention = Row{kNan};
    b.Add(std::move(values));
  }
}

void AddKnormCases(SuiteBuilder& b) {
  b.Case("knorm/basic/largest-norm-goes", {},
         "knorm.md#how-it-works: keys (3, 4), (1, 0), (0, 2) score -5, -1, "
         "-2; budget 2: position 0 goes",
         Knorm({{"budget", 2}}), "kn-basic");
  b.Case("knorm/basic/recent-window-protects", {"recent-window.protected"},
         "knorm.md#how-it-works: (6, 8) third (-10) with recent_window 1 is "
         "protected: position 0 goes",
         Knorm({{"budget", 2}, {"recent_window", 1}}), "kn-window");
  b.Case("knorm/basic/no-recent-window", {},
         "as knorm/basic/recent-window-protects with recent_window 0: "
         "position 2 (-10) goes",
         Knorm({{"budget", 2}}), "kn-window");
  b.Case("knorm/ties/equal-norms-evict-lower", {"tie.lower-position"},
         "knorm.md#tie-breaking: (0, 1) and (1, 0) both score -1; budget 2: "
         "position 0 goes",
         Knorm({{"budget", 2}}), "kn-tie");
  b.Case("knorm/basic/zero-key-scores-plus-zero", {"tie.lower-position"},
         "knorm.md#how-it-works: (0, 0) and (-0, -0) score +0.0 (the cut "
         "shows +0.0, never -0.0); budget 1: 0 goes at step 1 (a tie), 2 "
         "(-5) and 3 (-5) at steps 2 and 3",
         Knorm({{"budget", 1}}), "kn-zero");
  b.Case("knorm/binary64/squares-in-binary64", {},
         "knorm.md#how-it-works: (1, 2^-12) has the square sum 1 + 2^-24 "
         "in binary64, above (1, 0)'s 1; budget 2: position 1 goes (a "
         "binary32 sum ties them and evicts 0)",
         Knorm({{"budget", 2}}), "kn-squares");
  b.Case("knorm/basic/chunk", {},
         "a chunk of three over budget 2: keys (0, 1), then (2, 0), "
         "(0, 0.25), (1, 1): positions 1 (-2) and 3 (-sqrt 2) go",
         Knorm({{"budget", 2}}), "kn-chunk");
  b.Case("knorm/basic/rows-ignored", {"tie.lower-position"},
         "tensors.md#policies-that-read-keys: attention rows are checked and "
         "ignored; budget 2: 1 (-2) goes at step 2, then 0 (-1, tied with 2) "
         "at step 3",
         Knorm({{"budget", 2}}), "kn-rows");
  b.Case("knorm/heads/layer-mean", {"heads.aggregation"},
         "knorm.md#several-kv-heads: one layer set over two KV heads, "
         "scores (-5, -1) and (-1, -10); mean -3 and -5.5: position 1 goes",
         Knorm({{"budget", 1}, {"granularity", 0}, {"aggregation", 0}}),
         "kn-two-kv");
  b.Case("knorm/heads/layer-max-tie", {"heads.aggregation", "tie.lower-position"},
         "knorm.md#several-kv-heads: max combines both to -1, a tie: "
         "position 0 goes",
         Knorm({{"budget", 1}, {"granularity", 0}, {"aggregation", 1}}),
         "kn-two-kv");
  b.Case("knorm/heads/layer-sum", {},
         "knorm.md#several-kv-heads: sum -6 and -11: position 1 goes",
         Knorm({{"budget", 1}, {"granularity", 0}, {"aggregation", 2}}),
         "kn-two-kv");
  b.Case("knorm/heads/kv-head-sets", {"heads.granularity"},
         "knorm.md#several-kv-heads: one set per KV head; set 0 evicts 0 "
         "(-5), set 1 evicts 1 (-10)",
         Knorm({{"budget", 1}}), "kn-two-kv");
  b.Case("knorm/heads/query-head-sets", {"heads.granularity"},
         "four query heads in two groups, granularity query_head: heads 0 "
         "and 1 rank by KV head 0 (evict 0), heads 2 and 3 by KV head 1 "
         "(evict 1)",
         Knorm({{"budget", 1}, {"granularity", 2}}), "kn-two-kv-four-q");
  b.Case("knorm/heads/layer-four-query-heads-mean", {"defaults.decides"},
         "four query heads over two KV heads in one layer set: the mean of "
         "the 2 KV heads' scores, -3 and -5.5: position 1 goes "
         "(knorm.md#several-kv-heads)",
         Knorm({{"budget", 1}, {"granularity", 0}}), "kn-two-kv-four-q");
  // Each parameter's default decides a case (spec/vectors.md#defaults);
  // aggregation's, with a layer set, in knorm/heads/layer-four-query-heads-mean.
  b.Case("knorm/defaults/drawn-gqa", {"defaults.decides"},
         "budget 5, every other parameter at its default, over "
         "knorm/decode/drawn-gqa's scenario",
         Knorm({{"budget", 5}}), "kn-drawn-gqa");
  b.Case("knorm/defaults/prompt", {"defaults.decides"},
         "budget 20, every other parameter at its default, over the "
         "24-position prompt of prefill/knorm/kvpress-ratio-*: the prefill "
         "evicts by budget (ratio_ppm 0)",
         Knorm({{"budget", 20}}), "kn-prompt");
  b.Case("knorm/defaults/long", {"defaults.decides"},
         "every parameter at its default (budget 512) over 524 positions, "
         "the first 520 in one step",
         Knorm({}), "kn-long");
  b.Case("knorm/decode/drawn", {},
         "40 steps of 1 to 3 positions, head_dim 4, keys from the Rng (seed "
         "1601), rows on odd steps; budget 6, recent_window 2",
         Knorm({{"budget", 6}, {"recent_window", 2}}), "kn-drawn-1");
  b.Case("knorm/decode/drawn-gqa", {},
         "40 steps, 4 query heads over 2 KV heads, head_dim 8 (seed 1602); "
         "budget 5, kv_head sets",
         Knorm({{"budget", 5}}), "kn-drawn-gqa");
  b.Case("knorm/decode/drawn-gqa-layer-max", {},
         "as knorm/decode/drawn-gqa in one layer set, max over the 2 KV heads",
         Knorm({{"budget", 5}, {"granularity", 0}, {"aggregation", 1}}),
         "kn-drawn-gqa");
  b.Case("prefill/knorm/ratio", {"prefill.ratio"},
         "knorm.md#at-prefill: a prefill of 4, ratio_ppm 500000: budget 2; "
         "positions 1 (-3) and 2 (-2) go; the decode step after it evicts "
         "nothing (prefill_only 1)",
         Knorm({{"budget", 1}, {"prefill_only", 1}, {"ratio_ppm", 500000}}),
         "kn-prefill");
  for (const int64_t ratio : {250000, 500000, 750000}) {
    b.Case(absl::StrFormat("prefill/knorm/kvpress-ratio-%d", ratio / 10000),
           {"preset.kvpress-0.5.5"},
           absl::StrFormat("knorm:preset=kvpress-0.5.5 (KnormPress) at ratio "
                           "%g over a 24-position prompt, 4 query heads in 2 "
                           "groups, head_dim 4; decode steps never evict",
                           ratio / 1e6),
           Preset("knorm", "kvpress-0.5.5", {{"ratio_ppm", ratio}}),
           "kn-prompt");
  }
  // Every other policy runs a scenario with keys as without them.
  b.Case("tensors/other-policies/tova", {},
         "tensors.md#policies-that-read-keys: tova over a scenario with keys "
         "and rows; the keys change nothing",
         P("tova", {{"budget", 6}, {"recent_window", 2}}), "kn-drawn-1");
  b.Case("tensors/other-policies/window", {},
         "window over a scenario with keys: the keys change nothing",
         P("window", {{"budget", 3}}), "kn-basic");
  b.Case("tensors/other-policies/h2o-gqa", {},
         "h2o over a scenario with keys, 4 query heads in 2 groups",
         P("h2o", {{"budget", 5}, {"recent_window", 1}}), "kn-drawn-gqa");
  b.Case("tensors/bounds/head-dim-1024", {},
         "tensors.md#checks: head_dim 1024, the top of [1, 1024], is "
         "accepted; knorm budget 1: keys of norm 16 then 8: position 1 "
         "(-8) stays, 0 (-16) goes",
         Knorm({{"budget", 1}}), "kn-dim-1024");
  b.Case("tensors/other-policies/window-one-set-gqa", {},
         "window over 4 query heads in 2 groups with keys: one kept set, "
         "two key lists a step (Hkv, not 1); budget 2: position 0 goes",
         P("window", {{"budget", 2}}), "kn-gqa-one-set");
  // Refusals.
  const std::vector<std::string> heads = {"refusal.invalid-heads"};
  b.Case("tensors/refusal/head-dim-zero", heads,
         "tensors.md#checks: head_dim 0 is outside [1, 1024]: INVALID_HEADS "
         "range head_dim at step -1",
         Knorm({{"budget", 2}}), "tn-dim-zero");
  b.Case("tensors/refusal/head-dim-1025", heads,
         "tensors.md#checks: head_dim 1025: INVALID_HEADS range head_dim",
         P("window", {{"budget", 2}}), "tn-dim-1025");
  b.Case("tensors/refusal/head-dim-beside-trace", {"refusal.invalid-trace"},
         "tensors.md#checks: head_dim beside a trace: INVALID_TRACE rule "
         "head_dim trace at step -1",
         P("window", {{"budget", 2}}), "tn-dim-trace");
  b.Case("tensors/refusal/knorm-without-keys", heads,
         "tensors.md#checks: knorm over a scenario without head_dim: "
         "INVALID_HEADS range head_dim at step -1",
         Knorm({{"budget", 2}}), "one-step");
  const std::vector<std::string> length = {"refusal.attention-length"};
  b.Case("tensors/refusal/key-lists", length,
         "tensors.md#checks: two key lists for one KV head at step 1: "
         "ATTENTION_LENGTH length keys",
         Knorm({{"budget", 2}}), "tn-lists");
  b.Case("tensors/refusal/key-length", length,
         "tensors.md#checks: 3 values for admit 1 x head_dim 2 at step 1: "
         "ATTENTION_LENGTH length keys",
         P("tova", {{"budget", 2}, {"recent_window", 0}}), "tn-length");
  b.Case("tensors/refusal/keys-without-head-dim", length,
         "tensors.md#checks: keys in a scenario without head_dim: "
         "ATTENTION_LENGTH length keys at step 0",
         P("window", {{"budget", 2}}), "tn-undeclared");
  b.Case("tensors/refusal/empty-entry-without-head-dim", length,
         "tensors.md#checks: one empty key list in a scenario without "
         "head_dim is an entry: ATTENTION_LENGTH length keys at step 0",
         P("window", {{"budget", 2}}), "tn-empty-entry");
  const std::vector<std::string> value = {"refusal.attention-value"};
  b.Case("tensors/refusal/key-nan", value,
         "tensors.md#checks: a NaN key entry at step 1: ATTENTION_VALUE "
         "value keys",
         Knorm({{"budget", 2}}), "tn-nan");
  b.Case("tensors/refusal/key-infinite", value,
         "tensors.md#checks: -infinity at step 0: ATTENTION_VALUE value keys "
         "(negative finite entries and -0.0 are accepted)",
         P("window", {{"budget", 2}}), "tn-inf");
  b.Case("tensors/refusal/row-length-before-keys", length,
         "harness.md#refusals: a row of the wrong length and keys of the "
         "wrong length at step 1: the row is reported (length attention)",
         Knorm({{"budget", 2}}), "tn-row-then-keys");
  b.Case("tensors/refusal/weight-before-key", value,
         "harness.md#refusals: a NaN weight and a NaN key at step 1: the "
         "weight is reported (value attention)",
         Knorm({{"budget", 2}}), "tn-weight-then-key");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
