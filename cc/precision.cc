#include "cc/precision.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cc/registry.h"

namespace kvspec {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// spec/arithmetic.md#the-bound: the bound is itself computed in binary64;
// widening it by this factor covers the roundings of its own formula.
constexpr double kWiden = 1.0 + 0x1p-20;

}  // namespace

std::string PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kBinary64: return "binary64";
    case Precision::kBinary32: return "binary32";
    case Precision::kBfloat16: return "bfloat16";
    case Precision::kFloat16: return "float16";
  }
  return "binary64";
}

std::optional<Precision> ParsePrecision(const std::string& name) {
  for (Precision p : {Precision::kBinary64, Precision::kBinary32,
                      Precision::kBfloat16, Precision::kFloat16}) {
    if (PrecisionName(p) == name) return p;
  }
  return std::nullopt;
}

double UnitRoundoff(Precision precision) {
  switch (precision) {
    case Precision::kBinary64: return 0x1p-53;
    case Precision::kBinary32: return 0x1p-24;
    case Precision::kBfloat16: return 0x1p-8;
    case Precision::kFloat16: return 0x1p-11;
  }
  return 0x1p-53;
}

double SubnormalError(Precision precision) {
  switch (precision) {
    case Precision::kBinary64: return 0x1p-1074;  // 2^-1075 is not a binary64
    case Precision::kBinary32: return 0x1p-150;
    case Precision::kBfloat16: return 0x1p-134;
    case Precision::kFloat16: return 0x1p-25;
  }
  return 0x1p-1074;
}

std::string PortPrecisionName(const PortPrecision& precision) {
  if (precision.score == precision.accumulate) return PrecisionName(precision.score);
  return PrecisionName(precision.score) + " (accumulate " +
         PrecisionName(precision.accumulate) + ")";
}

uint64_t ScoreTerms(const PolicyConfig& config, const Scenario& scenario) {
  const uint64_t heads = scenario.query_heads.value_or(1);
  uint64_t rows = 0;
  if (scenario.trace.has_value()) {
    // spec/trace.md: one decode row per query head and step.
    rows = uint64_t{scenario.trace->steps} * heads;
  }
  for (const ScenarioStep& step : scenario.steps) {
    if (!step.totals.empty()) {
      rows += step.totals.size();
    } else if (!step.queries.empty()) {
      rows += step.queries.size();
    } else if (step.attention.has_value()) {
      rows += 1;
    } else {
      rows += step.heads.size();
    }
  }
  // K and B: the pooling kernel and the block, given or by default, of a
  // configuration the policy accepts (a refused one ranks nothing).
  uint64_t factor = 1;
  if (MakePolicy(config).ok()) {
    for (const PolicyInfo& info : RegisteredPolicies()) {
      if (info.name != config.name) continue;
      for (const ParameterInfo& p : info.parameters) {
        if (p.name == "pool_kernel" || p.name == "block") {
          factor *= static_cast<uint64_t>(std::max<int64_t>(1, EffectiveParameter(config, p.name)));
        }
      }
    }
  }
  return std::max<uint64_t>(1, rows * factor);
}

