// Spans and position ids (spec/spans.md): which positions each query of a
// step attends to, and which position id each held position carries.
//
// Pure functions over a step's held set, so each rule of spec/spans.md is in
// one place. A policy built with `spans` 1 calls them at every step
// (Policy::Step) and the harness copies the result into the step's record.
//
// Example (spec/spans.md#span-rules, `span_window` 4):
//   SpanRule rule;
//   rule.window = 4;
//   std::vector<Position> held = {0, 1, 2, 3, 4, 5, 6};
//   SpanOf(rule, held, /*query=*/4)  ->  {1, 4}   (the run 1..4)
//
// Spec: spec/spans.md
#ifndef KVSPEC_CC_SPANS_H_
#define KVSPEC_CC_SPANS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace kvspec {

// A token's absolute position (as cc/policy.h).
using Position = uint32_t;

// spec/spans.md#parameters, as one policy applies them.
struct SpanRule {
  // `spans` 1: the policy records spans and the held set at every step.
  bool log = false;
  // `span_window` W (0: none): a query at q is allowed p >= q - W + 1.
  uint32_t window = 0;
  // `span_chunk` C (0: none): a query at q is allowed p >= floor(q/C) * C.
  uint32_t chunk = 0;
  // `position_ids` 1: ids are indices in the held set; 0: absolute.
  bool cache_relative_ids = false;
};

// spec/spans.md#the-log: a run of consecutive held positions with the
// position id of its first.
struct HeldRun {
  Position first = 0;
  Position last = 0;
  uint32_t id = 0;
  bool operator==(const HeldRun& o) const {
    return first == o.first && last == o.last && id == o.id;
  }
};

// spec/spans.md#position-ids: the held set (ascending) as maximal runs of
// consecutive positions, each with the id of its first position.
std::vector<HeldRun> HeldRunsOf(absl::Span<const Position> held,
                                bool cache_relative_ids);

// spec/spans.md#span-rules: the span of the query at `query`, as the
// `first, last` pairs of its maximal runs. `held` is ascending and holds
// `query`; `last_sink` is the highest sink position when the policy has
// sinks and at least one was admitted (every position up to it that is held
// is a sink), nullopt otherwise.
std::vector<Position> SpanOf(const SpanRule& rule,
                             absl::Span<const Position> held, Position query,
                             std::optional<Position> last_sink = std::nullopt);

// spec/spans.md#context-shift: how many of the `n_left` positions that may
// go a context shift discards: `discard` when above 0, else
// floor(n_left / 2); then at most max(0, n_left - 1).
size_t ContextShiftDiscard(size_t n_left, int64_t discard);

}  // namespace kvspec

#endif  // KVSPEC_CC_SPANS_H_
