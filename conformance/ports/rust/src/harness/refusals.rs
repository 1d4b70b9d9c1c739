//! The checks of one step of a scenario, in the order of
//! spec/harness.md#refusals (check 4): its positions
//! (spec/harness.md#positions), then the shape of its rows
//! (spec/heads.md#rows-per-head), of its query rows (spec/prefill.md#checks),
//! of its column totals (spec/prefill.md#their-checks) and of its keys and
//! values (spec/tensors.md#checks), then their entries
//! (spec/harness.md#attention-weights); and what a checked step carries
//! (`StepRows`, with its keys and values in `CheckedStep`). A direct `Policy::Step` has its own list of checks
//! (`Engine::step`, `one_set.rs`), which takes `MAX_POSITION` and the weight
//! check from here.

use super::scenario::ScenarioStep;
use crate::error::{Category, Check, Refusal, Result, Subject};
use crate::prefill::Totals;
use crate::tensors::{check_entries, check_shape, StepVectors};

/// The highest position (spec/harness.md#positions).
pub const MAX_POSITION: u64 = u32::MAX as u64;

/// Is a weight accepted? Finite with its sign bit clear
/// (spec/harness.md#attention-weights).
#[inline]
pub fn weight_accepted(w: f32) -> bool {
    w.is_finite() && !w.is_sign_negative()
}

/// Is a column total accepted? Finite with its sign bit clear, in
/// binary64: NaN, the infinities and every value with the sign bit set,
/// -0.0 included, are refused (spec/prefill.md#their-checks, check 4).
#[inline]
pub fn total_accepted(t: f64) -> bool {
    t.is_finite() && !t.is_sign_negative()
}

/// The field that carries a step's rows with `hq` query heads
/// (spec/heads.md#rows-per-head): `attention` with one, `heads` with several.
fn rows_field(hq: usize) -> &'static str {
    if hq == 1 { "attention" } else { "heads" }
}

/// Every weight of a row in `field` (`attention`, `heads` or `queries`, the
/// value refusal's subject) is accepted.
pub(super) fn check_weights(weights: &[f32], field: &str) -> Result<()> {
    for (i, &w) in weights.iter().enumerate() {
        if !weight_accepted(w) {
            return Err(Refusal::new(
                Category::AttentionValue,
                Subject::new(Check::Value, &[field]),
                format!("attention weight {i} is {w} ({:#010x}); weights must be finite and non-negative", w.to_bits()),
            ));
        }
    }
    Ok(())
}

/// What a validated step carries (spec/harness.md#scenarios,
/// spec/prefill.md#query-rows).
#[derive(Debug)]
pub(super) enum StepRows<'a> {
    /// Null attention for every head.
    Null,
    /// One full-cache row per query head.
    Rows(Vec<&'a [f32]>),
    /// A prefill step's query rows, `Hq x m`, head 0's first, and its
    /// column totals if it carries them.
    Queries { rows: Vec<&'a [f32]>, totals: Option<Totals<'a>> },
}

/// A checked step: what it carries for the policies that read attention
/// (`rows`), its keys in a scenario with keys and its values in one with
/// values (spec/tensors.md#what-a-policy-sees; `None` in one without).
#[derive(Debug)]
pub(super) struct CheckedStep<'a> {
    pub(super) rows: StepRows<'a>,
    pub(super) keys: Option<StepVectors<'a>>,
    pub(super) values: Option<StepVectors<'a>>,
}

/// What a step's checks need of the scenario: `hq` query heads, `hkv` KV
/// heads, `head_dim` (`None`: a scenario without keys) and `value_dim`
/// (`None`: a scenario without values).
#[derive(Clone, Copy, Debug)]
pub(super) struct StepShape {
    pub(super) hq: usize,
    pub(super) hkv: u32,
    pub(super) head_dim: Option<u32>,
    pub(super) value_dim: Option<u32>,
}

