//! Triggers (spec/triggers.md, feature `triggers`, spec 0.12.0): when a
//! decode step evicts. `slack` and `interval`, the last two parameters of
//! every policy that evicts (`window`, `streamingllm`, `h2o`, `tova`,
//! `snapkv`, `random`; not `full`), their rules
//! (spec/triggers.md#combinations), and a kept set's firing rule
//! (`Trigger`, spec/triggers.md#firing): a decode step that does not fire
//! records and admits as every step does and evicts nothing; one that
//! fires evicts down to `budget` as spec/harness.md#budget says. A prefill
//! step is left alone (it evicts as spec/prefill.md says) and restarts the
//! interval's count. The spec's examples and the rules, through whole
//! scenarios: `scenario_tests.rs`.

use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::params::ParamSpec;
use crate::prefill::PrefillOptions;
use crate::spans::{EvictAt, SpanOptions};

/// `slack` (spec/triggers.md#parameters).
pub(crate) const SLACK: ParamSpec = ParamSpec { name: "slack", default: 0, min: 0, max: 4294967295 };
/// `interval` (spec/triggers.md#parameters).
pub(crate) const INTERVAL: ParamSpec = ParamSpec { name: "interval", default: 0, min: 0, max: 4294967295 };
/// The trigger parameters, listed last in every card that takes them, in
/// this order.
pub(crate) const TRIGGER_PARAMS: [ParamSpec; 2] = [SLACK, INTERVAL];

/// `slack` and `interval` of one configuration; both 0 (the default):
/// every decode step evicts as spec/harness.md#budget says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TriggerOptions {
    /// Not 0: a decode step fires when more than `budget + slack`
    /// positions are kept after its admissions (spec/triggers.md#slack).
    pub slack: u64,
    /// Not 0: a decode step fires at every `interval`-th decode step, or
    /// when it admits at least `budget` positions
    /// (spec/triggers.md#interval).
    pub interval: u64,
}

impl TriggerOptions {
    /// From the range-checked values of `slack` and `interval`, in that
    /// order.
    pub(crate) fn from_params(v: &[i64]) -> Self {
        TriggerOptions { slack: v[0] as u64, interval: v[1] as u64 }
    }

    /// The rules of spec/triggers.md#combinations, checked after every
    /// other rule of the card, in order (`INVALID_PARAMETER`):
    /// 1. `slack` and `interval` are not both above 0 (`rule slack
    ///    interval`);
    /// 2. with `slack` (or else `interval`) above 0, each of
    ///    `prefill_only`, `adaptive`, `evict_at` and `context_shift` that the
    ///    policy takes is 0; the first that is not is named (`rule slack
    ///    prefill_only`, `rule interval adaptive`, ...).
    ///
    /// `prefill` (`prefill_only`), `adaptive` and `spans` (`evict_at`,
    /// `context_shift`) are `None` for a policy that does not take them.
    pub(crate) fn check(
        self,
        policy: &str,
        prefill: Option<PrefillOptions>,
        adaptive: Option<bool>,
        spans: Option<SpanOptions>,
    ) -> Result<()> {
        let mut others = Vec::with_capacity(4);
        if let Some(p) = prefill {
            others.push(("prefill_only", p.prefill_only as u64));
        }
        if let Some(a) = adaptive {
            others.push(("adaptive", a as u64));
        }
        if let Some(s) = spans {
            let evict_at = match s.evict_at {
                EvictAt::After => 0,
                EvictAt::RoomForStep => 1,
                EvictAt::BelowBudget => 2,
            };
            others.push(("evict_at", evict_at));
            others.push(("context_shift", s.context_shift as u64));
        }
        self.check_against(policy, &others)
    }

    /// The two rules above, `others` holding the value of each of
    /// `prefill_only`, `adaptive`, `evict_at` and `context_shift` the
    /// policy takes, in that order.
    fn check_against(self, policy: &str, others: &[(&str, u64)]) -> Result<()> {
        let refuse = |names: &[&str], m: String| {
            Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Rule, names), format!("{policy}: {m}")))
        };
        if self.slack > 0 && self.interval > 0 {
            return refuse(&["slack", "interval"], format!(
                "slack and interval are not both above 0, got slack {}, interval {}",
                self.slack, self.interval
            ));
        }
        let trigger = if self.slack > 0 {
            "slack"
        } else if self.interval > 0 {
            "interval"
        } else {
            return Ok(());
        };
        for &(name, value) in others {
            if value != 0 {
                return refuse(&[trigger, name], format!("{trigger} above 0 needs {name} 0, got {name} {value}"));
            }
        }
        Ok(())
    }
}

/// A kept set's trigger (spec/triggers.md#firing): its options, the
/// policy's `budget`, and with `interval` the set's count of decode steps
/// (spec/triggers.md#interval: every kept set has its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trigger {
    options: TriggerOptions,
    budget: u64,
    /// Decode steps since the start, the last firing or the last prefill
    /// step.
    count: u64,
}

