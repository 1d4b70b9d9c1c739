// Policy: the one interface every kvspec eviction policy implements.
//
// A policy owns the kept set (positions in ascending order, which is "kept
// order") and whatever per-slot state its rule needs. One call to Step() is
// one decode step of spec/harness.md#the-decode-step:
//
//   1. record the step's attention (one float32 weight per kept position, in
//      kept order), unless the attention is null;
//   2. admit the step's new positions (one, or a prefill chunk);
//   3. while more positions are kept than the policy allows, choose victims
//      with the policy's rule and remove them; return them ascending.
//
// Step() validates everything first and refuses bad input with a status that
// names the step and the index (spec/harness.md#refusals); a refused step
// leaves the policy exactly as it was.
//
// Concrete policies live in cc/policies/ in anonymous namespaces and are built
// by name through the registry (cc/registry.h).
//
// Example:
//   absl::StatusOr<std::unique_ptr<Policy>> policy =
//       MakePolicy({"window", {{"budget", 4}}});
//   absl::StatusOr<std::vector<Position>> victims =
//       (*policy)->Step({/*first=*/7, /*count=*/1, weights});
//
// Spec: spec/harness.md
#ifndef KVSPEC_CC_POLICY_H_
#define KVSPEC_CC_POLICY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cc/block.h"
#include "cc/spans.h"
#include "cc/trigger.h"

namespace kvspec {

// A token's absolute position in the sequence, starting at 0 (declared in
// cc/spans.h as the same type).

// The input of one step (spec/harness.md#the-decode-step).
struct StepInput {
  // First position admitted; must be above every position admitted before.
  Position first = 0;
  // How many consecutive positions are admitted: 1 for a decode step, more
  // for a prefill chunk (spec/harness.md#chunked-admission). At least 1.
  uint32_t count = 1;
  // One weight per kept position, in kept order; nullopt is null attention
  // (spec/harness.md#null-attention). A policy covering several query heads
  // (spec/heads.md#kept-sets) takes one such row per head, head-major: the
  // weights of its first head, then its second, and so on.
  std::optional<absl::Span<const float>> attention;
  // Query rows (spec/prefill.md#query-rows), which make the step a prefill
  // step; nullopt for any other step, and then `query_rows` is 0. Gathered
  // at the kept positions after this step's admissions
  // (spec/prefill.md#what-a-policy-sees): heads() x query_rows rows,
  // head-major, each head's rows in ascending query position, row j of a
  // head holding (kept after admission) - query_rows + 1 + j weights. A step
  // with query rows has no `attention`.
  std::optional<absl::Span<const float>> queries;
  uint32_t query_rows = 0;
  // Column totals (spec/prefill.md#column-totals), only beside query rows;
  // nullopt otherwise, and then `total_rows` is 0. Gathered as the query
  // rows: heads() x (kept after admission) binary64 values, head-major, in
  // kept order; summed over the step's last `total_rows` queries
  // (1 <= total_rows <= count).
  std::optional<absl::Span<const double>> totals;
  uint32_t total_rows = 0;
  // Keys (spec/tensors.md#what-a-policy-sees) of the positions this step
  // admits: `key_heads` KV heads' keys one after the other, ascending, each
  // `count` x `head_dim` values in position order; nullopt without keys
  // (then key_heads and head_dim are 0). Policies that do not read keys
  // ignore them.
  std::optional<absl::Span<const float>> keys;
  uint32_t key_heads = 0;
  uint32_t head_dim = 0;
  // Values (spec/tensors.md#what-a-policy-sees), as keys: `key_heads` KV
  // heads' values, each `count` x `value_dim`; nullopt without values (then
  // value_dim is 0). Policies that do not read values ignore them.
  std::optional<absl::Span<const float>> values;
  uint32_t value_dim = 0;
};

// A prefill step's gathered query rows, as a policy reads them
// (spec/prefill.md#what-a-policy-sees).
struct QueryRows {
  absl::Span<const float> weights;  // every head's rows, head-major
  size_t rows = 0;                  // m, per head
  size_t kept = 0;                  // kept positions after admission
  // Column totals (spec/prefill.md#column-totals): empty when the step has
  // none; else `kept` values per head, head-major, over the step's last
  // `total_rows` queries.
  absl::Span<const double> totals;
  size_t total_rows = 0;

