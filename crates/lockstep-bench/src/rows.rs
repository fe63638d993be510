//! Results of a bench run: one row per kernel (a `-F 0` line gives one per
//! direction), their statistics, the BOO-style text lines and the CSV.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The CSV header, exactly.
pub const CSV_HEADER: &str = "arguments,min_time (us),max_time (us),mean_time (us),median_time (us),stddev (us),gflops,gbps,func_name,verify,status";

/// The status prefix of a row whose device is missing here.
pub const SKIPPED: &str = "skipped: ";
/// The status of a row compiled with `--compile-only`.
pub const COMPILED_ONLY: &str = "compiled (--compile-only)";

/// Statistics over the timed samples, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
    pub samples: usize,
    /// Every sample in the order they were timed (the warm-up dropped): what
    /// a later comparison of two runs resamples (lockstep-stats).
    pub times_us: Vec<f64>,
}

impl Stats {
    /// `None` for no samples. The standard deviation is the sample one (n-1).
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        let median = lockstep_stats::median(samples)?;
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Stats {
            min: sorted[0],
            max: sorted[n - 1],
            mean,
            median,
            stddev,
            samples: n,
            times_us: samples.to_vec(),
        })
    }
}

/// One result row.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// Index of the command (line) this row belongs to, in input order.
    pub command: usize,
    /// Line number in the commands file.
    pub line: Option<usize>,
    /// The MIOpen command without a driver prefix.
    pub arguments: String,
    pub func_name: String,
    /// Shape and dtype of the kernel's result (empty when unknown).
    pub output_shape: Vec<u64>,
    pub output_dtype: String,
    pub stats: Option<Stats>,
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    /// `PASS`, `FAIL`, or empty when the kernel was not verified.
    pub verify: String,
    /// `ok` or why the row failed.
    pub status: String,
    /// True when the module came from the cache.
    pub cached: bool,
    /// Wall seconds of the iree-compile run that built this row's module: 0
    /// when it came from the cache or an earlier row of the run built it.
    pub compile_seconds: f64,
    /// Wall seconds of the timed iree-benchmark-module process (`None` when
    /// the kernel was not timed).
    pub timing_seconds: Option<f64>,
    /// The compiled module (`.vmfb`) the row ran (`None` when there is none).
    pub module: Option<PathBuf>,
    /// The line's leading repeat count (recorded only).
    pub repeat: Option<u64>,
    /// The verification details when the kernel was verified.
    pub check: Option<Check>,
    /// Remarks from parsing the command (flags accepted and ignored).
    pub notes: Vec<String>,
    /// When the results were measured, for a row answered from its record
    /// (an unchanged kernel, runtime, device and machine; `--no-cache`
    /// measures again); `None` when measured by this run.
    pub recorded: Option<String>,
}

/// Details of a verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Largest absolute error (`None` when there was no output to compare).
    pub max_abs: Option<f64>,
    /// Largest relative error over elements with a nonzero reference.
    pub max_rel: Option<f64>,
    /// Elements outside the tolerance.
    pub failures: usize,
    /// Why the kernel could not be verified.
    pub error: Option<String>,
    pub passed: bool,
}

impl Check {
    /// The `>>> verify:` line.
    pub fn line(&self) -> String {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        match (&self.error, self.max_abs, self.max_rel) {
            (Some(reason), _, _) => format!(">>> verify: {verdict} ({reason})"),
            (None, Some(abs), Some(rel)) if self.failures > 0 => format!(
                ">>> verify: max_abs={abs:.3e} max_rel={rel:.3e} {verdict} ({} out of tolerance)",
                lockstep_core::words::count(self.failures, "element", "elements")
            ),
            (None, Some(abs), Some(rel)) => {
                format!(">>> verify: max_abs={abs:.3e} max_rel={rel:.3e} {verdict}")
            }
            _ => format!(">>> verify: {verdict}"),
        }
    }
}

