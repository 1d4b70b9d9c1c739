// The attention importer's plan (MakePlan, import_internal.h): what the
// scenario will hold: the selected heads and kv_heads ("KV heads" in
// import_attention_lib.h), and for a window or chunks the prefill steps and
// decode steps the flags give.
#include "tools/attention/import_internal.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/errors.h"

namespace kvspec {
namespace import_attention {
namespace {

// spec/heads.md#head-counts: a scenario has at most this many query heads.
constexpr uint64_t kMaxHeads = 1024;

// The heads to carry, checked against the file.
absl::StatusOr<std::vector<uint32_t>> SelectHeads(
    const Layout& layout, const ImportOptions& options) {
  std::vector<uint32_t> heads;
  if (options.heads.has_value()) {
    heads = *options.heads;
    if (heads.empty()) {
      return Invalid("--heads selects no head (e.g. --heads=0,2,5)");
    }
    std::vector<bool> seen(layout.heads, false);
    for (uint32_t h : heads) {
      if (h >= layout.heads) {
        return Invalid(absl::StrFormat(
            "--heads: head %d is out of range (the file has %d head%s, "
            "0..%d)",
            h, layout.heads, layout.heads == 1 ? "" : "s", layout.heads - 1));
      }
      if (seen[h]) {
        return Invalid(absl::StrFormat("--heads: head %d is given twice", h));
      }
      seen[h] = true;
    }
  } else {
    if (layout.heads > kMaxHeads) {
      return Invalid(absl::StrFormat(
          "%d query heads selected; a scenario holds at most %d "
          "(spec/heads.md#head-counts): choose some with --heads",
          layout.heads, kMaxHeads));
    }
    for (uint32_t h = 0; h < layout.heads; ++h) heads.push_back(h);
  }
  if (heads.size() > kMaxHeads) {
    return Invalid(absl::StrFormat(
        "%d query heads selected; a scenario holds at most %d "
        "(spec/heads.md#head-counts): choose some with --heads",
        heads.size(), kMaxHeads));
  }
  return heads;
}

// The scenario's kv_heads for the selected `heads` ("KV heads" in
// import_attention_lib.h). With the file's __metadata__
// "num_key_value_heads" K, the model's KV head of query head h is h / g,
// g = H / K (H the file's heads); the selected heads keep the model's KV
// heads when they run through its KV heads one after another, the same
// number from each: the scenario's kv_heads is then the number of runs
// (spec/heads.md#head-counts: a KV head's query heads are consecutive, as
// many for each).
absl::StatusOr<uint32_t> ChooseKvHeads(const Layout& layout,
                                       const ImportOptions& options,
                                       const std::vector<uint32_t>& heads) {
  const std::optional<std::pair<std::string, uint64_t>>& metadata =
      layout.kv_heads_metadata;
  const bool given = !options.kv_heads_from_file || !metadata.has_value();
  if (given) {
    if (options.kv_heads == 0) {
      return Invalid("--kv_heads must be at least 1");
    }
    if (heads.size() % options.kv_heads != 0) {
      return Invalid(absl::StrFormat(
          "--kv_heads=%d does not divide the %d selected query head%s "
          "(spec/heads.md#head-counts)",
          options.kv_heads, heads.size(), heads.size() == 1 ? "" : "s"));
    }
  }
  if (!metadata.has_value()) return options.kv_heads;

  const auto& [text, kv] = *metadata;
  const uint64_t all = layout.heads;
  if (kv == 0) {
    return Invalid(absl::StrFormat(
        "__metadata__ says num_key_value_heads = \"%s\": a model has at "
        "least one KV head",
        text));
  }
  if (all % kv != 0) {
    return Invalid(absl::StrFormat(
        "__metadata__ says num_key_value_heads = \"%s\" but the file has %d "
        "query heads, not a multiple of %d: the file contradicts itself",
        text, all, kv));
  }
  const uint64_t group = all / kv;
  // The runs of consecutive selected heads that share a KV head: each KV
  // head's heads must form one run, and every run the same length.
  std::vector<uint64_t> run_kv;
  std::vector<size_t> run_length;
  bool even = true;
  for (uint32_t h : heads) {
    const uint64_t k = h / group;
    if (!run_kv.empty() && run_kv.back() == k) {
      ++run_length.back();
      continue;
    }
    if (std::find(run_kv.begin(), run_kv.end(), k) != run_kv.end()) {
      even = false;  // KV head k's heads are not together
    }
    run_kv.push_back(k);
    run_length.push_back(1);
  }
  for (size_t length : run_length) even = even && length == run_length[0];
  if (!even) {
    return Invalid(absl::StrFormat(
        "--heads=%s does not keep the model's KV heads: __metadata__ says "
        "num_key_value_heads = \"%s\", so each of its %d KV heads serves %d "
        "consecutive query heads of the %d, and a scenario's KV heads serve "
        "equal runs of its heads: select as many heads of each KV head "
        "used, each KV head's heads together",
        absl::StrJoin(heads, ","), text, kv, group, all));
  }
  const uint32_t derived = static_cast<uint32_t>(run_kv.size());
  if (given && options.kv_heads != derived) {
    const std::string selected =
        options.heads.has_value()
            ? absl::StrFormat("the %d selected heads (%s)", heads.size(),
                              absl::StrJoin(heads, ", "))
            : absl::StrFormat("all %d heads", heads.size());
    return Invalid(absl::StrFormat(
        "--kv_heads=%d contradicts __metadata__ num_key_value_heads = "
        "\"%s\": the model's %d query heads share %d KV heads, %d each, so "
        "%s make %d; give --kv_heads=%d or leave it out",
        options.kv_heads, text, all, kv, group, selected, derived, derived));
  }
  return derived;
}

// ImportOptions::keys and ::values: `tensor` (keys.<n> or values.<n>, read
// by `flag`, each position's `what`) must hold the model's K KV heads: the
// file's __metadata__ "num_key_value_heads" must be there and equal K.
absl::Status CheckTensorHeads(const Layout& layout,
                              const HeadVectorsTensor& tensor,
                              const char* flag, const char* what) {
  const uint64_t K = tensor.heads;
  if (!layout.kv_heads_metadata.has_value()) {
    return Invalid(absl::StrFormat(
        "--%s: tensor %s holds %d KV heads' %s, and the file's "
        "__metadata__ has no num_key_value_heads to say which KV head each "
        "query head uses (capture_attention.py writes it)",
        flag, tensor.tensor, K, what));
  }
  const auto& [text, kv] = *layout.kv_heads_metadata;
  if (kv != K) {
    return Invalid(absl::StrFormat(
        "--%s: tensor %s holds %d KV heads' %s but __metadata__ says "
        "num_key_value_heads = \"%s\": the file contradicts itself",
        flag, tensor.tensor, K, what, text));
  }
  return absl::OkStatus();
}

// ImportOptions::keys or ::values: the file's KV head (the first index of
// keys.<n> and values.<n>) of each of the scenario's `kv_heads` KV heads,
// whose query heads are `heads` in equal runs (ChooseKvHeads checked them
// against the metadata): the model's KV head h / (H / K) of each run's
// first head h, K the metadata's, which each tensor read must hold
// (CheckTensorHeads: keys first).
absl::StatusOr<std::vector<uint64_t>> KeyHeads(
    const Layout& layout, const std::vector<uint32_t>& heads,
    uint32_t kv_heads) {
  if (!layout.keys.tensor.empty()) {
    KVSPEC_RETURN_IF_ERROR(
        CheckTensorHeads(layout, layout.keys, "keys", "keys"));
  }
  if (!layout.values.tensor.empty()) {
    KVSPEC_RETURN_IF_ERROR(
        CheckTensorHeads(layout, layout.values, "values", "values"));
  }
  const uint64_t group = layout.heads / layout.kv_heads_metadata->second;
  const size_t run = heads.size() / kv_heads;
  std::vector<uint64_t> key_heads;
  for (size_t j = 0; j < kv_heads; ++j) {
    key_heads.push_back(heads[j * run] / group);
  }
  return key_heads;
}

// The chunks' prefill steps and decode steps, in the order
// import_attention_lib.h gives: D < L, m >= 1, D < m_K.
absl::StatusOr<Plan> PlanChunks(const Layout& layout,
                                const ImportOptions& options, Plan plan) {
  const uint64_t L = layout.length;
  const uint64_t D = options.decode.value_or(0);
  const ChunkRows& last = layout.chunks.back();
  if (D >= L) {
    return Invalid(absl::StrFormat(
        "--decode=%d: the prompt has L = %d positions (the last chunk tensor "
        "is %s); at most %d can be decode steps, the prefill steps admit at "
        "least one",
        D, L, last.tensor, L - 1));
  }
  if (options.window_rows.has_value() && *options.window_rows < 1) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d: each prefill step needs at least 1 query row",
        *options.window_rows));
  }
  if (D >= last.rows) {
    return Invalid(absl::StrFormat(
        "--decode=%d: the decode steps take the rows of the last chunk's last "
        "queries, and its prefill step needs at least one: tensor %s holds "
        "%d row%s (queries %d..%d); give --decode below %d",
        D, last.tensor, last.rows, last.rows == 1 ? "" : "s",
        last.first_query(), last.end - 1, last.rows));
  }
  const uint64_t m =
      options.window_rows.has_value() ? *options.window_rows : UINT64_MAX;
  for (size_t k = 0; k < layout.chunks.size(); ++k) {
    const ChunkRows& chunk = layout.chunks[k];
    const bool is_last = k + 1 == layout.chunks.size();
    const uint64_t end = is_last ? chunk.end - D : chunk.end;
    const uint64_t rows = is_last ? chunk.rows - D : chunk.rows;
    plan.prefill.push_back({end - chunk.start, end, std::min(m, rows)});
  }
  plan.first_decode = L - D;
  return plan;
}

}  // namespace

