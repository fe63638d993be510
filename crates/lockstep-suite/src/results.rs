//! The output formats of `lockstep test`: a finished [`RunReport`] as JUnit
//! XML (for CI test dashboards), a versioned JSON results file (for scripts
//! and later tooling, docs/schemas/test-results.json), a Markdown summary (for
//! pull requests and `$GITHUB_STEP_SUMMARY`) and the plain-text summary printed
//! at the end of `lockstep test`.
//!
//! These only read the result types ([`crate::model`]);
//! they never run anything, so every format shows the same verdicts. They are written after
//! the run, from the whole report, so tables can be sorted and summarised.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use lockstep_core::error::ResultExt;
use lockstep_core::words::count;
use lockstep_core::Error;
use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;

use crate::model::{Outcome, RunReport, StepResult, StepStatus, TestResult};

/// The version of the JSON results (`version` in the document, which has
/// had it since before every output had `schema`).
const JSON_VERSION: u32 = 1;

/// How many of the slowest tests the summaries list.
const SLOWEST: usize = 5;

// ---------------------------------------------------------------------------
// JUnit XML

/// JUnit XML (quick-junit): one <testsuite> per group (config or target name), one <testcase> per STEP, with classname = the case
/// (TestResult::case, e.g. "onnx/node/generated/test_abs") and name = the step kind ("compile", "run", "benchmark").
/// A failed step -> <failure> with message = StepResult::message and text = "$ <command>\n<output_tail>".
/// For an XFAIL test, its steps are reported as passed with the reason in system-out ("XFAIL: <reason>").
/// An XPASS -> a failure on the last executed step with message "XPASS (strict): <reason>".
/// Skipped steps -> <skipped message=...>. Times from StepResult::seconds.
///
/// Details:
/// - suites appear in the order their group first appears in the results;
/// - a skipped step stays `<skipped>` even in an XFAIL test (e.g. the run step
///   after an expected compile failure); its message is the step's message or,
///   when that is empty, the test's reason;
/// - a failed step's `<system-out>` holds `log: <path>` when it has a log;
/// - a FAIL test none of whose steps failed gets the failure (message = the
///   test's reason) on its last executed step;
/// - a test without any steps becomes a single `<testcase name="test">` with a
///   status from its outcome.
pub fn junit(report: &RunReport) -> Result<String, Error> {
    let mut junit = quick_junit::Report::new("lockstep test");
    junit.set_time(duration(report.wall_seconds));

    for (group, results) in by_group(report) {
        let mut suite = TestSuite::new(group);
        let mut seconds = 0.0;
        for result in results {
            for case in junit_cases(result) {
                if let Some(time) = case.time {
                    seconds += time.as_secs_f64();
                }
                suite.add_test_case(case);
            }
        }
        suite.set_time(duration(seconds));
        junit.add_test_suite(suite);
    }

    junit
        .to_string()
        .map_err(|e| Error::failed("cannot write the JUnit XML report").cause(e.to_string()))
}

/// Results grouped by `group`, groups in order of first appearance.
fn by_group(report: &RunReport) -> Vec<(&str, Vec<&TestResult>)> {
    let mut groups: Vec<(&str, Vec<&TestResult>)> = Vec::new();
    for result in &report.results {
        match groups.iter_mut().find(|(g, _)| *g == result.group) {
            Some((_, list)) => list.push(result),
            None => groups.push((&result.group, vec![result])),
        }
    }
    groups
}

fn duration(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or_default()
}

fn nonempty<'a>(first: &'a str, second: &'a str) -> &'a str {
    if first.trim().is_empty() {
        second
    } else {
        first
    }
}

/// `$ <command>\n<output_tail>`: what a failure's text shows.
fn failure_text(step: &StepResult) -> String {
    let mut text = format!("$ {}", step.command);
    if !step.output_tail.is_empty() {
        text.push('\n');
        text.push_str(&step.output_tail);
    }
    text
}

fn failure_status(message: &str, step: Option<&StepResult>) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(message);
    if let Some(step) = step {
        status.set_description(failure_text(step));
    }
    status
}

fn skipped_status(message: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::skipped();
    if !message.is_empty() {
        status.set_message(message);
    }
    status
}

fn junit_cases(result: &TestResult) -> Vec<TestCase> {
    let xpass_message = format!("XPASS (strict): {}", result.reason);
    let xfail_out = format!("XFAIL: {}", result.reason);

    if result.steps.is_empty() {
        let status = match result.outcome {
            Outcome::Pass | Outcome::Xfail => TestCaseStatus::success(),
            Outcome::Skip => skipped_status(&result.reason),
            Outcome::Fail => failure_status(nonempty(&result.reason, "failed"), None),
            Outcome::Xpass => failure_status(&xpass_message, None),
        };
        let mut case = TestCase::new("test", status);
        case.set_classname(result.case.as_str());
        case.set_time(duration(result.seconds));
        if result.outcome == Outcome::Xfail {
            case.set_system_out(xfail_out.as_str());
        }
        return vec![case];
    }

    let last_executed = result
        .steps
        .iter()
        .rposition(|s| s.status != StepStatus::Skipped);
    let any_failed = result.steps.iter().any(|s| s.status == StepStatus::Failed);

    let mut cases = Vec::with_capacity(result.steps.len());
    for (i, step) in result.steps.iter().enumerate() {
        let is_last_executed = last_executed == Some(i);
        let mut system_out: Option<String> = None;
        let status = match (result.outcome, step.status) {
            (_, StepStatus::Skipped) => skipped_status(nonempty(&step.message, &result.reason)),
            (Outcome::Xfail, _) => {
                system_out = Some(xfail_out.clone());
                TestCaseStatus::success()
            }
            (Outcome::Xpass, _) if is_last_executed => failure_status(&xpass_message, Some(step)),
            (_, StepStatus::Failed) => failure_status(
                nonempty(&step.message, nonempty(&result.reason, "failed")),
                Some(step),
            ),
            (Outcome::Fail, StepStatus::Passed) if !any_failed && is_last_executed => {
                failure_status(nonempty(&result.reason, "failed"), Some(step))
            }
            (_, StepStatus::Passed) => TestCaseStatus::success(),
        };
        if matches!(status, TestCaseStatus::NonSuccess { .. }) {
            if let Some(log) = &step.log {
                system_out = Some(format!("log: {}", log.display()));
            }
        }
        let mut case = TestCase::new(step.kind.as_str(), status);
        case.set_classname(result.case.as_str());
        case.set_time(duration(step.seconds));
        if let Some(out) = system_out {
            case.set_system_out(out);
        }
        cases.push(case);
    }
    cases
}

