#include "tools/census/margins.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "cc/precision.h"
#include "cc/registry.h"
#include "tools/census/census_internal.h"

namespace kvspec {
namespace audit {

std::optional<double> DecisionMargin(const RankingObservation& ranking) {
  const std::optional<Decision> decision = DecisionOf(ranking);
  if (!decision.has_value()) return std::nullopt;
  return RelativeMargin(*decision);
}

int MarginBucket(double margin) {
  if (margin == 0.0) return 0;
  if (margin <= std::ldexp(1.0, -52)) return 1;
  if (margin <= std::ldexp(1.0, -23)) return 2;
  if (margin <= std::ldexp(1.0, -10)) return 3;
  if (margin <= std::ldexp(1.0, -7)) return 4;
  return 5;
}

MarginReport MeasureMargins(const vectors::VectorSet& set) {
  MarginReport report;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const internal::CaseContext c = internal::ContextOf(loaded);
    const std::string& policy = c.config.name;
    if (policy != "h2o" && policy != "tova" && policy != "snapkv") continue;
    ++report.cases;
    MarginCounts& mine = report.by_policy[policy];
    double smallest = std::numeric_limits<double>::infinity();  // above 0
    bool tie = false;
    RunOptions options;
    options.on_ranking = [&](int64_t step, const RankingObservation& o) {
      for (MarginCounts* counts : {&mine, &report.all}) {
        if (o.joint) ++counts->joint_rankings;
        const std::optional<double> margin = DecisionMargin(o);
        if (!margin.has_value()) {
          const bool any = std::any_of(o.ranking.begin(), o.ranking.end(),
                                       [](const RankedPair& p) { return p.evicted; });
          if (any) ++counts->no_survivor;
          continue;
        }
        ++counts->decisions[MarginBucket(*margin)];
        if (counts != &mine) continue;
        if (*margin > 0.0 && MarginBucket(*margin) <= 2) {
          report.narrow.push_back({loaded.vector->id(), step, o.set, *margin});
        }
        if (*margin == 0.0) {
          tie = true;
        } else {
          smallest = std::min(smallest, *margin);
        }
      }
    };
    RunScenario(c.config, c.scenario, options);
    for (MarginCounts* counts : {&mine, &report.all}) {
      counts->cases_with_tie += tie ? 1 : 0;
      if (std::isinf(smallest)) {
        ++counts->cases_without;
      } else {
        ++counts->cases[MarginBucket(smallest)];
      }
    }
  }
  return report;
}

std::string MarginTable(const MarginReport& report) {
  const char* names[kMarginBuckets] = {"0 (tie)", "<= 2^-52", "<= 2^-23", "<= 2^-10",
                                       "<= 2^-7", "> 2^-7"};
  std::string out = absl::StrFormat(
      "Decision margins of the %d score-based cases (tools/census/margins.h):\n\n"
      "| policy | counted | %s | %s | %s | %s | %s | %s | of them joint | "
      "no survivor |\n| --- | --- |%s ---: | ---: |\n",
      report.cases, names[0], names[1], names[2], names[3], names[4], names[5],
      std::string(" ---: |") + " ---: | ---: | ---: | ---: | ---: |");
  auto rows = [&](const std::string& name, const MarginCounts& c) {
    std::string line = absl::StrFormat("| %s | decisions |", name);
    for (int b = 0; b < kMarginBuckets; ++b) line += absl::StrFormat(" %d |", c.decisions[b]);
    line += absl::StrFormat(" %d | %d |\n", c.joint_rankings, c.no_survivor);
    line += absl::StrFormat("| %s | cases by their smallest margin above 0 | %d with a tie |",
                            name, c.cases_with_tie);
    for (int b = 1; b < kMarginBuckets; ++b) line += absl::StrFormat(" %d |", c.cases[b]);
    line += absl::StrFormat(" | %d without one |\n", c.cases_without);
    return line;
  };
  for (const auto& [name, counts] : report.by_policy) out += rows(name, counts);
  out += rows("all", report.all);
  out += absl::StrFormat("\n%d decisions with 0 < margin <= 2^-23:\n", report.narrow.size());
  for (const NarrowDecision& d : report.narrow) {
    out += absl::StrFormat("- %s step %d set %d: margin %.3g\n", d.case_id, d.step, d.set,
                           d.margin);
  }
  return out;
}

}  // namespace audit
}  // namespace kvspec