impl Trigger {
    /// The trigger of a policy with `options` and `budget` (`None`: `full`,
    /// which takes no trigger parameters and evicts nothing).
    pub fn new(options: TriggerOptions, budget: Option<u64>) -> Self {
        Trigger { options, budget: budget.unwrap_or(0), count: 0 }
    }

    /// May the step evict, once it has admitted `admitted` positions and
    /// `kept` are kept? A prefill step may, as spec/prefill.md says, and
    /// sets the count to 0 (it neither fires nor counts). A decode step may
    /// when it fires:
    /// - `slack` `S` above 0: when `kept > budget + S`;
    /// - `interval` `N` above 0: the count goes up by 1 (null attention
    ///   counts too), and the step fires when the count has reached `N` or
    ///   it admits at least `budget` positions; at a firing the count
    ///   returns to 0, whether or not the step then evicts anything;
    /// - both 0: always, as spec/harness.md#budget says.
    ///
    /// A step that may evict evicts `kept - budget` when `kept > budget`,
    /// and nothing otherwise (the caller's rule).
    pub fn may_evict(&mut self, prefill: bool, kept: u64, admitted: u64) -> bool {
        if prefill {
            self.count = 0;
            return true;
        }
        if self.options.slack > 0 {
            return kept > self.budget + self.options.slack;
        }
        if self.options.interval == 0 {
            return true;
        }
        self.count += 1;
        let fires = self.count >= self.options.interval || admitted >= self.budget;
        if fires {
            self.count = 0;
        }
        fires
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(slack: u64, interval: u64, budget: u64) -> Trigger {
        Trigger::new(TriggerOptions { slack, interval }, Some(budget))
    }

    #[test]
    fn without_options_every_step_may_evict() {
        let mut t = trigger(0, 0, 3);
        assert!((0..5).all(|n| t.may_evict(false, n, 1)));
        assert!(t.may_evict(true, 9, 9));
    }

    #[test]
    fn slack_fires_above_budget_plus_slack() {
        // spec/triggers.md#slack: budget 3, slack 2 fires at six kept.
        let mut t = trigger(2, 0, 3);
        assert_eq!((1..=7).map(|n| t.may_evict(false, n, 1)).collect::<Vec<_>>(), [false, false, false, false, false, true, true]);
        // budget + slack does not overflow at the top of both ranges.
        let mut t = trigger(4294967295, 0, 4294967295);
        assert!(!t.may_evict(false, 8589934590, 1));
        assert!(t.may_evict(false, 8589934591, 1));
    }

    #[test]
    fn interval_counts_decode_steps_and_restarts() {
        // Interval 3, budget 4: fires at the 3rd, 6th, ... decode step.
        let mut t = trigger(0, 3, 4);
        let fired: Vec<bool> = (0..7).map(|_| t.may_evict(false, 0, 1)).collect();
        assert_eq!(fired, [false, false, true, false, false, true, false]);
        // A chunk of at least `budget` fires out of turn and restarts the
        // count: count is 1 here, the chunk fires, then two more before
        // the next firing.
        assert!(t.may_evict(false, 0, 4));
        assert_eq!((0..3).map(|_| t.may_evict(false, 0, 1)).collect::<Vec<_>>(), [false, false, true]);
        // A chunk of budget - 1 counts as one step.
        assert!(!t.may_evict(false, 0, 3));
        // A prefill step may evict and sets the count to 0.
        assert!(!t.may_evict(false, 0, 1));
        assert!(t.may_evict(true, 0, 1));
        assert_eq!((0..3).map(|_| t.may_evict(false, 0, 1)).collect::<Vec<_>>(), [false, false, true]);
        // Interval 1 fires at every decode step.
        let mut t = trigger(0, 1, 4);
        assert!((0..4).all(|_| t.may_evict(false, 0, 1)));
    }

    #[test]
    fn rules_in_order() {
        let subject = |slack, interval, others: &[(&str, u64)]| {
            TriggerOptions { slack, interval }
                .check_against("p", others)
                .err()
                .map(|r| (r.category, r.subject.names.join(" ")))
        };
        let rule = |names: &str| Some((Category::InvalidParameter, names.to_string()));
        assert_eq!(subject(0, 0, &[("prefill_only", 1)]), None);
        assert_eq!(subject(2, 3, &[("prefill_only", 1)]), rule("slack interval"));
        assert_eq!(subject(2, 0, &[("prefill_only", 0), ("adaptive", 1)]), rule("slack adaptive"));
        assert_eq!(subject(0, 2, &[("evict_at", 2), ("context_shift", 1)]), rule("interval evict_at"));
        assert_eq!(subject(0, 2, &[("evict_at", 0), ("context_shift", 1)]), rule("interval context_shift"));
        assert_eq!(subject(5, 0, &[("evict_at", 0), ("context_shift", 0)]), None);
    }
}

#[cfg(test)]
mod scenario_tests;
