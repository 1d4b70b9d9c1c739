// The span, position-id and context-shift cases (spec/spans.md, specs
// 0.8.0 and 0.9.0), with the engine presets.
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

// Spec 0.8.0: spans and position ids (spec/spans.md), the engines' presets
// and a vector for each bug class engines have shipped in positional caches
// under chunked prefill (issue 20): each case is flagged with the rule it
// exists for and the engine.* class it reproduces.
PolicyConfig EnginePreset(const char* policy, const char* preset,
                          std::vector<Parameter> given) {
  absl::StatusOr<PolicyConfig> config =
      ExpandPreset({policy, std::move(given)}, preset);
  assert(config.ok());
  return *config;
}

}  // namespace

void AddSpanCases(SuiteBuilder& b) {
  // The bug classes, each a chunking of a cache of window (or max_size) 4.
  const struct {
    const char* name;       // scenario id suffix and case id part
    std::vector<uint32_t> chunks;
    const char* flag;       // engine.* class
    const char* what;       // what an engine gets wrong here
  } classes[] = {
      {"chunk-longer-than-window", {2, 1, 6, 1}, "engine.chunk-longer-than-window",
       "a chunk of 6 after 3 positions: its first queries need keys admitted "
       "before the chunk, which a ring of the window's size has overwritten "
       "(pytorch/executorch#20346), and no query may see more than the "
       "window (pytorch/executorch#21857)"},
      {"chunk-ends-on-wrap", {2, 2, 1}, "engine.chunk-ends-on-wrap",
       "a chunk that ends exactly when the ring is full, then a decode step "
       "(the read/write start after a wrap, huggingface/transformers#47708)"},
      {"short-prefill-then-wrap", {2, 1, 1, 1, 1, 1, 1},
       "engine.short-prefill-then-wrap",
       "a prefill shorter than the window, then decode steps across the wrap "
       "(huggingface/transformers#47708)"},
      {"continuation-chunk", {3, 1, 1, 1, 1, 5, 1}, "engine.continuation-chunk",
       "a chunk after decoding has begun, into a cache that has wrapped "
       "(lablup/mlxcel#678, #418; sgl-project/sglang#8649)"},
      {"short-last-chunk", {4, 4, 2, 1}, "engine.short-last-chunk",
       "a prompt of 10 in chunks of 4: the last chunk holds 2 real "
       "positions; padding it to 4 would evict real ones "
       "(cactus-compute/cactus#716)"},
      {"first-chunk-longer-than-window", {7, 2, 1}, nullptr,
       "a first chunk of 7, longer than the window, then a chunk and a "
       "decode step"},
  };
  for (const auto& c : classes) {
    b.Add(Chunks(std::string("span-") + c.name, c.chunks));
  }
  // A cache of 6 (the sinks' preset) is full after chunks of 2 and 4.
  b.Add(Chunks("span-chunk-ends-on-wrap-6", {2, 4, 1}));
  const struct {
    const char* id;  // case id prefix
    PolicyConfig config;
    std::vector<std::string> flags;
    const char* rule;
  } engines[] = {
      {"window/spans/hf-dynamic-5.2.0",
       EnginePreset("window", "hf-dynamic-5.2.0", {{"span_window", 4}}),
       {"spans.window"},
       "transformers 5.2.0's dynamic sliding layer: keeps W - 1 = 3 between "
       "steps, each query sees q - 3 .. q"},
      {"window/spans/hf-static-5.2.0",
       EnginePreset("window", "hf-static-5.2.0", {{"span_window", 4}}),
       {"spans.window"},
       "transformers 5.2.0's static sliding layer: keeps W = 4, each query "
       "sees q - 3 .. q"},
      {"window/spans/hf-dynamic-5.2.0-chunked",
       EnginePreset("window", "hf-dynamic-5.2.0", {{"span_chunk", 4}}),
       {"spans.chunk"},
       "chunked local attention of 4 (Llama 4) on transformers' dynamic "
       "layer: keeps 3, each query sees its own chunk of 4"},
      {"window/spans/mlx-lm-0.32.2",
       EnginePreset("window", "mlx-lm-0.32.2", {{"budget", 4}}),
       {"spans.window", "spans.evict-before-one"},
       "mlx-lm 0.32.2's RotatingKVCache(4, keep=0): down to 3 before each "
       "step, each query sees q - 3 .. q"},
      {"streamingllm/spans/mlx-lm-0.32.2",
       EnginePreset("streamingllm", "mlx-lm-0.32.2",
                    {{"budget", 6}, {"sinks", 2}}),
       {"spans.sinks-in-span", "spans.evict-before-one"},
       "mlx-lm 0.32.2's RotatingKVCache(6, keep=2): down to 5 before each "
       "step, keeping sinks 0 and 1; each query sees the sinks and q - 3 .. q"},
  };
  for (const auto& e : engines) {
    for (const auto& c : classes) {
      std::vector<std::string> flags;
      // spans.md#when-room-is-made: the two rules before admission agree
      // unless a chunk after the first is longer than the room rule 1
      // leaves, so these classes do not tell them apart.
      const bool decode_only = std::string(c.name) == "short-prefill-then-wrap" ||
                               std::string(c.name) == "chunk-ends-on-wrap";
      for (const std::string& flag : e.flags) {
        if (decode_only && flag.rfind("spans.evict-before", 0) == 0) continue;
        flags.push_back(flag);
      }
      if (c.flag != nullptr) flags.push_back(c.flag);
      std::string scenario = std::string("span-") + c.name;
      if (scenario == "span-chunk-ends-on-wrap" &&
          e.config.name == "streamingllm") {
        scenario = "span-chunk-ends-on-wrap-6";
      }
      b.Case(std::string(e.id) + "/" + c.name, flags,
             std::string(e.rule) + "; " + c.what, e.config, scenario);
    }
  }

  // spec/spans.md's worked examples.
  b.Add(Chunks("span-chunks-2-5-1", {2, 5, 1}));
  b.Add(Chunks("span-chunks-4-3-1", {4, 3, 1}));
  b.Case("window/spans/worked-example", {"spans.window", "defaults.decides"},
         "spans.md#span-rules: budget 3, span_window 4, chunks 2, 5, 1: query "
         "4 sees 1..4, query 6 sees 3..6, query 7 sees 4..7",
         P("window", {{"budget", 3}, {"span_window", 4}, {"spans", 1}}),
         "span-chunks-2-5-1");
  for (int64_t evict_at : {0, 1, 2}) {
    std::vector<std::string> flags = {"defaults.decides"};
    if (evict_at == 1) flags = {"spans.evict-before-room", "sinks.protected"};
    if (evict_at == 2) flags = {"spans.evict-before-one", "sinks.protected"};
    b.Case("streamingllm/spans/evict-at-" + std::to_string(evict_at), flags,
           "spans.md#when-room-is-made: budget 6, sinks 2, chunks 4, 3, 1 "
           "with evict_at " + std::to_string(evict_at),
           P("streamingllm", {{"budget", 6},
                              {"sinks", 2},
                              {"evict_at", evict_at},
                              {"spans", 1}}),
           "span-chunks-4-3-1");
  }
  // StreamingLLM's official code: room for the step (evict_for_space) and
  // keys re-rotated by their place in the cache (pos_shift).
  b.Case("streamingllm/spans/official-room-and-cache-ids",
         {"spans.ids-cache-relative"},
         "budget 5, sinks 2, evict_at 1, position_ids 1, single steps: at "
         "step 6 the held set is 0, 1, 4, 5, 6 with ids 0..4",
         P("streamingllm", {{"budget", 5},
                            {"sinks", 2},
                            {"evict_at", 1},
                            {"position_ids", 1},
                            {"spans", 1}}),
         "singles-7");
  b.Case("streamingllm/spans/official-continuation-chunk",
         {"spans.evict-before-room", "spans.ids-cache-relative",
          "engine.continuation-chunk"},
         "budget 5, sinks 2, evict_at 1, position_ids 1: a chunk of 5 after "
         "decoding takes every non-sink (4, 5, 6) before admission and stays "
         "whole (7 kept), with ids 0..6",
         P("streamingllm", {{"budget", 5},
                            {"sinks", 2},
                            {"evict_at", 1},
                            {"position_ids", 1},
                            {"spans", 1}}),
         "span-continuation-chunk");
  b.Case("streamingllm/spans/cache-ids-after-admission",
         {"spans.ids-cache-relative", "cache-relative"},
         "budget 5, sinks 2, evicting after admission, position_ids 1: the "
         "first query's id is query_cache_position",
         P("streamingllm",
           {{"budget", 5}, {"sinks", 2}, {"position_ids", 1}, {"spans", 1}}),
         "span-continuation-chunk");
  // A cache that keeps everything under a sliding-window mask
  // (transformers' DynamicCache built without a config).
  b.Case("full/spans/sliding-window-over-full-cache", {"spans.window"},
         "full with span_window 3: nothing is evicted, each query sees q - 2 "
         ".. q",
         P("full", {{"span_window", 3}, {"spans", 1}}),
         "span-chunk-longer-than-window");
  b.Case("full/spans/chunked-over-full-cache", {"spans.chunk"},
         "full with span_chunk 3: each query sees its own chunk of 3",
         P("full", {{"span_chunk", 3}, {"spans", 1}}),
         "span-short-last-chunk");
  b.Case("full/spans/spans-off", {"defaults.decides"},
         "full with span_window 3 and spans at its default 0: nothing is "
         "logged beyond the victims",
         P("full", {{"span_window", 3}}), "span-chunks-2-5-1");
  b.Case("window/spans/causal", {"defaults.decides"},
         "window budget 3, spans 1, no span rule: each query sees every held "
         "position up to itself",
         P("window", {{"budget", 3}, {"spans", 1}}), "span-chunks-2-5-1");
  b.Case("full/spans/causal", {"defaults.decides"},
         "full, spans 1, no span rule: each query sees 0 .. q",
         P("full", {{"spans", 1}}), "span-chunks-2-5-1");
  // Refusals of spec/spans.md#parameters.
  b.Case("window/refusal/span-window-one-and-span-chunk",
         {"refusal.invalid-parameter"},
         "span_window 1 and span_chunk 2: both set, whatever their values "
         "(the full mutmut run of 2026-12-02: a Python port refusing only "
         "span_window > 1 survived every vector and the search)",
         P("window", {{"budget", 4}, {"span_window", 1}, {"span_chunk", 2}}),
         "one-step");
  b.Case("window/refusal/span-window-and-span-chunk",
         {"refusal.invalid-parameter"}, "span_window and span_chunk both set",
         P("window", {{"budget", 4}, {"span_window", 4}, {"span_chunk", 4}}),
         "one-step");
  b.Case("streamingllm/refusal/evict-at-with-prefill-only",
         {"refusal.invalid-parameter"}, "evict_at 1 with prefill_only 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"evict_at", 1},
                            {"prefill_only", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/evict-at-with-ratio",
         {"refusal.invalid-parameter"}, "evict_at 2 with ratio_ppm 500000",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"evict_at", 2},
                            {"ratio_ppm", 500000}}),
         "one-step");
  b.Case("full/refusal/evict-at", {"refusal.invalid-parameter"},
         "full takes no evict_at", P("full", {{"evict_at", 1}}), "one-step");
  b.Case("h2o/refusal/spans", {"refusal.invalid-parameter"},
         "h2o takes no span parameters", P("h2o", {{"spans", 1}}), "one-step");
}

