#include "cc/policy.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/errors.h"
#include "cc/text.h"

namespace kvspec {

bool AllWeightsValid(absl::Span<const float> weights) {
  // spec/harness.md#attention-weights: finite with the sign bit clear. As
  // unsigned integers, exactly those bit patterns lie below +infinity's
  // (0x7f800000): negative values and -0.0 have the top bit set, and
  // infinities and NaNs have every exponent bit set.
  size_t invalid = 0;
  for (float weight : weights) {
    uint32_t bits;
    std::memcpy(&bits, &weight, sizeof(bits));
    invalid += bits >= 0x7f800000u;
  }
  return invalid == 0;
}

bool TotalValid(double total) {
  // As for weights: below +infinity's bit pattern as an unsigned integer.
  uint64_t bits;
  std::memcpy(&bits, &total, sizeof(bits));
  return bits < 0x7ff0000000000000u;
}

absl::Status WeightError(float weight, int64_t step, size_t index,
                         Position position, const char* field) {
  const char* problem = nullptr;
  if (std::isnan(weight)) {
    problem = "is NaN";
  } else if (std::isinf(weight)) {
    problem = "is infinite";
  } else if (std::signbit(weight)) {
    problem = "is negative (sign bit set)";
  }
  if (problem == nullptr) return absl::OkStatus();
  return Refuse(ErrorCategory::kAttentionValue, {"value", {field}},
                absl::StrFormat("step %d: attention weight %d (position %d) "
                                "%s: %s; weights must be finite and >= +0.0",
                                step, index, position, problem,
                                FloatText(weight)));
}

absl::Status Policy::Validate(const StepInput& input) const {
  if (input.count == 0) {
    return Refuse(ErrorCategory::kPosition, absl::StatusCode::kInvalidArgument,
                  {"range", {"admit"}},
                  absl::StrFormat("step %d: a step must admit at least one "
                                  "position, got count 0",
                                  steps_done_));
  }
  if (last_admitted_.has_value() && input.first <= *last_admitted_) {
    return Refuse(ErrorCategory::kPosition, {"rule", {"admit"}},
                  absl::StrFormat("step %d: position %d is not above the last "
                                  "admitted position %d",
                                  steps_done_, input.first, *last_admitted_));
  }
  const uint64_t last = uint64_t{input.first} + input.count - 1;
  if (last > std::numeric_limits<Position>::max()) {
    return Refuse(ErrorCategory::kPosition, absl::StatusCode::kOutOfRange,
                  {"rule", {"admit"}},
                  absl::StrFormat("step %d: positions %d..%d run past the "
                                  "largest position 2^32 - 1",
                                  steps_done_, input.first, last));
  }
  if (input.attention.has_value()) {
    const absl::Span<const float> weights = *input.attention;
    if (weights.size() != heads_ * kept_.size()) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {"attention"}},
                    absl::StrFormat("step %d: attention has %d weights but %d "
                                    "positions are kept; it needs one per "
                                    "kept position%s",
                                    steps_done_, weights.size(), kept_.size(),
                                    heads_ == 1 ? ""
                                                : absl::StrFormat(
                                                      " and head (%d heads)",
                                                      heads_)));
    }
    KVSPEC_RETURN_IF_ERROR(
        CheckWeights(weights, steps_done_,
                     [this](size_t i) { return kept_[i % kept_.size()]; },
                     "attention"));
  }
  if (input.queries.has_value()) {
    // spec/prefill.md#checks, for a direct call: no row beside the query
    // rows, 1 <= m <= count, every row's length, then the weights.
    const size_t kept_after = kept_.size() + input.count;
    const QueryRows rows{*input.queries, input.query_rows, kept_after};
    if (input.attention.has_value() || input.query_rows == 0 ||
        input.query_rows > input.count ||
        input.queries->size() != heads_ * rows.PerHead()) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {"queries"}},
                    absl::StrFormat("step %d: query rows must be 1..%d rows "
                                    "per head (the step admits %d), with no "
                                    "attention row beside them, holding %d "
                                    "weights per head; got %d rows, %d "
                                    "weights%s",
                                    steps_done_, input.count, input.count,
                                    input.query_rows == 0 ? 0 : rows.PerHead(),
                                    input.query_rows, input.queries->size(),
                                    input.attention.has_value()
                                        ? " and an attention row"
                                        : ""));
    }
    KVSPEC_RETURN_IF_ERROR(CheckWeights(*input.queries, steps_done_,
                                        [](size_t i) { return Position(i); },
                                        "queries"));
  }
  if (input.totals.has_value() || input.total_rows != 0) {
    // spec/prefill.md#their-checks, for a direct call: beside query rows,
    // 1 <= total_rows <= count, one total per kept slot and head after
    // admission; then each total.
    const size_t kept_after = kept_.size() + input.count;
    if (!input.queries.has_value() || !input.totals.has_value() ||
        input.total_rows == 0 || input.total_rows > input.count ||
        input.totals->size() != heads_ * kept_after) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {"totals"}},
                    absl::StrFormat("step %d: column totals need query rows "
                                    "beside them, total_rows 1..%d and %d "
                                    "values; got total_rows %d, %d values",
                                    steps_done_, input.count,
                                    heads_ * kept_after, input.total_rows,
                                    input.totals.has_value()
                                        ? input.totals->size()
                                        : 0));
    }
    for (size_t i = 0; i < input.totals->size(); ++i) {
      if (TotalValid((*input.totals)[i])) continue;
      return Refuse(ErrorCategory::kAttentionValue, {"value", {"totals"}},
                    absl::StrFormat("step %d: column total %d is %s; totals "
                                    "must be finite and >= +0.0",
                                    steps_done_, i,
                                    FloatText((*input.totals)[i])));
    }
  }
  // spec/tensors.md#checks, for a direct call: the keys (values) of every
  // admitted position, key_heads x count x head_dim (value_dim) entries,
  // each finite, for a policy that reads them; head_dim (value_dim) at
  // least the card's least.
  const struct {
    bool reads;
    const char* field;      // "keys", "values"
    const char* noun;       // "key", "value"
    const char* dim_name;   // "head_dim", "value_dim"
    const std::optional<absl::Span<const float>>& entries;
    uint32_t dim;
    uint32_t least;
  } tensors[] = {{reads_keys(), "keys", "key", "head_dim", input.keys,
                  input.head_dim, least_head_dim()},
                 {reads_values(), "values", "value", "value_dim",
                  input.values, input.value_dim, least_value_dim()}};
  for (const auto& tensor : tensors) {
    if (!tensor.reads) continue;
    if (!tensor.entries.has_value() || input.key_heads == 0 ||
        tensor.dim == 0 ||
        tensor.entries->size() !=
            size_t{input.key_heads} * input.count * tensor.dim) {
      return Refuse(ErrorCategory::kAttentionLength, {"length", {tensor.field}},
                    absl::StrFormat("step %d: %s reads %s: the step needs "
                                    "key_heads x count x %s values "
                                    "(%d x %d x %d), got %d",
                                    steps_done_, name(), tensor.field,
                                    tensor.dim_name, input.key_heads,
                                    input.count, tensor.dim,
                                    tensor.entries.has_value()
                                        ? tensor.entries->size()
                                        : 0));
    }
    if (tensor.dim < tensor.least) {
      return Refuse(ErrorCategory::kInvalidHeads, {"range", {tensor.dim_name}},
                    absl::StrFormat("step %d: %s needs %s of at least %d, "
                                    "got %d",
                                    steps_done_, name(), tensor.dim_name,
                                    tensor.least, tensor.dim));
    }
    for (size_t i = 0; i < tensor.entries->size(); ++i) {
      if (std::isfinite((*tensor.entries)[i])) continue;
      return Refuse(ErrorCategory::kAttentionValue, {"value", {tensor.field}},
                    absl::StrFormat("step %d: %s entry %d is %s; %s entries "
                                    "must be finite",
                                    steps_done_, tensor.noun, i,
                                    FloatText((*tensor.entries)[i]),
                                    tensor.noun));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Position>> Policy::Step(const StepInput& input) {
  return Step(input, nullptr);
}

void Policy::RecordAndAdmit(const StepInput& input) {
  if (input.attention.has_value()) Record(*input.attention);
  AdmitPositions(input, kept_.size() + input.count);
}

void Policy::AdmitPositions(const StepInput& input, size_t kept_after) {
  for (uint32_t i = 0; i < input.count; ++i) {
    const Position position = input.first + i;
    kept_.push_back(position);
    Admit(position);
    if (admitted_count_ < span_sinks_) last_sink_ = position;
    ++admitted_count_;
  }
  last_admitted_ = input.first + (input.count - 1);
  // spec/tensors.md#what-a-policy-sees: the admitted positions' keys.
  if (reads_keys()) {
    RecordKeys(*input.keys, input.key_heads, input.head_dim, input.count);
  }
  if (reads_values()) {
    RecordValues(*input.values, input.key_heads, input.value_dim, input.count);
  }
  // spec/prefill.md#the-prefill-step: the query rows, after admission.
  prefill_step_ = input.queries.has_value();
  if (prefill_step_) {
    QueryRows rows{*input.queries, input.query_rows, kept_after};
    if (input.totals.has_value()) {
      rows.totals = *input.totals;
      rows.total_rows = input.total_rows;
    }
    RecordQueries(rows);
  }
}

void Policy::RecordSpans(const StepInput& input) {
  // spec/spans.md#the-log: the held set is kept_ now, after admission and
  // before any eviction after it.
  step_held_ = HeldRunsOf(kept_, span_rule_.cache_relative_ids);
  step_spans_.clear();
  for (uint32_t i = 0; i < input.count; ++i) {
    step_spans_.push_back(
        SpanOf(span_rule_, kept_, input.first + i, last_sink_));
  }
}

absl::Status Policy::AdmitStep(const StepInput& input) {
  KVSPEC_RETURN_IF_ERROR(Validate(input));
  RecordAndAdmit(input);
  ++steps_done_;
  return absl::OkStatus();
}

bool Policy::ScoreSlots(std::vector<double>& scores, size_t& candidate_end) {
  return CurrentScores(scores, candidate_end);
}

std::vector<Position> Policy::EvictSlots(absl::Span<const size_t> slots) {
  std::vector<Position> victims;
  victims.reserve(slots.size());
  for (size_t slot : slots) victims.push_back(kept_[slot]);
  Forget(slots);
  EraseSlots(kept_, slots);
  return victims;
}

absl::StatusOr<std::vector<Position>> Policy::Step(const StepInput& input,
                                                   EvictionDetail* detail) {
  KVSPEC_RETURN_IF_ERROR(Validate(input));
  // spec/harness.md#the-decode-step: 1. record, 2. admit, 3. evict (if the
  // step fires, spec/triggers.md#firing); with
  // `evict_at` 1 or 2 (spec/spans.md#when-room-is-made) the eviction comes
  // between 1 and 2.
  if (input.attention.has_value()) Record(*input.attention);
  const size_t kept_after = kept_.size() + input.count;
  std::vector<Position> victims_before;
  const std::vector<size_t> before = ChooseVictimsBeforeAdmission(input.count);
  if (!before.empty()) {
    for (size_t slot : before) victims_before.push_back(kept_[slot]);
    Forget(before);
    EraseSlots(kept_, before);
  }
  AdmitPositions(input, kept_after);
  if (span_rule_.log) RecordSpans(input);
  // spec/triggers.md#firing: a step that does not fire evicts nothing.
  const std::vector<size_t> slots =
      trigger_.Fires(prefill_step_, input.count, kept_.size())
          ? ChooseVictims()
          : std::vector<size_t>{};
  if (detail != nullptr) {
    detail->ranked.clear();
    detail->victims = slots.size() / blocks_.size;
    std::vector<double> scores;
    size_t candidate_end = 0;
    if (!slots.empty() && RankingScores(scores, candidate_end)) {
      if (blocks_.whole()) {
        // spec/blocks.md#the-cut: candidate blocks by first position.
        const auto [first, end] =
            blocks_.CandidateBlocks(CandidateBegin(), candidate_end);
        for (size_t block = first; block < end; ++block) {
          detail->ranked.push_back(
              {kept_[block * blocks_.size],
               blocks_.ScoreOf(absl::MakeConstSpan(scores), block)});
        }
      } else {
        for (size_t slot = CandidateBegin(); slot < candidate_end; ++slot) {
          detail->ranked.push_back({kept_[slot], scores[slot]});
        }
      }
      // spec/harness.md#victims: score ascending, then position ascending.
      std::sort(detail->ranked.begin(), detail->ranked.end(),
                [](const RankedCandidate& a, const RankedCandidate& b) {
                  if (a.score != b.score) return a.score < b.score;
                  return a.position < b.position;
                });
    }
  }
  std::vector<Position> victims = std::move(victims_before);
  victims.reserve(victims.size() + slots.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    // Invariant (spec/harness.md#victims): victim slots are strictly
    // ascending, so the victims are ascending positions.
    assert(slots[k] < kept_.size());
    assert(k == 0 || slots[k - 1] < slots[k]);
    victims.push_back(kept_[slots[k]]);
  }
  Forget(slots);
  EraseSlots(kept_, slots);
  ++steps_done_;
  // spec/harness.md#eviction-log: ascending. Victims before admission were
  // kept before the step, so they are below the step's own positions; both
  // lists are ascending, and a policy evicts at one moment only.
  std::sort(victims.begin(), victims.end());
  return victims;
}

}  // namespace kvspec
