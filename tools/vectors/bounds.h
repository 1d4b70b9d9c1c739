// The acceptance bounds the suite must exercise (spec/vectors.md#bounds):
// for every trace parameter of spec/trace.md#parameters, its lowest and
// highest valid values (accepted) and one past each (refused). Policy
// parameters take theirs from the registry (cc/config.h, ParameterInfo).
// The suite (cases_audit.cc) builds one scenario per trace bound from this table;
// the census (tools/census) fails when a bound has no case.
#ifndef KVSPEC_TOOLS_VECTORS_BOUNDS_H_
#define KVSPEC_TOOLS_VECTORS_BOUNDS_H_

#include <functional>
#include <string>
#include <vector>

#include "cc/trace.h"

namespace kvspec {
namespace vectors {

// The twelve TraceConfig fields, by proto name, in spec/trace.md's order.
std::vector<std::string> TraceFieldNames();

struct TraceBound {
  std::string field;           // proto field name
  std::string scenario_id;     // "trace-bound-<field>-<which>"
  std::string which;           // "min", "max", "below-min", "above-max"
  bool accepted = false;       // whether the value lies in the valid range
  // Sets the field to the bound's value on a config.
  std::function<void(TraceConfig&)> set;
  // Whether `config` holds exactly this bound's value (bit for bit).
  std::function<bool(const TraceConfig&)> holds;
};

// Every trace bound a vector must exercise. `steps` at its top, 2^31, is
// left out: a run of 2^31 steps is not a vector (spec/vectors.md#bounds).
const std::vector<TraceBound>& TraceBounds();

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_BOUNDS_H_
