// Blocks: evicting whole blocks of positions (spec/blocks.md). Held by every
// Policy; the default block of 1 position is the harness's rule, position by
// position (spec/harness.md#victims).
//
// Every rule of spec/blocks.md that is not a parameter check is here:
// how many closed blocks go (#how-many-blocks-go), which blocks are
// candidates (#candidates), a block's score and the ranking
// (#ranking-blocks). The policies call these from ChooseVictims with their
// own step budget, candidates and scores.
//
// Spec: spec/blocks.md
#ifndef KVSPEC_CC_BLOCK_H_
#define KVSPEC_CC_BLOCK_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace kvspec {

// spec/blocks.md#parameters: `block_score`.
enum class BlockScore { kSum = 0, kMean = 1, kMax = 2 };

struct Blocks {
  // `block`: positions per block, at least 1.
  size_t size = 1;
  BlockScore score = BlockScore::kSum;

  bool whole() const { return size > 1; }

  // spec/blocks.md#how-many-blocks-go: with `kept` positions after the
  // step's admissions and a step budget that is a multiple of `size`, the
  // closed blocks to evict: floor(kept / B) - budget / B, or 0.
  size_t ToEvict(size_t kept, size_t budget) const {
    const size_t closed = kept / size;
    const size_t allowed = budget / size;
    return closed > allowed ? closed - allowed : 0;
  }

  // spec/blocks.md#candidates: with the candidate slots [begin, end) of the
  // card's rule, the candidate blocks are the closed blocks inside it:
  // [ceil(begin / B), floor(end / B)). Returned as {first, end} block
  // indices (first may equal end: no candidate).
  std::pair<size_t, size_t> CandidateBlocks(size_t begin, size_t end) const {
    const size_t first = (begin + size - 1) / size;
    const size_t last = end / size;
    return {first, std::max(first, last)};
  }

  // The slots of blocks `block_indices` (ascending), ascending.
  std::vector<size_t> SlotsOf(absl::Span<const size_t> block_indices) const {
    std::vector<size_t> slots;
    slots.reserve(block_indices.size() * size);
    for (size_t block : block_indices) {
      for (size_t i = 0; i < size; ++i) slots.push_back(block * size + i);
    }
    return slots;
  }

  // spec/blocks.md#ranking-blocks: the score of block `block` from its
  // slots' scores. Sum in slot order from +0.0 (arithmetic.md#reductions);
  // mean that sum divided by B (one binary64 division); max the largest.
  template <typename Score>
  double ScoreOf(absl::Span<const Score> scores, size_t block) const {
    const size_t first = block * size;
    if (score == BlockScore::kMax) {
      double best = static_cast<double>(scores[first]);
      for (size_t i = 1; i < size; ++i) {
        best = std::max(best, static_cast<double>(scores[first + i]));
      }
      return best;
    }
    double sum = 0.0;
    for (size_t i = 0; i < size; ++i) sum += static_cast<double>(scores[first + i]);
    if (score == BlockScore::kMean) return sum / static_cast<double>(size);
    return sum;
  }

  // spec/blocks.md#ranking-blocks, score-based: the `count` candidate blocks
  // among the closed blocks inside the candidate slots [0, candidate_end)
  // that rank lowest by (block score, first position), as the slots of
  // those blocks, ascending. Blocks are in kept order, so "first position
  // ascending" is "block index ascending".
  template <typename Score>
  std::vector<size_t> LowestRanked(absl::Span<const Score> scores,
                                   size_t candidate_end, size_t count) const {
    const auto [first, end] = CandidateBlocks(0, candidate_end);
    assert(count <= end - first);
    std::vector<std::pair<double, size_t>> ranked;  // (score, block)
    ranked.reserve(end - first);
    for (size_t block = first; block < end; ++block) {
      ranked.push_back({ScoreOf(scores, block), block});
    }
    // A total order (block indices are distinct): pair's < compares the
    // score, then the block index.
    std::sort(ranked.begin(), ranked.end());
    std::vector<size_t> victims;
    for (size_t i = 0; i < count; ++i) victims.push_back(ranked[i].second);
    std::sort(victims.begin(), victims.end());
    return SlotsOf(victims);
  }

  // spec/blocks.md#ranking-blocks, positional: the `count` candidate blocks
  // with the lowest first positions, the candidate slots being
  // [begin, end), as slots ascending.
  std::vector<size_t> Oldest(size_t begin, size_t end, size_t count) const {
    const auto [first, last] = CandidateBlocks(begin, end);
    assert(count <= last - first);
    (void)last;
    std::vector<size_t> blocks;
    for (size_t i = 0; i < count; ++i) blocks.push_back(first + i);
    return SlotsOf(blocks);
  }
};

}  // namespace kvspec

#endif  // KVSPEC_CC_BLOCK_H_
