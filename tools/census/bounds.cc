// Bounds and defaults (spec/vectors.md#bounds): every parameter and trace
// field at its lowest and highest valid value accepted and one past each
// refused, and every default deciding some case; and which defaults decide
// a case (the flags defaults.decides and trace.defaults).
#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "cc/trace.h"
#include "tools/census/census_internal.h"
#include "tools/vectors/bounds.h"
#include "tools/vectors/cases.h"

namespace kvspec {
namespace audit {
namespace internal {
namespace {

// Values near a policy parameter's default, the census's counterfactuals for
// it (each used only if it lies in the parameter's range and is accepted).
std::vector<int64_t> NearbyValues(int64_t value) {
  return {value - 1, value + 1, value - 2, value + 2, value / 2, value * 2};
}

const PolicyInfo* InfoOf(const std::string& name) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// The policy's parameters that `config` leaves out (they take defaults).
std::vector<const ParameterInfo*> OmittedParameters(const PolicyConfig& config) {
  std::vector<const ParameterInfo*> omitted;
  const PolicyInfo* info = InfoOf(config.name);
  if (info == nullptr) return omitted;
  for (const ParameterInfo& p : info->parameters) {
    bool given = false;
    for (const Parameter& g : config.parameters) given = given || g.name == p.name;
    if (!given && p.default_value.has_value()) omitted.push_back(&p);
  }
  return omitted;
}

}  // namespace

std::set<std::string> DecidedDefaults(const CaseContext& c) {
  std::set<std::string> decided_names;
  for (const ParameterInfo* p : OmittedParameters(c.config)) {
    bool decided = false;
    for (int64_t value : NearbyValues(*p->default_value)) {
      if (value < p->min || value > p->max || value == *p->default_value) continue;
      const PolicyConfig other = WithParameter(c.config, p->name, value);
      // The whole log: a span parameter's default shows in the spans and
      // held sets only (spec/spans.md#the-log).
      if (Accepted(other) && LogDiffersWith(c, other)) {
        decided = true;
        break;
      }
    }
    if (decided) decided_names.insert(p->name);
  }
  return decided_names;
}

std::set<std::string> DecidedTraceDefaults(const CaseContext& c) {
  std::set<std::string> decided_names;
  const v1::TraceConfig& wire = c.wire->trace();
  // Every field spelled out, absent ones at their defaults.
  const v1::TraceConfig effective = ToProto(FromProto(wire));
  for (const std::string& name : vectors::TraceFieldNames()) {
    const auto* field = wire.GetDescriptor()->FindFieldByName(name);
    if (name == "steps" || wire.GetReflection()->HasField(wire, field)) continue;
    std::vector<TraceConfig> others;
    for (int64_t step : {-1, 1, 2}) {
      v1::TraceConfig changed = effective;
      if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
        const double d = effective.GetReflection()->GetDouble(effective, field);
        changed.GetReflection()->SetDouble(&changed, field,
                                           step == -1 ? d * 0.5 : d * 0.75 * step);
      } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32) {
        const uint32_t v = effective.GetReflection()->GetUInt32(effective, field);
        changed.GetReflection()->SetUInt32(&changed, field,
                                           static_cast<uint32_t>(int64_t{v} + step));
      } else {
        const uint64_t v = effective.GetReflection()->GetUInt64(effective, field);
        changed.GetReflection()->SetUInt64(&changed, field, v + 1 + step);
      }
      others.push_back(FromProto(changed));
    }
    bool decided = false;
    for (const TraceConfig& other : others) {
      if (!ValidateTrace(other).ok()) continue;
      Scenario scenario = c.scenario;
      scenario.trace = other;
      if (DiffersWith(c, scenario)) {
        decided = true;
        break;
      }
    }
    if (decided) decided_names.insert(name);
  }
  return decided_names;
}

// spec/vectors.md#bounds: every parameter at its lowest and highest valid
// value accepted, and one past each refused, by some case; a refusal counts
// when the same configuration at the bound itself is accepted.
void CheckBounds(const vectors::VectorSet& set, std::vector<std::string>& failures) {
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      const struct {
        const char* which;
        int64_t value, inside;
        bool accepted;
      } bounds[] = {{"lowest", p.min, p.min, true},
                    {"highest", p.max, p.max, true},
                    {"one below the lowest", p.min - 1, p.min, false},
                    {"one above the highest", p.max + 1, p.max, false}};
      for (const auto& bound : bounds) {
        bool found = false;
        for (const vectors::LoadedCase& loaded : set.cases) {
          const PolicyConfig config = FromProto(loaded.vector->policy());
          if (config.name != info.name) continue;
          bool at = false;
          for (const Parameter& g : config.parameters) {
            at = at || (g.name == p.name && g.value == bound.value);
          }
          if (!at) continue;
          const v1::EvictionLog& expected = loaded.vector->expected();
          if (bound.accepted) {
            found = !expected.has_rejection() ||
                    expected.rejection().step() >= 0;
          } else {
            found = expected.has_rejection() && expected.rejection().step() == -1 &&
                    expected.rejection().category() == v1::INVALID_PARAMETER &&
                    Accepted(WithParameter(config, p.name, bound.inside));
          }
          if (found) break;
        }
        if (!found) {
          failures.push_back(absl::StrFormat(
              "bound: no case has %s %s at its %s value %d %s", info.name, p.name,
              bound.which, bound.value, bound.accepted ? "accepted" : "refused"));
        }
      }
    }
  }
  for (const vectors::TraceBound& bound : vectors::TraceBounds()) {
    bool found = false;
    for (const vectors::LoadedCase& loaded : set.cases) {
      if (!loaded.scenario->has_trace()) continue;
      const v1::TraceConfig& wire = loaded.scenario->trace();
      const auto* field = wire.GetDescriptor()->FindFieldByName(bound.field);
      if (!wire.GetReflection()->HasField(wire, field)) continue;
      const TraceConfig config = FromProto(wire);
      if (!bound.holds(config) || !loaded.scenario->steps().empty()) continue;
      if (!MakePolicy(FromProto(loaded.vector->policy())).ok()) continue;
      const v1::EvictionLog& expected = loaded.vector->expected();
      if (bound.accepted) {
        found = !expected.has_rejection() || expected.rejection().step() >= 0;
      } else {
        // Decided when the same trace with the field at a valid value (the
        // canonical one's) is accepted.
        v1::TraceConfig reset = wire;
        v1::TraceConfig canonical = ToProto(vectors::CanonicalTrace(10));
        reset.GetReflection()->SwapFields(&reset, &canonical, {field});
        found = expected.has_rejection() &&
                expected.rejection().category() == v1::INVALID_TRACE &&
                ValidateTrace(FromProto(reset)).ok();
      }
      if (found) break;
    }
    if (!found) {
      failures.push_back(absl::StrFormat(
          "bound: no case has trace %s at %s %s", bound.field, bound.which,
          bound.accepted ? "accepted" : "refused"));
    }
  }
}

