// The cases of several heads (spec/heads.md, spec 0.5.0): rows per head,
// kept sets per head, combining heads, AdaKV's shared budgets.
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

}  // namespace

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
  // The same rule where no score is divided: exact at every precision
  // (spec/arithmetic.md#exact-cases), so a bfloat16 port is judged on it.
  b.Case("snapkv/heads/scores-then-combine-sum", {"heads.scores-then-combine"},
         "each head pools its own sums, then the sum: 0, 1 and 3 tie at 1.0 "
         "and 0 goes (pooling the summed row would evict 3)",
         P("snapkv", {{"budget", 4}, {"recent_window", 1}, {"obs_window", 1},
                      {"pool_kernel", 3}, {"aggregation", 2}}),
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

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
