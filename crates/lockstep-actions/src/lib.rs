//! A test-only GitHub Actions runner: it executes a workflow YAML file on
//! this machine, job by job in `needs` order, each job (each matrix cell) in
//! its own directories as if on its own machine, with `run:` steps under
//! bash and the GitHub-hosted actions lockstep's workflows use emulated
//! (checkout, setup-python, cache, upload/download-artifact, github-script,
//! upload-pages-artifact, deploy-pages).
//!
//! Why: lockstep generates workflows; act and wrkflw cannot run them offline
//! (they clone actions from GitHub, and wrkflw "succeeds" unknown actions).
//! Here nothing is mocked but the hosted actions, and any other `uses:` is a
//! step failure naming it, never a silent success.
//!
//! It owns nothing outside `RunnerConfig::root` (the state of runs and the
//! cache) and the repository it is given as `origin`. It prints nothing:
//! everything goes to per-step logs and the [`RunReport`]
//! (`tracing` debug events aside).

mod actions;
mod artifacts;
mod cache;
mod context;
mod expr;
mod files;
mod glob;
mod inputs;
mod job;
mod matrix;
mod schedule;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

/// Where and how to run a workflow: the event, the repository, the state.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The "GitHub repository": a git repository (bare or not) that checkout
    /// clones and that is the job's `origin` remote.
    pub repo: PathBuf,
    /// `OWNER/NAME` (github.repository).
    pub repository: String,
    /// The event's commit (github.sha).
    pub sha: String,
    /// The event's ref, e.g. `refs/heads/main` (github.ref).
    pub git_ref: String,
    /// `schedule`, `workflow_dispatch`, `push`, `pull_request`, ...
    pub event_name: String,
    /// workflow_dispatch inputs; the workflow's defaults fill the rest.
    pub inputs: BTreeMap<String, String>,
    /// The runner's state: `cache/` (shared by runs with the same root) and
    /// `runs/<run_id>/` (jobs/, artifacts/, logs/, site/).
    pub root: PathBuf,
    pub run_id: u64,
    /// github.token (never put in the environment by the runner).
    pub token: String,
    pub api_url: String,
    pub server_url: String,
    /// What deploy-pages reports as `page_url`.
    pub pages_url: String,
    /// The interpreters setup-python may provide, one per version (it
    /// picks each `python-version` line's among them).
    pub pythons: Vec<PathBuf>,
    /// Extra environment for every step (after the runner's defaults).
    pub env: BTreeMap<String, String>,
    /// The repository's secrets (`secrets.NAME`; `GITHUB_TOKEN` is `token`).
    pub secrets: BTreeMap<String, String>,
    /// The repository's configuration variables (`vars.NAME`).
    pub vars: BTreeMap<String, String>,
    /// Jobs (matrix cells) run at once.
    pub max_parallel: usize,
}

/// The result of a run, a job or a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conclusion {
    Success,
    Failure,
    Skipped,
    Cancelled,
}

impl Conclusion {
    /// The word GitHub uses (`needs.<id>.result`, `steps.<id>.outcome`).
    pub fn as_str(self) -> &'static str {
        match self {
            Conclusion::Success => "success",
            Conclusion::Failure => "failure",
            Conclusion::Skipped => "skipped",
            Conclusion::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for Conclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub conclusion: Conclusion,
    /// One per job and matrix cell, in the order they finished.
    pub jobs: Vec<JobReport>,
    /// The directory deploy-pages extracted the site into.
    pub site: Option<PathBuf>,
    pub run_dir: PathBuf,
    pub total: Duration,
}

/// One job (one matrix cell).
#[derive(Debug, Clone)]
pub struct JobReport {
    pub id: String,
    /// The evaluated `name:` (or `id (matrix values)`).
    pub name: String,
    pub matrix: BTreeMap<String, Value>,
    pub result: Conclusion,
    pub outputs: BTreeMap<String, String>,
    pub duration: Duration,
    pub steps: Vec<StepReport>,
    pub workspace: PathBuf,
    pub home: PathBuf,
    /// What the steps wrote to GITHUB_STEP_SUMMARY.
    pub summary: String,
    /// The image of a `container:` job (which ran on the host anyway).
    pub container: Option<String>,
}

/// One step.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub name: String,
    pub outcome: Conclusion,
    /// stdout and stderr of the step (and the runner's messages about it).
    pub log: PathBuf,
}

/// Why a run could not be done at all (a step's failure is not an error:
/// it is in the report).
#[derive(Debug, Clone)]
pub struct RunnerError {
    pub message: String,
    pub causes: Vec<String>,
}

impl RunnerError {
    fn new(message: impl Into<String>) -> Self {
        RunnerError {
            message: message.into(),
            causes: Vec::new(),
        }
    }

    fn cause(mut self, cause: impl fmt::Display) -> Self {
        self.causes.push(cause.to_string());
        self
    }
}

