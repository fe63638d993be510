//! What the history's readers (bench compare, the report site) take out of
//! a run's results document: kernels and their timing samples, tests and
//! their outcomes. One reading of each document kind, so `bench compare`
//! and the site never disagree on what a run measured.

use serde_json::Value;

/// One kernel of a bench run: its name (MIOpenDriver's arguments, which
/// identify the problem) and every timing sample in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSamples {
    /// The row's `arguments` (e.g. `conv -n 1 -c 4 ...`): the same problem
    /// in two runs has the same arguments.
    pub name: String,
    /// The IREE function name, when the row has one.
    pub func_name: Option<String>,
    /// Every sample (`stats.times_us`); empty when the row was not timed
    /// or failed.
    pub times_us: Vec<f64>,
    pub gflops: Option<f64>,
    /// The row's `status` (`ok`, `failed` ...).
    pub status: String,
}

/// The kernels of a bench-results document (`lockstep bench --json`), in
/// row order. Rows without arguments are left out; a document that is not
/// a bench result gives none.
pub fn bench_kernels(results: &Value) -> Vec<KernelSamples> {
    let Some(rows) = results.get("rows").and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|row| {
            let name = row.get("arguments")?.as_str()?.trim().to_string();
            if name.is_empty() {
                return None;
            }
            let times_us = row
                .get("stats")
                .and_then(|s| s.get("times_us"))
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_f64)
                        .filter(|x| x.is_finite())
                        .collect()
                })
                .unwrap_or_default();
            Some(KernelSamples {
                name,
                func_name: row
                    .get("func_name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                times_us,
                gflops: row.get("gflops").and_then(Value::as_f64),
                status: row
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string(),
            })
        })
        .collect()
}
