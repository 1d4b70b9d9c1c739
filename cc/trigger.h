// Trigger: when a decode step evicts (spec/triggers.md). Held by every
// Policy; the default fires at every step, which is the harness's rule
// without a trigger (spec/harness.md#budget).
//
// Spec: spec/triggers.md
#ifndef KVSPEC_CC_TRIGGER_H_
#define KVSPEC_CC_TRIGGER_H_

#include <cstddef>
#include <cstdint>

namespace kvspec {

struct Trigger {
  // The policy's `budget` (the target a firing evicts down to).
  uint64_t budget = 0;
  // spec/triggers.md#parameters: at most one of them is above 0.
  uint64_t slack = 0;
  uint64_t interval = 0;
  // spec/triggers.md#interval: decode steps since the last firing, the last
  // prefill step or the start.
  uint64_t count = 0;

  // Called once per step, after its admissions, with whether the step is a
  // prefill step (spec/prefill.md#the-prefill-step), the positions it
  // admitted and the kept count now. True: the policy's rule chooses
  // victims as at any step; false: the step evicts nothing.
  bool Fires(bool prefill_step, uint64_t admitted, uint64_t kept) {
    if (prefill_step) {
      // spec/triggers.md#interval: a prefill step sets the count to 0 and
      // evicts as spec/prefill.md says.
      count = 0;
      return true;
    }
    // spec/triggers.md#slack.
    if (slack > 0) return kept > budget + slack;
    if (interval == 0) return true;
    // spec/triggers.md#interval, 1 to 3.
    ++count;
    if (count < interval && admitted < budget) return false;
    count = 0;
    return true;
  }
};

}  // namespace kvspec

#endif  // KVSPEC_CC_TRIGGER_H_
