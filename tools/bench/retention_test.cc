// Hand-worked cases of spec/measures.md#retained-attention-mass. Each
// expected value is written out from the definition, not taken from a run.
#include "tools/bench/retention.h"

#include <functional>
#include <memory>

#include "cc/registry.h"
#include "gtest/gtest.h"

namespace kvspec {
namespace bench {
namespace {

// Steps 0 .. steps-1, w(t, p) given by a function.
class HandRows {
 public:
  HandRows(uint32_t steps, std::function<float(uint32_t, Position)> weight,
           std::vector<std::pair<Position, uint32_t>> heavy = {})
      : steps_(steps), weight_(std::move(weight)), heavy_(std::move(heavy)) {}
  bool Advance() {
    if (started_ && step_ + 1 >= steps_) return false;
    step_ = started_ ? step_ + 1 : 0;
    started_ = true;
    return true;
  }
  uint32_t step() const { return step_; }
  float Weight(Position p) const { return weight_(step_, p); }
  // The same heavy hitters at every step from 1 on.
  const std::vector<std::pair<Position, uint32_t>>& heavy_hitters() const {
    return step_ == 0 ? none_ : heavy_;
  }

 private:
  uint32_t steps_;
  std::function<float(uint32_t, Position)> weight_;
  std::vector<std::pair<Position, uint32_t>> heavy_;
  std::vector<std::pair<Position, uint32_t>> none_;
  bool started_ = false;
  uint32_t step_ = 0;
};

std::unique_ptr<Policy> Make(const PolicyConfig& config) {
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return std::move(*policy);
}

absl::StatusOr<Retention> Measure(
    const PolicyConfig& config, uint32_t steps,
    std::function<float(uint32_t, Position)> w, uint32_t from,
    std::vector<std::pair<Position, uint32_t>> heavy = {}) {
  HandRows for_sums(steps, w);
  const std::vector<double> sums = RowSums(for_sums);
  HandRows rows(steps, w, heavy);
  std::unique_ptr<Policy> policy = Make(config);
  return MeasureRows(*policy, rows, sums, from);
}

float Uniform(uint32_t, Position) { return 1.0f; }

TEST(RowSums, OneSumPerStepAscendingPositions) {
  HandRows rows(4, [](uint32_t t, Position p) { return float(t * 10 + p); });
  // Step 0: empty, +0.0. Step 1: 10. Step 2: 20 + 21. Step 3: 30 + 31 + 32.
  EXPECT_EQ(RowSums(rows), (std::vector<double>{0.0, 10.0, 41.0, 93.0}));
}

// Uniform rows, window of 2: K_1 = {0}, K_2 = {0, 1}, K_3 = {1, 2},
// K_4 = {2, 3}; measured from step 3: r(3) = 2/3, r(4) = 2/4.
TEST(MeasureRows, WindowOnUniformRows) {
  absl::StatusOr<Retention> r =
      Measure({"window", {{"budget", 2}}}, 5, Uniform, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->measured_steps, 2u);
  EXPECT_EQ(r->mean, (0.0 + 2.0 / 3.0 + 2.0 / 4.0) / 2.0);
  EXPECT_EQ(r->worst, 0.5);
  EXPECT_EQ(r->worst_step, 4u);
  // Steps 2, 3 and 4 each evict the oldest of three.
  EXPECT_EQ(r->victims, (std::vector<Position>{0, 1, 2}));
  EXPECT_EQ(r->victims_per_step, (std::vector<uint32_t>{0, 0, 1, 1, 1}));
  // Two kept positions, 4 bytes each; window holds nothing else.
  EXPECT_EQ(r->peak_memory_bytes, 8u);
}

// Position 0 weighs 3, every other 1; row_sum(t) = 3 + (t - 1).
// window of 1 keeps {t - 1}: r(1) = 3/3, r(2) = 1/4, r(3) = 1/5.
// streamingllm of 2 with 1 sink keeps {0, t - 1}: r(1) = 3/3, r(2) = 4/4,
// r(3) = 4/5.
float SinkThree(uint32_t, Position p) { return p == 0 ? 3.0f : 1.0f; }

TEST(MeasureRows, DroppingTheSinkCostsItsMass) {
  absl::StatusOr<Retention> window =
      Measure({"window", {{"budget", 1}}}, 4, SinkThree, 1);
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(window->mean, (0.0 + 3.0 / 3.0 + 1.0 / 4.0 + 1.0 / 5.0) / 3.0);
  EXPECT_EQ(window->worst, 1.0 / 5.0);
  EXPECT_EQ(window->worst_step, 3u);

  absl::StatusOr<Retention> sinks = Measure(
      {"streamingllm", {{"budget", 2}, {"sinks", 1}}}, 4, SinkThree, 1);
  ASSERT_TRUE(sinks.ok()) << sinks.status();
  EXPECT_EQ(sinks->mean, (0.0 + 3.0 / 3.0 + 4.0 / 4.0 + 4.0 / 5.0) / 3.0);
  EXPECT_EQ(sinks->worst, 4.0 / 5.0);
  EXPECT_EQ(sinks->worst_step, 3u);
  EXPECT_FALSE(window->EvictsAlike(*sinks));
}

// The worst step is the first to reach the least value: full keeps
// everything, so every r(t) is 1 and the worst step is `from`.
TEST(MeasureRows, FullRetainsEverythingAndTheFirstWorstStepWins) {
  absl::StatusOr<Retention> r = Measure({"full", {}}, 6, SinkThree, 2);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->mean, 1.0);
  EXPECT_EQ(r->worst, 1.0);
  EXPECT_EQ(r->worst_step, 2u);
  EXPECT_EQ(r->measured_steps, 4u);
  EXPECT_TRUE(r->victims.empty());
}

// h2o with budget 2 and no recent window: 4 bytes of position and one
// binary64 score per kept slot, two slots at most after any step.
TEST(MeasureRows, PeakMemoryIsTheLargestAfterAnyStep) {
  absl::StatusOr<Retention> r = Measure(
      {"h2o", {{"budget", 2}, {"recent_window", 0}}}, 5, Uniform, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->peak_memory_bytes, 2u * (4u + 8u));
}

// Heavy hitters 0 (multiplicity 2) and 2 (multiplicity 1), window of 2:
// K_3 = {1, 2} holds 2, so 1 of 3; K_4 = {2, 3} holds 2, 1 of 3;
// K_5 = {3, 4} holds neither, 0 of 3. Mean from step 3: (1/3 + 1/3 + 0) / 3.
TEST(MeasureRows, HeavyHittersKeptCountMultiplicity) {
  absl::StatusOr<Retention> r = Measure({"window", {{"budget", 2}}}, 6,
                                        Uniform, 3, {{0, 2}, {2, 1}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->heavy_steps, 3u);
  EXPECT_EQ(r->heavy_kept, (0.0 + 1.0 / 3.0 + 1.0 / 3.0 + 0.0 / 3.0) / 3.0);
  // full keeps them all.
  absl::StatusOr<Retention> full =
      Measure({"full", {}}, 6, Uniform, 3, {{0, 2}, {2, 1}});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->heavy_kept, 1.0);
}

// Steps without heavy hitters are left out of the heavy-hitter mean.
TEST(MeasureRows, NoHeavyHittersNoHeavyFigure) {
  absl::StatusOr<Retention> r =
      Measure({"window", {{"budget", 2}}}, 5, Uniform, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->heavy_steps, 0u);
  EXPECT_EQ(r->heavy_kept, 0.0);
}

TEST(MeasureRows, RefusesMeasuredStepsOutsideTheRun) {
  absl::StatusOr<Retention> zero = Measure({"full", {}}, 4, Uniform, 0);
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("from must be at least 1"),
            std::string::npos);
  absl::StatusOr<Retention> past = Measure({"full", {}}, 4, Uniform, 4);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(past.status().message().find("below the number of steps (4)"),
            std::string::npos);
}

TEST(MeasureRows, PassesOnThePolicysRefusal) {
  // A NaN weight is refused by the policy (ATTENTION_VALUE); the measure
  // returns that refusal instead of a figure.
  absl::StatusOr<Retention> r = Measure(
      {"window", {{"budget", 2}}}, 4,
      [](uint32_t t, Position) { return t == 3 ? NAN : 1.0f; }, 1);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NaN"), std::string::npos);
}

// On the canonical trace, full sums the same weights in the same order as
// the row: r(t) is exactly 1 at every step.
TEST(MeasureTrace, FullIsExactlyOneOnTheCanonicalTrace) {
  TraceConfig trace;
  trace.steps = 600;
  absl::StatusOr<std::vector<double>> sums = TraceRowSums(trace);
  ASSERT_TRUE(sums.ok()) << sums.status();
  ASSERT_EQ(sums->size(), 600u);
  std::unique_ptr<Policy> full = Make({"full", {}});
  absl::StatusOr<Retention> r = MeasureTrace(*full, trace, *sums, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->mean, 1.0);
  EXPECT_EQ(r->worst, 1.0);
  EXPECT_EQ(r->peak_memory_bytes, 600u * 4u);
  // Heavy hitters exist from epoch 1 (step 512): 88 of the measured steps.
  EXPECT_EQ(r->heavy_steps, 88u);
  EXPECT_EQ(r->heavy_kept, 1.0);
}

TEST(MeasureTrace, RefusesABadTrace) {
  TraceConfig trace;  // steps 0: refused as INVALID_TRACE
  EXPECT_FALSE(TraceRowSums(trace).ok());
}

// Six steps, each admitting one position; victims 2 at step 2 and 1 at
// step 4. Kept after each step: 1, 2, 1, 2, 2, 3, so the peak is 3. From
// step 2, four steps are measured and two of them evict: 500 per 1,000,
// (2 + 1) / 2 = 1.5 positions each.
TEST(CountEvictionWork, CountsByHand) {
  Retention run;
  run.victims_per_step = {0, 0, 2, 0, 1, 0};
  const EvictionWork work = CountEvictionWork(run, /*from=*/2, /*steps=*/6);
  EXPECT_EQ(work.peak_kept, 3u);
  EXPECT_EQ(work.evictions_per_1000, 500.0);
  EXPECT_EQ(work.victims_per_eviction, 1.5);
  // From step 5 nothing is evicted: 0 evictions, 0 positions each.
  const EvictionWork none = CountEvictionWork(run, /*from=*/5, /*steps=*/6);
  EXPECT_EQ(none.evictions_per_1000, 0.0);
  EXPECT_EQ(none.victims_per_eviction, 0.0);
  EXPECT_EQ(none.peak_kept, 3u);
}

}  // namespace
}  // namespace bench
}  // namespace kvspec
