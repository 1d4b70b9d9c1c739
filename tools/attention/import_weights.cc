// The attention importer's weights (import_internal.h): every weight the
// scenario carries is checked (spec/harness.md#attention-weights) with the
// causal zeros and column totals, then copied bit for bit from the mapped
// file into the scenario's rows.
#include "tools/attention/import_internal.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "cc/errors.h"
#include "cc/text.h"
#include "google/protobuf/repeated_field.h"
#include "spec/kvspec.pb.h"

namespace kvspec {
namespace import_attention {
namespace {

// How a refusal names one weight: "head 2, row 5, column 7" in a .npy
// matrix, "tensor layer.3, head 2, row 5, column 7" in a .safetensors
// matrix, "tensor step.5, head 2, column 7" for step rows, "tensor
// window.3, head 2, row 5 (window row 1), column 7" in a window. A row is a
// query position.
std::string WeightName(const Layout& layout, uint32_t head, uint32_t q,
                       uint64_t k) {
  if (layout.kind == Kind::kStepRows) {
    return absl::StrFormat("tensor step.%d, head %d, column %d", q, head, k);
  }
  const std::string tensor =
      layout.tensor.empty() ? "" : absl::StrCat("tensor ", layout.tensor, ", ");
  return absl::StrFormat("%shead %d, row %d, column %d", tensor, head, q, k);
}

// "tensor window.3, head 2, row 5 (window row 1), column 7", "tensor
// chunk.3.8, head 2, row 6 (chunk row 1), column 7".
std::string ChunkWeightName(const Layout& layout, const ChunkRows& chunk,
                            uint32_t head, uint64_t q, uint64_t k) {
  return absl::StrFormat("tensor %s, head %d, row %d (%s row %d), column %d",
                         chunk.tensor, head, q,
                         layout.kind == Kind::kWindow ? "window" : "chunk",
                         q - chunk.first_query(), k);
}

// Why `weight` may not be carried by a scenario (spec/harness.md#attention-
// weights), or nullopt if it is accepted.
std::optional<std::string> WeightProblem(float weight) {
  const uint32_t bits = BitsOf(weight);
  const bool sign = (bits >> 31) != 0;
  const uint32_t exponent = (bits >> 23) & 0xFF;
  const uint32_t mantissa = bits & 0x7FFFFF;
  if (exponent == 0xFF && mantissa != 0) return std::string("NaN");
  if (exponent == 0xFF) {
    return std::string(sign ? "-inf" : "+inf") + " (weights must be finite)";
  }
  if (bits == 0x80000000u) {
    return std::string(
        "-0.0 (weights must have the sign bit clear, "
        "spec/harness.md#attention-weights)");
  }
  if (sign) {
    return "negative weight " + ShortestDecimal(weight) +
           " (weights must have the sign bit clear)";
  }
  return std::nullopt;
}

// Bits below this are exactly the accepted weights: sign clear, exponent
// not all ones (+0.0, subnormals, positive normals).
constexpr uint32_t kFirstRefusedBits = 0x7F800000u;

// Copies `n` float32 weights stored little-endian at `start` into `row`.
void CopyRow(absl::string_view bytes, uint64_t start, uint64_t n,
             v1::AttentionRow* row) {
  if (n == 0) return;
  google::protobuf::RepeatedField<float>* weights = row->mutable_weights();
  weights->Reserve(static_cast<int>(n));
  float* out = weights->AddNAlreadyReserved(static_cast<int>(n));
  const char* in = bytes.data() + start;
  if constexpr (kLittleEndianHost) {
    std::memcpy(out, in, 4 * n);
  } else {
    for (uint64_t k = 0; k < n; ++k) out[k] = FloatOfBits(BitsAt(in + 4 * k));
  }
}

}  // namespace

absl::Status CheckWeights(absl::string_view bytes, const Layout& layout,
                          const std::vector<bool>& selected) {
  for (uint32_t h = 0; h < layout.heads; ++h) {
    for (uint32_t q = 0; q < layout.length; ++q) {
      const char* row = bytes.data() + layout.row(h, q);
      const uint64_t keys = layout.row_keys(q);
      if (selected[h]) {
        for (uint64_t k = 0; k < q; ++k) {
          const uint32_t bits = BitsAt(row + 4 * k);
          if (bits < kFirstRefusedBits) continue;
          if (std::optional<std::string> problem =
                  WeightProblem(FloatOfBits(bits))) {
            return Invalid(absl::StrCat(WeightName(layout, h, q, k), ": ",
                                        *problem));
          }
        }
      }
      for (uint64_t k = uint64_t{q} + 1; k < keys; ++k) {
        const uint32_t bits = BitsAt(row + 4 * k);
        if ((bits & 0x7FFFFFFFu) != 0) {  // +0.0 and -0.0 are both zero
          return Invalid(absl::StrFormat(
              "%s: weight %s above the diagonal (rows must be causal)",
              WeightName(layout, h, q, k),
              ShortestDecimal(FloatOfBits(bits))));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckChunkWeights(absl::string_view bytes, const Layout& layout,
                               const Plan& plan,
                               const std::vector<bool>& selected) {
  for (size_t c = 0; c < layout.chunks.size(); ++c) {
    const ChunkRows& chunk = layout.chunks[c];
    const PrefillShape& step = plan.prefill[c];
    // The prefill rows, then (the last chunk) the decode rows: to the end
    // of the tensor.
    const uint64_t first = step.end - step.query_rows;
    const uint64_t stop = c + 1 == layout.chunks.size() ? chunk.end : step.end;
    for (uint32_t h = 0; h < layout.heads; ++h) {
      if (!selected[h]) continue;
      for (uint64_t q = first; q < stop; ++q) {
        const char* row = bytes.data() + chunk.row(h, q);
        // A prefill row carries 0..q, a decode row 0..q-1.
        const uint64_t carried = q < step.end ? q + 1 : q;
        for (uint64_t k = 0; k < carried; ++k) {
          const uint32_t bits = BitsAt(row + 4 * k);
          if (bits < kFirstRefusedBits) continue;
          if (std::optional<std::string> problem =
                  WeightProblem(FloatOfBits(bits))) {
            return Invalid(absl::StrCat(
                ChunkWeightName(layout, chunk, h, q, k), ": ", *problem));
          }
        }
        for (uint64_t k = q + 1; k < chunk.end; ++k) {
          const uint32_t bits = BitsAt(row + 4 * k);
          if (bits != 0) {
            return Invalid(absl::StrFormat(
                "%s: weight %s (bits 0x%08x) above the diagonal, where a "
                "causal row has exactly +0.0: the file is not causal",
                ChunkWeightName(layout, chunk, h, q, k),
                ShortestDecimal(FloatOfBits(bits)), bits));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTotals(absl::string_view bytes, const Layout& layout,
                         const Plan& plan) {
  for (const PrefillShape& shape : plan.prefill) {
    if (shape.total_rows == 0) continue;
    for (uint32_t h : plan.heads) {
      for (uint64_t p = 0; p < shape.end; ++p) {
        const uint64_t offset = layout.totals_data + (uint64_t{h} * shape.end + p) * 8;
        const uint64_t bits = LittleEndian(bytes, offset, 8);
        if (bits < 0x7ff0000000000000u) continue;
        return Invalid(absl::StrFormat(
            "tensor %s, head %d, position %d: total %s (bits 0x%016x); "
            "totals must be finite and >= +0.0",
            layout.totals_tensor, h, p, FloatText(DoubleAt(bytes, offset)),
            bits));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// spec/tensors.md#checks: every float of `tensor` (keys.<n> or values.<n>,
// `what` naming one of them) the scenario carries is finite: its KV heads
// `heads` in the scenario's order, positions 0 .. length - 1, channels in
// order; the first that is not is named.
absl::Status CheckVectors(absl::string_view bytes,
                          const HeadVectorsTensor& tensor, uint64_t length,
                          const std::vector<uint64_t>& heads,
                          const char* what) {
  if (tensor.tensor.empty()) return absl::OkStatus();
  for (const uint64_t g : heads) {
    for (uint64_t p = 0; p < length; ++p) {
      const char* vector = bytes.data() + tensor.at(g, length, p);
      for (uint64_t c = 0; c < tensor.dim; ++c) {
        const uint32_t bits = BitsAt(vector + c * 4);
        if ((bits & 0x7f800000u) != 0x7f800000u) continue;
        return Invalid(absl::StrFormat(
            "tensor %s, KV head %d, position %d, channel %d: %s %s (bits "
            "0x%08x); %ss must be finite (spec/tensors.md#checks)",
            tensor.tensor, g, p, c, what, ShortestDecimal(FloatOfBits(bits)),
            bits, what));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckKeysAndValues(absl::string_view bytes, const Layout& layout,
                                const Plan& plan) {
  KVSPEC_RETURN_IF_ERROR(
      CheckVectors(bytes, layout.keys, plan.length, plan.key_heads, "key"));
  return CheckVectors(bytes, layout.values, plan.length, plan.key_heads,
                      "value");
}

namespace {

// spec/tensors.md#the-fields: the vectors of `tensor` (keys.<n> or
// values.<n>) of positions first .. first + admit - 1, one HeadVectors per
// KV head of the scenario (`heads`, KV head 0 first) added to `out`,
// position-major, bit for bit.
void CopyVectors(absl::string_view bytes, const HeadVectorsTensor& tensor,
                 uint64_t length, const std::vector<uint64_t>& heads,
                 uint64_t first, uint64_t admit,
                 google::protobuf::RepeatedPtrField<v1::HeadVectors>* out) {
  const uint64_t floats = admit * tensor.dim;
  for (const uint64_t g : heads) {
    google::protobuf::RepeatedField<float>* values =
        out->Add()->mutable_values();
    values->Resize(static_cast<int>(floats), 0.0f);
    const char* from = bytes.data() + tensor.at(g, length, first);
    for (uint64_t i = 0; i < floats; ++i) {
      values->Set(static_cast<int>(i), FloatOfBits(BitsAt(from + i * 4)));
    }
  }
}

// The keys (with ImportOptions::keys) and values (::values) of positions
// first .. first + admit - 1, on `step`.
void CopyKeysAndValues(absl::string_view bytes, const Layout& layout,
                       const Plan& plan, uint64_t first, uint64_t admit,
                       v1::Step* step) {
  if (plan.head_dim > 0) {
    CopyVectors(bytes, layout.keys, plan.length, plan.key_heads, first, admit,
                step->mutable_keys());
  }
  if (plan.value_dim > 0) {
    CopyVectors(bytes, layout.values, plan.length, plan.key_heads, first,
                admit, step->mutable_values());
  }
}

}  // namespace

v1::Scenario BuildScenario(absl::string_view bytes, const Layout& layout,
                           const Plan& plan) {
  v1::Scenario scenario;
  scenario.set_id(plan.id);
  scenario.set_query_heads(static_cast<uint32_t>(plan.heads.size()));
  scenario.set_kv_heads(plan.kv_heads);
  if (plan.head_dim > 0) scenario.set_head_dim(plan.head_dim);
  if (plan.value_dim > 0) scenario.set_value_dim(plan.value_dim);
  const uint64_t steps =
      plan.prefill.size() + plan.length - plan.first_decode;
  scenario.mutable_steps()->Reserve(static_cast<int>(steps));
  for (size_t c = 0; c < plan.prefill.size(); ++c) {
    // spec/prefill.md#query-rows: head 0's rows first, each head's in
    // ascending query position; q + 1 weights, the diagonal last.
    const PrefillShape& shape = plan.prefill[c];
    const ChunkRows& chunk = layout.chunks[c];
    v1::Step* step = scenario.add_steps();
    step->set_admit(static_cast<uint32_t>(shape.admit));
    step->mutable_queries()->Reserve(
        static_cast<int>(plan.heads.size() * shape.query_rows));
    for (uint32_t h : plan.heads) {
      for (uint64_t q = shape.end - shape.query_rows; q < shape.end; ++q) {
        CopyRow(bytes, chunk.row(h, q), q + 1, step->add_queries());
      }
    }
    if (shape.total_rows > 0) {
      // spec/prefill.md#column-totals: one ColumnTotals per head, head 0
      // first, the positions 0 .. end - 1 ascending, bit for bit.
      for (uint32_t h : plan.heads) {
        google::protobuf::RepeatedField<double>* sums =
            step->add_totals()->mutable_sums();
        sums->Resize(static_cast<int>(shape.end), 0.0);
        for (uint64_t p = 0; p < shape.end; ++p) {
          sums->Set(static_cast<int>(p),
                    DoubleAt(bytes, layout.totals_data +
                                        (uint64_t{h} * shape.end + p) * 8));
        }
      }
      step->set_total_rows(static_cast<uint32_t>(shape.total_rows));
    }
    CopyKeysAndValues(bytes, layout, plan, shape.end - shape.admit,
                      shape.admit, step);
  }
  for (uint64_t q = plan.first_decode; q < plan.length; ++q) {
    v1::Step* step = scenario.add_steps();
    step->set_admit(1);
    if (plan.heads.size() > 1) {
      step->mutable_heads()->Reserve(static_cast<int>(plan.heads.size()));
    }
    for (uint32_t h : plan.heads) {
      // spec/heads.md#rows-per-head: one head's row is `attention`, several
      // heads' rows are `heads`, head 0 first.
      v1::AttentionRow* row = plan.heads.size() == 1
                                  ? step->mutable_attention()
                                  : step->add_heads();
      CopyRow(bytes,
              layout.chunks.empty() ? layout.row(h, static_cast<uint32_t>(q))
                                    : layout.chunks.back().row(h, q),
              q, row);
    }
    CopyKeysAndValues(bytes, layout, plan, q, 1, step);
  }
  return scenario;
}

}  // namespace import_attention
}  // namespace kvspec
