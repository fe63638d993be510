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
//!
//! [`CommitVenvs`] gives a commit's venv to the other bisection over
//! packages (`bench bisect`, handed it by the binary: lockstep-bench does not
//! depend on this crate); GOOD..BAD and the narrowing with the verdict store
//! are lockstep-bisect's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_bisect::Verdict;
use lockstep_bisect::{narrow_stored, range};
use lockstep_core::events::Sink;
use lockstep_core::hash::Framed;
use lockstep_core::process::Exit;
use lockstep_core::Error;
use lockstep_python::pylock;
use lockstep_python::venv::{self, From, RunIn};
use lockstep_store::Store;
use serde::Serialize;

use crate::build::BuildRequest;
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

/// `--timeout` of `pkg bisect`: seconds per command run, one hour unless
/// given.
pub fn timeout(flag: Option<f64>) -> Result<Duration, Error> {
    match flag {
        Some(secs) => lockstep_core::config::seconds("--timeout", secs),
        None => Ok(Duration::from_secs(3600)),
    }
}

/// Bisects; see the module doc.
pub fn bisect(req: &BisectRequest<'_>, sink: &dyn Sink) -> Result<BisectReport, Error> {
    if req.command.is_empty() {
        return Err(Error::usage("no command to run")
            .hint("give it after `--`: lockstep pkg bisect --good A --bad B -- CMD ARGS"));
    }
    let range = range(req.build.root, &req.good, &req.bad)?;
    let store = Store::open(&range.repo.state_dir()?)?;
    let mut steps = Vec::new();
    let (first_bad, candidates) = narrow_stored(
        &range,
        &store,
        "pkg-bisect",
        |commit| verdict_key(req, commit),
        |commit| probe(req, commit, sink),
        |commit, verdict, cached, detail, remaining| {
            sink.emit(&PkgEvent::BisectStep {
                commit: commit.to_string(),
                verdict: verdict.as_str().into(),
                cached,
                remaining,
            });
            steps.push(Step {
                commit: commit.to_string(),
                verdict,
                cached,
                detail: detail.to_string(),
            });
        },
    )?;
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

/// Builds `commit`'s packages (`build` with its `rev`, `out`, `variants`
/// and `pythons` set here; through the wheel cache), installs them by
/// manifest into a fresh venv and calls `f` with the venv's directory and a
/// scratch directory; both are removed afterwards. `Ok(Err(why))` when the
/// packages do not build or install (a commit to skip); a usage error of
/// the build is an error.
pub fn with_commit_venv<T>(
    build: &BuildRequest<'_>,
    variant: &str,
    python: Option<&str>,
    commit: &str,
    sink: &dyn Sink,
    f: impl FnOnce(&Path, &Path) -> Result<T, Error>,
) -> Result<Result<T, String>, Error> {
    let scratch = tempdir()?;
    let result = in_scratch(build, variant, python, commit, &scratch, sink, f);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// [`with_commit_venv`] as lockstep-bisect's [`CommitVenvs`]: how `bench
/// bisect` gets each commit's packages without depending on this crate.
pub struct CommitVenvs<'a> {
    pub build: BuildRequest<'a>,
    pub variant: String,
    pub python: Option<String>,
}

impl<'a> CommitVenvs<'a> {
    /// Each commit's `build` in `variant` (default release) for `python`
    /// (default: the first of `[pkg] python`).
    pub fn new(
        build: BuildRequest<'a>,
        variant: Option<String>,
        python: Option<String>,
        pkg: &crate::config::PkgConfig,
    ) -> CommitVenvs<'a> {
        CommitVenvs {
            build,
            variant: variant.unwrap_or_else(|| crate::config::DEFAULT_VARIANT.into()),
            python: python.or_else(|| pkg.python.first().cloned()),
        }
    }
}

impl lockstep_bisect::CommitVenvs for CommitVenvs<'_> {
    fn variant(&self) -> &str {
        &self.variant
    }

    fn python(&self) -> Option<&str> {
        self.python.as_deref()
    }

    fn with_venv(
        &self,
        commit: &str,
        sink: &dyn Sink,
        f: &mut dyn FnMut(&Path) -> Result<(), Error>,
    ) -> Result<Result<(), String>, Error> {
        with_commit_venv(
            &self.build,
            &self.variant,
            self.python.as_deref(),
            commit,
            sink,
            |venv, _| f(venv),
        )
    }
}

fn in_scratch<T>(
    build: &BuildRequest<'_>,
    variant: &str,
    python: Option<&str>,
    commit: &str,
    scratch: &Path,
    sink: &dyn Sink,
    f: impl FnOnce(&Path, &Path) -> Result<T, Error>,
) -> Result<Result<T, String>, Error> {
    let out = scratch.join("wheelhouse");
    let build_req = BuildRequest {
        root: build.root,
        pkg: build.pkg,
        pythons: python.iter().map(|p| p.to_string()).collect(),
        variants: vec![variant.to_string()],
        packages: build.packages.clone(),
        out: out.clone(),
        version: build.version.clone(),
        jobs: build.jobs,
        rev: commit.to_string(),
        pin: build.pin.clone(),
        cache: build.cache.clone(),
        compiler_area: build.compiler_area.clone(),
        uv: build.uv,
    };
    if let Err(e) = crate::build::build(&build_req, sink) {
        if e.exit_code() == 2 {
            return Err(e.context(format!("cannot build the packages of {commit}")));
        }
        return Ok(Err(format!("the packages do not build: {}", e.message)));
    }
    let manifest = out.join(pylock::file_name(variant));
    let venv_dir = scratch.join("venv");
    if let Err(e) = venv::create_exact(build.uv, &venv_dir, From::Manifest(&manifest), python, sink)
    {
        return Ok(Err(format!("the packages do not install: {}", e.message)));
    }
    f(&venv_dir, scratch).map(Ok)
}

/// One commit's verdict: its packages built, installed and the command run.
fn probe(
    req: &BisectRequest<'_>,
    commit: &str,
    sink: &dyn Sink,
) -> Result<(Verdict, String), Error> {
    let ran = with_commit_venv(
        &req.build,
        &req.variant,
        req.python.as_deref(),
        commit,
        sink,
        |venv_dir, scratch| run_command(req, venv_dir, &scratch.join("cmd.log")),
    )?;
    let exit = match ran {
        Ok(exit) => exit,
        Err(why) => return Ok((Verdict::Skip, why)),
    };
    if lockstep_bisect::aborts(exit) {
        return Err(lockstep_bisect::abort_error(&req.command, exit, commit));
    }
    Ok((Verdict::from_exit(exit), exit.describe()))
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