namespace {

// The significand bits t, and the finest grid 2^-g whose multiples the
// format holds (its smallest subnormal).
int SignificandBits(Precision precision) {
  switch (precision) {
    case Precision::kBinary64: return 53;
    case Precision::kBinary32: return 24;
    case Precision::kBfloat16: return 8;
    case Precision::kFloat16: return 11;
  }
  return 53;
}
int FinestGrid(Precision precision) {
  switch (precision) {
    case Precision::kBinary64: return 1074;
    case Precision::kBinary32: return 149;
    case Precision::kBfloat16: return 133;
    case Precision::kFloat16: return 24;
  }
  return 1074;
}

// The least g >= 0 with x * 2^g an integer. Requires: x finite, >= 0.
int FractionBits(double x) {
  if (x == 0.0) return 0;
  int e = 0;
  const double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  uint64_t bits = static_cast<uint64_t>(std::ldexp(m, 53));
  int significant = 53;
  while ((bits & 1) == 0) {
    bits >>= 1;
    --significant;
  }
  return std::max(0, significant - e);
}

// Every weight and column total of the scenario's explicit steps, widened.
template <typename F>
void ForEachInput(const Scenario& scenario, F f) {
  for (const ScenarioStep& step : scenario.steps) {
    if (step.attention.has_value()) {
      for (float w : *step.attention) f(w);
    }
    for (const auto* rows : {&step.heads, &step.queries}) {
      for (const std::vector<float>& row : *rows) {
        for (float w : row) f(w);
      }
    }
    for (const std::vector<double>& list : step.totals) {
      for (double w : list) f(w);
    }
  }
}

// spec/arithmetic.md#exact-cases: the parameter values that divide a sum.
bool Divides(const PolicyConfig& config, const Scenario& scenario) {
  const PolicyInfo* info = nullptr;
  for (const PolicyInfo& p : RegisteredPolicies()) {
    if (p.name == config.name) info = &p;
  }
  if (info == nullptr) return false;
  const auto value = [&](const char* name) -> std::optional<int64_t> {
    for (const ParameterInfo& p : info->parameters) {
      if (p.name == name) return EffectiveParameter(config, name);
    }
    return std::nullopt;
  };
  const auto is = [&](const char* name, int64_t v) { return value(name) == v; };
  const bool several_heads = scenario.query_heads.value_or(1) > 1;
  return is("normalize", 1) || is("window_reduce", 1) ||
         (is("pooling", 1) && value("pool_kernel").value_or(1) > 1) ||
         is("norm_sum", 1) ||
         (is("block_score", 1) && value("block").value_or(1) > 1) ||
         (is("aggregation", 0) && several_heads && !is("granularity", 2));
}

}  // namespace

bool ExactAt(const PortPrecision& precision, const PolicyConfig& config,
             const Scenario& scenario) {
  if (scenario.trace.has_value()) return false;
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (!policy.ok()) return true;
  // spec/arithmetic.md#range: scores from keys (a norm of signed entries)
  // are outside the bound's model; none is taken to be exact.
  if ((*policy)->reads_keys()) return false;
  if (Divides(config, scenario)) return false;
  const int t = std::min(SignificandBits(precision.score),
                         SignificandBits(precision.accumulate));
  const int finest = std::min(FinestGrid(precision.score), FinestGrid(precision.accumulate));
  int g = 0;
  double total = 0.0;
  bool valid = true;  // a weight the harness refuses makes nothing exact
  ForEachInput(scenario, [&](double x) {
    if (!(std::isfinite(x) && x >= 0.0)) {
      valid = false;
      return;
    }
    g = std::max(g, FractionBits(x));
    total += x;
  });
  if (!valid || !std::isfinite(total) || g > finest) return false;
  return std::ldexp(total, g) < std::ldexp(1.0, t);
}

double WeightCeiling(const Scenario& scenario) {
  const double heads = scenario.query_heads.value_or(1);
  double total = 0.0;
  if (scenario.trace.has_value()) total = 8.0 * scenario.trace->steps * heads;
  ForEachInput(scenario, [&total](double x) {
    if (std::isfinite(x) && x > 0.0) total += x;
  });
  return total;
}

double LargestFinite(const PortPrecision& precision) {
  const auto largest = [](Precision p) {
    switch (p) {
      case Precision::kBinary64: return std::numeric_limits<double>::max();
      case Precision::kBinary32: return static_cast<double>(std::numeric_limits<float>::max());
      case Precision::kBfloat16: return 0x1.fep127;
      case Precision::kFloat16: return 65504.0;
    }
    return std::numeric_limits<double>::max();
  };
  return std::min(largest(precision.score), largest(precision.accumulate));
}

bool InRange(const PortPrecision& precision, const ErrorBound& bound,
             const PolicyConfig& config, const Scenario& scenario) {
  // spec/arithmetic.md#range: a policy scoring from keys is in range at
  // binary64 only.
  absl::StatusOr<std::unique_ptr<Policy>> policy = MakePolicy(config);
  if (policy.ok() && (*policy)->reads_keys() &&
      !(precision.score == Precision::kBinary64 &&
        precision.accumulate == Precision::kBinary64)) {
    return false;
  }
  return Upper(bound, WeightCeiling(scenario)) < LargestFinite(precision);
}

