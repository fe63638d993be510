//! `lockstep pkg fetch`: a GitHub Actions run's wheelhouse artifact,
//! downloaded through the REST API (lockstep-github), extracted safely and
//! checked against the manifests inside it before anyone installs from it.
//!
//! The destination must not exist (nothing of the user's is overwritten);
//! the zip goes to a temporary file beside it and is removed afterwards; an
//! extraction or a check that fails leaves no destination behind.

use std::path::{Path, PathBuf};

use lockstep_core::error::printable_line;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_github::{Artifact, Client, Repo};
use lockstep_python::pylock::{self, Lock};
use serde::Serialize;

/// The largest artifact lockstep downloads or extracts.
pub const MAX_BYTES: u64 = 16 << 30;

/// Which run.
#[derive(Debug, Clone)]
pub enum RunChoice {
    Id(u64),
    /// The newest successful run on a branch, of a workflow file (default
    /// [`DEFAULT_WORKFLOW`]).
    LatestGreen {
        branch: String,
        workflow: Option<String>,
    },
}

impl RunChoice {
    /// The run `pkg fetch` names: `--run ID`, else `--latest-green BRANCH`
    /// (of `--workflow`); one of them is needed.
    pub fn from_flags(
        run: Option<u64>,
        latest_green: Option<String>,
        workflow: Option<String>,
    ) -> Result<RunChoice, Error> {
        match (run, latest_green) {
            (Some(id), _) => Ok(RunChoice::Id(id)),
            (None, Some(branch)) => Ok(RunChoice::LatestGreen { branch, workflow }),
            (None, None) => Err(Error::usage("pass --run ID or --latest-green BRANCH")),
        }
    }
}

/// The workflow `--latest-green` looks at unless told otherwise: the one
/// `lockstep ci generate` writes.
pub const DEFAULT_WORKFLOW: &str = "lockstep-pkgci.yml";

/// What to fetch.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    pub repo: Repo,
    pub run: RunChoice,
    /// The artifact's name (default: the run's only `wheels-*` artifact).
    pub name: Option<String>,
    pub out: PathBuf,
}

/// What was fetched.
#[derive(Debug, Clone, Serialize)]
pub struct Fetched {
    pub repo: String,
    pub run_id: u64,
    pub artifact: String,
    pub out: PathBuf,
    pub manifests: Vec<PathBuf>,
    pub wheels: usize,
}

/// `--repo`, else `$GITHUB_REPOSITORY` (set on Actions runners), else the
/// `origin` remote when it is on the API's host.
pub fn repository(flag: Option<&str>, client: &Client, cwd: &Path) -> Result<Repo, Error> {
    let origin = lockstep_git::Repo::discover(cwd)
        .ok()
        .and_then(|git| git.remote_url("origin").ok().flatten());
    lockstep_github::repo::resolve(flag, origin.as_deref(), &client.web_host())
}

