#include "tools/search/generator.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "cc/proto_convert.h"
#include "cc/rng.h"
#include "cc/trace.h"
#include "google/protobuf/text_format.h"
#include "spec/kvspec.pb.h"

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

PolicyConfig MakePolicyConfig(Draw& d, const std::string& name, const Plan& plan) {
  PolicyConfig config;
  config.name = name;
  const PolicyInfo* info = FindPolicy(name);
  if (info == nullptr) return config;
  // How many parameters a case names: all, most, or few.
  const int include = d.Pick<int>({100, 80, 50});
  for (const ParameterInfo& p : info->parameters) {
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

// Keys for every step of `s` (spec/tensors.md#the-fields), head_dim 1 to 4,
// and now and then a fault of the keys' own (tensors.md#checks).
void AddKeys(Draw& k, Scenario& s) {
  const uint32_t dim = static_cast<uint32_t>(1 + k.U(4));
  const uint32_t kv = s.kv_heads.value_or(1);
  s.head_dim = dim;
  for (ScenarioStep& step : s.steps) {
    step.keys.assign(kv, std::vector<float>(uint64_t{step.admit} * dim));
    for (std::vector<float>& list : step.keys) {
      for (float& x : list) x = KeyEntry(k);
    }
  }
  if (!k.P(2) || s.steps.empty()) return;
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

  // A trace has no keys: a knorm case is given one rarely (refused).
  if (d.P(6) && (!knorm || k.P(10))) {
    c.scenario = MakeTraceScenario(d, c.scenario);
    if (knorm && k.P(50)) c.scenario.head_dim = 2;  // refused beside a trace
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
  return c;
}

uint64_t CaseSize(const SearchCase& c) {
  uint64_t size = c.policy.parameters.size() * 5 + (c.policy.seed != 0 ? 1 : 0);
  for (const Parameter& p : c.policy.parameters) {
    size += static_cast<uint64_t>(std::clamp<int64_t>(p.value, 0, 64));  // lower is simpler
  }
  size += c.scenario.query_heads.value_or(0) * 50 + c.scenario.kv_heads.value_or(0) * 20;
  if (c.scenario.trace.has_value()) size += 1000 + c.scenario.trace->steps * 100;
  if (c.scenario.head_dim.has_value()) size += 10 + *c.scenario.head_dim;
  for (const ScenarioStep& step : c.scenario.steps) {
    size += 1000 + step.admit * 10;
    uint64_t weights = step.attention.has_value() ? step.attention->size() : 0;
    for (const auto& row : step.heads) weights += row.size();
    for (const auto& row : step.queries) weights += row.size();
    for (const auto& list : step.totals) weights += list.size();
    size += step.total_rows;
    for (const auto& list : step.keys) size += list.size() * 2;
    size += weights + (step.attention.has_value() || !step.heads.empty() ||
                               !step.queries.empty()
                           ? 5
                           : 0);
    // Simpler weights are smaller: a weight that is not a multiple of 1/8.
    auto odd = [](const std::vector<float>& row) {
      uint64_t n = 0;
      for (float x : row) n += std::floor(x * 8.0f) != x * 8.0f || x > 1.0f;
      return n;
    };
    if (step.attention.has_value()) size += odd(*step.attention);
    for (const auto& row : step.heads) size += odd(row);
    for (const auto& row : step.queries) size += odd(row);
  }
  return size;
}

namespace {

std::vector<uint64_t> Starts(const Scenario& s) {
  std::vector<uint64_t> starts;
  uint64_t at = 0;
  for (const ScenarioStep& step : s.steps) {
    starts.push_back(at);
    at += step.admit;
  }
  return starts;
}

void EraseAt(std::vector<float>& row, uint64_t index) {
  if (index < row.size()) row.erase(row.begin() + static_cast<ptrdiff_t>(index));
}

// Removes position `p`'s weight from every row of steps `from` onward.
void EraseFromLaterRows(Scenario& s, size_t from, uint64_t p) {
  for (size_t j = from; j < s.steps.size(); ++j) {
    ScenarioStep& step = s.steps[j];
    if (step.attention.has_value()) EraseAt(*step.attention, p);
    for (auto& row : step.heads) EraseAt(row, p);
    for (auto& row : step.queries) EraseAt(row, p);
    for (auto& list : step.totals) {
      if (p < list.size()) list.erase(list.begin() + static_cast<ptrdiff_t>(p));
    }
  }
}

size_t QueryHeads(const Scenario& s) { return s.query_heads.value_or(1); }

Scenario RemoveStep(const Scenario& s, size_t i) {
  Scenario out = s;
  const uint64_t start = Starts(s)[i];
  for (uint64_t p = start + s.steps[i].admit; p-- > start;) EraseFromLaterRows(out, i + 1, p);
  out.steps.erase(out.steps.begin() + static_cast<ptrdiff_t>(i));
  return out;
}

// Removes position start + k of step i's chunk (admit >= 2).
Scenario RemovePosition(const Scenario& s, size_t i, uint64_t k) {
  Scenario out = s;
  ScenarioStep& step = out.steps[i];
  const uint64_t start = Starts(s)[i];
  const uint64_t p = start + k;
  if (!step.queries.empty()) {
    const size_t heads = QueryHeads(s);
    const size_t m = step.queries.size() / std::max<size_t>(heads, 1);
    const uint64_t first_query = start + step.admit - m;
    std::vector<std::vector<float>> kept;
    for (size_t r = 0; r < step.queries.size(); ++r) {
      const uint64_t q = first_query + r % std::max<size_t>(m, 1);
      if (q == p) continue;
      std::vector<float> row = step.queries[r];
      if (q > p) EraseAt(row, p);
      kept.push_back(std::move(row));
    }
    step.queries = std::move(kept);
  }
  for (auto& list : step.totals) {
    if (p < list.size()) list.erase(list.begin() + static_cast<ptrdiff_t>(p));
  }
  if (step.total_rows >= step.admit) step.total_rows = step.admit - 1;
  // tensors.md#the-fields: the position's key under every KV head.
  const uint64_t dim = s.head_dim.value_or(0);
  for (auto& list : step.keys) {
    if (dim > 0 && list.size() == uint64_t{step.admit} * dim) {
      list.erase(list.begin() + static_cast<ptrdiff_t>(k * dim),
                 list.begin() + static_cast<ptrdiff_t>((k + 1) * dim));
    }
  }
  step.admit -= 1;
  EraseFromLaterRows(out, i + 1, p);
  return out;
}

// Keeps the query heads `keep` (ascending) with `kv` KV heads.
Scenario KeepHeads(const Scenario& s, const std::vector<size_t>& keep, uint32_t kv,
                   bool drop_fields) {
  Scenario out = s;
  const size_t heads = QueryHeads(s);
  const uint32_t qh = static_cast<uint32_t>(keep.size());
  if (drop_fields) {
    out.query_heads.reset();
    out.kv_heads.reset();
  } else {
    out.query_heads = qh;
    out.kv_heads = kv;
  }
  for (ScenarioStep& step : out.steps) {
    if (!step.heads.empty() && step.heads.size() == heads) {
      std::vector<std::vector<float>> rows;
      for (size_t h : keep) rows.push_back(step.heads[h]);
      if (qh == 1) {
        step.attention = rows[0];
        step.heads.clear();
      } else {
        step.heads = std::move(rows);
      }
    }
    if (!step.queries.empty() && step.queries.size() % heads == 0) {
      const size_t m = step.queries.size() / heads;
      std::vector<std::vector<float>> rows;
      for (size_t h : keep) {
        for (size_t r = 0; r < m; ++r) rows.push_back(step.queries[h * m + r]);
      }
      step.queries = std::move(rows);
    }
    if (step.totals.size() == heads) {
      std::vector<std::vector<double>> lists;
      for (size_t h : keep) lists.push_back(step.totals[h]);
      step.totals = std::move(lists);
    }
    // The keys of the kept query heads' KV heads, once each
    // (tensors.md#what-a-policy-sees).
    const size_t old_kv = s.kv_heads.value_or(1);
    if (step.keys.size() == old_kv && old_kv > 0 && heads % old_kv == 0) {
      std::vector<std::vector<float>> lists;
      size_t last = old_kv;
      for (size_t h : keep) {
        const size_t g = h / (heads / old_kv);
        if (g != last) lists.push_back(step.keys[g]);
        last = g;
      }
      step.keys = std::move(lists);
    }
  }
  return out;
}

std::vector<float> Simpler(const std::vector<float>& row, bool ones) {
  std::vector<float> out = row;
  for (float& x : out) {
    if (!(x >= 0.0f) || std::isinf(x)) continue;  // keep a refused weight
    if (ones) {
      x = x > 0.0f ? 1.0f : 0.0f;
    } else {
      x = std::min(1.0f, std::round(x * 8.0f) / 8.0f);
    }
  }
  return out;
}

}  // namespace

std::vector<SearchCase> ShrinkMoves(const SearchCase& c) {
  std::vector<SearchCase> moves;
  const Scenario& s = c.scenario;
  auto add = [&](Scenario scenario) { moves.push_back({c.policy, std::move(scenario)}); };
  // Whole steps, the last first (later steps depend on earlier ones).
  if (s.steps.size() > 1) {
    for (size_t i = s.steps.size(); i-- > 0;) add(RemoveStep(s, i));
  }
  // A trace: fewer steps.
  if (s.trace.has_value() && s.trace->steps > 1) {
    Scenario half = s;
    half.trace->steps = s.trace->steps / 2;
    add(half);
    Scenario less = s;
    less.trace->steps = s.trace->steps - 1;
    add(less);
  }
  // Heads.
  const size_t heads = QueryHeads(s);
  if (s.query_heads.has_value() && s.kv_heads.has_value() && heads >= 1 &&
      *s.kv_heads >= 1 && heads % *s.kv_heads == 0) {
    const uint32_t kv = *s.kv_heads;
    const size_t group = heads / kv;
    if (kv > 1) {  // drop the last KV group
      std::vector<size_t> keep;
      for (size_t h = 0; h < heads - group; ++h) keep.push_back(h);
      add(KeepHeads(s, keep, kv - 1, false));
    }
    if (group > 1) {  // drop the last head of each group
      std::vector<size_t> keep;
      for (size_t h = 0; h < heads; ++h) {
        if (h % group != group - 1) keep.push_back(h);
      }
      add(KeepHeads(s, keep, kv, false));
    }
    if (heads > 1) add(KeepHeads(s, {0}, 1, false));
    if (heads == 1) add(KeepHeads(s, {0}, 1, true));  // no head fields at all
  }
  // Positions of a chunk: its first and its last.
  for (size_t i = s.steps.size(); i-- > 0;) {
    const ScenarioStep& step = s.steps[i];
    if (step.admit < 2) continue;
    const size_t m = step.queries.size() / std::max<size_t>(heads, 1);
    // A query's position goes with its rows; the last query never does.
    if (m < step.admit || m >= 2) add(RemovePosition(s, i, 0));
    if (m == 0 || m >= 2) add(RemovePosition(s, i, step.admit - 1));
  }
  // Parameters: dropped (their default), then lowered.
  for (size_t k = 0; k < c.policy.parameters.size(); ++k) {
    SearchCase dropped = c;
    dropped.policy.parameters.erase(dropped.policy.parameters.begin() +
                                    static_cast<ptrdiff_t>(k));
    moves.push_back(dropped);
    const int64_t value = c.policy.parameters[k].value;
    for (int64_t lower : {int64_t{0}, value / 2, value - 1}) {
      if (lower >= 0 && lower < value) {
        SearchCase lowered = c;
        lowered.policy.parameters[k].value = lower;
        moves.push_back(lowered);
      }
    }
  }
  if (c.policy.seed != 0) {
    SearchCase seeded = c;
    seeded.policy.seed = 0;
    moves.push_back(seeded);
  }
  // Keys: none at all (for a policy that does not read them), then entries
  // rounded to whole numbers.
  if (!ReadsKeys(c.policy.name)) {
    Scenario none = s;
    none.head_dim.reset();
    for (ScenarioStep& t : none.steps) t.keys.clear();
    if (none.head_dim != s.head_dim ||
        std::any_of(s.steps.begin(), s.steps.end(),
                    [](const ScenarioStep& t) { return !t.keys.empty(); })) {
      add(none);
    }
  }
  if (s.head_dim.has_value() || std::any_of(s.steps.begin(), s.steps.end(),
                                            [](const ScenarioStep& t) { return !t.keys.empty(); })) {
    Scenario whole = s;
    bool changed = false;
    for (ScenarioStep& t : whole.steps) {
      for (auto& list : t.keys) {
        for (float& x : list) {
          if (std::isfinite(x) && std::round(x) != x) {
            x = std::round(x);
            changed = true;
          }
        }
      }
    }
    if (changed) add(whole);
  }
  // Rows: null attention, then simpler weights.
  for (size_t i = s.steps.size(); i-- > 0;) {
    const ScenarioStep& step = s.steps[i];
    if (!step.attention.has_value() && step.heads.empty() && step.queries.empty() &&
        step.totals.empty() && step.total_rows == 0) {
      continue;
    }
    if (!step.totals.empty() || step.total_rows != 0) {
      Scenario no_totals = s;  // the query rows without their totals
      no_totals.steps[i].totals.clear();
      no_totals.steps[i].total_rows = 0;
      add(no_totals);
    }
    Scenario null = s;
    null.steps[i].attention.reset();
    null.steps[i].heads.clear();
    null.steps[i].queries.clear();
    null.steps[i].totals.clear();
    null.steps[i].total_rows = 0;
    add(null);
    for (bool ones : {true, false}) {
      Scenario simpler = s;
      ScenarioStep& t = simpler.steps[i];
      if (t.attention.has_value()) t.attention = Simpler(*t.attention, ones);
      for (auto& row : t.heads) row = Simpler(row, ones);
      for (auto& row : t.queries) row = Simpler(row, ones);
      SearchCase candidate{c.policy, simpler};
      if (CaseSize(candidate) < CaseSize(c)) moves.push_back(std::move(candidate));
    }
  }
  // Single weights rounded to a multiple of 1/8 (at most 48 a round, the
  // latest steps first), so that a shrunk case keeps only the odd weights
  // that matter.
  size_t single = 0;
  for (size_t i = s.steps.size(); i-- > 0 && single < 48;) {
    const ScenarioStep& step = s.steps[i];
    auto each_row = [&](auto&& visit) {
      if (step.attention.has_value()) visit(0, size_t{0});
      for (size_t r = 0; r < step.heads.size(); ++r) visit(1, r);
      for (size_t r = 0; r < step.queries.size(); ++r) visit(2, r);
    };
    each_row([&](int kind, size_t r) {
      const std::vector<float>& row =
          kind == 0 ? *step.attention : kind == 1 ? step.heads[r] : step.queries[r];
      for (size_t j = 0; j < row.size() && single < 48; ++j) {
        const float x = row[j];
        if (!(x >= 0.0f) || std::isinf(x)) continue;
        const float simple = std::min(1.0f, std::round(x * 8.0f) / 8.0f);
        if (simple == x) continue;
        Scenario rounded = s;
        ScenarioStep& t = rounded.steps[i];
        std::vector<float>& target =
            kind == 0 ? *t.attention : kind == 1 ? t.heads[r] : t.queries[r];
        target[j] = simple;
        add(std::move(rounded));
        ++single;
      }
    });
  }
  return moves;
}

std::string CaseText(const SearchCase& c) {
  std::string policy, scenario;
  google::protobuf::TextFormat::PrintToString(ToProto(c.policy), &policy);
  google::protobuf::TextFormat::PrintToString(ToProto(c.scenario), &scenario);
  auto indent = [](const std::string& text) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = text.find('\n', start);
      const size_t stop = end == std::string::npos ? text.size() : end + 1;
      out += "  " + text.substr(start, stop - start);
      start = stop;
    }
    return out;
  };
  return "policy {\n" + indent(policy) + "}\nscenario {\n" + indent(scenario) + "}\n";
}

}  // namespace search
}  // namespace kvspec

