// kvspec._reference: the C++ reference (cc/) as a Python extension module,
// by pybind11. Everything crosses as serialized kvspec.v1 messages
// (spec/kvspec.proto), so the Python side (kvspec/__init__.py) builds and
// reads them with the generated protobuf classes and nothing of the
// reference is reimplemented in Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "cc/config.h"
#include "cc/errors.h"
#include "cc/harness.h"
#include "cc/heads.h"
#include "cc/presets.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "cc/version.h"
#include "spec/kvspec.pb.h"

namespace py = pybind11;

namespace kvspec {
namespace {

template <typename Message>
Message Parse(const py::bytes& bytes, const char* what) {
  Message message;
  if (!message.ParseFromString(std::string(bytes))) {
    throw py::value_error(std::string("not a serialized ") + what);
  }
  return message;
}

// Runs a serialized kvspec.v1.PolicyConfig over a serialized
// kvspec.v1.Scenario, as the generator runs a vector case
// (tools/vectors/generate.cc): the serialized kvspec.v1.EvictionLog, with
// each evicting step's cut when `record_cut`.
py::bytes RunSerialized(const py::bytes& config, const py::bytes& scenario, bool record_cut) {
  const PolicyConfig policy = FromProto(Parse<v1::PolicyConfig>(config, "kvspec.v1.PolicyConfig"));
  const Scenario steps = FromProto(Parse<v1::Scenario>(scenario, "kvspec.v1.Scenario"));
  RunOptions options;
  options.record_cut = record_cut;
  RunResult result;
  {
    py::gil_scoped_release release;
    result = RunScenario(policy, steps, options);
  }
  std::string out;
  ToProto(result).SerializeToString(&out);
  return py::bytes(out);
}

// The budget a ratio gives a kept set at a prefill step that leaves `kept`
// positions after admission (cc/registry.h PrefillRatioBudget,
// spec/prefill.md#budgets-from-a-ratio); None when the configuration is
// refused or takes no ratio, or its ratio_ppm is 0.
py::object RatioBudget(const py::bytes& config, uint64_t kept) {
  const PolicyConfig policy = FromProto(Parse<v1::PolicyConfig>(config, "kvspec.v1.PolicyConfig"));
  const std::optional<size_t> budget = PrefillRatioBudget(policy, kept);
  return budget.has_value() ? py::object(py::int_(*budget)) : py::object(py::none());
}

// A serialized PolicyConfig with the preset `name` expanded
// (spec/prefill.md#presets); raises ValueError with the reference's
// message for an unknown policy or preset.
py::bytes ExpandSerialized(const py::bytes& config, const std::string& name) {
  absl::StatusOr<PolicyConfig> expanded =
      ExpandPreset(FromProto(Parse<v1::PolicyConfig>(config, "kvspec.v1.PolicyConfig")), name);
  if (!expanded.ok()) throw py::value_error(std::string(expanded.status().message()));
  std::string out;
  ToProto(*expanded).SerializeToString(&out);
  return py::bytes(out);
}

// (name, summary, card, [(parameter, default or None, min, max, meaning)]).
using ParameterRow = std::tuple<std::string, py::object, int64_t, int64_t, std::string>;
std::vector<std::tuple<std::string, std::string, std::string, std::vector<ParameterRow>>>
Policies() {
  std::vector<std::tuple<std::string, std::string, std::string, std::vector<ParameterRow>>> out;
  for (const PolicyInfo& info : RegisteredPolicies()) {
    std::vector<ParameterRow> parameters;
    for (const ParameterInfo& p : info.parameters) {
      parameters.emplace_back(p.name,
                              p.default_value.has_value() ? py::object(py::int_(*p.default_value))
                                                          : py::object(py::none()),
                              p.min, p.max, p.meaning);
    }
    out.emplace_back(info.name, info.summary, info.card, std::move(parameters));
  }
  return out;
}

// (policy, preset name, the code it follows).
std::vector<std::tuple<std::string, std::string, std::string>> PresetList() {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const Preset& preset : Presets()) out.emplace_back(preset.policy, preset.name, preset.follows);
  return out;
}

}  // namespace
}  // namespace kvspec

PYBIND11_MODULE(_reference, m) {
  m.doc() = "kvspec's C++ reference (cc/), serialized kvspec.v1 messages in and out";
  m.attr("spec_version") = kvspec::kSpecVersion;
  m.def("run", &kvspec::RunSerialized, py::arg("config"), py::arg("scenario"),
        py::arg("record_cut") = true,
        "Runs a serialized PolicyConfig over a serialized Scenario; returns the "
        "serialized EvictionLog.");
  m.def("expand_preset", &kvspec::ExpandSerialized, py::arg("config"), py::arg("preset"),
        "A serialized PolicyConfig with the named preset expanded.");
  m.def("policies", &kvspec::Policies, "The registry: every policy and its parameters.");
  m.def("ratio_budget", &kvspec::RatioBudget, py::arg("config"), py::arg("kept"),
        "The budget a ratio gives a set keeping `kept` after a prefill step's "
        "admission, or None without a ratio.");
  m.def("head_parameter_value",
        [](const std::string& parameter, const std::string& word) -> py::object {
          const std::optional<int64_t> value = kvspec::HeadParameterValue(parameter, word);
          return value.has_value() ? py::object(py::int_(*value)) : py::object(py::none());
        },
        "The value a word stands for in granularity or aggregation, or None.");
  m.def("presets", &kvspec::PresetList, "Every preset: (policy, name, follows).");
}
