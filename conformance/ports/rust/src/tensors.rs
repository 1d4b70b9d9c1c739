//! Keys and values in a scenario (spec/tensors.md; keys since spec 0.16.0,
//! feature `tensors`; values since spec 0.18.0, feature `values`):
//! `Scenario.head_dim` and `value_dim`, each step's `keys` and `values`,
//! their checks (spec/tensors.md#checks) and a step's checked vectors as a
//! kept set reads them (spec/tensors.md#what-a-policy-sees). Depends on
//! `error` alone.

use crate::error::{Category, Check, Refusal, Result, Subject};

/// The largest `head_dim` (spec/tensors.md#checks, 1.1).
pub const MAX_HEAD_DIM: u32 = 1024;
/// The largest `value_dim` (spec/tensors.md#checks, 1.2).
pub const MAX_VALUE_DIM: u32 = 1024;

/// What a policy needs of a scenario's tensors (spec/tensors.md#checks,
/// 1.5 and 1.6): the least `head_dim` its card names if it reads keys, the
/// least `value_dim` if it reads values; `None` for what it does not read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorNeeds {
    pub keys: Option<u32>,
    pub values: Option<u32>,
}

/// The scenario's checks of spec/tensors.md#checks (1), at step -1, right
/// after the head counts and before a trace's parameters, in order:
/// 1. `head_dim`, when present, is in `[1, 1024]`, or `INVALID_HEADS`
///    `range head_dim`;
/// 2. `value_dim`, when present, is in `[1, 1024]`, or `INVALID_HEADS`
///    `range value_dim`;
/// 3. `head_dim` beside a generated trace is `INVALID_TRACE`
///    `rule head_dim trace`;
/// 4. `value_dim` beside a generated trace is `INVALID_TRACE`
///    `rule value_dim trace`;
/// 5. a policy that reads keys (`needs.keys`) over a scenario without
///    `head_dim`, or with one below the least its card names, is
///    `INVALID_HEADS` `range head_dim`;
/// 6. the same for values: `range value_dim`.
pub fn check_scenario(head_dim: Option<u32>, value_dim: Option<u32>, has_trace: bool, needs: TensorNeeds) -> Result<()> {
    if let Some(d) = head_dim.filter(|d| !(1..=MAX_HEAD_DIM).contains(d)) {
        return Err(range_refusal("head_dim", format!("head_dim must be in [1, {MAX_HEAD_DIM}], got {d}")));
    }
    if let Some(e) = value_dim.filter(|e| !(1..=MAX_VALUE_DIM).contains(e)) {
        return Err(range_refusal("value_dim", format!("value_dim must be in [1, {MAX_VALUE_DIM}], got {e}")));
    }
    if has_trace {
        for (present, name) in [(head_dim.is_some(), "head_dim"), (value_dim.is_some(), "value_dim")] {
            if present {
                return Err(Refusal::new(
                    Category::InvalidTrace,
                    Subject::new(Check::Rule, &[name, "trace"]),
                    format!("a generated trace has no tensors to give: {name} beside a trace"),
                ));
            }
        }
    }
    check_needs(head_dim, value_dim, needs)
}