// ---------------------------------------------------------------------------
// JSON

/// The JSON results file: a stable, documented schema (also described in
/// `docs/test.md`, "JSON results"). Pretty-printed, ending in a newline.
///
/// ```text
/// {
///   "schema": 1,                        // docs/schemas/test-results.json
///   "version": 1,                       // = schema (its name before `schema`)
///   "summary": {
///     "total": 12,                      // number of tests
///     "pass": 8, "fail": 1, "xfail": 1, "xpass": 1, "skip": 1,
///     "failed": true,                   // any fail or xpass: the run exits 1
///     "wall_seconds": 31.5,
///     "jobs": 8,
///     "compiles_run": 5,                // compiler processes that ran
///     "compiles_cached": 7,             // compiles served from the cache
///     "compiler": "IREE compiler version 3.13.0rc20261016 @ 89ece87b...",
///     "compiler_identity": "<64 hex: the compile cache's compiler identity>",
///     "shard": "2/4" | null              // --shard of the run
///   },
///   "changes": {                        // compared with the previous run
///     "newly_failing": ["<test id>"],
///     "newly_passing": ["<test id>"],
///     "slower": [{"id": "<test id>", "time_ms": 2.9}]
///   },
///   "tests": [{
///     "id": "onnx/node/generated/test_abs [cpu_llvm_sync]",   // "<case> [<group>]"
///     "case": "onnx/node/generated/test_abs",
///     "group": "cpu_llvm_sync",          // config (iree-test-suites) or target (native)
///     "outcome": "pass",                 // pass | fail | xfail | xpass | skip
///     "reason": "",                      // why it is not a plain pass
///     "seconds": 1.25,
///     "markers": ["presubmit"],
///     "steps": [{
///       "kind": "compile",               // compile | run | benchmark
///       "status": "passed",              // passed | failed | skipped
///       "command": "cd DIR && iree-compile ...",  // reproducible from a shell
///       "log": "/path/to/log" | null,
///       "seconds": 0.8,
///       "cached": false,                 // module served from the compile cache
///       "message": "",                   // why it failed or was skipped
///       "output_tail": "",               // last lines of the output
///       "metrics": null | {              // benchmark steps only; each field may be null
///         "time_ms": 1.9, "golden_time_ms": 2.0, "dispatch_count": 3, "vmfb_size": 181234
///       }
///     }]
///   }]
/// }
/// ```
///
/// Tests appear in the order of the report. Non-finite numbers are written as
/// `null`. New keys may be added without a version bump; readers should ignore
/// keys they do not know.
pub fn json(report: &RunReport) -> Result<String, Error> {
    let value = JsonReport {
        version: JSON_VERSION,
        summary: JsonSummary {
            total: report.results.len(),
            pass: report.count(Outcome::Pass),
            fail: report.count(Outcome::Fail),
            xfail: report.count(Outcome::Xfail),
            xpass: report.count(Outcome::Xpass),
            skip: report.count(Outcome::Skip),
            failed: report.failed(),
            wall_seconds: report.wall_seconds,
            jobs: report.jobs,
            compiles_run: report.compiles_run,
            compiles_cached: report.compiles_cached,
            compiler: &report.compiler,
            compiler_identity: &report.compiler_identity,
            shard: report.shard.as_deref(),
        },
        changes: JsonChanges {
            newly_failing: &report.changes.newly_failing,
            newly_passing: &report.changes.newly_passing,
            slower: report
                .changes
                .slower
                .iter()
                .map(|(id, time_ms)| JsonSlower {
                    id,
                    time_ms: *time_ms,
                })
                .collect(),
        },
        tests: &report.results,
    };
    lockstep_core::output::document(&value)
}

// The JSON document, field order as written (and as documented above).
#[derive(Serialize)]
struct JsonReport<'a> {
    /// The same number as `schema`, under the name it had before every
    /// output had `schema` (docs/schemas/test-results.json).
    version: u32,
    summary: JsonSummary<'a>,
    changes: JsonChanges<'a>,
    tests: &'a [TestResult],
}

#[derive(Serialize)]
struct JsonSummary<'a> {
    total: usize,
    pass: usize,
    fail: usize,
    xfail: usize,
    xpass: usize,
    skip: usize,
    failed: bool,
    wall_seconds: f64,
    jobs: usize,
    compiles_run: usize,
    compiles_cached: usize,
    compiler: &'a str,
    compiler_identity: &'a str,
    shard: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonChanges<'a> {
    newly_failing: &'a [String],
    newly_passing: &'a [String],
    slower: Vec<JsonSlower<'a>>,
}

#[derive(Serialize)]
struct JsonSlower<'a> {
    id: &'a str,
    time_ms: f64,
}

// ---------------------------------------------------------------------------
// Markdown

/// Escapes text for a Markdown table cell: one line, Markdown punctuation and
/// HTML (`tensor<4xf32>` must not vanish as a tag) backslash-escaped, shortened.
fn md_text(text: &str) -> String {
    let line = one_line(text, 300);
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A code span; `in_table` escapes `|` the way GitHub tables require.
fn md_code(text: &str, in_table: bool) -> String {
    let mut text = one_line(text, 300);
    if in_table {
        text = text.replace('|', "\\|");
    }
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// Collapses whitespace runs (including newlines) and shortens to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > max {
        let mut short: String = joined.chars().take(max).collect();
        short.push('…');
        short
    } else {
        joined
    }
}

