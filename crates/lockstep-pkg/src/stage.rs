//! Staged sources: a commit's tree extracted with `git archive` into a
//! scratch directory (so builds never write into the user's tree, and
//! untracked files never reach a wheel), with every submodule's files at
//! the commit the superproject records (recursively; `git archive` alone
//! leaves them out), and the version stamped into the staged copy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::process;
use lockstep_core::Error;
use lockstep_git::Repo;

/// The most nested submodule levels followed (a cycle of submodules that
/// contain each other would otherwise never end).
const MAX_SUBMODULE_DEPTH: usize = 8;

/// A submodule of the staged commit: where it goes, which commit, and the
/// local repository that holds it.
#[derive(Debug, Clone)]
pub struct Submodule {
    /// Relative to the superproject's top (`third_party/minillvm`).
    pub path: String,
    pub commit: String,
    repo: PathBuf,
}

/// Every submodule `rev` records, recursively, each checked to be
/// initialised with its commit present: found before anything is built, so
/// a missing one is an error (exit 2) naming it and the command that fixes it.
pub fn submodules(repo: &Repo, top: &Path, rev: &str) -> Result<Vec<Submodule>, Error> {
    let mut found = Vec::new();
    collect_submodules(repo, top, rev, "", 0, &mut found)?;
    Ok(found)
}

fn collect_submodules(
    repo: &Repo,
    dir: &Path,
    rev: &str,
    prefix: &str,
    depth: usize,
    found: &mut Vec<Submodule>,
) -> Result<(), Error> {
    for (path, commit) in repo.gitlinks(rev)? {
        let full = format!("{prefix}{path}");
        check_submodule_path(&full)?;
        if depth >= MAX_SUBMODULE_DEPTH {
            return Err(Error::usage(format!(
                "submodule {full} is nested more than {MAX_SUBMODULE_DEPTH} levels deep"
            ))
            .hint("set `[pkg] submodules = false` to build without submodules"));
        }
        let sub_dir = dir.join(&path);
        let sub = initialised(&sub_dir).ok_or_else(|| {
            Error::usage(format!("submodule {full} is not initialised"))
                .cause(format!(
                    "the commit records it at {}, and {} holds no checkout of it",
                    short(&commit),
                    sub_dir.display()
                ))
                .hint("run `git submodule update --init --recursive` (or set `[pkg] submodules = false` to build without it)")
        })?;
        if !sub.has_commit(&commit)? {
            return Err(Error::usage(format!(
                "submodule {full} does not have commit {} (recorded by {})",
                short(&commit),
                short(rev)
            ))
            .hint(format!(
                "fetch it: `git submodule update --init --recursive`, or `git -C {full} fetch`"
            )));
        }
        collect_submodules(
            &sub,
            &sub_dir,
            &commit,
            &format!("{full}/"),
            depth + 1,
            found,
        )?;
        found.push(Submodule {
            path: full,
            commit,
            repo: sub_dir,
        });
    }
    Ok(())
}

/// A submodule path from a tree is joined to directories: only plain
/// components (no `..`, no `.git`, no control characters) are accepted.
fn check_submodule_path(path: &str) -> Result<(), Error> {
    let plain = !path.is_empty()
        && path.len() <= 4096
        && !path.chars().any(char::is_control)
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && part != ".git");
    if plain {
        return Ok(());
    }
    Err(Error::usage(format!(
        "the commit records a submodule at `{}`: not a plain path inside the repository",
        lockstep_core::error::printable_line(path)
    ))
    .hint("fix the superproject's tree, or set `[pkg] submodules = false`"))
}