/// Fetches, extracts and checks; see the module doc.
pub fn fetch(client: &Client, req: &FetchRequest, sink: &dyn Sink) -> Result<Fetched, Error> {
    if req.out.symlink_metadata().is_ok() {
        return Err(
            Error::usage(format!("{} already exists", req.out.display()))
                .hint("pass --out a new directory (lockstep never overwrites one)"),
        );
    }
    let run_id = match &req.run {
        RunChoice::Id(id) => *id,
        RunChoice::LatestGreen { branch, workflow } => {
            let workflow = workflow.as_deref().unwrap_or(DEFAULT_WORKFLOW);
            let run = client.latest_green_run(&req.repo, branch, Some(workflow))?;
            sink.note(format!(
                "the newest successful run on {branch} is {} ({})",
                run.id, run.html_url
            ));
            run.id
        }
    };
    let artifacts = client.run_artifacts(&req.repo, run_id)?;
    let artifact = pick(&artifacts, req.name.as_deref(), run_id)?;
    if artifact.expired {
        return Err(Error::failed(format!(
            "artifact {} of run {run_id} expired{}",
            printable_line(&artifact.name),
            artifact
                .expires_at
                .as_deref()
                .map(|t| format!(" on {t}"))
                .unwrap_or_default()
        ))
        .hint("rerun the workflow, or build the packages locally with `lockstep pkg build`"));
    }
    // The name comes from the server: one line, escaped, whatever it holds.
    sink.note(format!(
        "downloading {} ({} bytes) of run {run_id} from {}",
        printable_line(&artifact.name),
        artifact.size_in_bytes,
        req.repo
    ));
    if let Some(parent) = req.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs_err::create_dir_all(parent)?;
    }
    let zip = zip_path(&req.out);
    let downloaded = client.download_artifact(&req.repo, artifact, &zip, MAX_BYTES);
    let extracted =
        downloaded.and_then(|()| lockstep_github::extract_zip(&zip, &req.out, MAX_BYTES));
    let _ = std::fs::remove_file(&zip);
    extracted?;
    match check(&req.out) {
        Ok((manifests, wheels)) => Ok(Fetched {
            repo: req.repo.to_string(),
            run_id,
            artifact: artifact.name.clone(),
            out: req.out.clone(),
            manifests,
            wheels,
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&req.out);
            Err(e.context(format!(
                "artifact {} of run {run_id} does not match its manifest",
                printable_line(&artifact.name)
            )))
        }
    }
}

/// `.DIR.zip.tmp-PID-N` beside the destination; what a killed fetch left
/// there (a dead PID's) is removed first.
fn zip_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "artifact".into());
    let zip = out.with_file_name(format!("{name}.zip"));
    lockstep_core::fs::reclaim_stale(&zip);
    lockstep_core::fs::temp_name(&zip)
}

/// The named artifact, or the only `wheels-*` one.
fn pick<'a>(
    artifacts: &'a [Artifact],
    name: Option<&str>,
    run_id: u64,
) -> Result<&'a Artifact, Error> {
    let names: Vec<String> = artifacts
        .iter()
        .map(|a| printable_line(&a.name).into_owned())
        .collect();
    let listed = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    if let Some(name) = name {
        return artifacts.iter().find(|a| a.name == name).ok_or_else(|| {
            Error::usage(format!(
                "run {run_id} has no artifact named {}",
                printable_line(name)
            ))
            .cause(format!("its artifacts: {listed}"))
            .hint("pass --name one of them")
        });
    }
    let wheels: Vec<&Artifact> = artifacts
        .iter()
        .filter(|a| a.name.starts_with("wheels-"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one),
        [] => Err(
            Error::usage(format!("run {run_id} has no `wheels-*` artifact"))
                .cause(format!("its artifacts: {listed}"))
                .hint("pass --name the artifact holding the wheelhouse"),
        ),
        _ => Err(
            Error::usage(format!("run {run_id} has several wheelhouse artifacts"))
                .cause(format!("its artifacts: {listed}"))
                .hint("pass --name the one you want (e.g. wheels-py3.11-release)"),
        ),
    }
}

/// Every `pylock*.toml` at the top of `dir`, verified; (manifests, wheels).
fn check(dir: &Path) -> Result<(Vec<PathBuf>, usize), Error> {
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::failed(format!("cannot list {}", dir.display())).cause(e.to_string()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = lockstep_core::fs::file_name(p);
            name.starts_with("pylock") && name.ends_with(".toml") && p.is_file()
        })
        .collect();
    manifests.sort();
    if manifests.is_empty() {
        return Err(
            Error::failed(format!("the artifact holds no {} manifest", pylock::FILE)).hint(
                "fetch the artifact `lockstep pkg build` wrote (a wheelhouse with pylock.toml)",
            ),
        );
    }
    let mut wheels = 0;
    for manifest in &manifests {
        let lock = Lock::load(manifest)?;
        wheels += pylock::verify(&lock, manifest)?
            .iter()
            .filter(|c| !c.sdist)
            .count();
    }
    Ok((manifests, wheels))
}
