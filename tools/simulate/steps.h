// What simulate prints for each step of a scenario, read from the scenario
// and the log alone: how many steps it has, which positions each step admits
// (spec/harness.md#the-decode-step, spec/trace.md), whether it is a prefill
// step and what carries its attention, and a record's per-set records
// (spec/heads.md). Shared by the text log (simulate.cc) and --json (json.cc).
#ifndef KVSPEC_TOOLS_SIMULATE_STEPS_H_
#define KVSPEC_TOOLS_SIMULATE_STEPS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "cc/config.h"
#include "cc/harness.h"

namespace kvspec {
namespace simulate {

// The steps a scenario has: its explicit steps, or its trace's.
uint64_t StepCount(const Scenario& scenario);

// The positions step `index` admits: explicit steps continue where the
// previous one stopped; trace step t admits t (spec/trace.md).
struct Admitted {
  uint64_t first = 0;
  uint32_t count = 1;
};
class AdmittedWalk {
 public:
  explicit AdmittedWalk(const Scenario& scenario) : scenario_(scenario) {}
  Admitted Next(size_t index);
  uint64_t next() const { return next_; }

 private:
  const Scenario& scenario_;
  uint64_t next_ = 0;
};

bool IsPrefillStep(const Scenario& scenario, size_t index);

// What carries the step's attention: "rows" (one full-cache row per head),
// "query_rows" (a prefill step) or "null".
const char* AttentionKind(const Scenario& scenario, size_t index);

// The budget a ratio gave one kept set at a step
// (spec/prefill.md#budgets-from-a-ratio): at a prefill step of an accepted
// configuration with ratio_ppm above 0, computed from the set's kept count
// after admission (its kept count after the step plus its victims);
// nullopt at any other step, whose budget is the `budget` parameter or none.
std::optional<size_t> RatioBudget(const PolicyConfig& config, bool prefill,
                                  const StepRecord& set);

// A record's per-set records: its `sets`, or itself for one kept set.
std::vector<const StepRecord*> SetRecords(const StepRecord& record);

}  // namespace simulate
}  // namespace kvspec

#endif  // KVSPEC_TOOLS_SIMULATE_STEPS_H_
