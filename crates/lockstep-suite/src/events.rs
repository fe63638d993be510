//! What `lockstep test` reports while it runs: the run, each distinct compile,
//! each test, each benchmark step. The console shows a bar (plain
//! `[done/total] OUTCOME id` lines without a TTY); `--events` gets every event.

use std::path::PathBuf;

use lockstep_core::events::{to_json, Event, Human};
use lockstep_core::words::count;
use serde::Serialize;

use crate::model::{Outcome, StepStatus};

/// Counts `result` as the next finished test of `total` and reports it
/// (the runners of tests lockstep does not schedule itself: lit, pytest).
pub(crate) fn finished(
    sink: &dyn lockstep_core::events::Sink,
    result: &crate::model::TestResult,
    done: &mut usize,
    total: usize,
) {
    *done += 1;
    sink.emit(&TestEvent::TestFinished {
        id: result.id.clone(),
        outcome: result.outcome,
        seconds: result.seconds,
        reason: result.reason.clone(),
        done: *done,
        total,
    });
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TestEvent {
    /// The run starts `tests` tests on `jobs` workers.
    RunStarted {
        tests: usize,
        jobs: usize,
        /// The compiler's version line.
        compiler: String,
        /// The directory of the IREE tools.
        tools: PathBuf,
    },
    /// A distinct compile starts (one per cache key, shared by `tests`).
    CompileStarted {
        key: String,
        source: PathBuf,
        tests: Vec<String>,
    },
    /// A compile ended (or came from the cache).
    CompileFinished {
        key: String,
        status: StepStatus,
        cached: bool,
        seconds: f64,
        message: String,
    },
    /// The scheduler started work on a test (its compile or its run).
    TestStarted { id: String },
    /// A test's compile and run steps are decided.
    TestFinished {
        id: String,
        outcome: Outcome,
        seconds: f64,
        reason: String,
        done: usize,
        total: usize,
    },
    /// A benchmark step (run after every test, one at a time).
    BenchmarkFinished {
        id: String,
        status: StepStatus,
        time_ms: Option<f64>,
        message: String,
    },
    /// Every step is done.
    RunFinished {
        wall_seconds: f64,
        compiles_run: usize,
        compiles_cached: usize,
        failed: bool,
    },
}

impl Event for TestEvent {
    fn to_json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn human(&self) -> Human {
        match self {
            TestEvent::RunStarted {
                tests,
                jobs,
                compiler,
                tools,
            } => Human::Begin {
                total: *tests as u64,
                line: match tools.as_os_str().is_empty() {
                    // No IREE (pytest suites alone): no tools to name.
                    true => format!(
                        "{}, {}, {compiler}",
                        count(*tests, "test", "tests"),
                        count(*jobs, "worker", "workers")
                    ),
                    false => format!(
                        "{}, {}, {compiler} ({})",
                        count(*tests, "test", "tests"),
                        count(*jobs, "worker", "workers"),
                        tools.display()
                    ),
                },
            },
            TestEvent::TestFinished {
                id,
                outcome,
                seconds,
                reason,
                done,
                total,
            } => Human::Done {
                line: format!(
                    "[{done}/{total}] {:<5} {id} ({seconds:.1}s){}",
                    outcome.as_str(),
                    if reason.is_empty() || *outcome == Outcome::Pass {
                        String::new()
                    } else {
                        format!(" - {reason}")
                    }
                ),
                notable: *outcome != Outcome::Pass,
            },
            TestEvent::BenchmarkFinished {
                id,
                status: StepStatus::Failed,
                message,
                ..
            } => Human::Line(format!("benchmark of {id} failed: {message}")),
            TestEvent::RunFinished { .. } => Human::End,
            _ => Human::Silent,
        }
    }
}