fn fmt_seconds(seconds: f64) -> String {
    if seconds >= 100.0 {
        format!("{seconds:.0}s")
    } else if seconds >= 10.0 {
        format!("{seconds:.1}s")
    } else {
        format!("{seconds:.2}s")
    }
}

fn fmt_opt_f64(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
}

fn fmt_opt_u64(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The step a failed test is reported against, and the message to show.
fn failure_rows(result: &TestResult) -> Vec<(&str, String)> {
    let failed: Vec<(&str, String)> = result
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Failed)
        .map(|s| {
            (
                s.kind.as_str(),
                nonempty(&s.message, &result.reason).to_string(),
            )
        })
        .collect();
    if failed.is_empty() {
        vec![("-", result.reason.clone())]
    } else {
        failed
    }
}

/// The slowest tests that ran, slowest first.
fn slowest(report: &RunReport) -> Vec<&TestResult> {
    let mut ran: Vec<&TestResult> = report
        .results
        .iter()
        .filter(|r| r.outcome != Outcome::Skip && r.seconds > 0.0)
        .collect();
    ran.sort_by(|a, b| {
        b.seconds
            .total_cmp(&a.seconds)
            .then_with(|| a.id.cmp(&b.id))
    });
    ran.truncate(SLOWEST);
    ran
}

/// A Markdown summary: a counts table, a table of failures (test, step, message), XPASS list, changes since last run
/// (newly failing / newly passing / slower), benchmark metrics table when any, the 5 slowest tests.
pub fn markdown(report: &RunReport) -> String {
    let mut md = String::new();
    let verdict = if report.failed() { "failed" } else { "passed" };
    let _ = writeln!(md, "## lockstep test: {verdict}\n");
    let _ = writeln!(md, "| total | pass | fail | xfail | xpass | skip |");
    let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {} |\n",
        report.results.len(),
        report.count(Outcome::Pass),
        report.count(Outcome::Fail),
        report.count(Outcome::Xfail),
        report.count(Outcome::Xpass),
        report.count(Outcome::Skip),
    );
    let _ = writeln!(
        md,
        "{} wall time on {}; compiles: {} run, {} cached; compiler: {}\n",
        fmt_seconds(report.wall_seconds),
        count(report.jobs, "job", "jobs"),
        report.compiles_run,
        report.compiles_cached,
        md_code(nonempty(&report.compiler, &report.compiler_identity), false),
    );

    let failures: Vec<&TestResult> = report
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Fail)
        .collect();
    let _ = writeln!(md, "### Failures\n");
    if failures.is_empty() {
        let _ = writeln!(md, "None.\n");
    } else {
        let _ = writeln!(md, "| test | step | message |");
        let _ = writeln!(md, "|---|---|---|");
        for result in failures {
            for (step, message) in failure_rows(result) {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} |",
                    md_code(&result.id, true),
                    step,
                    md_text(&message)
                );
            }
        }
        md.push('\n');
    }

    let xpasses: Vec<&TestResult> = report
        .results
        .iter()
        .filter(|r| r.outcome == Outcome::Xpass)
        .collect();
    if !xpasses.is_empty() {
        let _ = writeln!(
            md,
            "### XPASS (expected to fail, passed; strict: counts as a failure)\n"
        );
        for result in xpasses {
            let _ = writeln!(
                md,
                "- {}: {}",
                md_code(&result.id, false),
                md_text(&result.reason)
            );
        }
        md.push('\n');
    }

    let changes = &report.changes;
    let _ = writeln!(md, "### Changes since the last run\n");
    if changes.newly_failing.is_empty()
        && changes.newly_passing.is_empty()
        && changes.slower.is_empty()
    {
        let _ = writeln!(md, "None.\n");
    } else {
        for (title, ids) in [
            ("Newly failing", &changes.newly_failing),
            ("Newly passing", &changes.newly_passing),
        ] {
            if ids.is_empty() {
                continue;
            }
            let _ = writeln!(md, "{title}:\n");
            for id in ids {
                let _ = writeln!(md, "- {}", md_code(id, false));
            }
            md.push('\n');
        }
        if !changes.slower.is_empty() {
            let _ = writeln!(md, "Slower than their golden tolerance:\n");
            let _ = writeln!(md, "| test | time (ms) |");
            let _ = writeln!(md, "|---|---:|");
            for (id, ms) in &changes.slower {
                let _ = writeln!(md, "| {} | {ms:.3} |", md_code(id, true));
            }
            md.push('\n');
        }
    }

    let benchmarks: Vec<(&TestResult, &StepResult)> = report
        .results
        .iter()
        .flat_map(|r| r.steps.iter().map(move |s| (r, s)))
        .filter(|(_, s)| s.metrics.is_some())
        .collect();
    if !benchmarks.is_empty() {
        let _ = writeln!(md, "### Benchmarks\n");
        let _ = writeln!(
            md,
            "| test | status | time (ms) | golden (ms) | dispatches | vmfb size (bytes) |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|");
        for (result, step) in benchmarks {
            let Some(m) = &step.metrics else { continue };
            let status = match step.status {
                StepStatus::Passed => "passed",
                StepStatus::Failed => "failed",
                StepStatus::Skipped => "skipped",
            };
            let _ = writeln!(
                md,
                "| {} | {status} | {} | {} | {} | {} |",
                md_code(&result.id, true),
                fmt_opt_f64(m.time_ms),
                fmt_opt_f64(m.golden_time_ms),
                fmt_opt_u64(m.dispatch_count),
                fmt_opt_u64(m.vmfb_size),
            );
        }
        md.push('\n');
    }

    let slow = slowest(report);
    if !slow.is_empty() {
        let _ = writeln!(md, "### Slowest tests\n");
        let _ = writeln!(md, "| test | outcome | time |");
        let _ = writeln!(md, "|---|---|---:|");
        for result in slow {
            let _ = writeln!(
                md,
                "| {} | {} | {} |",
                md_code(&result.id, true),
                result.outcome.as_str(),
                fmt_seconds(result.seconds)
            );
        }
        md.push('\n');
    }
    md
}

