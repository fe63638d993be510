//! One run as the history keeps it (docs/schemas/history-run.json).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The version of [`RunRecord`]'s schema; a file with a larger one is
/// skipped by readers that do not know it.
pub const SCHEMA: u32 = 1;

/// What produced the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `lockstep test`: `results` is a test-results.json document.
    Test,
    /// `lockstep bench`: `results` is a bench-results.json document.
    Bench,
    /// `lockstep integrate loop`: `results` is an integrate-loop.json document.
    Integrate,
    /// `scripts/bench-all --json`: `results` is a lockstep-speed document
    /// (lockstep's own benchmarks; [`crate::speed`]).
    Speed,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Test => "test",
            Kind::Bench => "bench",
            Kind::Integrate => "integrate",
            Kind::Speed => "speed",
        }
    }
}

/// The commit the run was made from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The full commit of the repository's HEAD, when in one.
    pub commit: Option<String>,
    /// The branch checked out, when any.
    pub branch: Option<String>,
    /// Tracked files differed from the commit.
    pub dirty: bool,
}

/// The machine that ran it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The CPU model (`/proc/cpuinfo`'s `model name`).
    pub cpu: String,
    /// Logical CPUs available to the run.
    pub cores: u32,
    /// `linux-x86_64` and the like.
    pub os: String,
    /// The host name (or the runner's name in CI).
    pub host: String,
}

/// One run. `R` is how its results document is held: the document as
/// printed (`serde_json::Value`), or, as the loader reads it, with its
/// test rows trimmed to what the readers read ([`crate::trimmed`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord<R = serde_json::Value> {
    /// [`SCHEMA`]; always the first key.
    pub schema: u32,
    /// The run's identity, unique across machines: the start time, the CI
    /// run (`$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT-$GITHUB_JOB`) when there is
    /// one, and 8 random hex digits ([`crate::collect::run_id`]); an
    /// imported run's comes from its file's content. Two files with one id
    /// are one run.
    pub id: String,
    pub kind: Kind,
    /// RFC 3339, UTC.
    pub started: String,
    pub finished: String,
    pub source: Source,
    /// Pins at the source commit: submodule path or pin file -> commit.
    pub pins: BTreeMap<String, String>,
    /// The toolchain's identity (what compile-cache keys use), when the
    /// command used one.
    pub toolchain: Option<String>,
    pub machine: Machine,
    /// The command's own `--json` document, as it printed it.
    pub results: R,
}

impl<R> RunRecord<R> {
    /// The same run with its results document turned by `f`.
    pub fn map_results<S>(self, f: impl FnOnce(R) -> S) -> RunRecord<S> {
        RunRecord {
            schema: self.schema,
            id: self.id,
            kind: self.kind,
            started: self.started,
            finished: self.finished,
            source: self.source,
            pins: self.pins,
            toolchain: self.toolchain,
            machine: self.machine,
            results: f(self.results),
        }
    }
}
