//! The data every part of the suite runner shares: what a test is, its steps,
//! and what running it gave. Reporters read only these types.

use std::path::PathBuf;

use serde::Serialize;

/// A step of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Compile,
    Run,
    Benchmark,
    /// A lit test, run by lit.
    Lit,
    /// A pytest test, run by pytest.
    Pytest,
}

impl StepKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            StepKind::Compile => "compile",
            StepKind::Run => "run",
            StepKind::Benchmark => "benchmark",
            StepKind::Lit => "lit",
            StepKind::Pytest => "pytest",
        }
    }
}

/// How one step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Passed,
    Failed,
    /// Not run: skipped by configuration, or an earlier step failed.
    Skipped,
}

/// The verdict on a whole test.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// Failed as expected.
    Xfail,
    /// Passed although a failure was expected: strict, counts as a failure.
    Xpass,
    /// Not run at all (skipped compile).
    Skip,
}

impl Outcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Pass => "PASS",
            Outcome::Fail => "FAIL",
            Outcome::Xfail => "XFAIL",
            Outcome::Xpass => "XPASS",
            Outcome::Skip => "SKIP",
        }
    }

    /// Whether this outcome makes the run fail (exit 1).
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Fail | Outcome::Xpass)
    }
}

/// What an expected-failure list says about a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    #[default]
    Pass,
    CompileFail,
    RunFail,
}

/// One executed (or skipped) step.
#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub kind: StepKind,
    pub status: StepStatus,
    /// The exact command, reproducible from a shell: `cd DIR && tool args...`.
    pub command: String,
    /// Combined stdout/stderr of the process.
    pub log: Option<PathBuf>,
    pub seconds: f64,
    /// The compiled module came from the cache (no compiler process ran).
    pub cached: bool,
    /// Why it failed or was skipped, in one line.
    pub message: String,
    /// The last lines of the process output (for reports).
    pub output_tail: String,
    /// Benchmark figures, when this is a benchmark step.
    pub metrics: Option<Metrics>,
    /// Files the step fetched by URL alone, with the sha256 of what was
    /// fetched (torch_ops expected outputs: their suites give no checksum).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fetched: Vec<Fetched>,
}

/// A file fetched by URL, and what it held.
#[derive(Debug, Clone, Serialize)]
pub struct Fetched {
    pub url: String,
    pub sha256: String,
}

/// What a benchmark step measured against its goldens.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    pub time_ms: Option<f64>,
    pub golden_time_ms: Option<f64>,
    pub dispatch_count: Option<u64>,
    pub vmfb_size: Option<u64>,
}

/// The result of one test.
#[derive(Debug, Clone, Serialize)]
pub struct TestResult {
    /// Unique id: `<case> [<group>]`.
    pub id: String,
    /// The case's path relative to the suite root (iree-test-suites) or the native test's name.
    pub case: String,
    /// Config name (iree-test-suites) or target name (native).
    pub group: String,
    pub outcome: Outcome,
    /// Why it is not a plain pass.
    pub reason: String,
    pub steps: Vec<StepResult>,
    pub seconds: f64,
    pub markers: Vec<String>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub results: Vec<TestResult>,
    pub wall_seconds: f64,
    pub jobs: usize,
    pub compiler: String,
    pub compiler_identity: String,
    /// Compiles that ran vs were served from the cache.
    pub compiles_run: usize,
    pub compiles_cached: usize,
    /// Compared with the previous run of the same tests.
    pub changes: Changes,
    /// `I/N` when the run was one shard of N (`--shard`): a shard's times
    /// never balance later shards.
    pub shard: Option<String>,
}

/// What changed since the previous run (from the store).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Changes {
    pub newly_failing: Vec<String>,
    pub newly_passing: Vec<String>,
    /// Benchmarks slower than their golden tolerance, with the time (ms).
    pub slower: Vec<(String, f64)>,
}

impl RunReport {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.results.iter().filter(|r| r.outcome == outcome).count()
    }

    pub fn failed(&self) -> bool {
        self.results.iter().any(|r| r.outcome.is_failure())
    }
}
