// Hand-worked cases from spec/spans.md, each derived from the spec's text.
#include "cc/spans.h"

#include <vector>

#include "gtest/gtest.h"

namespace kvspec {
namespace {

using Ranges = std::vector<Position>;

std::vector<Position> Range(Position first, Position last) {
  std::vector<Position> out;
  for (Position p = first; p <= last; ++p) out.push_back(p);
  return out;
}

// spans.md#span-rules, the worked example: window budget 3, span_window 4,
// chunks 2, 5, 1.
TEST(SpanOf, WorkedExampleSlidingWindow) {
  SpanRule rule;
  rule.window = 4;
  const std::vector<Position> step0 = {0, 1};
  EXPECT_EQ(SpanOf(rule, step0, 0), (Ranges{0, 0}));
  EXPECT_EQ(SpanOf(rule, step0, 1), (Ranges{0, 1}));
  const std::vector<Position> step1 = Range(0, 6);
  EXPECT_EQ(SpanOf(rule, step1, 2), (Ranges{0, 2}));
  EXPECT_EQ(SpanOf(rule, step1, 3), (Ranges{0, 3}));
  EXPECT_EQ(SpanOf(rule, step1, 4), (Ranges{1, 4}));
  EXPECT_EQ(SpanOf(rule, step1, 5), (Ranges{2, 5}));
  EXPECT_EQ(SpanOf(rule, step1, 6), (Ranges{3, 6}));
  const std::vector<Position> step2 = {4, 5, 6, 7};
  EXPECT_EQ(SpanOf(rule, step2, 7), (Ranges{4, 7}));
}

// A window of 1 sees only the query itself.
TEST(SpanOf, WindowOfOneIsTheQueryAlone) {
  SpanRule rule;
  rule.window = 1;
  EXPECT_EQ(SpanOf(rule, Range(0, 9), 5), (Ranges{5, 5}));
}

// Full causal: every held position up to the query, gaps split runs.
TEST(SpanOf, CausalFollowsTheHeldSet) {
  SpanRule rule;
  const std::vector<Position> held = {0, 1, 4, 5, 6, 7, 9};
  EXPECT_EQ(SpanOf(rule, held, 7), (Ranges{0, 1, 4, 7}));
  EXPECT_EQ(SpanOf(rule, held, 9), (Ranges{0, 1, 4, 7, 9, 9}));
}

// span_chunk 4: a query at q sees floor(q / 4) * 4 .. q.
TEST(SpanOf, ChunkedSeesItsOwnChunk) {
  SpanRule rule;
  rule.chunk = 4;
  const std::vector<Position> held = Range(0, 11);
  EXPECT_EQ(SpanOf(rule, held, 3), (Ranges{0, 3}));
  EXPECT_EQ(SpanOf(rule, held, 4), (Ranges{4, 4}));
  EXPECT_EQ(SpanOf(rule, held, 7), (Ranges{4, 7}));
  EXPECT_EQ(SpanOf(rule, held, 9), (Ranges{8, 9}));
}

// Sinks are in every span: sinks 0, 1 (last sink 1), span_window 3; a
// query at 8 sees the sinks and 6..8; one at 2 sees 0..2 (one run).
TEST(SpanOf, SinksAreInEverySpan) {
  SpanRule rule;
  rule.window = 3;
  const std::vector<Position> held = {0, 1, 4, 5, 6, 7, 8};
  EXPECT_EQ(SpanOf(rule, held, 8, Position{1}), (Ranges{0, 1, 6, 8}));
  EXPECT_EQ(SpanOf(rule, Range(0, 2), 2, Position{1}), (Ranges{0, 2}));
  // A sink no longer held is not in the span.
  const std::vector<Position> no_zero = {1, 6, 7, 8};
  EXPECT_EQ(SpanOf(rule, no_zero, 8, Position{1}), (Ranges{1, 1, 6, 8}));
}

// Positions after the query are not visible, even when held.
TEST(SpanOf, NothingAfterTheQuery) {
  SpanRule rule;
  EXPECT_EQ(SpanOf(rule, Range(0, 5), 2), (Ranges{0, 2}));
}

// spans.md#position-ids: absolute ids are the positions; cache-relative
// ids are indices in the held set.
TEST(HeldRunsOf, AbsoluteAndCacheRelative) {
  const std::vector<Position> held = {0, 1, 4, 5, 6, 7};
  EXPECT_EQ(HeldRunsOf(held, false),
            (std::vector<HeldRun>{{0, 1, 0}, {4, 7, 4}}));
  EXPECT_EQ(HeldRunsOf(held, true),
            (std::vector<HeldRun>{{0, 1, 0}, {4, 7, 2}}));
  EXPECT_TRUE(HeldRunsOf({}, true).empty());
}

// spans.md#context-shift: d = discard, or floor(n_left / 2) when it is 0,
// then at most max(0, n_left - 1).
TEST(ContextShiftDiscard, HalfByDefaultClampedToKeepOne) {
  EXPECT_EQ(ContextShiftDiscard(5, 0), 2u);  // the worked example's shift
  EXPECT_EQ(ContextShiftDiscard(4, 0), 2u);
  EXPECT_EQ(ContextShiftDiscard(2, 0), 1u);
  EXPECT_EQ(ContextShiftDiscard(1, 0), 0u);  // floor(1/2) = 0
  EXPECT_EQ(ContextShiftDiscard(0, 0), 0u);  // nothing may go
  EXPECT_EQ(ContextShiftDiscard(3, 4), 2u);  // clamped to n_left - 1
  EXPECT_EQ(ContextShiftDiscard(4, 1), 1u);  // given, below the clamp
  EXPECT_EQ(ContextShiftDiscard(1, 7), 0u);  // max(0, n_left - 1) = 0
}

}  // namespace
}  // namespace kvspec
