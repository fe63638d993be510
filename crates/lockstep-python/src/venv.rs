//! Venvs: a [`Venv`] runs programs inside itself under the layer's policy
//! ([`crate::policy`]), and [`create_exact`] makes one that holds exactly
//! the wheels of a manifest (`lockstep pkg venv`, `pkg bisect`), which
//! [`add_exact`] adds to an existing venv (a project's packages over IREE
//! from PyPI, `lockstep toolchain install --manifest`).
//!
//! An exact venv is built beside its destination (a
//! [`lockstep_core::fs::StagedDir`]), filled by `uv pip sync --offline` from
//! the manifest after lockstep has checked every wheel's size and sha256
//! itself, compared with what the manifest lists, checked to import (`uv
//! pip check`: every `Requires-Dist` of every wheel, markers evaluated for
//! the venv's Python, must be met by the set), and only then moved into
//! place; an existing venv that lockstep made is swapped out, anything else
//! at the destination is refused. A failure at any step leaves the
//! destination as it was. Nothing comes from the network: the point is to
//! test the files this commit built, not what an index happens to hold (a
//! stable release was once installed instead of a just-built candidate that
//! way), so a requirement the set does not hold is an error naming it, never
//! a download.

use std::path::{Path, PathBuf};

use lockstep_core::events::Sink;
use lockstep_core::fs::StagedDir;
use lockstep_core::words::count;
use lockstep_core::Error;
use serde::{Deserialize, Serialize};

pub use crate::environment::{installed_packages, python_version, RunIn, Venv};
use crate::pylock::{self, Checked, Lock};
use crate::uv::{Install, NewVenv, Unmet, Uv};
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
    /// Requirements of the installed packages that the venv does not meet
    /// ([`add_exact`] reports them; [`create_exact`] refuses them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmet: Vec<Unmet>,
    /// The index the set's declared dependencies came from
    /// ([`create_with_dependencies`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_index: Option<String>,
    /// (normalised name, version) of each package installed from it: the
    /// venv's record of what did not come from the set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<(String, String)>,
}

/// Where the packages come from.
pub enum From<'a> {
    /// A `pylock.toml`.
    Manifest(&'a Path),
    /// Every wheel directly in a directory (one version per package).
    Wheels(&'a Path),
}

impl From<'_> {
    fn describe(&self) -> String {
        match self {
            From::Manifest(p) => p.display().to_string(),
            From::Wheels(d) => format!("the wheels in {}", d.display()),
        }
    }
}

/// Creates (or replaces) the venv `dest` with exactly the wheels `from`
/// names, for `python` (a version, e.g. `3.11`, found where `pkg build`
/// finds one: [`crate::pythons::find`]; `None` = uv's default). A requirement of those wheels that the set does not hold is an
/// error naming the package, the requirement and the manifest: the venv
/// would not import.
pub fn create_exact(
    uv: &Uv,
    dest: &Path,
    from: From<'_>,
    python: Option<&str>,
    sink: &dyn Sink,
) -> Result<Made, Error> {
    create(uv, dest, from, python, None, &[], sink)
}

/// As [`create_exact`], then what the set's wheels require and the set
/// does not hold (numpy ...) from `index` alone, the set's own packages
/// pinned (never replaced from the index). What came from the index is
/// recorded in the venv's record ([`Made::dependencies`]).
pub fn create_with_dependencies(
    uv: &Uv,
    dest: &Path,
    from: From<'_>,
    python: Option<&str>,
    index: &str,
    sink: &dyn Sink,
) -> Result<Made, Error> {
    create(uv, dest, from, python, Some(index), &[], sink)
}

/// As [`create_exact`], then `requirements` (a test suite's `pytest` ...)
/// and what the set's wheels require and the set does not hold, from uv's
/// default index (PyPI unless `UV_DEFAULT_INDEX` says otherwise), the
/// set's own packages pinned: the venv a `[[test.pytest]]` suite runs in.
/// What came from the index is recorded ([`Made::dependencies`]).
pub fn create_for_tests(
    uv: &Uv,
    dest: &Path,
    from: From<'_>,
    python: Option<&str>,
    requirements: &[String],
    sink: &dyn Sink,
) -> Result<Made, Error> {
    create(uv, dest, from, python, None, requirements, sink)
}