/// The submodule's own repository at `dir`, if it is checked out there
/// (its top is `dir` itself, not the superproject around it).
fn initialised(dir: &Path) -> Option<Repo> {
    if !dir.join(".git").exists() {
        return None;
    }
    let repo = Repo::new(dir);
    let top = repo.git(&["rev-parse", "--show-toplevel"]).ok()?;
    let same = match (
        std::fs::canonicalize(top.trim()),
        std::fs::canonicalize(dir),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    same.then_some(repo)
}

fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

/// Extracts `rev`'s tree into `dest` (which must exist), then each of
/// `submodules` at its commit into its path.
pub fn archive(repo: &Repo, rev: &str, submodules: &[Submodule], dest: &Path) -> Result<(), Error> {
    archive_one(repo, rev, dest)?;
    for sub in submodules {
        let into = dest.join(&sub.path);
        fs_err::create_dir_all(&into)?;
        archive_one(&Repo::new(&sub.repo), &sub.commit, &into)
            .map_err(|e| e.cause(format!("while staging submodule {}", sub.path)))?;
    }
    Ok(())
}

/// The longest `git archive | tar` may take for one tree (an LLVM checkout
/// takes a minute or two); both process groups are killed then.
const ARCHIVE_TIMEOUT: Duration = Duration::from_secs(3600);

/// What is kept of git's and tar's stderr.
const STDERR_BOUNDS: process::Bounds = process::Bounds {
    max_stdout: Some(1 << 20),
    max_stderr: Some(1 << 20),
};

fn archive_one(repo: &Repo, rev: &str, dest: &Path) -> Result<(), Error> {
    let mut git = repo.command(&["archive", "--format=tar", rev]);
    let mut tar = process::command("tar");
    tar.args(["-x", "-f", "-", "-C"]).arg(dest);
    let (git, tar) = process::pipeline(&mut git, &mut tar, Some(ARCHIVE_TIMEOUT), STDERR_BOUNDS)
        .map_err(|e| {
            Error::failed(format!(
                "cannot run `git archive {rev} | tar` to extract the sources"
            ))
            .cause(e.to_string())
        })?;
    if git.exit != process::Exit::Code(0) {
        return Err(Error::failed(format!(
            "`git archive {rev}` failed ({})",
            git.exit.describe()
        ))
        .cause(String::from_utf8_lossy(&git.stderr).trim().to_string()));
    }
    if tar.exit != process::Exit::Code(0) {
        return Err(Error::failed(format!(
            "cannot extract the sources of {rev} ({})",
            tar.exit.describe()
        ))
        .cause(String::from_utf8_lossy(&tar.stderr).trim().to_string()));
    }
    Ok(())
}

/// What `[project]` says about the name and version (nothing, for a
/// package without a pyproject.toml or its `[project]` table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// Refuses a symbolic link on the way from `base` to `base/rel` (the file
/// included): the staged tree is the commit's, and a committed link could
/// send the stamp outside it or read a file from outside into the wheel.
fn refuse_links(base: &Path, rel: &Path, package: &str) -> Result<(), Error> {
    let mut at = base.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(Error::usage(format!(
                "package {package}: {} is a symbolic link in the commit",
                at.strip_prefix(base).unwrap_or(&at).display()
            ))
            .hint("[pkg.version] write-file must name a regular file of the package (or one lockstep creates)"));
        }
    }
    Ok(())
}

/// Rewrites `[project] name` of the staged `pyproject` to `name` (a
/// variant's `name-suffix`), keeping everything else as written.
pub fn stamp_name(pyproject: &Path, package: &str, name: &str) -> Result<(), Error> {
    let text = fs_err::read_to_string(pyproject)?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        Error::usage(format!("the pyproject.toml of {package} is not valid TOML"))
            .cause(e.message().to_string())
    })?;
    if doc.get("project").and_then(|p| p.get("name")).is_none() {
        return Err(Error::usage(format!(
            "cannot build {package} as {name}: its pyproject.toml has no [project] name"
        )));
    }
    doc["project"]["name"] = toml_edit::value(name);
    lockstep_core::fs::write_atomic(pyproject, doc.to_string().as_bytes())
}

/// `[pkg.version] write-file`, checked: a relative path that stays inside
/// each package's source.
pub fn check_write_file(file: Option<&Path>) -> Result<Option<PathBuf>, Error> {
    let Some(file) = file else { return Ok(None) };
    let inside = !file.as_os_str().is_empty()
        && file.as_os_str().len() <= 1024
        && file
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return Err(Error::usage(format!(
            "[pkg.version] write-file `{}` is not a relative path inside each package's source",
            lockstep_core::error::printable_line(&file.to_string_lossy())
        ))
        .hint(
            "name the file relative to the package's `source` (for example \"version_info.json\")",
        ));
    }
    Ok(Some(file.to_path_buf()))
}

/// `[pkg.version] env`, checked: a plain variable name.
pub fn check_env_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        return Ok(());
    }
    Err(Error::usage(format!(
        "[pkg.version] env `{}` is not an environment variable name",
        lockstep_core::error::printable_line(name)
    ))
    .hint("use letters, digits and `_` (for example IREE_RELEASE_VERSION)"))
}

/// The keys and values of an `env` table (`[[pkg.package]] env`,
/// `[pkg.variants.NAME] env`) the process environment can hold: a key is
/// not empty and holds no `=`, NUL or control character; a value holds no
/// NUL. `what` names the table.
pub fn check_env_table(
    what: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<(), Error> {
    for (key, value) in env {
        let why = if key.is_empty() {
            "an empty name"
        } else if key.contains('=') {
            "a name holding `=`"
        } else if key.chars().any(char::is_control) {
            "a name holding a control character"
        } else if key.len() > 128 {
            "a name longer than 128 bytes"
        } else if value.contains('\0') {
            "a value holding a NUL character"
        } else {
            continue;
        };
        return Err(Error::usage(format!(
            "{what} env has {why}: `{}`",
            lockstep_core::error::printable_line(key)
        ))
        .hint("name each variable with letters, digits and `_` (for example CMAKE_ARGS); nothing was built"));
    }
    Ok(())
}

/// The version the committed `write-file` of a package holds (a JSON
/// file's `package-version`, any other file's first line), if it has one.
pub fn committed_version(
    repo: &Repo,
    rev: &str,
    source: &str,
    file: &Path,
    package: &str,
) -> Result<Option<String>, Error> {
    let rel = file.to_string_lossy();
    let path = if source.is_empty() {
        rel.into_owned()
    } else {
        format!("{source}/{rel}")
    };
    if repo.resolve_blob(&format!("{rev}:{path}"))?.is_none() {
        return Ok(None);
    }
    let size: u64 = repo
        .git(&["cat-file", "-s", &format!("{rev}:{path}")])?
        .trim()
        .parse()
        .unwrap_or(u64::MAX);
    if size > MAX_VERSION_FILE {
        return Err(Error::usage(format!(
            "package {package}: {path} has {size} bytes, more than a version file ({MAX_VERSION_FILE})"
        ))
        .hint("[pkg.version] write-file names the small file the build backend reads the version from"));
    }
    let text = repo.git(&["show", &format!("{rev}:{path}")])?;
    if is_json(file) {
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!("package {package}: {path} is not valid JSON"))
                .cause(e.to_string())
        })?;
        return Ok(value
            .get(VERSION_KEY)
            .and_then(|v| v.as_str())
            .map(String::from));
    }
    Ok(text
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty()))
}

