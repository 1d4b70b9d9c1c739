// The attention importer's sizes and limits (import_internal.h): the
// scenario's exact serialized size from its shape alone (WireBytes, and
// ScenarioWireBytes in import_attention_lib.h), what an import needs
// (MeasurePlan) and the refusals over kMaxScenarioBytes or the memory
// available (CheckLimits), all before anything is allocated.
//
// Sizes. Every message and packed field of a scenario is tag (1 byte: every
// field number is below 16) + length varint + payload (spec/kvspec.proto):
//
//   AttentionRow of n weights   row(n) = n ? 1 + varint(4n) + 4n : 0
//   Step                        admit: 1 + varint(admit); each row in
//                               attention, heads or queries: field(row(n))
//   Scenario                    id: field(len) if not empty; each step:
//                               field(step); query_heads, kv_heads:
//                               1 + varint(value)
//   keys (head_dim d > 0)       Scenario: head_dim 1 + varint(d); Step:
//                               per KV head field(row(admit x d)), a
//                               HeadVectors's packed values as a row's
//   values (value_dim e > 0)    the same with e: value_dim 1 + varint(e);
//                               per KV head field(row(admit x e))
//
// with field(x) = 1 + varint(x) + x.
#include "tools/attention/import_internal.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/files/files.h"

