// Spec 0.12.0: triggers (spec/triggers.md), when a decode step evicts.
// The spec's worked examples, each rule of a firing deciding a case, every
// evicting policy under each trigger (including several heads, prefill
// and spans), and the refusals of spec/triggers.md#combinations.
#include <string>
#include <vector>

#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {

void AddTriggerScenarios(SuiteBuilder& b) {
  b.Add(Chunks("trigger-decode-9", std::vector<uint32_t>(9, 1)));
  b.Add(Chunks("trigger-decode-40", std::vector<uint32_t>(40, 1)));
  b.Add(Chunks("trigger-chunks-2-4-1", {2, 4, 1}));
  b.Add(Chunks("trigger-chunks-2-3-1", {2, 3, 1}));
  // Chunks, null steps and fresh rows (the rows grow with the cache, so
  // short), and a several-heads trace of 4 query and 2 KV heads.
  b.Add(Wandering("trigger-wandering-60", 60, 2026120501));
  b.Add(WithHeads(Traced("trigger-heads-160", CanonicalTrace(160)), 4, 2));
  // A prompt within the budget (DecodingPress never compresses the
  // prefill), then 32 decode steps with a row per query head.
  b.Add(TracePrompt("trigger-prompt-16-decode-32-h4", 16, 16, 32, 4, 2,
                    2026120502));
  b.Add(TracePrompt("trigger-prompt-16-decode-32", 16, 16, 32, 1, 1,
                    2026120503));
  // triggers.md#interval: a prefill step between decode steps (one query
  // row, position 2's: 3 weights).
  b.Add(Explicit("trigger-prefill-between",
                 {Null(), QueryRows(2, {{0.25f, 0.25f, 0.5f}}), Null(),
                  Null(), Null(), Null()}));
  // triggers.md#firing: h2o's sums go on between firings (the test in
  // cc/policies/trigger_test.cc, worked by hand).
  b.Add(Explicit("trigger-h2o-accumulates",
                 {Null(), WithRow({1.0f}), WithRow({0.0f, 0.5f}),
                  WithRow({0.0f, 0.25f, 0.75f})}));
  // Null attention at the steps that count (interval 2: steps 1 and 3
  // fire): a port that does not count null steps fires elsewhere.
  b.Add(Explicit("trigger-null-steps",
                 {Null(), WithRow({1.0f}), Null(), WithRow({0.5f, 0.25f, 0.25f}),
                  Null(), WithRow({0.25f, 0.5f, 0.125f, 0.125f, 0.0f}), Null(),
                  Null()}));
}