  // Weights in row j: the kept positions up to its query.
  size_t Length(size_t j) const { return kept - rows + 1 + j; }
  // Weights of one head's rows together.
  size_t PerHead() const { return rows * (kept - rows + 1) + rows * (rows - 1) / 2; }
  bool has_totals() const { return total_rows > 0; }
  absl::Span<const double> Totals(size_t head) const {
    return totals.subspan(head * kept, kept);
  }
  // How many of `count` last queries of the step see kept slot `slot`: the
  // chunk's positions are the last slots, so min(count, kept - slot)
  // (spec/prefill.md#column-totals).
  size_t QueriesSeeing(size_t slot, size_t count) const {
    return std::min(count, kept - slot);
  }
  absl::Span<const float> Row(size_t head, size_t j) const {
    const size_t offset = head * PerHead() + j * (kept - rows + 1) + j * (j - 1) / 2;
    return weights.subspan(offset, Length(j));
  }
};

// One candidate of a score-based eviction, with the score it was ranked by.
struct RankedCandidate {
  Position position = 0;
  double score = 0.0;
  bool operator==(const RankedCandidate& o) const {
    return position == o.position && score == o.score;
  }
};

// How a score-based policy's latest eviction ranked its candidates
// (spec/vectors.md#the-cut).
struct EvictionDetail {
  // Every candidate (kept, not protected), lowest rank first: score
  // ascending, then position ascending. With `block` above 1
  // (spec/blocks.md#the-cut), every candidate block, named by its first
  // position, with its block score.
  std::vector<RankedCandidate> ranked;
  // The first `victims` entries of `ranked` are the victims (blocks, with
  // `block` above 1).
  size_t victims = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;
  Policy(const Policy&) = delete;
  Policy& operator=(const Policy&) = delete;

  // Registry name of the policy, e.g. "streamingllm".
  virtual absl::string_view name() const = 0;

  // Carries out one step. Returns the victims, ascending (possibly empty).
  // Refusals (state unchanged): POSITION when `count` is 0, when `first` is
  // not above the last admitted position, or when the chunk runs past
  // 2^32 - 1; ATTENTION_LENGTH when the attention's length is not the number
  // of kept positions; ATTENTION_VALUE for a NaN, infinite or negative
  // (sign bit set) weight.
  absl::StatusOr<std::vector<Position>> Step(const StepInput& input);

  // As Step, and when a score-based policy evicts, fills `detail` with its
  // ranking (otherwise leaves `detail->ranked` empty). For vectors, audits
  // and mismatch reports; O(candidates log candidates) extra.
  absl::StatusOr<std::vector<Position>> Step(const StepInput& input,
                                             EvictionDetail* detail);

  // spec/heads.md#head-adaptive-budgets: Step() in three parts, for kept
  // sets that share one budget and evict by one joint ranking (the
  // harness's use only). AdmitStep validates, records and admits exactly
  // as Step() does, and evicts nothing; ScoreSlots gives the binary64 score
  // every kept slot ranks by now and the end of the candidate slots (false
  // for a policy that does not rank by score); EvictSlots removes the given
  // slots (ascending) and returns their positions.
  absl::Status AdmitStep(const StepInput& input);
  bool ScoreSlots(std::vector<double>& scores, size_t& candidate_end);
  std::vector<Position> EvictSlots(absl::Span<const size_t> slots);

  // Kept positions, ascending. The index of a position in this span is its
  // cache-relative position (spec/harness.md#cache-relative-positions).
  absl::Span<const Position> kept() const { return kept_; }

  // Number of steps carried out so far (refused steps do not count).
  int64_t steps_done() const { return steps_done_; }

  // Query heads this policy's kept set covers (spec/heads.md#kept-sets):
  // the attention of a step holds heads() rows. 1 unless built for a set.
  size_t heads() const { return heads_; }

  // spec/tensors.md#policies-that-read-keys: true for a policy whose every
  // step needs the keys of the positions it admits (StepInput::keys).
  virtual bool reads_keys() const { return false; }
  // The same for values (StepInput::values).
  virtual bool reads_values() const { return false; }
  // spec/tensors.md#checks, the scenario's shape, checks 5 and 6: the least
  // head_dim (value_dim) the policy's card names, when it reads keys
  // (values).
  virtual uint32_t least_head_dim() const { return 1; }
  virtual uint32_t least_value_dim() const { return 1; }

