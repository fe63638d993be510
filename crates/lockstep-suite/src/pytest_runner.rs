//! The pytest tests of a run: one pytest process per `[[test.pytest]]`
//! suite for its selected tests, each result a lockstep [`TestResult`]
//! with one `pytest` step, read from pytest's JUnit report.
//!
//! Nothing is cached: a pytest test exercises the installed packages, and
//! what they are is not lockstep's to know. A suite that could not be set
//! up or listed fails its one test with why; a pytest that wrote no report
//! (it crashed, was killed or timed out) fails each selected test with its
//! last words; a test the report lacks fails saying so: never a pass on a
//! partial result.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use lockstep_core::events::Sink;

use crate::events::TestEvent;
use crate::model::{Outcome, StepKind, StepResult, StepStatus, TestResult};
use crate::plan::Test;
use crate::pytest::{self, Reported};

/// What the pytest tests of a run need.
pub(crate) struct PytestRun<'a> {
    /// Each test's time bound (a suite's process gets the sum, plus a margin).
    pub timeout: Duration,
    pub run_dir: &'a Path,
    pub sink: &'a dyn Sink,
}

/// Runs the pytest tests among `tests`; each result with its index,
/// reported as it is known (`done` counts up).
pub(crate) fn run(
    r: &PytestRun,
    tests: &[Test],
    done: &mut usize,
    total: usize,
) -> Vec<(usize, TestResult)> {
    let mut by_suite: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut results = Vec::new();
    for (i, t) in tests.iter().enumerate() {
        let Some(case) = &t.pytest else { continue };
        if let Some(why) = &case.problem {
            let result = failed(t, why, "", None);
            crate::events::finished(r.sink, &result, done, total);
            results.push((i, result));
            continue;
        }
        by_suite
            .entry(case.suite.name.as_str())
            .or_default()
            .push(i);
    }
    let work = r.run_dir.join("pytest");
    for indices in by_suite.into_values() {
        let Some(suite) = tests[indices[0]].pytest.as_ref().map(|c| c.suite.clone()) else {
            continue;
        };
        for i in &indices {
            r.sink.emit(&TestEvent::TestStarted {
                id: tests[*i].id.clone(),
            });
        }
        let nodeids: Vec<String> = indices
            .iter()
            .filter_map(|i| tests[*i].pytest.as_ref().map(|c| c.nodeid.clone()))
            .collect();
        let outcome = pytest::run(&suite, &nodeids, &work, r.timeout);
        for (n, i) in indices.iter().enumerate() {
            let test = &tests[*i];
            let command = pytest::reproduce(&suite, &nodeids[n]);
            let result = match &outcome {
                Ok(ran) => match &ran.reported[n] {
                    Some(reported) => from_report(test, reported, &command, &ran.log),
                    None => failed(
                        test,
                        "pytest's JUnit report does not have this test (did a plugin or conftest.py deselect it?)",
                        &command,
                        Some(&ran.log),
                    ),
                },
                Err((why, ran)) => failed(test, why, &command, Some(&ran.log)),
            };
            crate::events::finished(r.sink, &result, done, total);
            results.push((*i, result));
        }
    }
    results
}

fn step(status: StepStatus, command: &str, log: Option<&Path>, message: &str) -> StepResult {
    StepResult {
        kind: StepKind::Pytest,
        status,
        command: command.to_string(),
        log: log.map(Path::to_path_buf),
        seconds: 0.0,
        cached: false,
        message: message.to_string(),
        output_tail: String::new(),
        metrics: None,
        fetched: Vec::new(),
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

/// A test that did not run or was not reported: a failure saying why.
fn failed(test: &Test, why: &str, command: &str, log: Option<&Path>) -> TestResult {
    let step = step(StepStatus::Failed, command, log, why);
    result(test, Outcome::Fail, why.to_string(), step)
}

/// A test as pytest reported it.
fn from_report(test: &Test, reported: &Reported, command: &str, log: &Path) -> TestResult {
    let status = match reported.outcome {
        Outcome::Pass | Outcome::Xfail => StepStatus::Passed,
        Outcome::Skip => StepStatus::Skipped,
        Outcome::Fail | Outcome::Xpass => StepStatus::Failed,
    };
    let mut step = step(status, command, Some(log), &reported.message);
    step.seconds = reported.seconds;
    step.output_tail = pytest::tail(&reported.text);
    result(test, reported.outcome, reported.message.clone(), step)
}
