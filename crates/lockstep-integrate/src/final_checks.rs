//! `[integrate] final-checks`: the checks that run at the end of an
//! integrate, not patch by patch (the megabump way with lit tests: the
//! trivially broken ones are batched up and handed to someone to fix).
//!
//! Each check is a shell command (`lockstep test suites/lit`), run in the
//! superproject when a loop reaches upstream's head and at every halt. A
//! check never halts the loop: its failures are recorded with the
//! superproject commit they were found at, listed in the pull request's
//! body as "to fix before landing" (each failing test and the first lines of
//! what it said), and keep the pull request a draft. A `lockstep test`
//! check reports its failing tests by name: lockstep gives it
//! `$LOCKSTEP_TEST_RESULTS` (a file it writes its JSON results to); any
//! other command that fails is one entry with its output's last lines.

use std::path::{Path, PathBuf};

use lockstep_core::process::{self, Exit, Spec};
use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::Integrate;

/// The store record of the last final checks.
pub(crate) const RECORD: &str = "final_checks";

/// The variable a `lockstep test` check writes its JSON results to.
pub const RESULTS_VAR: &str = "LOCKSTEP_TEST_RESULTS";

/// Lines of a failure kept for the pull request.
const LINES: usize = 4;

/// Failures listed per check before "... and N more".
pub const MAX_LISTED: usize = 50;

/// The final checks at one superproject commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FinalChecks {
    /// The superproject commit they ran at.
    pub head: String,
    pub checks: Vec<CheckResult>,
}

impl FinalChecks {
    /// Every failure of every check.
    pub fn failures(&self) -> usize {
        self.checks.iter().map(|c| c.failures.len()).sum()
    }
}

/// One check's result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckResult {
    /// The command as configured.
    pub command: String,
    pub passed: bool,
    /// `exit status 1`, `timed out` ...
    pub exit: String,
    pub failures: Vec<Failure>,
    pub log: PathBuf,
    pub seconds: f64,
}

/// A test to fix before landing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Failure {
    /// The test's id (or the check's command when it names no test).
    pub test: String,
    /// The first lines of what it said.
    pub lines: Vec<String>,
}

/// Runs every `[integrate] final-checks` command at HEAD and records
/// the results; `None` when none is configured.
pub fn run_final_checks(ig: &Integrate) -> Result<Option<FinalChecks>, Error> {
    if ig.cfg.final_checks.is_empty() {
        return Ok(None);
    }
    let run_dir = ig.run_dir("final-checks")?;
    let head = ig.superproject.head()?.to_string();
    let mut checks = Vec::new();
    for (n, command) in ig.cfg.final_checks.iter().enumerate() {
        ig.info(format!("final check {}: {command}", n + 1));
        checks.push(crate::final_checks::final_check(
            ig,
            command,
            &run_dir,
            n + 1,
        )?);
    }
    let done = FinalChecks { head, checks };
    ig.store.set(RECORD, &done)?;
    let failing = done.failures();
    if failing > 0 {
        ig.info(format!(
            "final checks: {} to fix before landing (the loop goes on)",
            lockstep_core::words::count(failing, "failure", "failures")
        ));
    }
    Ok(Some(done))
}

/// The final checks recorded at the superproject's HEAD, if any.
pub fn final_checks_at_head(ig: &Integrate) -> Result<Option<FinalChecks>, Error> {
    let head = ig.superproject.head()?.to_string();
    Ok(ig
        .store
        .get::<FinalChecks>(RECORD)?
        .filter(|c| c.head == head))
}

