//! Rows remembered, so that a rerun of an unchanged batch reads its results
//! instead of timing and verifying every kernel again (`lockstep bench`
//! warm: a few milliseconds of lookups where the cold run spends seconds).
//!
//! A row that timed and verified cleanly is recorded in the cache's results
//! area (lockstep's own, never BOO's shared kernel directory) under everything its result depends on: the kernel's key (compiler
//! identity, MLIR, every compile flag), the runtime tools' sha256
//! (`iree-benchmark-module`, `iree-run-module`: a `--iree-bin` tree's
//! compiler identity does not cover its runtime), the runtime device and its
//! flags, the iterations, whether it was timed and verified, the splat value,
//! the thread count, the verification seed, and the machine (host name, CPU
//! model, cores): a timing belongs to the machine that measured it. Any
//! change is a new key, so exactly the rows it touches run again. A failed
//! row is never recorded (it always runs again). An answered row says so:
//! `recorded` in the JSON (when it was measured), a count in the summary.
//! `--no-cache` times and verifies every row again (the compiled kernels
//! still come from the kernel cache) and records the new results.

use lockstep_cache::{Area, Bucket, Key, KeyBuilder};
use serde::{Deserialize, Serialize};

use crate::rows::{Check, Row, Stats};

/// The format of row entries (bump when what they hold changes).
const VERSION: u32 = 1;

/// Where rows are recorded and what every key of this batch shares.
#[derive(Debug)]
pub struct Record {
    bucket: Bucket,
    /// Whether rows are answered from it (false: `--no-cache`, recorded only).
    answers: bool,
    /// The runtime tools, the device, the batch's settings and the machine.
    shared: Vec<String>,
}

/// What one row's record holds: its measured results.
#[derive(Debug, Serialize, Deserialize)]
struct Measured {
    stats: Option<Stats>,
    gflops: Option<f64>,
    gbps: Option<f64>,
    timing_seconds: Option<f64>,
    verify: String,
    check: Option<Check>,
    /// When it was measured (RFC 3339).
    measured: String,
}

/// What one row's result depends on beyond the batch's shared parts.
pub struct RowKey<'a> {
    pub kernel: &'a Key,
    pub iterations: u32,
    pub time: bool,
    pub verify: bool,
}

impl Record {
    /// The record of a batch run on `runtime` (`tools`: the runtime tools'
    /// sha256; `None` when one cannot be read: nothing is recorded).
    pub fn new(
        bucket: Bucket,
        answers: bool,
        tools: Option<Vec<String>>,
        settings: Vec<String>,
    ) -> Option<Record> {
        let mut shared = tools?;
        shared.extend(settings);
        shared.push(format!("machine={}", machine()));
        Some(Record {
            bucket,
            answers,
            shared,
        })
    }

    fn key(&self, row: &RowKey<'_>) -> Key {
        KeyBuilder::new(Area::Results, VERSION)
            .part("kind", "bench-row")
            .part("kernel", row.kernel.to_string())
            .parts("batch", &self.shared)
            .part("iterations", row.iterations.to_string())
            .part("time", if row.time { "1" } else { "0" })
            .part("verify", if row.verify { "1" } else { "0" })
            .finish()
    }

    /// Fills `row` from its record; whether there was one.
    pub fn answer(&self, key: &RowKey<'_>, row: &mut Row) -> bool {
        if !self.answers {
            return false;
        }
        let Some(measured) = self
            .bucket
            .slot(&self.key(key), None)
            .get()
            .and_then(|entry| entry.meta_as::<Measured>())
        else {
            return false;
        };
        row.stats = measured.stats;
        row.gflops = measured.gflops;
        row.gbps = measured.gbps;
        row.timing_seconds = measured.timing_seconds;
        row.verify = measured.verify;
        row.check = measured.check;
        row.status = "ok".to_string();
        row.cached = true;
        row.recorded = Some(measured.measured);
        true
    }

    /// Records a row that timed and verified cleanly (best effort: a cache
    /// that cannot be written only costs a rerun).
    pub fn remember(&self, key: &RowKey<'_>, row: &Row) {
        if row.status != "ok" || row.verify == "FAIL" {
            return;
        }
        let measured = Measured {
            stats: row.stats.clone(),
            gflops: row.gflops,
            gbps: row.gbps,
            timing_seconds: row.timing_seconds,
            verify: row.verify.clone(),
            check: row.check.clone(),
            measured: jiff::Timestamp::now()
                .round(jiff::Unit::Second)
                .map_or_else(|_| String::new(), |t| t.to_string()),
        };
        let Ok(meta) = serde_json::to_value(&measured) else {
            return;
        };
        let slot = self.bucket.slot(&self.key(key), None);
        if let Ok(lock) = slot.lock() {
            let _ = lock.stage().commit(meta);
        }
    }
}

