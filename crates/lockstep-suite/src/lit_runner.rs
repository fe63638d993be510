//! The lit tests of a run: one lit process per suite for the selected
//! tests that the cache does not vouch for, each result a lockstep
//! [`TestResult`] with one `lit` step.
//!
//! A passing test is remembered in the cache's compile area under its
//! inputs (the test file's bytes, the suite's configuration, the IREE
//! compiler's identity and lit's own tools): the next run with nothing
//! changed does not start lit for it. Anything but a pass is run again.
//! A suite lit cannot run (its configuration fails to load, no report, a
//! report that is not a regular file or lacks a test lit was given) fails
//! each of its selected tests with lit's words: never a pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_cache::{Area, Bucket, KeyBuilder};
use lockstep_core::events::Sink;
use lockstep_iree::Toolchain;

use crate::events::TestEvent;
use crate::lit::{self, Batch, LitProgram, LitResult};
use crate::model::{Outcome, StepKind, StepResult, StepStatus, TestResult};
use crate::plan::Test;

/// The format of lit entries in the compile area (bump when it changes).
const VERSION: u32 = 1;

/// Lines of lit's output a failing test's reason and tail keep.
const TAIL_LINES: usize = 30;

/// What the lit tests of a run need.
pub(crate) struct LitRun<'a> {
    pub program: &'a LitProgram,
    pub toolchain: &'a Toolchain,
    /// The compile area (`None` with --no-cache).
    pub cache: Option<&'a Bucket>,
    pub jobs: usize,
    pub timeout: std::time::Duration,
    pub run_dir: &'a Path,
    pub sink: &'a dyn Sink,
}

/// Runs the lit tests among `tests` (their indices in `order`); each
/// result with its index, reported as it is known (`done` counts up).
pub(crate) fn run(
    r: &LitRun,
    tests: &[Test],
    done: &mut usize,
    total: usize,
) -> Vec<(usize, TestResult)> {
    let mut by_suite: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, t) in tests.iter().enumerate() {
        if let Some(case) = &t.lit {
            by_suite.entry(case.suite.clone()).or_default().push(i);
        }
    }
    let mut results = Vec::new();
    for (suite, indices) in by_suite {
        let config = config_digest(&suite);
        let mut to_run = Vec::new();
        for i in indices {
            let key = key(r, &config, &tests[i]);
            let cached = key
                .as_ref()
                .zip(r.cache)
                .and_then(|(k, bucket)| bucket.slot(k, None).get());
            if cached.is_some() {
                let result = cached_pass(&tests[i]);
                crate::events::finished(r.sink, &result, done, total);
                results.push((i, result));
            } else {
                to_run.push((i, key));
            }
        }
        if to_run.is_empty() {
            continue;
        }
        for (i, _) in &to_run {
            r.sink.emit(&TestEvent::TestStarted {
                id: tests[*i].id.clone(),
            });
        }
        let cases: Vec<lit::LitCase> = to_run
            .iter()
            .filter_map(|(i, _)| tests[*i].lit.clone())
            .collect();
        let work = r
            .run_dir
            .join("lit")
            .join(lockstep_core::fs::file_name(&suite));
        let batch = Batch {
            program: r.program,
            tools: &r.toolchain.bin,
            jobs: r.jobs,
            timeout: r.timeout,
            work: work.clone(),
        };
        let outcome = lit::run(&batch, &suite, &cases);
        for (n, (i, key)) in to_run.iter().enumerate() {
            let command = reproduce(r, &tests[*i]);
            let result = match &outcome {
                Ok(all) => from_lit(&tests[*i], &all[n], &command, &lit::log_of(&work, n)),
                Err(e) => unrunnable(&tests[*i], e, &command, &lit::log_of(&work, n)),
            };
            if result.outcome == Outcome::Pass {
                if let (Some(key), Some(bucket)) = (key, r.cache) {
                    remember_pass(bucket, key);
                }
            }
            crate::events::finished(r.sink, &result, done, total);
            results.push((*i, result));
        }
    }
    results
}

/// The command that reruns one test by hand, from a shell: lit's tools and
/// the IREE tools first on `PATH`, as the run had them.
fn reproduce(r: &LitRun, test: &Test) -> String {
    let Some(case) = &test.lit else {
        return String::new();
    };
    let mut path: Vec<String> = r
        .program
        .path
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    path.push(r.toolchain.bin.display().to_string());
    format!(
        "PATH={}:$PATH {} -v {}",
        path.join(":"),
        r.program.lit.display(),
        case.file().display()
    )
}

/// The sha256 of every file of the suite (its configuration, and the
/// inputs its tests read: `Inputs/`, `%S`-relative data) and of the
/// submodule pins of the repository it is in: a lit suite may test tools
/// built from a submodule (an integrate moves its pin), which lockstep
/// cannot name one by one. Any change reruns the suite's tests; lit's own
/// `Output/` and hidden files do not count.
fn config_digest(suite: &Path) -> String {
    let mut files = Vec::new();
    let mut pending = vec![suite.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "Output" || name == "__pycache__" {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(entry.path()),
                Ok(t) if t.is_file() => files.push(entry.path()),
                _ => {}
            }
        }
    }
    files.sort();
    let mut text = String::new();
    for file in files {
        if let Ok(sha) = lockstep_core::hash::sha256_file(&file) {
            let rel = file.strip_prefix(suite).unwrap_or(&file);
            text.push_str(&format!("{} {sha}\n", rel.display()));
        }
    }
    text.push_str(&submodule_pins(suite));
    lockstep_core::hash::sha256_bytes(text.as_bytes())
}

