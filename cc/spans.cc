#include "cc/spans.h"

#include <algorithm>

namespace kvspec {

std::vector<HeldRun> HeldRunsOf(absl::Span<const Position> held,
                                bool cache_relative_ids) {
  std::vector<HeldRun> runs;
  for (size_t i = 0; i < held.size(); ++i) {
    if (!runs.empty() && runs.back().last + 1 == held[i]) {
      runs.back().last = held[i];
      continue;
    }
    // spec/spans.md#position-ids: absolute, or the index in the held set.
    const uint32_t id =
        cache_relative_ids ? static_cast<uint32_t>(i) : held[i];
    runs.push_back({held[i], held[i], id});
  }
  return runs;
}

std::vector<Position> SpanOf(const SpanRule& rule,
                             absl::Span<const Position> held, Position query,
                             std::optional<Position> last_sink) {
  // spec/spans.md#span-rules: the lowest position the rule allows. Read over
  // the integers: q - W + 1 below 0 allows everything.
  uint64_t lowest = 0;
  if (rule.window > 0 && uint64_t{query} + 1 > rule.window) {
    lowest = uint64_t{query} + 1 - rule.window;
  } else if (rule.chunk > 0) {
    lowest = uint64_t{query} / rule.chunk * rule.chunk;
  }
  std::vector<Position> ranges;
  const auto add = [&ranges](Position p) {
    if (!ranges.empty() && ranges.back() + 1 == p) {
      ranges.back() = p;
    } else {
      ranges.push_back(p);
      ranges.push_back(p);
    }
  };
  // Visible: held and not after the query. Allowed: at or above `lowest`,
  // or a sink (spec/spans.md: sinks are in every span).
  const auto visible_end = std::upper_bound(held.begin(), held.end(), query);
  for (auto it = held.begin(); it != visible_end; ++it) {
    const bool sink = last_sink.has_value() && *it <= *last_sink;
    if (sink) {
      add(*it);
    } else {
      // Everything from here to the query is allowed: jump to `lowest`.
      it = std::lower_bound(it, visible_end, lowest);
      for (; it != visible_end; ++it) add(*it);
      break;
    }
  }
  return ranges;
}

size_t ContextShiftDiscard(size_t n_left, int64_t discard) {
  const size_t d = discard > 0 ? static_cast<size_t>(discard) : n_left / 2;
  const size_t most = n_left > 0 ? n_left - 1 : 0;
  return std::min(d, most);
}

}  // namespace kvspec
