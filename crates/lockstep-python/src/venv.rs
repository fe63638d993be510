//! Venvs that hold exactly the wheels of a manifest (`lockstep pkg venv`,
//! `lockstep toolchain install --manifest`).
//!
//! The venv is built beside its destination (`.NAME.tmp-PID`), filled by
//! `uv pip sync --offline` from the manifest after lockstep has checked every
//! wheel's size and sha256 itself, compared with what the manifest lists, and
//! only then renamed into place; an existing venv that lockstep made is
//! swapped out, anything else at the destination is refused. A failure at any
//! step leaves the destination as it was. Nothing comes from the network:
//! the point is to test the files this commit built, not what an index
//! happens to hold (a stable release was once installed instead of a
//! just-built candidate that way).

use std::path::{Path, PathBuf};

use lockstep_core::events::Sink;
use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::pylock::{self, Checked, Lock};
use crate::uv::{run_captured, Uv};
use crate::wheel;

/// The marker a lockstep-made venv carries (and the record of what it holds).
pub const MARKER: &str = ".lockstep-venv.json";

/// What went into a venv.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Made {
    pub dir: PathBuf,
    /// `Python 3.11.7`.
    pub python: String,
    /// (normalised name, version) of every package installed.
    pub packages: Vec<(String, String)>,
    /// sha256 of each wheel installed, by file name.
    pub wheels: Vec<(String, String)>,
    /// The manifest, when one was given (None for `--wheels DIR`).
    pub manifest: Option<PathBuf>,
}

