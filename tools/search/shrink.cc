// A search case's size, its shrink moves, its text and its tags
// (tools/README.md#search): what the search shrinks a disagreement with and
// reports it by. The cases themselves come from generator.cc.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "cc/proto_convert.h"
#include "google/protobuf/text_format.h"
#include "spec/kvspec.pb.h"
#include "tools/search/generator.h"

namespace kvspec {
namespace search {

uint64_t CaseSize(const SearchCase& c) {
  uint64_t size = c.policy.parameters.size() * 5 + (c.policy.seed != 0 ? 1 : 0);
  for (const Parameter& p : c.policy.parameters) {
    size += static_cast<uint64_t>(std::clamp<int64_t>(p.value, 0, 64));  // lower is simpler
  }
  size += c.scenario.query_heads.value_or(0) * 50 + c.scenario.kv_heads.value_or(0) * 20;
  if (c.scenario.trace.has_value()) size += 1000 + c.scenario.trace->steps * 100;
  if (c.scenario.head_dim.has_value()) size += 10 + *c.scenario.head_dim;
  if (c.scenario.value_dim.has_value()) size += 10 + *c.scenario.value_dim;
  for (const ScenarioStep& step : c.scenario.steps) {
    size += 1000 + step.admit * 10;
    uint64_t weights = step.attention.has_value() ? step.attention->size() : 0;
    for (const auto& row : step.heads) weights += row.size();
    for (const auto& row : step.queries) weights += row.size();
    for (const auto& list : step.totals) weights += list.size();
    size += step.total_rows;
    for (const auto& list : step.keys) size += list.size() * 2;
    for (const auto& list : step.values) size += list.size() * 2;
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
  // tensors.md#the-fields: the position's key and value under every KV
  // head.
  const std::pair<uint64_t, std::vector<std::vector<float>>*> tensors[] = {
      {s.head_dim.value_or(0), &step.keys}, {s.value_dim.value_or(0), &step.values}};
  for (const auto& [dim, lists] : tensors) {
    for (auto& list : *lists) {
      if (dim > 0 && list.size() == uint64_t{step.admit} * dim) {
        list.erase(list.begin() + static_cast<ptrdiff_t>(k * dim),
                   list.begin() + static_cast<ptrdiff_t>((k + 1) * dim));
      }
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
    // The keys and values of the kept query heads' KV heads, once each
    // (tensors.md#what-a-policy-sees).
    const size_t old_kv = s.kv_heads.value_or(1);
    for (std::vector<std::vector<float>>* tensor : {&step.keys, &step.values}) {
      if (tensor->size() == old_kv && old_kv > 0 && heads % old_kv == 0) {
        std::vector<std::vector<float>> lists;
        size_t last = old_kv;
        for (size_t h : keep) {
          const size_t g = h / (heads / old_kv);
          if (g != last) lists.push_back((*tensor)[g]);
          last = g;
        }
        *tensor = std::move(lists);
      }
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
  // Keys and values: none at all (for a policy that does not read them),
  // then entries rounded to whole numbers.
  const bool has_keys = s.head_dim.has_value() ||
                        std::any_of(s.steps.begin(), s.steps.end(),
                                    [](const ScenarioStep& t) { return !t.keys.empty(); });
  const bool has_values = s.value_dim.has_value() ||
                          std::any_of(s.steps.begin(), s.steps.end(),
                                      [](const ScenarioStep& t) { return !t.values.empty(); });
  if (!ReadsKeys(c.policy.name) && has_keys) {
    Scenario none = s;
    none.head_dim.reset();
    for (ScenarioStep& t : none.steps) t.keys.clear();
    add(none);
  }
  if (!ReadsValues(c.policy.name) && has_values) {
    Scenario none = s;
    none.value_dim.reset();
    for (ScenarioStep& t : none.steps) t.values.clear();
    add(none);
  }
  for (const bool keys : {true, false}) {
    if (!(keys ? has_keys : has_values)) continue;
    Scenario whole = s;
    bool changed = false;
    for (ScenarioStep& t : whole.steps) {
      for (auto& list : keys ? t.keys : t.values) {
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

std::set<std::string> Tags(const SearchCase& c) {
  std::set<std::string> tags;
  tags.insert("policy:" + c.policy.name);
  const PolicyInfo* info = nullptr;
  for (const PolicyInfo& registered : RegisteredPolicies()) {
    if (registered.name == c.policy.name) info = &registered;
  }
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
  if (s.value_dim.has_value()) tags.insert("values");
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