/// This machine, as far as a timing depends on it: host name, CPU model,
/// cores.
fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_string())
        })
        .unwrap_or_default();
    let cores = lockstep_core::pool::cpus();
    format!("{}/{cpu}/{cores}", host.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(dir: &std::path::Path, settings: &[&str]) -> Record {
        let cache = lockstep_cache::Cache::at(dir.to_path_buf());
        let bucket = cache.enabled(Area::Results).expect("the results area");
        Record::new(
            bucket,
            true,
            Some(vec!["iree-benchmark-module=aa".into()]),
            settings.iter().map(|s| s.to_string()).collect(),
        )
        .expect("a record")
    }

    fn measured_row() -> Row {
        Row {
            status: "ok".into(),
            verify: "PASS".into(),
            gflops: Some(1.5),
            stats: Stats::from_samples(&[1.0, 2.0, 3.0]),
            ..Row::default()
        }
    }

    /// The key of a timed, verified row of 10 iterations of `kernel`.
    fn row_key(kernel: &Key) -> RowKey<'_> {
        RowKey {
            kernel,
            iterations: 10,
            time: true,
            verify: true,
        }
    }

    #[test]
    fn a_clean_row_is_answered_by_its_record_and_nothing_else_is() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = crate::cache::key("c", "module", &[]);
        let other = crate::cache::key("c", "another module", &[]);
        let rec = record(dir.path(), &["device=local-task"]);
        let at = |k| row_key(k);
        rec.remember(&at(&kernel), &measured_row());
        let mut row = Row::default();
        assert!(rec.answer(&at(&kernel), &mut row));
        assert_eq!(
            (row.status.as_str(), row.verify.as_str(), row.gflops),
            ("ok", "PASS", Some(1.5))
        );
        assert_eq!(row.stats, measured_row().stats);
        assert!(
            row.recorded.as_deref().is_some_and(|t| t.ends_with('Z')),
            "{row:?}"
        );
        // Another kernel, other iterations, unverified, another device: none answered.
        assert!(!rec.answer(&at(&other), &mut Row::default()));
        assert!(!rec.answer(
            &RowKey {
                iterations: 11,
                ..at(&kernel)
            },
            &mut Row::default()
        ));
        assert!(!rec.answer(
            &RowKey {
                verify: false,
                ..at(&kernel)
            },
            &mut Row::default()
        ));
        let elsewhere = record(dir.path(), &["device=local-sync"]);
        assert!(!elsewhere.answer(&at(&kernel), &mut Row::default()));
    }

    #[test]
    fn a_failed_row_is_never_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = crate::cache::key("c", "module", &[]);
        let rec = record(dir.path(), &[]);
        let at = row_key(&kernel);
        rec.remember(
            &at,
            &Row {
                verify: "FAIL".into(),
                ..measured_row()
            },
        );
        rec.remember(
            &at,
            &Row {
                status: "timed out".into(),
                ..measured_row()
            },
        );
        assert!(!rec.answer(&at, &mut Row::default()));
    }

    #[test]
    fn a_record_that_does_not_read_is_measured_again_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = crate::cache::key("c", "module", &[]);
        let rec = record(dir.path(), &[]);
        let at = row_key(&kernel);
        rec.remember(&at, &measured_row());
        let seal = rec.bucket.slot(&rec.key(&at), None).path("json");
        assert!(seal.is_file(), "{}", seal.display());
        std::fs::write(&seal, b"{ not a record").unwrap();
        assert!(!rec.answer(&at, &mut Row::default()));
        rec.remember(&at, &measured_row());
        assert!(rec.answer(&at, &mut Row::default()));
    }

    #[test]
    fn no_runtime_identity_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = lockstep_cache::Cache::at(dir.path().to_path_buf());
        let bucket = cache.enabled(Area::Results).unwrap();
        assert!(Record::new(bucket, true, None, Vec::new()).is_none());
    }

    #[test]
    fn no_cache_records_without_answering() {
        let dir = tempfile::tempdir().unwrap();
        let kernel = crate::cache::key("c", "module", &[]);
        let at = row_key(&kernel);
        let cache = lockstep_cache::Cache::at(dir.path().to_path_buf());
        let bucket = cache.enabled(Area::Results).unwrap();
        let tools = || Some(vec!["iree-benchmark-module=aa".to_string()]);
        let measuring = Record::new(bucket.clone(), false, tools(), Vec::new()).unwrap();
        measuring.remember(&at, &measured_row());
        assert!(!measuring.answer(&at, &mut Row::default()));
        let answering = Record::new(bucket, true, tools(), Vec::new()).unwrap();
        assert!(answering.answer(&at, &mut Row::default()));
    }
}