fn final_check(
    ig: &Integrate,
    command: &str,
    run_dir: &Path,
    n: usize,
) -> Result<CheckResult, Error> {
    let results = run_dir.join(format!("final-check-{n}.json"));
    let log = run_dir.join(format!("final-check-{n}.log"));
    let spec = Spec {
        argv: vec!["sh".into(), "-c".into(), command.to_string()],
        cwd: ig.superproject.dir().to_path_buf(),
        env: vec![(RESULTS_VAR.into(), results.display().to_string())],
        timeout: Some(ig.cfg.final_check_timeout),
        log: log.clone(),
        header: Some(format!("$ {command}")),
    };
    let finished = process::run(&spec, |_| {})?;
    let passed = finished.exit == Exit::Code(0);
    let mut failures = failing_tests(&results);
    if !passed && failures.is_empty() {
        failures.push(Failure {
            test: command.to_string(),
            lines: last_lines(&log, LINES),
        });
    }
    Ok(CheckResult {
        command: command.to_string(),
        passed: passed && failures.is_empty(),
        exit: finished.exit.describe(),
        failures,
        log,
        seconds: finished.elapsed.as_secs_f64(),
    })
}

/// The failing tests of `lockstep test`'s JSON results (none when the
/// check wrote none).
fn failing_tests(results: &Path) -> Vec<Failure> {
    let Ok(text) = lockstep_core::fs::read_input_text("final check results", results, 64 << 20)
    else {
        return Vec::new();
    };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    doc["tests"]
        .as_array()
        .map(|tests| {
            tests
                .iter()
                .filter(|t| matches!(t["outcome"].as_str(), Some("fail" | "xpass")))
                .map(|t| {
                    let mut lines: Vec<String> = Vec::new();
                    if let Some(reason) = t["reason"].as_str().filter(|r| !r.is_empty()) {
                        lines.push(reason.to_string());
                    }
                    Failure {
                        test: t["id"].as_str().unwrap_or_default().to_string(),
                        lines,
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The last `n` non-empty lines of `log`.
fn last_lines(log: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    lockstep_core::words::last_lines(&text, n)
}

/// The pull request's section: what to fix before landing.
pub fn body_section(checks: &FinalChecks) -> String {
    let failing = checks.failures();
    if failing == 0 {
        return format!(
            "## Final checks\n\nEvery final check passed at `{}`.\n",
            &checks.head[..12.min(checks.head.len())]
        );
    }
    let mut t = format!(
        "## To fix before landing ({failing})\n\nThe final checks at `{}` found these (they do not halt the integrate):\n",
        &checks.head[..12.min(checks.head.len())]
    );
    for check in checks.checks.iter().filter(|c| !c.passed) {
        t += &format!("\n`{}` ({}):\n\n", check.command, check.exit);
        for failure in check.failures.iter().take(MAX_LISTED) {
            t += &format!("- `{}`", failure.test);
            if let Some(first) = failure.lines.first() {
                t += &format!(": {}", first.replace('`', "'"));
            }
            t += "\n";
        }
        if check.failures.len() > MAX_LISTED {
            t += &format!("- ... and {} more\n", check.failures.len() - MAX_LISTED);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_tests_come_from_the_results_and_the_body_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("r.json");
        std::fs::write(
            &results,
            r#"{"tests":[{"id":"lit/a.mlir [lit]","outcome":"fail","reason":"lit FAIL: a.mlir:2: error: no match"},
                        {"id":"lit/b.mlir [lit]","outcome":"pass","reason":""},
                        {"id":"lit/c.mlir [lit]","outcome":"xpass","reason":"lit XPASS"}]}"#,
        )
        .unwrap();
        let failures = failing_tests(&results);
        assert_eq!(failures.len(), 2);
        assert_eq!(failures[0].test, "lit/a.mlir [lit]");
        let checks = FinalChecks {
            head: "0123456789abcdef".into(),
            checks: vec![CheckResult {
                command: "lockstep test suites/lit".into(),
                passed: false,
                exit: "exit status 1".into(),
                failures,
                log: PathBuf::from("x.log"),
                seconds: 1.0,
            }],
        };
        let body = body_section(&checks);
        assert!(body.starts_with("## To fix before landing (2)"), "{body}");
        assert!(
            body.contains("- `lit/a.mlir [lit]`: lit FAIL: a.mlir:2: error: no match"),
            "{body}"
        );
        assert!(failing_tests(&dir.path().join("missing.json")).is_empty());
        std::fs::write(&results, "not json").unwrap();
        assert!(failing_tests(&results).is_empty());
    }
}