/// The most bytes of a version file read.
const MAX_VERSION_FILE: u64 = 1 << 20;

/// The key a JSON version file holds the version in (IREE's
/// `version_info.json`).
pub const VERSION_KEY: &str = "package-version";

fn is_json(file: &Path) -> bool {
    file.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// Writes `version` into the staged package's `file`: a JSON object gets
/// its `package-version` set (created when the file is missing), any other
/// file is replaced by the version.
pub fn stamp_file(
    package_dir: &Path,
    file: &Path,
    package: &str,
    version: &str,
) -> Result<(), Error> {
    refuse_links(package_dir, file, package)?;
    let path = package_dir.join(file);
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    if !is_json(file) {
        return lockstep_core::fs::write_atomic(&path, format!("{version}\n").as_bytes());
    }
    let mut object = if path.is_file() {
        let text = lockstep_core::fs::read_input_text("the version file", &path, 1 << 20)?;
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => {
                return Err(Error::usage(format!(
                    "package {package}: {} is not a JSON object",
                    file.display()
                ))
                .hint("[pkg.version] write-file sets the `package-version` key of a JSON object; name a plain text file to have it replaced instead"))
            }
        }
    } else {
        serde_json::Map::new()
    };
    object.insert(
        VERSION_KEY.into(),
        serde_json::Value::String(version.into()),
    );
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(object))
        .map_err(|e| Error::failed("cannot write the version file").cause(e.to_string()))?;
    lockstep_core::fs::write_atomic(&path, format!("{text}\n").as_bytes())
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

    #[test]
    fn version_files_are_stamped() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("version_info.json"),
            "{\"package-version\": \"0.1.0\", \"iree-revision\": \"abc\"}",
        )
        .expect("write");
        stamp_file(dir.path(), Path::new("version_info.json"), "a", "0.2.0rc1").expect("json");
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("version_info.json")).expect("read"),
        )
        .expect("json");
        assert_eq!(v["package-version"], "0.2.0rc1");
        assert_eq!(v["iree-revision"], "abc");
        stamp_file(dir.path(), Path::new("sub/VERSION"), "a", "3.0").expect("text");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sub/VERSION")).expect("read"),
            "3.0\n"
        );
        std::fs::write(dir.path().join("bad.json"), "[1]").expect("write");
        let err = stamp_file(dir.path(), Path::new("bad.json"), "a", "1").expect_err("array");
        assert!(
            err.render().contains("not a JSON object"),
            "{}",
            err.render()
        );
        // A committed link is never written through.
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("v.json"), "{}").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linked")).expect("link");
        let err = stamp_file(dir.path(), Path::new("linked/v.json"), "a", "1").expect_err("link");
        assert!(err.render().contains("symbolic link"), "{}", err.render());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("v.json")).expect("read"),
            "{}"
        );
    }

    #[test]
    fn write_file_and_env_settings_are_checked() {
        for bad in ["", "/etc/passwd", "../x.json", "a/../../b"] {
            assert!(check_write_file(Some(Path::new(bad))).is_err(), "{bad}");
        }
        assert!(check_write_file(Some(Path::new("a/version_info.json"))).is_ok());
        for bad in ["", "1X", "A B", "A=B", "Ä"] {
            assert!(check_env_name(bad).is_err(), "{bad}");
        }
        for bad in [
            "",
            "../x",
            "a/../b",
            "a/.git",
            ".",
            "a\nchannel: final",
            "a//b",
        ] {
            assert!(check_submodule_path(bad).is_err(), "{bad:?}");
        }
        assert!(check_submodule_path("third_party/llvm-project").is_ok());
        assert!(check_env_name("IREE_RELEASE_VERSION").is_ok());
        let table = |k: &str, v: &str| std::iter::once((k.to_string(), v.to_string())).collect();
        for (k, v) in [("", "x"), ("A=B", "x"), ("A\nB", "x"), ("A", "x\0y")] {
            let err = check_env_table("[pkg.variants.asserts]", &table(k, v)).unwrap_err();
            assert!(
                err.message.starts_with("[pkg.variants.asserts] env has"),
                "{}",
                err.message
            );
            assert!(!err.message.contains('\n'), "{}", err.message);
        }
        check_env_table("x", &table("CMAKE_ARGS", "-DX=1 -DY=2")).unwrap();
    }
}
