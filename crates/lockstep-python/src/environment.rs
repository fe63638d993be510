//! A venv as a place to run programs: its layout (`bin/`, `bin/python`,
//! the `*.dist-info` of what is installed) and [`Venv::run`], which starts a
//! console script, `python -c` or a smoke command inside it under the
//! layer's policy ([`crate::policy`]).
//!
//! It sits below [`crate::uv`] (which makes and fills venvs) and
//! [`crate::venv`] (exact venvs from manifests), so both can hand one around.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::Error;

use crate::policy::{self, Child, Policy, Ran, VENV_VARS};
use crate::wheel;

/// How long `python --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(60);

/// A venv (made by [`Uv::create_venv`], or an existing one through
/// [`Uv::venv`]) whose programs run under the policy of the uv that opened it.
#[derive(Debug, Clone)]
pub struct Venv {
    dir: PathBuf,
    policy: Policy,
    logs: PathBuf,
}

/// A program to run inside a venv ([`Venv::run`]).
#[derive(Debug, Clone)]
pub struct RunIn<'a> {
    /// How messages name it (``[release] smoke `...` ``).
    pub what: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// Where its output goes (kept); `None` = a fresh file under the uv's
    /// logs, removed when it succeeds.
    pub log: Option<&'a Path>,
}

impl Venv {
    pub(crate) fn new(dir: &Path, policy: Policy, logs: PathBuf) -> Venv {
        Venv {
            dir: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
            policy,
            logs,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `bin/` (console scripts, the interpreter).
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// `bin/python`.
    pub fn python(&self) -> PathBuf {
        self.bin().join("python")
    }

    /// (normalised name, version) of every package installed.
    pub fn packages(&self) -> Result<Vec<(String, String)>, Error> {
        installed_packages(&self.dir)
    }

    /// Runs `argv` with the venv's `bin/` first on `PATH` and `VIRTUAL_ENV`
    /// set, without lockstep's secrets, index variables, `PYTHONPATH` or
    /// `PYTHONHOME`; how it ended (a timeout included) is in the result
    /// ([`Ran::require_success`] makes an error of it).
    pub fn run(&self, argv: &[String], how: &RunIn<'_>) -> Result<Ran, Error> {
        let path = path_with(&self.bin());
        policy::run(
            &self.policy,
            &self.logs,
            Child {
                what: how.what.to_string(),
                argv: argv.to_vec(),
                cwd: how.cwd,
                env: vec![
                    ("PATH".into(), path),
                    ("VIRTUAL_ENV".into(), self.dir.display().to_string()),
                ],
                remove: VENV_VARS,
                timeout: how.timeout,
                log: how.log,
                capture_stdout: false,
                scrub: None,
            },
        )
    }

    /// `Python 3.11.7` (empty when the interpreter does not answer).
    pub fn python_version(&self) -> String {
        version_of(&self.python(), &self.policy, &self.logs)
    }
}

/// `PATH` with `bin` first (the venv's programs before the system's).
pub(crate) fn path_with(bin: &Path) -> String {
    match std::env::var_os("PATH") {
        Some(p) if !p.is_empty() => format!("{}:{}", bin.display(), p.to_string_lossy()),
        _ => bin.display().to_string(),
    }
}

/// `Python 3.11.7` of an interpreter (empty when it does not answer).
pub fn python_version(interpreter: &Path) -> String {
    let logs = lockstep_core::paths::home().join("logs").join("python");
    version_of(interpreter, &Policy::default(), &logs)
}

fn version_of(interpreter: &Path, policy: &Policy, logs: &Path) -> String {
    let cwd = std::env::temp_dir();
    let ran = policy::run(
        policy,
        logs,
        Child {
            what: "python --version".into(),
            argv: vec![
                interpreter.to_string_lossy().into_owned(),
                "--version".into(),
            ],
            cwd: &cwd,
            env: vec![],
            remove: VENV_VARS,
            timeout: VERSION_TIMEOUT,
            log: None,
            capture_stdout: true,
            scrub: None,
        },
    );
    match ran {
        Ok(ran) if ran.success() => ran.stdout().trim().to_string(),
        _ => String::new(),
    }
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
