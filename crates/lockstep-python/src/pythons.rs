//! Finding the interpreters wheels are built for.
//!
//! uv finds the Pythons on PATH (`uv python find --system`), but a machine
//! often has more than its PATH shows: versions installed by pyenv but not
//! activated, asdf's and mise's installs, uv's own managed Pythons. lockstep
//! looks there too, then in `[tools] python`, and when a version is nowhere
//! the error says where it looked and what it found, and names the setting
//! that adds an interpreter. Nothing is installed or downloaded here.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use serde::Serialize;

use crate::uv::Uv;

/// An interpreter and where it was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    pub path: PathBuf,
    /// Its full version (`3.12.1`).
    pub version: String,
    /// `PATH`, `pyenv`, `asdf`, `mise`, `uv` (managed) or `[tools] python`.
    pub source: &'static str,
}

/// A directory of managed installs and what lockstep saw in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Looked {
    pub source: &'static str,
    pub dir: PathBuf,
    /// The versions it holds (directory names), or why it could not be read.
    pub seen: Result<Vec<String>, String>,
}

/// Where managed installs live on this machine (whether there or not).
pub fn managed_roots() -> Vec<(&'static str, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let from = |var: &str, under_home: &str, tail: &str| -> Option<PathBuf> {
        match std::env::var_os(var) {
            Some(v) if !v.is_empty() => Some(PathBuf::from(v).join(tail)),
            _ => home.as_ref().map(|h| h.join(under_home).join(tail)),
        }
    };
    let data_home = match std::env::var_os("XDG_DATA_HOME") {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => home.as_ref().map(|h| h.join(".local/share")),
    };
    let uv_managed = match std::env::var_os("UV_PYTHON_INSTALL_DIR") {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => data_home.as_ref().map(|d| d.join("uv/python")),
    };
    [
        ("pyenv", from("PYENV_ROOT", ".pyenv", "versions")),
        ("asdf", from("ASDF_DATA_DIR", ".asdf", "installs/python")),
        (
            "mise",
            match std::env::var_os("MISE_DATA_DIR") {
                Some(v) if !v.is_empty() => Some(PathBuf::from(v).join("installs/python")),
                _ => data_home.as_ref().map(|d| d.join("mise/installs/python")),
            },
        ),
        ("uv", uv_managed),
    ]
    .into_iter()
    .filter_map(|(source, dir)| dir.map(|d| (source, d)))
    .collect()
}

/// What one managed root holds: its entries' names (sorted), or why it
/// cannot be read; `None` when it does not exist.
fn look(source: &'static str, dir: &Path) -> Option<Looked> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            return Some(Looked {
                source,
                dir: dir.to_path_buf(),
                seen: Err(e.to_string()),
            })
        }
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names.truncate(200);
    Some(Looked {
        source,
        dir: dir.to_path_buf(),
        seen: Ok(names),
    })
}