// spec/vectors.md#bounds: every default decides some case. A policy
// parameter's in a case flagged defaults.decides, a trace field's in a case
// flagged trace.defaults: another value changes that case's victims.
void CheckDefaults(const vectors::VectorSet& set, std::vector<std::string>& failures) {
  std::set<std::pair<std::string, std::string>> parameters;  // (policy, name)
  std::set<std::string> fields;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const auto& flags = loaded.vector->flags();
    const bool defaults =
        std::find(flags.begin(), flags.end(), "defaults.decides") != flags.end();
    const bool trace =
        std::find(flags.begin(), flags.end(), "trace.defaults") != flags.end();
    if (!defaults && !trace) continue;
    const CaseContext c = ContextOf(loaded);
    if (defaults) {
      for (const std::string& name : DecidedDefaults(c)) {
        parameters.insert({c.config.name, name});
      }
    }
    if (trace && c.scenario.trace.has_value()) {
      for (const std::string& name : DecidedTraceDefaults(c)) fields.insert(name);
    }
  }
  for (const PolicyInfo& info : RegisteredPolicies()) {
    for (const ParameterInfo& p : info.parameters) {
      if (p.default_value.has_value() && parameters.count({info.name, p.name}) == 0) {
        failures.push_back(absl::StrFormat(
            "default: %s's %s decides no defaults.decides case", info.name, p.name));
      }
    }
  }
  for (const std::string& name : vectors::TraceFieldNames()) {
    if (name != "steps" && fields.count(name) == 0) {  // steps has no default
      failures.push_back("default: trace field " + name +
                         " decides no trace.defaults case");
    }
  }
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
