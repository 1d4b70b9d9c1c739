#include "tools/bench/heads.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/heads.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "tools/bench/timing.h"

namespace kvspec {
namespace bench {
namespace {

// Every step's attention as each set received it: per step, per set, the
// set's heads' weights of its kept positions, flattened.
struct Recording {
  std::vector<float> weights;
  // Step t, set s: [offsets[t * sets + s], offsets[t * sets + s + 1]).
  std::vector<size_t> offsets;
  size_t sets = 0;
  absl::Span<const float> At(uint32_t t, size_t s) const {
    const size_t i = t * sets + s;
    return absl::MakeConstSpan(weights.data() + offsets[i],
                               offsets[i + 1] - offsets[i]);
  }
};

struct Layer {
  std::vector<std::vector<uint32_t>> covers;
  std::vector<std::unique_ptr<Policy>> sets;
};

absl::StatusOr<Layer> BuildLayer(const PolicyConfig& config,
                                 Granularity granularity,
                                 const HeadCounts& heads) {
  Layer layer;
  layer.covers = SetsOf(granularity, heads, ReadsAttention(config.name));
  for (const std::vector<uint32_t>& cover : layer.covers) {
    absl::StatusOr<std::unique_ptr<Policy>> policy =
        MakePolicy(config, cover.size());
    if (!policy.ok()) return policy.status();
    layer.sets.push_back(*std::move(policy));
  }
  return layer;
}

absl::StatusOr<std::vector<TraceGenerator>> Generators(const HeadsConfig& c) {
  TraceConfig trace;
  trace.steps = c.steps;
  std::vector<TraceGenerator> heads;
  for (uint32_t h = 0; h < c.query_heads; ++h) {
    absl::StatusOr<TraceGenerator> g = TraceGenerator::CreateForHead(trace, h);
    if (!g.ok()) return g.status();
    heads.push_back(*std::move(g));
  }
  return heads;
}

// row_sums[h][t - from]: spec/measures.md's row_sum(t) of head h.
absl::StatusOr<std::vector<std::vector<double>>> RowSums(const HeadsConfig& c) {
  absl::StatusOr<std::vector<TraceGenerator>> heads = Generators(c);
  if (!heads.ok()) return heads.status();
  std::vector<std::vector<double>> sums(c.query_heads);
  for (uint32_t h = 0; h < c.query_heads; ++h) {
    TraceGenerator& g = (*heads)[h];
    while (g.Advance()) {
      if (g.step() < c.from) continue;
      double sum = 0.0;
      for (Position p = 0; p < g.step(); ++p) sum += g.Weight(p);
      sums[h].push_back(sum);
    }
  }
  return sums;
}

// Runs the layer over the trace once: records every set's inputs, the
// per-head retained mass and the peak memory.
absl::Status RecordRun(const HeadsConfig& c, Layer& layer,
                       const SharedBudget& shared,
                       const std::vector<std::vector<double>>& row_sums,
                       Recording& recording, HeadsRun& run) {
  absl::StatusOr<std::vector<TraceGenerator>> heads = Generators(c);
  if (!heads.ok()) return heads.status();
  std::vector<size_t> set_of(c.query_heads);
  for (size_t s = 0; s < layer.covers.size(); ++s) {
    for (uint32_t h : layer.covers[s]) set_of[h] = s;
  }
  std::vector<double> sum_r(c.query_heads, 0.0);
  recording.sets = layer.sets.size();
  recording.offsets.assign(1, 0);
  while (true) {
    bool more = true;
    for (TraceGenerator& g : *heads) more = g.Advance() && more;
    if (!more) break;
    const uint32_t t = (*heads)[0].step();
    if (t >= c.from) {
      // spec/measures.md#several-heads: r_h(t) over h's set's kept set.
      for (uint32_t h = 0; h < c.query_heads; ++h) {
        double kept = 0.0;
        for (Position p : layer.sets[set_of[h]]->kept()) {
          kept += (*heads)[h].Weight(p);
        }
        sum_r[h] += kept / row_sums[h][t - c.from];
      }
    }
    std::vector<Policy*> sets;
    for (size_t s = 0; s < layer.sets.size(); ++s) {
      Policy& policy = *layer.sets[s];
      sets.push_back(&policy);
      for (uint32_t h : layer.covers[s]) {
        for (Position p : policy.kept()) {
          recording.weights.push_back((*heads)[h].Weight(p));
        }
      }
      recording.offsets.push_back(recording.weights.size());
    }
    std::vector<StepInput> inputs;
    for (size_t s = 0; s < sets.size(); ++s) {
      inputs.push_back({t, 1, recording.At(t, s)});
    }
    absl::StatusOr<std::vector<StepRecord>> records =
        StepSets(sets, inputs, shared, /*record_cut=*/false);
    if (!records.ok()) return records.status();
    size_t memory = 0;
    for (Policy* policy : sets) memory += policy->MemoryBytes();
    run.peak_memory_bytes = std::max(run.peak_memory_bytes, memory);
  }
  const double measured = static_cast<double>(c.steps - c.from);
  run.head_means.clear();
  double total = 0.0;
  for (uint32_t h = 0; h < c.query_heads; ++h) {
    run.head_means.push_back(sum_r[h] / measured);
    total += run.head_means.back();
    run.worst_head = std::min(run.worst_head, run.head_means.back());
  }
  run.mean = total / static_cast<double>(c.query_heads);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<HeadsRun>> MeasureHeads(const HeadsConfig& c,
                                                   int repetitions) {
  const HeadCounts counts{c.query_heads, c.kv_heads};
  KVSPEC_RETURN_IF_ERROR(CheckHeadCounts(counts));
  absl::StatusOr<std::vector<std::vector<double>>> row_sums = RowSums(c);
  if (!row_sums.ok()) return row_sums.status();
  std::vector<std::pair<PolicyConfig, std::string>> plan;
  const int64_t budget = c.budget;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    // A trace has no keys and no query rows: a policy reading keys, or
    // deciding at prefill steps only, without a budget (simlayerkv), is not run.
    if (ReadsKeys(info.name) || !(info.name == "full" || TakesParameter(info.name, "budget"))) continue;
    std::vector<Parameter> parameters;
    for (const ParameterInfo& p : info.parameters) {
      if (p.name == "budget") parameters.push_back({"budget", budget});
    }
    if (!ReadsAttention(info.name)) {
      plan.push_back({{info.name, parameters, 1}, "one set"});
      continue;
    }
    const char* const names[] = {"layer", "kv_head", "query_head"};
    for (int64_t g = 0; g < 3; ++g) {
      std::vector<Parameter> with = parameters;
      with.push_back({"granularity", g});
      plan.push_back({{info.name, with, 1}, names[g]});
    }
    // spec/heads.md#head-adaptive-budgets: the KV heads' sets sharing the
    // layer's budget (AdaKV, safeguard 200).
    std::vector<Parameter> adaptive = parameters;
    adaptive.push_back({"granularity", 1});
    adaptive.push_back({"adaptive", 1});
    plan.push_back({{info.name, adaptive, 1}, "kv_head, adaptive"});
  }
  std::vector<HeadsRun> runs;
  for (const auto& [config, granularity_name] : plan) {
    std::fprintf(stderr, "heads: %s, %s\n", config.name.c_str(),
                 granularity_name.c_str());
    const Granularity granularity =
        ReadsAttention(config.name)
            ? static_cast<Granularity>(EffectiveParameter(config, "granularity"))
            : Granularity::kLayer;
    HeadsRun run;
    run.policy = config;
    const SharedBudget shared = SharedBudgetOf(
        config, SetsOf(granularity, counts, ReadsAttention(config.name)).size());
    run.granularity = granularity_name;
    Recording recording;
    {
      absl::StatusOr<Layer> layer = BuildLayer(config, granularity, counts);
      if (!layer.ok()) return layer.status();
      run.sets = layer->sets.size();
      KVSPEC_RETURN_IF_ERROR(
          RecordRun(c, *layer, shared, *row_sums, recording, run));
    }
    // spec/measures.md#speed, for a layer: the measured steps of every set,
    // replayed from the recording; the touch loop reads the same inputs.
    std::vector<double> policy_ns, touch_ns;
    const double measured = static_cast<double>(c.steps - c.from);
    for (int r = 0; r < repetitions; ++r) {
      absl::StatusOr<Layer> layer = BuildLayer(config, granularity, counts);
      if (!layer.ok()) return layer.status();
      std::vector<Policy*> sets;
      for (auto& set : layer->sets) sets.push_back(set.get());
      std::vector<StepInput> inputs(sets.size());
      auto step = [&](uint32_t t) {
        for (size_t s = 0; s < sets.size(); ++s) {
          inputs[s] = {t, 1, recording.At(t, s)};
        }
        absl::StatusOr<std::vector<StepRecord>> records =
            StepSets(sets, inputs, shared, /*record_cut=*/false);
        return records.ok() ? records->size() : 0;
      };
      for (uint32_t t = 0; t < c.from; ++t) (void)step(t);
      auto start = std::chrono::steady_clock::now();
      size_t evicted = 0;
      for (uint32_t t = c.from; t < c.steps; ++t) evicted += step(t);
      policy_ns.push_back(Seconds(start) * 1e9 / measured);
      // The touch loop (spec/measures.md#speed's baseline, for a layer):
      // every recorded weight of the step and a buffer the size of the
      // layer's peak state, read once and folded into a checksum.
      const size_t words = (run.peak_memory_bytes + 7) / 8;
      std::vector<uint64_t> buffer(words);
      for (size_t i = 0; i < words; ++i) buffer[i] = i * 0x9e3779b97f4a7c15u;
      uint64_t checksum = 0;
      start = std::chrono::steady_clock::now();
      for (uint32_t t = c.from; t < c.steps; ++t) {
        uint64_t sum = 0;
        for (size_t s = 0; s < recording.sets; ++s) {
          for (float w : recording.At(t, s)) {
            uint32_t bits;
            std::memcpy(&bits, &w, sizeof(bits));
            sum += bits;
          }
        }
        for (uint64_t word : buffer) sum += word;
        checksum ^= sum;
      }
      touch_ns.push_back(Seconds(start) * 1e9 / measured);
      // Keep both loops' results alive.
      if (checksum == 1 && evicted == static_cast<size_t>(-1)) {
        std::fprintf(stderr, "unreachable\n");
      }
    }
    run.ns_per_step = Median(policy_ns);
    run.touch_ns_per_step = Median(touch_ns);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::string HeadsMarkdown(const HeadsConfig& c, const std::vector<HeadsRun>& runs) {
  std::string out = absl::StrFormat(
      "### Several heads: %u query heads, %u KV heads, budget %u per set\n\n"
      "The multi-head canonical trace (spec/trace.md#several-heads), %u "
      "steps, measured from step %u. Mass: the mean over heads of each "
      "head's mean retained mass (spec/measures.md#several-heads); worst "
      "head: the least head's. Time: one layer step (every set), median of "
      "the repetitions, against a loop that reads the same inputs.\n\n"
      "| policy | granularity | sets | mass | worst head | peak memory (KiB) | ns/step | touch ns/step | ratio |\n"
      "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
      c.query_heads, c.kv_heads, c.budget, c.steps, c.from);
  for (const HeadsRun& run : runs) {
    out += absl::StrFormat(
        "| `%s` | %s | %d | %.4f | %.4f | %.0f | %.0f | %.0f | %.1fx |\n",
        run.policy.name, run.granularity, run.sets, run.mean, run.worst_head,
        static_cast<double>(run.peak_memory_bytes) / 1024.0,
        run.ns_per_step, run.touch_ns_per_step,
        run.ns_per_step / run.touch_ns_per_step);
  }
  return out;
}

}  // namespace bench
}  // namespace kvspec