absl::StatusOr<Plan> MakePlan(const Layout& layout,
                              const ImportOptions& options,
                              const std::string& default_id) {
  Plan plan;
  absl::StatusOr<std::vector<uint32_t>> heads = SelectHeads(layout, options);
  if (!heads.ok()) return heads.status();
  plan.heads = std::move(*heads);
  absl::StatusOr<uint32_t> kv_heads =
      ChooseKvHeads(layout, options, plan.heads);
  if (!kv_heads.ok()) return kv_heads.status();
  plan.kv_heads = *kv_heads;
  if (!layout.keys.tensor.empty() || !layout.values.tensor.empty()) {
    absl::StatusOr<std::vector<uint64_t>> key_heads =
        KeyHeads(layout, plan.heads, plan.kv_heads);
    if (!key_heads.ok()) return key_heads.status();
    plan.key_heads = std::move(*key_heads);
    plan.head_dim = layout.keys.dim;
    plan.value_dim = layout.values.dim;
  }
  plan.id = options.id.empty() ? default_id : options.id;
  plan.length = layout.length;
  if (options.totals && layout.kind != Kind::kWindow) {
    return Invalid(absl::StrFormat(
        "--totals reads totals.<n> beside a window.<n> tensor (the window "
        "layout); this import reads %s",
        layout.kind == Kind::kChunks ? "chunk.<n>.<e> tensors"
                                     : "a matrix or step rows"));
  }
  if (layout.kind == Kind::kChunks) return PlanChunks(layout, options, plan);
  if (layout.kind != Kind::kWindow) return plan;

  // The window's flags, in the order import_attention_lib.h gives.
  const uint64_t L = layout.length, R = layout.rows;
  const uint64_t D = options.decode.value_or(0);
  const std::string shape =
      absl::StrFormat("tensor %s [%d, %d, %d]", layout.tensor, layout.heads,
                      R, L);
  if (D >= L) {
    return Invalid(absl::StrFormat(
        "--decode=%d: the prompt has L = %d positions (%s); at most %d can "
        "be decode steps, the prefill step admits at least one",
        D, L, shape, L - 1));
  }
  const uint64_t P = L - D;
  if (!options.window_rows.has_value() && D >= R) {
    return Invalid(absl::StrFormat(
        "--decode=%d leaves no window row for the prefill step: the window "
        "has R = %d rows (%s), and the default --window_rows is R - D; "
        "give --decode below %d",
        D, R, shape, R));
  }
  const uint64_t m = options.window_rows.has_value()
                         ? uint64_t{*options.window_rows}
                         : R - D;
  if (m < 1) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d: the prefill step needs at least 1 query row", m));
  }
  if (m > P) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d is more than the %d position%s the prefill step "
        "admits (P = L - D = %d - %d)",
        m, P, P == 1 ? "" : "s", L, D));
  }
  if (m + D > R) {
    return Invalid(absl::StrFormat(
        "--window_rows=%d plus --decode=%d is %d rows, more than the "
        "window's R = %d (%s)",
        m, D, m + D, R, shape));
  }
  if (options.totals && layout.totals_width != P) {
    return Invalid(absl::StrFormat(
        "--totals with --decode=%d: tensor %s holds the totals of the first "
        "%d queries, but the prefill step admits P = L - D = %d - %d = %d "
        "positions; import with --decode=%d, or capture with "
        "capture_attention.py --totals_decode %d",
        D, layout.totals_tensor, layout.totals_width, L, D, P,
        L - layout.totals_width, D));
  }
  plan.prefill.push_back({P, P, m, options.totals ? P : 0});
  plan.first_decode = P;
  return plan;
}

}  // namespace import_attention
}  // namespace kvspec