// ---------------------------------------------------------------------------
// Console

/// Human summary for the console (plain text, several lines): counts, failures with their log path and the reproducible command,
/// the 5 slowest tests, compiles run vs cached, changes since last run.
/// How many lines of a failed tool's output the console shows: an MLIR
/// diagnostic with its source line, caret and a note or two.
const CONSOLE_ERROR_LINES: usize = 6;

pub fn console_summary(report: &RunReport) -> String {
    let mut out = String::new();

    let problems: Vec<&TestResult> = report
        .results
        .iter()
        .filter(|r| r.outcome.is_failure())
        .collect();
    if !problems.is_empty() {
        let _ = writeln!(out, "failures:");
        for result in problems {
            match result.outcome {
                Outcome::Xpass => {
                    let _ = writeln!(
                        out,
                        "  XPASS {}: {} (strict: counts as a failure)",
                        result.id,
                        one_line(&result.reason, 200)
                    );
                    if let Some(step) = result
                        .steps
                        .iter()
                        .rev()
                        .find(|s| s.status != StepStatus::Skipped)
                    {
                        console_step_details(&mut out, step);
                    }
                }
                _ => {
                    let failed: Vec<&StepResult> = result
                        .steps
                        .iter()
                        .filter(|s| s.status == StepStatus::Failed)
                        .collect();
                    if failed.is_empty() {
                        let _ = writeln!(
                            out,
                            "  FAIL {}: {}",
                            result.id,
                            one_line(&result.reason, 200)
                        );
                    }
                    for step in failed {
                        let _ = writeln!(
                            out,
                            "  FAIL {} ({}): {}",
                            result.id,
                            step.kind.as_str(),
                            one_line(nonempty(&step.message, &result.reason), 200)
                        );
                        console_step_details(&mut out, step);
                    }
                }
            }
        }
        out.push('\n');
    }

    let slow = slowest(report);
    if !slow.is_empty() {
        let _ = writeln!(out, "slowest:");
        for result in slow {
            let _ = writeln!(
                out,
                "  {:>8}  {} {}",
                fmt_seconds(result.seconds),
                result.outcome.as_str(),
                result.id
            );
        }
        out.push('\n');
    }

    let changes = &report.changes;
    if !changes.newly_failing.is_empty()
        || !changes.newly_passing.is_empty()
        || !changes.slower.is_empty()
    {
        let _ = writeln!(out, "changes since the last run:");
        for id in &changes.newly_failing {
            let _ = writeln!(out, "  newly failing: {id}");
        }
        for id in &changes.newly_passing {
            let _ = writeln!(out, "  newly passing: {id}");
        }
        for (id, ms) in &changes.slower {
            let _ = writeln!(out, "  slower: {id} ({ms:.3} ms)");
        }
        out.push('\n');
    }

    if !report.compiler_identity.is_empty() {
        let _ = writeln!(
            out,
            "compiles: {} run, {} cached ({})",
            report.compiles_run,
            report.compiles_cached,
            nonempty(&report.compiler, &report.compiler_identity)
        );
    }
    let _ = writeln!(
        out,
        "test result: {}. {}: {} pass, {} fail, {} xfail, {} xpass, {} skip; {} on {}",
        if report.failed() { "FAILED" } else { "ok" },
        count(report.results.len(), "test", "tests"),
        report.count(Outcome::Pass),
        report.count(Outcome::Fail),
        report.count(Outcome::Xfail),
        report.count(Outcome::Xpass),
        report.count(Outcome::Skip),
        fmt_seconds(report.wall_seconds),
        count(report.jobs, "job", "jobs"),
    );
    out
}

/// Under a failed step: the tool's first error lines (at most
/// [`CONSOLE_ERROR_LINES`]), then where its whole log is and the command.
fn console_step_details(out: &mut String, step: &StepResult) {
    if step.status == StepStatus::Failed {
        let lines = lockstep_iree::invoke::error_lines(&step.output_tail, CONSOLE_ERROR_LINES);
        // The FAIL line above already ends with the first error line
        // (unless it was cut there).
        let said = lines
            .first()
            .is_some_and(|first| one_line(&step.message, 200).ends_with(&one_line(first, 300)));
        for line in lines.iter().skip(usize::from(said)) {
            let _ = writeln!(out, "      | {line}");
        }
    }
    if let Some(log) = &step.log {
        let _ = writeln!(out, "      log: {}", log.display());
    }
    if !step.command.is_empty() {
        let _ = writeln!(out, "      $ {}", step.command);
    }
}

// ---------------------------------------------------------------------------
// Files