/// The checks of spec/harness.md#refusals for one step of a scenario of
/// `shape`, in order (spec/heads.md#rows-per-head, spec/prefill.md#checks,
/// spec/prefill.md#their-checks, spec/tensors.md#checks): the positions;
/// then the rows (their number, then each row's length, head 0 first),
/// then the query rows' shape, then the column totals' shape, then the
/// keys' shape, then the values'; then every weight of every row (head 0
/// first, index 0 up), then every weight of every query row, then every
/// column total, then every key entry, then every value entry. Returns
/// what the step carries.
pub(super) fn check_explicit_step(first: u64, step: &ScenarioStep, shape: StepShape) -> Result<CheckedStep<'_>> {
    let hq = shape.hq;
    if step.admit == 0 {
        return Err(Refusal::position(Check::Range, "a step must admit at least one position"));
    }
    if first + (step.admit as u64 - 1) > MAX_POSITION {
        return Err(Refusal::position(Check::Rule, "positions run past 2^32 - 1"));
    }
    // Check 3: the rows' shape, the query rows', the totals', then the
    // keys' and the values'.
    let rows = check_rows_shape(first, step, hq)?;
    let has_queries = !step.queries.is_empty();
    if has_queries {
        check_queries_shape(first, step, hq)?;
    }
    let has_totals = check_totals_shape(first, step, hq)?;
    check_shape("keys", &step.keys, step.admit, shape.hkv, shape.head_dim)?;
    check_shape("values", &step.values, step.admit, shape.hkv, shape.value_dim)?;
    // Check 4: the rows' weights, the query rows', the totals, then the
    // keys and the values.
    let field = rows_field(hq);
    for (h, row) in rows.iter().flatten().enumerate() {
        check_weights(row, field).map_err(|r| r.in_context(format_args!("head {h}")))?;
    }
    let mut totals = None;
    if has_queries {
        let m = step.queries.len() / hq;
        for (r, row) in step.queries.iter().enumerate() {
            check_weights(row, "queries").map_err(|e| e.in_context(format_args!("head {}, query row {}", r / m, r % m)))?;
        }
        // Totals come only beside query rows (check 3 refused them
        // otherwise).
        if has_totals {
            check_totals_values(step)?;
            totals = Some(Totals { sums: &step.totals, rows: step.total_rows });
        }
    }
    check_entries("keys", &step.keys)?;
    check_entries("values", &step.values)?;
    let rows = if has_queries {
        StepRows::Queries { rows: step.queries.iter().map(|r| r.as_slice()).collect(), totals }
    } else {
        match rows {
            None => StepRows::Null,
            Some(rows) => StepRows::Rows(rows),
        }
    };
    let keys = shape.head_dim.map(|d| StepVectors { entries: &step.keys, dim: d as usize });
    let values = shape.value_dim.map(|e| StepVectors { entries: &step.values, dim: e as usize });
    Ok(CheckedStep { rows, keys, values })
}

/// Step check 3, the rows (spec/heads.md#rows-per-head): with one query
/// head the row is `attention` and `heads` is empty; with several,
/// `attention` is absent and `heads` holds `hq` rows; then each row has one
/// weight per position admitted before the step. `None`: no row.
fn check_rows_shape(first: u64, step: &ScenarioStep, hq: usize) -> Result<Option<Vec<&[f32]>>> {
    let rows: Vec<&[f32]> = if hq == 1 {
        if !step.heads.is_empty() {
            return Err(Refusal::length(
                "heads",
                format!("with one query head the row is `attention`, but `heads` holds {} rows", step.heads.len()),
            ));
        }
        match &step.row {
            None => return Ok(None),
            Some(row) => vec![row.as_slice()],
        }
    } else {
        match (&step.row, step.heads.is_empty()) {
            (None, true) => return Ok(None),
            (Some(_), _) => {
                return Err(Refusal::length(
                    "attention",
                    format!("with {hq} query heads the rows are in `heads`, and `attention` must be absent"),
                ))
            }
            (None, false) => {
                if step.heads.len() != hq {
                    return Err(Refusal::length(
                        "heads",
                        format!("`heads` holds {} rows, the scenario has {hq} query heads", step.heads.len()),
                    ));
                }
                step.heads.iter().map(|r| r.as_slice()).collect()
            }
        }
    };
    for (h, row) in rows.iter().enumerate() {
        if row.len() as u64 != first {
            return Err(Refusal::length(
                rows_field(hq),
                format!("head {h}: the row has {} weights, {first} positions were admitted before the step", row.len()),
            ));
        }
    }
    Ok(Some(rows))
}

