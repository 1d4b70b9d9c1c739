#include "cc/presets.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"

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
      {"snapkv", "official",
       {{"budget", 256}, {"recent_window", 0}, {"obs_window", 64},
        {"pool_kernel", 5}, {"granularity", 2}, {"prefill_only", 1},
        {"window_reduce", 0}, {"pooling", 1}, {"window_budget", 1}},
       "FasterDecoding/SnapKV snapkv/monkeypatch/snapkv_utils.py, "
       "SnapKVCluster.update_kv (window 64, capacity 256 + 64, kernel 5, "
       "avgpool)"},
  };
  return *presets;
}

absl::StatusOr<PolicyConfig> ExpandPreset(const PolicyConfig& config,
                                          absl::string_view name) {
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
    return expanded;
  }
  return Refuse(ErrorCategory::kInvalidParameter,
                absl::StrFormat("%s: unknown preset '%s'; %s", config.name,
                                name,
                                known.empty()
                                    ? "it has no presets"
                                    : "its presets are " +
                                          absl::StrJoin(known, ", ")));
}

}  // namespace kvspec
