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
//! else stops the bisection. A commit whose packages do not build is
//! skipped. Verdicts are kept in `.git/lockstep/pkg-bisect/` keyed by the
//! commit, the command, the variant and the Python, so a rerun (or a wider
//! range) reuses them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::process::Exit;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_python::pylock;
use lockstep_python::venv::{self, From, RunIn};
use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub commit: String,
    /// `good`, `bad` or `skip`.
    pub verdict: String,
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
    let verdicts_dir = repo.common_dir()?.join("lockstep").join("pkg-bisect");
    let mut steps = Vec::new();
    // Indices: `lo` is known good (-1 = --good), `hi` known bad.
    let mut lo: isize = -1;
    let mut hi: isize = commits.len() as isize - 1;
    let mut skipped: Vec<isize> = Vec::new();
    while hi - lo > 1 {
        let Some(mid) = next_probe(lo, hi, &skipped) else {
            break;
        };
        let commit = &commits[mid as usize];
        let step = judge(req, commit, &verdicts_dir, sink)?;
        let remaining = (hi - lo - 2).max(0) as usize;
        sink.emit(&PkgEvent::BisectStep {
            commit: commit.clone(),
            verdict: step.verdict.clone(),
            cached: step.cached,
            remaining,
        });
        match step.verdict.as_str() {
            "good" => lo = mid,
            "bad" => hi = mid,
            _ => skipped.push(mid),
        }
        steps.push(step);
    }
    let mut candidates: Vec<String> = skipped
        .iter()
        .filter(|i| **i > lo && **i < hi)
        .map(|i| commits[*i as usize].clone())
        .collect();
    candidates.sort_by_key(|c| commits.iter().position(|x| x == c));
    candidates.push(commits[hi as usize].clone());
    let first_bad = (candidates.len() == 1).then(|| candidates[0].clone());
    Ok(BisectReport {
        first_bad,
        candidates,
        steps,
    })
}

/// The untested index nearest the middle of (lo, hi), or None when every
/// one is skipped.
fn next_probe(lo: isize, hi: isize, skipped: &[isize]) -> Option<isize> {
    let mid = lo + (hi - lo) / 2;
    (0..(hi - lo))
        .flat_map(|d| [mid - d, mid + d])
        .find(|i| *i > lo && *i < hi && !skipped.contains(i))
}

fn verdict_key(req: &BisectRequest<'_>, commit: &str) -> String {
    let text = format!(
        "pkg-bisect v1\n{commit}\n{}\n{}\n{}",
        req.variant,
        req.python.as_deref().unwrap_or("-"),
        req.command.join("\0")
    );
    lockstep_core::hash::sha256_bytes(text.as_bytes())
}

/// One commit's verdict: cached, else built, installed and run.
fn judge(
    req: &BisectRequest<'_>,
    commit: &str,
    dir: &Path,
    sink: &dyn Sink,
) -> Result<Step, Error> {
    let file = dir.join(format!("{}.json", verdict_key(req, commit)));
    if let Ok(text) = std::fs::read_to_string(&file) {
        if let Ok(mut step) = serde_json::from_str::<Step>(&text) {
            step.cached = true;
            return Ok(step);
        }
    }
    let step = probe(req, commit, sink)?;
    fs_err::create_dir_all(dir)?;
    let text = serde_json::to_string_pretty(&step)
        .map_err(|e| Error::failed("cannot encode a verdict").cause(e.to_string()))?;
    lockstep_core::fs::write_atomic(&file, text.as_bytes())?;
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
        out: out.clone(),
        version: req.build.version.clone(),
        jobs: req.build.jobs,
        rev: commit.to_string(),
        pin_path: req.build.pin_path.clone(),
        cache: req.build.cache.clone(),
        uv: req.build.uv,
    };
    let skip = |detail: String| Step {
        commit: commit.to_string(),
        verdict: "skip".into(),
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
    let (verdict, detail) = match exit {
        Exit::Code(0) => ("good", "exit status 0".to_string()),
        Exit::Code(125) => ("skip", "exit status 125".to_string()),
        Exit::Code(c) if (1..128).contains(&c) => ("bad", format!("exit status {c}")),
        other => {
            return Err(Error::failed(format!(
                "the command {} on {commit}: the bisection stops",
                other.describe()
            ))
            .hint("as with git bisect run: exit 0 good, 125 skip, 1-127 bad; anything else means the test itself broke"))
        }
    };
    Ok(Step {
        commit: commit.to_string(),
        verdict: verdict.into(),
        cached: false,
        detail,
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
