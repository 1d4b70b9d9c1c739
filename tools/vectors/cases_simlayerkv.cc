// Spec 0.20.0: the simlayerkv policy (spec/policies/simlayerkv.md),
// kvpress's SimLayerKVPress: the card's worked examples, the threshold's
// edge and its 1.0, the short-cache rule, fewer rows than n_last, a cache
// before the prompt and decode steps after it, a chunked prompt judged
// twice, several heads, the kvpress preset on a prompt from the
// several-heads trace, and the parameter rule.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/vectors/case_builder.h"

namespace kvspec {
namespace vectors {
namespace build {
namespace {

PolicyConfig Sim(int64_t n_initial, int64_t n_recent, int64_t n_last,
                 int64_t threshold_ppm) {
  return P("simlayerkv", {{"n_initial", n_initial},
                          {"n_recent", n_recent},
                          {"n_last", n_last},
                          {"lazy_threshold_ppm", threshold_ppm}});
}

// One query row of `n` weights, each 1 / n (exact for n a power of two).
Row Flat(uint32_t n) { return Row(n, 1.0f / static_cast<float>(n)); }

}  // namespace

void AddSimLayerKvScenarios(SuiteBuilder& b) {
  // simlayerkv.md#how-it-works, worked example 1: score 0.625.
  b.Add(Explicit("slk-example",
                 {QueryRows(6, {Row{0.25f, 0.0625f, 0.0625f, 0.125f, 0.25f,
                                    0.25f}})}));
  // A row summing to 4: score 3, above 1.0.
  b.Add(Explicit("slk-heavy", {QueryRows(6, {Row{1, 0, 0, 1, 1, 1}})}));
  // Worked example 2: two query heads, one KV head, two rows each.
  b.Add(WithHeads(
      Explicit("slk-two-heads",
               {QueryRows(8, {Row{0.5f, 0, 0, 0, 0, 0, 0.5f},
                              Row{0.25f, 0, 0, 0, 0, 0.25f, 0.25f, 0.25f},
                              Row{0, 0.125f, 0.125f, 0.25f, 0, 0, 0.5f},
                              Row{0, 0, 0.5f, 0, 0, 0, 0, 0.5f}})}),
      2, 1));
  // The short rule: 4 and 5 positions, flat rows (score 0.75 at 5 with
  // n_initial 1, n_recent 2, n_last 1; at 4 not judged).
  b.Add(Explicit("slk-short-4", {QueryRows(4, {Flat(4)})}));
  b.Add(Explicit("slk-short-5",
                 {QueryRows(5, {Row{0.25f, 0.25f, 0.25f, 0.25f, 0}})}));
  // Fewer rows than n_last: one row of 7 (the card's rule, the C++ test's
  // numbers): score 1.0 read from one row.
  b.Add(Explicit("slk-fewer-rows",
                 {QueryRows(7, {Row{0.5f, 0, 0.125f, 0.125f, 0.25f, 0.5f,
                                    0.5f}})}));
  // A cache before the prompt (null decode steps), one prefill step of 1
  // with query 6's row, then decode steps with attention rows.
  b.Add(Explicit("slk-cache-before",
                 {Null(6),
                  QueryRows(1, {Row{0.5f, 0, 0, 0, 0.25f, 0, 0.25f}}),
                  WithRow(Row(7, 0.125f)), WithRow(Row(8, 0.125f)),
                  Null(3)}));
  // A chunked prompt: two prefill steps, each with its last query's row.
  // The first (positions 0 .. 7) is lazy with n_initial 1, n_recent 3,
  // n_last 1 at 0.5 and keeps 0, 6, 7; the second admits 8 .. 11: query
  // 11's row has 12 weights, those of the evicted 1 .. 5 (0.25) not read.
  b.Add(Explicit(
      "slk-chunked",
      {QueryRows(8, {Row{0.5f, 0, 0, 0, 0, 0.125f, 0.25f, 0.125f}}),
       QueryRows(4, {Row{0.0625f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.0625f,
                         0.0625f, 0.0625f, 0.5f, 0.125f, 0.125f}})}));
  // A prompt from the several-heads trace: 64 positions, the last 4 rows
  // of 4 query heads in 2 groups, then 8 decode steps; and one of 1,100
  // positions with one row per head, for kvpress's sizes.
  b.Add(TracePrompt("slk-trace-64", 64, 4, 8, 4, 2, 11));
  b.Add(TracePrompt("slk-trace-1100", 1100, 1, 2, 4, 2, 12));
  // Every weight 1.0 over 1,100 positions: a score of 4 + 1024, above 1.0.
  b.Add(Explicit("slk-heavy-1100", {QueryRows(1100, {Row(1100, 1.0f)})}));
  // A generated trace of one head: decode steps only (no query rows).
  {
    TraceConfig trace;
    trace.seed = 5;
    trace.steps = 12;
    b.Add(Traced("slk-generated", trace));
  }
  // A malformed query row: query 5's row with 5 weights.
  b.Add(Explicit("slk-short-row", {QueryRows(6, {Row{0.25f, 0.25f, 0.25f,
                                                     0.125f, 0.125f}})}));
}

void AddSimLayerKvCases(SuiteBuilder& b) {
  b.Case("simlayerkv/basic/lazy", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works, worked example 1: n_initial 1, "
         "n_recent 2, n_last 1, threshold 0.5; prefix slots 0 .. 4, initial "
         "0.25, recent slots 3, 4 0.375; score 0.625 > 0.5: lazy, slots 1 .. "
         "4 go (4 was counted in the score)",
         Sim(1, 2, 1, 500000), "slk-example");
  b.Case("simlayerkv/basic/equal-is-not-lazy", {"simlayerkv.threshold-strict"},
         "simlayerkv.md#how-it-works: as simlayerkv/basic/lazy with "
         "threshold 0.625, equal to the score: not lazy, nothing goes",
         Sim(1, 2, 1, 625000), "slk-example");
  b.Case("simlayerkv/basic/just-below-score", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: threshold 0.624999, just below the "
         "score 0.625: lazy",
         Sim(1, 2, 1, 624999), "slk-example");
  b.Case("simlayerkv/basic/threshold-one-never", {},
         "simlayerkv.md#how-it-works: threshold 1000000 never compresses, "
         "though the score (3: the row sums to 4) is above 1.0",
         Sim(1, 2, 1, 1000000), "slk-heavy");
  b.Case("simlayerkv/basic/threshold-below-one-judges", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: as simlayerkv/basic/threshold-one-never "
         "with 999999: score 3 > 0.999999, lazy, slots 1 .. 4 go",
         Sim(1, 2, 1, 999999), "slk-heavy");
  b.Case("simlayerkv/basic/n-initial-zero", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: n_initial 0, n_recent 2, n_last 1 on "
         "worked example 1's row: initial 0, recent 0.375 > 0.25: lazy, "
         "slots 0 .. 4 go, 5 stays",
         Sim(0, 2, 1, 250000), "slk-example");
  b.Case("simlayerkv/basic/n-initial-zero-not-lazy", {"simlayerkv.threshold-strict"},
         "simlayerkv.md#how-it-works: as simlayerkv/basic/n-initial-zero "
         "with threshold 0.375: not lazy (with n_initial 1 it would be)",
         Sim(0, 2, 1, 375000), "slk-example");
  b.Case("simlayerkv/basic/recent-region-is-the-prefix-end", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: n_initial 1, n_recent 3, n_last 1: "
         "prefix slots 0 .. 4, recent slots 2 .. 4 (0.0625 + 0.125 + 0.25), "
         "score 0.6875 > 0.65: lazy, n > 5, slots 1 .. 6 - 2 - 1 = 1 .. 3 go",
         Sim(1, 3, 1, 650000), "slk-example");
  b.Case("simlayerkv/basic/recent-region-not-the-last-slots", {"simlayerkv.threshold-strict"},
         "simlayerkv.md#how-it-works: as "
         "simlayerkv/basic/recent-region-is-the-prefix-end at 0.6875: the "
         "last n_recent slots 3 .. 5 would sum 0.625 and the score 0.875; the "
         "prefix's make 0.6875, not lazy",
         Sim(1, 3, 1, 687500), "slk-example");
  b.Case("simlayerkv/heads/not-lazy", {},
         "simlayerkv.md#how-it-works, worked example 2: two query heads, "
         "n_last 2, n_initial 1, n_recent 3: a = (0.1875, 0.03125, 0.15625, "
         "0.0625, 0, 0.0625), score 0.3125 <= 0.5: nothing goes",
         Sim(1, 3, 2, 500000), "slk-two-heads");
  b.Case("simlayerkv/heads/lazy", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works, worked example 2 at 0.3: lazy, slots 1 "
         ".. 6 go, 0 and 7 stay",
         Sim(1, 3, 2, 300000), "slk-two-heads");
  b.Case("simlayerkv/heads/mean-over-heads-and-rows", {"simlayerkv.threshold-strict"},
         "simlayerkv.md#how-it-works: worked example 2 at 0.3125, the score: "
         "not lazy (divided by the heads only, or the rows only, it would be "
         "0.625)",
         Sim(1, 3, 2, 312500), "slk-two-heads");
  b.Case("simlayerkv/heads/last-row-only", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: worked example 2 with n_last 1 "
         "(n_recent 3): the prefix is slots 0 .. 6, each head's last row "
         "only; a = (0.125, 0, 0.25, 0, 0, 0.125, 0.125), initial 0.125, "
         "recent slots 4 .. 6 0.25; score 0.375 > 0.3: slots 1 .. 5 go",
         Sim(1, 3, 1, 300000), "slk-two-heads");
  b.Case("simlayerkv/basic/short-not-judged", {"simlayerkv.short"},
         "simlayerkv.md#how-it-works: 4 positions, n = n_initial + n_recent "
         "+ n_last: not judged, nothing goes even at threshold 0",
         Sim(1, 2, 1, 0), "slk-short-4");
  b.Case("simlayerkv/basic/one-past-short", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: 5 positions, judged: score 0.25 + 0.5 "
         "> 0, slots 1 .. 3 go",
         Sim(1, 2, 1, 0), "slk-short-5");
  b.Case("simlayerkv/basic/fewer-rows-than-n-last", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: n_last 2, one row: the prefix is slots "
         "0 .. 4, w = 1; score 0.5 + (0.125 + 0.125 + 0.25) = 1.0 > 0.75 "
         "(divided by n_last it would be 0.5): slots 1 .. 5 go",
         Sim(1, 3, 2, 750000), "slk-fewer-rows");
  b.Case("simlayerkv/basic/cache-before-and-decode-steps", {"simlayerkv.lazy"},
         "simlayerkv.md#how-it-works: 6 null positions, then a prefill step "
         "of 1 with query 6's row: score 0.5 + (0.25 + 0) > 0.5, slots 1 .. "
         "5 go; attention rows and decode steps after it evict nothing",
         Sim(1, 2, 1, 500000), "slk-cache-before");
  b.Case("simlayerkv/basic/chunked-prompt-judged-twice", {"simlayerkv.lazy"},
         "simlayerkv.md#at-prefill: the first prefill step (score 0.5 + "
         "(0.125 + 0.25) > 0.5) keeps 0, 6, 7; the second is judged on the 7 "
         "kept (0, 6 .. 11): score 0.0625 + (0.0625 + 0.5 + 0.125) > 0.5, "
         "slots 1 .. 7 - 2 - 1 = 1 .. 4 (positions 6 .. 9) go",
         Sim(1, 3, 1, 500000), "slk-chunked");
  b.Case("simlayerkv/basic/chunked-prompt-second-not-lazy", {"simlayerkv.lazy"},
         "simlayerkv.md#at-prefill: as "
         "simlayerkv/basic/chunked-prompt-judged-twice at 0.75: the first "
         "step's 0.875 is lazy, the second's 0.75 is not",
         Sim(1, 3, 1, 750000), "slk-chunked");
  for (const int64_t threshold : {500000, 750000, 800000}) {
    b.Case(absl::StrFormat("simlayerkv/trace/prompt-64-threshold-%d",
                           threshold),
           {},
           absl::StrFormat(
               "simlayerkv.md#how-it-works: a 64-position prompt from the "
               "several-heads trace, 4 query heads in 2 groups, n_last 4 of "
               "its rows, n_initial 4, n_recent 16, threshold %d ppm; then 8 "
               "decode steps that evict nothing",
               threshold),
           Sim(4, 16, 4, threshold), "slk-trace-64");
  }
  b.Case("simlayerkv/preset/kvpress-0.5.5-default-never", {"preset.kvpress-0.5.5"},
         "simlayerkv.md#presets: kvpress's defaults (threshold 1.0) on a "
         "1,100-position prompt: nothing goes",
         Preset("simlayerkv", "kvpress-0.5.5", {}), "slk-trace-1100");
  for (const int64_t threshold : {850000, 900000, 950000}) {
    b.Case(absl::StrFormat("simlayerkv/preset/kvpress-0.5.5-threshold-%d",
                           threshold),
           {"preset.kvpress-0.5.5"},
           absl::StrFormat(
               "simlayerkv.md#presets: kvpress's n_initial 4, n_recent 1024, "
               "n_last 1 on a 1,100-position prompt from the several-heads "
               "trace (4 query heads), threshold %d ppm (a lazy layer keeps 4 + "
               "1023)",
               threshold),
           Preset("simlayerkv", "kvpress-0.5.5",
                  {{"lazy_threshold_ppm", threshold}}),
           "slk-trace-1100");
  }
  b.Case("simlayerkv/defaults/threshold-one", {"defaults.decides"},
         "simlayerkv.md#parameters: every default (kvpress's): threshold 1.0 "
         "never compresses, though the score (1028) is above it; 999999 "
         "would make the layer lazy",
         P("simlayerkv", {}), "slk-heavy-1100");
  b.Case("simlayerkv/defaults/regions", {"defaults.decides", "simlayerkv.lazy"},
         "simlayerkv.md#parameters: n_initial 4, n_recent 1024 and n_last 1 "
         "left out, threshold 0.85 on the 1,100-position trace prompt: lazy, "
         "positions 4 .. 76 go, 4 + 1023 stay (each default decides the kept set)",
         P("simlayerkv", {{"lazy_threshold_ppm", 850000}}), "slk-trace-1100");
  b.Case("simlayerkv/trace/generated-never-evicts", {},
         "simlayerkv.md#how-it-works: a generated trace of one head has no "
         "query rows: every step is a decode step and nothing goes, even at "
         "threshold 0 (a gap the Python port's mutation run found)",
         Sim(1, 2, 1, 0), "slk-generated");
  const std::vector<std::string> refused = {"refusal.invalid-parameter"};
  b.Case("simlayerkv/refusal/last-not-below-recent", refused,
         "simlayerkv.md#parameters: n_last 2, n_recent 2: rule n_last "
         "n_recent",
         Sim(1, 2, 2, 500000), "slk-example");
  b.Case("simlayerkv/refusal/last-above-recent", refused,
         "simlayerkv.md#parameters: n_last 3, n_recent 2: rule n_last "
         "n_recent",
         Sim(1, 2, 3, 500000), "slk-example");
  b.Case("simlayerkv/refusal/budget-unknown", refused,
         "simlayerkv.md#parameters: simlayerkv takes no budget: unknown "
         "parameter",
         P("simlayerkv", {{"budget", 4}}), "slk-example");
  b.Case("simlayerkv/refusal/granularity-unknown", refused,
         "simlayerkv.md#parameters: one kept set; granularity is unknown",
         P("simlayerkv", {{"granularity", 1}}), "slk-two-heads");
  b.Case("simlayerkv/refusal/range-before-rule", refused,
         "simlayerkv.md#parameters: n_last 2^32 - 1 is out of range "
         "(range n_last), checked before the rule n_last n_recent, which it "
         "breaks too with n_recent 2",
         P("simlayerkv", {{"n_recent", 2}, {"n_last", 4294967295}}),
         "slk-example");
  b.Case("simlayerkv/refusal/short-query-row", {"refusal.attention-length"},
         "prefill.md#checks: query 5's row has 5 weights, not 6: "
         "ATTENTION_LENGTH, simlayerkv checks query rows as every policy",
         Sim(1, 2, 1, 500000), "slk-short-row");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