ErrorBound ScoreBound(const PortPrecision& precision, uint64_t terms) {
  ErrorBound bound;
  // spec/arithmetic.md#the-bound: every term passes through at most
  // L = 2T + 3 roundings at the accumulate precision, after one rounding
  // to the score precision (none for binary64, which holds every input).
  const double length = 2.0 * static_cast<double>(terms) + 3.0;
  const double u = UnitRoundoff(precision.accumulate);
  const double input = precision.score == Precision::kBinary64
                           ? 0.0
                           : UnitRoundoff(precision.score);
  const double lu = length * u;
  if (!(lu < 0.5)) {
    bound.finite = false;
    bound.relative = kInfinity;
    bound.absolute = kInfinity;
    return bound;
  }
  const double gamma = lu / (1.0 - lu);
  bound.relative = (input + gamma + input * gamma) * kWiden;
  const double eta = std::max(SubnormalError(precision.score),
                              SubnormalError(precision.accumulate));
  bound.absolute = 2.0 * (length + 1.0) * eta * kWiden;
  return bound;
}

ErrorBound JudgingBound(const PortPrecision& precision, uint64_t terms) {
  const ErrorBound port = ScoreBound(precision, terms);
  if (!port.finite) return port;
  const ErrorBound reference = ScoreBound(PortPrecision{}, terms);
  ErrorBound bound;
  // |c - r| <= |c - s| + |s - r| with s the exact score and
  // s <= r / (1 - e_ref) + eta_ref.
  bound.relative =
      (port.relative + reference.relative) / (1.0 - reference.relative) * kWiden;
  bound.absolute = (port.absolute + reference.absolute) * 2.0;
  return bound;
}

double Upper(const ErrorBound& bound, double s) {
  if (!bound.finite) return kInfinity;
  return s + (bound.relative * std::fabs(s) + bound.absolute);
}

double Lower(const ErrorBound& bound, double s) {
  if (!bound.finite) return -kInfinity;
  if (std::isinf(s)) return s;
  return s - (bound.relative * std::fabs(s) + bound.absolute);
}

bool Separated(const ErrorBound& bound, double victim, double survivor) {
  return Lower(bound, survivor) > Upper(bound, victim);
}

std::optional<Decision> DecisionOf(const RankingObservation& ranking) {
  const std::vector<RankedPair>& r = ranking.ranking;
  if (!ranking.joint) {
    // An own ranking evicts a prefix: the last victim, then the first survivor.
    size_t victims = 0;
    while (victims < r.size() && r[victims].evicted) ++victims;
    if (victims == 0 || victims == r.size()) return std::nullopt;
    return Decision{r[victims - 1].score, r[victims].score};
  }
  size_t last = r.size();
  std::vector<int64_t> counts(ranking.kept_before.begin(), ranking.kept_before.end());
  for (size_t i = 0; i < r.size(); ++i) {
    if (!r[i].evicted) continue;
    last = i;
    if (r[i].set < counts.size()) --counts[r[i].set];
  }
  if (last == r.size()) return std::nullopt;
  for (size_t i = last + 1; i < r.size(); ++i) {
    if (r[i].evicted || r[i].set >= counts.size()) continue;
    const int64_t count = counts[r[i].set] + (r[i].set == r[last].set ? 1 : 0);
    if (count > static_cast<int64_t>(ranking.floor)) {
      return Decision{r[last].score, r[i].score};
    }
  }
  return std::nullopt;
}

double RelativeMargin(const Decision& decision) {
  if (decision.survivor == decision.victim) return 0.0;
  if (std::isinf(decision.survivor)) return 1.0;
  // spec/arithmetic.md#decision-margins: (w - v) / max(|w|, |v|), which is
  // (w - v) / w for the non-negative scores of weights.
  return (decision.survivor - decision.victim) /
         std::max(std::fabs(decision.survivor), std::fabs(decision.victim));
}

}  // namespace kvspec
