//! lockstep's own speed over time: the runs of `scripts/bench-all --json`
//! (a `lockstep-speed` document: per row the command, the work, lockstep's
//! time, the reference it is measured against, their ratio and the target)
//! imported into the history, so the report site can show the latest table
//! with each row's previous ratio beside it: a slowdown of lockstep itself
//! shows as a row, not by chance.
//!
//! The document comes from a script, so every field is read defensively: a
//! row without a command is left out, a number that is not one is shown as
//! missing, never a panic.

use serde_json::Value;

use crate::record::{Kind, RunRecord};

/// What `document` says in a lockstep-speed file.
pub const DOCUMENT: &str = "lockstep-speed";

/// The most rows one table shows.
pub const MAX_ROWS: usize = 200;

/// Whether `doc` is a lockstep-speed document (`scripts/bench-all --json`).
pub fn is_speed_document(doc: &Value) -> bool {
    doc.get("document").and_then(Value::as_str) == Some(DOCUMENT)
        && doc.get("rows").is_some_and(Value::is_array)
}

/// One row of the latest table.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedRow {
    pub command: String,
    pub work: String,
    pub lockstep_s: Option<f64>,
    pub reference: String,
    pub reference_s: Option<f64>,
    pub ratio: Option<f64>,
    /// As the script wrote it (`<= 1.1`, `-` for none).
    pub target: String,
    /// The same row's ratio in the speed run before (same command and work).
    pub previous_ratio: Option<f64>,
}

impl SpeedRow {
    /// True when the target reads `<= X` and the ratio is above X.
    pub fn over_target(&self) -> bool {
        match (self.ratio, target_bound(&self.target)) {
            (Some(ratio), Some(bound)) => ratio > bound,
            _ => false,
        }
    }
}

/// The latest speed run's table.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedTable {
    /// When the latest run was imported or recorded (RFC 3339).
    pub started: String,
    /// Its source commit, when known.
    pub commit: Option<String>,
    pub rows: Vec<SpeedRow>,
    /// Rows beyond [`MAX_ROWS`], left out.
    pub hidden: usize,
    /// How many speed runs the history holds.
    pub runs: usize,
}

/// The bound of a target that reads `<= X ...`.
pub fn target_bound(target: &str) -> Option<f64> {
    let rest = target.trim().strip_prefix("<=")?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The rows of one lockstep-speed document (at most [`MAX_ROWS`]).
pub fn rows(doc: &Value) -> Vec<SpeedRow> {
    rows_of(doc).0
}

/// The rows of one document (at most [`MAX_ROWS`]) and how many were left out.
fn rows_of(doc: &Value) -> (Vec<SpeedRow>, usize) {
    let all: Vec<SpeedRow> = doc
        .get("rows")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(row_of)
        .collect();
    let hidden = all.len().saturating_sub(MAX_ROWS);
    (all.into_iter().take(MAX_ROWS).collect(), hidden)
}

fn row_of(value: &Value) -> Option<SpeedRow> {
    let text = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default()
    };
    let number = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite())
    };
    let command = text("command");
    if command.is_empty() {
        return None;
    }
    Some(SpeedRow {
        command,
        work: text("work"),
        lockstep_s: number("lockstep_s"),
        reference: text("reference"),
        reference_s: number("reference_s"),
        ratio: number("ratio"),
        target: text("target"),
        previous_ratio: None,
    })
}

/// The latest speed run's table (runs ordered by start, the last wins),
/// each row with its ratio in the run before; `None` without speed runs.
pub fn speed_table(runs: &[RunRecord]) -> Option<SpeedTable> {
    let mut speed: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.kind == Kind::Speed && is_speed_document(&r.results))
        .collect();
    speed.sort_by(|a, b| a.started.cmp(&b.started).then(a.id.cmp(&b.id)));
    let (latest, earlier) = speed.split_last()?;
    let (mut rows, hidden) = rows_of(&latest.results);
    if let Some(before) = earlier.last() {
        let (previous, _) = rows_of(&before.results);
        for row in &mut rows {
            row.previous_ratio = previous
                .iter()
                .find(|p| p.command == row.command && p.work == row.work)
                .and_then(|p| p.ratio);
        }
    }
    Some(SpeedTable {
        started: latest.started.clone(),
        commit: latest.source.commit.clone(),
        rows,
        hidden,
        runs: speed.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Machine, Source, SCHEMA};
    use proptest::prelude::*;
    use serde_json::json;

    fn run(n: u32, rows: Value) -> RunRecord {
        RunRecord {
            schema: SCHEMA,
            id: format!("run{n}"),
            kind: Kind::Speed,
            started: format!("2026-11-{:02}T00:00:00Z", n + 1),
            finished: format!("2026-11-{:02}T00:00:00Z", n + 1),
            source: Source::default(),
            pins: Default::default(),
            toolchain: None,
            machine: Machine::default(),
            results: json!({"schema": 1, "document": DOCUMENT, "rows": rows}),
        }
    }

    #[test]
    fn the_latest_run_is_shown_with_each_rows_previous_ratio() {
        let first = run(
            1,
            json!([{"command": "lockstep integrate status", "work": "382 commits", "lockstep_s": 0.03, "reference": "git log", "reference_s": 0.017, "ratio": 1.76, "target": "<= 1.1"}]),
        );
        let second = run(
            2,
            json!([
                {"command": "lockstep integrate status", "work": "382 commits", "lockstep_s": 0.014, "reference": "git log", "reference_s": 0.018, "ratio": 0.78, "target": "<= 1.1"},
                {"command": "lockstep test (warm)", "work": "40 cases", "lockstep_s": 0.02, "reference": "lockstep cold", "reference_s": 6.4, "ratio": 0.0031, "target": "<= 0.005"},
                {"work": "a row without a command is left out"}
            ]),
        );
        let table = speed_table(&[second, first]).expect("a table");
        assert_eq!(table.runs, 2);
        assert_eq!(table.rows.len(), 2);
        assert_eq!(table.rows[0].previous_ratio, Some(1.76));
        assert_eq!(table.rows[1].previous_ratio, None);
        assert!(!table.rows[0].over_target());
        assert_eq!(target_bound("<= 1.1 (<= 1.2 at 50,000)"), Some(1.1));
        assert_eq!(target_bound("-"), None);
        let slow = SpeedRow {
            ratio: Some(1.3),
            ..table.rows[0].clone()
        };
        assert!(slow.over_target());
        assert_eq!(speed_table(&[]), None);
    }

    proptest! {
        /// Any JSON in a speed document's rows: never a panic, and every row
        /// kept has a command.
        #[test]
        fn any_rows_read_without_panic(rows in proptest::collection::vec(
            prop_oneof![
                Just(json!(null)),
                Just(json!({"command": "c", "ratio": "x", "lockstep_s": -1.0})),
                ".{0,12}".prop_map(|s| json!({"command": s, "target": "<= 1e309"})),
                any::<f64>().prop_map(|f| json!({"command": "n", "ratio": f, "target": format!("<= {f}")})),
            ], 0..8)) {
            let table = speed_table(&[run(1, Value::Array(rows))]).expect("a table");
            for row in &table.rows {
                prop_assert!(!row.command.is_empty());
                let _ = row.over_target();
            }
        }
    }
}
