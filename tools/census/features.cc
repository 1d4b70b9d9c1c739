// Features and since (spec/features.md): each case declares the features
// it uses and a `since` no earlier than its rules, and a port of spec
// `since` with only the declared features gets the expected log.
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/version.h"
#include "tools/census/census_internal.h"
#include "tools/vectors/features.h"
#include "tools/vectors/flags.h"

namespace kvspec {
namespace audit {
namespace internal {

// spec/features.md: each case declares at least the features it uses, in
// the list's order, and a `since` no earlier than its policy's, features',
// parameters' and flags' versions; and a port of spec `since` that has only
// the declared features (the fields of the others dropped, their
// parameters refused) gets the expected log.
void CheckFeatures(const vectors::VectorSet& set, std::vector<std::string>& failures) {
  for (const vectors::LoadedCase& loaded : set.cases) {
    const v1::Case& vector = *loaded.vector;
    const std::string& id = vector.id();
    const std::set<std::string> declared(vector.features().begin(),
                                         vector.features().end());
    const std::vector<std::string> needed =
        vectors::CaseFeatures(vector.policy(), *loaded.scenario);
    for (const std::string& feature : needed) {
      if (declared.count(feature) == 0) {
        failures.push_back(absl::StrFormat(
            "case %s: uses feature %s but does not declare it", id, feature));
      }
    }
    for (const std::string& feature : vector.features()) {
      if (vectors::FindFeature(feature) == nullptr) {
        failures.push_back(absl::StrFormat("case %s: unknown feature %s", id, feature));
      }
    }
    std::vector<std::string> flag_versions;
    for (const std::string& flag : vector.flags()) {
      if (const vectors::FlagInfo* info = vectors::FindFlag(flag)) {
        flag_versions.push_back(info->since);
      }
    }
    const std::string least = vectors::CaseSince(vector.policy(), *loaded.scenario,
                                                 flag_versions);
    if (!vectors::ParseVersion(vector.since()).has_value() ||
        vectors::CompareVersions(vector.since(), least) < 0 ||
        vectors::CompareVersions(vector.since(), kSpecVersion) > 0) {
      failures.push_back(absl::StrFormat(
          "case %s: since '%s', but its policy, features, parameters and flags "
          "are of %s (and the spec is %s)", id, vector.since(), least, kSpecVersion));
    }
    // The port that has exactly what the case declares.
    v1::EvictionLog got;
    const std::string unknown =
        vectors::UnknownParameter(vector.policy(), declared, vector.since());
    if (!unknown.empty()) {
      got.mutable_rejection()->set_category(v1::INVALID_PARAMETER);
      got.mutable_rejection()->set_step(-1);
    } else {
      got = ToProto(RunScenario(FromProto(vector.policy()),
                                FromProto(vectors::StripScenario(*loaded.scenario, declared)),
                                RunOptions{/*record_cut=*/true}));
    }
    v1::EvictionLog expected = vector.expected();
    got.mutable_rejection()->clear_message();
    expected.mutable_rejection()->clear_message();
    if (!got.has_rejection() || got.rejection().category() == 0) got.clear_rejection();
    if (!expected.has_rejection() || expected.rejection().category() == 0) {
      expected.clear_rejection();
    }
    if (got.SerializeAsString() != expected.SerializeAsString()) {
      failures.push_back(absl::StrFormat(
          "case %s: a port of spec %s with only features %s gets another log: "
          "the case uses more than it declares",
          id, vector.since(), absl::StrJoin(vector.features(), ", ")));
    }
  }
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
