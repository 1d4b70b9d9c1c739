//! Keys in a scenario (spec/tensors.md, spec 0.16.0, feature `tensors`):
//! `Scenario.head_dim` and each step's `keys`, their checks
//! (spec/tensors.md#checks) and a step's checked keys as a kept set reads
//! them (spec/tensors.md#what-a-policy-sees). Depends on `error` alone.

use crate::error::{Category, Check, Refusal, Result, Subject};

/// The largest `head_dim` (spec/tensors.md#checks, 1.1).
pub const MAX_HEAD_DIM: u32 = 1024;

/// The scenario's checks of spec/tensors.md#checks (1), at step -1, right
/// after the head counts and before a trace's parameters, in order:
/// 1. `head_dim`, when present, is in `[1, 1024]`, or `INVALID_HEADS`
///    `range head_dim`;
/// 2. `head_dim` beside a generated trace is `INVALID_TRACE`
///    `rule head_dim trace`;
/// 3. a policy that reads keys (`reads_keys`) over a scenario without
///    `head_dim` is `INVALID_HEADS` `range head_dim`.
pub fn check_scenario(head_dim: Option<u32>, has_trace: bool, reads_keys: bool) -> Result<()> {
    if let Some(d) = head_dim {
        if !(1..=MAX_HEAD_DIM).contains(&d) {
            return Err(Refusal::new(
                Category::InvalidHeads,
                Subject::new(Check::Range, &["head_dim"]),
                format!("head_dim must be in [1, {MAX_HEAD_DIM}], got {d}"),
            ));
        }
        if has_trace {
            return Err(Refusal::new(
                Category::InvalidTrace,
                Subject::new(Check::Rule, &["head_dim", "trace"]),
                "a generated trace has no keys to give: head_dim beside a trace",
            ));
        }
    } else if reads_keys {
        return Err(missing_head_dim());
    }
    Ok(())
}

/// A policy that reads keys over a scenario without `head_dim`
/// (spec/tensors.md#checks, 1.3; spec/policies/knorm.md#parameters).
pub fn missing_head_dim() -> Refusal {
    Refusal::new(
        Category::InvalidHeads,
        Subject::new(Check::Range, &["head_dim"]),
        "the policy reads keys, and the scenario has no head_dim",
    )
}

/// Step check 3, the keys (spec/tensors.md#checks, 2), after the column
/// totals' shape: with `head_dim` `d`, `keys` holds `kv_heads` entries,
/// then each, KV head 0 first, holds `admit x d` values; without, `keys` is
/// empty. Every failure is `ATTENTION_LENGTH` `length keys`.
pub fn check_keys_shape(keys: &[Vec<f32>], admit: u32, kv_heads: u32, head_dim: Option<u32>) -> Result<()> {
    let refuse = |m: String| Err(Refusal::length("keys", m));
    let Some(d) = head_dim else {
        if keys.is_empty() {
            return Ok(());
        }
        return refuse(format!("the scenario has no head_dim, and the step carries {} key entries", keys.len()));
    };
    if keys.len() != kv_heads as usize {
        return refuse(format!("{} key entries, the scenario has {kv_heads} KV heads", keys.len()));
    }
    let want = admit as u64 * d as u64;
    for (g, entry) in keys.iter().enumerate() {
        if entry.len() as u64 != want {
            return refuse(format!("KV head {g}: {} key values, the step needs admit {admit} x head_dim {d} = {want}", entry.len()));
        }
    }
    Ok(())
}

/// Step check 4, the keys (spec/tensors.md#checks, 3), after the column
/// totals' values: every key entry, KV head 0 first and within it from
/// index 0 up, is finite, or `ATTENTION_VALUE` `value keys`. Negative
/// entries and -0.0 are accepted: keys are signed.
pub fn check_keys_values(keys: &[Vec<f32>]) -> Result<()> {
    for (g, entry) in keys.iter().enumerate() {
        if let Some(i) = entry.iter().position(|x| !x.is_finite()) {
            let x = entry[i];
            return Err(Refusal::new(
                Category::AttentionValue,
                Subject::new(Check::Value, &["keys"]),
                format!("KV head {g}: key value {i} is {x} ({:#010x}); key entries must be finite", x.to_bits()),
            ));
        }
    }
    Ok(())
}

/// A checked step's keys in a scenario with keys
/// (spec/tensors.md#the-fields): `entries[g]` is KV head `g`'s, the keys of
/// the step's admitted positions, position ascending, `head_dim` binary32
/// values each.
#[derive(Clone, Copy, Debug)]
pub struct StepKeys<'a> {
    pub entries: &'a [Vec<f32>],
    pub head_dim: usize,
}

impl<'a> StepKeys<'a> {
    /// KV head `g`'s keys of the admitted positions (`admit x head_dim`
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

    #[test]
    fn scenario_checks_in_order() {
        let range = Some((Category::InvalidHeads, "range head_dim".to_string()));
        let trace = Some((Category::InvalidTrace, "rule head_dim trace".to_string()));
        assert_eq!(refused(check_scenario(Some(0), false, false)), range);
        assert_eq!(refused(check_scenario(Some(1025), false, true)), range);
        assert_eq!(refused(check_scenario(Some(1), false, true)), None);
        assert_eq!(refused(check_scenario(Some(1024), false, false)), None);
        // The range before the trace, the trace before the policy.
        assert_eq!(refused(check_scenario(Some(0), true, false)), range);
        assert_eq!(refused(check_scenario(Some(4), true, false)), trace);
        assert_eq!(refused(check_scenario(Some(4), true, true)), trace);
        assert_eq!(refused(check_scenario(None, false, true)), range);
        assert_eq!(refused(check_scenario(None, true, true)), range);
        assert_eq!(refused(check_scenario(None, true, false)), None);
        assert_eq!(refused(check_scenario(None, false, false)), None);
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