impl fmt::Display for RunnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        for c in &self.causes {
            write!(f, "\ncause: {c}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RunnerError {}

/// What every job of a run shares.
pub(crate) struct Run<'a> {
    pub cfg: &'a RunnerConfig,
    pub workflow: Map<String, Value>,
    pub workflow_name: String,
    pub run_dir: PathBuf,
    /// The `inputs` context (typed: booleans are booleans).
    pub inputs: Map<String, Value>,
}

/// Runs `workflow_file` for the event `cfg` describes, to the end.
pub fn run_workflow(workflow_file: &Path, cfg: &RunnerConfig) -> Result<RunReport, RunnerError> {
    let start = Instant::now();
    let workflow = load(workflow_file)?;
    let inputs = inputs_context(&workflow, cfg)?;
    let run_dir = cfg.root.join("runs").join(cfg.run_id.to_string());
    let workflow_name = workflow
        .get("name")
        .map(expr::to_text)
        .unwrap_or_else(|| workflow_file.display().to_string());
    let run = Run {
        cfg,
        workflow,
        workflow_name,
        run_dir: run_dir.clone(),
        inputs,
    };
    schedule::validate(&run)?;
    if run_dir.exists() {
        return Err(RunnerError::new(format!(
            "run {} already exists in {}",
            cfg.run_id,
            run_dir.display()
        ))
        .cause("each run needs its own run_id under a root"));
    }
    for sub in ["jobs", "artifacts", "logs"] {
        fs_err::create_dir_all(run_dir.join(sub))
            .map_err(|e| RunnerError::new("cannot create the run's directories").cause(e))?;
    }
    let jobs = schedule::run_jobs(&run)?;
    let site = Some(run_dir.join("site")).filter(|p| p.is_dir());
    Ok(RunReport {
        conclusion: overall(&jobs),
        jobs,
        site,
        run_dir,
        total: start.elapsed(),
    })
}

fn load(path: &Path) -> Result<Map<String, Value>, RunnerError> {
    let what = || format!("cannot read workflow {}", path.display());
    let text = fs_err::read_to_string(path).map_err(|e| RunnerError::new(what()).cause(e))?;
    let doc: Value = yaml_serde::from_str(&text).map_err(|e| RunnerError::new(what()).cause(e))?;
    let map = match doc {
        Value::Object(m) => m,
        other => {
            return Err(RunnerError::new(what()).cause(format!("expected a mapping, found {other}")))
        }
    };
    if !map.get("jobs").is_some_and(Value::is_object) {
        return Err(RunnerError::new(what()).cause("it has no `jobs:` mapping"));
    }
    Ok(map)
}

/// The `inputs` context: for workflow_dispatch, the given inputs and the
/// declared defaults (typed by the declaration); for other events, empty
/// (GitHub applies no defaults on a schedule).
fn inputs_context(
    workflow: &Map<String, Value>,
    cfg: &RunnerConfig,
) -> Result<Map<String, Value>, RunnerError> {
    let declared = workflow
        .get("on")
        .and_then(|on| expr::get_prop(on, "workflow_dispatch"))
        .and_then(|wd| expr::get_prop(wd, "inputs"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(unknown) = cfg.inputs.keys().find(|k| !declared.contains_key(*k)) {
        return Err(RunnerError::new(format!(
            "input `{unknown}` is not declared by the workflow's workflow_dispatch"
        ))
        .cause(format!(
            "declared: {:?}",
            declared.keys().collect::<Vec<_>>()
        )));
    }
    let mut out = Map::new();
    if cfg.event_name != "workflow_dispatch" {
        return Ok(out);
    }
    for (name, decl) in &declared {
        let text = match cfg.inputs.get(name) {
            Some(v) => v.clone(),
            None => expr::get_prop(decl, "default")
                .map(expr::to_text)
                .unwrap_or_default(),
        };
        let boolean = expr::get_prop(decl, "type").and_then(Value::as_str) == Some("boolean");
        let value = match (boolean, text.as_str()) {
            (true, "true") => Value::Bool(true),
            (true, "false") | (true, "") => Value::Bool(false),
            _ => Value::String(text),
        };
        out.insert(name.clone(), value);
    }
    Ok(out)
}

fn overall(jobs: &[JobReport]) -> Conclusion {
    if jobs.iter().any(|j| j.result == Conclusion::Failure) {
        Conclusion::Failure
    } else if jobs.iter().any(|j| j.result == Conclusion::Cancelled) {
        Conclusion::Cancelled
    } else {
        Conclusion::Success
    }
}

/// Puts a cache entry under `key` in `root/cache/`, as a job that saved
/// `files` (each: the path as written in the workflow's cache `path:`, and
/// the file or directory to store for it) would have. The entry matches a
/// cache step whose `path:` lists exactly these paths.
pub fn seed_cache(root: &Path, key: &str, files: &[(&str, &Path)]) -> Result<(), RunnerError> {
    cache::seed(root, key, files)
        .map_err(|e| RunnerError::new(format!("cannot seed cache entry `{key}`")).cause(e))
}

/// Evicts every cache entry whose key starts with `prefix` (GitHub evicts
/// entries unused for 7 days, and the oldest beyond 10 GB); how many went.
pub fn evict_cache(root: &Path, prefix: &str) -> Result<usize, RunnerError> {
    cache::evict(root, prefix)
        .map_err(|e| RunnerError::new(format!("cannot evict cache entries `{prefix}*`")).cause(e))
}

impl RunReport {
    /// The reports of job `id` (one per matrix cell).
    pub fn job(&self, id: &str) -> Vec<&JobReport> {
        self.jobs.iter().filter(|j| j.id == id).collect()
    }

    /// A table of jobs with results and durations, and for each failed job
    /// the last lines of its failing step's log.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "run {}: {} in {:.1?}, {} job(s)\n",
            self.run_dir.display(),
            self.conclusion,
            self.total,
            self.jobs.len()
        );
        for j in &self.jobs {
            out.push_str(&format!(
                "  {:<40} {:<10} {:>8.1?}\n",
                j.name, j.result, j.duration
            ));
        }
        for j in self.jobs.iter().filter(|j| j.result == Conclusion::Failure) {
            for s in j.steps.iter().filter(|s| s.outcome == Conclusion::Failure) {
                out.push_str(&format!(
                    "--- {} / {} ({}):\n{}\n",
                    j.name,
                    s.name,
                    s.log.display(),
                    tail(&s.log, 40)
                ));
            }
        }
        out
    }
}

fn tail(path: &Path, lines: usize) -> String {
    match fs_err::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(no log: {e})"),
    }
}