namespace kvspec {
namespace search {

std::set<std::string> Tags(const SearchCase& c) {
  std::set<std::string> tags;
  tags.insert("policy:" + c.policy.name);
  const PolicyInfo* info = FindPolicy(c.policy.name);
  auto param = [&](const std::string& name) -> std::optional<int64_t> {
    for (const Parameter& p : c.policy.parameters) {
      if (p.name == name) return p.value;
    }
    return std::nullopt;
  };
  for (const Parameter& p : c.policy.parameters) {
    tags.insert("param:" + p.name);
    if (info == nullptr) continue;
    bool known = false;
    for (const ParameterInfo& i : info->parameters) {
      if (i.name != p.name) continue;
      known = true;
      if (p.value < i.min || p.value > i.max) tags.insert("param-out-of-range");
      if (i.max - i.min <= 2) tags.insert("param:" + p.name + "=" + std::to_string(p.value));
    }
    if (!known) tags.insert("param-unknown");
  }
  const int64_t budget = param("budget").value_or(512);
  const int64_t obs_window = param("obs_window").value_or(16);
  if (param("protect_newest").value_or(0) == 1 && param("recent_window").value_or(16) > 0) {
    tags.insert("protect_newest+recent_window");
  }
  const Scenario& s = c.scenario;
  if (!s.query_heads.has_value()) {
    tags.insert("heads:none");
  } else {
    tags.insert("heads:" + std::to_string(*s.query_heads));
    if (s.kv_heads.has_value() && *s.kv_heads > 0) {
      tags.insert("group:" + std::to_string(*s.query_heads / *s.kv_heads));
    }
  }
  if (s.trace.has_value()) tags.insert(s.query_heads.value_or(1) > 1 ? "trace-heads" : "trace");
  if (s.head_dim.has_value()) tags.insert("keys");
  bool decoded = false, prefilled = false;
  std::set<uint32_t> seen;
  std::set<uint32_t> near;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const ScenarioStep& step = s.steps[i];
    if (step.admit > 1) tags.insert("chunk");
    if (step.admit == budget) tags.insert("chunk=budget");
    if (step.admit > budget) tags.insert("chunk>budget");
    std::vector<const std::vector<float>*> rows;
    if (step.attention.has_value()) rows.push_back(&*step.attention);
    for (const auto& row : step.heads) rows.push_back(&row);
    for (const auto& row : step.queries) rows.push_back(&row);
    if (!step.totals.empty() || step.total_rows != 0) tags.insert("totals");
    if (!step.queries.empty()) {
      tags.insert("prefill");
      if (decoded) tags.insert("prefill-after-decode");
      const size_t m = step.queries.size() / std::max<uint32_t>(s.query_heads.value_or(1), 1);
      tags.insert(m < static_cast<size_t>(obs_window)    ? "queries<obs_window"
                  : m == static_cast<size_t>(obs_window) ? "queries=obs_window"
                                                         : "queries>obs_window");
      prefilled = true;
    } else {
      if (rows.empty()) tags.insert("null");
      if (prefilled) tags.insert("decode-after-prefill");
      decoded = true;
    }
    for (const auto* row : rows) {
      for (float w : *row) {
        if (!(w >= 0.0f) || std::isinf(w) || std::signbit(w)) tags.insert("weight:refused");
        if (w > 0.0f && w < FLT_MIN) tags.insert("weight:subnormal");
        if (w == FLT_MIN) tags.insert("weight:flt-min");
        if (w > 1e30f && !std::isinf(w)) tags.insert("weight:large");
        uint32_t bits;
        std::memcpy(&bits, &w, sizeof bits);
        if (!seen.insert(bits).second && w > 0.0f) tags.insert("weight:tie");
        if (seen.count(bits + 1) || (bits > 0 && seen.count(bits - 1))) {
          tags.insert("weight:near-tie");
        }
      }
    }
  }
  return tags;
}

}  // namespace search
}  // namespace kvspec
