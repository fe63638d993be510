//! `lockstep pkg bisect`: the first commit between a good and a bad one
//! whose *packages* make a command fail.
//!
//! Each commit probed gets its packages built from `git archive COMMIT`
//! (through the wheel cache, so a commit built before costs a copy),
//! installed into a fresh venv by manifest (which must import: see
//! [`lockstep_python::venv::create_exact`]), and the command run inside that
//! venv by the Python layer (its `bin/` first on `PATH`, without lockstep's
//! secrets or index variables). The user's working tree is never checked out.
//! Exit codes are `git bisect run`'s: 0 good, 125 skip, 1-127 bad, anything
//! else stops the bisection (lockstep-bisect's rules and narrowing, the
//! same as `integrate bisect`). A commit whose packages do not build is
//! skipped. Verdicts are kept in the one verdict store (lockstep-store's
//! probe records in `.git/lockstep/`) keyed by the commit, the command, the
//! variant and the Python, so a rerun (or a wider range) reuses them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_bisect::Verdict;
use lockstep_core::events::Sink;
use lockstep_core::hash::Framed;
use lockstep_core::process::Exit;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_python::pylock;
use lockstep_python::venv::{self, From, RunIn};
use lockstep_store::{ProbeRecord, Store};
use serde::Serialize;

use crate::build::{build, BuildRequest};
use crate::events::PkgEvent;

/// What to bisect.
pub struct BisectRequest<'a> {
    /// How each commit's packages are built (`rev`, `out`, `variants` and
    /// `pythons` are set per probe).
    pub build: BuildRequest<'a>,
    pub good: String,
    pub bad: String,
    pub variant: String,
    pub python: Option<String>,
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
}

/// A probed commit.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub commit: String,
    pub verdict: Verdict,
    pub cached: bool,
    /// Why a commit was skipped, or the command's exit.
    pub detail: String,
}

/// The answer.
#[derive(Debug, Clone, Serialize)]
pub struct BisectReport {
    /// The first bad commit, when the skips leave one candidate.
    pub first_bad: Option<String>,
    /// Otherwise: the commits it could be (skipped ones and the first bad).
    pub candidates: Vec<String>,
    pub steps: Vec<Step>,
}

/// Bisects; see the module doc.
pub fn bisect(req: &BisectRequest<'_>, sink: &dyn Sink) -> Result<BisectReport, Error> {
    if req.command.is_empty() {
        return Err(Error::usage("no command to run")
            .hint("give it after `--`: lockstep pkg bisect --good A --bad B -- CMD ARGS"));
    }
    let repo = Repo::discover(req.build.root)?;
    let good = repo
        .must_resolve(&format!("{}^{{commit}}", req.good))?
        .to_string();
    let bad = repo
        .must_resolve(&format!("{}^{{commit}}", req.bad))?
        .to_string();
    lockstep_bisect::require_range(&good, &bad, &req.good, &req.bad)?;
    if !repo.is_ancestor(&good, &bad)? {
        return Err(Error::usage(format!(
            "--good {} is not an ancestor of --bad {}",
            req.good, req.bad
        ))
        .hint("pass a good commit older than the bad one, on its history"));
    }
    let commits: Vec<String> = repo
        .rev_list(&["--ancestry-path", "--reverse", &format!("{good}..{bad}")])?
        .into_iter()
        .map(|o| o.to_string())
        .collect();
    let Some(last) = commits.len().checked_sub(1) else {
        return Err(Error::usage(format!(
            "no commits lead from --good {} to --bad {}",
            req.good, req.bad
        )));
    };
    let store = Store::open(&repo.common_dir()?.join("lockstep"))?;
    let mut steps = Vec::new();
    let mut skipped = Vec::new();
    let (_, hi) = lockstep_bisect::narrow(-1, last, &mut skipped, |m| {
        let commit = &commits[m];
        let step = judge(req, commit, &store, sink)?;
        sink.emit(&PkgEvent::BisectStep {
            commit: commit.clone(),
            verdict: step.verdict.as_str().into(),
            cached: step.cached,
            remaining: last.saturating_sub(steps.len() + 1),
        });
        let verdict = step.verdict;
        steps.push(step);
        Ok(verdict)
    })?;
    let candidates: Vec<String> = lockstep_bisect::candidates(-1, hi, &skipped)
        .into_iter()
        .map(|i| commits[i].clone())
        .collect();
    let first_bad = (candidates.len() == 1).then(|| candidates[0].clone());
    Ok(BisectReport {
        first_bad,
        candidates,
        steps,
    })
}