/// Where the packages come from.
pub enum From<'a> {
    /// A `pylock.toml`.
    Manifest(&'a Path),
    /// Every wheel directly in a directory (one version per package).
    Wheels(&'a Path),
}

/// Creates (or replaces) the venv `dest` with exactly the wheels `from`
/// names, for `python` (a version uv finds, e.g. `3.11`; `None` = uv's default).
pub fn create_exact(
    uv: &Uv,
    dest: &Path,
    from: From<'_>,
    python: Option<&str>,
    sink: &dyn Sink,
) -> Result<Made, Error> {
    let dest = std::path::absolute(dest).unwrap_or_else(|_| dest.to_path_buf());
    let (lock, manifest_path, scratch) = load(&from)?;
    let checked = pylock::verify(&lock, &manifest_path)?;
    check_destination(&dest)?;
    let parent = dest.parent().unwrap_or(Path::new("/")).to_path_buf();
    fs_err::create_dir_all(&parent).map_err(|e| {
        Error::usage(format!("cannot create {}", parent.display())).cause(e.to_string())
    })?;
    remove_dead_staging(&dest);
    let tmp = staging_dir(&dest, "tmp");
    let result = fill(uv, &tmp, &manifest_path, &lock, &checked, python, sink);
    drop(scratch);
    let made = match result {
        Ok(made) => made,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let made = Made {
        dir: dest.clone(),
        manifest: match from {
            From::Manifest(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
            From::Wheels(_) => None,
        },
        ..made
    };
    let marker = serde_json::to_string_pretty(&made)
        .map_err(|e| Error::failed("cannot encode the venv record").cause(e.to_string()))?;
    if let Err(e) = lockstep_core::fs::write_atomic(&tmp.join(MARKER), marker.as_bytes()) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    swap_into_place(&tmp, &dest)?;
    Ok(made)
}

/// Installs exactly the wheels `from` names into the existing venv `venv`
/// (offline, no dependencies, hashes checked), beside what it holds: how a
/// project's own packages join a toolchain from PyPI.
pub fn add_exact(uv: &Uv, venv: &Path, from: From<'_>, sink: &dyn Sink) -> Result<Made, Error> {
    let (lock, manifest, _scratch) = load(&from)?;
    let checked = pylock::verify(&lock, &manifest)?;
    sink.note(format!(
        "installing {} wheel(s) from {} (offline, hashes checked)",
        checked.len(),
        manifest.display()
    ));
    let interpreter = venv.join("bin").join("python");
    let mut cmd = uv.command(venv);
    cmd.args([
        "pip",
        "install",
        "--quiet",
        "--no-config",
        "--offline",
        "--no-deps",
        "--preview-features",
        "pylock",
        "--python",
    ])
    .arg(&interpreter)
    .arg("-r")
    .arg(&manifest);
    run_captured(&mut cmd, "uv pip install").map_err(|e| {
        e.context(format!(
            "cannot install the wheels of {}",
            manifest.display()
        ))
    })?;
    let installed = installed_packages(venv)?;
    check_installed(&lock, &installed)?;
    Ok(Made {
        dir: venv.to_path_buf(),
        python: python_version(&interpreter),
        packages: installed,
        wheels: wheel_hashes(&checked),
        manifest: None,
    })
}

fn wheel_hashes(checked: &[Checked]) -> Vec<(String, String)> {
    checked
        .iter()
        .map(|c| {
            let name = c.file.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_default(), c.sha256.clone())
        })
        .collect()
}

/// The lock, the file uv reads, and a scratch dir to drop afterwards.
fn load(from: &From<'_>) -> Result<(Lock, PathBuf, Option<ScratchDir>), Error> {
    match from {
        From::Manifest(path) => {
            let lock = Lock::load(path)?;
            Ok((
                lock,
                std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
                None,
            ))
        }
        From::Wheels(dir) => {
            let lock = pylock::from_dir(dir)?;
            let scratch = ScratchDir::new()?;
            let path = scratch.0.join(pylock::FILE);
            lockstep_core::fs::write_atomic(&path, lock.to_toml()?.as_bytes())?;
            Ok((lock, path, Some(scratch)))
        }
    }
}

/// A temporary directory removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<ScratchDir, Error> {
        let dir = std::env::temp_dir().join(format!(
            "lockstep-wheels-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        fs_err::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The destination is free, an empty directory, or a venv lockstep made.
fn check_destination(dest: &Path) -> Result<(), Error> {
    let Ok(meta) = dest.symlink_metadata() else {
        return Ok(());
    };
    if meta.is_dir() {
        if dest.join(MARKER).is_file() {
            return Ok(());
        }
        if std::fs::read_dir(dest).is_ok_and(|mut d| d.next().is_none()) {
            return Ok(());
        }
    }
    Err(Error::usage(format!(
        "{} exists and is not a venv lockstep made",
        dest.display()
    ))
    .hint("name a new directory (lockstep replaces only venvs it created), or move that one away yourself"))
}

fn staging_dir(dest: &Path, kind: &str) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "venv".into());
    dest.with_file_name(format!(".{name}.{kind}-{}", std::process::id()))
}

/// Staging directories of killed runs beside `dest`.
fn remove_dead_staging(dest: &Path) {
    let (Some(parent), Some(name)) = (dest.parent(), dest.file_name()) else {
        return;
    };
    let name = name.to_string_lossy();
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let file = entry.file_name().to_string_lossy().into_owned();
        let pid = [".tmp-", ".old-"]
            .iter()
            .find_map(|kind| file.strip_prefix(&format!(".{name}{kind}")))
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(|pid| !lockstep_core::process::pid_alive(pid)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Creates the venv in `tmp` and installs the checked wheels into it.
fn fill(
    uv: &Uv,
    tmp: &Path,
    manifest: &Path,
    lock: &Lock,
    checked: &[Checked],
    python: Option<&str>,
    sink: &dyn Sink,
) -> Result<Made, Error> {
    let _ = std::fs::remove_dir_all(tmp);
    let cwd = tmp.parent().unwrap_or(Path::new("/"));
    let mut cmd = uv.command(cwd);
    cmd.args([
        "venv",
        "--quiet",
        "--relocatable",
        "--no-config",
        "--offline",
        "--no-python-downloads",
    ]);
    if let Some(v) = python {
        cmd.args(["--python", v]);
    }
    cmd.arg(tmp);
    run_captured(&mut cmd, "uv venv").map_err(|e| python_error(e, python))?;
    sink.note(format!(
        "installing {} wheel(s) from {} (offline, hashes checked)",
        checked.len(),
        manifest.display()
    ));
    let interpreter = tmp.join("bin").join("python");
    let mut cmd = uv.command(cwd);
    cmd.args([
        "pip",
        "sync",
        "--quiet",
        "--no-config",
        "--offline",
        "--preview-features",
        "pylock",
        "--python",
    ])
    .arg(&interpreter)
    .arg(manifest);
    run_captured(&mut cmd, "uv pip sync").map_err(|e| {
        e.context(format!("cannot install the wheels of {}", manifest.display()))
            .hint("the manifest may hold no wheel for this Python (see the cause); build one with `lockstep pkg build --python VERSION`")
    })?;
    let installed = installed_packages(tmp)?;
    check_installed(lock, &installed)?;
    Ok(Made {
        dir: tmp.to_path_buf(),
        python: python_version(&interpreter),
        packages: installed,
        wheels: wheel_hashes(checked),
        manifest: None,
    })
}

/// uv found no such interpreter: a usage error naming the version.
fn python_error(err: Error, python: Option<&str>) -> Error {
    let text = err.causes.join("\n").to_lowercase();
    match python {
        Some(v) if text.contains("no interpreter") || text.contains("not found") => {
            let mut e = Error::usage(format!(
                "Python {v} is not installed (uv found no such interpreter)"
            ));
            e.causes = err.causes;
            e.hint(format!("install Python {v}, or pick one of `uv python list --only-installed` with --python"))
        }
        _ => err.context("cannot create the venv"),
    }
}

/// `Python 3.11.7` of an interpreter (empty when it does not answer).
pub fn python_version(interpreter: &Path) -> String {
    std::process::Command::new(interpreter)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// (normalised name, version) of every `*.dist-info` in the venv's site-packages.
pub fn installed_packages(venv: &Path) -> Result<Vec<(String, String)>, Error> {
    let lib = venv.join("lib");
    let mut found = Vec::new();
    let dirs = std::fs::read_dir(&lib).map_err(|e| {
        Error::failed(format!("cannot list {}", lib.display())).cause(e.to_string())
    })?;
    for dir in dirs.filter_map(|e| e.ok()) {
        let site = dir.path().join("site-packages");
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".dist-info") else {
                continue;
            };
            if let Some((n, v)) = stem.split_once('-') {
                found.push((wheel::normalize(n), v.to_string()));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Every package of the lock is installed at its version.
fn check_installed(lock: &Lock, installed: &[(String, String)]) -> Result<(), Error> {
    for package in &lock.packages {
        let name = wheel::normalize(&package.name);
        let want = package.version.as_deref().unwrap_or_default();
        let have = installed
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str());
        let same = match (have.map(wheel::parse_version), wheel::parse_version(want)) {
            (Some(Ok(a)), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            return Err(Error::failed(format!(
                "after installing, {name} is {} instead of {want}",
                have.unwrap_or("missing")
            ))
            .hint("report a bug: uv installed something other than the manifest's wheel"));
        }
    }
    Ok(())
}

/// Renames `tmp` to `dest`; an existing lockstep venv is moved aside first
/// and removed after, so `dest` is never half-written.
fn swap_into_place(tmp: &Path, dest: &Path) -> Result<(), Error> {
    let old = staging_dir(dest, "old");
    let had_old = dest.symlink_metadata().is_ok();
    let fail = |e: std::io::Error, what: &str| {
        let _ = std::fs::remove_dir_all(tmp);
        Error::failed(format!("cannot {what} {}", dest.display())).cause(e.to_string())
    };
    if had_old {
        std::fs::rename(dest, &old).map_err(|e| fail(e, "move aside"))?;
    }
    if let Err(e) = std::fs::rename(tmp, dest) {
        if had_old {
            let _ = std::fs::rename(&old, dest);
        }
        return Err(fail(e, "move the new venv into"));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}
/// Runs the venv's Python with `args` (nothing on stdin, a 10-minute
/// bound); what it printed on stdout, trimmed.
pub fn run_python(venv: &Path, args: &[&str]) -> Result<String, Error> {
    let log = tempfile_log()?;
    let mut argv = vec![venv
        .join("bin")
        .join("python")
        .to_string_lossy()
        .into_owned()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let finished = lockstep_core::process::run(
        &lockstep_core::process::Spec {
            argv,
            cwd: venv.to_path_buf(),
            env: Vec::new(),
            timeout: Some(std::time::Duration::from_secs(600)),
            log: log.path().to_path_buf(),
            header: None,
        },
        |_| {},
    )?;
    let text = std::fs::read_to_string(log.path()).unwrap_or_default();
    if finished.exit != lockstep_core::process::Exit::Code(0) {
        return Err(Error::failed(format!(
            "{} failed ({})",
            venv.join("bin").join("python").display(),
            finished.exit.describe()
        ))
        .cause(crate::uv::tail(text.as_bytes(), 20)));
    }
    Ok(text.trim().to_string())
}

/// A fresh venv at `venv` made by the system's `python3 -m venv`, then
/// `pip install --pre PACKAGES` from the index at `url` only (what a user of
/// the index runs, pip rather than uv).
pub fn pip_install_from_index(venv: &Path, url: &str, packages: &[&str]) -> Result<(), Error> {
    let log = tempfile_log()?;
    let run = |argv: Vec<String>| -> Result<(), Error> {
        let finished = lockstep_core::process::run(
            &lockstep_core::process::Spec {
                argv: argv.clone(),
                cwd: std::env::temp_dir(),
                env: vec![("PIP_CONFIG_FILE".into(), "/dev/null".into())],
                timeout: Some(std::time::Duration::from_secs(1800)),
                log: log.path().to_path_buf(),
                header: None,
            },
            |_| {},
        )?;
        if finished.exit != lockstep_core::process::Exit::Code(0) {
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            return Err(Error::failed(format!(
                "`{}` failed ({})",
                argv.join(" "),
                finished.exit.describe()
            ))
            .cause(crate::uv::tail(text.as_bytes(), 20)));
        }
        Ok(())
    };
    run(vec![
        "python3".into(),
        "-m".into(),
        "venv".into(),
        venv.to_string_lossy().into_owned(),
    ])?;
    let mut argv: Vec<String> = vec![
        venv.join("bin")
            .join("python")
            .to_string_lossy()
            .into_owned(),
        "-m".into(),
        "pip".into(),
        "install".into(),
        "--quiet".into(),
        "--disable-pip-version-check".into(),
        "--no-cache-dir".into(),
        "--index-url".into(),
        url.into(),
        "--pre".into(),
    ];
    argv.extend(packages.iter().map(|p| p.to_string()));
    run(argv)
}

fn tempfile_log() -> Result<tempfile::NamedTempFile, Error> {
    tempfile::Builder::new()
        .prefix("lockstep-python-")
        .suffix(".log")
        .tempfile()
        .map_err(|e| Error::failed("cannot create a log file").cause(e.to_string()))
}
