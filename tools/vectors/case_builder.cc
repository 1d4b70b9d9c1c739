// The building blocks of the vector suite's case files: scenarios from
// rows and chunks, several heads, query rows and totals, configurations.
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

ScenarioStep Null(uint32_t admit) { return {admit, std::nullopt}; }

ScenarioStep KeyStep(uint32_t admit, std::vector<std::vector<float>> keys) {
  ScenarioStep step = Null(admit);
  step.keys = std::move(keys);
  return step;
}

Scenario OneHeadKeys(std::string id, const std::vector<std::vector<float>>& keys) {
  std::vector<ScenarioStep> steps;
  for (const std::vector<float>& key : keys) steps.push_back(KeyStep(1, {key}));
  Scenario scenario = Explicit(std::move(id), std::move(steps));
  scenario.head_dim = 2;
  return scenario;
}

ScenarioStep WithRow(Row row, uint32_t admit) {
  return {admit, std::move(row)};
}

Scenario Explicit(std::string id, std::vector<ScenarioStep> steps) {
  Scenario scenario;
  scenario.id = std::move(id);
  scenario.steps = std::move(steps);
  return scenario;
}

Scenario Chunks(std::string id, const std::vector<uint32_t>& chunks) {
  std::vector<ScenarioStep> steps;
  for (uint32_t admit : chunks) steps.push_back(Null(admit));
  return Explicit(std::move(id), std::move(steps));
}

Scenario Traced(std::string id, const TraceConfig& trace) {
  Scenario scenario;
  scenario.id = std::move(id);
  scenario.trace = trace;
  return scenario;
}

// Chunks, null steps and fresh weights at every step.
Scenario Wandering(std::string id, uint32_t steps, uint64_t seed) {
  Rng rng(seed);
  std::vector<ScenarioStep> out;
  uint32_t admitted = 0;
  for (uint32_t step = 0; step < steps; ++step) {
    ScenarioStep s;
    s.admit = rng.Uniform(5) == 0 ? 1 + static_cast<uint32_t>(rng.Uniform(6)) : 1;
    if (rng.Uniform(7) != 0) {
      Row row(admitted);
      for (float& w : row) w = rng.UniformFloat();
      s.attention = std::move(row);
    }
    admitted += s.admit;
    out.push_back(std::move(s));
  }
  return Explicit(std::move(id), std::move(out));
}

PolicyConfig P(const char* name, std::vector<Parameter> parameters,
               uint64_t seed) {
  return {name, std::move(parameters), seed};
}

// Spec 0.5.0: several attention heads (spec/heads.md).
Scenario WithHeads(Scenario scenario, std::optional<uint32_t> query_heads,
                   std::optional<uint32_t> kv_heads) {
  scenario.query_heads = query_heads;
  scenario.kv_heads = kv_heads;
  return scenario;
}

// Spec 0.6.0: prefill (spec/prefill.md).
ScenarioStep QueryRows(uint32_t admit, std::vector<Row> queries) {
  ScenarioStep step;
  step.admit = admit;
  step.queries = std::move(queries);
  return step;
}

// A prompt of `length` positions as one prefill step carrying the causal
// rows of its last `rows` queries for each of `query_heads` heads, then
// `decode` decode steps with one row per head. The rows come from the
// several-heads trace (spec/trace.md#several-heads) with `seed`: the
// query at position q attends as the trace's step q + 1 does (q + 1
// weights), and decode step t's row is the trace's step t.
Scenario TracePrompt(std::string id, uint32_t length, uint32_t rows,
                     uint32_t decode, uint32_t query_heads, uint32_t kv_heads,
                     uint64_t seed) {
  TraceConfig config;
  config.seed = seed;
  config.steps = length + decode + 1;
  std::vector<std::vector<Row>> per_head(query_heads);  // row of step t
  for (uint32_t h = 0; h < query_heads; ++h) {
    TraceGenerator trace = *TraceGenerator::CreateForHead(config, h);
    while (trace.Advance()) per_head[h].push_back(trace.Row());
  }
  std::vector<ScenarioStep> steps;
  std::vector<Row> queries;
  for (uint32_t h = 0; h < query_heads; ++h) {
    for (uint32_t q = length - rows; q < length; ++q) {
      queries.push_back(per_head[h][q + 1]);
    }
  }
  steps.push_back(QueryRows(length, std::move(queries)));
  for (uint32_t t = length; t < length + decode; ++t) {
    ScenarioStep step;
    if (query_heads == 1) {
      step.attention = per_head[0][t];
    } else {
      for (uint32_t h = 0; h < query_heads; ++h) step.heads.push_back(per_head[h][t]);
    }
    steps.push_back(std::move(step));
  }
  Scenario scenario = Explicit(std::move(id), std::move(steps));
  if (query_heads > 1) scenario = WithHeads(std::move(scenario), query_heads, kv_heads);
  return scenario;
}

