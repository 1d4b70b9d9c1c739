//! A card's integer parameters and checks 2 and 3 of
//! spec/harness.md#configuration: every given parameter is one the policy
//! takes, given once, and every parameter takes its default or lies in its
//! range. Its own module, below `policies`, `prefill` and `spans`, which
//! all declare parameters: it depends on nothing but `error`.
use crate::error::{Category, Check, Refusal, Result, Subject};

/// One integer parameter of a card: name, default, inclusive range.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: i64,
    pub min: i64,
    pub max: i64,
}

/// Checks 2 and 3 of spec/harness.md#configuration: every given parameter is
/// known and given once (in the order given), then every card parameter, in
/// card order, takes its default or must lie in its range. Returns the
/// values in card order.
pub fn resolve_params(policy: &str, specs: &[ParamSpec], given: &[(String, i64)]) -> Result<Vec<i64>> {
    for (i, (name, _)) in given.iter().enumerate() {
        if !specs.iter().any(|s| s.name == name) {
            let msg = if specs.is_empty() {
                format!("{policy}: unknown parameter '{name}'; {policy} takes no parameters")
            } else {
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                format!("{policy}: unknown parameter '{name}'; {policy} takes {}", names.join(", "))
            };
            return Err(Refusal::new(Category::InvalidParameter, Subject::new(Check::Unknown, &[name]), msg));
        }
        if given[..i].iter().any(|(n, _)| n == name) {
            return Err(Refusal::new(
                Category::InvalidParameter,
                Subject::new(Check::Repeated, &[name]),
                format!("{policy}: parameter '{name}' given twice"),
            ));
        }
    }
    let mut values = Vec::with_capacity(specs.len());
    for s in specs {
        let v = given.iter().find(|(n, _)| n == s.name).map(|(_, v)| *v).unwrap_or(s.default);
        if v < s.min || v > s.max {
            return Err(Refusal::new(
                Category::InvalidParameter,
                Subject::new(Check::Range, &[s.name]),
                format!("{policy}: {} must be in [{}, {}], got {v}", s.name, s.min, s.max),
            ));
        }
        values.push(v);
    }
    Ok(values)
}
