//! Staged sources: a commit's tree extracted with `git archive` into a
//! scratch directory (so builds never write into the user's tree, and
//! untracked files never reach a wheel), and the version stamped into a
//! staged `pyproject.toml`.

use std::path::Path;
use std::process::{Command, Stdio};

use lockstep_core::Error;
use lockstep_git::Repo;

/// Extracts `rev`'s tree into `dest` (which must exist).
pub fn archive(repo: &Repo, rev: &str, dest: &Path) -> Result<(), Error> {
    let mut git = repo.command(&["archive", "--format=tar", rev]);
    git.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut git = git.spawn().map_err(lockstep_git::spawn_error)?;
    let Some(stdout) = git.stdout.take() else {
        return Err(Error::failed("internal: git archive has no stdout"));
    };
    let tar = Command::new("tar")
        .args(["-x", "-f", "-", "-C"])
        .arg(dest)
        .stdin(stdout)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::failed("cannot run tar to extract the sources").cause(e.to_string()))?;
    let git = git
        .wait_with_output()
        .map_err(|e| Error::failed("git archive failed").cause(e.to_string()))?;
    if !git.status.success() {
        return Err(Error::failed(format!("`git archive {rev}` failed"))
            .cause(String::from_utf8_lossy(&git.stderr).trim().to_string()));
    }
    if !tar.status.success() {
        return Err(
            Error::failed(format!("cannot extract the sources of {rev}"))
                .cause(String::from_utf8_lossy(&tar.stderr).trim().to_string()),
        );
    }
    Ok(())
}

/// What `[project]` says about the name and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub name: Option<String>,
    /// The static `version`, if any.
    pub version: Option<String>,
    /// `version` is listed in `dynamic` (set by the build backend).
    pub dynamic_version: bool,
}

/// Reads `[project]` of a pyproject.toml's text.
pub fn read_project(text: &str, what: &str) -> Result<Project, Error> {
    let doc: toml::Table = toml::from_str(text).map_err(|e| {
        Error::usage(format!("{what} is not valid TOML"))
            .cause(lockstep_core::error::printable(e.message()).into_owned())
    })?;
    let project = doc.get("project").and_then(|p| p.as_table());
    let get = |key: &str| {
        project
            .and_then(|p| p.get(key))
            .and_then(|v| v.as_str())
            .map(String::from)
    };
    let dynamic_version = project
        .and_then(|p| p.get("dynamic"))
        .and_then(|d| d.as_array())
        .is_some_and(|d| d.iter().any(|v| v.as_str() == Some("version")));
    Ok(Project {
        name: get("name"),
        version: get("version"),
        dynamic_version,
    })
}

/// Rewrites `[project] version` of the staged `pyproject` to `version`,
/// keeping everything else as written. A dynamic version cannot be stamped.
pub fn stamp_version(pyproject: &Path, package: &str, version: &str) -> Result<(), Error> {
    let text = fs_err::read_to_string(pyproject)?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        Error::usage(format!("the pyproject.toml of {package} is not valid TOML"))
            .cause(e.message().to_string())
    })?;
    let project = read_project(&text, &format!("the pyproject.toml of {package}"))?;
    if project.dynamic_version || project.version.is_none() {
        return Err(Error::usage(format!(
            "cannot stamp version {version} into {package}: its [project] version is {}",
            if project.dynamic_version { "dynamic (set by the build backend)" } else { "missing" }
        ))
        .hint("give the package a static `version = \"...\"` in [project] (lockstep rewrites it in a staged copy), or build it with the `source` version scheme and no --version"));
    }
    doc["project"]["version"] = toml_edit::value(version);
    lockstep_core::fs::write_atomic(pyproject, doc.to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_stamps() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("pyproject.toml");
        std::fs::write(
            &file,
            "# keep me\n[project]\nname = \"a\"\nversion = \"1.0\" # old\n[tool.x]\ny = 1\n",
        )
        .expect("write");
        stamp_version(&file, "a", "1.0.dev0+gabc").expect("stamps");
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.starts_with("# keep me\n"), "{text}");
        assert_eq!(
            read_project(&text, "x").expect("parses").version.as_deref(),
            Some("1.0.dev0+gabc")
        );
        std::fs::write(&file, "[project]\nname = \"a\"\ndynamic = [\"version\"]\n").expect("write");
        let err = stamp_version(&file, "a", "2.0")
            .expect_err("dynamic")
            .render();
        assert!(
            err.contains("dynamic") && err.contains("cannot stamp version 2.0 into a"),
            "{err}"
        );
    }
}
