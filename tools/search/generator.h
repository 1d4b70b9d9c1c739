// The differential search's generator and shrinker: random scenarios over
// the whole input space of the current spec, weighted toward the boundaries
// where ports go wrong, and the moves that make a disagreeing scenario
// smaller while it still disagrees.
//
// Every case is a pure function of (seed, index): `search --seed=S
// --only=I` regenerates case I alone, on any machine (the draws come from
// kvspec's own Rng, spec/rng.md, never from the C++ library's
// distributions, whose results differ between standard libraries).
//
// What a generated case can hold (tools/README.md#search lists it with the
// features of spec/features.md):
//   - every registered policy, every parameter of its card: drawn at and
//     around its bounds and the values that interact (budget around the
//     kept count and the chunks, recent_window and sinks below and at the
//     budget, obs_window around the query rows, odd and even kernels);
//   - one head without head fields, or 1 to 8 query heads in any grouping
//     (kv_heads any divisor), under every granularity and aggregation;
//   - steps admitting one position or chunks at and around the budget and
//     the window; decode steps with rows, null attention or empty rows;
//     prefill steps (query rows) first or after decode steps, with fewer,
//     as many or more query rows than obs_window;
//   - a generated trace now and then (one head or several);
//   - weights drawn from a small per-case pool so that ties and near-ties
//     (adjacent binary32 values) are common: 0, dyadic fractions, uniform
//     values, subnormals, FLT_MIN and its neighbours, weights near
//     FLT_MAX;
//   - now and then a parameter or a row that the spec refuses, so that the
//     refusals and their order are searched too.
#ifndef KVSPEC_TOOLS_SEARCH_GENERATOR_H_
#define KVSPEC_TOOLS_SEARCH_GENERATOR_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cc/harness.h"
#include "cc/registry.h"

namespace kvspec {
namespace search {

struct SearchCase {
  PolicyConfig policy;
  Scenario scenario;
};

// Case `index` of the search seeded with `seed`. The scenario's id is left
// empty; callers name it.
SearchCase GenerateCase(uint64_t seed, uint64_t index);

// A measure of size the shrinker reduces: steps, positions, heads, weights
// and parameters, weighted so that fewer steps count most.
uint64_t CaseSize(const SearchCase& c);

// Every one-move simplification of `c`, most reducing first: drop a step,
// drop a position of a chunk, drop a group of heads or a head of each group,
// shorten a trace, null a step's rows, drop or lower a parameter, round a
// row's weights to simpler values. Each keeps the scenario's rows the
// lengths the spec requires (a row dropped with its position, a query row
// with its query), so a move never makes a well-formed scenario malformed.
std::vector<SearchCase> ShrinkMoves(const SearchCase& c);

// What a case exercises, as tags ("policy:snapkv", "heads:3",
// "prefill-after-decode", "queries<obs_window", "weight:subnormal", ...):
// the coverage the search reports (--stats) and its test checks.
std::set<std::string> Tags(const SearchCase& c);

// The case as protobuf text (policy and scenario), for reports.
std::string CaseText(const SearchCase& c);

}  // namespace search
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_SEARCH_GENERATOR_H_
