#include "tools/census/precision.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "absl/strings/str_format.h"
#include "cc/harness.h"
#include "tools/census/census_internal.h"
#include "tools/vectors/flags.h"

namespace kvspec {
namespace audit {

namespace {

int MarginBucketOf(double margin) {
  if (margin == 0.0) return 0;
  if (margin <= 0x1p-20) return 1;
  if (margin <= 0x1p-10) return 2;
  if (margin <= 0x1p-6) return 3;
  if (margin <= 0x1p-3) return 4;
  return 5;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

PrecisionCensus MeasurePrecision(
    const vectors::VectorSet& set,
    const std::set<std::pair<std::string, std::string>>& decided) {
  PrecisionCensus census;
  for (const vectors::LoadedCase& loaded : set.cases) {
    const internal::CaseContext c = internal::ContextOf(loaded);
    const std::string& id = loaded.vector->id();
    ++census.cases;
    std::vector<Decision> decisions;
    RunOptions options;
    options.on_ranking = [&decisions](int64_t, const RankingObservation& o) {
      const std::optional<Decision> d = DecisionOf(o);
      if (d.has_value()) decisions.push_back(*d);
    };
    RunScenario(c.config, c.scenario, options);
    // spec/vectors.md#precision: the stored fields are the recomputed ones.
    const uint64_t terms = ScoreTerms(c.config, c.scenario);
    if (loaded.vector->score_terms() != terms) {
      census.failures.push_back(absl::StrFormat(
          "case %s: score_terms %d, recomputed %d", id, loaded.vector->score_terms(), terms));
    }
    std::optional<double> smallest;
    for (const Decision& d : decisions) {
      const double m = RelativeMargin(d);
      if (!smallest.has_value() || m < *smallest) smallest = m;
      ++census.margins[MarginBucketOf(m)];
    }
    if (loaded.vector->has_min_margin() != smallest.has_value() ||
        (smallest.has_value() && !SameBits(loaded.vector->min_margin(), *smallest))) {
      census.failures.push_back(absl::StrFormat(
          "case %s: min_margin %s, recomputed %s", id,
          loaded.vector->has_min_margin() ? absl::StrFormat("%.17g", loaded.vector->min_margin())
                                          : "absent",
          smallest.has_value() ? absl::StrFormat("%.17g", *smallest) : "absent"));
    }
    std::array<bool, kCensusPrecisions.size()> robust{};
    for (size_t p = 0; p < kCensusPrecisions.size(); ++p) {
      const ErrorBound bound = JudgingBound(kCensusPrecisions[p], terms);
      // spec/arithmetic.md#robust-decisions: exact, or every decision apart.
      robust[p] = ExactAt(kCensusPrecisions[p], c.config, c.scenario) ||
                  (InRange(kCensusPrecisions[p], bound, c.config, c.scenario) &&
                   std::all_of(decisions.begin(), decisions.end(), [&](const Decision& d) {
                    return Separated(bound, d.victim, d.survivor);
                  }));
      census.robust_cases[p] += robust[p] ? 1 : 0;
    }
    for (const std::string& flag : loaded.vector->flags()) {
      if (decided.count({id, flag}) == 0) continue;
      ++census.decided[flag];
      auto& counts = census.robust[flag];
      for (size_t p = 0; p < kCensusPrecisions.size(); ++p) counts[p] += robust[p] ? 1 : 0;
    }
  }
  for (const auto& [flag, n] : census.decided) {
    const bool binary64_only =
        std::any_of(std::begin(kBinary64Rules), std::end(kBinary64Rules),
                    [&flag = flag](const Binary64Rule& r) { return flag == r.flag; });
    if (census.robust[flag][kRequiredPrecision] == 0 && !binary64_only) {
      census.failures.push_back(absl::StrFormat(
          "flag %s: none of the %d cases it decides is robust at %s "
          "(spec/vectors.md#precision)",
          flag, n, PortPrecisionName(kCensusPrecisions[kRequiredPrecision])));
    }
  }
  return census;
}

std::string PrecisionTable(const PrecisionCensus& census) {
  std::string out = "| flag | decided |";
  for (const PortPrecision& p : kCensusPrecisions) {
    out += absl::StrFormat(" robust at %s |", PortPrecisionName(p));
  }
  out += "\n| --- | ---: |";
  for (size_t p = 0; p < kCensusPrecisions.size(); ++p) out += " ---: |";
  out += "\n";
  for (const auto& [flag, n] : census.decided) {
    out += absl::StrFormat("| `%s` | %d |", flag, n);
    const bool binary64_only =
        std::any_of(std::begin(kBinary64Rules), std::end(kBinary64Rules),
                    [&flag = flag](const Binary64Rule& r) { return flag == r.flag; });
    const auto& counts = census.robust.at(flag);
    for (size_t p = 0; p < kCensusPrecisions.size(); ++p) {
      out += counts[p] > 0 ? absl::StrFormat(" %d |", counts[p])
                           : (binary64_only ? " 0 (binary64 only) |" : " **0** |");
    }
    out += "\n";
  }
  out += absl::StrFormat("| all cases | %d |", census.cases);
  for (size_t p = 0; p < kCensusPrecisions.size(); ++p) {
    out += absl::StrFormat(" %d |", census.robust_cases[p]);
  }
  out += absl::StrFormat(
      "\n\nScore-based decisions by relative margin: %d ties (0), %d <= 2^-20, "
      "%d <= 2^-10, %d <= 2^-6, %d <= 2^-3, %d above 2^-3\n",
      census.margins[0], census.margins[1], census.margins[2], census.margins[3],
      census.margins[4], census.margins[5]);
  return out;
}

}  // namespace audit
}  // namespace kvspec