  // Bytes of state the policy holds now: the kept positions plus the
  // policy's own per-slot state, each computed from its containers' sizes.
  size_t MemoryBytes() const {
    return kept_.size() * sizeof(Position) + PolicyStateBytes();
  }

  // spec/spans.md#the-log: with `spans` 1, the latest step's spans (one per
  // query, ascending; each as `first, last` pairs) and its held set as runs
  // with position ids; empty otherwise.
  const std::vector<std::vector<Position>>& step_spans() const {
    return step_spans_;
  }
  const std::vector<HeldRun>& step_held() const { return step_held_; }
  // spec/spans.md: called by the factories of the policies taking the span
  // parameters, before the first step: the rule, and the number of sinks
  // (the first `sinks` positions admitted are in every span).
  void SetSpanRule(const SpanRule& rule, size_t sinks = 0) {
    span_rule_ = rule;
    span_sinks_ = sinks;
  }
  // spec/triggers.md: called by the factories of the policies that take
  // `slack` and `interval`, before the first step. Without it every step
  // fires.
  void SetTrigger(const Trigger& trigger) { trigger_ = trigger; }
  // spec/blocks.md: called by the factories of the policies that take
  // `block`, before the first step. Without it a block is one position.
  void SetBlocks(const Blocks& blocks) { blocks_ = blocks; }
  const Blocks& blocks() const { return blocks_; }

 protected:
  // `heads`: query heads the policy's one kept set covers, at least 1.
  explicit Policy(size_t heads = 1) : heads_(heads) {}

  // Hooks, called by Step() after validation, in this order.
  // Record: the attention of this step, one weight per kept slot and head
  // (heads() rows, head-major). Not called for null attention.
  virtual void Record(absl::Span<const float> attention) = 0;
  // Admit: `position` was just appended to kept(); set up its slot state.
  virtual void Admit(Position position) = 0;
  // ChooseVictims: slot indices (into kept()) to evict now, ascending. Called
  // once per step, after every admission.
  virtual std::vector<size_t> ChooseVictims() = 0;
  // Forget: drop the state of these slots (ascending indices); kept() still
  // holds them and loses them right after this call.
  virtual void Forget(absl::Span<const size_t> slots) = 0;
  // ChooseVictimsBeforeAdmission: slot indices (ascending) to evict before
  // this step admits its `count` positions (spec/spans.md#when-room-is-made,
  // `evict_at` 1 or 2). Called once per step, after Record. Default: none.
  virtual std::vector<size_t> ChooseVictimsBeforeAdmission(uint32_t /*count*/) {
    return {};
  }

  // RecordQueries: a prefill step's query rows, after every admission and
  // before ChooseVictims (spec/prefill.md#the-prefill-step). Policies that
  // do not read attention ignore them.
  virtual void RecordQueries(const QueryRows& /*queries*/) {}
  // RecordKeys: the keys of the step's admitted positions
  // (spec/tensors.md#what-a-policy-sees), after every admission and before
  // RecordQueries: `key_heads` KV heads' keys one after the other, each
  // `count` x `head_dim` values; the admitted positions are the last
  // `count` kept slots. Called only for a policy that reads_keys().
  virtual void RecordKeys(absl::Span<const float> /*keys*/, size_t /*key_heads*/,
                          size_t /*head_dim*/, size_t /*count*/) {}
  // RecordValues: the values of the step's admitted positions, as
  // RecordKeys with value_dim, right after it. Called only for a policy
  // that reads_values().
  virtual void RecordValues(absl::Span<const float> /*values*/,
                            size_t /*value_heads*/, size_t /*value_dim*/,
                            size_t /*count*/) {}
  // True while the step being carried out is a prefill step (it has query
  // rows): read by ChooseVictims and the score hooks.
  bool prefill_step() const { return prefill_step_; }
  // Bytes of per-slot state beyond the kept positions.
  virtual size_t PolicyStateBytes() const = 0;
  // Score-based policies only: called right after ChooseVictims (before
  // Forget), the score each kept slot was ranked by, and the end of the
  // candidate slots [0, candidate_end). Returns false for policies that rank
  // by position or not at all.
  virtual bool RankingScores(std::vector<double>& /*scores*/,
                             size_t& /*candidate_end*/) const {
    return false;
  }
  // Score-based policies only: computes, now, the score every kept slot
  // ranks by (as ChooseVictims would at an eviction), whatever the budget.
  virtual bool CurrentScores(std::vector<double>& /*scores*/,
                             size_t& /*candidate_end*/) {
    return false;
  }
  // Score-based policies only: the first candidate slot of the scores
  // above ([begin, candidate_end)); 0 but for a card with a start area that
  // is never scored (spec/policies/openvino.md).
  virtual size_t CandidateBegin() const { return 0; }