impl Row {
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }

    /// Compiled but not run: `--compile-only`, or its device is not on this
    /// machine (`skipped: ...`). Neither ok nor failed.
    pub fn skipped(&self) -> bool {
        self.status.starts_with(SKIPPED) || self.status == COMPILED_ONLY
    }

    /// The `>>>` lines BOO prints after the command.
    pub fn boo_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.output_dtype.is_empty() {
            let dims: Vec<String> = self.output_shape.iter().map(u64::to_string).collect();
            // Printed as Python prints a tuple: `(64,)` for one dimension.
            let trailing = if dims.len() == 1 { "," } else { "" };
            lines.push(format!(
                ">>> tensor(size=({}{trailing}), dtype=torch.{})  {}",
                dims.join(", "),
                self.output_dtype,
                self.func_name
            ));
        }
        match &self.stats {
            Some(s) if self.ok() => lines.push(format!(
                ">>> min={:.2}us max={:.2}us mean={:.2}us median={:.2}us stddev={:.2}us",
                s.min, s.max, s.mean, s.median, s.stddev
            )),
            None if self.ok() => lines.push(">>> not timed (-t 0)".to_string()),
            _ if self.skipped() => lines.push(format!(">>> {}", self.status)),
            _ => lines.push(format!(">>> failed: {}", self.status)),
        }
        if let Some(check) = &self.check {
            lines.push(check.line());
        }
        lines
    }

    /// The row as a CSV line (no newline).
    pub fn csv(&self) -> String {
        let num = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
        let s = self.stats.as_ref().filter(|_| self.ok());
        [
            quote(&self.arguments),
            num(s.map(|s| s.min)),
            num(s.map(|s| s.max)),
            num(s.map(|s| s.mean)),
            num(s.map(|s| s.median)),
            num(s.map(|s| s.stddev)),
            num(self.gflops.filter(|_| s.is_some())),
            num(self.gbps.filter(|_| s.is_some())),
            quote(&self.func_name),
            quote(&self.verify),
            quote(&self.status),
        ]
        .join(",")
    }
}

/// The whole CSV file.
pub fn csv(rows: &[Row]) -> String {
    let mut text = String::from(CSV_HEADER);
    text.push('\n');
    for row in rows {
        text.push_str(&row.csv());
        text.push('\n');
    }
    text
}

/// RFC 4180 quoting when needed.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics() {
        let s = Stats::from_samples(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.min, s.max, s.mean, s.median), (1.0, 4.0, 2.5, 2.5));
        assert_eq!(
            s.times_us,
            vec![4.0, 1.0, 3.0, 2.0],
            "every sample, in order"
        );
        assert!(Stats::from_samples(&[1.0, f64::NAN]).is_none());
        assert!((s.stddev - 1.290_994).abs() < 1e-5);
        let s = Stats::from_samples(&[5.0]).unwrap();
        assert_eq!((s.median, s.stddev), (5.0, 0.0));
        assert!(Stats::from_samples(&[]).is_none());
    }

    #[test]
    fn failed_rows_leave_times_empty_and_fields_are_quoted() {
        let row = Row {
            line: Some(3),
            arguments: "conv --bogus 1".into(),
            stats: Some(Stats::from_samples(&[1.0]).unwrap()),
            gflops: Some(1.0),
            gbps: Some(1.0),
            status: "line 3: unknown flag `--bogus`, really".into(),
            ..Row::default()
        };
        assert_eq!(
            row.csv(),
            "conv --bogus 1,,,,,,,,,,\"line 3: unknown flag `--bogus`, really\""
        );
        assert_eq!(csv(&[]).trim_end(), CSV_HEADER);
    }

    #[test]
    fn shapes_print_as_python_tuples() {
        let mut row = Row {
            arguments: "layernorm -X 8x64 -F 4".into(),
            func_name: "f".into(),
            output_shape: vec![64],
            output_dtype: "float16".into(),
            status: "ok".into(),
            ..Row::default()
        };
        assert_eq!(
            row.boo_lines()[0],
            ">>> tensor(size=(64,), dtype=torch.float16)  f"
        );
        row.output_shape = vec![2, 3];
        assert_eq!(
            row.boo_lines()[0],
            ">>> tensor(size=(2, 3), dtype=torch.float16)  f"
        );
    }

    #[test]
    fn verify_lines() {
        let mut check = Check {
            max_abs: Some(0.5),
            max_rel: Some(0.25),
            failures: 0,
            error: None,
            passed: true,
        };
        assert_eq!(
            check.line(),
            ">>> verify: max_abs=5.000e-1 max_rel=2.500e-1 PASS"
        );
        check.failures = 3;
        check.passed = false;
        assert_eq!(
            check.line(),
            ">>> verify: max_abs=5.000e-1 max_rel=2.500e-1 FAIL (3 elements out of tolerance)"
        );
        check.error = Some("verification run failed".into());
        assert_eq!(check.line(), ">>> verify: FAIL (verification run failed)");
    }
}
