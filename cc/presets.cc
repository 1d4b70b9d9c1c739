#include "cc/presets.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"
#include "cc/registry.h"

namespace kvspec {

const std::vector<Preset>& Presets() {
  // Each row: spec/policies/<policy>.md, "Presets".
  static const auto* presets = new std::vector<Preset>{
      {"streamingllm", "kvpress-0.5.5",
       {{"sinks", 4}, {"prefill_only", 1}},
       "kvpress 0.5.5 presses/streaming_llm_press.py, StreamingLLMPress.score"},
      {"streamingllm", "official",
       {{"budget", 516}, {"sinks", 4}, {"prefill_only", 0}},
       "mit-han-lab/streaming-llm streaming_llm/kv_cache.py, "
       "StartRecentKVCache(start_size=4, recent_size=512)"},
      {"h2o", "kvcache-factory",
       {{"budget", 512}, {"recent_window", 8}, {"granularity", 2},
        {"prefill_only", 1}, {"normalize", 0}},
       "Zefan-Cai/KVCache-Factory pyramidkv/pyramidkv_utils.py, "
       "H2OKVCluster.update_kv, with run_longbench.py's window 8, capacity 512"},
      {"h2o", "kvpress-0.5.5",
       {{"recent_window", 0}, {"granularity", 1}, {"aggregation", 0},
        {"prefill_only", 1}, {"normalize", 1}},
       "kvpress 0.5.5 presses/observed_attention_press.py, "
       "ObservedAttentionPress.score"},
      {"h2o", "official",
       {{"budget", 516}, {"recent_window", 512}, {"granularity", 2},
        {"prefill_only", 0}, {"normalize", 0}},
       "FMInference/H2O h2o_hf/utils_real_drop/modify_llama.py, "
       "H2OKVCache_LayerWise(hh_size=4, recent_size=512)"},
      {"tova", "kvpress-0.5.5",
       {{"recent_window", 0}, {"granularity", 0}, {"aggregation", 0},
        {"prefill_only", 1}, {"protect_newest", 1}},
       "kvpress 0.5.5 presses/tova_press.py, TOVAPress.score"},
      {"tova", "kvpress-0.5.5-decoding",
       {{"budget", 2048}, {"recent_window", 1}, {"granularity", 0},
        {"aggregation", 0}, {"prefill_only", 0}, {"protect_newest", 1},
        {"interval", 512}},
       "kvpress 0.5.5 presses/decoding_press.py, DecodingPress(TOVAPress()) "
       "at its defaults compression_interval 512, target_size 2048"},
      {"tova", "official",
       {{"budget", 512}, {"recent_window", 0}, {"granularity", 0},
        {"aggregation", 0}, {"prefill_only", 0}, {"protect_newest", 0}},
       "schwartz-lab-NLP/TOVA src/tova_cache.py, TOVACache.reduce "
       "(cache_size 512)"},
      {"snapkv", "kvcache-factory",
       {{"budget", 504}, {"recent_window", 0}, {"obs_window", 8},
        {"pool_kernel", 7}, {"granularity", 2}, {"prefill_only", 1},
        {"window_reduce", 0}, {"pooling", 0}, {"window_budget", 1}},
       "Zefan-Cai/KVCache-Factory pyramidkv/pyramidkv_utils.py, "
       "SnapKVCluster.update_kv, with run_longbench.py's window 8, kernel 7, "
       "maxpool, capacity 512"},
      {"snapkv", "kvpress-0.5.5",
       {{"recent_window", 0}, {"obs_window", 64}, {"pool_kernel", 5},
        {"granularity", 1}, {"aggregation", 0}, {"prefill_only", 1},
        {"window_reduce", 1}, {"pooling", 1}, {"window_budget", 0}},
       "kvpress 0.5.5 presses/snapkv_press.py, SnapKVPress.score and "
       "ScorerPress.compress"},
      // spec/policies/pyramidkv.md#presets: the snapkv presets above with
      // the pyramid's formula.
      {"snapkv", "kvcache-factory-pyramidkv",
       {{"budget", 504}, {"recent_window", 0}, {"obs_window", 8},
        {"pool_kernel", 7}, {"granularity", 2}, {"prefill_only", 1},
        {"window_reduce", 0}, {"pooling", 0}, {"window_budget", 1},
        {"pyramid", 2}, {"pyramid_beta", 20}},
       "Zefan-Cai/KVCache-Factory pyramidkv/pyramidkv_utils.py, "
       "PyramidKVCluster.update_kv, with run_longbench.py's window 8, kernel "
       "7, maxpool, capacity 512, beta 20; give layer and layers"},
      {"snapkv", "kvpress-0.5.5-pyramidkv",
       {{"recent_window", 0}, {"obs_window", 64}, {"pool_kernel", 5},
        {"granularity", 1}, {"aggregation", 0}, {"prefill_only", 1},
        {"window_reduce", 1}, {"pooling", 1}, {"window_budget", 0},
        {"pyramid", 1}, {"pyramid_beta", 20}},
       "kvpress 0.5.5 presses/pyramidkv_press.py, "
       "PyramidKVPress.get_layer_budget and compress; give ratio_ppm, layer "
       "and layers"},
      {"snapkv", "official",
       {{"budget", 256}, {"recent_window", 0}, {"obs_window", 64},
        {"pool_kernel", 5}, {"granularity", 2}, {"prefill_only", 1},
        {"window_reduce", 0}, {"pooling", 1}, {"window_budget", 1}},
       "FasterDecoding/SnapKV snapkv/monkeypatch/snapkv_utils.py, "
       "SnapKVCluster.update_kv (window 64, capacity 256 + 64, kernel 5, "
       "avgpool)"},
      // spec/policies/knorm.md#presets.
      {"knorm", "kvpress-0.5.5",
       {{"recent_window", 0}, {"granularity", 1}, {"aggregation", 0},
        {"prefill_only", 1}},
       "kvpress 0.5.5 presses/knorm_press.py, KnormPress.score and "
       "ScorerPress.compress"},
      // spec/policies/keydiff.md#presets.
      {"keydiff", "kvpress-0.5.5",
       {{"recent_window", 0}, {"granularity", 1}, {"aggregation", 0},
        {"prefill_only", 1}},
       "kvpress 0.5.5 presses/keydiff_press.py, KeyDiffPress.score and "
       "ScorerPress.compress"},
      // spec/policies/lagkv.md#presets.
      {"lagkv", "kvpress-0.5.5",
       {{"sinks", 4}, {"lag", 128}, {"cross_scoring", 0}, {"granularity", 1},
        {"aggregation", 0}, {"prefill_only", 1}},
       "kvpress 0.5.5 presses/lagkv_press.py, LagKVPress.score and "
       "_get_states_score; ScorerPress.compress"},
      // spec/policies/simlayerkv.md#presets.
      {"simlayerkv", "kvpress-0.5.5",
       {{"n_initial", 4}, {"n_recent", 1024}, {"n_last", 1}},
       "kvpress 0.5.5 presses/simlayerkv_press.py, SimLayerKVPress.compress "
       "and is_lazy; snapkv_press.py, compute_window_attention"},
      // spec/policies/openvino.md#presets.
      {"openvino", "openvino-genai-2026.3.0",
       {{"budget", 672}, {"sinks", 32}, {"recent_window", 128}, {"block", 32},
        {"norm_sum", 1}, {"max_pool", 7}, {"obs_window", 8}},
       "OpenVINO GenAI 2026.3.0.0 openvino/genai/cache_eviction.hpp, "
       "CacheEvictionConfig's defaults; kv_cache_manager.hpp's CPU block 32; "
       "pipeline_impl.cpp, _maybe_evict_cache_blocks (max pool 7)"},
      // spec/spans.md#presets: engines' positional caches.
      {"window", "hf-dynamic-5.2.0",
       {{"evict_at", 0}, {"position_ids", 0}, {"spans", 1}},
       "transformers 5.2.0 cache_utils.py, DynamicSlidingWindowLayer.update; "
       "masking_utils.py, sliding_window_overlay and chunked_overlay",
       Preset::Derive::kBudgetIsSpanMinusOne},
      {"window", "hf-static-5.2.0",
       {{"evict_at", 0}, {"position_ids", 0}, {"spans", 1}},
       "transformers 5.2.0 cache_utils.py, StaticSlidingWindowLayer.update; "
       "masking_utils.py, sliding_window_overlay and chunked_overlay",
       Preset::Derive::kBudgetIsSpan},
      {"window", "mlx-lm-0.32.2",
       {{"evict_at", 2}, {"position_ids", 0}, {"spans", 1}},
       "mlx-lm 0.32.2 models/cache.py, RotatingKVCache(max_size=budget, "
       "keep=0): _update_concat, _update_in_place, make_mask",
       Preset::Derive::kSpanIsBudget},
      {"streamingllm", "mlx-lm-0.32.2",
       {{"evict_at", 2}, {"position_ids", 0}, {"spans", 1}},
       "mlx-lm 0.32.2 models/cache.py, RotatingKVCache(max_size=budget, "
       "keep=sinks); make_prompt_cache gives keep 4 for --max-kv-size",
       Preset::Derive::kSpanIsBudgetMinusSinks},
      // spec/spans.md#context-shift: budget n_ctx - 1, sinks the server's
      // n_keep (plus BOS, capped at n_ctx - 4); the user gives both.
      {"streamingllm", "llama.cpp-0c1e570",
       {{"context_shift", 1}, {"evict_at", 0}, {"position_ids", 1},
        {"spans", 1}},
       "llama.cpp 0c1e570 (vendored by llama-cpp-python 0.3.36) "
       "tools/server/server-context.cpp, pre_decode: seq_rm(n_keep, n_keep + "
       "n_discard), seq_add(n_keep + n_discard, n, -n_discard)"},
  };
  return *presets;
}

namespace {

const Parameter* Find(const PolicyConfig& config, absl::string_view name) {
  for (const Parameter& p : config.parameters) {
    if (p.name == name) return &p;
  }
  return nullptr;
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

// spec/spans.md#presets: the derived parameter of an engine preset.
absl::Status Derive(const Preset& preset, PolicyConfig& config) {
  const auto missing = [&](const char* what) {
    return Refuse(ErrorCategory::kInvalidParameter, {"rule", {"preset"}},
                  absl::StrFormat("%s: preset %s needs %s", config.name,
                                  preset.name, what));
  };
  switch (preset.derive) {
    case Preset::Derive::kNothing:
      return absl::OkStatus();
    case Preset::Derive::kBudgetIsSpanMinusOne:
    case Preset::Derive::kBudgetIsSpan: {
      const Parameter* span = Find(config, "span_window");
      if (span == nullptr || span->value == 0) span = Find(config, "span_chunk");
      if (span == nullptr || span->value == 0) {
        return missing("span_window or span_chunk (the engine's window)");
      }
      const int64_t budget =
          preset.derive == Preset::Derive::kBudgetIsSpanMinusOne
              ? span->value - 1
              : span->value;
      if (budget < 1) {
        return Refuse(
            ErrorCategory::kInvalidParameter, {"rule", {"preset"}},
            absl::StrFormat("%s: preset %s needs a window of at least 2 (it "
                            "keeps window - 1 positions), got %s %d",
                            config.name, preset.name, span->name, span->value));
      }
      Set(config, "budget", budget);
      return absl::OkStatus();
    }
    case Preset::Derive::kSpanIsBudget:
    case Preset::Derive::kSpanIsBudgetMinusSinks: {
      const Parameter* budget = Find(config, "budget");
      if (budget == nullptr) return missing("budget (the engine's max_size)");
      int64_t span = budget->value;
      if (preset.derive == Preset::Derive::kSpanIsBudgetMinusSinks) {
        const Parameter* sinks = Find(config, "sinks");
        if (sinks == nullptr) return missing("sinks (the engine's keep)");
        span -= sinks->value;
      }
      Set(config, "span_window", span);
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PolicyConfig> ExpandPreset(const PolicyConfig& config,
                                          absl::string_view name) {
  // An unknown policy is said before an unknown preset of it: "foo: unknown
  // preset" would suggest the policy exists.
  std::vector<std::string> policies;
  for (const PolicyInfo& info : RegisteredPolicies()) policies.push_back(info.name);
  if (std::find(policies.begin(), policies.end(), config.name) == policies.end()) {
    return Refuse(ErrorCategory::kUnknownPolicy, {"unknown", {"name"}},
                  absl::StrFormat("unknown policy '%s'; the registry has %s",
                                  config.name, absl::StrJoin(policies, ", ")));
  }
  std::vector<std::string> known;
  for (const Preset& preset : Presets()) {
    if (preset.policy != config.name) continue;
    known.push_back(preset.name);
    if (preset.name != name) continue;
    PolicyConfig expanded = config;
    expanded.parameters = preset.parameters;
    for (const Parameter& given : config.parameters) {
      bool replaced = false;
      for (Parameter& p : expanded.parameters) {
        if (p.name == given.name) {
          p.value = given.value;
          replaced = true;
        }
      }
      if (!replaced) expanded.parameters.push_back(given);
    }
    KVSPEC_RETURN_IF_ERROR(Derive(preset, expanded));
    return expanded;
  }
  return Refuse(ErrorCategory::kInvalidParameter, {"unknown", {"preset"}},
                absl::StrFormat("%s: unknown preset '%s'; %s", config.name,
                                name,
                                known.empty()
                                    ? "it has no presets"
                                    : "its presets are " +
                                          absl::StrJoin(known, ", ")));
}

}  // namespace kvspec