/// Checks 1.5 and 1.6 of spec/tensors.md#checks alone: the keys and the
/// values a policy reads are there, each at least as long as its card
/// needs.
pub fn check_needs(head_dim: Option<u32>, value_dim: Option<u32>, needs: TensorNeeds) -> Result<()> {
    if let Some(least) = needs.keys {
        match head_dim {
            None => return Err(missing_head_dim()),
            Some(d) if d < least => {
                return Err(range_refusal("head_dim", format!("the policy needs head_dim at least {least}, got {d}")))
            }
            Some(_) => {}
        }
    }
    if let Some(least) = needs.values {
        match value_dim {
            None => return Err(range_refusal("value_dim", "the policy reads values, and the scenario has no value_dim".into())),
            Some(e) if e < least => {
                return Err(range_refusal("value_dim", format!("the policy needs value_dim at least {least}, got {e}")))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn range_refusal(name: &str, message: String) -> Refusal {
    Refusal::new(Category::InvalidHeads, Subject::new(Check::Range, &[name]), message)
}

/// A policy that reads keys over a scenario without `head_dim`
/// (spec/tensors.md#checks, 1.5; spec/policies/knorm.md#parameters).
pub fn missing_head_dim() -> Refusal {
    range_refusal("head_dim", "the policy reads keys, and the scenario has no head_dim".into())
}

/// Step check 3 for one of a step's tensors (spec/tensors.md#checks, 2):
/// `field` is `keys` (with `head_dim`) or `values` (with `value_dim`). With
/// a length `dim`, `vectors` holds `kv_heads` entries, then each, KV head 0
/// first, holds `admit x dim` values; without, `vectors` is empty. Every
/// failure is `ATTENTION_LENGTH` `length <field>`.
pub fn check_shape(field: &str, vectors: &[Vec<f32>], admit: u32, kv_heads: u32, dim: Option<u32>) -> Result<()> {
    let refuse = |m: String| Err(Refusal::length(field, m));
    let Some(d) = dim else {
        if vectors.is_empty() {
            return Ok(());
        }
        return refuse(format!("the scenario has no length for {field}, and the step carries {} entries", vectors.len()));
    };
    if vectors.len() != kv_heads as usize {
        return refuse(format!("{} {field} entries, the scenario has {kv_heads} KV heads", vectors.len()));
    }
    let want = admit as u64 * d as u64;
    for (g, entry) in vectors.iter().enumerate() {
        if entry.len() as u64 != want {
            return refuse(format!("KV head {g}: {} {field} values, the step needs admit {admit} x {d} = {want}", entry.len()));
        }
    }
    Ok(())
}

/// Step check 3, the keys (spec/tensors.md#checks, 2), after the column
/// totals' shape: `check_shape` of `keys` with `head_dim`.
pub fn check_keys_shape(keys: &[Vec<f32>], admit: u32, kv_heads: u32, head_dim: Option<u32>) -> Result<()> {
    check_shape("keys", keys, admit, kv_heads, head_dim)
}

/// Step check 4 for one of a step's tensors (spec/tensors.md#checks, 3):
/// every entry, KV head 0 first and within it from index 0 up, is finite,
/// or `ATTENTION_VALUE` `value <field>`. Negative entries and -0.0 are
/// accepted: keys and values are signed.
pub fn check_entries(field: &str, vectors: &[Vec<f32>]) -> Result<()> {
    for (g, entry) in vectors.iter().enumerate() {
        if let Some(i) = entry.iter().position(|x| !x.is_finite()) {
            let x = entry[i];
            return Err(Refusal::new(
                Category::AttentionValue,
                Subject::new(Check::Value, &[field]),
                format!("KV head {g}: {field} entry {i} is {x} ({:#010x}); entries must be finite", x.to_bits()),
            ));
        }
    }
    Ok(())
}

/// Step check 4, the keys (spec/tensors.md#checks, 3), after the column
/// totals' values: `check_entries` of `keys`.
pub fn check_keys_values(keys: &[Vec<f32>]) -> Result<()> {
    check_entries("keys", keys)
}

/// A checked step's keys (or values) in a scenario with keys (values)
/// (spec/tensors.md#the-fields): `entries[g]` is KV head `g`'s, the
/// vectors of the step's admitted positions, position ascending, `dim`
/// binary32 values each (`head_dim` for keys, `value_dim` for values).
#[derive(Clone, Copy, Debug)]
pub struct StepVectors<'a> {
    pub entries: &'a [Vec<f32>],
    pub dim: usize,
}

/// A step's keys.
pub type StepKeys<'a> = StepVectors<'a>;

impl<'a> StepVectors<'a> {
    /// KV head `g`'s vectors of the admitted positions (`admit x dim`
    /// values, position ascending), what a kept set covering it hands its
    /// state (spec/tensors.md#what-a-policy-sees).
    pub fn head(&self, g: usize) -> &'a [f32] {
        &self.entries[g]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "check names..." as spec/harness.md#subjects writes a subject, with
    /// the category.
    fn refused(r: Result<()>) -> Option<(Category, String)> {
        r.err().map(|r| {
            let s = std::iter::once(r.subject.check.name()).chain(r.subject.names.iter().map(String::as_str)).collect::<Vec<_>>();
            (r.category, s.join(" "))
        })
    }

    const NONE: TensorNeeds = TensorNeeds { keys: None, values: None };
    const KEYS: TensorNeeds = TensorNeeds { keys: Some(1), values: None };
    /// lagkv's (spec/policies/lagkv.md#parameters): d and e at least 2.
    const BOTH: TensorNeeds = TensorNeeds { keys: Some(2), values: Some(2) };

    #[test]
    fn scenario_checks_in_order() {
        let range = Some((Category::InvalidHeads, "range head_dim".to_string()));
        let trace = Some((Category::InvalidTrace, "rule head_dim trace".to_string()));
        assert_eq!(refused(check_scenario(Some(0), None, false, NONE)), range);
        assert_eq!(refused(check_scenario(Some(1025), None, false, KEYS)), range);
        assert_eq!(refused(check_scenario(Some(1), None, false, KEYS)), None);
        assert_eq!(refused(check_scenario(Some(1024), None, false, NONE)), None);
        // The range before the trace, the trace before the policy.
        assert_eq!(refused(check_scenario(Some(0), None, true, NONE)), range);
        assert_eq!(refused(check_scenario(Some(4), None, true, NONE)), trace);
        assert_eq!(refused(check_scenario(Some(4), None, true, KEYS)), trace);
        assert_eq!(refused(check_scenario(None, None, false, KEYS)), range);
        assert_eq!(refused(check_scenario(None, None, true, KEYS)), range);
        assert_eq!(refused(check_scenario(None, None, true, NONE)), None);
        assert_eq!(refused(check_scenario(None, None, false, NONE)), None);
    }

    #[test]
    fn scenario_checks_with_values_in_order() {
        // spec/tensors.md#checks, 1.1 to 1.6 (spec 0.18.0).
        let at = |c, s: &str| Some((c, s.to_string()));
        let range_d = at(Category::InvalidHeads, "range head_dim");
        let range_e = at(Category::InvalidHeads, "range value_dim");
        let trace_d = at(Category::InvalidTrace, "rule head_dim trace");
        let trace_e = at(Category::InvalidTrace, "rule value_dim trace");
        // 1.2: value_dim in [1, 1024], whatever the policy.
        assert_eq!(refused(check_scenario(None, Some(0), false, NONE)), range_e);
        assert_eq!(refused(check_scenario(None, Some(1025), false, NONE)), range_e);
        assert_eq!(refused(check_scenario(None, Some(1), false, NONE)), None);
        assert_eq!(refused(check_scenario(Some(3), Some(1024), false, KEYS)), None);
        // 1.1 before 1.2.
        assert_eq!(refused(check_scenario(Some(0), Some(0), false, NONE)), range_d);
        // Both ranges before either trace rule.
        assert_eq!(refused(check_scenario(Some(4), Some(0), true, NONE)), range_e);
        // 1.3 before 1.4; 1.4 alone.
        assert_eq!(refused(check_scenario(Some(4), Some(4), true, NONE)), trace_d);
        assert_eq!(refused(check_scenario(None, Some(4), true, NONE)), trace_e);
        // The trace rules before the policy's needs.
        assert_eq!(refused(check_scenario(None, Some(4), true, BOTH)), trace_e);
        // 1.5 before 1.6: missing or too short.
        assert_eq!(refused(check_scenario(None, None, false, BOTH)), range_d);
        assert_eq!(refused(check_scenario(Some(1), None, false, BOTH)), range_d);
        assert_eq!(refused(check_scenario(Some(1), Some(1), false, BOTH)), range_d);
        assert_eq!(refused(check_scenario(Some(2), None, false, BOTH)), range_e);
        assert_eq!(refused(check_scenario(Some(2), Some(1), false, BOTH)), range_e);
        assert_eq!(refused(check_scenario(Some(2), Some(2), false, BOTH)), None);
        assert_eq!(refused(check_scenario(Some(2), None, true, BOTH)), trace_d);
        // A trace without tensors, for a policy that reads values: 1.5.
        assert_eq!(refused(check_scenario(None, None, true, BOTH)), range_d);
        // A policy that reads keys only ignores value_dim 1 (vector
        // tensors/bounds/value-dim-1-for-knorm).
        assert_eq!(refused(check_scenario(Some(1), Some(1), false, KEYS)), None);
    }

    #[test]
    fn value_step_checks() {
        // spec/tensors.md#checks, 2 and 3, for values: as the keys', with
        // their own field.
        let length = Some((Category::AttentionLength, "length values".to_string()));
        let value = Some((Category::AttentionValue, "value values".to_string()));
        assert_eq!(refused(check_shape("values", &[], 2, 1, None)), None);
        assert_eq!(refused(check_shape("values", &[vec![]], 2, 1, None)), length);
        let six = || vec![0.5f32; 6];
        assert_eq!(refused(check_shape("values", &[six(), six()], 2, 2, Some(3))), None);
        assert_eq!(refused(check_shape("values", &[six()], 2, 2, Some(3))), length);
        assert_eq!(refused(check_shape("values", &[six(), vec![0.5; 4]], 2, 2, Some(3))), length);
        assert_eq!(refused(check_entries("values", &[vec![-0.0, -2.5], vec![f32::MAX]])), None);
        assert_eq!(refused(check_entries("values", &[vec![0.5], vec![f32::NAN]])), value);
        assert_eq!(refused(check_entries("values", &[vec![f32::NEG_INFINITY]])), value);
    }

    #[test]
    fn step_checks() {
        let length = Some((Category::AttentionLength, "length keys".to_string()));
        let value = Some((Category::AttentionValue, "value keys".to_string()));
        // Without head_dim: no entry at all, even an empty one.
        assert_eq!(refused(check_keys_shape(&[], 2, 1, None)), None);
        assert_eq!(refused(check_keys_shape(&[vec![]], 2, 1, None)), length);
        // With head_dim 2, two KV heads, admit 3: two entries of 6.
        let six = || vec![0.5f32; 6];
        assert_eq!(refused(check_keys_shape(&[six(), six()], 3, 2, Some(2))), None);
        assert_eq!(refused(check_keys_shape(&[six()], 3, 2, Some(2))), length);
        assert_eq!(refused(check_keys_shape(&[six(), six(), six()], 3, 2, Some(2))), length);
        assert_eq!(refused(check_keys_shape(&[], 3, 2, Some(2))), length);
        assert_eq!(refused(check_keys_shape(&[six(), vec![0.5; 5]], 3, 2, Some(2))), length);
        assert_eq!(refused(check_keys_shape(&[vec![0.5; 7], six()], 3, 2, Some(2))), length);
        // Values: finite, signed, -0.0 accepted.
        assert_eq!(refused(check_keys_values(&[vec![-0.0, -3.5, f32::MAX, -f32::MAX], vec![f32::MIN_POSITIVE]])), None);
        assert_eq!(refused(check_keys_values(&[vec![0.5, f32::NAN]])), value);
        assert_eq!(refused(check_keys_values(&[vec![0.5], vec![f32::NEG_INFINITY]])), value);
        assert_eq!(refused(check_keys_values(&[vec![f32::INFINITY]])), value);
    }
}
