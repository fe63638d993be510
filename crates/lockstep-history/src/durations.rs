//! Each test's recorded duration, for `lockstep test --shard I/N` to
//! balance shards by time instead of by name.
//!
//! Every shard of a run must compute the same partition, so the durations
//! come only from runs that no shard of a sharded run can have added: the
//! newest [`RUNS`] `test` runs made without `--shard` (their results'
//! `summary.shard` is null; runs from before that key count as unsharded).
//! A nightly full run, say, balances the sharded presubmit runs after it,
//! and shard 1 recording its run never moves a test into shard 2's plan.

use std::collections::BTreeMap;

use crate::record::Kind;
use crate::store::Loaded;

/// How many of the newest unsharded test runs are read.
pub const RUNS: usize = 5;

/// Test id -> the median of its `seconds` over the newest [`RUNS`]
/// unsharded test runs of `loaded` that ran it (finite, non-negative
/// times only).
pub fn test_durations(loaded: &Loaded) -> BTreeMap<String, f64> {
    let unsharded = loaded.runs.iter().rev().filter(|run| {
        run.kind == Kind::Test
            && run
                .results
                .get("summary")
                .and_then(|s| s.get("shard"))
                .is_none_or(|shard| shard.is_null())
    });
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in unsharded.take(RUNS) {
        let Some(tests) = run.results.get("tests").and_then(|t| t.as_array()) else {
            continue;
        };
        for test in tests {
            let (Some(id), Some(seconds)) = (
                test.get("id").and_then(|v| v.as_str()),
                test.get("seconds").and_then(|v| v.as_f64()),
            ) else {
                continue;
            };
            if seconds.is_finite() && seconds >= 0.0 {
                samples.entry(id.to_string()).or_default().push(seconds);
            }
        }
    }
    samples
        .into_iter()
        .map(|(id, mut times)| {
            times.sort_by(f64::total_cmp);
            let mid = times.len() / 2;
            let median = match times.len() % 2 {
                1 => times[mid],
                _ => (times[mid - 1] + times[mid]) / 2.0,
            };
            (id, median)
        })
        .collect()
}
