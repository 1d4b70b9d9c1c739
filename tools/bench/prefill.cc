#include "tools/bench/prefill.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/heads.h"
#include "cc/presets.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "tools/bench/timing.h"

namespace kvspec {
namespace bench {
namespace {

// The trace's rows, every head: rows[h][t] is step t's full-cache row
// (t weights). The query at position q of the prompt attends as step q + 1
// does (spec/measures.md#prefill), so rows up to prompt + decode.
struct Rows {
  std::vector<std::vector<std::vector<float>>> rows;
  std::vector<std::vector<double>> sums;  // sums[h][t]: row t's sum
};

absl::StatusOr<Rows> TraceRows(const PrefillConfig& c) {
  TraceConfig trace;
  trace.steps = c.prompt + c.decode + 1;
  Rows out;
  out.rows.resize(c.query_heads);
  out.sums.resize(c.query_heads);
  for (uint32_t h = 0; h < c.query_heads; ++h) {
    absl::StatusOr<TraceGenerator> g = TraceGenerator::CreateForHead(trace, h);
    if (!g.ok()) return g.status();
    while (g->Advance()) {
      out.rows[h].push_back(g->Row());
      double sum = 0.0;
      for (float w : out.rows[h].back()) sum += w;
      out.sums[h].push_back(sum);
    }
  }
  return out;
}

struct Variant {
  std::string name;
  std::string what;
  PolicyConfig config;  // budget set per budget below
  int64_t window = 0;   // kept besides the budget (window_budget 1)
};

PolicyConfig Preset(const char* policy, const char* preset,
                    std::vector<Parameter> extra = {}) {
  return *ExpandPreset({policy, std::move(extra)}, preset);
}

std::vector<Variant> Variants() {
  std::vector<Variant> v;
  // snapkv: kvpress's preset and one choice changed at a time, then the
  // other presets. Windows: kvpress's 64, KVCache-Factory's 8.
  v.push_back({"snapkv kvpress-0.5.5", "mean, avg, window inside, kv_head",
               Preset("snapkv", "kvpress-0.5.5"), 0});
  v.push_back({"snapkv kvpress, sum", "window_reduce sum",
               Preset("snapkv", "kvpress-0.5.5", {{"window_reduce", 0}}), 0});
  v.push_back({"snapkv kvpress, max", "pooling max",
               Preset("snapkv", "kvpress-0.5.5", {{"pooling", 0}}), 0});
  v.push_back({"snapkv kvpress, kernel 1", "pool_kernel 1 (no pooling)",
               Preset("snapkv", "kvpress-0.5.5", {{"pool_kernel", 1}}), 0});
  v.push_back({"snapkv kvpress, query_head", "granularity query_head",
               Preset("snapkv", "kvpress-0.5.5", {{"granularity", 2}}), 0});
  v.push_back({"snapkv official", "sum, avg, window outside, query_head",
               Preset("snapkv", "official"), 64});
  v.push_back({"snapkv kvcache-factory",
               "sum, max, kernel 7, window 8 outside, query_head",
               Preset("snapkv", "kvcache-factory"), 8});
  v.push_back({"h2o kvpress-0.5.5", "normalize 1, kv_head",
               Preset("h2o", "kvpress-0.5.5"), 0});
  v.push_back({"h2o kvpress, raw", "normalize 0",
               Preset("h2o", "kvpress-0.5.5", {{"normalize", 0}}), 0});
  v.push_back({"h2o kvcache-factory", "raw, window 8 protected, query_head",
               Preset("h2o", "kvcache-factory"), 0});
  v.push_back({"tova kvpress-0.5.5", "last row, newest protected, layer",
               Preset("tova", "kvpress-0.5.5"), 0});
  v.push_back({"tova, newest a candidate", "protect_newest 0",
               Preset("tova", "kvpress-0.5.5", {{"protect_newest", 0}}), 0});
  v.push_back({"streamingllm kvpress-0.5.5", "4 sinks, the latest",
               Preset("streamingllm", "kvpress-0.5.5"), 0});
  return v;
}

// Query rows the prefill step carries per head: the whole causal matrix
// for h2o, the window for snapkv, the last row for the others.
uint32_t RowsNeeded(const PolicyConfig& config, uint32_t prompt) {
  if (config.name == "h2o") return prompt;
  if (config.name == "snapkv") {
    return static_cast<uint32_t>(
        std::min<int64_t>(prompt, EffectiveParameter(config, "obs_window")));
  }
  return 1;
}

struct Layer {
  std::vector<std::vector<uint32_t>> covers;
  std::vector<std::unique_ptr<Policy>> sets;
  std::vector<Policy*> pointers;
};

absl::StatusOr<Layer> BuildLayer(const PolicyConfig& config,
                                 const HeadCounts& heads) {
  Layer layer;
  const bool reads = ReadsAttention(config.name);
  const Granularity granularity =
      reads ? static_cast<Granularity>(EffectiveParameter(config, "granularity"))
            : Granularity::kLayer;
  layer.covers = SetsOf(granularity, heads, reads);
  for (const std::vector<uint32_t>& cover : layer.covers) {
    absl::StatusOr<std::unique_ptr<Policy>> policy =
        MakePolicy(config, cover.size());
    if (!policy.ok()) return policy.status();
    layer.pointers.push_back(policy->get());
    layer.sets.push_back(*std::move(policy));
  }
  return layer;
}

}  // namespace

absl::StatusOr<std::vector<PrefillRun>> MeasurePrefill(const PrefillConfig& c,
                                                       int repetitions) {
  const HeadCounts counts{c.query_heads, c.kv_heads};
  KVSPEC_RETURN_IF_ERROR(CheckHeadCounts(counts));
  std::fprintf(stderr, "prefill: the trace's rows, %u heads\n", c.query_heads);
  absl::StatusOr<Rows> trace = TraceRows(c);
  if (!trace.ok()) return trace.status();
  std::vector<PrefillRun> runs;
  for (uint32_t budget : c.budgets) {
    for (const Variant& variant : Variants()) {
      PrefillRun run;
      run.variant = variant.name;
      run.policy = variant.config.name;
      run.what = variant.what;
      run.budget = budget;
      run.config = variant.config;
      bool replaced = false;
      for (Parameter& p : run.config.parameters) {
        if (p.name == "budget") {
          p.value = budget - variant.window;
          replaced = true;
        }
      }
      if (!replaced) run.config.parameters.push_back({"budget", budget - variant.window});
      std::fprintf(stderr, "prefill: %s, budget %u\n", variant.name.c_str(), budget);
      const uint32_t m = RowsNeeded(run.config, c.prompt);
      run.query_rows = m;
      // The prefill step's inputs, per set: its heads' last m query rows
      // (nothing is kept before the prompt, so gathered = the rows).
      absl::StatusOr<Layer> layer = BuildLayer(run.config, counts);
      if (!layer.ok()) return layer.status();
      std::vector<std::vector<float>> queries(layer->sets.size());
      for (size_t s = 0; s < layer->sets.size(); ++s) {
        for (uint32_t h : layer->covers[s]) {
          for (uint32_t q = c.prompt - m; q < c.prompt; ++q) {
            const std::vector<float>& row = trace->rows[h][q + 1];
            queries[s].insert(queries[s].end(), row.begin(), row.end());
          }
        }
      }
      const auto inputs_of = [&]() {
        std::vector<StepInput> inputs(queries.size());
        for (size_t s = 0; s < queries.size(); ++s) {
          inputs[s].first = 0;
          inputs[s].count = c.prompt;
          inputs[s].queries = absl::MakeConstSpan(queries[s]);
          inputs[s].query_rows = m;
        }
        return inputs;
      };
      const SharedBudget none;
      // Timing: a fresh layer's prefill step, against the touch loop.
      std::vector<double> step_ns, touch_ns;
      for (int r = 0; r < repetitions; ++r) {
        absl::StatusOr<Layer> fresh = BuildLayer(run.config, counts);
        if (!fresh.ok()) return fresh.status();
        const std::vector<StepInput> inputs = inputs_of();
        auto start = std::chrono::steady_clock::now();
        absl::StatusOr<std::vector<StepRecord>> records =
            StepSets(fresh->pointers, inputs, none, /*record_cut=*/false);
        step_ns.push_back(Seconds(start) * 1e9 / c.prompt);
        if (!records.ok()) return records.status();
        uint64_t checksum = 0;
        start = std::chrono::steady_clock::now();
        for (const std::vector<float>& set : queries) {
          for (float w : set) {
            uint32_t bits;
            std::memcpy(&bits, &w, sizeof(bits));
            checksum += bits;
          }
        }
        touch_ns.push_back(Seconds(start) * 1e9 / c.prompt);
        if (checksum == 1) std::fprintf(stderr, "unreachable\n");
      }
      run.ns_per_position = Median(step_ns);
      run.touch_ns_per_position = Median(touch_ns);
      // The measured run: the prefill step, then the decode steps (which
      // never evict: prefill_only 1), each head's retained mass at each.
      absl::StatusOr<std::vector<StepRecord>> records =
          StepSets(layer->pointers, inputs_of(), none, false);
      if (!records.ok()) return records.status();
      std::vector<size_t> set_of(c.query_heads);
      for (size_t s = 0; s < layer->covers.size(); ++s) {
        for (uint32_t h : layer->covers[s]) set_of[h] = s;
      }
      std::vector<double> sum_r(c.query_heads, 0.0);
      std::vector<std::vector<float>> gathered(layer->sets.size());
      for (uint32_t t = c.prompt; t < c.prompt + c.decode; ++t) {
        std::vector<StepInput> inputs(layer->sets.size());
        for (size_t s = 0; s < layer->sets.size(); ++s) {
          gathered[s].clear();
          for (uint32_t h : layer->covers[s]) {
            const std::vector<float>& row = trace->rows[h][t];
            double kept = 0.0;
            for (Position p : layer->sets[s]->kept()) {
              gathered[s].push_back(row[p]);
              kept += row[p];
            }
            // spec/measures.md#prefill: r_h(t), the share of step t's row
            // on the positions h's set keeps when the step's query reads.
            sum_r[h] += kept / trace->sums[h][t];
          }
          inputs[s] = {t, 1, absl::MakeConstSpan(gathered[s])};
        }
        records = StepSets(layer->pointers, inputs, none, false);
        if (!records.ok()) return records.status();
      }
      double total = 0.0;
      for (uint32_t h = 0; h < c.query_heads; ++h) {
        const double mean = sum_r[h] / c.decode;
        total += mean;
        run.worst_head = std::min(run.worst_head, mean);
      }
      run.mass = total / c.query_heads;
      runs.push_back(std::move(run));
    }
  }
  return runs;
}

namespace {

std::string Rows(const PrefillConfig& c, const std::vector<PrefillRun>& runs,
                 const std::string& policy, bool timed) {
  std::string out;
  for (const PrefillRun& first : runs) {
    if (first.budget != c.budgets[0]) break;
    if (!policy.empty() && first.policy != policy) continue;
    std::string line = absl::StrFormat("| %s | %s | %u |", first.variant,
                                       first.what, first.query_rows);
    for (const PrefillRun& run : runs) {
      if (run.variant != first.variant) continue;
      line += absl::StrFormat(" %.4f (%.4f) |", run.mass, run.worst_head);
    }
    if (timed) {
      for (const PrefillRun& run : runs) {
        if (run.variant != first.variant || run.budget != c.budgets.back()) continue;
        line += absl::StrFormat(" %.1f | %.1f | %.1fx |", run.ns_per_position,
                                run.touch_ns_per_position,
                                run.ns_per_position / run.touch_ns_per_position);
      }
    }
    out += line + "\n";
  }
  return out;
}

std::string Header(const PrefillConfig& c, bool timed) {
  std::string out = "| variant | what changes | query rows per head |";
  std::string rule = "| --- | --- | ---: |";
  for (uint32_t budget : c.budgets) {
    out += absl::StrFormat(" budget %u |", budget);
    rule += " ---: |";
  }
  if (timed) {
    out += absl::StrFormat(" ns/position (budget %u) | touch ns | ratio |",
                           c.budgets.back());
    rule += " ---: | ---: | ---: |";
  }
  return out + "\n" + rule + "\n";
}

}  // namespace

std::string PrefillMarkdown(const PrefillConfig& c,
                            const std::vector<PrefillRun>& runs) {
  return absl::StrFormat(
             "### Prefill: a %u-position prompt, then %u decode steps\n\n"
             "The multi-head canonical trace (spec/trace.md#several-heads), "
             "%u query heads in %u groups; the prompt is one prefill step "
             "(spec/prefill.md) compressed to the budget, then decode steps "
             "that never evict (prefill_only 1). Mass: the mean over heads "
             "of each head's mean retained mass over the decode steps, and "
             "in brackets the least head's (spec/measures.md#prefill). "
             "Time: the prefill step per prompt position, median of the "
             "repetitions, against a loop that reads its query rows once.\n\n",
             c.prompt, c.decode, c.query_heads, c.kv_heads) +
         Header(c, true) + Rows(c, runs, "", true);
}

std::string PrefillCardBlock(const PrefillConfig& c,
                             const std::vector<PrefillRun>& runs,
                             const std::string& policy) {
  return absl::StrFormat(
             "Computed by `bazel run -c opt //tools:bench -- "
             "--sections=prefill` (a test fails when this block is stale): "
             "the multi-head canonical trace, %u query heads in %u groups; a "
             "%u-position prompt as one prefill step compressed to the "
             "budget, then %u decode steps that never evict. Mass: the mean "
             "over heads of each head's mean retained mass over the decode "
             "steps, and in brackets the least head's "
             "([measures.md](../measures.md#prefill)).\n\n",
             c.query_heads, c.kv_heads, c.prompt, c.decode) +
         Header(c, false) + Rows(c, runs, policy, false);
}

}  // namespace bench
}  // namespace kvspec