namespace kvspec {
namespace import_attention {
namespace {

uint64_t VarintBytes(uint64_t value) {
  uint64_t bytes = 1;
  while (value >= 128) {
    value >>= 7;
    ++bytes;
  }
  return bytes;
}

uint64_t FieldBytes(uint64_t payload) {
  return 1 + VarintBytes(payload) + payload;
}

uint64_t RowBytes(uint64_t weights) {
  return weights == 0 ? 0 : 1 + VarintBytes(4 * weights) + 4 * weights;
}

// The sum of f(x) for x in [lo, hi), where key(x) is nondecreasing in x
// (every component monotone) and f is affine in x wherever key(x) stays the
// same. Each run of equal keys is found by binary search and summed in
// closed form, so the cost is the number of runs times log(hi - lo).
template <typename F, typename K>
absl::uint128 SumPiecewise(uint64_t lo, uint64_t hi, F f, K key) {
  absl::uint128 total = 0;
  while (lo < hi) {
    const uint64_t k = key(lo);
    uint64_t last = lo, bound = hi - 1;
    while (last < bound) {
      const uint64_t mid = last + (bound - last + 1) / 2;
      if (key(mid) == k) {
        last = mid;
      } else {
        bound = mid - 1;
      }
    }
    const uint64_t n = last - lo + 1;
    const uint64_t first = f(lo);
    total += absl::uint128(first) * n;
    if (n > 1) {
      const uint64_t slope = f(lo + 1) - first;
      total += absl::uint128(slope) * (absl::uint128(n) * (n - 1) / 2);
    }
    lo = last + 1;
  }
  return total;
}

// The sum of q for q in [lo, hi).
absl::uint128 SumRange(uint64_t lo, uint64_t hi) {
  if (hi <= lo) return 0;
  return (absl::uint128(lo) + hi - 1) * (hi - lo) / 2;
}

// The input bytes the checks and the copy read.
absl::uint128 InputBytes(const Layout& layout, const Plan& plan) {
  const absl::uint128 L = layout.length;
  switch (layout.kind) {
    case Kind::kMatrix:  // every head, above the diagonal too
      return absl::uint128(layout.heads) * L * L * 4;
    case Kind::kStepRows:
      return absl::uint128(layout.heads) * SumRange(1, layout.length + 1) * 4;
    case Kind::kWindow:  // the used rows of the selected heads
    case Kind::kChunks: {
      absl::uint128 rows_by_keys = 0;
      for (size_t k = 0; k < plan.prefill.size(); ++k) {
        const bool is_last = k + 1 == plan.prefill.size();
        const uint64_t rows = plan.prefill[k].query_rows +
                              (is_last ? plan.length - plan.first_decode : 0);
        rows_by_keys += absl::uint128(rows) * layout.chunks[k].end;
      }
      return absl::uint128(plan.heads.size()) * rows_by_keys * 4;
    }
  }
  return 0;
}

}  // namespace

absl::uint128 WireBytes(uint64_t id_bytes, uint32_t query_heads,
                        uint32_t kv_heads,
                        const std::vector<PrefillShape>& prefill,
                        uint64_t first_decode, uint64_t length,
                        uint32_t head_dim, uint32_t value_dim) {
  const uint64_t H = query_heads;
  // A step's keys (dim d) or values (dim e): one HeadVectors of admit x dim
  // floats per KV head; nothing when dim is 0.
  auto vectors = [kv_heads](uint64_t admit, uint32_t dim) -> absl::uint128 {
    if (dim == 0) return 0;
    const absl::uint128 floats = absl::uint128(admit) * dim;
    const uint64_t payload =
        floats == 0 ? 0
                    : Saturate(1 + VarintBytes(Saturate(floats * 4)) +
                               floats * 4);
    return absl::uint128(kv_heads) * (1 + VarintBytes(payload) + payload);
  };
  auto keys_and_values = [&vectors, head_dim, value_dim](uint64_t admit) {
    return vectors(admit, head_dim) + vectors(admit, value_dim);
  };
  absl::uint128 total = 0;
  if (id_bytes > 0) total += FieldBytes(id_bytes);
  for (const PrefillShape& shape : prefill) {
    // The query rows of one head: queries q = end - m .. end - 1, q + 1
    // weights each.
    const absl::uint128 rows = SumPiecewise(
        shape.end - shape.query_rows + 1, shape.end + 1,
        [](uint64_t n) { return FieldBytes(RowBytes(n)); },
        [](uint64_t n) {
          return VarintBytes(4 * n) | VarintBytes(RowBytes(n)) << 8;
        });
    absl::uint128 step = 1 + VarintBytes(shape.admit) +
                         absl::uint128(H) * rows +
                         keys_and_values(shape.admit);
    if (shape.total_rows > 0) {
      // Per head a ColumnTotals {repeated double sums = 1} of `end` values
      // (packed), then total_rows.
      const absl::uint128 sums = absl::uint128(shape.end) * 8;
      const uint64_t payload =
          shape.end == 0 ? 0 : Saturate(1 + VarintBytes(Saturate(sums)) + sums);
      step += absl::uint128(H) * (1 + VarintBytes(payload) + payload);
      step += 1 + VarintBytes(shape.total_rows);
    }
    const uint64_t saturated = Saturate(step);
    total += absl::uint128(1 + VarintBytes(saturated)) + step;
  }
  // Decode step q: admit 1 (2 bytes), H rows of q weights, the keys and
  // values of one position.
  const uint64_t decode_vectors = Saturate(keys_and_values(1));
  auto step = [H, decode_vectors](uint64_t q) {
    return 2 + decode_vectors + H * FieldBytes(RowBytes(q));
  };
  total += SumPiecewise(
      first_decode, length, [&step](uint64_t q) { return FieldBytes(step(q)); },
      [&step](uint64_t q) -> uint64_t {
        if (q == 0) return 0;
        return 1 | VarintBytes(4 * q) << 8 | VarintBytes(RowBytes(q)) << 16 |
               VarintBytes(step(q)) << 24;
      });
  total += 1 + VarintBytes(query_heads);
  total += 1 + VarintBytes(kv_heads);
  if (head_dim > 0) total += 1 + VarintBytes(head_dim);
  if (value_dim > 0) total += 1 + VarintBytes(value_dim);
  return total;
}

ImportSize MeasurePlan(const Layout& layout, const Plan& plan) {
  const uint64_t H = plan.heads.size();
  ImportSize size;
  size.scenario_bytes = Saturate(
      WireBytes(plan.id.size(), static_cast<uint32_t>(H), plan.kv_heads,
                plan.prefill, plan.first_decode, plan.length, plan.head_dim,
                plan.value_dim));
  const uint64_t decode_steps = plan.length - plan.first_decode;
  size.steps = plan.prefill.size() + decode_steps;
  size.rows = Saturate(absl::uint128(H) *
                       (absl::uint128(plan.query_rows()) + decode_steps));
  absl::uint128 per_head = SumRange(plan.first_decode, plan.length);
  for (const PrefillShape& step : plan.prefill) {
    per_head += SumRange(step.end - step.query_rows + 1, step.end + 1);
  }
  const absl::uint128 weights = absl::uint128(H) * per_head;
  size.weights = Saturate(weights);
  absl::uint128 totals = 0;  // column totals carried, every head
  for (const PrefillShape& step : plan.prefill) {
    if (step.total_rows > 0) totals += absl::uint128(H) * step.end;
  }
  // Keys and values carried: every position's, for each of the scenario's
  // KV heads (d + e floats a position).
  const absl::uint128 vectors = absl::uint128(plan.key_heads.size()) *
                                plan.length *
                                (uint64_t{plan.head_dim} + plan.value_dim);
  size.message_bytes = Saturate(weights * 4 + totals * 8 + vectors * 4 +
                                absl::uint128(size.rows) * 128 +
                                absl::uint128(size.steps) * 192 +
                                plan.id.size() + 256);
  size.input_bytes =
      Saturate(InputBytes(layout, plan) + totals * 8 + vectors * 4);
  return size;
}

using files::BytesText;

absl::Status CheckLimits(const Layout& layout, const Plan& plan,
                         const ImportSize& size,
                         const ImportOptions& options) {
  const uint64_t H = plan.heads.size();
  if (size.scenario_bytes > kMaxScenarioBytes) {
    std::string what, ways;
    const uint64_t decode_steps = plan.length - plan.first_decode;
    if (layout.kind == Kind::kWindow) {
      what = absl::StrFormat(
          "%d head%s, a prefill step of %d query rows per head over a prompt "
          "of %d positions, %d decode step%s",
          H, H == 1 ? "" : "s", plan.query_rows(), plan.prefill[0].admit,
          decode_steps, decode_steps == 1 ? "" : "s");
      ways = absl::StrFormat(
          "fewer heads (--heads), fewer window rows (--window_rows, now %d), "
          "fewer decode steps (--decode, now %d), or a shorter prompt",
          plan.query_rows(), decode_steps);
    } else if (layout.kind == Kind::kChunks) {
      what = absl::StrFormat(
          "%d head%s, %d prefill steps (one per chunk) carrying %d query rows "
          "per head in all over a prompt of %d positions, %d decode step%s",
          H, H == 1 ? "" : "s", plan.prefill.size(), plan.query_rows(),
          plan.first_decode, decode_steps, decode_steps == 1 ? "" : "s");
      ways = absl::StrFormat(
          "fewer heads (--heads), fewer query rows per chunk "
          "(--window_rows%s), fewer decode steps (--decode, now %d), fewer and larger chunks "
          "(capture_attention.py --prefill_chunk), or a shorter prompt",
          options.window_rows.has_value()
              ? absl::StrCat(", now ", *options.window_rows)
              : std::string(),
          decode_steps);
    } else {
      what = absl::StrFormat("%d head%s, L = %d: %d weights per head", H,
                             H == 1 ? "" : "s", plan.length,
                             Saturate(SumRange(0, plan.length)));
      ways =
          "fewer heads (--heads), a shorter prompt, or a window capture "
          "(window.<n> [heads, R, L], capture_attention.py --window) instead "
          "of the square: the square's scenario grows as L^2 (L(L-1)/2 "
          "weights per head), a window's as R x L";
    }
    return absl::OutOfRangeError(absl::StrFormat(
        "the scenario would be %s serialized (%s), over the %s limit of one "
        "protobuf message (INT_MAX: what protobuf serializes and "
        "tools/simulate parses). Ways out: %s",
        BytesText(size.scenario_bytes), what, BytesText(kMaxScenarioBytes),
        ways));
  }
  const std::optional<files::Memory> measured =
      options.memory_available.has_value() ? std::nullopt : files::MemoryAvailable();
  const std::optional<uint64_t> available =
      options.memory_available.has_value()
          ? options.memory_available
          : (measured.has_value() ? std::optional<uint64_t>(measured->bytes) : std::nullopt);
  const uint64_t need = Saturate(absl::uint128(size.input_bytes) +
                                 size.message_bytes);
  if (available.has_value() && need > *available) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the import needs about %s of memory (%s of the input read through "
        "its mapping + about %s for the scenario's %d weights in %d rows) "
        "and %s is available (%s): import fewer heads (--heads)%s, or free "
        "memory",
        BytesText(need), BytesText(size.input_bytes),
        BytesText(size.message_bytes), size.weights, size.rows,
        BytesText(*available),
        options.memory_available.has_value() ? std::string("the memory limit given")
                                             : measured->source,
        layout.kind == Kind::kWindow || layout.kind == Kind::kChunks
            ? ", fewer window rows (--window_rows) or decode steps (--decode)"
            : ""));
  }
  return absl::OkStatus();
}

}  // namespace import_attention

using import_attention::Saturate;
using import_attention::WireBytes;

uint64_t ScenarioWireBytes(uint64_t id_bytes, uint32_t query_heads,
                           uint32_t kv_heads, uint64_t prefill_admit,
                           uint64_t query_rows, uint64_t first_decode,
                           uint64_t length) {
  std::vector<PrefillShape> prefill;
  if (prefill_admit > 0) {
    prefill.push_back({prefill_admit, prefill_admit, query_rows});
  }
  return Saturate(WireBytes(id_bytes, query_heads, kv_heads, prefill,
                            first_decode, length, 0, 0));
}

uint64_t ScenarioWireBytes(uint64_t id_bytes, uint32_t query_heads,
                           uint32_t kv_heads,
                           const std::vector<PrefillShape>& prefill,
                           uint64_t first_decode, uint64_t length,
                           uint32_t head_dim, uint32_t value_dim) {
  return Saturate(WireBytes(id_bytes, query_heads, kv_heads, prefill,
                            first_decode, length, head_dim, value_dim));
}

}  // namespace kvspec