/// Writes the markdown to `path`, and appends it to $GITHUB_STEP_SUMMARY when that env var is set (and non-empty).
///
/// The step summary is appended to,
/// never truncated, so several steps of a job can each add their summary.
pub fn write_summary(
    report: &RunReport,
    target: Option<&lockstep_core::output::Target>,
) -> Result<(), Error> {
    let md = markdown(report);
    let step_summary_var = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty());
    // `--summary "$GITHUB_STEP_SUMMARY"` (as generated workflows pass it)
    // means the step summary: appended to once, never replaced.
    let same_file = |path: &Path| {
        step_summary_var.as_ref().is_some_and(|s| {
            let s = Path::new(s);
            s == path
                || std::fs::canonicalize(s)
                    .ok()
                    .zip(std::fs::canonicalize(path).ok())
                    .is_some_and(|(a, b)| a == b)
        })
    };
    if let Some(target) = target {
        let is_step_summary =
            matches!(target, lockstep_core::output::Target::Path(p) if same_file(p));
        if !is_step_summary {
            lockstep_core::output::write_as("--summary", target, md.as_bytes())?;
        }
    }
    if let Some(step_summary) = step_summary_var.as_ref() {
        let step_summary = Path::new(&step_summary);
        let context = || {
            format!(
                "cannot append the summary to $GITHUB_STEP_SUMMARY ({})",
                step_summary.display()
            )
        };
        let mut file = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(step_summary)
            .context(context)?;
        file.write_all(md.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .context(context)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Changes, Metrics, StepKind};
    use quick_xml::events::Event;
    use serde_json::Value;
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn step(kind: StepKind, status: StepStatus, message: &str) -> StepResult {
        StepResult {
            kind,
            status,
            command: format!("cd /suite/case && iree-{} --flag", kind.as_str()),
            log: Some(PathBuf::from(format!("/logs/{}.log", kind.as_str()))),
            seconds: 0.5,
            cached: false,
            message: message.to_string(),
            output_tail: if status == StepStatus::Failed {
                "error: mismatch <4xf32> | 1 != 2".to_string()
            } else {
                String::new()
            },
            metrics: None,
            fetched: Vec::new(),
        }
    }

    fn test(
        case: &str,
        group: &str,
        outcome: Outcome,
        reason: &str,
        steps: Vec<StepResult>,
    ) -> TestResult {
        TestResult {
            id: format!("{case} [{group}]"),
            case: case.to_string(),
            group: group.to_string(),
            outcome,
            reason: reason.to_string(),
            seconds: steps.iter().map(|s| s.seconds).sum(),
            steps,
            markers: vec!["presubmit".to_string()],
        }
    }

    use Outcome::*;
    use StepKind::{Benchmark, Compile, Run};
    use StepStatus::{Failed, Passed, Skipped};

    fn sample() -> RunReport {
        let g = "cpu_llvm_sync";
        let mut slow_pass = test(
            "onnx/node/generated/test_abs",
            g,
            Pass,
            "",
            vec![step(Compile, Passed, ""), step(Run, Passed, "")],
        );
        slow_pass.steps[0].seconds = 4.0;
        slow_pass.steps[0].cached = true;
        slow_pass.seconds = 4.5;
        let mut bench = test(
            "matmul_f32",
            "cpu",
            Pass,
            "",
            vec![
                step(Compile, Passed, ""),
                step(Run, Passed, ""),
                step(Benchmark, Passed, ""),
            ],
        );
        bench.steps[2].metrics = Some(Metrics {
            time_ms: Some(1.875),
            golden_time_ms: Some(2.0),
            dispatch_count: Some(3),
            vmfb_size: Some(181234),
        });
        RunReport {
            results: vec![
                slow_pass,
                test(
                    "onnx/node/generated/test_add",
                    g,
                    Fail,
                    "run failed",
                    vec![
                        step(Compile, Passed, ""),
                        step(Run, Failed, "iree-run-module exited with status 1"),
                    ],
                ),
                test(
                    "onnx/node/generated/test_conv",
                    g,
                    Xfail,
                    "listed in expected_compile_failures",
                    vec![
                        step(Compile, Failed, "iree-compile exited with status 1"),
                        step(Run, Skipped, "compile failed"),
                    ],
                ),
                test(
                    "onnx/node/generated/test_gemm",
                    g,
                    Xpass,
                    "listed in expected_run_failures but passed",
                    vec![step(Compile, Passed, ""), step(Run, Passed, "")],
                ),
                test(
                    "onnx/node/generated/test_skip",
                    g,
                    Skip,
                    "listed in skip_compile_tests",
                    vec![step(Compile, Skipped, ""), step(Run, Skipped, "")],
                ),
                bench,
            ],
            wall_seconds: 7.25,
            jobs: 8,
            compiler: "IREE compiler version 3.13.0rc20261016".to_string(),
            compiler_identity: "0f3a".repeat(16),
            compiles_run: 4,
            compiles_cached: 1,
            changes: Changes {
                newly_failing: vec!["onnx/node/generated/test_add [cpu_llvm_sync]".to_string()],
                newly_passing: vec!["onnx/node/generated/test_mul [cpu_llvm_sync]".to_string()],
                slower: vec![("matmul_f32 [cpu]".to_string(), 3.5)],
            },
            shard: None,
        }
    }

    /// A minimal XML element tree, parsed with quick-xml (independently of
    /// quick-junit) to check what CI tools will read.
    #[derive(Debug, Default)]
    struct Element {
        name: String,
        attrs: HashMap<String, String>,
        children: Vec<Element>,
        text: String,
    }

    impl Element {
        fn attr(&self, name: &str) -> &str {
            self.attrs.get(name).map(String::as_str).unwrap_or("")
        }
        fn all(&self, name: &str) -> Vec<&Element> {
            self.children.iter().filter(|c| c.name == name).collect()
        }
        fn child(&self, name: &str) -> Option<&Element> {
            self.children.iter().find(|c| c.name == name)
        }
    }

    fn element_from(e: &quick_xml::events::BytesStart<'_>) -> Element {
        let mut el = Element {
            name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
            ..Element::default()
        };
        for attr in e.attributes() {
            let attr = attr.expect("valid attribute");
            let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
            let value = attr.unescape_value().expect("valid attribute value");
            el.attrs.insert(key, value.into_owned());
        }
        el
    }

    fn parse_xml(xml: &str) -> Element {
        let mut reader = quick_xml::Reader::from_str(xml);
        let mut stack = vec![Element::default()];
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) => stack.push(element_from(&e)),
                Event::Empty(e) => {
                    let el = element_from(&e);
                    stack.last_mut().expect("open element").children.push(el);
                }
                Event::End(_) => {
                    let el = stack.pop().expect("open element");
                    stack.last_mut().expect("parent").children.push(el);
                }
                Event::Text(t) => {
                    let text = t.decode().expect("utf-8 text");
                    stack.last_mut().expect("open element").text.push_str(&text);
                }
                Event::CData(t) => {
                    let text = t.decode().expect("utf-8 text");
                    stack.last_mut().expect("open element").text.push_str(&text);
                }
                Event::GeneralRef(r) => {
                    let text = match r.resolve_char_ref().expect("valid char ref") {
                        Some(c) => c.to_string(),
                        None => match r.decode().expect("utf-8 ref").as_ref() {
                            "lt" => "<".into(),
                            "gt" => ">".into(),
                            "amp" => "&".into(),
                            "quot" => "\"".into(),
                            "apos" => "'".into(),
                            other => panic!("unknown entity &{other};"),
                        },
                    };
                    stack.last_mut().expect("open element").text.push_str(&text);
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(stack.len(), 1, "unbalanced XML");
        let mut root = stack.pop().expect("document");
        assert_eq!(root.children.len(), 1, "one root element");
        root.children.remove(0)
    }

    fn junit_tree(report: &RunReport) -> Element {
        match junit(report) {
            Ok(xml) => parse_xml(&xml),
            Err(e) => panic!("{}", e.render()),
        }
    }

    fn case_of<'a>(suite: &'a Element, classname: &str, name: &str) -> &'a Element {
        suite
            .all("testcase")
            .into_iter()
            .find(|c| c.attr("classname") == classname && c.attr("name") == name)
            .unwrap_or_else(|| panic!("no testcase {classname} / {name}"))
    }

    #[test]
    fn junit_suites_per_group_cases_per_step() {
        let root = junit_tree(&sample());
        assert_eq!(root.name, "testsuites");
        let suites = root.all("testsuite");
        let names: Vec<&str> = suites.iter().map(|s| s.attr("name")).collect();
        assert_eq!(names, vec!["cpu_llvm_sync", "cpu"]);

        let suite = suites[0];
        // 5 tests x 2 steps.
        assert_eq!(suite.all("testcase").len(), 10);
        assert_eq!(suite.attr("tests"), "10");
        for case in suite.all("testcase") {
            assert!(case
                .attr("classname")
                .starts_with("onnx/node/generated/test_"));
            assert!(["compile", "run"].contains(&case.attr("name")));
        }
        // Failures: the failed run step and the XPASS.
        assert_eq!(suite.attr("failures"), "2");
        // Skipped: the XFAIL test's run step and both steps of the skipped test
        // (quick-junit counts them in `disabled`).
        let skipped = suite
            .all("testcase")
            .iter()
            .filter(|c| c.child("skipped").is_some())
            .count();
        assert_eq!(skipped, 3);
        assert_eq!(suite.attr("disabled"), "3");

        let bench_suite = suites[1];
        let names: Vec<&str> = bench_suite
            .all("testcase")
            .iter()
            .map(|c| c.attr("name"))
            .collect();
        assert_eq!(names, vec!["compile", "run", "benchmark"]);
        assert!(bench_suite
            .all("testcase")
            .iter()
            .all(|c| c.attr("classname") == "matmul_f32" && c.children.is_empty()));

        // Times from the steps.
        let abs = case_of(suite, "onnx/node/generated/test_abs", "compile");
        assert_eq!(abs.attr("time").parse::<f64>().ok(), Some(4.0));
        assert!(abs.children.is_empty(), "a passed step has no children");
    }

    #[test]
    fn junit_failure_has_message_and_command_text() {
        let root = junit_tree(&sample());
        let suite = root.all("testsuite")[0];
        let compile = case_of(suite, "onnx/node/generated/test_add", "compile");
        assert!(compile.child("failure").is_none());
        let run = case_of(suite, "onnx/node/generated/test_add", "run");
        let failure = run.child("failure").expect("failure element");
        assert_eq!(
            failure.attr("message"),
            "iree-run-module exited with status 1"
        );
        assert_eq!(
            failure.text,
            "$ cd /suite/case && iree-run --flag\nerror: mismatch <4xf32> | 1 != 2"
        );
        let out = run.child("system-out").expect("system-out with the log");
        assert_eq!(out.text, "log: /logs/run.log");
    }

    #[test]
    fn junit_xfail_xpass_skip() {
        let root = junit_tree(&sample());
        let suite = root.all("testsuite")[0];

        let conv = "onnx/node/generated/test_conv";
        let compile = case_of(suite, conv, "compile");
        assert!(compile.child("failure").is_none(), "XFAIL steps pass");
        assert!(compile.child("skipped").is_none());
        assert_eq!(
            compile.child("system-out").map(|e| e.text.as_str()),
            Some("XFAIL: listed in expected_compile_failures")
        );
        let run = case_of(suite, conv, "run");
        assert_eq!(
            run.child("skipped").map(|e| e.attr("message")),
            Some("compile failed")
        );

        let gemm = "onnx/node/generated/test_gemm";
        assert!(case_of(suite, gemm, "compile").children.is_empty());
        let failure = case_of(suite, gemm, "run")
            .child("failure")
            .expect("XPASS failure on the last executed step");
        assert_eq!(
            failure.attr("message"),
            "XPASS (strict): listed in expected_run_failures but passed"
        );

        let skip = "onnx/node/generated/test_skip";
        for name in ["compile", "run"] {
            let skipped = case_of(suite, skip, name)
                .child("skipped")
                .expect("skipped element");
            // Empty step message: the test's reason.
            assert_eq!(skipped.attr("message"), "listed in skip_compile_tests");
        }
    }

    #[test]
    fn junit_edge_cases() {
        let mut report = sample();
        report.results = vec![
            // A FAIL without a failed step: the failure lands on the last executed step.
            test(
                "odd",
                "g",
                Fail,
                "outputs differ",
                vec![step(Compile, Passed, ""), step(Run, Passed, "")],
            ),
            // No steps at all.
            test("empty", "g", Skip, "filtered", vec![]),
            // XPASS where the run failed though a compile failure was expected.
            test(
                "xp",
                "g",
                Xpass,
                "listed in expected_compile_failures",
                vec![step(Compile, Passed, ""), step(Run, Failed, "boom")],
            ),
        ];
        report.results[0].steps[1].seconds = f64::NAN;
        let root = junit_tree(&report);
        let suite = root.all("testsuite")[0];
        let odd = case_of(suite, "odd", "run");
        assert_eq!(
            odd.child("failure").map(|f| f.attr("message")),
            Some("outputs differ")
        );
        assert!(case_of(suite, "odd", "compile").children.is_empty());
        let empty = case_of(suite, "empty", "test");
        assert_eq!(
            empty.child("skipped").map(|f| f.attr("message")),
            Some("filtered")
        );
        let xp = case_of(suite, "xp", "run");
        assert_eq!(
            xp.child("failure").map(|f| f.attr("message")),
            Some("XPASS (strict): listed in expected_compile_failures")
        );
        assert_eq!(suite.attr("failures"), "2");
    }

    #[test]
    fn json_schema_round_trips() {
        let text = match json(&sample()) {
            Ok(t) => t,
            Err(e) => panic!("{}", e.render()),
        };
        assert!(text.ends_with('\n'));
        // Documented order: schema, version, summary, changes, tests.
        let positions: Vec<usize> = [
            "\"schema\"",
            "\"version\"",
            "\"summary\"",
            "\"changes\"",
            "\"tests\"",
        ]
        .iter()
        .filter_map(|k| text.find(k))
        .collect();
        assert_eq!(positions.len(), 5);
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["version"], 1);

        let summary = &v["summary"];
        for (key, expected) in [
            ("total", 6),
            ("pass", 2),
            ("fail", 1),
            ("xfail", 1),
            ("xpass", 1),
            ("skip", 1),
            ("jobs", 8),
            ("compiles_run", 4),
            ("compiles_cached", 1),
        ] {
            assert_eq!(summary[key], expected, "summary.{key}");
        }
        assert_eq!(summary["failed"], true);
        assert_eq!(summary["wall_seconds"], 7.25);
        assert_eq!(
            summary["compiler"],
            "IREE compiler version 3.13.0rc20261016"
        );
        assert_eq!(summary["compiler_identity"], "0f3a".repeat(16).as_str());

        let changes = &v["changes"];
        assert_eq!(
            changes["newly_failing"],
            serde_json::json!(["onnx/node/generated/test_add [cpu_llvm_sync]"])
        );
        assert_eq!(
            changes["newly_passing"],
            serde_json::json!(["onnx/node/generated/test_mul [cpu_llvm_sync]"])
        );
        assert_eq!(
            changes["slower"],
            serde_json::json!([{"id": "matmul_f32 [cpu]", "time_ms": 3.5}])
        );

        let tests = v["tests"].as_array().expect("tests array");
        assert_eq!(tests.len(), 6);
        let add = &tests[1];
        for key in [
            "id", "case", "group", "outcome", "reason", "steps", "seconds", "markers",
        ] {
            assert!(add.get(key).is_some(), "test key {key}");
        }
        assert_eq!(add["id"], "onnx/node/generated/test_add [cpu_llvm_sync]");
        assert_eq!(add["outcome"], "fail");
        let run = &add["steps"][1];
        assert_eq!(run["kind"], "run");
        assert_eq!(run["status"], "failed");
        assert_eq!(run["log"], "/logs/run.log");
        assert_eq!(run["cached"], false);
        assert_eq!(run["metrics"], Value::Null);
        for key in [
            "kind",
            "status",
            "command",
            "log",
            "seconds",
            "cached",
            "message",
            "output_tail",
            "metrics",
        ] {
            assert!(run.get(key).is_some(), "step key {key}");
        }
        let outcomes: Vec<&str> = tests.iter().filter_map(|t| t["outcome"].as_str()).collect();
        assert_eq!(
            outcomes,
            vec!["pass", "fail", "xfail", "xpass", "skip", "pass"]
        );
        let metrics = &tests[5]["steps"][2]["metrics"];
        assert_eq!(tests[5]["steps"][2]["kind"], "benchmark");
        assert_eq!(
            *metrics,
            serde_json::json!({"time_ms": 1.875, "golden_time_ms": 2.0, "dispatch_count": 3, "vmfb_size": 181234})
        );
    }

    #[test]
    fn json_handles_non_finite_numbers() {
        let mut report = sample();
        report.wall_seconds = f64::INFINITY;
        report.results[0].seconds = f64::NAN;
        let text = match json(&report) {
            Ok(t) => t,
            Err(e) => panic!("{}", e.render()),
        };
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["summary"]["wall_seconds"], Value::Null);
        assert_eq!(v["tests"][0]["seconds"], Value::Null);
    }

    #[test]
    fn markdown_has_every_section() {
        let md = markdown(&sample());
        assert!(md.starts_with("## lockstep test: failed\n"), "{md}");
        assert!(md.contains("| 6 | 2 | 1 | 1 | 1 | 1 |"), "{md}");
        assert!(
            md.contains(
                "| `onnx/node/generated/test_add [cpu_llvm_sync]` | run | iree-run-module exited with status 1 |"
            ),
            "{md}"
        );
        // XFAIL and XPASS are not in the failure table.
        let failures = md
            .split("### Failures")
            .nth(1)
            .and_then(|rest| rest.split("###").next())
            .unwrap_or_default();
        assert_eq!(failures.matches("| `").count(), 1, "{md}");
        assert!(
            md.contains(
                "- `onnx/node/generated/test_gemm [cpu_llvm_sync]`: listed in expected\\_run\\_failures but passed"
            ),
            "{md}"
        );
        assert!(md.contains("### Changes since the last run"), "{md}");
        assert!(
            md.contains("Newly failing:\n\n- `onnx/node/generated/test_add [cpu_llvm_sync]`"),
            "{md}"
        );
        assert!(
            md.contains("Newly passing:\n\n- `onnx/node/generated/test_mul [cpu_llvm_sync]`"),
            "{md}"
        );
        assert!(md.contains("| `matmul_f32 [cpu]` | 3.500 |"), "{md}");
        assert!(md.contains("### Benchmarks"), "{md}");
        assert!(
            md.contains("| `matmul_f32 [cpu]` | passed | 1.875 | 2.000 | 3 | 181234 |"),
            "{md}"
        );
        assert!(md.contains("### Slowest tests"), "{md}");
        let slowest = md.split("### Slowest tests").nth(1).unwrap_or_default();
        let first_row = slowest
            .lines()
            .find(|l| l.starts_with("| `"))
            .unwrap_or_default();
        assert_eq!(
            first_row,
            "| `onnx/node/generated/test_abs [cpu_llvm_sync]` | PASS | 4.50s |"
        );
        // The skipped test never ran: not among the slowest.
        assert!(!slowest.contains("test_skip"), "{md}");
        assert!(md.contains("compiles: 4 run, 1 cached"), "{md}");
    }

    #[test]
    fn markdown_escapes_table_cells() {
        let mut report = sample();
        report.results[1].steps[1].message = "expected tensor<4xf32> | got\nnothing".to_string();
        report.results[1].id = "a|b".to_string();
        let md = markdown(&report);
        assert!(
            md.contains("| `a\\|b` | run | expected tensor\\<4xf32\\> \\| got nothing |"),
            "{md}"
        );
    }

    #[test]
    fn markdown_when_all_pass() {
        let mut report = sample();
        report.results.retain(|r| r.outcome == Pass);
        report.changes = Changes::default();
        let md = markdown(&report);
        assert!(md.starts_with("## lockstep test: passed\n"), "{md}");
        assert!(md.contains("### Failures\n\nNone."), "{md}");
        assert!(!md.contains("XPASS"), "{md}");
        assert!(
            md.contains("### Changes since the last run\n\nNone."),
            "{md}"
        );
    }

    #[test]
    fn console_summary_lists_failures_with_logs_and_commands() {
        let text = console_summary(&sample());
        assert!(
            text.contains(
                "  FAIL onnx/node/generated/test_add [cpu_llvm_sync] (run): iree-run-module exited with status 1\n      | error: mismatch <4xf32> | 1 != 2\n      log: /logs/run.log\n      $ cd /suite/case && iree-run --flag\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  XPASS onnx/node/generated/test_gemm [cpu_llvm_sync]: listed in expected_run_failures but passed"),
            "{text}"
        );
        let failures = text.split("slowest:").next().unwrap_or_default();
        assert!(!failures.contains("test_conv"), "{text}");
        assert!(!failures.contains("test_abs"), "{text}");
        assert!(
            text.contains(
                "slowest:\n     4.50s  PASS onnx/node/generated/test_abs [cpu_llvm_sync]\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("compiles: 4 run, 1 cached (IREE compiler version 3.13.0rc20261016)"),
            "{text}"
        );
        assert!(
            text.contains("  newly failing: onnx/node/generated/test_add [cpu_llvm_sync]"),
            "{text}"
        );
        assert!(
            text.contains("  newly passing: onnx/node/generated/test_mul [cpu_llvm_sync]"),
            "{text}"
        );
        assert!(
            text.contains("  slower: matmul_f32 [cpu] (3.500 ms)"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "test result: FAILED. 6 tests: 2 pass, 1 fail, 1 xfail, 1 xpass, 1 skip; 7.25s on 8 jobs\n"
            ),
            "{text}"
        );
    }

    /// The only test touching `GITHUB_STEP_SUMMARY` (process-global), so all
    /// env handling lives here.
    #[test]
    fn write_summary_file_and_github_step_summary() {
        let dir = tempfile::tempdir().expect("temp dir");
        let report = sample();
        let expected = markdown(&report);
        let step_summary = dir.path().join("step_summary.md");
        let out_path = dir.path().join("nested/dir/summary.md");
        let out = lockstep_core::output::Target::Path(out_path.clone());
        // Output flags never create directories.
        let err = write_summary(&report, Some(&out)).expect_err("missing parent");
        assert!(err.message.contains("nested/dir"), "{}", err.message);
        fs_err::create_dir_all(out_path.parent().expect("parent")).expect("mkdir");

        // Unset: only the file is written.
        std::env::remove_var("GITHUB_STEP_SUMMARY");
        write_summary(&report, Some(&out)).expect("write summary");
        assert_eq!(fs_err::read_to_string(&out_path).expect("read"), expected);
        assert!(!step_summary.exists());

        // Set but empty: ignored.
        std::env::set_var("GITHUB_STEP_SUMMARY", "");
        write_summary(&report, None).expect("write summary");
        assert!(!step_summary.exists());

        // Set: appended to what earlier steps wrote, without a path too.
        fs_err::write(&step_summary, "earlier step\n").expect("seed");
        std::env::set_var("GITHUB_STEP_SUMMARY", &step_summary);
        let result = write_summary(&report, None);
        let appended = fs_err::read_to_string(&step_summary);
        let result2 = write_summary(&report, Some(&out));
        let twice = fs_err::read_to_string(&step_summary);
        // `--summary "$GITHUB_STEP_SUMMARY"`: appended once more, not replaced, not doubled.
        let itself = lockstep_core::output::Target::Path(step_summary.clone());
        let result3 = write_summary(&report, Some(&itself));
        let thrice = fs_err::read_to_string(&step_summary);

        // An unwritable step summary is an error naming the variable.
        std::env::set_var("GITHUB_STEP_SUMMARY", dir.path().join("missing/dir/x.md"));
        let failure = write_summary(&report, None);
        std::env::remove_var("GITHUB_STEP_SUMMARY");

        result.expect("append");
        result2.expect("append again");
        assert_eq!(
            appended.expect("read"),
            format!("earlier step\n{expected}\n")
        );
        assert_eq!(
            twice.expect("read"),
            format!("earlier step\n{expected}\n{expected}\n")
        );
        result3.expect("append a third time");
        assert_eq!(
            thrice.expect("read"),
            format!("earlier step\n{expected}\n{expected}\n{expected}\n")
        );
        match failure {
            Ok(()) => panic!("expected an error"),
            Err(e) => assert!(e.message.contains("$GITHUB_STEP_SUMMARY"), "{}", e.render()),
        }
    }
}
