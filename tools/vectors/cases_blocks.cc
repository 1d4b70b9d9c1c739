// Spec 0.13.0: blocks (spec/blocks.md), evicting whole blocks of positions.
// The spec's worked examples, ties between block scores, every evicting
// policy with blocks (several heads, prefill, triggers), an OpenVINO GenAI
// shaped cache, and the refusals of spec/blocks.md#rules.
#include <string>
#include <vector>

#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {

void AddBlockScenarios(SuiteBuilder& b) {
  b.Add(Chunks("block-decode-12", std::vector<uint32_t>(12, 1)));
  b.Add(Chunks("block-chunk-61", {61}));
  // blocks.md#ranking-blocks, the h2o example: sums 0.75, 0, 0.5, 0.5,
  // 0.25, 0 for positions 0..5 when 5 is admitted.
  b.Add(Explicit("block-h2o-example",
                 {Null(4), WithRow({0.5f, 0.0f, 0.25f, 0.25f}),
                  WithRow({0.25f, 0.0f, 0.25f, 0.25f, 0.25f})}));
  // Two candidate blocks with equal sums, (0.5, 0) and (0.25, 0.25).
  b.Add(Explicit("block-equal-sums",
                 {Null(4), WithRow({0.5f, 0.0f, 0.25f, 0.25f}),
                  WithRow({0.0f, 0.0f, 0.0f, 0.0f, 0.0f})}));
  // Chunks, null steps and fresh rows; a several-heads trace of 4 query
  // and 2 KV heads; a prompt as one prefill step, then decode steps.
  b.Add(Wandering("block-wandering-48", 48, 2026120601));
  b.Add(WithHeads(Traced("block-heads-64", CanonicalTrace(64)), 4, 2));
  b.Add(TracePrompt("block-prompt-20-decode-16", 20, 8, 16, 1, 1, 2026120602));
  b.Add(TracePrompt("block-prompt-20-decode-16-h4", 20, 8, 16, 4, 2,
                    2026120603));
  b.Add(Traced("block-canonical-80", CanonicalTrace(80)));
  // One position a step, every row's weight on position 0: later blocks
  // all sum to 0 (OpenVINO GenAI's decode loop, where its adapter runs).
  {
    std::vector<ScenarioStep> steps = {Null()};
    for (uint32_t t = 1; t < 12; ++t) {
      Row row(t, 0.0f);
      row[0] = 1.0f;
      steps.push_back(WithRow(std::move(row)));
    }
    b.Add(Explicit("block-first-heavy-12", std::move(steps)));
  }
}