/// Step check 3, the query rows (spec/prefill.md#checks), after the rows'
/// checks: no `attention` and no `heads` row beside them; their number a
/// multiple of `hq`; `m` at most the step's `admit`; then each row, head 0
/// first and within a head in ascending query position, has `q + 1`
/// weights for its query `q` (the step's last `m` positions). Every
/// failure is `ATTENTION_LENGTH`.
fn check_queries_shape(first: u64, step: &ScenarioStep, hq: usize) -> Result<()> {
    let refuse = |m: String| Err(Refusal::length("queries", m));
    if step.row.is_some() || !step.heads.is_empty() {
        return refuse("a step with query rows carries no `attention` and no `heads` row".into());
    }
    let rows = step.queries.len();
    if !rows.is_multiple_of(hq) {
        return refuse(format!("{rows} query rows are not a multiple of the {hq} query heads"));
    }
    let m = rows / hq;
    if m as u64 > step.admit as u64 {
        return refuse(format!("{m} query rows per head, but the step admits {}", step.admit));
    }
    let first_query = first + step.admit as u64 - m as u64;
    for (r, row) in step.queries.iter().enumerate() {
        let q = first_query + (r % m) as u64;
        if row.len() as u64 != q + 1 {
            return refuse(format!(
                "head {}: the query row of position {q} has {} weights, a causal row has {}",
                r / m,
                row.len(),
                q + 1
            ));
        }
    }
    Ok(())
}

/// Step check 3, the column totals (spec/prefill.md#their-checks), after
/// the query rows' shape: if the step has totals or a `total_rows` above
/// 0, it has query rows, `hq` lists of totals and `1 <= total_rows <=
/// admit`; then each head's list, head 0 first, holds exactly `a + c`
/// values (one per position `0 .. a+c-1`). Every failure is
/// `ATTENTION_LENGTH`. `Ok(false)`: the step carries no totals.
fn check_totals_shape(first: u64, step: &ScenarioStep, hq: usize) -> Result<bool> {
    let refuse = |field, m: String| Err(Refusal::length(field, m));
    if step.totals.is_empty() && step.total_rows == 0 {
        return Ok(false);
    }
    if step.queries.is_empty() {
        return refuse("totals", "column totals come only beside query rows".into());
    }
    if step.totals.len() != hq {
        return refuse("totals", format!("{} lists of column totals, the scenario has {hq} query heads", step.totals.len()));
    }
    if step.total_rows == 0 || step.total_rows > step.admit {
        return refuse("total_rows", format!("total_rows is {}, it must be 1 to the step's admit {}", step.total_rows, step.admit));
    }
    let positions = first + step.admit as u64;
    for (h, sums) in step.totals.iter().enumerate() {
        if sums.len() as u64 != positions {
            return refuse("totals", format!(
                "head {h}: {} column totals, the step needs one per position 0 .. {}",
                sums.len(),
                positions - 1
            ));
        }
    }
    Ok(true)
}

/// Step check 4, the column totals (spec/prefill.md#their-checks), after
/// the query rows' weights: every total, head 0 first and within a head
/// from position 0 up, is finite with its sign bit clear, or
/// `ATTENTION_VALUE`.
fn check_totals_values(step: &ScenarioStep) -> Result<()> {
    for (h, sums) in step.totals.iter().enumerate() {
        for (p, &t) in sums.iter().enumerate() {
            if !total_accepted(t) {
                return Err(Refusal::new(
                    Category::AttentionValue,
                    Subject::new(Check::Value, &["totals"]),
                    format!(
                        "head {h}: the column total of position {p} is {t} ({:#018x}); totals must be finite and non-negative",
                        t.to_bits()
                    ),
                ));
            }
        }
    }
    Ok(())
}
