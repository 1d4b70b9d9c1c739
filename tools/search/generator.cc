#include "tools/search/generator.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "cc/rng.h"
#include "cc/trace.h"

namespace kvspec {
namespace search {
namespace {

// Draws for one case. Every choice goes through Rng::Uniform, so the case
// depends on (seed, index) only.
class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  uint64_t U(uint64_t n) { return rng_.Uniform(n); }
  // True with probability percent / 100.
  bool P(int percent) { return rng_.Uniform(100) < static_cast<uint64_t>(percent); }
  template <typename T>
  T Pick(const std::vector<T>& options) {
    return options[rng_.Uniform(options.size())];
  }
  float UniformFloat() { return rng_.UniformFloat(); }
  uint64_t Next() { return rng_.Next(); }

 private:
  Rng rng_;
};

// A small pool of weights per case, so that ties (the same value twice) and
// near-ties (adjacent binary32 values) are common, and binary32's edges
// (subnormals, FLT_MIN, near FLT_MAX) appear.
std::vector<float> WeightPool(Draw& d) {
  std::vector<float> pool;
  const size_t size = 1 + d.U(5);
  const bool extremes = d.P(30);
  for (size_t i = 0; i < size; ++i) {
    const uint64_t kind = d.U(100);
    float w;
    if (kind < 25) {
      w = static_cast<float>(d.U(9)) / 8.0f;  // dyadic: exact sums
    } else if (kind < 45) {
      w = d.UniformFloat();
    } else if (kind < 52) {
      w = 0.0f;
    } else if (kind < 62 || (extremes && kind < 75)) {
      // A subnormal: k * 2^-149, from the smallest up.
      const uint64_t k = d.P(50) ? 1 + d.U(4) : 1 + d.U((uint64_t{1} << 23) - 1);
      w = std::ldexp(static_cast<float>(k), -149);
    } else if (kind < 68 || (extremes && kind < 82)) {
      w = d.Pick<float>({FLT_MIN, std::nextafter(FLT_MIN, 0.0f),
                         std::nextafter(FLT_MIN, 1.0f)});
    } else if (kind < 72 || (extremes && kind < 88)) {
      // Large: sums of a few overflow binary32, never binary64.
      w = d.P(40) ? FLT_MAX
                  : std::ldexp(1.0f + d.UniformFloat() * 0.99f,
                               static_cast<int>(100 + d.U(28)));
    } else if (!pool.empty()) {
      // A neighbour of an earlier value: one ulp up or down.
      const float base = pool[d.U(pool.size())];
      w = d.P(50) ? std::nextafter(base, FLT_MAX) : std::nextafter(base, 0.0f);
    } else {
      w = 0.5f;
    }
    pool.push_back(w);
  }
  return pool;
}

float Weight(Draw& d, const std::vector<float>& pool) {
  if (d.P(75)) return pool[d.U(pool.size())];
  return d.P(50) ? d.UniformFloat() : static_cast<float>(d.U(5)) / 4.0f;
}

std::vector<float> Row(Draw& d, const std::vector<float>& pool, uint64_t length) {
  std::vector<float> row(length);
  for (float& w : row) w = Weight(d, pool);
  return row;
}

// The policies, weighted toward those with more rules.
std::string PickPolicy(Draw& d) {
  static const std::vector<std::pair<std::string, int>> weights = {
      {"full", 1}, {"window", 2}, {"streamingllm", 3}, {"h2o", 5},
      {"tova", 5}, {"snapkv", 6},  {"random", 3}, {"openvino", 4}};
  int total = 0;
  for (const auto& [name, w] : weights) total += w;
  int at = static_cast<int>(d.U(total));
  for (const auto& [name, w] : weights) {
    if (at < w) return name;
    at -= w;
  }
  return "full";
}

const PolicyInfo* FindPolicy(const std::string& name) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// What the parameters are drawn around.
struct Plan {
  int64_t budget = 4;
  int64_t obs_window = 4;
  uint64_t queries = 0;  // a typical number of query rows
  bool several_heads = false;
};

int64_t ParameterValue(Draw& d, const ParameterInfo& p, const Plan& plan) {
  const int64_t b = plan.budget;
  const std::string& n = p.name;
  if (n == "budget") return b;
  if (n == "recent_window") {
    return d.Pick<int64_t>({0, 0, 1, b - 1, static_cast<int64_t>(d.U(b)),
                            static_cast<int64_t>(d.U(b)), b / 2});
  }
  if (n == "sinks") {
    return d.Pick<int64_t>({0, 1, 2, b - 1, b, static_cast<int64_t>(d.U(b + 1)), 4});
  }
  if (n == "obs_window") return plan.obs_window;
  // spec/policies/lagkv.md: partitions of 1 to 4 slots mostly (so that the
  // search's short caches have judged partitions), now and then as long as
  // the budget.
  if (n == "lag") return d.Pick<int64_t>({1, 2, 2, 3, 3, 4, b, static_cast<int64_t>(1 + d.U(b))});
  if (n == "cross_scoring") return d.U(2);
  if (n == "pool_kernel") return d.Pick<int64_t>({1, 1, 3, 3, 5, 7, 9});
  if (n == "granularity" || n == "aggregation") return d.U(3);
  if (n == "adaptive") return plan.several_heads && d.P(50) ? 1 : d.U(2);
  if (n == "safeguard_permille") {
    return d.Pick<int64_t>({0, 1, 50, 99, 100, 200, 333, 499, 500, 501, 999, 1000,
                            static_cast<int64_t>(d.U(1001))});
  }
  if (n == "ratio_ppm") {
    return d.Pick<int64_t>({0, 1, 100000, 250000, 333333, 500000, 666667, 750000,
                            999999, static_cast<int64_t>(d.U(1000000))});
  }
  // spec/spans.md: windows and chunks at and around the budget and the
  // chunk lengths, often none.
  if (n == "span_window" || n == "span_chunk") {
    return d.Pick<int64_t>({0, 0, 0, 1, 2, 3, b - 1, b, b + 1,
                            static_cast<int64_t>(d.U(2 * b + 2))});
  }
  // spec/spans.md#context-shift: a block around the halves and the budget.
  if (n == "discard") {
    return d.Pick<int64_t>({0, 0, 0, 1, 2, b / 2, b - 1, b,
                            static_cast<int64_t>(d.U(b + 2))});
  }
  // spec/triggers.md: mostly none (most cases evict at every step, and a
  // port without the feature runs them), else small, or around the budget.
  if (n == "slack" || n == "interval") {
    if (!d.P(15)) return 0;
    return d.Pick<int64_t>({1, 2, 3, b - 1, b, static_cast<int64_t>(d.U(2 * b + 2))});
  }
  // spec/blocks.md: mostly 1 (left out, as a trigger at 0), else small
  // blocks or one as large as the budget; KeepRelations makes the budget
  // and the areas multiples of it.
  if (n == "block") {
    if (!d.P(15)) return 1;
    return d.Pick<int64_t>({2, 2, 3, 4, 8, std::max<int64_t>(b, 1)});
  }
  // spec/policies/openvino.md: no pool, small pools, GenAI's 7, the budget.
  if (n == "max_pool") return d.Pick<int64_t>({1, 1, 2, 3, 7, std::max<int64_t>(b, 1)});
  // prefill_only, normalize, protect_newest, window_budget, pooling,
  // window_reduce, and any later 0/1 switch: anywhere in range.
  const int64_t span = std::min<int64_t>(p.max - p.min, 1000);
  return p.min + static_cast<int64_t>(d.U(span + 1));
}

// The value `config` gives `name`, its default, or nullopt when the
// policy has no such parameter.
std::optional<int64_t> Value(const PolicyInfo& info, const PolicyConfig& config,
                             const std::string& name) {
  for (const Parameter& p : config.parameters) {
    if (p.name == name) return p.value;
  }
  for (const ParameterInfo& p : info.parameters) {
    if (p.name == name) return p.default_value;
  }
  return std::nullopt;
}

void Set(PolicyConfig& config, const std::string& name, int64_t value) {
  for (Parameter& p : config.parameters) {
    if (p.name == name) {
      p.value = value;
      return;
    }
  }
  config.parameters.push_back({name, value});
}

void KeepRelations(Draw& d, const PolicyInfo& info, PolicyConfig& config) {
  const int64_t budget = Value(info, config, "budget").value_or(512);
  if (budget < 1) return;
  const std::optional<int64_t> recent = Value(info, config, "recent_window");
  if (recent.has_value() && *recent >= budget) {
    Set(config, "recent_window", static_cast<int64_t>(d.U(budget)));
  }
  const std::optional<int64_t> sinks = Value(info, config, "sinks");
  if (sinks.has_value() && *sinks >= budget) {
    Set(config, "sinks", static_cast<int64_t>(d.U(budget)));
  }
  if (Value(info, config, "ratio_ppm").value_or(0) > 0 &&
      Value(info, config, "recent_window").value_or(0) != 0) {
    Set(config, "recent_window", 0);
  }
  if (Value(info, config, "adaptive").value_or(0) == 1) {
    for (const char* name : {"prefill_only", "ratio_ppm", "window_budget"}) {
      if (Value(info, config, name).value_or(0) != 0) Set(config, name, 0);
    }
  }
  // spec/spans.md#parameters: one span rule at most; eviction before
  // admission only without the prefill budgets.
  if (Value(info, config, "span_window").value_or(0) > 0 &&
      Value(info, config, "span_chunk").value_or(0) > 0) {
    Set(config, d.P(50) ? "span_window" : "span_chunk", 0);
  }
  if (Value(info, config, "evict_at").value_or(0) > 0) {
    for (const char* name : {"prefill_only", "ratio_ppm"}) {
      if (Value(info, config, name).value_or(0) != 0) Set(config, name, 0);
    }
  }
  // spec/spans.md#parameters, the context shift's rules.
  if (Value(info, config, "context_shift").value_or(0) == 1) {
    for (const char* name : {"evict_at", "prefill_only", "ratio_ppm"}) {
      if (Value(info, config, name).value_or(0) != 0) Set(config, name, 0);
    }
    const int64_t held_back = Value(info, config, "sinks").value_or(0);
    if (budget < 2) {
      Set(config, "context_shift", 0);
    } else if (budget - held_back < 2) {
      Set(config, "sinks", budget - 2);
    }
  }
  if (Value(info, config, "context_shift").value_or(0) == 0 &&
      Value(info, config, "discard").value_or(0) > 0) {
    Set(config, "discard", 0);
  }
  // spec/triggers.md#combinations: one trigger at most, and none beside
  // another rule for when a step evicts.
  if (Value(info, config, "slack").value_or(0) > 0 &&
      Value(info, config, "interval").value_or(0) > 0) {
    Set(config, d.P(50) ? "slack" : "interval", 0);
  }
  for (const char* other : {"prefill_only", "adaptive", "evict_at", "context_shift"}) {
    if (Value(info, config, other).value_or(0) == 0) continue;
    for (const char* trigger : {"slack", "interval"}) {
      if (Value(info, config, trigger).value_or(0) > 0) Set(config, trigger, 0);
    }
  }
  // spec/blocks.md#rules: with a block above 1, the budget and the areas
  // are multiples of it, and none of the rules that count or rank by
  // positions is on.
  const int64_t block = Value(info, config, "block").value_or(1);
  if (block > 1) {
    for (const char* name : {"ratio_ppm", "adaptive", "evict_at", "context_shift",
                             "discard", "window_budget"}) {
      if (Value(info, config, name).value_or(0) != 0) Set(config, name, 0);
    }
    Set(config, "budget", std::max<int64_t>(block, budget / block * block));
    for (const char* name : {"recent_window", "sinks"}) {
      const std::optional<int64_t> area = Value(info, config, name);
      if (!area.has_value()) continue;
      int64_t multiple = *area / block * block;
      const int64_t rounded = Value(info, config, "budget").value_or(block);
      if (multiple >= rounded) multiple = rounded - block;
      if (multiple != *area) Set(config, name, multiple);
    }
  }
  // spec/policies/openvino.md#parameters, rule 1: sinks + recent_window
  // below budget, in whole blocks (the recent area shrinks first).
  if (info.name == "openvino") {
    const int64_t m = Value(info, config, "budget").value_or(1);
    const int64_t b = std::max<int64_t>(Value(info, config, "block").value_or(1), 1);
    int64_t s = Value(info, config, "sinks").value_or(0);
    int64_t r = Value(info, config, "recent_window").value_or(0);
    if (m % b == 0 && s % b == 0 && r % b == 0 && s + r >= m) {
      r = std::max<int64_t>(0, (m - 1 - s) / b * b);
      if (s + r >= m) s = (m - 1) / b * b;
      Set(config, "recent_window", r);
      Set(config, "sinks", s);
    }
  }
  const std::optional<int64_t> kernel = Value(info, config, "pool_kernel");
  if (kernel.has_value() && *kernel % 2 == 0) Set(config, "pool_kernel", *kernel + 1);
}

bool IsPyramidParameter(const std::string& name) {
  return name == "pyramid" || name == "pyramid_beta" || name == "layer" ||
         name == "layers";
}

// spec/policies/pyramidkv.md: a snapkv case gets the pyramid now and then
// (15 percent), either formula, with the parameters its rules need; a layer
// at or past `layers` rarely (refused: the search's refusals are near their
// limit, generator_test).
void AddPyramid(Draw& p, PolicyConfig& config) {
  if (config.name != "snapkv" || !p.P(15)) return;
  const PolicyInfo* info = FindPolicy("snapkv");
  const int64_t formula = 1 + static_cast<int64_t>(p.U(2));
  const int64_t layers = p.Pick<int64_t>({1, 2, 3, 4, 8, 32});
  int64_t layer = static_cast<int64_t>(p.U(layers));
  if (p.P(2)) layer = layers;  // refused: rule layer layers
  Set(config, "pyramid", formula);
  Set(config, "pyramid_beta", p.Pick<int64_t>({1, 2, 3, 4, 20, 1 + static_cast<int64_t>(p.U(40))}));
  Set(config, "layer", layer);
  Set(config, "layers", layers);
  if (formula == 1) {
    if (Value(*info, config, "ratio_ppm").value_or(0) == 0) {
      Set(config, "ratio_ppm", p.Pick<int64_t>({250000, 500000, 750000, 1 + static_cast<int64_t>(p.U(999999))}));
    }
    if (Value(*info, config, "recent_window").value_or(0) != 0) Set(config, "recent_window", 0);
    if (Value(*info, config, "window_budget").value_or(0) != 0) Set(config, "window_budget", 0);
  } else {
    if (Value(*info, config, "ratio_ppm").value_or(0) != 0) Set(config, "ratio_ppm", 0);
    Set(config, "window_budget", 1);
    if (Value(*info, config, "recent_window").value_or(0) != 0) Set(config, "recent_window", 0);
  }
  // adaptive 1 and block above 1 refuse both formulas' relations.
  if (Value(*info, config, "adaptive").value_or(0) != 0) Set(config, "adaptive", 0);
  if (Value(*info, config, "block").value_or(1) > 1) Set(config, "block", 1);
}

// spec/policies/simlayerkv.md (0.20.0): small regions, so that a prefill
// step of a few positions is judged, and thresholds from never (1.0) to
// always (0); n_last not below n_recent now and then (refused: rule n_last
// n_recent), the threshold left at its default (never lazy) now and then.
PolicyConfig SimLayerConfig(Draw& s) {
  PolicyConfig config;
  config.name = "simlayerkv";
  const int64_t n_recent = 2 + static_cast<int64_t>(s.U(6));
  int64_t n_last = 1 + static_cast<int64_t>(s.U(std::min<int64_t>(3, n_recent - 1)));
  if (s.P(2)) n_last = n_recent;
  config.parameters.push_back({"n_initial", static_cast<int64_t>(s.U(4))});
  config.parameters.push_back({"n_recent", n_recent});
  config.parameters.push_back({"n_last", n_last});
  if (!s.P(10)) {
    config.parameters.push_back(
        {"lazy_threshold_ppm",
         s.Pick<int64_t>({0, 0, 100000, 250000, 500000, 750000, 1000000,
                          static_cast<int64_t>(s.U(1000001))})});
  }
  return config;
}

PolicyConfig MakePolicyConfig(Draw& d, const std::string& name, const Plan& plan) {
  PolicyConfig config;
  config.name = name;
  const PolicyInfo* info = FindPolicy(name);
  if (info == nullptr) return config;
  // How many parameters a case names: all, most, or few.
  const int include = d.Pick<int>({100, 80, 50});
  for (const ParameterInfo& p : info->parameters) {
    // The pyramid's parameters (spec 0.19.0) are drawn by AddPyramid, from
    // a stream of their own: skipped here before any draw.
    if (IsPyramidParameter(p.name)) continue;
    const bool budget = p.name == "budget";
    if (!(budget ? d.P(97) : d.P(include))) continue;
    int64_t value = ParameterValue(d, p, plan);
    if (d.U(1000) < 3) value = d.P(50) ? p.min - 1 : p.max + 1;  // out of range
    value = std::max<int64_t>(value, std::numeric_limits<int64_t>::min() + 1);
    // A trigger at 0 is left out: naming it would need the feature.
    if ((p.name == "slack" || p.name == "interval") && value == 0) continue;
    // openvino's block defaults to 32: a block of 1 is named.
    if (p.name == "block" && value == 1 && name != "openvino") continue;
    config.parameters.push_back({p.name, value});
  }
  // The relations between parameters (each card's, and
  // spec/prefill.md#when-a-policy-evicts'): kept nearly always, so that the
  // search tests the rules rather than the refusals; broken now and then.
  if (!d.P(3)) KeepRelations(d, *info, config);
  if (name == "random") config.seed = d.P(50) ? d.U(8) : d.Next();
  if (d.U(1000) < 3) config.parameters.push_back({"bogus", 1});  // unknown: refused
  return config;
}

Scenario MakeTraceScenario(Draw& d, Scenario scenario) {
  TraceConfig trace;
  trace.seed = d.U(1000);
  trace.steps = static_cast<uint32_t>(1 + d.U(d.P(70) ? 40 : 160));
  trace.sinks = static_cast<uint32_t>(d.U(6));
  trace.recent_length = static_cast<uint32_t>(d.U(12));
  trace.heavy_count = static_cast<uint32_t>(d.U(10));
  trace.epoch_length = static_cast<uint32_t>(1 + d.U(60));
  trace.noise = d.Pick<double>({0.0, 0.3, 1.0});
  if (!ValidateTrace(trace).ok()) trace = TraceConfig{.seed = 1, .steps = trace.steps};
  scenario.trace = trace;
  return scenario;
}

// Breaks one row of an otherwise valid scenario, so that refusals (and
// their order) are searched too.
void Corrupt(Draw& d, Scenario& s) {
  std::vector<std::vector<float>*> rows;
  for (ScenarioStep& step : s.steps) {
    if (step.attention.has_value()) rows.push_back(&*step.attention);
    for (auto& row : step.heads) rows.push_back(&row);
    for (auto& row : step.queries) rows.push_back(&row);
  }
  if (rows.empty()) return;
  std::vector<float>& row = *rows[d.U(rows.size())];
  const uint64_t kind = d.U(4);
  if (kind == 0 || row.empty()) {
    row.push_back(0.25f);  // one weight too many
  } else {
    const float bad = d.Pick<float>({std::numeric_limits<float>::quiet_NaN(),
                                     std::numeric_limits<float>::infinity(), -0.0f,
                                     -1.0f});
    row[d.U(row.size())] = bad;
  }
}

// spec/prefill.md#column-totals: totals over the step's last R queries
// (R at and around the carried rows and the chunk), each head's formed as
// the spec pins from the carried rows and, for the queries before them,
// fresh rows; `first` is the step's first position.
void AddTotals(Draw& t, const std::vector<float>& pool, ScenarioStep& step,
               uint64_t first, uint32_t heads) {
  const uint64_t m = step.queries.size() / heads;
  const int64_t pick = t.Pick<int64_t>(
      {1, static_cast<int64_t>(m), static_cast<int64_t>(m) + 1,
       static_cast<int64_t>(step.admit), static_cast<int64_t>(1 + t.U(step.admit))});
  const uint64_t r = static_cast<uint64_t>(std::clamp<int64_t>(pick, 1, step.admit));
  const uint64_t end = first + step.admit;
  step.total_rows = static_cast<uint32_t>(r);
  step.totals.assign(heads, std::vector<double>(end, 0.0));
  for (uint32_t h = 0; h < heads; ++h) {
    for (uint64_t q = end - r; q < end; ++q) {
      const std::vector<float> row =
          q >= end - m ? step.queries[h * m + (q - (end - m))] : Row(t, pool, q + 1);
      for (uint64_t p = 0; p <= q; ++p) {
        step.totals[h][p] += static_cast<double>(row[p]);
      }
    }
  }
  if (t.P(4)) {  // a fault of the totals' own (prefill.md#their-checks)
    std::vector<double>& list = step.totals[t.U(heads)];
    switch (t.U(6)) {
      case 0: list.push_back(0.25); break;
      case 1: list.pop_back(); break;
      case 2: step.total_rows = static_cast<uint32_t>(t.P(50) ? 0 : step.admit + 1); break;
      case 3: step.totals.push_back(list); break;
      default:
        list[t.U(list.size())] = t.Pick<double>(
            {std::numeric_limits<double>::quiet_NaN(),
             std::numeric_limits<double>::infinity(), -0.0, -1.0});
    }
  }
}

// spec/tensors.md: a key entry, from a few values so that equal norms are
// common, signed, with -0.0 and an odd value now and then.
float KeyEntry(Draw& k) {
  if (k.P(70)) return k.Pick<float>({0.0f, 1.0f, -1.0f, 0.5f, 2.0f, -3.0f, 4.0f, -0.0f});
  return k.UniformFloat() * 4.0f - 2.0f;
}

// Keys for every step of `s` (spec/tensors.md#the-fields), head_dim `least`
// to 4, and in `faults` percent of cases a fault of the keys' own
// (tensors.md#checks).
void AddKeys(Draw& k, Scenario& s, uint32_t least = 1, int faults = 2) {
  const uint32_t dim = static_cast<uint32_t>(least + k.U(5 - least));
  const uint32_t kv = s.kv_heads.value_or(1);
  s.head_dim = dim;
  for (ScenarioStep& step : s.steps) {
    step.keys.assign(kv, std::vector<float>(uint64_t{step.admit} * dim));
    for (std::vector<float>& list : step.keys) {
      for (float& x : list) x = KeyEntry(k);
    }
  }
  if (!k.P(faults) || s.steps.empty()) return;
  ScenarioStep& step = s.steps[k.U(s.steps.size())];
  std::vector<float>& list = step.keys[k.U(step.keys.size())];
  switch (k.U(6)) {
    case 0: list.push_back(1.0f); break;           // one entry too many
    case 1: step.keys.push_back(list); break;      // a list too many
    case 2: s.head_dim = k.P(50) ? 0 : 1025; break;  // out of range
    case 3: s.head_dim.reset(); break;             // keys without head_dim
    default:
      list[k.U(list.size())] = k.Pick<float>({std::numeric_limits<float>::quiet_NaN(),
                                              -std::numeric_limits<float>::infinity()});
  }
}

// Values for every step of `s` (spec/tensors.md#the-fields, since 0.18.0),
// value_dim 2 to 4 (1 now and then: lagkv refuses it), entries as keys', and now and
// then (1 percent of cases) a fault of the values' own.
void AddValues(Draw& v, Scenario& s) {
  const uint32_t dim = static_cast<uint32_t>(v.P(1) ? 1 : 2 + v.U(3));
  const uint32_t kv = s.kv_heads.value_or(1);
  s.value_dim = dim;
  for (ScenarioStep& step : s.steps) {
    step.values.assign(kv, std::vector<float>(uint64_t{step.admit} * dim));
    for (std::vector<float>& list : step.values) {
      for (float& x : list) x = KeyEntry(v);
    }
  }
  if (!v.P(1) || s.steps.empty()) return;
  ScenarioStep& step = s.steps[v.U(s.steps.size())];
  std::vector<float>& list = step.values[v.U(step.values.size())];
  switch (v.U(5)) {
    case 0: list.push_back(1.0f); break;              // one entry too many
    case 1: step.values.push_back(list); break;       // a list too many
    case 2: s.value_dim = v.P(50) ? 0 : 1025; break;  // out of range
    case 3: s.value_dim.reset(); break;               // values without value_dim
    default: list[v.U(list.size())] = std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace

SearchCase GenerateCase(uint64_t seed, uint64_t index) {
  Draw d(Mix64(Mix64(seed) ^ index));
  SearchCase c;
  const std::string policy = PickPolicy(d);

  // Heads: one head without head fields, or 1..8 in any grouping.
  uint32_t query_heads = 1;
  if (!d.P(35)) {
    query_heads = static_cast<uint32_t>(1 + d.U(8));
    std::vector<uint32_t> divisors;
    for (uint32_t k = 1; k <= query_heads; ++k) {
      if (query_heads % k == 0) divisors.push_back(k);
    }
    c.scenario.query_heads = query_heads;
    c.scenario.kv_heads = divisors[d.U(divisors.size())];
  }

  Plan plan;
  plan.budget = static_cast<int64_t>(d.P(60) ? 1 + d.U(6) : 1 + d.U(20));
  plan.obs_window = static_cast<int64_t>(1 + d.U(8));
  plan.several_heads = query_heads > 1;
  c.policy = MakePolicyConfig(d, policy, plan);
  // Keys (spec 0.16.0) and the policy that reads them come from a stream of
  // their own, so that every other case is what it was before keys existed.
  Draw k(Mix64(Mix64(seed ^ 0x6b657973ULL) ^ index));  // "keys"
  // knorm (0.16.0) or keydiff (0.17.0), half each, the choice drawn only
  // for a case that reads keys.
  const bool knorm = k.P(12);
  if (knorm) c.policy = MakePolicyConfig(k, k.P(50) ? "knorm" : "keydiff", plan);
  // lagkv (0.18.0), which reads values too, from a stream of its own again:
  // every case not drawn for it is what it was.
  Draw v(Mix64(Mix64(seed ^ 0x76616c756573ULL) ^ index));  // "values"
  const bool lagkv = !knorm && v.P(7);
  if (lagkv) c.policy = MakePolicyConfig(v, "lagkv", plan);
  // The pyramid (0.19.0) from a stream of its own: every case that does not
  // draw it is what it was.
  Draw py(Mix64(Mix64(seed ^ 0x7079726d6964ULL) ^ index));  // "pyrmid"
  AddPyramid(py, c.policy);
  // simlayerkv (0.20.0), from a stream of its own again.
  Draw sl(Mix64(Mix64(seed ^ 0x73696d6c6179ULL) ^ index));  // "simlay"
  if (!knorm && !lagkv && sl.P(15)) c.policy = SimLayerConfig(sl);

  // A trace has no keys: a knorm case is given one rarely (refused).
  if (d.P(6) && (knorm ? k.P(10) : !lagkv || v.P(10))) {
    c.scenario = MakeTraceScenario(d, c.scenario);
    if (knorm && k.P(50)) c.scenario.head_dim = 2;  // refused beside a trace
    if (lagkv && v.P(50)) c.scenario.value_dim = 2;  // refused beside a trace
    return c;
  }

  const std::vector<float> pool = WeightPool(d);
  const int prefill_rate = d.Pick<int>({0, 0, 25, 60});
  const bool prefill_first = d.P(50);
  const uint64_t steps = d.P(80) ? 1 + d.U(10) : 1 + d.U(24);
  const int64_t b = plan.budget;
  const int64_t w = plan.obs_window;
  uint64_t admitted = 0;
  for (uint64_t i = 0; i < steps && admitted < 160; ++i) {
    ScenarioStep step;
    const bool chunk = i == 0 ? d.P(60) : d.P(40);
    if (chunk) {
      const int64_t pick = d.Pick<int64_t>(
          {b - 1, b, b + 1, 2, 3, w - 1, w, w + 1,
           static_cast<int64_t>(1 + d.U(b + 3)), 2 * b});
      step.admit = static_cast<uint32_t>(std::clamp<int64_t>(pick, 1, 40));
    }
    const bool prefill = (i == 0 && prefill_first && prefill_rate > 0) ||
                         d.P(prefill_rate);
    if (prefill) {
      const int64_t pick = d.Pick<int64_t>(
          {1, w - 1, w, w + 1, step.admit, static_cast<int64_t>(1 + d.U(step.admit))});
      const uint64_t m = static_cast<uint64_t>(std::clamp<int64_t>(pick, 1, step.admit));
      const uint64_t end = admitted + step.admit;
      for (uint32_t h = 0; h < query_heads; ++h) {
        for (uint64_t q = end - m; q < end; ++q) step.queries.push_back(Row(d, pool, q + 1));
      }
    } else if (!d.P(10)) {
      if (query_heads > 1) {
        for (uint32_t h = 0; h < query_heads; ++h) {
          step.heads.push_back(Row(d, pool, admitted));
        }
      } else {
        step.attention = Row(d, pool, admitted);
      }
    }
    admitted += step.admit;
    c.scenario.steps.push_back(std::move(step));
  }
  if (d.P(3)) Corrupt(d, c.scenario);
  // Column totals on some prefill steps, drawn from a stream of their own
  // so that every other draw above is what it was before totals (spec
  // 0.10.0) existed: the search's earlier findings replay unchanged.
  Draw t(Mix64(Mix64(seed ^ 0x746f74616c73ULL) ^ index));  // "totals"
  uint64_t first = 0;
  for (ScenarioStep& step : c.scenario.steps) {
    if (!step.queries.empty() && step.queries.size() % query_heads == 0 &&
        t.P(30)) {
      AddTotals(t, pool, step, first, query_heads);
    }
    first += step.admit;
  }
  if (knorm ? !k.P(1) : k.P(5)) AddKeys(k, c.scenario);
  if (lagkv) {
    // lagkv needs head_dim and value_dim of 2 at least: 1 now and then
    // (and each tensor's own faults, in AddKeys and AddValues).
    AddKeys(v, c.scenario, v.P(1) ? 1 : 2, 1);
    AddValues(v, c.scenario);
  } else if (v.P(2)) {
    AddValues(v, c.scenario);  // values beside another policy: ignored
  }
  return c;
}

}  // namespace search
}  // namespace kvspec