 private:
  absl::Status Validate(const StepInput& input) const;
  // Steps 1 and 2 of spec/harness.md#the-decode-step, after validation.
  void RecordAndAdmit(const StepInput& input);
  // Step 2 alone; `kept_after` is the kept count after admission as the
  // query rows were gathered (before any eviction before admission).
  void AdmitPositions(const StepInput& input, size_t kept_after);
  // spec/spans.md#the-log: fills step_spans_ and step_held_ from kept_ right
  // after the step's admissions.
  void RecordSpans(const StepInput& input);

  SpanRule span_rule_;
  size_t span_sinks_ = 0;
  Trigger trigger_;
  Blocks blocks_;
  // Positions admitted so far (for the sinks), and the highest sink.
  uint64_t admitted_count_ = 0;
  std::optional<Position> last_sink_;
  std::vector<std::vector<Position>> step_spans_;
  std::vector<HeldRun> step_held_;

  const size_t heads_;
  std::vector<Position> kept_;
  // Highest position admitted so far, if any.
  std::optional<Position> last_admitted_;
  int64_t steps_done_ = 0;
  bool prefill_step_ = false;
};

// Checks attention weights against spec/harness.md#attention-weights: each is
// finite and its sign bit is clear. `step` and `position_of(i)` name the
// offending weight in the message; `field` is the wire field that holds the
// weights ("attention", "heads", "queries"), the refusal's subject
// (spec/harness.md#subjects). Refusal: ATTENTION_VALUE.
template <typename PositionOf>
absl::Status CheckWeights(absl::Span<const float> weights, int64_t step,
                          PositionOf position_of, const char* field);

// Removes the elements at `slots` (ascending indices) from `values`,
// keeping the order of the rest: each run of survivors between two removed
// slots moves down in one block. O(values.size()).
template <typename T>
void EraseSlots(std::vector<T>& values, absl::Span<const size_t> slots) {
  if (slots.empty()) return;
  const auto at = [&](size_t index) {
    return values.begin() + static_cast<ptrdiff_t>(index);
  };
  auto write = at(slots[0]);
  for (size_t k = 0; k < slots.size(); ++k) {
    const size_t run_end = k + 1 < slots.size() ? slots[k + 1] : values.size();
    write = std::move(at(slots[k] + 1), at(run_end), write);
  }
  values.erase(write, values.end());
}

// The same for per-slot vectors stored one after the other, `width`
// elements a slot (a policy's kept keys or unit keys): removes the vectors
// of `slots` (ascending), keeping the order of the rest.
template <typename T>
void EraseSlotVectors(std::vector<T>& values, size_t width,
                      absl::Span<const size_t> slots) {
  std::vector<T> kept;
  kept.reserve(values.size());
  size_t next = 0;
  for (size_t slot = 0; slot * width < values.size(); ++slot) {
    if (next < slots.size() && slots[next] == slot) {
      ++next;
      continue;
    }
    kept.insert(kept.end(), values.begin() + static_cast<ptrdiff_t>(slot * width),
                values.begin() + static_cast<ptrdiff_t>((slot + 1) * width));
  }
  values = std::move(kept);
}

// Implementation details below.
absl::Status WeightError(float weight, int64_t step, size_t index,
                         Position position, const char* field);

// True when every weight is finite with its sign bit clear: one pass over
// the bits, so the common case costs no more than reading the weights.
bool AllWeightsValid(absl::Span<const float> weights);
// spec/prefill.md#their-checks: a column total is finite with its sign bit
// clear (binary64).
bool TotalValid(double total);

template <typename PositionOf>
absl::Status CheckWeights(absl::Span<const float> weights, int64_t step,
                          PositionOf position_of, const char* field) {
  if (AllWeightsValid(weights)) return absl::OkStatus();
  // Some weight is bad: find the first and say what is wrong with it.
  for (size_t i = 0; i < weights.size(); ++i) {
    absl::Status status =
        WeightError(weights[i], step, i, position_of(i), field);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace kvspec

#endif  // KVSPEC_CC_POLICY_H_