fn create(
    uv: &Uv,
    dest: &Path,
    from: From<'_>,
    python: Option<&str>,
    index: Option<&str>,
    extra: &[String],
    sink: &dyn Sink,
) -> Result<Made, Error> {
    let dest = std::path::absolute(dest).unwrap_or_else(|_| dest.to_path_buf());
    let (lock, manifest_path, scratch) = load(&from)?;
    let checked = pylock::verify(&lock, &manifest_path)?;
    check_destination(&dest)?;
    let interpreter = match python {
        Some(version) => {
            let cwd = match manifest_path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            Some(crate::pythons::find(uv, version, cwd)?)
        }
        None => None,
    };
    let staged = StagedDir::beside(&dest)?;
    let venv = uv.create_venv(
        staged.path(),
        &NewVenv {
            python: interpreter.as_deref(),
            offline: true,
            seed: false,
        },
    )?;
    sink.note(installing(&checked, &manifest_path));
    uv.sync(&venv, &manifest_path).map_err(|e| {
        e.context(format!("cannot install the wheels of {}", manifest_path.display()))
            .hint("the manifest may hold no wheel for this Python (see the cause); build one with `lockstep pkg build --python VERSION`")
    })?;
    drop(scratch);
    let from_set = venv.packages()?;
    check_installed(&lock, &from_set)?;
    let mut unmet = uv.check(&venv)?;
    let mut dependencies = Vec::new();
    let from_index = index.is_some() || !extra.is_empty();
    if from_index && (!unmet.is_empty() || !extra.is_empty()) {
        // A set package at the wrong version is the set's own fault: the
        // index must not paper over it.
        let conflicts: Vec<Unmet> = unmet
            .iter()
            .filter(|u| u.installed.is_some())
            .cloned()
            .collect();
        if !conflicts.is_empty() {
            return Err(would_not_import(&conflicts, &from, &dest));
        }
        dependencies = install_dependencies(uv, &venv, index, extra, &from_set, &unmet, sink)?;
        unmet = uv.check(&venv)?;
    }
    if !unmet.is_empty() {
        return Err(would_not_import(&unmet, &from, &dest));
    }
    let installed = venv.packages()?;
    let made = Made {
        dir: dest.clone(),
        python: venv.python_version(),
        packages: installed,
        wheels: wheel_hashes(&checked),
        manifest: match from {
            From::Manifest(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
            From::Wheels(_) => None,
        },
        unmet: Vec::new(),
        dependency_index: index.map(str::to_string),
        dependencies,
    };
    let marker = serde_json::to_string_pretty(&made)
        .map_err(|e| Error::failed("cannot encode the venv record").cause(e.to_string()))?;
    lockstep_core::fs::write_atomic(&staged.path().join(MARKER), marker.as_bytes())?;
    staged.install()?;
    Ok(made)
}

/// Installs `extra` and the requirements `unmet` names from `index` alone
/// (`None`: uv's default index), the set's packages (`from_set`) pinned;
/// returns what was added.
fn install_dependencies(
    uv: &Uv,
    venv: &Venv,
    index: Option<&str>,
    extra: &[String],
    from_set: &[(String, String)],
    unmet: &[Unmet],
    sink: &dyn Sink,
) -> Result<Vec<(String, String)>, Error> {
    let mut requirements: Vec<String> = unmet.iter().map(|u| u.requirement.clone()).collect();
    requirements.extend(extra.iter().cloned());
    requirements.sort();
    requirements.dedup();
    let index_name = index.unwrap_or("the default index");
    let what = match extra.is_empty() {
        true => format!("the set's dependencies ({})", requirements.join(", ")),
        false => format!("{} beside the set", requirements.join(", ")),
    };
    sink.note(format!("installing {what} from {index_name}"));
    let pins: String = from_set
        .iter()
        .map(|(name, version)| format!("{name}=={version}\n"))
        .collect();
    let constraints = tempfile::Builder::new()
        .prefix("lockstep-set-pins-")
        .suffix(".txt")
        .tempfile()
        .map_err(|e| Error::failed("cannot write the set's pins").cause(e.to_string()))?;
    fs_err::write(constraints.path(), pins)?;
    uv.install(
        venv,
        Install::Dependencies {
            index,
            requirements: &requirements,
            constraints: constraints.path(),
        },
    )
    .map_err(|e| {
        e.context(format!("cannot install {what} from {index_name}"))
        .hint("the index must hold each dependency in a version the set allows (the set's own packages are never taken from it); nothing was changed at the destination")
    })?;
    let after = venv.packages()?;
    Ok(after
        .into_iter()
        .filter(|p| !from_set.iter().any(|(name, _)| *name == p.0))
        .collect())
}

/// The error for requirements a set does not hold.
fn would_not_import(unmet: &[Unmet], from: &From<'_>, dest: &Path) -> Error {
    let first = &unmet[0];
    let missing: Vec<String> = {
        let mut names: Vec<String> = unmet
            .iter()
            .map(|u| requirement_name(&u.requirement))
            .collect();
        names.dedup();
        names
    };
    let holds = match &first.installed {
        Some(v) => format!("but the set holds {v}"),
        None => "which the set does not hold".to_string(),
    };
    let mut err = Error::failed(format!(
        "{} from {} requires {}, {holds}",
        first.package,
        from.describe(),
        first.requirement
    ))
    .cause(format!(
        "a venv at {} would not import {}",
        dest.display(),
        first.package
    ));
    for u in unmet {
        err = err.cause(u.describe());
    }
    err.hint(format!(
        "add {} to the set: build it with `lockstep pkg build` (a [[pkg.package]] of lockstep.toml), or put its wheel beside the manifest (`pip download --no-deps -d DIR {}`) and rewrite the manifest with `lockstep pkg manifest DIR`; exact installs never download what a set lacks",
        missing.join(", "),
        missing.join(" ")
    ))
}

/// The distribution name a requirement starts with (`packaging>=20` -> `packaging`).
fn requirement_name(requirement: &str) -> String {
    requirement
        .split(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .next()
        .unwrap_or(requirement)
        .to_string()
}

/// Installs exactly the wheels `from` names into the existing venv `venv`
/// (offline, no dependencies, hashes checked), beside what it holds: how a
/// project's own packages join a toolchain from PyPI. What the venv then
/// lacks for them is reported in [`Made::unmet`], for the caller to judge.
pub fn add_exact(uv: &Uv, venv: &Venv, from: From<'_>, sink: &dyn Sink) -> Result<Made, Error> {
    let (lock, manifest, _scratch) = load(&from)?;
    let checked = pylock::verify(&lock, &manifest)?;
    sink.note(installing(&checked, &manifest));
    uv.install(venv, Install::Manifest(&manifest))
        .map_err(|e| {
            e.context(format!(
                "cannot install the wheels of {}",
                manifest.display()
            ))
        })?;
    let installed = venv.packages()?;
    check_installed(&lock, &installed)?;
    let unmet = uv.check(venv)?;
    Ok(Made {
        dir: venv.dir().to_path_buf(),
        python: venv.python_version(),
        packages: installed,
        wheels: wheel_hashes(&checked),
        manifest: None,
        unmet,
        dependency_index: None,
        dependencies: Vec::new(),
    })
}

fn wheel_hashes(checked: &[Checked]) -> Vec<(String, String)> {
    checked
        .iter()
        .filter(|c| !c.sdist)
        .map(|c| {
            let name = c.file.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_default(), c.sha256.clone())
        })
        .collect()
}

/// The lock, the file uv reads, and a scratch dir to drop afterwards.
fn load(from: &From<'_>) -> Result<(Lock, PathBuf, Option<tempfile::TempDir>), Error> {
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
            let scratch = tempfile::Builder::new()
                .prefix("lockstep-wheels-")
                .tempdir()
                .map_err(|e| {
                    Error::failed("cannot create a temporary directory").cause(e.to_string())
                })?;
            let path = scratch.path().join(pylock::FILE);
            lockstep_core::fs::write_atomic(&path, lock.to_toml()?.as_bytes())?;
            Ok((lock, path, Some(scratch)))
        }
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

/// The note an exact install starts with: how many wheels, from which
/// manifest.
fn installing(checked: &[pylock::Checked], manifest: &Path) -> String {
    format!(
        "installing {} from {} (offline, hashes checked)",
        count(
            checked.iter().filter(|c| !c.sdist).count(),
            "wheel",
            "wheels"
        ),
        manifest.display()
    )
}