// A preset's configuration with `extra` parameters (spec/prefill.md#presets).
PolicyConfig Preset(const char* policy, const char* preset,
                    std::vector<Parameter> extra) {
  return *ExpandPreset(P(policy, std::move(extra)), preset);
}

// Spec 0.10.0: column totals (spec/prefill.md#column-totals). The totals of
// a prefill step's last `total_rows` queries, formed from their rows as the
// spec pins it: per head, per position, binary64 from +0.0 in ascending
// query order. `queries` are every query's rows of the step (head-major, m
// per head, ascending), `first` the step's first position, `admit` its
// length.
std::vector<std::vector<double>> TotalsOf(const std::vector<Row>& queries,
                                          uint32_t heads, uint32_t total_rows) {
  const size_t per_head = queries.size() / heads;
  std::vector<std::vector<double>> totals(heads);
  for (uint32_t h = 0; h < heads; ++h) {
    const size_t positions = queries[h * per_head + per_head - 1].size();
    totals[h].assign(positions, 0.0);
    for (size_t j = per_head - total_rows; j < per_head; ++j) {
      const Row& row = queries[h * per_head + j];
      for (size_t p = 0; p < row.size(); ++p) {
        totals[h][p] += static_cast<double>(row[p]);
      }
    }
  }
  return totals;
}

// A prefill step (every query's rows given) carrying its last `carried`
// rows per head and the totals of its last `total_rows` queries.
ScenarioStep WithTotals(ScenarioStep step, uint32_t heads, uint32_t carried,
                        uint32_t total_rows) {
  step.totals = TotalsOf(step.queries, heads, total_rows);
  step.total_rows = total_rows;
  const size_t per_head = step.queries.size() / heads;
  std::vector<Row> kept;
  for (uint32_t h = 0; h < heads; ++h) {
    for (size_t j = per_head - carried; j < per_head; ++j) {
      kept.push_back(step.queries[h * per_head + j]);
    }
  }
  step.queries = std::move(kept);
  return step;
}

// A tensor entry in (-1, 1), a multiple of 2^-10, from the Rng.
float DrawnEntry(Rng& rng) {
  return static_cast<float>(static_cast<int64_t>(rng.Uniform(2047)) - 1023) / 1024.0f;
}

// `steps` steps of 1 to 3 positions, with attention rows from the Rng on
// odd steps (knorm ignores them), Hq query heads in Hkv groups, keys of
// head_dim `dim` with entries in (-1, 1) as multiples of 2^-10 from the Rng.
Scenario DrawnKeys(std::string id, uint32_t steps, uint32_t query_heads,
               uint32_t kv_heads, uint32_t dim, uint64_t seed) {
  Rng rng(seed);
  std::vector<ScenarioStep> out;
  uint32_t admitted = 0;
  for (uint32_t t = 0; t < steps; ++t) {
    const uint32_t admit = 1 + static_cast<uint32_t>(rng.Uniform(3));
    ScenarioStep step = Null(admit);
    if (t % 2 == 1) {
      for (uint32_t h = 0; h < query_heads; ++h) {
        Row row(admitted);
        for (float& w : row) w = rng.UniformFloat();
        if (query_heads == 1) {
          step.attention = std::move(row);
        } else {
          step.heads.push_back(std::move(row));
        }
      }
    }
    for (uint32_t g = 0; g < kv_heads; ++g) {
      std::vector<float> keys(size_t{admit} * dim);
      for (float& k : keys) k = DrawnEntry(rng);
      step.keys.push_back(std::move(keys));
    }
    out.push_back(std::move(step));
    admitted += admit;
  }
  Scenario scenario = Explicit(std::move(id), std::move(out));
  if (query_heads > 1) scenario = WithHeads(std::move(scenario), query_heads, kv_heads);
  scenario.head_dim = dim;
  return scenario;
}

Scenario WithDrawnValues(Scenario scenario, uint32_t dim, uint64_t seed) {
  Rng rng(seed);
  const uint32_t kv_heads = scenario.kv_heads.value_or(1);
  for (ScenarioStep& step : scenario.steps) {
    step.values.assign(kv_heads, std::vector<float>(size_t{step.admit} * dim));
    for (std::vector<float>& values : step.values) {
      for (float& v : values) v = DrawnEntry(rng);
    }
  }
  scenario.value_dim = dim;
  return scenario;
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