/// The verdict store's key of `commit` under this command, variant and Python.
fn verdict_key(req: &BisectRequest<'_>, commit: &str) -> String {
    Framed::new("lockstep-pkg", "bisect", 2)
        .part("commit", commit)
        .part("variant", &req.variant)
        .part("python", req.python.as_deref().unwrap_or("-"))
        .parts("command", &req.command)
        .hex()
}

/// One commit's verdict: from the store, else built, installed and run.
fn judge(
    req: &BisectRequest<'_>,
    commit: &str,
    store: &Store,
    sink: &dyn Sink,
) -> Result<Step, Error> {
    let key = verdict_key(req, commit);
    if let Some(record) = store.probe(&key)? {
        return Ok(Step {
            commit: commit.to_string(),
            verdict: Verdict::parse(&record.outcome),
            cached: true,
            detail: record.detail,
        });
    }
    let started = std::time::Instant::now();
    let step = probe(req, commit, sink)?;
    store.put_probe(&ProbeRecord {
        key,
        context: "pkg-bisect".into(),
        commit: commit.to_string(),
        outcome: step.verdict.as_str().into(),
        detail: step.detail.clone(),
        log: None,
        seconds: started.elapsed().as_secs_f64(),
    })?;
    Ok(step)
}

fn probe(req: &BisectRequest<'_>, commit: &str, sink: &dyn Sink) -> Result<Step, Error> {
    let scratch = tempdir()?;
    let out = scratch.join("wheelhouse");
    let build_req = BuildRequest {
        root: req.build.root,
        pkg: req.build.pkg,
        pythons: req.python.iter().cloned().collect(),
        variants: vec![req.variant.clone()],
        packages: req.build.packages.clone(),
        out: out.clone(),
        version: req.build.version.clone(),
        jobs: req.build.jobs,
        rev: commit.to_string(),
        pin_path: req.build.pin_path.clone(),
        cache: req.build.cache.clone(),
        compiler_area: req.build.compiler_area.clone(),
        uv: req.build.uv,
    };
    let skip = |detail: String| Step {
        commit: commit.to_string(),
        verdict: Verdict::Skip,
        cached: false,
        detail,
    };
    if let Err(e) = build(&build_req, sink) {
        if e.exit_code() == 2 {
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(e.context(format!("cannot build the packages of {commit}")));
        }
        let _ = std::fs::remove_dir_all(&scratch);
        return Ok(skip(format!("the packages do not build: {}", e.message)));
    }
    let manifest = out.join(pylock::file_name(&req.variant));
    let venv_dir = scratch.join("venv");
    if let Err(e) = venv::create_exact(
        req.build.uv,
        &venv_dir,
        From::Manifest(&manifest),
        req.python.as_deref(),
        sink,
    ) {
        let _ = std::fs::remove_dir_all(&scratch);
        return Ok(skip(format!("the packages do not install: {}", e.message)));
    }
    let result = run_command(req, &venv_dir, &scratch.join("cmd.log"));
    let _ = std::fs::remove_dir_all(&scratch);
    let exit = result?;
    if lockstep_bisect::aborts(exit) {
        return Err(lockstep_bisect::abort_error(&req.command, exit, commit));
    }
    Ok(Step {
        commit: commit.to_string(),
        verdict: Verdict::from_exit(exit),
        cached: false,
        detail: exit.describe(),
    })
}

fn run_command(req: &BisectRequest<'_>, venv_dir: &Path, log: &Path) -> Result<Exit, Error> {
    let ran = req.build.uv.venv(venv_dir).run(
        &req.command,
        &RunIn {
            what: "the bisect command",
            cwd: &req.cwd,
            timeout: req.timeout,
            log: Some(log),
        },
    )?;
    Ok(ran.exit)
}

fn tempdir() -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!(
        "lockstep-pkg-bisect-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    fs_err::create_dir_all(&dir)?;
    Ok(dir)
}
