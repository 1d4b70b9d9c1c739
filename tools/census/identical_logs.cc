// Two cases with one log (spec/vectors.md#flags; issue 19): two accepted
// cases whose expected logs are byte-identical and whose configurations
// differ only in parameters that feed a flag's rule do not both claim it.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cc/harness.h"
#include "cc/proto_convert.h"
#include "cc/registry.h"
#include "tools/census/census_internal.h"
#include "tools/census/mutants.h"

namespace kvspec {
namespace audit {
namespace internal {
namespace {

// The flags whose rule a parameter feeds: a case claiming one of them claims
// that the parameter's value, through that rule, shows in its log.
const std::map<std::string, std::set<std::string>>& FlagsFedBy() {
  static const auto* fed = new std::map<std::string, std::set<std::string>>{
      {"safeguard_permille",
       {"heads.safeguard", "heads.floor-at-least-one",
        "heads.floor-zero-when-safeguard-zero", "heads.floor-rounds-down"}},
      {"adaptive", {"heads.adaptive"}},
      {"granularity", {"heads.granularity"}},
      {"aggregation", {"heads.aggregation", "heads.mean-rounding"}},
      {"recent_window", {"recent-window.protected"}},
      {"sinks", {"sinks.protected"}},
      {"obs_window", {"snapkv.ring-wrap"}},
      {"pool_kernel",
       {"snapkv.pool-defends", "snapkv.pool-clamp", "snapkv.pool-protected-neighbour"}},
      {"prefill_only", {"prefill.only"}},
      {"ratio_ppm", {"prefill.ratio", "prefill.ratio-binary64"}},
      {"normalize", {"prefill.normalize"}},
      {"protect_newest", {"prefill.protect-newest"}},
      {"window_budget", {"prefill.window-budget"}},
      {"pooling", {"prefill.pooling"}},
      {"window_reduce", {"prefill.window-reduce"}},
  };
  return *fed;
}

}  // namespace

// Two accepted cases on the same scenario, same policy and seed, whose
// configurations differ only in parameters that feed flag F's rule, and
// whose expected logs are byte-identical, must not both claim F (unless F is
// a neighbour.* flag, which claims an equality): the log cannot tell their
// two inputs to F's rule apart, so at most one of them shows F deciding
// anything the other does not; the other's claim is the one that fooled the
// census before (h2o/adakv/floor-raised-to-one and safeguard-zero-empties,
// both heads.safeguard, one log).
void CheckIdenticalLogs(const vectors::VectorSet& set,
                        std::vector<std::string>& failures) {
  std::map<std::pair<std::string, std::string>, std::vector<const vectors::LoadedCase*>>
      by_scenario;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const v1::EvictionLog& log = loaded.vector->expected();
    if (log.has_rejection() && log.rejection().category() != 0) continue;
    by_scenario[{loaded.file, loaded.vector->scenario_id()}].push_back(&loaded);
  }
  for (const auto& [key, cases] : by_scenario) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const v1::Case& a = *cases[i]->vector;
      const std::string a_log = a.expected().SerializeAsString();
      for (size_t j = i + 1; j < cases.size(); ++j) {
        const v1::Case& b = *cases[j]->vector;
        const PolicyConfig ca = FromProto(a.policy()), cb = FromProto(b.policy());
        if (ca.name != cb.name || ca.seed != cb.seed ||
            b.expected().SerializeAsString() != a_log) {
          continue;
        }
        std::set<std::string> names;
        for (const Parameter& p : ca.parameters) names.insert(p.name);
        for (const Parameter& p : cb.parameters) names.insert(p.name);
        std::vector<std::string> differing;
        for (const std::string& name : names) {
          if (EffectiveParameter(ca, name, -1) != EffectiveParameter(cb, name, -1)) {
            differing.push_back(name);
          }
        }
        if (differing.empty()) continue;
        for (const std::string& flag : a.flags()) {
          if (flag.rfind("neighbour.", 0) == 0 ||
              std::find(b.flags().begin(), b.flags().end(), flag) == b.flags().end()) {
            continue;
          }
          bool all_feed = true;
          for (const std::string& name : differing) {
            const auto it = FlagsFedBy().find(name);
            all_feed = all_feed && it != FlagsFedBy().end() && it->second.count(flag) > 0;
          }
          if (!all_feed) continue;
          // A rule that maps both configurations to the same input (the
          // floor flags: the same floor) requires the identical logs: each
          // case then pins its own value's mapping, as a neighbour flag
          // pins an equality (h2o/adakv/floor-one-binds-at-safeguard-one).
          const bool floor_flag =
              flag == "heads.safeguard" || flag.rfind("heads.floor-", 0) == 0;
          if (floor_flag) {
            const SharedBudget fa = SharedBudgetOf(ca, 2), fb = SharedBudgetOf(cb, 2);
            if (fa.on && fb.on && fa.floor == fb.floor) continue;
          }
          failures.push_back(absl::StrFormat(
              "cases %s and %s: both claim %s, but their expected logs are "
              "byte-identical and their configurations differ only in %s, "
              "which feeds that rule: at most one may claim it",
              a.id(), b.id(), flag, absl::StrJoin(differing, ", ")));
        }
      }
    }
  }
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
