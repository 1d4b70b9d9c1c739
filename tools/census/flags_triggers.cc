// The flag table (spec/vectors.md#flags), continued: the counterfactual
// checks of the trigger flags (spec/triggers.md). Decides (flags.cc) asks
// here after DecidesHeadsPrefillSpans.
//
// The counting rules (trigger.restart, out-of-turn, prefill-restarts,
// null-counts) are checked on the log's kept counts: the rule of
// spec/triggers.md#interval, recomputed here from the scenario, must give
// the expected kept count after every step, and the rule with one part
// changed must not. Kept counts depend on when a step fires and not on
// which positions go, so this holds for every policy of one kept set.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/census/census_internal.h"
#include "tools/census/mutants.h"

namespace kvspec {
namespace audit {
namespace internal {
namespace {

// One part of spec/triggers.md#interval changed.
struct Counting {
  bool restart_when_empty = true;  // 3: the count returns to 0 at any firing
  bool out_of_turn = true;         // 2: a step admitting >= budget fires
  bool prefill_restarts = true;    // a prefill step sets the count to 0
  bool null_counts = true;         // 1: a null-attention step counts
};

// The kept count after each step of `c` under `counting` with `interval`;
// a prefill step's count is the log's (prefill.md decides it).
std::vector<uint64_t> KeptCounts(const CaseContext& c, const Counting& counting) {
  const uint64_t budget = static_cast<uint64_t>(EffectiveParameter(c.config, "budget", 512));
  const uint64_t interval =
      static_cast<uint64_t>(EffectiveParameter(c.config, "interval", 0));
  std::vector<uint64_t> kept_counts;
  uint64_t kept = 0;
  uint64_t count = 0;
  for (size_t i = 0; i < c.scenario.steps.size() && i < c.expected.steps.size(); ++i) {
    const ScenarioStep& step = c.scenario.steps[i];
    if (!step.queries.empty()) {
      if (counting.prefill_restarts) count = 0;
      kept = c.expected.steps[i].kept_count;
      kept_counts.push_back(kept);
      continue;
    }
    const uint64_t n = kept + step.admit;
    const bool null = !step.attention.has_value() && step.heads.empty();
    if (counting.null_counts || !null) ++count;
    const bool fires =
        count >= interval || (counting.out_of_turn && step.admit >= budget);
    if (fires && (counting.restart_when_empty || n > budget)) count = 0;
    kept = fires && n > budget ? budget : n;
    kept_counts.push_back(kept);
  }
  return kept_counts;
}

std::vector<uint64_t> LoggedKeptCounts(const CaseContext& c) {
  std::vector<uint64_t> counts;
  for (const StepRecord& step : c.expected.steps) counts.push_back(step.kept_count);
  return counts;
}

}  // namespace

std::optional<bool> DecidesTriggers(const std::string& flag,
                                    const CaseContext& c, std::string* note) {
  if (flag.rfind("trigger.", 0) != 0) return std::nullopt;
  if (!c.expected.refusal.ok()) return false;
  const int64_t slack = EffectiveParameter(c.config, "slack", 0);
  const int64_t interval = EffectiveParameter(c.config, "interval", 0);
  if (flag == "trigger.slack") {
    return slack > 0 && LogDiffersWith(c, WithParameter(c.config, "slack", 0));
  }
  if (flag == "trigger.interval") {
    return interval > 0 &&
           LogDiffersWith(c, WithParameter(c.config, "interval", 0));
  }
  if (flag == "trigger.accumulates") {
    // The rows of steps that evict nothing, made null.
    if (slack == 0 && interval == 0) return false;
    Scenario quiet = c.scenario;
    for (size_t i = 0; i < quiet.steps.size() && i < c.expected.steps.size(); ++i) {
      ScenarioStep& step = quiet.steps[i];
      bool evicts = false;
      for (const std::vector<Position>& victims : VictimsOf(c.expected.steps[i])) {
        evicts = evicts || !victims.empty();
      }
      if (!step.queries.empty() || evicts) continue;
      step.attention.reset();
      step.heads.clear();
    }
    return LogDiffersWith(c, quiet);
  }
  // The counting rules: one kept set, explicit steps, interval above 0.
  if (interval == 0 || c.scenario.trace.has_value() ||
      c.expected.steps.empty() || !c.expected.steps[0].sets.empty()) {
    return false;
  }
  const std::vector<uint64_t> logged = LoggedKeptCounts(c);
  if (KeptCounts(c, Counting{}) != logged) {
    if (note != nullptr) *note = "the recomputed counting rule does not give the log's kept counts";
    return false;
  }
  Counting changed;
  if (flag == "trigger.restart") {
    changed.restart_when_empty = false;
  } else if (flag == "trigger.out-of-turn") {
    changed.out_of_turn = false;
  } else if (flag == "trigger.prefill-restarts") {
    changed.prefill_restarts = false;
  } else if (flag == "trigger.null-counts") {
    changed.null_counts = false;
  } else {
    return false;
  }
  return KeptCounts(c, changed) != logged;
}

}  // namespace internal
}  // namespace audit
}  // namespace kvspec
