#include "tools/vectors/bounds.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kvspec {
namespace vectors {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <typename T>
TraceBound Bound(std::string field, std::string which, bool accepted,
                 T TraceConfig::*member, T value) {
  TraceBound bound;
  bound.field = field;
  bound.which = which;
  bound.scenario_id = "trace-bound-" + field + "-" + which;
  // Proto field names use underscores; scenario IDs use [a-z0-9.-].
  for (char& c : bound.scenario_id) {
    if (c == '_') c = '-';
  }
  bound.accepted = accepted;
  bound.set = [member, value](TraceConfig& c) { c.*member = value; };
  bound.holds = [member, value](const TraceConfig& c) {
    if constexpr (std::is_same_v<T, double>) {
      return SameBits(c.*member, value);
    } else {
      return c.*member == value;
    }
  };
  return bound;
}

}  // namespace

std::vector<std::string> TraceFieldNames() {
  return {"seed",        "steps",        "sinks",       "sink_mass",
          "recent_length", "recent_mass", "recent_decay", "heavy_count",
          "heavy_mass",  "epoch_length", "background_mass", "noise"};
}

const std::vector<TraceBound>& TraceBounds() {
  static const auto* bounds = [] {
    constexpr uint32_t k2To31 = uint32_t{1} << 31;
    const double tiny = std::numeric_limits<double>::denorm_min();
    const double above_one = std::nextafter(1.0, 2.0);
    using C = TraceConfig;
    auto* list = new std::vector<TraceBound>{
        Bound("seed", "min", true, &C::seed, uint64_t{0}),
        Bound("seed", "max", true, &C::seed, ~uint64_t{0}),
        Bound("steps", "min", true, &C::steps, uint32_t{1}),
        Bound("steps", "below-min", false, &C::steps, uint32_t{0}),
        Bound("steps", "above-max", false, &C::steps, k2To31 + 1),
        Bound("sinks", "min", true, &C::sinks, uint32_t{0}),
        Bound("sinks", "max", true, &C::sinks, k2To31),
        Bound("sinks", "above-max", false, &C::sinks, k2To31 + 1),
        Bound("recent_length", "min", true, &C::recent_length, uint32_t{0}),
        Bound("recent_length", "max", true, &C::recent_length, uint32_t{65536}),
        Bound("recent_length", "above-max", false, &C::recent_length,
              uint32_t{65537}),
        Bound("heavy_count", "min", true, &C::heavy_count, uint32_t{0}),
        Bound("heavy_count", "max", true, &C::heavy_count, uint32_t{65536}),
        Bound("heavy_count", "above-max", false, &C::heavy_count, uint32_t{65537}),
        Bound("epoch_length", "min", true, &C::epoch_length, uint32_t{1}),
        Bound("epoch_length", "max", true, &C::epoch_length, k2To31),
        Bound("epoch_length", "below-min", false, &C::epoch_length, uint32_t{0}),
        Bound("epoch_length", "above-max", false, &C::epoch_length, k2To31 + 1),
        Bound("recent_decay", "min", true, &C::recent_decay, tiny),
        Bound("recent_decay", "max", true, &C::recent_decay, 1.0),
        Bound("recent_decay", "below-min", false, &C::recent_decay, 0.0),
        Bound("recent_decay", "above-max", false, &C::recent_decay, above_one),
        Bound("background_mass", "min", true, &C::background_mass, tiny),
        Bound("background_mass", "max", true, &C::background_mass, 1.0),
        Bound("background_mass", "below-min", false, &C::background_mass, 0.0),
        Bound("background_mass", "above-max", false, &C::background_mass,
              above_one),
        Bound("noise", "min", true, &C::noise, 0.0),
        Bound("noise", "max", true, &C::noise, 1.0),
        Bound("noise", "below-min", false, &C::noise, -0.0),
        Bound("noise", "above-max", false, &C::noise, above_one),
    };
    // The three masses that may be +0.0: [+0.0, 1]; -0.0 is below.
    for (auto member : {&C::sink_mass, &C::recent_mass, &C::heavy_mass}) {
      const char* field = member == &C::sink_mass     ? "sink_mass"
                          : member == &C::recent_mass ? "recent_mass"
                                                      : "heavy_mass";
      list->push_back(Bound(field, "min", true, member, 0.0));
      list->push_back(Bound(field, "max", true, member, 1.0));
      list->push_back(Bound(field, "below-min", false, member, -0.0));
      list->push_back(Bound(field, "above-max", false, member, above_one));
    }
    return list;
  }();
  return *bounds;
}

}  // namespace vectors
}  // namespace kvspec