void AddTriggerCases(SuiteBuilder& b) {
  // The worked examples of spec/triggers.md.
  b.Case("triggers/slack/window-bulk", {"trigger.slack"},
         "triggers.md#slack example: window budget 3, slack 2; step 5 keeps "
         "6 > 5 and evicts 0, 1, 2, step 8 evicts 3, 4, 5",
         P("window", {{"budget", 3}, {"slack", 2}}), "trigger-decode-9");
  b.Case("triggers/interval/restart-empty",
         {"trigger.interval", "trigger.restart"},
         "triggers.md#interval example: window budget 4, interval 3; step 2 "
         "fires with three kept and evicts nothing, and the count restarts: "
         "step 5 fires (0, 1 go), step 8 (2, 3, 4 go)",
         P("window", {{"budget", 4}, {"interval", 3}}), "trigger-decode-9");
  b.Case("triggers/interval/out-of-turn", {"trigger.out-of-turn"},
         "window budget 4, interval 10: a chunk of 4 (at least budget) fires "
         "at once and evicts 0, 1; the next step counts 1",
         P("window", {{"budget", 4}, {"interval", 10}}), "trigger-chunks-2-4-1");
  b.Case("triggers/interval/chunk-below-budget", {"trigger.interval"},
         "window budget 4, interval 10: a chunk of 3 (below budget) does not "
         "fire; kept 5 and 6",
         P("window", {{"budget", 4}, {"interval", 10}}), "trigger-chunks-2-3-1");
  b.Case("triggers/interval/prefill-restarts", {"trigger.prefill-restarts"},
         "window budget 3, interval 2: the prefill step sets the count to 0, "
         "so the next firing is two decode steps later",
         P("window", {{"budget", 3}, {"interval", 2}}), "trigger-prefill-between");
  b.Case("triggers/interval/h2o-accumulates",
         {"trigger.interval", "trigger.accumulates"},
         "h2o budget 2, recent_window 0, interval 2: step 3 ranks by sums "
         "that include step 2's row (not a firing): 3 and 1 go",
         P("h2o", {{"budget", 2}, {"recent_window", 0}, {"interval", 2}}),
         "trigger-h2o-accumulates");
  b.Case("triggers/interval/null-steps-count",
         {"trigger.interval", "trigger.null-counts"},
         "tova budget 2, recent_window 0, interval 2: null-attention steps "
         "count, so the firings are at steps 1, 3, 5, 7",
         P("tova", {{"budget", 2}, {"recent_window", 0}, {"interval", 2}}),
         "trigger-null-steps");
  // Every evicting policy under each trigger, on longer scenarios.
  b.Case("triggers/slack/streamingllm-sinks", {"trigger.slack"},
         "streamingllm budget 6, sinks 2, slack 3: every fourth step once "
         "full goes back to the sinks and the latest 4",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"slack", 3}}),
         "trigger-decode-40");
  b.Case("triggers/interval/streamingllm", {"trigger.interval"},
         "streamingllm budget 6, sinks 2, interval 5 (kvpress's DecodingPress "
         "count)",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"interval", 5}}),
         "trigger-decode-40");
  for (const char* policy : {"h2o", "tova", "snapkv", "random"}) {
    const std::string name = policy;
    b.Case("triggers/slack/" + name + "-wandering",
           {"trigger.slack"},
           name + " budget 12, recent_window 2, slack 5 over chunks, null "
                  "steps and fresh rows",
           P(policy, {{"budget", 12}, {"recent_window", 2}, {"slack", 5}}, 7),
           "trigger-wandering-60");
    b.Case("triggers/interval/" + name + "-wandering",
           {"trigger.interval"},
           name + " budget 12, recent_window 2, interval 6 over chunks, null "
                  "steps and fresh rows",
           P(policy, {{"budget", 12}, {"recent_window", 2}, {"interval", 6}}, 7),
           "trigger-wandering-60");
    b.Case("triggers/interval/" + name + "-canonical",
           {"trigger.interval", "canonical-trace"},
           name + " budget 32, interval 16 on 300 steps of the canonical "
                  "trace",
           P(policy, {{"budget", 32}, {"interval", 16}}, 7), "canonical-300");
  }
  b.Case("triggers/slack/h2o-heads-kv-head",
         {"trigger.slack", "heads.granularity"},
         "h2o on 4 query heads, 2 KV heads, a kept set per KV head, budget "
         "24, slack 8: each set fires as its own kept count says",
         P("h2o", {{"budget", 24}, {"slack", 8}, {"granularity", 1}}),
         "trigger-heads-160");
  b.Case("triggers/interval/snapkv-heads-layer",
         {"trigger.interval"},
         "snapkv on 4 query heads, 2 KV heads, one set (granularity 0), "
         "budget 24, interval 16",
         P("snapkv", {{"budget", 24}, {"interval", 16}, {"granularity", 0}}),
         "trigger-heads-160");
  b.Case("triggers/interval/tova-prefill-ratio", {"trigger.interval"},
         "kvpress's PrefillDecodingPress shape: tova compresses the prompt of "
         "64 by ratio_ppm 500000 (recent_window 0), then decode steps fire "
         "every 4th, budget 24",
         P("tova", {{"budget", 24}, {"recent_window", 0}, {"ratio_ppm", 500000},
                    {"interval", 4}}),
         "prefill-64-decode-16");
  b.Case("triggers/slack/window-spans-relative",
         {"trigger.slack", "spans.ids-cache-relative"},
         "window budget 4, slack 2 with cache-relative position ids: the "
         "held set runs up to 7 before a firing",
         P("window", {{"budget", 4}, {"slack", 2}, {"spans", 1},
                      {"position_ids", 1}}),
         "trigger-decode-40");
  // kvpress 0.5.5's DecodingPress(TOVAPress), through its preset;
  // tools/kvpress/decoding_check.py runs kvpress itself on these.
  b.Case("triggers/kvpress-decoding/tova-h4-interval-8",
         {"preset.kvpress-0.5.5-decoding", "trigger.interval",
          "trigger.restart"},
         "tova:preset=kvpress-0.5.5-decoding with target_size (budget) 24, "
         "compression_interval 8: 4 query heads, 2 KV heads, a prompt of 16; "
         "the firing at decode step 8 holds 24 and removes nothing, then "
         "every 8th step cuts 32 back to 24",
         Preset("tova", "kvpress-0.5.5-decoding",
                {{"budget", 24}, {"interval", 8}}),
         "trigger-prompt-16-decode-32-h4");
  b.Case("triggers/kvpress-decoding/tova-h4-interval-5",
         {"preset.kvpress-0.5.5-decoding", "trigger.interval"},
         "tova:preset=kvpress-0.5.5-decoding, budget 18, interval 5: cuts "
         "21 and then 22 to 18 every 5th decode step",
         Preset("tova", "kvpress-0.5.5-decoding",
                {{"budget", 18}, {"interval", 5}}),
         "trigger-prompt-16-decode-32-h4");
  b.Case("triggers/kvpress-decoding/tova-interval-3",
         {"preset.kvpress-0.5.5-decoding", "trigger.interval"},
         "tova:preset=kvpress-0.5.5-decoding on one head, budget 16, "
         "interval 3",
         Preset("tova", "kvpress-0.5.5-decoding",
                {{"budget", 16}, {"interval", 3}}),
         "trigger-prompt-16-decode-32");
  // Refusals (spec/triggers.md#combinations).
  b.Case("window/refusal/slack-and-interval", {"refusal.invalid-parameter"},
         "slack 2 and interval 3 together",
         P("window", {{"budget", 4}, {"slack", 2}, {"interval", 3}}),
         "one-step");
  b.Case("window/refusal/slack-one-and-interval-one",
         {"refusal.invalid-parameter"},
         "slack 1 and interval 1, the least values that set both",
         P("window", {{"budget", 4}, {"slack", 1}, {"interval", 1}}),
         "one-step");
  b.Case("h2o/refusal/interval-prefill-only", {"refusal.invalid-parameter"},
         "interval 2 with prefill_only 1",
         P("h2o", {{"budget", 4}, {"recent_window", 0}, {"interval", 2},
                   {"prefill_only", 1}}),
         "one-step");
  b.Case("tova/refusal/slack-adaptive", {"refusal.invalid-parameter"},
         "slack 1 with adaptive 1",
         P("tova", {{"slack", 1}, {"adaptive", 1}}), "one-step");
  b.Case("window/refusal/slack-evict-at", {"refusal.invalid-parameter"},
         "slack 1 with evict_at 1",
         P("window", {{"slack", 1}, {"evict_at", 1}}), "one-step");
  b.Case("streamingllm/refusal/interval-context-shift",
         {"refusal.invalid-parameter"},
         "interval 4 with context_shift 1",
         P("streamingllm", {{"budget", 6}, {"sinks", 2}, {"interval", 4},
                            {"context_shift", 1}}),
         "one-step");
  b.Case("streamingllm/refusal/slack-prefill-only",
         {"refusal.invalid-parameter"}, "slack 1 with prefill_only 1",
         P("streamingllm", {{"slack", 1}, {"prefill_only", 1}}), "one-step");
  b.Case("snapkv/refusal/interval-adaptive-prefill-only",
         {"refusal.invalid-parameter"},
         "interval 2, adaptive 1 and prefill_only 1: the prefill rule "
         "(adaptive prefill_only) is checked before the trigger's",
         P("snapkv", {{"interval", 2}, {"adaptive", 1}, {"prefill_only", 1}}),
         "one-step");
  b.Case("h2o/refusal/interval-adaptive", {"refusal.invalid-parameter"},
         "interval 8 with adaptive 1",
         P("h2o", {{"interval", 8}, {"adaptive", 1}}), "one-step");
  b.Case("streamingllm/refusal/interval-evict-at",
         {"refusal.invalid-parameter"}, "interval 3 with evict_at 2",
         P("streamingllm", {{"interval", 3}, {"evict_at", 2}}), "one-step");
  b.Case("window/refusal/slack-context-shift", {"refusal.invalid-parameter"},
         "slack 2 with context_shift 1",
         P("window", {{"budget", 4}, {"slack", 2}, {"context_shift", 1}}),
         "one-step");
  b.Case("random/refusal/slack-negative", {"refusal.invalid-parameter"},
         "slack -1", P("random", {{"slack", -1}}), "one-step");
  b.Case("window/refusal/interval-too-large", {"refusal.invalid-parameter"},
         "interval 2^32", P("window", {{"interval", int64_t{4294967296}}}),
         "one-step");
  b.Case("window/refusal/evict-at-range-before-interval",
         {"refusal.invalid-parameter"},
         "interval -1 and evict_at 3: the trigger parameters are listed last, "
         "so evict_at's range is checked first",
         P("window", {{"interval", -1}, {"evict_at", 3}}), "one-step");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