/// The gitlinks (`160000` entries) of HEAD of the repository around
/// `dir`; empty outside one.
fn submodule_pins(dir: &Path) -> String {
    let Ok(repo) = lockstep_git::Repo::discover(dir) else {
        return String::new();
    };
    repo.try_git(&["ls-tree", "-r", "HEAD"])
        .ok()
        .filter(|o| o.code == 0)
        .map(|o| {
            o.stdout
                .lines()
                .filter(|l| l.starts_with("160000 "))
                .map(|l| format!("{l}\n"))
                .collect()
        })
        .unwrap_or_default()
}

/// A test's key: its file, the suite's configuration, the compiler and
/// lit's tools; `None` when the file cannot be read (it is then run).
fn key(r: &LitRun, config: &str, test: &Test) -> Option<lockstep_cache::Key> {
    let case = test.lit.as_ref()?;
    let file = lockstep_core::hash::sha256_file(&case.file()).ok()?;
    Some(
        KeyBuilder::new(Area::Compile, VERSION)
            .part("kind", "lit")
            .part("compiler", r.toolchain.identity.as_str())
            .part("lit-tools", r.program.identity.as_str())
            .part("config", config)
            .part("path", case.path.as_str())
            .part("file", file.as_str())
            .finish(),
    )
}

fn remember_pass(bucket: &Bucket, key: &lockstep_cache::Key) {
    let slot = bucket.slot(key, None);
    if let Ok(lock) = slot.lock() {
        let _ = lock.stage().commit(serde_json::json!({"lit": "PASS"}));
    }
}

fn result(test: &Test, outcome: Outcome, reason: String, step: StepResult) -> TestResult {
    TestResult {
        id: test.id.clone(),
        case: test.case.clone(),
        group: test.group.clone(),
        outcome,
        reason,
        seconds: step.seconds,
        steps: vec![step],
        markers: test.markers.clone(),
    }
}

fn lit_step(
    status: StepStatus,
    command: &str,
    log: Option<PathBuf>,
    message: String,
) -> StepResult {
    StepResult {
        kind: StepKind::Lit,
        status,
        command: command.to_string(),
        log,
        seconds: 0.0,
        cached: false,
        message,
        output_tail: String::new(),
        metrics: None,
        fetched: Vec::new(),
    }
}

fn cached_pass(test: &Test) -> TestResult {
    let mut step = lit_step(
        StepStatus::Passed,
        "",
        None,
        "passed before with these inputs (cached)".into(),
    );
    step.cached = true;
    result(test, Outcome::Pass, String::new(), step)
}

/// One test's result from lit's report: the reason is lit's code and the
/// first line of its output that says what went wrong.
fn from_lit(test: &Test, lit: &LitResult, command: &str, log: &Path) -> TestResult {
    let status = match lit.outcome {
        Outcome::Pass | Outcome::Xfail => StepStatus::Passed,
        Outcome::Skip => StepStatus::Skipped,
        Outcome::Fail | Outcome::Xpass => StepStatus::Failed,
    };
    let reason = match lit.outcome {
        Outcome::Pass => String::new(),
        _ => match first_error(&lit.output) {
            Some(line) => format!("lit {}: {line}", lit.code),
            None => format!("lit {}", lit.code),
        },
    };
    let mut step = lit_step(status, command, Some(log.to_path_buf()), reason.clone());
    step.seconds = lit.seconds;
    step.output_tail = tail(&lit.output);
    result(test, lit.outcome, reason, step)
}

/// A suite lit could not run: each of its tests fails with lit's words.
fn unrunnable(test: &Test, e: &lockstep_core::Error, command: &str, log: &Path) -> TestResult {
    let reason = e.message.clone();
    let mut step = lit_step(
        StepStatus::Failed,
        command,
        Some(log.to_path_buf()),
        reason.clone(),
    );
    step.output_tail = e.causes.join("\n");
    result(test, Outcome::Fail, reason, step)
}

/// The line of lit's output that names the failure: an `error:` line (a
/// FileCheck mismatch, a tool's diagnostic), else `command not found`, else
/// the exit code.
fn first_error(output: &str) -> Option<String> {
    let lines: Vec<&str> = output
        .lines()
        .map(|l| l.trim_start_matches("# | ").trim_start_matches("# ").trim())
        .collect();
    // lit's own "error: command failed with exit status: N" says least.
    let generic = |l: &&&str| l.starts_with("error: command failed");
    lines
        .iter()
        .find(|l| l.contains("command not found"))
        .or_else(|| lines.iter().find(|l| l.starts_with("Timeout:")))
        .or_else(|| lines.iter().find(|l| l.contains("error:") && !generic(l)))
        .or_else(|| lines.iter().find(|l| l.contains("error:")))
        .or_else(|| lines.iter().find(|l| l.starts_with("Exit Code:")))
        .map(|l| l.chars().take(300).collect())
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_error_line_names_a_failure() {
        let output = "Exit Code: 1\n\nCommand Output (stdout):\n--\n# RUN: at line 1\n# | /s/fail.mlir:2: error: Couldn't match \"arith.addi\".\n";
        assert_eq!(
            first_error(output).as_deref(),
            Some("/s/fail.mlir:2: error: Couldn't match \"arith.addi\".")
        );
        assert_eq!(
            first_error("# | 'iree-nope': command not found\nExit Code: 127").as_deref(),
            Some("'iree-nope': command not found")
        );
        assert_eq!(first_error("Exit Code: 1").as_deref(), Some("Exit Code: 1"));
        assert_eq!(first_error(""), None);
    }
}
