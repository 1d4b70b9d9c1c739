// The cases the differential search found (spec/vectors.md#the-suite,
// group search/): each a shrunk scenario on which a mutant or a port
// disagreed with the reference and no other vector did.
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

// Cases the differential search found (tools/README.md#search): each is
// the search's shrunk scenario for a mutant of a bundled port that the
// vectors let through and only the search killed (tools/mutation.sh
// --search). Its description names the mutant and the rule; the mutation
// run is its check (the mutant is killed by the vectors from then on).
void AddSearchCases(SuiteBuilder& b) {
  {
    // search --seed=1, case 116, shrunk in 16 rounds against the Python
    // port with mutmut 3.8.1's trace.xǁHeadsTraceǁweights_matrix__mutmut_8.
    TraceConfig trace = CanonicalTrace(2);
    trace.seed = 190;
    trace.sinks = 2;
    trace.recent_length = 9;
    trace.heavy_count = 1;
    trace.epoch_length = 58;
    trace.noise = 0.0;
    b.Add(WithHeads(Traced("search-trace-heads-one-position", trace), 2, 2));
  }
  b.Case("search/trace-heads/one-position-rows", {"search.found"},
         "found by tools/search (seed 1, case 116, shrunk): a two-head trace "
         "whose sets keep one position at step 1; each row holds that "
         "position's generated weight, not zero, so tova evicts the new "
         "position 1 and keeps 0 (the Python port's weights_matrix with "
         "`== 1` in place of `== 0` read a one-position row as zeros, and the "
         "tie evicted 0)",
         P("tova", {{"budget", 1}, {"recent_window", 0}}),
         "search-trace-heads-one-position");

  // The full mutmut run of the Python port with the search as kill test
  // (issue 19, 2026-12-01, slices 0 and 1 of 8 at commit 5abcd81): four
  // mutants the vectors let through and search --seed=1 killed, each case
  // its shrunk scenario.
  // The search shrank these two to a prefill of one position whose one
  // query row makes the observation window the whole prompt, so the pooled
  // prefix is empty. Here the prompt has two positions and both rows, so
  // the prefix is still empty and the step evicts (budget 1): every score
  // is the window's +infinity, and the lower position, 0, goes.
  b.Add(Explicit("search-prefill-two-positions", {QueryRows(2, {{1.0f, 1.0f}})}));
  b.Add(Explicit("search-prefill-all-window", {QueryRows(2, {{1.0f}, {0.5f, 0.5f}})}));
  b.Case("search/prefill/snapkv-avg-pool-empty-prefix", {"search.found"},
         "found by tools/search (seed 1, case 36, shrunk in 27 rounds to a "
         "one-position prefill): the observation window is the whole prompt, "
         "so SnapKV's average pooling runs over no score; 0 goes among equal "
         "window scores (the Python port's avg_pool with `n == 1` in place "
         "of `n == 0` indexed an empty list and crashed)",
         P("snapkv", {{"budget", 1}, {"recent_window", 0}, {"pooling", 1}}),
         "search-prefill-all-window");
  b.Case("search/prefill/snapkv-max-pool-empty-prefix", {"search.found"},
         "found by tools/search (seed 1, case 68, shrunk in 33 rounds to a "
         "one-position prefill): the same under max pooling, the default "
         "(the Python port's max_pool with `n == 1` in place of `n == 0` "
         "crashed)",
         P("snapkv", {{"budget", 1}, {"recent_window", 0}}),
         "search-prefill-all-window");
  b.Case("search/prefill/ratio-ppm-one", {"search.found"},
         "found by tools/search (seed 1, case 74, shrunk in 11 rounds): "
         "ratio_ppm 1 is a ratio: a prefill of 2 keeps max(1, floor(2 x "
         "0.999999)) = 1 and evicts 0 (the Python port's step_budget with "
         "`ratio_ppm > 1` read 1 as no ratio and kept both)",
         P("snapkv", {{"recent_window", 0}, {"ratio_ppm", 1}}),
         "search-prefill-two-positions");
  {
    // search --seed=1, case 116, shrunk in 27 rounds against
    // trace.xǁTraceGeneratorǁbegin_step__mutmut_64 (one head).
    TraceConfig trace = CanonicalTrace(59);
    trace.seed = 190;
    trace.sinks = 2;
    trace.recent_length = 9;
    trace.heavy_count = 1;
    trace.epoch_length = 58;
    trace.noise = 0.0;
    b.Add(Traced("search-trace-one-heavy-hitter", trace));
  }
  b.Case("search/trace/one-heavy-hitter", {"search.found"},
         "found by tools/search (seed 1, case 116, shrunk in 27 rounds): a "
         "one-head trace with exactly one heavy hitter, whose mass decides "
         "tova's victims (the Python port's TraceGenerator.begin_step with "
         "`heavy_count > 1` in place of `> 0` dropped a lone heavy hitter)",
         P("tova", {{"budget", 1}, {"recent_window", 0}}),
         "search-trace-one-heavy-hitter");

  // mutmut 3.8.1 over the Python port's spans.py, window.py and
  // streamingllm.py with the search as kill test (issue 19, 2026-12-02, at
  // commit 08868fe: 456 mutants, 13 killed by the search only): each case
  // the search's shrunk scenario (search --seed=1), lengthened where
  // needed so that it evicts.
  b.Add(Chunks("search-decode-4", {1, 1, 1, 1}));
  b.Add(Chunks("search-decode-7", std::vector<uint32_t>(7, 1)));
  b.Add(Chunks("search-chunks-1-2-1", {1, 2, 1}));
  b.Add(Chunks("search-chunk-2", {2}));
  b.Add(Chunks("search-chunk-3", {3}));
  b.Case("search/spans/window-room-for-the-step", {"search.found"},
         "found by tools/search (seed 1, case 184, shrunk in 16-22 rounds): "
         "window with evict_at 1 makes room for each decode step: budget 2, "
         "0 goes before 2 is admitted, 1 before 3 (the Python port's "
         "WindowPolicy.evict_before with kept + count + budget, kept - count "
         "- budget, or no count at all; no vector ran window with evict_at 1)",
         P("window", {{"budget", 2}, {"evict_at", 1}}), "search-decode-4");
  b.Case("search/contextshift/budget-minus-sinks-two", {"search.found"},
         "found by tools/search (seed 1, case 17, shrunk in 14 rounds): "
         "budget - sinks exactly 2 is accepted (budget 5, sinks 3); the "
         "shift at position 5 discards 3, one of the two that may go (the "
         "Python port with `<= 2` or `< 3` refused it)",
         P("streamingllm", {{"budget", 5}, {"sinks", 3}, {"context_shift", 1}}),
         "search-decode-7");
  b.Case("search/contextshift/window-budget-two", {"search.found"},
         "found by tools/search (seed 1, case 233, shrunk in 9 rounds): "
         "window takes context_shift 1 at budget 2 (it has no sinks: the "
         "Python port's check_context_shift_relations defaulting sinks to 1 "
         "refused it)",
         P("window", {{"budget", 2}, {"context_shift", 1}}), "search-decode-4");
  b.Case("search/contextshift/discard-one-without-shift", {"search.found"},
         "found by tools/search (seed 1, case 502, shrunk in 15 rounds): "
         "discard 1 with context_shift 0 is refused (the Python port with "
         "`discard > 1` accepted it)",
         P("streamingllm", {{"discard", 1}}), "one-step");
  b.Case("search/contextshift/nothing-may-go", {"search.found"},
         "found by tools/search (seed 1, case 336, shrunk in 9 rounds): "
         "window budget 2, discard 1, chunks 1, 2, 1: before the chunk of 2 "
         "one position is kept, n_left 1, so d = min(1, max(0, 0)) = 0 and "
         "the chunk is kept whole (3); the next step discards 1 (the Python "
         "port's context_shift_discard with max(1, n_left - 1) discarded 0)",
         P("window", {{"budget", 2}, {"context_shift", 1}, {"discard", 1}}),
         "search-chunks-1-2-1");
  b.Case("search/spans/both-rules-at-one", {"search.found"},
         "found by tools/search (seed 1, case 601, shrunk in 24 rounds): "
         "span_window 1 and span_chunk 1 are both set, and refused (the "
         "Python port with `span_chunk > 1` accepted them)",
         P("window", {{"span_window", 1}, {"span_chunk", 1}}), "one-step");
  b.Case("search/spans/window-of-one", {"search.found"},
         "found by tools/search (seed 1, case 208, shrunk in 25 rounds): "
         "span_window 1: each query attends to itself alone (the Python "
         "port's step_record with `w > 1` took a window of 1 as none)",
         P("window", {{"budget", 2}, {"spans", 1}, {"span_window", 1}}),
         "search-decode-4");
  b.Case("search/spans/chunk-of-one", {"search.found"},
         "found by tools/search (seed 1, case 541, shrunk in 12 rounds): "
         "streamingllm without sinks, span_chunk 1, a chunk of 2: query 1 "
         "attends to 1 alone (the Python port's step_record with `c > 1` "
         "took a chunk of 1 as none)",
         P("streamingllm", {{"budget", 4}, {"sinks", 0}, {"spans", 1},
                            {"span_chunk", 1}}),
         "search-chunk-2");
  b.Case("search/spans/one-sink-in-span", {"search.found"},
         "found by tools/search (seed 1, case 105, shrunk in 26 rounds): "
         "one sink, span_chunk 1, a chunk of 3: query 2 attends to the sink "
         "0 and to 2 (the Python port's step_record with `s > 1`, or with "
         "min(sinks_held, slot - 1) sinks, left a lone sink out)",
         P("streamingllm", {{"budget", 4}, {"sinks", 1}, {"spans", 1},
                            {"span_chunk", 1}}),
         "search-chunk-3");

  // The whole-port mutmut run of the Python port (issue 19, 2026-12-02, at
  // commit 09d490d, first chunk): five mutants the vectors let through, each
  // case the shrunk scenario its triage gave.
  b.Case("search/prefill/adaptive-with-ratio", {"search.found",
                                                "refusal.invalid-parameter"},
         "found by tools/search (seed 1, shrunk): adaptive 1 with ratio_ppm "
         "666667 (recent_window 0, so rule 1 holds) is refused by rule 2 of "
         "prefill.md#when-a-policy-evicts (the Python port's "
         "check_prefill_relations without ratio_ppm in rule 2's list "
         "accepted it; the vectors refused adaptive with prefill_only and "
         "with window_budget only)",
         P("tova", {{"adaptive", 1}, {"recent_window", 0}, {"ratio_ppm", 666667}}),
         "prefill-tova-card");
  b.Case("search/prefill/ratio-one-with-recent-window", {"search.found",
                                                         "refusal.invalid-parameter"},
         "found by tools/search (seed 2, shrunk): ratio_ppm 1, the least "
         "ratio, with h2o's default recent_window 16 is refused by rule 1 "
         "(the Python port with `ratio_ppm > 1` accepted it)",
         P("h2o", {{"ratio_ppm", 1}}), "prefill-h2o-card");
  // The first step of two query heads: two heads rows of no weights (one
  // per position admitted before, none) are well formed, so only the query
  // rows beside them make the step wrong.
  b.Add(WithHeads(Explicit("search-prefill-heads-beside-queries",
                           {[] {
                             ScenarioStep step = QueryRows(
                                 2, {{0.5f, 0.5f}, {0.25f, 0.75f}});
                             step.heads = {Row{}, Row{}};
                             return step;
                           }()}),
                  2, 2));
  b.Case("search/prefill/heads-rows-beside-queries", {"search.found",
                                                       "refusal.attention-length"},
         "a first step of two query heads carries two empty heads rows (well "
         "formed: no position was admitted before) and query rows: "
         "ATTENTION_LENGTH by check 3 of prefill.md#checks (a step with "
         "query rows has no heads row; the Python port that checked only "
         "for an attention row ran it as a prefill)",
         P("h2o", {{"budget", 1}, {"recent_window", 0}}),
         "search-prefill-heads-beside-queries");
  {
    // Subnormal masses: the recent shares mass x d^k / norm are exact only
    // when the powers d^k start at d^0 = 1 (trace.md#steps-and-rows).
    TraceConfig trace = CanonicalTrace(4);
    trace.sinks = 0;
    trace.heavy_count = 0;
    trace.recent_mass = 2.5e-323;
    trace.background_mass = 5e-324;
    b.Add(Traced("search-trace-subnormal-masses", trace));
  }
  b.Case("search/trace/subnormal-masses", {"search.found"},
         "found by tools/search (shrunk): recent_mass 2.5e-323 and "
         "background_mass 5e-324 (subnormal binary64), no sinks and no heavy "
         "hitters; the shares round in the subnormal range, so the powers "
         "must start at d^0 = 1.0 (the Python port's TraceGenerator with "
         "the powers started at another value gave other weights)",
         P("tova", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-subnormal-masses");
  {
    // The seed 2^64 - 0x9E3779B97F4A7C15 makes head 0's salience hash of
    // position 0 mix64(0) = 0, so salience(0) = (0 + 1) x 2^-53, the least.
    TraceConfig trace = CanonicalTrace(4);
    trace.seed = 7046029254386353131ULL;
    b.Add(WithHeads(Traced("search-trace-heads-zero-hash", trace), 2, 2));
    b.Add(Traced("search-trace-zero-hash", trace));
  }
  {
    // A several-heads trace without sinks: no step has a sink part.
    TraceConfig trace = CanonicalTrace(6);
    trace.sinks = 0;
    b.Add(WithHeads(Traced("search-trace-heads-no-sinks", trace), 3, 1));
  }
  b.Case("search/trace-heads/no-sinks", {"search.found"},
         "found by tools/search (seed 1; the whole-port run's slice 1): a "
         "trace of three query heads with sinks 0, so no step has a sink "
         "part (the Python port's HeadsTrace.weights_matrix adding the sink "
         "part when there are no sinks, `s >= 0` for `s > 0`, read a share "
         "that was never set and crashed; every several-heads trace of the "
         "vectors had sinks)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-heads-no-sinks");
  b.Add(Explicit("search-two-positions-one-row", {Null(1), WithRow({0.125f})}));
  b.Case("search/snapkv/avg-pool-kernel-wider-than-kept", {"search.found"},
         "found by tools/search (seed 1, case 129; the whole-port run's "
         "slice 6): avg pooling with pool_kernel 5 (r = 2) over n = 2 "
         "kept slots, so each slot's neighbourhood j = i - 2 .. i + 2 "
         "clipped to 0 <= j < 2 is both slots: sums 0.125 and 0 pool to "
         "0.125 / 5 = 0.025 each, a tie, and 0 goes (the Python port's "
         "avg_pool with the radius clamped to n - 2 for n - 1 pooled "
         "nothing, scored 0.025 and 0, and evicted 1; no vector had avg "
         "pooling over fewer kept slots than the kernel's radius + 2)",
         P("snapkv", {{"budget", 1}, {"recent_window", 0}, {"pooling", 1}}),
         "search-two-positions-one-row");
  b.Add(Explicit("search-totals-one-row",
                 {WithTotals(QueryRows(2, {{0.25f, 0.75f}}), 1, 1, 1)}));
  b.Case("search/totals/total-rows-one", {"search.found"},
         "found by tools/search (seed 1, case 7, shrunk to one position and "
         "total_rows 1; the mutation run of the functions spec 0.10.0 "
         "changed), here with a second position so that h2o reads the "
         "totals and evicts: a two-position prefill whose column totals "
         "cover its last query only, total_rows 1, the least that check 3 "
         "of prefill.md#their-checks accepts: totals 0.25, 0.75, 0 goes "
         "(the Python port's _check_totals with 1 <= total_rows made "
         "2 <= total_rows refused the step ATTENTION_LENGTH; every "
         "accepted totals vector had total_rows 2 or more, and the one "
         "with total_rows 1 is refused for its missing query rows)",
         P("h2o", {{"budget", 1}, {"recent_window", 0}}),
         "search-totals-one-row");
  b.Case("search/trace/zero-hash", {},
         "the same seed with one head (TraceGenerator's own salience, not "
         "HeadsTrace's): salience(0) is 2^-53; with the hash's +1 changed, "
         "position 0's background share changes and h2o keeps other "
         "positions",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-zero-hash");
  b.Case("search/trace-heads/zero-hash", {"search.found"},
         "found by tools/search (shrunk): a two-head trace whose seed makes "
         "head 0's salience hash of position 0 zero, so salience(0) is 2^-53 "
         "(the +1 of trace.md#hashes decides it; the Python port's "
         "HeadsTrace.weights_matrix with the hash's +1 changed agreed with "
         "the reference on every other hash)",
         P("h2o", {{"budget", 2}, {"recent_window", 0}}),
         "search-trace-heads-zero-hash");
}

}  // namespace build
}  // namespace vectors
}  // namespace kvspec
