// Features (spec/features.md): the closed list of what a port may implement
// beyond a policy, what each vector case needs, and the spec version in which
// each case's expected outcome was last set. The generator writes both into
// every case (Case.features, Case.since); the runner sends a port only the
// cases it can run; the census checks every case's list against a port that
// ignores the wire fields of every feature the case does not declare.
#ifndef KVSPEC_TOOLS_VECTORS_FEATURES_H_
#define KVSPEC_TOOLS_VECTORS_FEATURES_H_

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "spec/kvspec.pb.h"

namespace kvspec {
namespace vectors {

struct FeatureInfo {
  std::string name;     // "decode", "trace", ...
  std::string since;    // the spec version that introduced it
  std::string section;  // the spec section that defines it, e.g. "heads.md"
  std::string summary;  // one line: what it covers
};

// spec/features.md#the-list, in its order.
const std::vector<FeatureInfo>& Features();
const FeatureInfo* FindFeature(const std::string& name);

// A spec version, MAJOR.MINOR.PATCH of decimal digits (spec/README.md#versioning).
using Version = std::array<int, 3>;
// nullopt unless `text` is exactly three dot-separated decimal numbers.
std::optional<Version> ParseVersion(const std::string& text);
// "-1" for a < b, 0, 1. Both must parse (checked by the caller).
int CompareVersions(const std::string& a, const std::string& b);

// The features a port that declares no features implements: those whose
// `since` is at or before `spec_version` (spec/features.md#ports). Empty if
// the version does not parse.
std::set<std::string> FeaturesOfVersion(const std::string& spec_version);

// What a parameter of PolicyConfig belongs to: the feature, and the spec
// version that introduced the parameter. nullptr for a name no version of
// the spec has (a refusal case's bogus name).
struct ParameterInfo {
  std::string name, feature, since;
};
const ParameterInfo* FindParameter(const std::string& name);
const std::vector<ParameterInfo>& Parameters();

// The spec version that introduced a registry policy ("0.1.0" for a name the
// registry does not have: refusing it is a 0.1.0 rule).
std::string PolicySince(const std::string& policy);

// The features a case needs, from its policy configuration and scenario as
// they are on the wire (spec/features.md#what-a-case-needs), in list order.
std::vector<std::string> CaseFeatures(const v1::PolicyConfig& policy,
                                      const v1::Scenario& scenario);

// The spec version in which a case's expected outcome was last set: the
// latest of its policy's, its parameters', its features' and its flags'
// versions (spec/features.md#since); `flag_versions` holds each flag's.
std::string CaseSince(const v1::PolicyConfig& policy, const v1::Scenario& scenario,
                      const std::vector<std::string>& flag_versions);

// What a port that implements only `features` and spec `spec_version` makes
// of a request (spec/features.md#a-port-without-a-feature): the scenario
// without the wire fields of the features it lacks, as a protobuf library
// drops fields it does not know. "trace-heads" has no field of its own.
v1::Scenario StripScenario(const v1::Scenario& scenario,
                           const std::set<std::string>& features);
// The first parameter of `policy` such a port would not know (its feature
// missing, or introduced after `spec_version`), or "" if it knows them all.
std::string UnknownParameter(const v1::PolicyConfig& policy,
                             const std::set<std::string>& features,
                             const std::string& spec_version);

}  // namespace vectors
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_VECTORS_FEATURES_H_
