//! What a running job (one matrix cell) is, as the emulated actions see
//! it: the [`JobRun`] state with its directories and pending post work, the
//! [`StepIo`] a step runs with, running a process for a step
//! ([`JobRun::exec`]), resolving paths as actions do, and [`note`] for logs.
//!
//! Why: the actions (actions, artifacts, cache) work on the job they run in,
//! and the job (job.rs) runs them; what both sides need lives here, below
//! both, so that every module edge points down. job.rs keeps the step loop
//! (contexts, `if:`, environment, file commands, outputs, post phase).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockstep_core::process::{self, Exit};
use serde_json::{Map, Value};

use super::expr;
use super::files::FileCommands;
use super::matrix::Cell;
use super::{Run, StepReport};

/// How a cache entry names the workspace ([`JobRun::portable`]).
const WORKSPACE_TOKEN: &str = "$GITHUB_WORKSPACE";

/// One cell to run.
pub(crate) struct CellSpec {
    pub job_id: String,
    pub def: Map<String, Value>,
    pub index: usize,
    pub total: usize,
    pub matrix: Cell,
    pub has_matrix: bool,
    pub fail_fast: bool,
    pub needs: Map<String, Value>,
}

/// The directories of one cell.
pub(crate) struct Dirs {
    pub workspace: PathBuf,
    pub home: PathBuf,
    pub temp: PathBuf,
    pub logs: PathBuf,
}

/// Work the post phase does (after all steps).
pub(crate) enum Post {
    SaveCache {
        step: String,
        key: String,
        paths: Vec<String>,
    },
}

/// What one step runs with.
#[derive(Clone)]
pub(crate) struct StepIo {
    /// The step's number in the job (1-based).
    pub index: usize,
    pub log: PathBuf,
    /// The variables the step's processes get on top of the host's.
    pub env: Vec<(String, String)>,
    pub files: FileCommands,
    pub timeout: Option<Duration>,
}

/// The state of a running cell. The `pub(super)` fields are the step
/// loop's bookkeeping: only job.rs reads or writes them.
pub(crate) struct JobRun<'r> {
    pub run: &'r Run<'r>,
    pub spec: CellSpec,
    pub dirs: Dirs,
    pub(super) contexts: Map<String, Value>,
    pub(super) env_file: BTreeMap<String, String>,
    pub path_adds: Vec<String>,
    pub(super) workflow_env: BTreeMap<String, String>,
    pub(super) job_env: BTreeMap<String, String>,
    pub(super) steps_ctx: Map<String, Value>,
    pub(super) failed: bool,
    pub(super) timed_out: bool,
    pub(super) deadline: Instant,
    pub posts: Vec<Post>,
    pub(super) summary: String,
    pub(super) reports: Vec<StepReport>,
}

/// Appends a line to a log (best effort: a log that cannot be written
/// must not turn into a panic).
pub(crate) fn note(log: &Path, message: &str) {
    if let Some(dir) = log.parent() {
        let _ = fs_err::create_dir_all(dir);
    }
    if let Ok(mut f) = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        let _ = writeln!(f, "{message}");
    }
}

impl JobRun<'_> {
    /// Runs `argv` with the step's environment, appending its output to the
    /// step's log.
    pub(crate) fn exec(&self, io: &StepIo, argv: Vec<String>, cwd: &Path) -> Result<Exit, String> {
        let part = io.log.with_extension("part");
        let spec = process::Spec {
            argv,
            cwd: cwd.to_path_buf(),
            env: io.env.clone(),
            timeout: io.timeout,
            log: part.clone(),
            header: None,
        };
        let options = process::Options {
            env_remove: host_runner_vars(),
            die_with_parent: true,
            ..Default::default()
        };
        let finished = process::run_with(&spec, &options, |_| {}).map_err(|e| e.render())?;
        let text = fs_err::read(&part).map_err(|e| e.to_string())?;
        let _ = fs_err::remove_file(&part);
        append(&io.log, &text)?;
        if finished.exit == Exit::TimedOut {
            note(
                &io.log,
                &format!(
                    "##[error]The step timed out after {:.1?} (its process group was killed).",
                    finished.elapsed
                ),
            );
        }
        Ok(finished.exit)
    }

    /// Resolves a path as actions do: `~/` is HOME, relative is the workspace.
    pub(crate) fn resolve(&self, path: &str) -> PathBuf {
        let path = path.trim();
        if path == "~" {
            return self.dirs.home.clone();
        }
        if let Some(rest) = path.strip_prefix(WORKSPACE_TOKEN) {
            return self.dirs.workspace.join(rest.trim_start_matches('/'));
        }
        match path.strip_prefix("~/") {
            Some(rest) => self.dirs.home.join(rest),
            None => self.dirs.workspace.join(path),
        }
    }

    /// `path` with this job's workspace and HOME replaced by
    /// `$GITHUB_WORKSPACE` and `~`: on GitHub both are the same on every
    /// run, so a cache path naming them must match across runs here too.
    pub(crate) fn portable(&self, path: &str) -> String {
        let path = path.trim();
        for (dir, token) in [
            (&self.dirs.workspace, WORKSPACE_TOKEN),
            (&self.dirs.home, "~"),
        ] {
            if let Ok(rest) = Path::new(path).strip_prefix(dir) {
                return match rest.as_os_str().is_empty() {
                    true => token.to_string(),
                    false => format!("{token}/{}", rest.display()),
                };
            }
        }
        path.to_string()
    }

    /// The job's `permissions` (or the workflow's).
    pub(crate) fn permissions(&self) -> Value {
        self.spec
            .def
            .get("permissions")
            .or_else(|| self.run.workflow.get("permissions"))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The job's `environment` name.
    pub(crate) fn environment(&self) -> Option<String> {
        match self.spec.def.get("environment")? {
            Value::Object(m) => m.get("name").map(expr::to_text),
            other => Some(expr::to_text(other)),
        }
    }
}

/// The host's variables that belong to an outer runner (when the tests run
/// in CI): a job here must not see them.
fn host_runner_vars() -> Vec<String> {
    std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| {
            ["GITHUB_", "RUNNER_", "ACTIONS_"]
                .iter()
                .any(|p| k.starts_with(p))
                || k == "GH_TOKEN"
        })
        .collect()
}

fn append(log: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut f = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| e.to_string())?;
    f.write_all(bytes).map_err(|e| e.to_string())
}