// Spec 0.9.0: llama.cpp's context shift (spec/spans.md#context-shift), its
// worked examples, each of its rules deciding a case, the preset at
// llama.cpp's own sizes, and the refusals.
void AddContextShiftCases(SuiteBuilder& b) {
  b.Add(Chunks("shift-decode-21", std::vector<uint32_t>(21, 1)));
  b.Add(Chunks("shift-chunks-5-3-1", {5, 3, 1}));
  b.Add(Chunks("shift-chunks-3-6-1", {3, 6, 1}));
  b.Add(Chunks("shift-decode-12", std::vector<uint32_t>(12, 1)));
  b.Add(Chunks("shift-continuation", {4, 1, 1, 1, 1, 5, 1, 1}));
  {
    // A server slot of n_ctx 256: a prompt of 200, then 400 decode steps.
    std::vector<uint32_t> chunks(401, 1);
    chunks[0] = 200;
    b.Add(Chunks("shift-prompt-200-decode-400", chunks));
  }
  const auto llama = [](int64_t budget, int64_t sinks,
                        std::vector<Parameter> more = {}) {
    std::vector<Parameter> given = {{"budget", budget}, {"sinks", sinks}};
    for (Parameter& p : more) given.push_back(p);
    return EnginePreset("streamingllm", "llama.cpp-0c1e570", given);
  };
  b.Case("streamingllm/contextshift/worked-example-decode",
         {"shift.context-shift", "spans.ids-cache-relative",
          "defaults.decides"},
         "spans.md#context-shift worked example (llama.cpp n_ctx 8, n_keep "
         "2): budget 7, sinks 2, 21 decode steps; a shift before every "
         "second step from 7 on discards the two oldest non-sinks, and the "
         "survivors' ids close the gap",
         llama(7, 2), "shift-decode-21");
  b.Case("streamingllm/contextshift/worked-example-chunks",
         {"shift.context-shift", "spans.ids-cache-relative"},
         "spans.md#context-shift: chunks 5, 3, 1 with budget 7, sinks 2: "
         "the chunk of 3 does not fit (n_left 3, d 1), then the decode step "
         "(n_left 5, d 2)",
         llama(7, 2), "shift-chunks-5-3-1");
  b.Case("streamingllm/contextshift/discard-clamped",
         {"shift.discard-given", "shift.clamped"},
         "spans.md#context-shift: discard 4 where 3 may go: d is clamped to "
         "n_left - 1 = 2, and the last step then fits",
         llama(7, 2, {{"discard", 4}}), "shift-chunks-5-3-1");
  b.Case("streamingllm/contextshift/chunk-kept-whole",
         {"shift.chunk-kept-whole"},
         "spans.md#context-shift: a chunk of 6 after 3 with budget 7, sinks "
         "2: one shift makes no room (n_left 1, d 0), the chunk is admitted "
         "whole (kept 9), the next step shifts 3",
         llama(7, 2), "shift-chunks-3-6-1");
  b.Case("streamingllm/contextshift/no-sinks",
         {"shift.context-shift", "spans.ids-cache-relative"},
         "llama.cpp with n_keep 0 and no BOS: budget 7, sinks 0, 12 decode "
         "steps; half of everything kept goes at each shift",
         llama(7, 0), "shift-decode-12");
  b.Case("streamingllm/contextshift/continuation-chunk",
         {"shift.context-shift", "engine.continuation-chunk"},
         "a chunk of 5 after decoding has shifted the cache: budget 6, "
         "sinks 1",
         llama(6, 1), "shift-continuation");
  b.Case("streamingllm/contextshift/llama.cpp-n-ctx-256",
         {"shift.context-shift", "spans.ids-cache-relative"},
         "the server's smallest slot: n_ctx 256 (budget 255), n_keep 0 plus "
         "BOS (sinks 1), a prompt of 200, then 400 decode steps",
         llama(255, 1), "shift-prompt-200-decode-400");
  b.Case("streamingllm/contextshift/discard-one",
         {"shift.discard-given"},
         "n_discard 1: the oldest non-sink goes at every step once full, a "
         "StreamingLLM window made by shifts",
         llama(7, 2, {{"discard", 1}}), "shift-decode-12");
  b.Case("window/contextshift/half",
         {"shift.context-shift", "defaults.decides"},
         "window budget 4: at 4 the oldest two go (0, 1), 5 fits, at 6 "
         "2 and 3 go",
         P("window", {{"budget", 4}, {"context_shift", 1}}), "shift-decode-12");
  b.Case("window/contextshift/discard-given",
         {"shift.context-shift", "shift.discard-given"},
         "window budget 5, discard 3, chunks 5, 3, 1",
         P("window", {{"budget", 5}, {"context_shift", 1}, {"discard", 3}}),
         "shift-chunks-5-3-1");
  b.Case("window/contextshift/clamped-chunk-kept-whole",
         {"shift.discard-given", "shift.clamped", "shift.chunk-kept-whole"},
         "window budget 4, discard 5, chunks 3, 6, 1: the first shift is "
         "clamped to n_left - 1 = 2 and the chunk of 6 is kept whole (7 "
         "kept); the next shift discards 5",
         P("window", {{"budget", 4}, {"context_shift", 1}, {"discard", 5}}),
         "shift-chunks-3-6-1");
  // Refusals of spec/spans.md#parameters.
  b.Case("window/refusal/discard-without-shift", {"refusal.invalid-parameter"},
         "discard 2 with context_shift 0",
         P("window", {{"budget", 4}, {"discard", 2}}), "one-step");
  b.Case("window/refusal/shift-budget-one", {"refusal.invalid-parameter"},
         "context_shift 1 with budget 1: nothing could be kept and discarded",
         P("window", {{"budget", 1}, {"context_shift", 1}}), "one-step");
  b.Case("streamingllm/refusal/shift-no-room", {"refusal.invalid-parameter"},
         "context_shift 1 with budget 6, sinks 5 (budget - sinks 1)",
         P("streamingllm",
           {{"budget", 6}, {"sinks", 5}, {"context_shift", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/shift-with-evict-at",
         {"refusal.invalid-parameter"}, "context_shift 1 with evict_at 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"context_shift", 1},
                            {"evict_at", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/shift-with-prefill-only",
         {"refusal.invalid-parameter"}, "context_shift 1 with prefill_only 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"context_shift", 1},
                            {"prefill_only", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/shift-with-ratio",
         {"refusal.invalid-parameter"}, "context_shift 1 with ratio_ppm 500000",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"context_shift", 1},
                            {"ratio_ppm", 500000}}),
         "one-step");
  b.Case("full/refusal/context-shift", {"refusal.invalid-parameter"},
         "full takes no context_shift", P("full", {{"context_shift", 1}}),
         "one-step");
  b.Case("tova/refusal/context-shift", {"refusal.invalid-parameter"},
         "tova takes no context_shift", P("tova", {{"context_shift", 1}}),
         "one-step");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