void AddBlockCases(SuiteBuilder& b) {
  // The worked examples of spec/blocks.md.
  b.Case("blocks/window/pairs", {"block.size"},
         "blocks.md#how-many-blocks-go example: window budget 4, block 2; "
         "step 5 closes a third block and 0, 1 go; then 2, 3 at step 7 and "
         "4, 5 at step 9",
         P("window", {{"budget", 4}, {"block", 2}}), "block-decode-12");
  b.Case("blocks/window/chunk-61", {"block.size"},
         "blocks.md#how-many-blocks-go example: window budget 32, block 4, "
         "a chunk of 61: 7 blocks (0..27) go, 33 kept with the open block",
         P("window", {{"budget", 32}, {"block", 4}}), "block-chunk-61");
  b.Case("blocks/h2o/sum", {"block.size"},
         "blocks.md#ranking-blocks example: h2o budget 4, recent_window 2, "
         "block 2, sum: blocks of 0 (0.75) and 2 (1.0), 0 and 1 go",
         P("h2o", {{"budget", 4}, {"recent_window", 2}, {"block", 2}}),
         "block-h2o-example");
  b.Case("blocks/h2o/max", {"block.size", "block.score"},
         "blocks.md#ranking-blocks example: as blocks/h2o/sum with "
         "block_score 2 (max): 0.75 against 0.5, 2 and 3 go",
         P("h2o", {{"budget", 4}, {"recent_window", 2}, {"block", 2},
                   {"block_score", 2}}),
         "block-h2o-example");
  b.Case("blocks/h2o/mean", {"block.size"},
         "as blocks/h2o/sum with block_score 1 (mean): 0.375 against 0.5, "
         "0 and 1 go, as with the sum",
         P("h2o", {{"budget", 4}, {"recent_window", 2}, {"block", 2},
                   {"block_score", 1}}),
         "block-h2o-example");
  b.Case("blocks/streamingllm/sinks-block", {"block.size"},
         "blocks.md#ranking-blocks example: streamingllm budget 8, sinks 2, "
         "block 2; step 9 evicts the block of 2 and 3, not the sinks' block",
         P("streamingllm", {{"budget", 8}, {"sinks", 2}, {"block", 2}}),
         "block-decode-12");
  b.Case("blocks/slack/window", {"block.size", "trigger.slack"},
         "blocks.md#triggers example: window budget 4, block 2, slack 2; "
         "step 6 keeps seven and evicts 0, 1; step 8 evicts 2, 3",
         P("window", {{"budget", 4}, {"block", 2}, {"slack", 2}}),
         "block-decode-12");
  // Ties between block scores (blocks.md#ranking-blocks).
  b.Case("blocks/ties/equal-sums-evict-older", {"block.size"},
         "h2o budget 4, recent_window 2, block 2: the blocks of 0 (0.5 + 0) "
         "and 2 (0.25 + 0.25) both sum 0.5; the older, 0 and 1, goes",
         P("h2o", {{"budget", 4}, {"recent_window", 2}, {"block", 2}}),
         "block-equal-sums");
  b.Case("blocks/ties/equal-sums-max-decides", {"block.size", "block.score"},
         "as blocks/ties/equal-sums-evict-older with block_score 2 (max): "
         "0.5 against 0.25, 2 and 3 go",
         P("h2o", {{"budget", 4}, {"recent_window", 2}, {"block", 2},
                   {"block_score", 2}}),
         "block-equal-sums");
  b.Case("blocks/random/draws-blocks", {"block.size"},
         "random seed 42, budget 2, recent_window 0, block 2: each "
         "eviction draws Uniform(2) over the candidate blocks",
         P("random", {{"budget", 2}, {"recent_window", 0}, {"block", 2}}, 42),
         "block-decode-12");
  // Every evicting policy with blocks of 4 over chunks, null steps and
  // fresh rows.
  b.Case("blocks/window/wandering", {"block.size"},
         "window budget 12, block 4 over chunks and null steps",
         P("window", {{"budget", 12}, {"block", 4}}), "block-wandering-48");
  b.Case("blocks/streamingllm/wandering", {"block.size"},
         "streamingllm budget 12, sinks 4, block 4 over chunks",
         P("streamingllm", {{"budget", 12}, {"sinks", 4}, {"block", 4}}),
         "block-wandering-48");
  for (const char* policy : {"h2o", "tova", "snapkv", "random"}) {
    const std::string name = policy;
    b.Case("blocks/" + name + "/wandering", {"block.size"},
           name + " budget 12, recent_window 4, block 4 over chunks, null "
                  "steps and fresh rows",
           P(policy, {{"budget", 12}, {"recent_window", 4}, {"block", 4}}, 7),
           "block-wandering-48");
  }
  for (const char* policy : {"h2o", "tova", "snapkv"}) {
    const std::string name = policy;
    b.Case("blocks/" + name + "/wandering-max", {"block.size", "block.score"},
           name + " budget 12, recent_window 4, block 4, block_score 2 (max)",
           P(policy, {{"budget", 12}, {"recent_window", 4}, {"block", 4},
                      {"block_score", 2}}),
           "block-wandering-48");
    b.Case("blocks/" + name + "/canonical-mean", {"block.size", "canonical-trace"},
           name + " budget 16, recent_window 4, block 4, block_score 1 "
                  "(mean) on 80 steps of the canonical trace",
           P(policy, {{"budget", 16}, {"recent_window", 4}, {"block", 4},
                      {"block_score", 1}}),
           "block-canonical-80");
  }
  // OpenVINO GenAI's shape (its notes, 1.6-1.8, without its own scores):
  // budget 32 (max_cache_size), recent_window 8 (recent_size), block 4.
  b.Case("blocks/h2o/openvino-shape", {"block.size", "canonical-trace"},
         "h2o budget 32, recent_window 8, block 4 on the canonical trace: "
         "nothing goes at 35 kept, one block at 36, back to 32",
         P("h2o", {{"budget", 32}, {"recent_window", 8}, {"block", 4}}),
         "block-canonical-80");
  // Several heads: a kept set per KV head, and one for the layer (vLLM's
  // page over every head).
  b.Case("blocks/h2o/heads-kv-head", {"block.size", "heads.granularity"},
         "h2o on 4 query heads, 2 KV heads, a kept set per KV head, budget "
         "16, recent_window 4, block 4: each set its own blocks",
         P("h2o", {{"budget", 16}, {"recent_window", 4}, {"block", 4},
                   {"granularity", 1}}),
         "block-heads-64");
  b.Case("blocks/snapkv/heads-layer", {"block.size"},
         "snapkv on 4 query heads, 2 KV heads, one set for the layer "
         "(granularity 0, a vLLM page), budget 16, recent_window 4, block 4, "
         "block_score 2",
         P("snapkv", {{"budget", 16}, {"recent_window", 4}, {"block", 4},
                      {"granularity", 0}, {"block_score", 2}}),
         "block-heads-64");
  // Prefill steps evict whole blocks too; with triggers at decode.
  b.Case("blocks/snapkv/prefill", {"block.size"},
         "snapkv budget 8, recent_window 0, block 4: the prompt of 20 is cut "
         "to two blocks and the open one at the prefill step",
         P("snapkv", {{"budget", 8}, {"recent_window", 0}, {"block", 4},
                      {"obs_window", 8}}),
         "block-prompt-20-decode-16");
  b.Case("blocks/tova/prefill-protect-newest", {"block.size"},
         "tova budget 8, recent_window 0, protect_newest 1, block 4: the "
         "newest position's block is no candidate at the prefill step",
         P("tova", {{"budget", 8}, {"recent_window", 0}, {"block", 4},
                    {"protect_newest", 1}}),
         "block-prompt-20-decode-16");
  b.Case("blocks/tova/interval-h4", {"block.size", "trigger.interval"},
         "tova on 4 query heads, one set, budget 8, recent_window 0, block 4, "
         "interval 6: every sixth decode step evicts whole blocks",
         P("tova", {{"budget", 8}, {"recent_window", 0}, {"block", 4},
                    {"granularity", 0}, {"interval", 6}}),
         "block-prompt-20-decode-16-h4");
  b.Case("blocks/h2o/prefill-only", {"block.size"},
         "h2o budget 8, recent_window 0, prefill_only 1, block 4: only the "
         "prefill step evicts, in blocks",
         P("h2o", {{"budget", 8}, {"recent_window", 0}, {"block", 4},
                   {"prefill_only", 1}}),
         "block-prompt-20-decode-16");
  b.Case("blocks/streamingllm/prefill-only", {"block.size"},
         "streamingllm budget 6, sinks 3, prefill_only 1, block 3: the prompt "
         "of 20 keeps the sink block, the newest closed block and the open "
         "block of two; decode steps evict nothing",
         P("streamingllm", {{"budget", 6}, {"sinks", 3}, {"prefill_only", 1},
                            {"block", 3}}),
         "block-prompt-20-decode-16");
  b.Case("blocks/h2o/heads-prefill-only-pairs", {"block.size", "heads.granularity"},
         "h2o on 4 query heads, 2 KV heads, a kept set per KV head, budget 8, "
         "recent_window 2, prefill_only 1, block 2: each set cuts its prompt "
         "to its own pairs; decode steps evict nothing",
         P("h2o", {{"budget", 8}, {"recent_window", 2}, {"granularity", 1},
                   {"prefill_only", 1}, {"block", 2}}),
         "block-prompt-20-decode-16-h4");
  b.Case("blocks/h2o/heads-kv-head-pairs", {"block.size", "heads.granularity"},
         "h2o on 4 query heads, 2 KV heads, a kept set per KV head, budget "
         "16, recent_window 4, block 2: each set evicts its own pairs",
         P("h2o", {{"budget", 16}, {"recent_window", 4}, {"block", 2},
                   {"granularity", 1}}),
         "block-heads-64");
  // With the other features: a prefill chunk on a cache decode steps
  // thinned, column totals, spans and position ids.
  b.Case("blocks/h2o/second-chunk", {"block.size"},
         "h2o budget 16, recent_window 4, block 4 on a prompt of 32, 8 decode "
         "steps and a chunk of 16 with its rows: the chunk's step evicts "
         "whole blocks of a cache the decode steps thinned",
         P("h2o", {{"budget", 16}, {"recent_window", 4}, {"block", 4}}),
         "prefill-second-chunk");
  b.Case("blocks/h2o/totals", {"block.size"},
         "h2o budget 24, recent_window 4, block 4 on a 64-position prompt's "
         "column totals and its last row, then 16 decode steps",
         P("h2o", {{"budget", 24}, {"recent_window", 4}, {"block", 4}}),
         "totals-64-decode-16");
  b.Case("blocks/window/spans-cache-relative", {"block.size"},
         "window budget 4, block 2, spans 1, span_window 4, position_ids 1: "
         "each step's held set, spans and ids after evicting whole pairs",
         P("window", {{"budget", 4}, {"spans", 1}, {"span_window", 4},
                      {"position_ids", 1}, {"block", 2}}),
         "block-decode-12");
  b.Case("blocks/streamingllm/spans-cache-relative", {"block.size"},
         "streamingllm budget 6, sinks 2, block 2, spans 1, position_ids 1 on "
         "12 decode steps: each step's held set and ids as whole pairs after "
         "the sinks leave",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"spans", 1},
                            {"position_ids", 1}, {"block", 2}}),
         "block-decode-12");
  // Decode steps shaped for OpenVINO GenAI's adapter (one position a step,
  // budget above one block plus the recent area): equal block sums evict
  // the older block; with no weight anywhere the first block goes, which
  // GenAI's start area keeps (conformance/engines/openvino-genai).
  b.Case("blocks/ties/decode-equal-sums-evict-older", {"block.size"},
         "h2o budget 6, recent_window 2, block 2, every row's weight on 0: "
         "the blocks after the first sum to 0 and tie; the older goes, "
         "(2, 3) at step 7, then (4, 5), ...",
         P("h2o", {{"budget", 6}, {"recent_window", 2}, {"block", 2}}),
         "block-first-heavy-12");
  b.Case("blocks/h2o/null-rows-first-block", {"block.size"},
         "h2o budget 6, recent_window 2, block 2 with null attention: every "
         "block sums to 0 and the oldest goes, the first block (0, 1) at "
         "step 7",
         P("h2o", {{"budget", 6}, {"recent_window", 2}, {"block", 2}}),
         "block-decode-12");
  // Refusals (spec/blocks.md#rules).
  b.Case("window/refusal/block-budget", {"refusal.invalid-parameter"},
         "budget 6 is not a multiple of block 4",
         P("window", {{"budget", 6}, {"block", 4}}), "one-step");
  b.Case("h2o/refusal/block-recent-window", {"refusal.invalid-parameter"},
         "recent_window 2 is not a multiple of block 4 (budget 8 is)",
         P("h2o", {{"budget", 8}, {"recent_window", 2}, {"block", 4}}),
         "one-step");
  b.Case("streamingllm/refusal/block-sinks", {"refusal.invalid-parameter"},
         "sinks 1 is not a multiple of block 2",
         P("streamingllm", {{"budget", 8}, {"sinks", 1}, {"block", 2}}),
         "one-step");
  b.Case("tova/refusal/block-ratio-ppm", {"refusal.invalid-parameter"},
         "block 2 with ratio_ppm 500000",
         P("tova", {{"budget", 8}, {"recent_window", 0}, {"ratio_ppm", 500000},
                    {"block", 2}}),
         "one-step");
  b.Case("h2o/refusal/block-adaptive", {"refusal.invalid-parameter"},
         "block 2 with adaptive 1",
         P("h2o", {{"budget", 8}, {"recent_window", 0}, {"adaptive", 1},
                   {"block", 2}}),
         "one-step");
  b.Case("window/refusal/block-evict-at", {"refusal.invalid-parameter"},
         "block 2 with evict_at 1",
         P("window", {{"budget", 8}, {"evict_at", 1}, {"block", 2}}),
         "one-step");
  b.Case("streamingllm/refusal/block-context-shift",
         {"refusal.invalid-parameter"}, "block 2 with context_shift 1",
         P("streamingllm", {{"budget", 8}, {"sinks", 2}, {"context_shift", 1},
                            {"block", 2}}),
         "one-step");
  b.Case("snapkv/refusal/block-window-budget", {"refusal.invalid-parameter"},
         "block 2 with window_budget 1",
         P("snapkv", {{"budget", 8}, {"recent_window", 0}, {"window_budget", 1},
                      {"block", 2}}),
         "one-step");
  b.Case("random/refusal/block-budget-below", {"refusal.invalid-parameter"},
         "budget 2 below block 4 is not a multiple of it",
         P("random", {{"budget", 2}, {"recent_window", 0}, {"block", 4}}),
         "one-step");
  b.Case("window/refusal/block-slack-evict-at", {"refusal.invalid-parameter"},
         "block 4 with budget 6, slack 1 and evict_at 1: the trigger rule "
         "(slack evict_at) is checked before the blocks' rules",
         P("window", {{"budget", 6}, {"slack", 1}, {"evict_at", 1},
                      {"block", 4}}),
         "one-step");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