/// The `X.Y` or `X.Y.Z` inside an install's directory name (`3.12.1`,
/// `cpython-3.12.7-linux-x86_64-gnu`).
fn version_in_name(name: &str) -> Option<&str> {
    let start = name.find(|c: char| c.is_ascii_digit())?;
    let rest = &name[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let v = rest[..end].trim_end_matches('.');
    (v.split('.').count() >= 2).then_some(v)
}

/// Whether a full version (`3.12.1`) is what `request` (`3.12`, `3.12.1`) asks.
pub fn matches(request: &str, full: &str) -> bool {
    full == request || full.starts_with(&format!("{request}."))
}

/// The interpreter of an install directory: `bin/pythonX.Y`, else `bin/python3`.
fn interpreter_in(install: &Path, version: &str) -> Option<PathBuf> {
    let xy: Vec<&str> = version.split('.').take(2).collect();
    let bin = install.join("bin");
    [format!("python{}", xy.join(".")), "python3".to_string()]
        .into_iter()
        .map(|name| bin.join(name))
        .find(|p| p.is_file())
}

/// `Python 3.12.1` -> `3.12.1` (the interpreter asked; empty when it does
/// not answer).
fn full_version(interpreter: &Path) -> String {
    crate::environment::python_version(interpreter)
        .trim()
        .trim_start_matches("Python")
        .trim()
        .to_string()
}

/// Every interpreter in the managed roots and `[tools] python` (those on
/// PATH are uv's to find), each asked its version; and what each root held.
pub fn managed(request: Option<&str>) -> (Vec<Found>, Vec<Looked>) {
    let mut found = Vec::new();
    let mut looked = Vec::new();
    for (source, root) in managed_roots() {
        let Some(l) = look(source, &root) else {
            continue;
        };
        if let Ok(names) = &l.seen {
            for name in names {
                let Some(v) = version_in_name(name) else {
                    continue;
                };
                // Only installs that may be the one asked are started.
                if request.is_some_and(|r| !(matches(r, v) || matches(v, r))) {
                    continue;
                }
                let Some(path) = interpreter_in(&root.join(name), v) else {
                    continue;
                };
                let version = full_version(&path);
                if !version.is_empty() {
                    found.push(Found {
                        path,
                        version,
                        source,
                    });
                }
            }
        }
        looked.push(l);
    }
    for path in crate::settings::configured().python {
        let version = full_version(&path);
        if !version.is_empty() {
            found.push(Found {
                path,
                version,
                source: "[tools] python",
            });
        }
    }
    (found, looked)
}

/// The interpreter of Python `request` (`3.11`, `3.12.1`): on PATH (uv),
/// else in pyenv, asdf, mise or uv's managed installs, else in `[tools]
/// python`. A missing one is a usage error saying where lockstep looked.
pub fn find(uv: &Uv, request: &str, cwd: &Path) -> Result<PathBuf, Error> {
    let on_path = uv.find_python(request, cwd);
    if let Ok(path) = on_path {
        return Ok(path);
    }
    let (found, looked) = managed(Some(request));
    if let Some(f) = found.iter().find(|f| matches(request, &f.version)) {
        return Ok(f.path.clone());
    }
    let mut err = Error::usage(format!(
        "Python {request} is not installed where lockstep looks"
    ));
    if let Err(e) = on_path {
        err = err.cause(format!(
            "on PATH (uv python find): {}",
            e.causes.last().cloned().unwrap_or(e.message)
        ));
    }
    for l in &looked {
        err = err.cause(match &l.seen {
            Ok(names) if names.is_empty() => format!("{} ({}): empty", l.dir.display(), l.source),
            Ok(names) => format!("{} ({}): {}", l.dir.display(), l.source, names.join(", ")),
            Err(why) => format!("{} ({}): cannot be read: {why}", l.dir.display(), l.source),
        });
    }
    let configured = crate::settings::configured().python;
    if !configured.is_empty() {
        let listed: Vec<String> = configured
            .iter()
            .map(|p| format!("{} ({})", p.display(), or_none(&full_version(p))))
            .collect();
        err = err.cause(format!("[tools] python: {}", listed.join(", ")));
    }
    Err(err.hint(format!(
        "install Python {request} (e.g. `uv python install {request}`, `pyenv install {request}`), or name its interpreter in lockstep.toml: [tools] python = [\"/path/to/python{request}\"]"
    )))
}

fn or_none(version: &str) -> &str {
    if version.is_empty() {
        "does not run"
    } else {
        version
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_install_names() {
        assert_eq!(version_in_name("3.12.1"), Some("3.12.1"));
        assert_eq!(
            version_in_name("cpython-3.12.7-linux-x86_64-gnu"),
            Some("3.12.7")
        );
        assert_eq!(version_in_name("pypy3.10-7.3.17"), Some("3.10"));
        assert_eq!(version_in_name("system"), None);
        assert_eq!(version_in_name("3"), None);
    }

    #[test]
    fn a_request_matches_its_full_versions_only() {
        assert!(matches("3.12", "3.12.1"));
        assert!(matches("3.12.1", "3.12.1"));
        assert!(!matches("3.1", "3.12.1"));
        assert!(!matches("3.12.1", "3.12.10"));
    }
}
