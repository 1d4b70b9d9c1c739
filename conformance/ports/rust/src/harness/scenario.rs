//! A scenario as the harness receives it (spec/harness.md#scenarios): explicit
//! steps (`ScenarioStep`: a full-cache row, one row per query head
//! (spec/heads.md#rows-per-head), or query rows (spec/prefill.md#query-rows)
//! with column totals (spec/prefill.md#column-totals)), each with its keys
//! (and values) in a scenario with keys (values) (spec/tensors.md#the-fields), or a generated trace
//! (spec/trace.md). Its steps are checked in `refusals.rs` and run in `run.rs`.

use crate::trace::TraceParams;

/// One step of an explicit scenario, as on the wire: how many it admits,
/// `row` (the proto's `attention`: one full-cache row, `None` if absent),
/// `heads` (one row per query head when there are several), `queries`
/// (the query rows of a prefill step, `Hq x m` of them, head 0's first;
/// spec/prefill.md#query-rows), and `totals` with `total_rows` (the
/// proto's fields 5 and 6: per query head, head 0 first, one binary64 per
/// position `0 .. a+c-1`, summed over the step's last `total_rows`
/// queries; empty and 0 without totals; spec/prefill.md#column-totals),
/// and `keys` (the proto's field 7: in a scenario with `head_dim` `d`, one
/// entry per KV head, KV head 0 first, each the `admit x d` binary32 key
/// values of the admitted positions, position ascending; empty in one
/// without; spec/tensors.md#the-fields), and `values` (the proto's field
/// 8, since spec 0.18.0: as `keys` with `value_dim` for `head_dim`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioStep {
    pub admit: u32,
    pub row: Option<Vec<f32>>,
    pub heads: Vec<Vec<f32>>,
    pub queries: Vec<Vec<f32>>,
    pub totals: Vec<Vec<f64>>,
    pub total_rows: u32,
    pub keys: Vec<Vec<f32>>,
    pub values: Vec<Vec<f32>>,
}

impl ScenarioStep {
    /// A single-head step: `row` is its full-cache row (`None` is null).
    pub fn single(admit: u32, row: Option<Vec<f32>>) -> Self {
        ScenarioStep { admit, row, ..Default::default() }
    }

    /// A multi-head step: one row per query head (empty is null attention).
    pub fn per_head(admit: u32, heads: Vec<Vec<f32>>) -> Self {
        ScenarioStep { admit, heads, ..Default::default() }
    }

    /// A prefill step: its query rows, `Hq x m`, head 0's first.
    pub fn prefill(admit: u32, queries: Vec<Vec<f32>>) -> Self {
        ScenarioStep { admit, queries, ..Default::default() }
    }

    /// The same step carrying column totals: `totals[h]` is query head
    /// `h`'s, over the step's last `total_rows` queries.
    pub fn with_totals(self, totals: Vec<Vec<f64>>, total_rows: u32) -> Self {
        ScenarioStep { totals, total_rows, ..self }
    }

    /// The same step carrying keys: `keys[g]` is KV head `g`'s, `admit x
    /// head_dim` values (spec/tensors.md#the-fields).
    pub fn with_keys(self, keys: Vec<Vec<f32>>) -> Self {
        ScenarioStep { keys, ..self }
    }

    /// The same step carrying values: `values[g]` is KV head `g`'s, `admit
    /// x value_dim` values (spec/tensors.md#the-fields).
    pub fn with_values(self, values: Vec<Vec<f32>>) -> Self {
        ScenarioStep { values, ..self }
    }
}

/// A scenario: explicit steps or a generated trace (spec/harness.md#scenarios).
#[derive(Clone, Debug, PartialEq)]
pub enum Scenario {
    Steps(Vec<ScenarioStep>),
    Trace(TraceParams),
}
