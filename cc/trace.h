// The trace generator of spec/trace.md: synthetic attention with sinks,
// heavy-hitter epochs, recency and a noisy background, bit-reproducible on
// every platform, and streaming: a step's weight for one position costs O(1)
// (plus a search among the epoch's heavy hitters), so a run of millions of
// steps holds only the policy's kept positions.
//
// Example:
//   TraceConfig config;                  // the canonical trace
//   config.steps = 4096;
//   absl::StatusOr<TraceGenerator> trace = TraceGenerator::Create(config);
//   while (trace->Advance()) {           // step 0, 1, ...
//     float w = trace->Weight(0);        // requires position < step()
//   }
//
// Spec: spec/trace.md
#ifndef KVSPEC_CC_TRACE_H_
#define KVSPEC_CC_TRACE_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cc/policy.h"

namespace kvspec {

// spec/trace.md#parameters; the defaults are the canonical trace.
struct TraceConfig {
  uint64_t seed = 1;
  uint32_t steps = 0;  // required: at least 1
  uint32_t sinks = 4;
  double sink_mass = 0.5;
  uint32_t recent_length = 8;
  double recent_mass = 0.125;
  double recent_decay = 0.5;
  uint32_t heavy_count = 16;
  double heavy_mass = 0.25;
  uint32_t epoch_length = 512;
  double background_mass = 0.125;
  double noise = 0.3;
};

// Checks every parameter against spec/trace.md#parameters. Refusal:
// INVALID_TRACE, naming the parameter, the value and the rule.
absl::Status ValidateTrace(const TraceConfig& config);

// spec/trace.md#hashes.
uint64_t Mix64(uint64_t x);
double Salience(uint64_t seed, Position position);

// spec/trace.md#several-heads: query head `head`'s configuration. Head 0's
// is `config` itself; head h >= 1 has its own seed and a role that
// multiplies one mass by 4 (so it may exceed the bound ValidateTrace
// checks; it is never validated again).
TraceConfig HeadTraceConfig(const TraceConfig& config, uint32_t head);

class TraceGenerator {
 public:
  // Refusal: as ValidateTrace.
  static absl::StatusOr<TraceGenerator> Create(const TraceConfig& config);
  // The generator of query head `head` of a multi-head trace
  // (spec/trace.md#several-heads): `config` is validated, then the head's
  // configuration used. Head 0 is Create(config).
  static absl::StatusOr<TraceGenerator> CreateForHead(const TraceConfig& config,
                                                      uint32_t head);

  // Moves to the next step (the first call moves to step 0). Returns false,
  // and changes nothing, once every step has been produced.
  bool Advance();

  // The current step t; it admits position t. Requires: Advance() returned
  // true at least once.
  uint32_t step() const { return step_; }

  // weight(t, p) of spec/trace.md#steps-and-rows. Requires: p < step().
  float Weight(Position position) const;

  // The full-cache row of the current step: Weight(p) for p < step().
  std::vector<float> Row() const;

  // The current epoch's heavy hitters and their multiplicities, ascending.
  const std::vector<std::pair<Position, uint32_t>>& heavy_hitters() const {
    return heavy_;
  }

  const TraceConfig& config() const { return config_; }

 private:
  explicit TraceGenerator(const TraceConfig& config) : config_(config) {}
  void StartEpoch(uint64_t epoch);

  TraceConfig config_;
  bool started_ = false;
  uint32_t step_ = 0;
  // Sum of salience(0 .. step_-1), from position 0 up.
  double salience_sum_ = 0.0;
  uint64_t epoch_ = 0;
  std::vector<std::pair<Position, uint32_t>> heavy_;
  // Parts of the current step's row (spec/trace.md#steps-and-rows).
  uint32_t sinks_here_ = 0;
  uint32_t recent_first_ = 0;
  std::vector<double> recent_powers_;  // d^0, d^1, ..., one per recent
  double recent_norm_ = 0.0;
  double mass_ = 0.0;
};

// spec/trace.md#streaming: runs a whole trace through `policy`, handing it
// only the weights of its kept positions, and calls `on_step` after each
// step with the step's index, its victims and (when `want_detail`) the
// eviction's ranking. Stops at, and returns, the first refusal
// (INVALID_TRACE for the configuration).
using TraceStepCallback =
    std::function<void(uint32_t step, absl::Span<const Position> victims,
                       const EvictionDetail& detail)>;
absl::Status RunTrace(Policy& policy, const TraceConfig& config,
                      const TraceStepCallback& on_step,
                      bool want_detail = false);


}  // namespace kvspec

#endif  // KVSPEC_CC_TRACE_H_
